//! The agent-run journal: immutable events per run, read in sequence order, duplicates
//! refused by id and by (run, sequence).

use runstore::*;
use serde_json::json;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    events_are_read_in_sequence_order_whatever_the_recording_order,
    duplicate_sequence_in_a_run_is_a_conflict_naming_run_and_sequence,
    duplicate_event_id_is_a_conflict_naming_the_event,
    invalid_events_are_refused_and_write_nothing,
    run_events_survive_reopen,
];

fn event(event_id: &str, run_id: &str, sequence: u64) -> RunEvent {
    RunEvent {
        event_id: event_id.into(),
        run_id: run_id.into(),
        sequence,
        recorded_at: 10_000 + (sequence % 1_000) as i64,
        data: json!({"kind": "toolCall", "seq": sequence}),
    }
}

fn events_are_read_in_sequence_order_whatever_the_recording_order(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert!(store
        .read_run_events("r1", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert!(store
        .list_run_ids(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    let recorded = [
        event("e5", "r1", 5),
        event("e0", "r1", 0),
        event("x1", "r2", 1),
        event("e2", "r1", 2),
    ];
    for e in &recorded {
        store.record_run_event(e).unwrap();
    }
    let r1 = store
        .read_run_events("r1", &PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(
        r1,
        [
            recorded[1].clone(),
            recorded[3].clone(),
            recorded[0].clone()
        ]
    );
    assert_eq!(
        store
            .read_run_events("r2", &PageRequest::default())
            .unwrap()
            .items,
        [recorded[2].clone()]
    );
    assert_eq!(
        store.list_run_ids(&PageRequest::default()).unwrap().items,
        ["r1", "r2"]
    );
    // Data defaults to null and comes back as null.
    let bare: RunEvent = serde_json::from_value(
        json!({"eventId": "n", "runId": "r3", "sequence": 0, "recordedAt": 1}),
    )
    .unwrap();
    store.record_run_event(&bare).unwrap();
    assert_eq!(
        store
            .read_run_events("r3", &PageRequest::default())
            .unwrap()
            .items[0]
            .data,
        json!(null)
    );
}

fn duplicate_sequence_in_a_run_is_a_conflict_naming_run_and_sequence(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let original = event("e1", "r1", 1);
    store.record_run_event(&original).unwrap();
    let error = expect_code(store.record_run_event(&event("other", "r1", 1)), "CONFLICT");
    assert_eq!(
        error,
        Error::Conflict {
            entity: "run event sequence",
            id: "r1:1".into(),
            expected: None,
            actual: Some(0),
        }
    );
    assert_eq!(
        store
            .read_run_events("r1", &PageRequest::default())
            .unwrap()
            .items,
        [original]
    );
    // The same sequence in another run is fine.
    store.record_run_event(&event("e2", "r2", 1)).unwrap();
}

fn duplicate_event_id_is_a_conflict_naming_the_event(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.record_run_event(&event("e1", "r1", 1)).unwrap();
    let expected = Error::Conflict {
        entity: "run event",
        id: "e1".into(),
        expected: None,
        actual: Some(0),
    };
    // In another run, and as an exact repeat (both the id and the sequence taken).
    let error = expect_code(store.record_run_event(&event("e1", "r2", 7)), "CONFLICT");
    assert_eq!(error, expected);
    let error = expect_code(store.record_run_event(&event("e1", "r1", 1)), "CONFLICT");
    assert_eq!(error, expected);
    assert!(store
        .read_run_events("r2", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert_eq!(
        store.list_run_ids(&PageRequest::default()).unwrap().items,
        ["r1"]
    );
}

fn invalid_events_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let field_of = |e: RunEvent| match expect_code(store.record_run_event(&e), "INVALID_INPUT") {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field_of(event("", "r", 0)), "eventId");
    assert_eq!(field_of(event("e", "", 0)), "runId");
    assert_eq!(field_of(event("e", "r", u64::MAX)), "sequence");
    let huge = RunEvent {
        data: json!("x".repeat(MAX_DOCUMENT_BYTES)),
        ..event("e", "r", 0)
    };
    assert_eq!(field_of(huge), "data");
    assert!(store
        .list_run_ids(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    // The largest storable sequence is accepted.
    store
        .record_run_event(&event("e", "r", i64::MAX as u64))
        .unwrap();
    assert_eq!(
        store
            .read_run_events("r", &PageRequest::default())
            .unwrap()
            .items[0]
            .sequence,
        i64::MAX as u64
    );
}

fn run_events_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store.record_run_event(&event("a", "r", 0)).unwrap();
    store.record_run_event(&event("b", "r", 1)).unwrap();
    let before = store
        .read_run_events("r", &PageRequest::default())
        .unwrap()
        .items;
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store
                .read_run_events("r", &PageRequest::default())
                .unwrap()
                .items,
            before
        );
        expect_code(store.record_run_event(&event("c", "r", 1)), "CONFLICT");
        store.record_run_event(&event("c", "r", 2)).unwrap();
        assert_eq!(
            store
                .read_run_events("r", &PageRequest::default())
                .unwrap()
                .items
                .len(),
            3
        );
    });
}
