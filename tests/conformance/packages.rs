//! Workflow packages and routes: put with its route in one transaction, multi-type puts,
//! deploy order, deletion and what it does to routes, explicit routes.

use runstore::*;

use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    put_stores_the_archive_and_routes_its_type,
    redeploy_moves_the_route_and_keeps_older_packages,
    multi_type_put_stores_once_and_routes_every_member,
    multi_type_put_with_an_invalid_member_writes_nothing,
    list_is_in_deploy_order,
    delete_removes_only_routes_left_without_an_archive,
    set_route_needs_a_stored_hash,
    invalid_packages_are_refused_and_write_nothing,
    packages_survive_reopen,
];

const H1: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const H2: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const H3: &str = "0123456789abcdef";

fn package(workflow_type: &str, hash: &str, deployed_at: Millis) -> PackageRecord {
    PackageRecord {
        workflow_type: workflow_type.into(),
        content_hash: hash.into(),
        archive: format!("archive {workflow_type} {hash}").into_bytes(),
        deployed_at,
    }
}

fn routes(store: &Store) -> Vec<(String, String)> {
    store
        .list_package_routes(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|r| (r.workflow_type, r.content_hash))
        .collect()
}

fn route(workflow_type: &str, hash: &str) -> (String, String) {
    (workflow_type.into(), hash.into())
}

fn put_stores_the_archive_and_routes_its_type(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.get_package_route("order").unwrap(), None);
    let order = PackageRecord {
        archive: vec![0, 159, 146, 150, 255],
        ..package("order", H1, 10)
    };
    store.put_package(&order).unwrap();
    assert_eq!(store.get_package("order", H1).unwrap(), Some(order.clone()));
    assert_eq!(store.get_package("order", H2).unwrap(), None);
    assert_eq!(store.get_package("mail", H1).unwrap(), None);
    assert_eq!(
        store.get_package_route("order").unwrap().as_deref(),
        Some(H1)
    );
    assert_eq!(
        store.list_packages(&PageRequest::default()).unwrap().items,
        [order.meta()]
    );
    assert_eq!(routes(&store), [route("order", H1)]);
}

fn redeploy_moves_the_route_and_keeps_older_packages(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.put_package(&package("order", H1, 10)).unwrap();
    store.put_package(&package("order", H2, 20)).unwrap();
    assert_eq!(
        store.get_package_route("order").unwrap().as_deref(),
        Some(H2)
    );
    assert_eq!(
        store
            .list_packages(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        2
    );
    // Putting the first hash again rolls the route back and counts as a new deploy.
    let again = PackageRecord {
        archive: b"rebuilt".to_vec(),
        ..package("order", H1, 30)
    };
    store.put_package(&again).unwrap();
    assert_eq!(
        store.get_package_route("order").unwrap().as_deref(),
        Some(H1)
    );
    assert_eq!(store.get_package("order", H1).unwrap(), Some(again));
    let order: Vec<_> = store
        .list_packages(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.content_hash, p.deployed_at))
        .collect();
    assert_eq!(order, [(H2.to_owned(), 20), (H1.to_owned(), 30)]);
}

fn multi_type_put_stores_once_and_routes_every_member(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.put_package(&package("refund", H2, 1)).unwrap();
    let bundle = package("checkout", H1, 5);
    let members = vec![
        "refund".to_owned(),
        "payment".to_owned(),
        "payment".to_owned(),
    ];
    store.put_package_for_types(&bundle, &members).unwrap();
    assert_eq!(
        routes(&store),
        [
            route("checkout", H1),
            route("payment", H1),
            route("refund", H1)
        ]
    );
    let stored: Vec<_> = store
        .list_packages(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.workflow_type, p.content_hash))
        .collect();
    assert_eq!(stored, [route("refund", H2), route("checkout", H1)]);
    assert_eq!(
        store.get_package("payment", H1).unwrap(),
        None,
        "stored once"
    );
    // No members is a plain put.
    store
        .put_package_for_types(&package("solo", H3, 6), &[])
        .unwrap();
    assert_eq!(
        store.get_package_route("solo").unwrap().as_deref(),
        Some(H3)
    );
}

fn multi_type_put_with_an_invalid_member_writes_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.put_package(&package("payment", H2, 1)).unwrap();
    let members = vec!["payment".to_owned(), String::new()];
    let error = expect_code(
        store.put_package_for_types(&package("checkout", H1, 5), &members),
        "INVALID_INPUT",
    );
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "memberTypes[1]"),
        "{error}"
    );
    assert_eq!(store.get_package("checkout", H1).unwrap(), None);
    assert_eq!(routes(&store), [route("payment", H2)]);
    let long = vec!["x".repeat(MAX_ID_BYTES + 1)];
    expect_code(
        store.put_package_for_types(&package("checkout", H1, 5), &long),
        "INVALID_INPUT",
    );
    assert_eq!(
        store
            .list_packages(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(routes(&store), [route("payment", H2)]);
}

fn list_is_in_deploy_order(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (workflow_type, hash, at) in [
        ("b", H2, 20),
        ("b", H1, 20),
        ("a", H3, 20),
        ("z", H2, 10),
        ("a", H1, 30),
    ] {
        store
            .put_package(&package(workflow_type, hash, at))
            .unwrap();
    }
    let listed: Vec<_> = store
        .list_packages(&PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.deployed_at, p.workflow_type, p.content_hash))
        .collect();
    let expected = [
        (10, "z", H2),
        (20, "a", H3),
        (20, "b", H1),
        (20, "b", H2),
        (30, "a", H1),
    ]
    .map(|(at, t, h)| (at, t.to_owned(), h.to_owned()));
    assert_eq!(listed, expected);
}

fn delete_removes_only_routes_left_without_an_archive(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.put_package(&package("order", H1, 1)).unwrap();
    store.put_package(&package("order", H2, 2)).unwrap();
    store.put_package(&package("mail", H1, 3)).unwrap();
    store.set_package_route("audit", H1).unwrap();
    // Route order -> H2. Deleting an unrouted old version touches no route.
    assert_eq!(
        store.delete_package("order", H1).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(store.get_package("order", H1).unwrap(), None);
    // mail still holds H1, so the routes naming H1 stay.
    assert_eq!(
        routes(&store),
        [route("audit", H1), route("mail", H1), route("order", H2)]
    );
    // The last archive with H1 goes: every route naming H1 goes with it.
    assert_eq!(store.delete_package("mail", H1).unwrap(), ["audit", "mail"]);
    assert_eq!(routes(&store), [route("order", H2)]);
    assert_eq!(store.get_package_route("mail").unwrap(), None);

    let error = expect_code(store.delete_package("mail", H1), "NOT_FOUND");
    assert_eq!(
        error,
        Error::NotFound {
            entity: "package",
            id: format!("mail@{H1}")
        }
    );
    expect_code(store.delete_package("order", H3), "NOT_FOUND");
    assert_eq!(
        store
            .list_packages(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(routes(&store), [route("order", H2)]);
}

fn set_route_needs_a_stored_hash(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.put_package(&package("order", H1, 1)).unwrap();
    store.put_package(&package("order", H2, 2)).unwrap();
    store.set_package_route("order", H1).unwrap();
    assert_eq!(
        store.get_package_route("order").unwrap().as_deref(),
        Some(H1)
    );
    // Any type may be routed to any stored archive.
    store.set_package_route("alias", H2).unwrap();
    assert_eq!(routes(&store), [route("alias", H2), route("order", H1)]);

    let error = expect_code(store.set_package_route("order", H3), "NOT_FOUND");
    assert_eq!(
        error,
        Error::NotFound {
            entity: "package with hash",
            id: H3.into()
        }
    );
    assert_eq!(
        store.get_package_route("order").unwrap().as_deref(),
        Some(H1)
    );
    let error = expect_code(store.set_package_route("", H1), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "workflowType"));
    let error = expect_code(store.set_package_route("order", "XYZ"), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "contentHash"));
    assert_eq!(routes(&store), [route("alias", H2), route("order", H1)]);
}

fn invalid_packages_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let too_long = "a".repeat(MAX_HASH_HEX_DIGITS + 1);
    let too_short = "a".repeat(MIN_HASH_HEX_DIGITS - 1);
    let upper = H1.to_uppercase();
    for hash in [
        "",
        too_short.as_str(),
        too_long.as_str(),
        upper.as_str(),
        "0123456789abcdeg",
        "sha256:0123456789abcdef",
        "01234567' OR 1=1 --",
    ] {
        let error = expect_code(
            store.put_package(&package("order", hash, 1)),
            "INVALID_INPUT",
        );
        assert!(
            matches!(&error, Error::InvalidInput { field, .. } if field == "contentHash"),
            "{hash}: {error}"
        );
    }
    // The bounds themselves are accepted.
    let shortest = "f".repeat(MIN_HASH_HEX_DIGITS);
    let longest = "f".repeat(MAX_HASH_HEX_DIGITS);
    let error = expect_code(store.put_package(&package("", H1, 1)), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "workflowType"));
    let huge = PackageRecord {
        archive: vec![0; MAX_BLOB_BYTES + 1],
        ..package("order", H1, 1)
    };
    let error = expect_code(store.put_package(&huge), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "archive"));
    assert!(store
        .list_packages(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert!(routes(&store).is_empty());

    store.put_package(&package("short", &shortest, 1)).unwrap();
    store.put_package(&package("long", &longest, 1)).unwrap();
    assert_eq!(
        store
            .list_packages(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        2
    );
    // Records from JSON refuse unknown fields.
    assert!(serde_json::from_value::<PackageRecord>(serde_json::json!({
        "workflowType": "t", "contentHash": H1, "archive": [1], "deployedAt": 1, "x": 0
    }))
    .is_err());
}

fn packages_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .put_package_for_types(&package("checkout", H1, 1), &["payment".to_owned()])
        .unwrap();
    store.put_package(&package("order", H2, 2)).unwrap();
    let packages = store.list_packages(&PageRequest::default()).unwrap().items;
    let before = routes(&store);
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store.list_packages(&PageRequest::default()).unwrap().items,
            packages
        );
        assert_eq!(routes(store), before);
        assert_eq!(
            store.delete_package("checkout", H1).unwrap(),
            ["checkout", "payment"]
        );
    });
}
