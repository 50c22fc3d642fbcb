//! The sync state a store keeps per sync target: change marks on appends once a target
//! exists, saves applied only from the state a pass read, selections of what a pass must look
//! at, and tombstones left by purges.

use runstore::*;

use super::journal::{custom, event, started};
use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = crate::cases![
    appends_take_change_marks_once_a_target_exists,
    a_save_moves_state_only_from_what_the_pass_read,
    a_pass_sees_only_what_changed_since_its_mark,
    a_purge_leaves_tombstones_and_marks_never_go_back,
    a_purge_leaves_tombstones_where_no_head_was_agreed,
    sync_heads_reads_named_workflows_once_each,
];

const TARGET: &str = "team@https://sync.example.com";

fn save(
    client: &str,
    cursor: Option<CursorMove>,
    mark: Option<u64>,
    heads: Vec<SyncHeadUpdate>,
) -> Step {
    Step::new().with(Operation::SaveSync {
        target: TARGET.into(),
        client_id: client.into(),
        cursor,
        mark,
        heads,
    })
}

fn head(
    workflow_id: &str,
    expected: Option<u64>,
    head: u64,
    state: SyncHeadState,
) -> SyncHeadUpdate {
    SyncHeadUpdate {
        workflow_id: workflow_id.into(),
        expected,
        head,
        state,
    }
}

fn selected(
    store: &Store,
    selection: SyncSelection,
) -> Vec<(String, u64, u64, Option<SyncHeadState>)> {
    let page = store
        .sync_workflows(TARGET, selection, &PageRequest::default())
        .unwrap();
    page.items
        .into_iter()
        .map(|w| (w.workflow_id, w.local_head, w.synced_head, w.state))
        .collect()
}

fn append_one(store: &Store, workflow_id: &str, name: &str) -> u64 {
    let head = store.head(workflow_id).unwrap();
    store
        .append(workflow_id, &[custom(name, head as i64 + 1)], head)
        .unwrap()
}

fn appends_take_change_marks_once_a_target_exists(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    append_one(&store, "before", "a");
    let fresh = store.sync_target(TARGET).unwrap();
    assert_eq!(
        fresh,
        SyncTarget {
            client_id: None,
            cursor: 0,
            mark: None,
            clock: 0
        },
        "no target: appends take no mark"
    );
    store.commit(&save("client-1", None, None, vec![])).unwrap();
    append_one(&store, "w2", "a");
    append_one(&store, "w1", "a");
    append_one(&store, "w2", "b");
    let target = store.sync_target(TARGET).unwrap();
    assert_eq!(target.client_id.as_deref(), Some("client-1"));
    assert_eq!(target.clock, 3);
    // In mark order, each workflow once at its latest mark; "before" has none.
    let changed = selected(
        &store,
        SyncSelection::Changed {
            after: 0,
            through: 3,
        },
    );
    assert_eq!(
        changed,
        [("w1".into(), 1, 0, None), ("w2".into(), 2, 0, None)]
    );
    // A first pass lists every workflow that needs one, by id.
    let all: Vec<_> = selected(&store, SyncSelection::All)
        .into_iter()
        .map(|w| w.0)
        .collect();
    assert_eq!(all, ["before", "w1", "w2"]);
    after_reopen(&*location, store, |store| {
        assert_eq!(store.sync_target(TARGET).unwrap().clock, 3);
    });
}

fn a_save_moves_state_only_from_what_the_pass_read(backend: &dyn Backend) {
    let store = backend.fresh().open();
    append_one(&store, "wf", "a");
    let first = save(
        "client-1",
        Some(CursorMove { from: 0, to: 5 }),
        Some(7),
        vec![head("wf", None, 1, SyncHeadState::Synced)],
    );
    store.commit(&first).unwrap();
    // Each part was read from a state that has moved since: refused, nothing written.
    let stale_head = save(
        "client-1",
        None,
        None,
        vec![head("wf", None, 1, SyncHeadState::Synced)],
    );
    let error = expect_code(store.commit(&stale_head), "CONFLICT");
    assert!(
        matches!(
            error.cause(),
            Error::Conflict {
                entity: "syncHead",
                expected: None,
                actual: Some(1),
                ..
            }
        ),
        "{error:?}"
    );
    let stale_cursor = save(
        "client-1",
        Some(CursorMove { from: 0, to: 6 }),
        None,
        vec![head("other", None, 3, SyncHeadState::Synced)],
    );
    let error = expect_code(store.commit(&stale_cursor), "CONFLICT");
    assert!(
        matches!(
            error.cause(),
            Error::Conflict {
                entity: "syncCursor",
                expected: Some(0),
                actual: Some(5),
                ..
            }
        ),
        "{error:?}"
    );
    expect_code(
        store.commit(&save("client-2", None, None, vec![])),
        "CONFLICT",
    );
    // A mark is never lowered.
    store
        .commit(&save("client-1", None, Some(3), vec![]))
        .unwrap();
    let target = store.sync_target(TARGET).unwrap();
    assert_eq!((target.cursor, target.mark), (5, Some(7)));
    let heads = store
        .sync_heads(TARGET, &["wf".into(), "other".into()])
        .unwrap();
    assert_eq!(
        heads,
        [
            SyncWorkflow {
                workflow_id: "wf".into(),
                local_head: 1,
                synced_head: 1,
                state: Some(SyncHeadState::Synced)
            },
            SyncWorkflow {
                workflow_id: "other".into(),
                local_head: 0,
                synced_head: 0,
                state: None
            }
        ]
    );
    // From the state now, the save goes through.
    let next = save(
        "client-1",
        Some(CursorMove { from: 5, to: 6 }),
        None,
        vec![head("wf", Some(1), 1, SyncHeadState::Conflict)],
    );
    store.commit(&next).unwrap();
    assert_eq!(
        selected(
            &store,
            SyncSelection::InState {
                state: SyncHeadState::Conflict
            }
        ),
        [("wf".into(), 1, 1, Some(SyncHeadState::Conflict))]
    );
}

fn a_pass_sees_only_what_changed_since_its_mark(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.commit(&save("c", None, None, vec![])).unwrap();
    for n in 0..20 {
        append_one(&store, &format!("wf-{n:02}"), "a");
    }
    let clock = store.sync_target(TARGET).unwrap().clock;
    let synced = (0..20)
        .map(|n| head(&format!("wf-{n:02}"), None, 1, SyncHeadState::Synced))
        .collect();
    store.commit(&save("c", None, Some(clock), synced)).unwrap();
    assert_eq!(selected(&store, SyncSelection::All), []);
    append_one(&store, "wf-07", "b");
    append_one(&store, "new", "a");
    let target = store.sync_target(TARGET).unwrap();
    let mark = target.mark.unwrap();
    let changed = selected(
        &store,
        SyncSelection::Changed {
            after: mark,
            through: target.clock,
        },
    );
    assert_eq!(
        changed,
        [
            ("wf-07".into(), 2, 1, Some(SyncHeadState::Synced)),
            ("new".into(), 1, 0, None)
        ]
    );
    // Paged by mark: the cursor moves on.
    let page = store
        .sync_workflows(
            TARGET,
            SyncSelection::Changed {
                after: mark,
                through: target.clock,
            },
            &PageRequest::first(1),
        )
        .unwrap();
    let rest = store
        .sync_workflows(
            TARGET,
            SyncSelection::Changed {
                after: mark,
                through: target.clock,
            },
            &PageRequest::after(1, page.next_cursor.unwrap()),
        )
        .unwrap();
    assert_eq!(
        (
            page.items[0].workflow_id.as_str(),
            rest.items[0].workflow_id.as_str()
        ),
        ("wf-07", "new")
    );
}

fn a_purge_leaves_tombstones_and_marks_never_go_back(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.commit(&save("c", None, None, vec![])).unwrap();
    store
        .append(
            "done",
            &[started("order", "r1", 1), event(EventKind::Completed, 2)],
            0,
        )
        .unwrap();
    let clock = store.sync_target(TARGET).unwrap().clock;
    store
        .commit(&save(
            "c",
            None,
            Some(clock),
            vec![head("done", None, 2, SyncHeadState::Synced)],
        ))
        .unwrap();
    store.purge_workflows(100, 10).unwrap();
    assert_eq!(
        selected(
            &store,
            SyncSelection::InState {
                state: SyncHeadState::Purged
            }
        ),
        [("done".into(), 0, 2, Some(SyncHeadState::Purged))]
    );
    // The purged workflow held the highest mark: the next one still goes past it.
    append_one(&store, "later", "a");
    assert!(store.sync_target(TARGET).unwrap().clock > clock);
    // Written again under its id, it needs a pass: as a tombstone, never as the old history.
    append_one(&store, "done", "again");
    let all = selected(&store, SyncSelection::All);
    assert!(
        all.contains(&("done".into(), 1, 2, Some(SyncHeadState::Purged))),
        "{all:?}"
    );
}

/// A push may have applied on the server while its answer was lost: a workflow purged before
/// any head was agreed gets a tombstone at head 0 on every target, so no pull brings it back.
fn a_purge_leaves_tombstones_where_no_head_was_agreed(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store.commit(&save("c", None, None, vec![])).unwrap();
    let closed = [started("order", "r1", 1), event(EventKind::Completed, 2)];
    store.append("unsynced", &closed, 0).unwrap();
    store.append("synced", &closed, 0).unwrap();
    store
        .commit(&save(
            "c",
            None,
            None,
            vec![head("synced", None, 2, SyncHeadState::Synced)],
        ))
        .unwrap();
    assert_eq!(store.purge_workflows(100, 10).unwrap().workflows, 2);
    let purged = SyncSelection::InState {
        state: SyncHeadState::Purged,
    };
    let expected: [(String, u64, u64, Option<SyncHeadState>); 2] = [
        ("synced".into(), 0, 2, Some(SyncHeadState::Purged)),
        ("unsynced".into(), 0, 0, Some(SyncHeadState::Purged)),
    ];
    assert_eq!(selected(&store, purged), expected);
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(selected(store, purged), expected);
    });
}

fn sync_heads_reads_named_workflows_once_each(backend: &dyn Backend) {
    let store = backend.fresh().open();
    expect_code(
        store.sync_heads(TARGET, &["a".into(), "a".into()]),
        "INVALID_INPUT",
    );
    expect_code(store.sync_heads(TARGET, &[String::new()]), "INVALID_INPUT");
    expect_code(store.sync_target(""), "INVALID_INPUT");
    let many: Vec<String> = (0..=MAX_PAGE_LIMIT).map(|n| format!("w{n}")).collect();
    expect_code(store.sync_heads(TARGET, &many), "INVALID_INPUT");
    assert_eq!(store.sync_heads(TARGET, &[]).unwrap(), []);
}
