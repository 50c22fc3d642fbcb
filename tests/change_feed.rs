//! The store's change feed: every commit that changed something is numbered in commit order,
//! in its own transaction, whether it came as a step or a single store method; nothing else
//! gets a number; a reader whose number the window or an import has left behind is told to
//! read afresh.
#![cfg(not(target_family = "wasm"))]

use runstore::model::changes::{Area, ChangesSince};
use runstore::{
    Error, Event, EventJournal, EventKind, Operation, SqliteStore, Step, StepStore, TimerStore,
    KEPT_CHANGES,
};

fn event(n: u64) -> Event {
    Event {
        kind: EventKind::Custom { name: "e".into() },
        recorded_at: n as i64,
        data: serde_json::json!({ "n": n }),
    }
}

fn all_since(store: &SqliteStore, after: u64) -> ChangesSince {
    store.changes_since(after, 10_000).expect("read the feed")
}

fn numbers(feed: &ChangesSince) -> Vec<u64> {
    feed.changes
        .iter()
        .map(|c| c.number.expect("numbered"))
        .collect()
}

#[test]
fn steps_and_single_methods_are_numbered_in_commit_order_and_nothing_else_is() {
    let store = SqliteStore::open_in_memory().unwrap();
    assert_eq!(all_since(&store, 0), ChangesSince::default());

    store.append("wf-a", &[event(1)], 0).unwrap();
    let step = Step::new()
        .request_id("r-1")
        .with(Operation::ScheduleTimer {
            workflow_id: "wf-b".into(),
            timer_id: "t".into(),
            fire_at: 5,
        })
        .with(Operation::Append {
            workflow_id: "wf-a".into(),
            events: vec![event(2), event(3)],
            expected_seq: 1,
            outbox: vec![],
        });
    let outcome = store.commit(&step).unwrap();
    let stepped = outcome.change.expect("the step changed something");
    assert_eq!(stepped.number, Some(2));

    // Changed nothing: no number. Failed: no number, and nothing written.
    assert!(!store.cancel_timer("wf-b", "absent").unwrap());
    let conflict = store.append("wf-a", &[event(9)], 0);
    assert!(
        matches!(conflict, Err(Error::SequenceConflict { .. })),
        "{conflict:?}"
    );
    // Sent again: answered from the request log, not committed or numbered again.
    let again = store.commit(&step).unwrap();
    assert!(again.replayed);
    assert_eq!(again.change, None);
    assert!(store.cancel_timer("wf-b", "t").unwrap());

    let feed = all_since(&store, 0);
    assert!(!feed.reset);
    assert_eq!(numbers(&feed), [1, 2, 3]);
    assert_eq!(feed.newest, 3);
    let [appended, step_change, cancelled] = &feed.changes[..] else {
        panic!("three changes: {feed:?}")
    };
    assert_eq!(appended.areas, [Area::Journal]);
    assert_eq!(appended.heads, [("wf-a".to_string(), 1)]);
    assert_eq!(appended.request_id, None);
    assert_eq!(
        step_change, &stepped,
        "the feed holds what the step answered"
    );
    assert_eq!(step_change.request_id.as_deref(), Some("r-1"));
    assert_eq!(step_change.areas, [Area::Timers, Area::Journal]);
    assert_eq!(step_change.workflow_ids, ["wf-b", "wf-a"]);
    assert_eq!(step_change.heads, [("wf-a".to_string(), 3)]);
    assert_eq!(cancelled.areas, [Area::Timers]);

    assert_eq!(numbers(&all_since(&store, 2)), [3]);
    assert_eq!(all_since(&store, 3).changes, []);
    let page = store.changes_since(0, 2).unwrap();
    assert_eq!(
        (numbers(&page), page.newest, page.reset),
        (vec![1, 2], 3, false)
    );
}

#[test]
fn a_number_the_store_has_not_given_is_a_reset() {
    let store = SqliteStore::open_in_memory().unwrap();
    store.append("wf", &[event(1)], 0).unwrap();
    let feed = all_since(&store, 7);
    assert!(feed.reset);
    assert_eq!((feed.changes.len(), feed.newest), (0, 1));
}

#[test]
fn a_bad_limit_is_invalid_input() {
    let store = SqliteStore::open_in_memory().unwrap();
    for limit in [0, 10_001] {
        match store.changes_since(0, limit) {
            Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "limit"),
            other => panic!("limit {limit}: {other:?}"),
        }
    }
}

#[test]
fn the_feed_keeps_its_window_and_a_reader_left_behind_is_told_to_reset() {
    let store = SqliteStore::open_in_memory().unwrap();
    // Past the window and one pruning beyond it.
    let total = KEPT_CHANGES + 2 * 1024;
    for n in 0..total {
        store
            .schedule_timer("wf", &format!("t{}", n % 3), n as i64)
            .unwrap();
    }
    let behind = all_since(&store, 0);
    assert!(behind.reset, "change 1 is out of the window");
    assert_eq!((behind.changes.len(), behind.newest), (0, total));
    let from = total - KEPT_CHANGES;
    let within = all_since(&store, from);
    assert!(!within.reset);
    assert_eq!(within.changes.len() as u64, KEPT_CHANGES);
    assert_eq!(within.changes[0].number, Some(from + 1));
}

#[test]
fn numbers_outlive_the_connection_and_two_connections_share_one_feed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feed.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        store.append("wf", &[event(1)], 0).unwrap();
    }
    let one = SqliteStore::open(&path).unwrap();
    let two = SqliteStore::open(&path).unwrap();
    one.append("wf", &[event(2)], 1).unwrap();
    two.append("wf", &[event(3)], 2).unwrap();
    one.append("wf", &[event(4)], 3).unwrap();
    let feed = all_since(&two, 0);
    assert_eq!(numbers(&feed), [1, 2, 3, 4]);
    let heads: Vec<u64> = feed.changes.iter().map(|c| c.heads[0].1).collect();
    assert_eq!(heads, [1, 2, 3, 4], "in commit order");
}

#[test]
fn an_import_is_a_reset_for_readers_from_before_it_and_numbers_move_on() {
    let source = SqliteStore::open_in_memory().unwrap();
    for n in 0..5 {
        source.append("wf-src", &[event(n)], n).unwrap();
    }
    let bytes = source.export_bytes().unwrap();

    let mut store = SqliteStore::open_in_memory().unwrap();
    store.append("wf", &[event(1)], 0).unwrap();
    store.append("wf", &[event(2)], 1).unwrap();
    store.import_bytes(&bytes, None).unwrap();

    // Numbers move past both the store's own (2) and the file's (5).
    for after in [0, 2, 5] {
        let feed = all_since(&store, after);
        assert!(feed.reset, "a reader at {after} reads afresh");
        assert_eq!(feed.newest, 6);
    }
    store.append("wf-src", &[event(9)], 5).unwrap();
    let feed = all_since(&store, 6);
    assert!(!feed.reset);
    assert_eq!(numbers(&feed), [7]);
}
