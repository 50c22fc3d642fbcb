//! Bounded reads: every listing is paged by `PageRequest`, bounded by a default, and its
//! cursors walk every item exactly once.

use runstore::*;
use serde_json::json;

use super::journal::{custom, event, started};
use super::outbox::row;
use super::{expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    every_listing_walks_each_item_exactly_once_in_small_pages,
    the_default_page_is_bounded_and_the_cursor_reaches_the_rest,
    page_sizes_outside_the_range_are_invalid_input,
    a_cursor_of_another_listing_or_a_forged_one_is_invalid_input,
    a_cursor_stays_valid_across_writes,
    package_listings_carry_metadata_without_archives,
    claims_and_rearms_take_bounded_batches,
];

/// How many items each listing gets: more than one page of [`SMALL`], not a multiple of it.
const ITEMS: usize = 7;
/// The page size the walks use.
const SMALL: u32 = 3;

/// Reads every page of a listing with pages of `limit`, checking that no page is larger and
/// that only the last page has no cursor; returns the items in order.
fn walk<T>(limit: u32, read: impl Fn(&PageRequest) -> Result<Page<T>>) -> Vec<T> {
    let mut items = Vec::new();
    let mut page = PageRequest::first(limit);
    loop {
        let Page {
            items: got,
            next_cursor,
        } = read(&page).unwrap();
        assert!(got.len() <= limit as usize, "a page of {} items", got.len());
        items.extend(got);
        match next_cursor {
            Some(cursor) => page = PageRequest::after(limit, cursor),
            None => return items,
        }
    }
}

/// Asserts that walking in small pages gives exactly what one large page gives, and that
/// the listing has [`ITEMS`] items.
#[track_caller]
fn same_walk<T: PartialEq + std::fmt::Debug>(
    name: &str,
    read: impl Fn(&PageRequest) -> Result<Page<T>>,
) {
    let all = read(&PageRequest::first(MAX_PAGE_LIMIT)).unwrap();
    assert_eq!(all.next_cursor, None, "{name}: one large page holds all");
    assert_eq!(all.items.len(), ITEMS, "{name}: the fixture's items");
    assert_eq!(walk(SMALL, &read), all.items, "{name}: small pages");
    assert_eq!(walk(1, &read), all.items, "{name}: pages of one");
}

fn effect(id: &str, status: EffectStatus) -> EffectRecord {
    EffectRecord {
        effect_id: id.into(),
        capability_id: "mail".into(),
        idempotency_key: None,
        revision: 0,
        request: json!({"to": id}),
        status,
        // Two update times only: the id must break the ties.
        updated_at: 100 + (id.len() % 2) as Millis,
    }
}

const HASH: &str = "0123456789abcdef";

/// Fills every listing with [`ITEMS`] items, with ties in every ordering's leading key.
fn fill(store: &Store) {
    for i in 0..ITEMS {
        let id = format!("wf-{i}");
        // Start times repeat, and wf-0 never starts: both ends of the summary order.
        let mut events = vec![custom("tick", 1)];
        if i > 0 {
            events.insert(0, started("order", &format!("r-{i}"), (i % 3) as Millis));
        }
        if i > 0 && i % 2 == 0 {
            events.push(event(EventKind::Paused, 5));
        }
        store.append(&id, &events, 0).unwrap();
        store
            .schedule_timer(&id, &format!("t{}", i % 2), (i % 3) as Millis)
            .unwrap();
    }
    let history: Vec<_> = (0..ITEMS - 1)
        .map(|i| custom("step", i as Millis))
        .collect();
    store.append("wf-0", &history, 1).unwrap();
    let rows: Vec<_> = (0..ITEMS)
        .map(|i| row(&format!("k{i}"), &format!("wf-{i}"), 0))
        .collect();
    store.insert_outbox(&rows).unwrap();
    let filter = ClaimFilter::default();
    for now in [10, 10, 20] {
        store.claim_outbox(now, 3, &filter).unwrap();
    }
    for i in 0..ITEMS {
        let id = format!("effect-{}", "x".repeat(i));
        store
            .compare_and_swap_effect(&effect(&id, EffectStatus::Started), None)
            .unwrap();
        store
            .record_run_event(&RunEvent {
                event_id: format!("e{i}"),
                run_id: "run".into(),
                sequence: (i * 2) as u64,
                recorded_at: 1,
                data: json!({"i": i}),
            })
            .unwrap();
        store
            .record_run_event(&RunEvent {
                event_id: format!("other{i}"),
                run_id: format!("run-{i}"),
                sequence: 0,
                recorded_at: 1,
                data: json!(null),
            })
            .unwrap();
        store
            .compare_and_swap_checkpoint(
                &Checkpoint {
                    checkpoint_id: format!("c{i}"),
                    run_id: Some("run".into()),
                    revision: 0,
                    state: json!({"i": i}),
                    updated_at: 1,
                },
                None,
            )
            .unwrap();
        let artifact = NewArtifact {
            scope: "scope".into(),
            media_type: "text/plain".into(),
            name: Some(format!("a{i}")),
            bytes: b"same bytes".to_vec(),
            expires_at: None,
            idempotency_key: None,
        };
        store.put_artifact(&artifact, (i % 2) as Millis).unwrap();
        store
            .put_namespace(&NamespaceRecord {
                name: format!("ns{i}"),
                origin: NamespaceOrigin::Explicit,
                state: NamespaceState::Active,
                placement: None,
                created_at: (i % 2) as Millis,
                last_seen: 5,
            })
            .unwrap();
        store
            .put_package(&PackageRecord {
                workflow_type: format!("type{i}"),
                content_hash: HASH.into(),
                archive: vec![i as u8; i + 1],
                deployed_at: (i % 2) as Millis,
            })
            .unwrap();
    }
}

fn every_listing_walks_each_item_exactly_once_in_small_pages(backend: &dyn Backend) {
    let store = backend.fresh().open();
    fill(&store);
    same_walk("read_history", |p| store.read_history("wf-0", p));
    same_walk("list_workflow_ids", |p| store.list_workflow_ids(p));
    same_walk("query_workflows", |p| {
        store.query_workflows(&WorkflowQuery::default(), p)
    });
    same_walk("due_timers", |p| store.due_timers(10, p));
    same_walk("list_timers", |p| store.list_timers(p));
    same_walk("list_outbox", |p| store.list_outbox(None, p));
    same_walk("list_unsettled_workflows", |p| {
        store.list_unsettled_workflows(p)
    });
    same_walk("list_unresolved_effects", |p| {
        store.list_unresolved_effects(p)
    });
    same_walk("list_effects", |p| store.list_effects(None, p));
    same_walk("read_run_events", |p| store.read_run_events("run", p));
    same_walk("list_run_checkpoints", |p| {
        store.list_run_checkpoints("run", p)
    });
    same_walk("list_artifacts", |p| store.list_artifacts("scope", p));
    same_walk("list_namespaces", |p| store.list_namespaces(p));
    same_walk("list_packages", |p| store.list_packages(p));
    same_walk("list_package_routes", |p| store.list_package_routes(p));
    // Listings whose fixture has another size: checked against their full page.
    let from = store
        .read_history_from("wf-0", 3, &PageRequest::default())
        .unwrap();
    assert_eq!(from.items.len(), ITEMS - 2);
    assert_eq!(
        walk(2, |p| store.read_history_from("wf-0", 3, p)),
        from.items
    );
    let runs = store
        .list_run_ids(&PageRequest::first(MAX_PAGE_LIMIT))
        .unwrap();
    assert_eq!(runs.items.len(), ITEMS + 1);
    assert_eq!(walk(SMALL, |p| store.list_run_ids(p)), runs.items);
    let active = store.list_active(&PageRequest::default()).unwrap().items;
    assert_eq!(walk(2, |p| store.list_active(p)), active);
    let paused = store.list_paused(&PageRequest::default()).unwrap().items;
    assert_eq!(paused, ["wf-2", "wf-4", "wf-6"]);
    assert_eq!(walk(SMALL, |p| store.list_paused(p)), paused);
    let stale = store
        .list_stale_claims(15, &PageRequest::default())
        .unwrap();
    assert_eq!(stale.items.len(), 6);
    assert_eq!(walk(4, |p| store.list_stale_claims(15, p)), stale.items);
    // The orders themselves, on the listings with the most ties.
    let summaries = walk(2, |p| store.query_workflows(&WorkflowQuery::default(), p));
    let order: Vec<_> = summaries
        .iter()
        .map(|s| (s.started_at, s.workflow_id.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            (Some(2), "wf-2"),
            (Some(2), "wf-5"),
            (Some(1), "wf-1"),
            (Some(1), "wf-4"),
            (Some(0), "wf-3"),
            (Some(0), "wf-6"),
            (None, "wf-0"),
        ]
    );
    let timers: Vec<_> = walk(2, |p| store.list_timers(p))
        .into_iter()
        .map(|t| (t.fire_at, t.workflow_id))
        .collect();
    let mut sorted = timers.clone();
    sorted.sort();
    assert_eq!(timers, sorted);
}

fn the_default_page_is_bounded_and_the_cursor_reaches_the_rest(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let total = DEFAULT_PAGE_LIMIT as usize + 5;
    let events: Vec<_> = (0..total).map(|i| custom("step", i as Millis)).collect();
    store.append("long", &events, 0).unwrap();
    let rows: Vec<_> = (0..total)
        .map(|i| row(&format!("k{i:05}"), &format!("wf{i:05}"), 0))
        .collect();
    store.insert_outbox(&rows).unwrap();

    let first = store.read_history("long", &PageRequest::default()).unwrap();
    assert_eq!(first.items.len(), DEFAULT_PAGE_LIMIT as usize);
    assert_eq!(
        first.items.last().unwrap().seq,
        u64::from(DEFAULT_PAGE_LIMIT)
    );
    let rest = store
        .read_history(
            "long",
            &PageRequest {
                limit: None,
                cursor: first.next_cursor,
            },
        )
        .unwrap();
    let seqs: Vec<_> = rest.items.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1001..=total as u64).collect::<Vec<_>>());
    assert_eq!(rest.next_cursor, None);

    let unsettled = store
        .list_unsettled_workflows(&PageRequest::default())
        .unwrap();
    assert_eq!(unsettled.items.len(), DEFAULT_PAGE_LIMIT as usize);
    assert!(unsettled.next_cursor.is_some());
    let outbox = store.list_outbox(None, &PageRequest::default()).unwrap();
    assert_eq!(outbox.items.len(), DEFAULT_PAGE_LIMIT as usize);
    assert_eq!(
        walk(MAX_PAGE_LIMIT, |p| store.list_outbox(None, p)).len(),
        total
    );
    // A page exactly as large as what is left says it is the last.
    let exact = store
        .read_history_from("long", 6, &PageRequest::first(DEFAULT_PAGE_LIMIT))
        .unwrap();
    assert_eq!(exact.items.len(), DEFAULT_PAGE_LIMIT as usize);
    assert_eq!(exact.next_cursor, None);
}

fn page_sizes_outside_the_range_are_invalid_input(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for limit in [0, MAX_PAGE_LIMIT + 1, u32::MAX] {
        let page = PageRequest::first(limit);
        let error = expect_code(store.list_workflow_ids(&page), "INVALID_INPUT");
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "page.limit"));
        expect_code(store.read_history("wf", &page), "INVALID_INPUT");
        expect_code(store.list_timers(&page), "INVALID_INPUT");
        expect_code(store.list_artifacts("s", &page), "INVALID_INPUT");
        expect_code(store.list_effects(None, &page), "INVALID_INPUT");
    }
    let filter = VisibilityFilter::default();
    for size in [0, MAX_PAGE_LIMIT + 1] {
        let error = expect_code(store.list_visibility(&filter, size, None), "INVALID_INPUT");
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "pageSize"));
    }
    let page = store
        .list_workflow_ids(&PageRequest::first(MAX_PAGE_LIMIT))
        .unwrap();
    assert!(page.items.is_empty() && page.next_cursor.is_none());
}

fn a_cursor_of_another_listing_or_a_forged_one_is_invalid_input(backend: &dyn Backend) {
    let store = backend.fresh().open();
    fill(&store);
    let timers_cursor = store
        .list_timers(&PageRequest::first(1))
        .unwrap()
        .next_cursor
        .unwrap();
    let history_cursor = store
        .read_history("wf-0", &PageRequest::first(1))
        .unwrap()
        .next_cursor
        .unwrap();
    let forged = [
        timers_cursor.clone(),
        String::new(),
        "not hex".into(),
        "abc".into(),
        timers_cursor[..timers_cursor.len() - 2].to_owned(),
        "ff".repeat(100_000),
    ];
    for cursor in forged {
        let page = PageRequest::after(5, cursor);
        let error = expect_code(store.read_history("wf-0", &page), "INVALID_INPUT");
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "page.cursor"));
        expect_code(store.list_namespaces(&page), "INVALID_INPUT");
    }
    // The history cursor continues both history reads.
    let page = PageRequest::after(2, history_cursor);
    let seqs = |p: Page<StoredEvent>| p.items.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(store.read_history("wf-0", &page).unwrap()), [2, 3]);
    assert_eq!(
        seqs(store.read_history_from("wf-0", 3, &page).unwrap()),
        [3, 4]
    );
}

fn a_cursor_stays_valid_across_writes(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for id in ["b", "d", "f"] {
        store.schedule_timer(id, "t", 10).unwrap();
    }
    let first = store.list_timers(&PageRequest::first(2)).unwrap();
    assert_eq!(first.items.len(), 2);
    // One timer before the cursor's position and one after it; and the one at the cursor
    // goes away.
    store.schedule_timer("a", "t", 10).unwrap();
    store.schedule_timer("e", "t", 10).unwrap();
    assert!(store.cancel_timer("d", "t").unwrap());
    let rest = store
        .list_timers(&PageRequest::after(10, first.next_cursor.unwrap()))
        .unwrap();
    let ids: Vec<_> = rest.items.iter().map(|t| t.workflow_id.as_str()).collect();
    assert_eq!(ids, ["e", "f"]);
}

fn package_listings_carry_metadata_without_archives(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let record = PackageRecord {
        workflow_type: "order".into(),
        content_hash: HASH.into(),
        archive: vec![7; 4096],
        deployed_at: 3,
    };
    store.put_package(&record).unwrap();
    let listed = store.list_packages(&PageRequest::default()).unwrap().items;
    assert_eq!(
        listed,
        [PackageMeta {
            workflow_type: "order".into(),
            content_hash: HASH.into(),
            size_bytes: 4096,
            deployed_at: 3,
        }]
    );
    assert_eq!(
        serde_json::to_value(&listed[0]).unwrap(),
        json!({"workflowType": "order", "contentHash": HASH, "sizeBytes": 4096, "deployedAt": 3})
    );
    assert_eq!(store.get_package("order", HASH).unwrap(), Some(record));
}

fn claims_and_rearms_take_bounded_batches(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.insert_outbox(&[row("k", "wf", 0)]).unwrap();
    let too_many = MAX_PAGE_LIMIT + 1;
    let claim = store.claim_outbox(10, too_many, &ClaimFilter::default());
    let error = expect_code(claim, "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "limit"));
    expect_code(store.rearm_stale_claims(10, 10, too_many), "INVALID_INPUT");
    // Nothing was claimed; the largest batch is allowed.
    let rows = store
        .claim_outbox(10, MAX_PAGE_LIMIT, &ClaimFilter::default())
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(store.rearm_stale_claims(11, 20, MAX_PAGE_LIMIT).is_ok());
}
