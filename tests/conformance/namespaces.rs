//! The namespace registry: registration on first use, explicit upsert, ordering, placement and
//! deprecation.

use runstore::*;
use serde_json::json;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    register_creates_once_then_reports_existing_and_bumps_last_seen,
    put_creates_or_replaces_the_whole_record,
    get_of_an_unknown_namespace_is_none,
    list_is_oldest_first_with_name_breaking_ties,
    placement_is_set_and_cleared_on_known_namespaces_only,
    deprecation_is_idempotent_and_registration_does_not_revive,
    invalid_namespaces_are_refused_and_write_nothing,
    namespaces_survive_reopen,
];

fn record(name: &str, created_at: Millis) -> NamespaceRecord {
    NamespaceRecord {
        name: name.into(),
        origin: NamespaceOrigin::Explicit,
        state: NamespaceState::Active,
        placement: None,
        created_at,
        last_seen: created_at,
    }
}

fn register_creates_once_then_reports_existing_and_bumps_last_seen(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(
        store
            .register_namespace("orders", NamespaceOrigin::Worker, 100)
            .unwrap(),
        RegisterOutcome::Created
    );
    let created = store.get_namespace("orders").unwrap().unwrap();
    assert_eq!(
        created,
        NamespaceRecord {
            name: "orders".into(),
            origin: NamespaceOrigin::Worker,
            state: NamespaceState::Active,
            placement: None,
            created_at: 100,
            last_seen: 100,
        }
    );
    assert_eq!(
        store
            .register_namespace("orders", NamespaceOrigin::Start, 250)
            .unwrap(),
        RegisterOutcome::Existed
    );
    let touched = store.get_namespace("orders").unwrap().unwrap();
    assert_eq!((touched.created_at, touched.last_seen), (100, 250));
    assert_eq!(touched.origin, NamespaceOrigin::Worker, "origin is kept");
    // A caller with a slower clock does not move last_seen backwards.
    store
        .register_namespace("orders", NamespaceOrigin::Worker, 200)
        .unwrap();
    assert_eq!(
        store.get_namespace("orders").unwrap().unwrap().last_seen,
        250
    );
    assert_eq!(
        store
            .list_namespaces(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
}

fn put_creates_or_replaces_the_whole_record(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let first = NamespaceRecord {
        placement: Some(json!({"prefer": ["az-a"]})),
        last_seen: 20,
        ..record("billing", 10)
    };
    assert_eq!(
        store.put_namespace(&first).unwrap(),
        RegisterOutcome::Created
    );
    assert_eq!(store.get_namespace("billing").unwrap(), Some(first));
    let replacement = NamespaceRecord {
        origin: NamespaceOrigin::Inferred,
        state: NamespaceState::Deprecated,
        placement: None,
        created_at: 5,
        last_seen: 6,
        ..record("billing", 0)
    };
    assert_eq!(
        store.put_namespace(&replacement).unwrap(),
        RegisterOutcome::Existed
    );
    assert_eq!(store.get_namespace("billing").unwrap(), Some(replacement));
    // A JSON null placement is no placement.
    let null_placement = NamespaceRecord {
        placement: Some(serde_json::Value::Null),
        ..record("nulls", 1)
    };
    store.put_namespace(&null_placement).unwrap();
    assert_eq!(
        store.get_namespace("nulls").unwrap().unwrap().placement,
        None
    );
    // A put registers the name: a later registration finds it.
    assert_eq!(
        store
            .register_namespace("billing", NamespaceOrigin::Worker, 7)
            .unwrap(),
        RegisterOutcome::Existed
    );
}

fn get_of_an_unknown_namespace_is_none(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.get_namespace("nope").unwrap(), None);
    store.put_namespace(&record("yes", 1)).unwrap();
    assert_eq!(store.get_namespace("nope").unwrap(), None);
    assert_eq!(store.get_namespace("YES").unwrap(), None, "names are exact");
    assert!(store.get_namespace("yes").unwrap().is_some());
}

fn list_is_oldest_first_with_name_breaking_ties(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert!(store
        .list_namespaces(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    for (name, at) in [("m", 20), ("z", 10), ("b", 20), ("a", 30)] {
        store
            .register_namespace(name, NamespaceOrigin::Worker, at)
            .unwrap();
    }
    // Touching a namespace does not change its place.
    store
        .register_namespace("z", NamespaceOrigin::Worker, 99)
        .unwrap();
    let names: Vec<String> = store
        .list_namespaces(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["z", "b", "m", "a"]);
}

fn placement_is_set_and_cleared_on_known_namespaces_only(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .register_namespace("gpu", NamespaceOrigin::Worker, 1)
        .unwrap();
    let pinned = json!({"pinned": ["gpu-pool"], "weight": 2});
    store.set_namespace_placement("gpu", &pinned).unwrap();
    let placed = store.get_namespace("gpu").unwrap().unwrap();
    assert_eq!(placed.placement, Some(pinned));
    assert_eq!(
        (placed.state, placed.last_seen),
        (NamespaceState::Active, 1),
        "only the placement changes"
    );
    store
        .set_namespace_placement("gpu", &json!("unplaced"))
        .unwrap();
    assert_eq!(
        store.get_namespace("gpu").unwrap().unwrap().placement,
        Some(json!("unplaced"))
    );
    store
        .set_namespace_placement("gpu", &serde_json::Value::Null)
        .unwrap();
    assert_eq!(store.get_namespace("gpu").unwrap().unwrap().placement, None);

    let error = expect_code(
        store.set_namespace_placement("ghost", &json!({"prefer": []})),
        "NOT_FOUND",
    );
    assert_eq!(
        error,
        Error::NotFound {
            entity: "namespace",
            id: "ghost".into()
        }
    );
    assert_eq!(store.get_namespace("ghost").unwrap(), None);
    let huge = json!("x".repeat(MAX_DOCUMENT_BYTES));
    let error = expect_code(store.set_namespace_placement("gpu", &huge), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "placement"));
    assert_eq!(store.get_namespace("gpu").unwrap().unwrap().placement, None);
}

fn deprecation_is_idempotent_and_registration_does_not_revive(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .register_namespace("old", NamespaceOrigin::Worker, 1)
        .unwrap();
    assert!(store.deprecate_namespace("old").unwrap());
    assert_eq!(
        store.get_namespace("old").unwrap().unwrap().state,
        NamespaceState::Deprecated
    );
    assert!(
        !store.deprecate_namespace("old").unwrap(),
        "second call changes nothing"
    );
    assert_eq!(
        store
            .register_namespace("old", NamespaceOrigin::Worker, 5)
            .unwrap(),
        RegisterOutcome::Existed
    );
    let after = store.get_namespace("old").unwrap().unwrap();
    assert_eq!(
        (after.state, after.last_seen),
        (NamespaceState::Deprecated, 5)
    );

    let error = expect_code(store.deprecate_namespace("ghost"), "NOT_FOUND");
    assert_eq!(
        error,
        Error::NotFound {
            entity: "namespace",
            id: "ghost".into()
        }
    );
    assert!(error.to_string().contains("ghost"), "{error}");
    assert_eq!(
        store
            .list_namespaces(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
}

fn invalid_namespaces_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let long = "n".repeat(MAX_ID_BYTES + 1);
    for name in ["", long.as_str()] {
        let error = expect_code(
            store.register_namespace(name, NamespaceOrigin::Worker, 1),
            "INVALID_INPUT",
        );
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "name"));
        expect_code(store.put_namespace(&record(name, 1)), "INVALID_INPUT");
    }
    let backwards = NamespaceRecord {
        last_seen: 9,
        ..record("ns", 10)
    };
    let error = expect_code(store.put_namespace(&backwards), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "lastSeen"));
    let huge = NamespaceRecord {
        placement: Some(json!("x".repeat(MAX_DOCUMENT_BYTES))),
        ..record("ns", 10)
    };
    let error = expect_code(store.put_namespace(&huge), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "placement"));
    assert!(store
        .list_namespaces(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());

    // Records from JSON: unknown fields and unknown origins or states are refused.
    let parsed: NamespaceRecord = serde_json::from_value(json!({
        "name": "ns", "origin": "worker", "state": "active", "createdAt": 1, "lastSeen": 2
    }))
    .unwrap();
    assert_eq!(parsed.placement, None);
    for bad in [
        json!({"name": "ns", "origin": "magic", "state": "active", "createdAt": 1, "lastSeen": 2}),
        json!({"name": "ns", "origin": "worker", "state": "gone", "createdAt": 1, "lastSeen": 2}),
        json!({"name": "ns", "origin": "worker", "state": "active", "createdAt": 1, "lastSeen": 2, "x": 1}),
    ] {
        assert!(serde_json::from_value::<NamespaceRecord>(bad).is_err());
    }
}

fn namespaces_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .register_namespace("a", NamespaceOrigin::Worker, 1)
        .unwrap();
    store
        .put_namespace(&NamespaceRecord {
            placement: Some(json!({"prefer": ["x"]})),
            ..record("b", 2)
        })
        .unwrap();
    store.deprecate_namespace("a").unwrap();
    let before = store
        .list_namespaces(&PageRequest::default())
        .unwrap()
        .items;
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store
                .list_namespaces(&PageRequest::default())
                .unwrap()
                .items,
            before
        );
        assert_eq!(
            store
                .register_namespace("b", NamespaceOrigin::Worker, 3)
                .unwrap(),
            RegisterOutcome::Existed
        );
    });
}
