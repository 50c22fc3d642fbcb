//! The side-effect ledger: compare-and-swap of effect records, idempotency keys per
//! capability, the status rules that keep a call from being repeated, reconciliation lists.

use runstore::*;
use serde_json::json;

use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    effect_goes_from_prepared_through_started_to_completed,
    missing_effect_loads_and_finds_as_none,
    stale_or_missing_revision_is_a_conflict_naming_both_revisions,
    creating_an_existing_effect_is_a_conflict,
    idempotency_key_held_by_another_effect_is_an_idempotency_conflict_naming_the_owner,
    completed_effect_is_final,
    started_or_unknown_effect_never_returns_to_prepared,
    failed_effect_may_be_retried,
    update_cannot_change_capability_or_key,
    invalid_records_are_refused_and_write_nothing,
    unresolved_effects_are_started_or_unknown_oldest_first,
    effects_are_listed_by_status_in_id_order,
    effect_record_crosses_as_camel_case_with_a_tagged_status,
    effects_survive_reopen,
];

fn record(id: &str, capability: &str, key: Option<&str>) -> EffectRecord {
    EffectRecord {
        effect_id: id.into(),
        capability_id: capability.into(),
        idempotency_key: key.map(Into::into),
        revision: 0,
        request: json!({"tool": capability, "args": {"to": "ada@example.com"}}),
        status: EffectStatus::Prepared,
        updated_at: 100,
    }
}

/// `current` moved one revision on to `status` at `at`.
fn next(current: &EffectRecord, status: EffectStatus, at: Millis) -> EffectRecord {
    EffectRecord {
        revision: current.revision + 1,
        status,
        updated_at: at,
        ..current.clone()
    }
}

fn completed(output: serde_json::Value) -> EffectStatus {
    EffectStatus::Completed { output }
}

fn failed(error: &str) -> EffectStatus {
    EffectStatus::Failed {
        error: error.into(),
    }
}

fn conflict(id: &str, expected: Option<u64>, actual: Option<u64>) -> Error {
    Error::Conflict {
        entity: "effect",
        id: id.into(),
        expected,
        actual,
    }
}

/// Writes `record` over its predecessor, or creates it at revision 0.
fn write(store: &Store, record: &EffectRecord) {
    let expected = record.revision.checked_sub(1);
    store.compare_and_swap_effect(record, expected).unwrap();
}

fn effect_goes_from_prepared_through_started_to_completed(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", Some("k1"));
    write(&store, &prepared);
    assert_eq!(store.load_effect("e1").unwrap(), Some(prepared.clone()));
    let started = next(&prepared, EffectStatus::Started, 110);
    write(&store, &started);
    assert_eq!(
        store.find_effect("email", "k1").unwrap(),
        Some(started.clone())
    );
    let done = next(&started, completed(json!({"messageId": 42})), 120);
    write(&store, &done);
    assert_eq!(store.load_effect("e1").unwrap(), Some(done.clone()));
    assert_eq!(store.find_effect("email", "k1").unwrap(), Some(done));
    // Effects without a key do not collide with each other.
    write(&store, &record("e2", "email", None));
    write(&store, &record("e3", "email", None));
    assert_eq!(
        store
            .list_effects(None, &PageRequest::first(10))
            .unwrap()
            .items
            .len(),
        3
    );
}

fn missing_effect_loads_and_finds_as_none(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.load_effect("nope").unwrap(), None);
    assert_eq!(store.find_effect("email", "k").unwrap(), None);
    write(&store, &record("e1", "email", Some("k")));
    assert_eq!(store.find_effect("sms", "k").unwrap(), None);
    assert_eq!(store.find_effect("email", "other").unwrap(), None);
}

fn stale_or_missing_revision_is_a_conflict_naming_both_revisions(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", None);
    let error = expect_code(
        store.compare_and_swap_effect(&next(&prepared, EffectStatus::Started, 1), Some(0)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("e1", Some(0), None));
    assert_eq!(store.load_effect("e1").unwrap(), None);

    write(&store, &prepared);
    let started = next(&prepared, EffectStatus::Started, 110);
    write(&store, &started);
    // A second worker that also read revision 0 loses.
    let error = expect_code(
        store.compare_and_swap_effect(&next(&prepared, EffectStatus::Started, 111), Some(0)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("e1", Some(0), Some(1)));
    assert_eq!(store.load_effect("e1").unwrap(), Some(started));
}

fn creating_an_existing_effect_is_a_conflict(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let original = record("e1", "email", Some("k"));
    write(&store, &original);
    let error = expect_code(
        store.compare_and_swap_effect(&record("e1", "sms", Some("other")), None),
        "CONFLICT",
    );
    assert_eq!(error, conflict("e1", None, Some(0)));
    assert_eq!(store.load_effect("e1").unwrap(), Some(original));
    assert_eq!(store.find_effect("sms", "other").unwrap(), None);
}

fn idempotency_key_held_by_another_effect_is_an_idempotency_conflict_naming_the_owner(
    backend: &dyn Backend,
) {
    let store = backend.fresh().open();
    let owner = record("e1", "email", Some("k"));
    write(&store, &owner);
    let error = expect_code(
        store.compare_and_swap_effect(&record("e2", "email", Some("k")), None),
        "IDEMPOTENCY_CONFLICT",
    );
    assert_eq!(
        error,
        Error::IdempotencyConflict {
            entity: "effect",
            id: "e2".into(),
            key: "k".into(),
            owner: "e1".into(),
        }
    );
    assert!(
        error.to_string().contains("already belongs to e1"),
        "{error}"
    );
    assert_eq!(store.load_effect("e2").unwrap(), None);
    assert_eq!(store.find_effect("email", "k").unwrap(), Some(owner));
    // The key is per capability.
    write(&store, &record("e3", "sms", Some("k")));
    assert_eq!(
        store.find_effect("sms", "k").unwrap().unwrap().effect_id,
        "e3"
    );
}

fn completed_effect_is_final(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", Some("k"));
    write(&store, &prepared);
    let done = next(&prepared, completed(json!("sent")), 110);
    write(&store, &done);
    for status in [
        EffectStatus::Prepared,
        EffectStatus::Started,
        EffectStatus::OutcomeUnknown,
        failed("late"),
        completed(json!("again")),
    ] {
        let error = expect_code(
            store.compare_and_swap_effect(&next(&done, status, 120), Some(1)),
            "CONFLICT",
        );
        // The revision matched: the stored status is what refused the write.
        assert_eq!(error, conflict("e1", Some(1), Some(1)));
    }
    assert_eq!(store.load_effect("e1").unwrap(), Some(done));
}

fn started_or_unknown_effect_never_returns_to_prepared(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", None);
    write(&store, &prepared);
    let started = next(&prepared, EffectStatus::Started, 110);
    write(&store, &started);
    let error = expect_code(
        store.compare_and_swap_effect(&next(&started, EffectStatus::Prepared, 111), Some(1)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("e1", Some(1), Some(1)));
    let unknown = next(&started, EffectStatus::OutcomeUnknown, 120);
    write(&store, &unknown);
    expect_code(
        store.compare_and_swap_effect(&next(&unknown, EffectStatus::Prepared, 121), Some(2)),
        "CONFLICT",
    );
    assert_eq!(store.load_effect("e1").unwrap(), Some(unknown.clone()));
    // Reconciliation may re-issue the call or settle it.
    let reissued = next(&unknown, EffectStatus::Started, 130);
    write(&store, &reissued);
    write(&store, &next(&reissued, completed(json!(null)), 140));
    assert_eq!(
        store.load_effect("e1").unwrap().unwrap().status,
        completed(json!(null))
    );
}

fn failed_effect_may_be_retried(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", Some("k"));
    write(&store, &prepared);
    let started = next(&prepared, EffectStatus::Started, 110);
    write(&store, &started);
    let failure = next(&started, failed("smtp 451"), 120);
    write(&store, &failure);
    assert_eq!(
        store.load_effect("e1").unwrap().unwrap().status,
        failed("smtp 451")
    );
    let retry = next(&failure, EffectStatus::Prepared, 130);
    write(&store, &retry);
    assert_eq!(store.find_effect("email", "k").unwrap(), Some(retry));
}

fn update_cannot_change_capability_or_key(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let prepared = record("e1", "email", Some("k"));
    write(&store, &prepared);
    let field_of = |changed: EffectRecord| match expect_code(
        store.compare_and_swap_effect(&changed, Some(0)),
        "INVALID_INPUT",
    ) {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let started = next(&prepared, EffectStatus::Started, 110);
    let other_capability = EffectRecord {
        capability_id: "sms".into(),
        ..started.clone()
    };
    assert_eq!(field_of(other_capability), "capabilityId");
    let other_key = EffectRecord {
        idempotency_key: Some("k2".into()),
        ..started.clone()
    };
    assert_eq!(field_of(other_key), "idempotencyKey");
    let no_key = EffectRecord {
        idempotency_key: None,
        ..started
    };
    assert_eq!(field_of(no_key), "idempotencyKey");
    assert_eq!(store.load_effect("e1").unwrap(), Some(prepared));
    assert_eq!(store.find_effect("email", "k2").unwrap(), None);
}

fn invalid_records_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let field_of = |r: EffectRecord, expected: Option<u64>| match expect_code(
        store.compare_and_swap_effect(&r, expected),
        "INVALID_INPUT",
    ) {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let base = record("e1", "email", Some("k"));
    assert_eq!(
        field_of(
            EffectRecord {
                revision: 1,
                ..base.clone()
            },
            None
        ),
        "revision"
    );
    assert_eq!(field_of(record("", "email", None), None), "effectId");
    assert_eq!(field_of(record("e1", "", None), None), "capabilityId");
    assert_eq!(
        field_of(record("e1", "email", Some("")), None),
        "idempotencyKey"
    );
    let big = json!("x".repeat(MAX_DOCUMENT_BYTES));
    let huge_request = EffectRecord {
        request: big.clone(),
        ..base.clone()
    };
    assert_eq!(field_of(huge_request, None), "request");
    let huge_output = EffectRecord {
        status: completed(big),
        ..base.clone()
    };
    assert_eq!(field_of(huge_output, None), "status.output");
    let huge_error = EffectRecord {
        status: failed(&"x".repeat(MAX_DOCUMENT_BYTES + 1)),
        ..base.clone()
    };
    assert_eq!(field_of(huge_error, None), "status.error");
    assert!(store
        .list_effects(None, &PageRequest::first(100))
        .unwrap()
        .items
        .is_empty());

    write(&store, &base);
    let skip = EffectRecord {
        revision: 3,
        ..base.clone()
    };
    assert_eq!(field_of(skip, Some(0)), "revision");
    assert_eq!(store.load_effect("e1").unwrap(), Some(base));
}

fn unresolved_effects_are_started_or_unknown_oldest_first(backend: &dyn Backend) {
    let store = backend.fresh().open();
    // (id, status, updated_at)
    let cases = [
        ("a", EffectStatus::Started, 300),
        ("b", EffectStatus::OutcomeUnknown, 100),
        ("c", EffectStatus::Prepared, 50),
        ("d", completed(json!(1)), 60),
        ("e", failed("x"), 70),
        ("f", EffectStatus::Started, 100),
    ];
    for (id, status, at) in cases {
        let effect = EffectRecord {
            status,
            updated_at: at,
            ..record(id, "tool", None)
        };
        write(&store, &effect);
    }
    let ids: Vec<String> = store
        .list_unresolved_effects(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.effect_id)
        .collect();
    assert_eq!(ids, ["b", "f", "a"]);
}

fn effects_are_listed_by_status_in_id_order(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (id, status) in [
        ("c", EffectStatus::Started),
        ("a", EffectStatus::Started),
        ("b", failed("no")),
        ("d", EffectStatus::Started),
    ] {
        let effect = EffectRecord {
            status,
            ..record(id, "tool", None)
        };
        write(&store, &effect);
    }
    let ids = |status: Option<EffectStatusKind>, limit: u32| -> Vec<String> {
        store
            .list_effects(status, &PageRequest::first(limit))
            .unwrap()
            .items
            .into_iter()
            .map(|e| e.effect_id)
            .collect()
    };
    assert_eq!(ids(None, 10), ["a", "b", "c", "d"]);
    assert_eq!(ids(Some(EffectStatusKind::Started), 10), ["a", "c", "d"]);
    assert_eq!(ids(Some(EffectStatusKind::Started), 2), ["a", "c"]);
    assert_eq!(ids(Some(EffectStatusKind::Failed), 10), ["b"]);
    assert!(ids(Some(EffectStatusKind::Completed), 10).is_empty());
}

fn effect_record_crosses_as_camel_case_with_a_tagged_status(_backend: &dyn Backend) {
    let effect = EffectRecord {
        status: completed(json!({"ok": true})),
        ..record("e1", "email", Some("k"))
    };
    let value = serde_json::to_value(&effect).unwrap();
    assert_eq!(value["effectId"], "e1");
    assert_eq!(value["idempotencyKey"], "k");
    assert_eq!(
        value["status"],
        json!({"type": "completed", "output": {"ok": true}})
    );
    let unknown = serde_json::to_value(EffectStatus::OutcomeUnknown).unwrap();
    assert_eq!(unknown, json!({"type": "outcomeUnknown"}));
    let back: EffectRecord = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, effect);
    let mut extra = value;
    extra["surprise"] = json!(1);
    assert!(serde_json::from_value::<EffectRecord>(extra).is_err());
}

fn effects_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let prepared = record("e1", "email", Some("k"));
    write(&store, &prepared);
    let started = next(&prepared, EffectStatus::Started, 2);
    write(&store, &started);
    let unknown = next(&started, EffectStatus::OutcomeUnknown, 3);
    write(&store, &unknown);
    let other = record("e2", "email", Some("k2"));
    write(&store, &other);
    let done = next(&other, failed("boom"), 4);
    write(&store, &done);
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store.find_effect("email", "k").unwrap(),
            Some(unknown.clone())
        );
        assert_eq!(store.load_effect("e2").unwrap(), Some(done));
        assert_eq!(
            store
                .list_unresolved_effects(&PageRequest::default())
                .unwrap()
                .items,
            std::slice::from_ref(&unknown)
        );
        expect_code(
            store.compare_and_swap_effect(&record("e9", "email", Some("k")), None),
            "IDEMPOTENCY_CONFLICT",
        );
        write(store, &next(&unknown, completed(json!(1)), 5));
        assert!(store
            .list_unresolved_effects(&PageRequest::default())
            .unwrap()
            .items
            .is_empty());
    });
}
