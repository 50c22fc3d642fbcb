//! Retention: purging closed workflows with what the store keeps for them, space given back
//! after deletes, and artifacts that share bytes kept apart.

use runstore::*;
use serde_json::json;

use super::journal::{custom, event, started};
use super::outbox::row;
use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    purge_deletes_exactly_the_closed_old_workflows_and_their_rows,
    purge_goes_oldest_close_first_in_bounded_calls,
    purge_with_a_bad_limit_is_invalid_input_and_deletes_nothing,
    the_database_shrinks_after_a_purge_and_after_deleting_artifacts,
    deleting_an_artifact_keeps_others_with_the_same_bytes,
    vacuum_switches_an_old_database_to_incremental_vacuum,
];

fn all<T>(read: impl Fn(&PageRequest) -> Result<Page<T>>) -> Vec<T> {
    let page = read(&PageRequest::first(MAX_PAGE_LIMIT)).unwrap();
    assert_eq!(page.next_cursor, None);
    page.items
}

/// A workflow with `extra` custom events after its start, closed by `close` at `closed_at`
/// when given, with two outbox rows, a timer and a visibility record.
fn workflow(store: &Store, id: &str, close: Option<(EventKind, Millis)>, extra: usize) {
    let mut events = vec![started("order", &format!("{id}-run"), 10)];
    events.extend((0..extra).map(|i| custom("step", 11 + i as Millis)));
    if let Some((kind, at)) = close {
        events.push(event(kind, at));
    }
    store.append(id, &events, 0).unwrap();
    store
        .insert_outbox(&[
            row(&format!("{id}/a"), id, 0),
            row(&format!("{id}/b"), id, 0),
        ])
        .unwrap();
    store.schedule_timer(id, "reminder", 1_000).unwrap();
    store
        .upsert_visibility(&VisibilityRecord {
            workflow_id: id.into(),
            run_id: format!("{id}-run"),
            workflow_type: "order".into(),
            status: "whatever".into(),
            start_time: 10,
            close_time: None,
            failed_step: None,
            failure_reason: None,
            search_attributes: json!({}),
            head: None,
        })
        .unwrap();
}

fn purge_deletes_exactly_the_closed_old_workflows_and_their_rows(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    workflow(&store, "done-old", Some((EventKind::Completed, 100)), 3);
    workflow(&store, "failed-old", Some((failed(), 110)), 0);
    workflow(
        &store,
        "cancelled-old",
        Some((EventKind::Cancelled, 120)),
        1,
    );
    workflow(&store, "done-new", Some((EventKind::Completed, 500)), 0);
    workflow(&store, "running", None, 2);
    workflow(&store, "paused", Some((EventKind::Paused, 100)), 0);
    let next = EventKind::ContinuedAsNew {
        next_run_id: "r2".into(),
    };
    workflow(&store, "continued", Some((next, 100)), 0);
    // Rows keyed by something other than a workflow id stay whatever their names.
    store
        .record_run_event(&RunEvent {
            event_id: "e".into(),
            run_id: "done-old-run".into(),
            sequence: 0,
            recorded_at: 1,
            data: json!(null),
        })
        .unwrap();
    // So are a sync server's leases: one goes with its purged workflow, one stays.
    store
        .take_lease("done-old", "laptop", None, 60_000, 1)
        .unwrap();
    store
        .take_lease("running", "laptop", None, 60_000, 1)
        .unwrap();

    let counts = store.purge_workflows(200, 100).unwrap();
    assert_eq!(
        counts,
        PurgeCounts {
            workflows: 3,
            // started + custom + closing event of each.
            events: (1 + 3 + 1) + (1 + 1) + (1 + 1 + 1),
            outbox_rows: 6,
            timers: 3,
            visibility_records: 3,
            more: false,
        }
    );
    let remaining = ["continued", "done-new", "paused", "running"];
    let check = |store: &Store| {
        assert_eq!(all(|p| store.list_workflow_ids(p)), remaining);
        for id in ["done-old", "failed-old", "cancelled-old"] {
            assert!(all(|p| store.read_history(id, p)).is_empty());
            assert_eq!(store.head(id).unwrap(), 0);
            expect_code(store.workflow_summary(id), "NOT_FOUND");
            assert_eq!(store.get_visibility(id).unwrap(), None);
            assert_eq!(store.outbox_row_state(&format!("{id}/a")).unwrap(), None);
        }
        assert_eq!(store.load_lease("done-old").unwrap(), None);
        assert_eq!(
            store.load_lease("running").unwrap().map(|l| l.epoch),
            Some(1)
        );
        assert_eq!(all(|p| store.read_history("running", p)).len(), 3);
        assert_eq!(all(|p| store.read_history("done-new", p)).len(), 2);
        let timers: Vec<_> = all(|p| store.list_timers(p))
            .into_iter()
            .map(|t| t.workflow_id)
            .collect();
        assert_eq!(timers, remaining);
        let outbox = all(|p| store.list_outbox(None, p));
        assert_eq!(outbox.len(), 2 * remaining.len());
        assert!(outbox
            .iter()
            .all(|r| remaining.contains(&r.workflow_id.as_str())));
        for id in remaining {
            assert!(store.get_visibility(id).unwrap().is_some());
        }
        assert_eq!(all(|p| store.read_run_events("done-old-run", p)).len(), 1);
    };
    check(&store);
    // Nothing left to purge before that time: a second call deletes nothing.
    assert_eq!(
        store.purge_workflows(200, 100).unwrap(),
        PurgeCounts::default()
    );
    // A purged id is a new workflow when it appears again.
    store.append("done-old", &[custom("again", 1)], 0).unwrap();
    assert_eq!(store.head("done-old").unwrap(), 1);
    after_reopen(location.as_ref(), store, |store| {
        let counts = store.purge_workflows(Millis::MAX, 100).unwrap();
        assert_eq!((counts.workflows, counts.events), (1, 2));
        assert_eq!(
            all(|p| store.list_workflow_ids(p)),
            ["continued", "done-old", "paused", "running"]
        );
    });
}

fn purge_goes_oldest_close_first_in_bounded_calls(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (id, at) in [("e", 50), ("a", 90), ("c", 70), ("b", 70), ("d", 60)] {
        store
            .append(
                id,
                &[started("t", "r", 1), event(EventKind::Completed, at)],
                0,
            )
            .unwrap();
    }
    let ids = |store: &Store| all(|p| store.list_workflow_ids(p));
    let first = store.purge_workflows(1_000, 2).unwrap();
    assert_eq!((first.workflows, first.events, first.more), (2, 4, true));
    assert_eq!(ids(&store), ["a", "b", "c"]);
    let second = store.purge_workflows(1_000, 2).unwrap();
    assert_eq!((second.workflows, second.more), (2, true));
    assert_eq!(ids(&store), ["a"]);
    let third = store.purge_workflows(1_000, 2).unwrap();
    assert_eq!((third.workflows, third.more), (1, false));
    assert!(ids(&store).is_empty());
    // The time bound is strict: closed exactly at it is kept.
    store
        .append("x", &[started("t", "r", 1), event(failed(), 300)], 0)
        .unwrap();
    assert_eq!(store.purge_workflows(300, 10).unwrap().workflows, 0);
    assert_eq!(store.purge_workflows(301, 10).unwrap().workflows, 1);
}

fn purge_with_a_bad_limit_is_invalid_input_and_deletes_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    workflow(&store, "w", Some((EventKind::Completed, 5)), 0);
    for limit in [0, MAX_PAGE_LIMIT + 1] {
        let error = expect_code(store.purge_workflows(100, limit), "INVALID_INPUT");
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "limit"));
    }
    assert_eq!(all(|p| store.list_workflow_ids(p)), ["w"]);
    assert_eq!(all(|p| store.list_outbox(None, p)).len(), 2);
}

fn the_database_shrinks_after_a_purge_and_after_deleting_artifacts(backend: &dyn Backend) {
    if !backend.is_sqlite() {
        return; // raw SQLite SQL or SQLite's own pages
    }
    let location = backend.fresh();
    let store = location.open();
    let empty = store.storage_stats().unwrap();
    assert!(empty.incremental_vacuum, "{empty:?}");
    // About 1 MB of events in closed workflows, and 1 MiB of artifacts.
    let payload = json!({"text": "x".repeat(2_000)});
    for w in 0..10 {
        let mut events = vec![started("t", "r", 1)];
        events.extend((0..50).map(|i| Event {
            kind: EventKind::Custom { name: "s".into() },
            recorded_at: i,
            data: payload.clone(),
        }));
        events.push(event(EventKind::Completed, 10));
        store.append(&format!("w{w}"), &events, 0).unwrap();
    }
    let full = store.storage_stats().unwrap();
    let bytes = |s: &StorageStats| s.page_count * s.page_size;
    assert!(bytes(&full) > 1_000_000, "{full:?}");
    let counts = store.purge_workflows(100, 1_000).unwrap();
    assert_eq!(counts.workflows, 10);
    let purged = store.storage_stats().unwrap();
    // The events held about 1 MB (10 x 50 x 2 KB); page sizes differ by target.
    assert!(
        bytes(&full) - bytes(&purged) > 950_000,
        "after the purge {purged:?}, before {full:?}"
    );
    assert_eq!(purged.freelist_count, 0, "{purged:?}");

    let mut ids = Vec::new();
    for i in 0..8u8 {
        let artifact = NewArtifact {
            scope: "s".into(),
            media_type: "application/octet-stream".into(),
            name: None,
            bytes: vec![i; 128 << 10],
            expires_at: None,
            idempotency_key: None,
        };
        ids.push(store.put_artifact(&artifact, 1).unwrap().artifact_id);
    }
    let with_artifacts = store.storage_stats().unwrap();
    assert!(bytes(&with_artifacts) > 1_000_000, "{with_artifacts:?}");
    for id in &ids[..7] {
        assert!(store.delete_artifact("s", id).unwrap());
    }
    let deleted = store.storage_stats().unwrap();
    assert!(
        bytes(&with_artifacts) - bytes(&deleted) > 7 * (128 << 10) * 9 / 10,
        "after deletes {deleted:?}, before {with_artifacts:?}"
    );
    assert_eq!(
        store.get_artifact("s", &ids[7]).unwrap().bytes,
        vec![7; 128 << 10]
    );
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store.storage_stats().unwrap().page_count,
            deleted.page_count
        );
        assert_eq!(all(|p| store.list_artifacts("s", p)).len(), 1);
    });
}

fn deleting_an_artifact_keeps_others_with_the_same_bytes(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let bytes = b"the same bytes in every artifact".to_vec();
    let put = |scope: &str, name: &str| {
        let artifact = NewArtifact {
            scope: scope.into(),
            media_type: "text/plain".into(),
            name: Some(name.into()),
            bytes: bytes.clone(),
            expires_at: None,
            idempotency_key: None,
        };
        store.put_artifact(&artifact, 1).unwrap()
    };
    let one = put("s1", "one");
    let two = put("s1", "two");
    let other_scope = put("s2", "one");
    assert_eq!(one.sha256, two.sha256);
    assert_eq!(one.sha256, other_scope.sha256);
    assert!(store.delete_artifact("s1", &one.artifact_id).unwrap());
    expect_code(store.get_artifact("s1", &one.artifact_id), "NOT_FOUND");
    assert_eq!(
        store.get_artifact("s1", &two.artifact_id).unwrap().bytes,
        bytes
    );
    let kept = store.get_artifact("s2", &other_scope.artifact_id).unwrap();
    assert_eq!(kept.bytes, bytes);
    // The same identity in another scope is another artifact, even with the same id.
    assert!(store
        .delete_artifact("s2", &other_scope.artifact_id)
        .unwrap());
    assert_eq!(
        store.get_artifact("s1", &two.artifact_id).unwrap().bytes,
        bytes
    );
    assert_eq!(all(|p| store.list_artifacts("s1", p)), [two]);
}

fn vacuum_switches_an_old_database_to_incremental_vacuum(backend: &dyn Backend) {
    if !backend.is_sqlite() {
        return; // raw SQLite SQL or SQLite's own pages
    }
    let location = backend.fresh();
    let store = location.open();
    // A database as schema version 1 created them: no auto-vacuum.
    store
        .raw_execute("PRAGMA auto_vacuum = NONE; VACUUM;")
        .unwrap();
    assert!(!store.storage_stats().unwrap().incremental_vacuum);
    workflow(&store, "w", Some((EventKind::Completed, 5)), 200);
    store.purge_workflows(100, 10).unwrap();
    let kept = store.storage_stats().unwrap();
    assert!(kept.freelist_count > 0, "{kept:?}");
    store.vacuum().unwrap();
    let compact = store.storage_stats().unwrap();
    assert!(compact.incremental_vacuum, "{compact:?}");
    assert_eq!(compact.freelist_count, 0);
    assert!(compact.page_count < kept.page_count, "{compact:?} {kept:?}");
    after_reopen(location.as_ref(), store, |store| {
        assert!(store.storage_stats().unwrap().incremental_vacuum);
    });
}

fn failed() -> EventKind {
    EventKind::Failed {
        reason: "boom".into(),
    }
}
