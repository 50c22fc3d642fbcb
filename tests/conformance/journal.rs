//! The workflow event journal: append under an expected head, reads, status projection, run
//! chains and the decode check.

use runstore::*;
use serde_json::json;

use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    append_numbers_events_from_one_without_gaps,
    stale_expected_head_is_a_sequence_conflict_naming_both_heads,
    failed_append_writes_nothing,
    invalid_events_are_refused_before_anything_is_written,
    history_reads_from_a_seq,
    status_projection_follows_lifecycle_events,
    query_filters_by_status_type_and_start_time,
    run_chain_follows_continue_as_new,
    append_with_outbox_commits_both_or_neither,
    append_with_outbox_refuses_a_dispatch_key_that_exists,
    closed_runs_take_no_further_lifecycle_events,
    pause_and_resume_follow_each_other,
    a_misfit_lifecycle_event_in_a_batch_writes_nothing,
    journal_survives_reopen,
    decode_check_names_the_first_undecodable_event,
    a_failure_inside_the_transaction_rolls_back_the_whole_append,
    json_is_read_back_exactly_and_too_deep_json_is_refused,
];

pub fn started(workflow_type: &str, run_id: &str, at: Millis) -> Event {
    event(
        EventKind::Started {
            workflow_type: workflow_type.into(),
            run_id: run_id.into(),
        },
        at,
    )
}

pub fn custom(name: &str, at: Millis) -> Event {
    Event {
        kind: EventKind::Custom { name: name.into() },
        recorded_at: at,
        data: json!({"step": name, "at": at}),
    }
}

/// A due outbox row of workflow `wf`.
fn outbox_row(key: &str) -> NewOutboxRow {
    NewOutboxRow {
        dispatch_key: key.into(),
        workflow_id: "wf".into(),
        ordinal: 1,
        activity_type: "send".into(),
        input: vec![1],
        visible_after: 0,
        attempt: 0,
        run_id: Some("r1".into()),
        namespace: Some("shop".into()),
        task_queue: None,
        node: None,
        max_attempts: None,
    }
}

pub fn event(kind: EventKind, at: Millis) -> Event {
    Event {
        kind,
        recorded_at: at,
        data: serde_json::Value::Null,
    }
}

fn append_numbers_events_from_one_without_gaps(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.head("wf").unwrap(), 0);
    assert_eq!(
        store
            .append("wf", &[started("order", "r1", 10)], 0)
            .unwrap(),
        1
    );
    let head = store
        .append("wf", &[custom("a", 11), custom("b", 12)], 1)
        .unwrap();
    assert_eq!(head, 3);
    let history = store
        .read_history("wf", &PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(history.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(history[2].event, custom("b", 12));
    assert_eq!(store.head("wf").unwrap(), 3);
    // An empty append checks the head and writes nothing.
    assert_eq!(store.append("wf", &[], 3).unwrap(), 3);
    assert_eq!(
        store
            .list_workflow_ids(&PageRequest::default())
            .unwrap()
            .items,
        ["wf"]
    );
}

fn stale_expected_head_is_a_sequence_conflict_naming_both_heads(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.append("wf", &[started("t", "r", 1)], 0).unwrap();
    let error = expect_code(
        store.append("wf", &[custom("x", 2)], 0),
        "SEQUENCE_CONFLICT",
    );
    assert_eq!(
        error,
        Error::SequenceConflict {
            workflow_id: "wf".into(),
            expected: 0,
            actual: 1
        }
    );
    assert!(
        error.to_string().contains("expected head 0, found 1"),
        "{error}"
    );
    expect_code(
        store.append("wf", &[custom("x", 2)], 5),
        "SEQUENCE_CONFLICT",
    );
    expect_code(
        store.append("other", &[custom("x", 2)], 1),
        "SEQUENCE_CONFLICT",
    );
}

fn failed_append_writes_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.append("wf", &[started("t", "r", 1)], 0).unwrap();
    let row = outbox_row("wf:1");
    expect_code(
        store.append_with_outbox("wf", &[custom("x", 2)], 0, &[row]),
        "SEQUENCE_CONFLICT",
    );
    assert_eq!(
        store
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.outbox_row_state("wf:1").unwrap(), None);
}

fn invalid_events_are_refused_before_anything_is_written(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(
        store.append("wf", &[custom("ok", 1), started("", "r", 2)], 0),
        "INVALID_INPUT",
    );
    assert!(
        error.to_string().contains("events[1].workflowType"),
        "{error}"
    );
    expect_code(store.append("", &[custom("ok", 1)], 0), "INVALID_INPUT");
    expect_code(
        store.append("wf", &[custom("completed", 1)], 0),
        "INVALID_INPUT",
    );
    let huge = Event {
        data: json!("x".repeat(MAX_DOCUMENT_BYTES)),
        ..custom("big", 1)
    };
    expect_code(store.append("wf", &[huge], 0), "INVALID_INPUT");
    assert_eq!(store.head("wf").unwrap(), 0);
    assert!(store
        .list_workflow_ids(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn history_reads_from_a_seq(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let events: Vec<Event> = (0..10).map(|i| custom(&format!("e{i}"), i)).collect();
    store.append("wf", &events, 0).unwrap();
    let tail = store
        .read_history_from("wf", 8, &PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), [8, 9, 10]);
    assert_eq!(tail[0].event, events[7]);
    assert!(store
        .read_history_from("wf", 11, &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .read_history("unknown", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn status_projection_follows_lifecycle_events(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .append("a", &[started("order", "ra", 100)], 0)
        .unwrap();
    store
        .append(
            "b",
            &[started("order", "rb", 200), event(EventKind::Paused, 201)],
            0,
        )
        .unwrap();
    store.append("c", &[started("mail", "rc", 300)], 0).unwrap();
    store
        .append(
            "c",
            &[event(
                EventKind::Failed {
                    reason: "boom".into(),
                },
                350,
            )],
            1,
        )
        .unwrap();
    store.append("d", &[custom("queued", 400)], 0).unwrap();

    assert_eq!(
        store.list_active(&PageRequest::default()).unwrap().items,
        ["a", "b", "d"]
    );
    assert_eq!(
        store.list_paused(&PageRequest::default()).unwrap().items,
        ["b"]
    );
    let c = store.workflow_summary("c").unwrap();
    assert_eq!(c.status, WorkflowStatus::Failed);
    assert_eq!(
        (c.started_at, c.closed_at, c.head),
        (Some(300), Some(350), 2)
    );
    assert_eq!(c.workflow_type.as_deref(), Some("mail"));
    assert_eq!(
        store.workflow_summary("d").unwrap().status,
        WorkflowStatus::Pending
    );

    store
        .append("b", &[event(EventKind::Resumed, 210)], 2)
        .unwrap();
    assert!(store
        .list_paused(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    store
        .append("b", &[event(EventKind::Cancelled, 220)], 3)
        .unwrap();
    store
        .append("a", &[event(EventKind::Completed, 150)], 1)
        .unwrap();
    assert_eq!(
        store.list_active(&PageRequest::default()).unwrap().items,
        ["d"]
    );
    expect_code(store.workflow_summary("nope"), "NOT_FOUND");
}

fn query_filters_by_status_type_and_start_time(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (id, kind, at) in [("a", "order", 100), ("b", "order", 200), ("c", "mail", 300)] {
        store
            .append(id, &[started(kind, &format!("r-{id}"), at)], 0)
            .unwrap();
    }
    store
        .append("a", &[event(EventKind::Completed, 110)], 1)
        .unwrap();
    let ids = |query: WorkflowQuery| -> Vec<String> {
        store
            .query_workflows(&query, &PageRequest::default())
            .unwrap()
            .items
            .into_iter()
            .map(|s| s.workflow_id)
            .collect()
    };
    assert_eq!(ids(WorkflowQuery::default()), ["c", "b", "a"]);
    let orders = WorkflowQuery {
        workflow_type: Some("order".into()),
        ..Default::default()
    };
    assert_eq!(ids(orders.clone()), ["b", "a"]);
    let running_orders = WorkflowQuery {
        status: Some(WorkflowStatus::Running),
        ..orders
    };
    assert_eq!(ids(running_orders), ["b"]);
    let window = WorkflowQuery {
        started_after: Some(150),
        started_before: Some(300),
        ..Default::default()
    };
    assert_eq!(ids(window), ["b"]);
    let newest = store
        .query_workflows(&WorkflowQuery::default(), &PageRequest::first(1))
        .unwrap();
    assert_eq!(newest.items[0].workflow_id, "c");
    let rest = store
        .query_workflows(
            &WorkflowQuery::default(),
            &PageRequest::after(2, newest.next_cursor.unwrap()),
        )
        .unwrap();
    let rest: Vec<_> = rest.items.iter().map(|s| s.workflow_id.as_str()).collect();
    assert_eq!(rest, ["b", "a"]);
}

fn run_chain_follows_continue_as_new(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let next = |id: &str| EventKind::ContinuedAsNew {
        next_run_id: id.into(),
    };
    store
        .append(
            "wf",
            &[
                started("loop", "r1", 10),
                custom("tick", 11),
                event(next("r2"), 12),
                started("loop", "r2", 13),
                event(next("r3"), 14),
                started("loop", "r3", 15),
                custom("tick", 16),
            ],
            0,
        )
        .unwrap();
    let chain = store.read_run_chain("wf").unwrap();
    let runs: Vec<_> = chain
        .iter()
        .map(|r| (r.run_id.as_str(), r.first_seq, r.last_seq, r.status))
        .collect();
    assert_eq!(
        runs,
        [
            ("r1", 1, 3, WorkflowStatus::ContinuedAsNew),
            ("r2", 4, 5, WorkflowStatus::ContinuedAsNew),
            ("r3", 6, 7, WorkflowStatus::Running),
        ]
    );
    assert_eq!(chain[0].closed_at, Some(12));
    let summary = store.workflow_summary("wf").unwrap();
    assert_eq!(
        (summary.status, summary.run_id.as_deref()),
        (WorkflowStatus::Running, Some("r3"))
    );
    store
        .append("wf", &[event(EventKind::Completed, 20)], 7)
        .unwrap();
    let last = store.read_run_chain("wf").unwrap().pop().unwrap();
    assert_eq!(
        (last.status, last.closed_at, last.last_seq),
        (WorkflowStatus::Completed, Some(20), 8)
    );
    assert!(store.read_run_chain("none").unwrap().is_empty());
}

fn append_with_outbox_commits_both_or_neither(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let row = outbox_row;
    let head = store
        .append_with_outbox("wf", &[started("order", "r1", 1)], 0, &[row("wf:1")])
        .unwrap();
    assert_eq!(head, 1);
    let state = store
        .outbox_row_state("wf:1")
        .unwrap()
        .expect("row written");
    assert_eq!(state.status, OutboxStatus::Pending);
    // A bad outbox row fails the append too.
    expect_code(
        store.append_with_outbox("wf", &[custom("x", 2)], 1, &[row("")]),
        "INVALID_INPUT",
    );
    assert_eq!(store.head("wf").unwrap(), 1);
}

fn journal_survives_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .append("wf", &[started("t", "r", 1), custom("a", 2)], 0)
        .unwrap();
    let before = store
        .read_history("wf", &PageRequest::default())
        .unwrap()
        .items;
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store
                .read_history("wf", &PageRequest::default())
                .unwrap()
                .items,
            before
        );
        assert_eq!(store.head("wf").unwrap(), 2);
        assert_eq!(
            store.list_active(&PageRequest::default()).unwrap().items,
            ["wf"]
        );
        store.append("wf", &[custom("b", 3)], 2).unwrap();
    });
}

fn decode_check_names_the_first_undecodable_event(backend: &dyn Backend) {
    if !backend.is_sqlite() {
        return; // raw SQLite SQL or SQLite's own pages
    }
    let store = backend.fresh().open();
    store
        .append("a", &[started("t", "r", 1), custom("x", 2)], 0)
        .unwrap();
    store.append("b", &[custom("y", 3)], 0).unwrap();
    assert_eq!(store.find_undecodable_event().unwrap(), None);
    // Events written by a newer version of the code: the check names the first one.
    store
        .raw_execute("UPDATE events SET event = CAST(X'09' || substr(event, 2) AS BLOB) WHERE workflow_id = 'a' AND seq = 2")
        .unwrap();
    store
        .raw_execute("UPDATE events SET event = X'017B7B' WHERE workflow_id = 'b'")
        .unwrap();
    let found = store
        .find_undecodable_event()
        .unwrap()
        .expect("an undecodable event");
    assert_eq!((found.workflow_id.as_str(), found.seq), ("a", 2));
    assert!(found.reason.contains("version 9"), "{}", found.reason);
    expect_code(
        store.read_history("a", &PageRequest::default()),
        "SERIALIZATION",
    );
}

fn a_failure_inside_the_transaction_rolls_back_the_whole_append(backend: &dyn Backend) {
    if !backend.is_sqlite() {
        return; // raw SQLite SQL or SQLite's own pages
    }
    let store = backend.fresh().open();
    store.append("wf", &[started("t", "r", 1)], 0).unwrap();
    // The events are written first, then the outbox row fails inside the same transaction.
    store
        .raw_execute(
            "CREATE TEMP TRIGGER refuse_outbox BEFORE INSERT ON outbox
             BEGIN SELECT RAISE(ABORT, 'refused by test'); END",
        )
        .unwrap();
    let row = outbox_row("wf:1");
    let error = store
        .append_with_outbox("wf", &[custom("a", 2), custom("b", 3)], 1, &[row])
        .unwrap_err();
    assert!(error.to_string().contains("refused by test"), "{error}");
    assert_eq!(store.head("wf").unwrap(), 1);
    assert_eq!(
        store
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.workflow_summary("wf").unwrap().head, 1);
    store.raw_execute("DROP TRIGGER refuse_outbox").unwrap();
    assert_eq!(store.append("wf", &[custom("a", 2)], 1).unwrap(), 2);
}

fn json_is_read_back_exactly_and_too_deep_json_is_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    // Doubles that a parser without correct rounding reads back one bit off.
    let floats = json!([
        0.9749512713538497,
        0.1,
        1e-300,
        2.2250738585072014e-308,
        123456.789e3
    ]);
    let event = Event {
        data: json!({ "floats": floats }),
        ..custom("measured", 1)
    };
    store.append("wf", std::slice::from_ref(&event), 0).unwrap();
    assert_eq!(
        store
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items[0]
            .event,
        event
    );

    let mut deep = json!(1);
    for _ in 0..=MAX_JSON_DEPTH {
        deep = json!([deep]);
    }
    let too_deep = Event {
        data: deep,
        ..custom("deep", 2)
    };
    let error = expect_code(store.append("wf", &[too_deep], 1), "INVALID_INPUT");
    assert!(error.to_string().contains("events[0].data"), "{error}");
    assert_eq!(store.head("wf").unwrap(), 1);
    assert_eq!(
        store
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1,
        "still readable"
    );
}

fn append_with_outbox_refuses_a_dispatch_key_that_exists(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.append("wf", &[started("order", "r1", 1)], 0).unwrap();
    let stored = NewOutboxRow {
        input: vec![7],
        ..outbox_row("wf:1")
    };
    assert_eq!(store.insert_outbox(&[stored]).unwrap(), 1);
    let before = store
        .list_outbox(None, &PageRequest::first(10))
        .unwrap()
        .items;
    let duplicate_key = |key: &str| Error::Conflict {
        entity: "outbox row",
        id: key.into(),
        expected: None,
        actual: None,
    };
    // A key stored already, after a new one in the same call: nothing is written.
    let error = expect_code(
        store.append_with_outbox(
            "wf",
            &[custom("scheduled", 2)],
            1,
            &[outbox_row("wf:2"), outbox_row("wf:1")],
        ),
        "CONFLICT",
    );
    assert_eq!(error, duplicate_key("wf:1"));
    assert!(error.to_string().contains("wf:1"), "{error}");
    // The same key twice in one call.
    let error = expect_code(
        store.append_with_outbox(
            "wf",
            &[custom("scheduled", 2)],
            1,
            &[outbox_row("wf:3"), outbox_row("wf:3")],
        ),
        "CONFLICT",
    );
    assert_eq!(error, duplicate_key("wf:3"));
    assert_eq!(store.head("wf").unwrap(), 1);
    assert_eq!(
        store
            .list_outbox(None, &PageRequest::first(10))
            .unwrap()
            .items,
        before
    );
    // insert_outbox keeps ignoring duplicates.
    assert_eq!(store.insert_outbox(&[outbox_row("wf:1")]).unwrap(), 0);
    assert_eq!(
        store
            .append_with_outbox("wf", &[custom("scheduled", 2)], 1, &[outbox_row("wf:2")])
            .unwrap(),
        2
    );
}

/// Asserts that appending `kind` at `head` is a lifecycle conflict naming `status`, and that
/// nothing was written.
#[track_caller]
fn refused(store: &Store, workflow_id: &str, kind: EventKind, head: u64, status: &str) {
    let before = store.workflow_summary(workflow_id).ok();
    let name = kind.name().to_owned();
    let error = expect_code(
        store.append(workflow_id, &[custom("note", 900), event(kind, 901)], head),
        "CONFLICT",
    );
    assert!(
        matches!(&error, Error::LifecycleConflict { workflow_id: id, event, status: s }
            if id == workflow_id && *event == name && *s == status),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(status) && message.contains(&name),
        "{message}"
    );
    assert_eq!(store.head(workflow_id).unwrap(), head);
    assert_eq!(store.workflow_summary(workflow_id).ok(), before);
}

fn closed_runs_take_no_further_lifecycle_events(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let failed = || EventKind::Failed {
        reason: "late".into(),
    };
    let next = || EventKind::ContinuedAsNew {
        next_run_id: "r2".into(),
    };
    let closing = [
        ("done", EventKind::Completed, "completed"),
        ("dead", failed(), "failed"),
        ("gone", EventKind::Cancelled, "cancelled"),
        ("loop", next(), "continuedAsNew"),
    ];
    for (id, close, status) in closing {
        store
            .append(id, &[started("t", "r1", 1), event(close, 2)], 0)
            .unwrap();
        for kind in [
            EventKind::Resumed,
            EventKind::Paused,
            EventKind::Completed,
            failed(),
            EventKind::Cancelled,
            next(),
        ] {
            refused(&store, id, kind, 2, status);
        }
    }
    // The bug this prevents: `resumed` after `completed` put a finished workflow back in the
    // active list.
    assert_eq!(
        store.list_active(&PageRequest::default()).unwrap().items,
        ["loop"]
    );
    // Custom events still fit, and a new run may start where none is open.
    store
        .append("done", &[custom("late result", 3)], 2)
        .unwrap();
    store
        .append(
            "loop",
            &[started("t", "r2", 3), event(EventKind::Paused, 4)],
            2,
        )
        .unwrap();
    store.append("done", &[started("t", "r9", 5)], 3).unwrap();
    let done = store.workflow_summary("done").unwrap();
    assert_eq!(
        (done.status, done.run_id.as_deref(), done.closed_at),
        (WorkflowStatus::Running, Some("r9"), None)
    );
    // A run is not started twice, running or paused.
    refused(
        &store,
        "done",
        EventKind::Started {
            workflow_type: "t".into(),
            run_id: "x".into(),
        },
        4,
        "running",
    );
    refused(
        &store,
        "loop",
        EventKind::Started {
            workflow_type: "t".into(),
            run_id: "x".into(),
        },
        4,
        "paused",
    );
    // No run has started: nothing to close, pause or resume.
    store.append("idle", &[custom("queued", 1)], 0).unwrap();
    for kind in [
        EventKind::Completed,
        EventKind::Cancelled,
        EventKind::Paused,
        EventKind::Resumed,
    ] {
        refused(&store, "idle", kind, 1, "pending");
    }
}

fn pause_and_resume_follow_each_other(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.append("wf", &[started("t", "r1", 1)], 0).unwrap();
    refused(&store, "wf", EventKind::Resumed, 1, "running");
    store
        .append("wf", &[event(EventKind::Paused, 2)], 1)
        .unwrap();
    refused(&store, "wf", EventKind::Paused, 2, "paused");
    assert_eq!(
        store.list_paused(&PageRequest::default()).unwrap().items,
        ["wf"]
    );
    store
        .append(
            "wf",
            &[
                event(EventKind::Resumed, 3),
                event(EventKind::Paused, 4),
                event(EventKind::Resumed, 5),
            ],
            2,
        )
        .unwrap();
    // A paused run may still close.
    store
        .append("wf", &[event(EventKind::Paused, 6)], 5)
        .unwrap();
    store
        .append("wf", &[event(EventKind::Cancelled, 7)], 6)
        .unwrap();
    assert_eq!(
        store.workflow_summary("wf").unwrap().status,
        WorkflowStatus::Cancelled
    );
    assert!(store
        .list_paused(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn a_misfit_lifecycle_event_in_a_batch_writes_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .append_with_outbox("wf", &[started("t", "r1", 1)], 0, &[outbox_row("wf:1")])
        .unwrap();
    // Each event is judged against the status the ones before it left: the second `resumed`
    // finds the run running again.
    let batch = [
        event(EventKind::Paused, 2),
        event(EventKind::Resumed, 3),
        custom("between", 4),
        event(EventKind::Resumed, 5),
        event(EventKind::Completed, 6),
    ];
    let error = expect_code(
        store.append_with_outbox("wf", &batch, 1, &[outbox_row("wf:2")]),
        "CONFLICT",
    );
    assert!(
        matches!(
            error,
            Error::LifecycleConflict {
                event: "resumed",
                status: "running",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(store.head("wf").unwrap(), 1);
    assert_eq!(
        store
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.outbox_row_state("wf:2").unwrap(), None);
    assert_eq!(
        store.workflow_summary("wf").unwrap().status,
        WorkflowStatus::Running
    );
    // Completed then anything lifecycle in the same batch is refused just the same.
    let error = expect_code(
        store.append(
            "wf",
            &[event(EventKind::Completed, 2), event(EventKind::Resumed, 3)],
            1,
        ),
        "CONFLICT",
    );
    assert!(
        matches!(
            error,
            Error::LifecycleConflict {
                event: "resumed",
                status: "completed",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(store.head("wf").unwrap(), 1);
}
