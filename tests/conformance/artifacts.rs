//! Artifacts: put with computed size, digest and id; idempotent puts; verified reads;
//! listing, deletion and purging by expiry.

use runstore::*;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    put_computes_size_digest_and_id_and_get_returns_the_bytes,
    same_idempotency_key_returns_the_stored_artifact,
    other_content_under_a_held_key_is_an_idempotency_conflict_naming_the_owner,
    identical_put_returns_the_stored_artifact_with_the_later_expiry,
    tampered_bytes_or_digest_are_reported_corrupt,
    missing_artifact_is_not_found,
    scope_lists_metadata_oldest_first,
    delete_says_whether_it_existed_and_frees_the_key,
    purge_removes_artifacts_expired_as_of_a_time,
    invalid_puts_are_refused_and_write_nothing,
    artifacts_survive_reopen,
];

/// SHA-256 of `hello`.
const HELLO_SHA256: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

fn artifact(scope: &str, bytes: &[u8]) -> NewArtifact {
    NewArtifact {
        scope: scope.into(),
        media_type: "text/plain".into(),
        name: Some("notes.txt".into()),
        bytes: bytes.to_vec(),
        expires_at: None,
        idempotency_key: None,
    }
}

fn keyed(scope: &str, key: &str, bytes: &[u8]) -> NewArtifact {
    NewArtifact {
        idempotency_key: Some(key.into()),
        ..artifact(scope, bytes)
    }
}

fn expiring(scope: &str, bytes: &[u8], expires_at: Option<Millis>) -> NewArtifact {
    NewArtifact {
        expires_at,
        ..artifact(scope, bytes)
    }
}

fn ids(metas: &[ArtifactMeta]) -> Vec<&str> {
    metas.iter().map(|m| m.artifact_id.as_str()).collect()
}

fn put_computes_size_digest_and_id_and_get_returns_the_bytes(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let meta = store
        .put_artifact(&artifact("run-1", b"hello"), 1_000)
        .unwrap();
    assert_eq!(meta.scope, "run-1");
    assert_eq!(meta.size_bytes, 5);
    assert_eq!(meta.sha256, HELLO_SHA256);
    assert_eq!(meta.media_type, "text/plain");
    assert_eq!(meta.name.as_deref(), Some("notes.txt"));
    assert_eq!((meta.created_at, meta.expires_at), (1_000, None));
    assert_eq!(meta.artifact_id.len(), 64);
    assert!(meta
        .artifact_id
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    // The id covers the scope: the same put elsewhere is another artifact.
    let elsewhere = store
        .put_artifact(&artifact("run-2", b"hello"), 1_000)
        .unwrap();
    assert_ne!(elsewhere.artifact_id, meta.artifact_id);

    let got = store.get_artifact("run-1", &meta.artifact_id).unwrap();
    assert_eq!(got.bytes, b"hello");
    assert_eq!(got.meta, meta);
    let empty = store.put_artifact(&artifact("run-1", b""), 1_001).unwrap();
    assert_eq!(empty.size_bytes, 0);
    assert_eq!(
        store
            .get_artifact("run-1", &empty.artifact_id)
            .unwrap()
            .bytes,
        b""
    );
}

fn same_idempotency_key_returns_the_stored_artifact(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let first = store.put_artifact(&keyed("s", "k", b"report"), 10).unwrap();
    assert_eq!(first.idempotency_key.as_deref(), Some("k"));
    let again = store.put_artifact(&keyed("s", "k", b"report"), 20).unwrap();
    assert_eq!(again, first);
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items,
        std::slice::from_ref(&first)
    );
    // The key is per scope.
    let other = store
        .put_artifact(&keyed("t", "k", b"different"), 30)
        .unwrap();
    assert_eq!(other.scope, "t");
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items,
        [first]
    );
}

fn other_content_under_a_held_key_is_an_idempotency_conflict_naming_the_owner(
    backend: &dyn Backend,
) {
    let store = backend.fresh().open();
    let owner = store.put_artifact(&keyed("s", "k", b"v1"), 10).unwrap();
    let changed_bytes = keyed("s", "k", b"v2");
    let renamed = NewArtifact {
        name: Some("other.txt".into()),
        ..keyed("s", "k", b"v1")
    };
    for put in [changed_bytes, renamed] {
        let error = expect_code(store.put_artifact(&put, 20), "IDEMPOTENCY_CONFLICT");
        let Error::IdempotencyConflict {
            entity,
            id,
            key,
            owner: held_by,
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!((*entity, key.as_str()), ("artifact", "k"));
        assert_eq!(held_by, &owner.artifact_id);
        assert_ne!(id, &owner.artifact_id);
    }
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items,
        std::slice::from_ref(&owner)
    );
    assert_eq!(
        store.get_artifact("s", &owner.artifact_id).unwrap().bytes,
        b"v1"
    );
}

fn identical_put_returns_the_stored_artifact_with_the_later_expiry(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let first = store
        .put_artifact(&expiring("s", b"x", Some(100)), 10)
        .unwrap();
    let expiry_after = |expires_at: Option<Millis>, now: Millis| {
        let meta = store
            .put_artifact(&expiring("s", b"x", expires_at), now)
            .unwrap();
        assert_eq!(meta.artifact_id, first.artifact_id);
        assert_eq!(meta.created_at, 10, "the first put's time stays");
        meta.expires_at
    };
    assert_eq!(expiry_after(Some(200), 20), Some(200));
    assert_eq!(expiry_after(Some(150), 30), Some(200));
    assert_eq!(expiry_after(None, 40), None);
    assert_eq!(expiry_after(Some(300), 50), None);
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    // Another media type or name is another artifact.
    let as_json = NewArtifact {
        media_type: "application/json".into(),
        ..artifact("s", b"x")
    };
    let unnamed = NewArtifact {
        name: None,
        ..artifact("s", b"x")
    };
    let a = store.put_artifact(&as_json, 60).unwrap();
    let b = store.put_artifact(&unnamed, 70).unwrap();
    assert_ne!(a.artifact_id, first.artifact_id);
    assert_ne!(b.artifact_id, first.artifact_id);
    assert_ne!(a.artifact_id, b.artifact_id);
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        3
    );
}

fn tampered_bytes_or_digest_are_reported_corrupt(backend: &dyn Backend) {
    if !backend.is_sqlite() {
        return; // raw SQLite SQL or SQLite's own pages
    }
    let store = backend.fresh().open();
    let a = store.put_artifact(&artifact("s", b"hello"), 1).unwrap();
    let b = store.put_artifact(&artifact("s", b"world"), 2).unwrap();
    // Same length, other bytes.
    store
        .raw_execute(&format!(
            "UPDATE artifacts SET bytes = CAST('jello' AS BLOB) WHERE artifact_id = '{}'",
            a.artifact_id
        ))
        .unwrap();
    let error = expect_code(store.get_artifact("s", &a.artifact_id), "CORRUPT");
    assert!(error.to_string().contains(HELLO_SHA256), "{error}");
    store
        .raw_execute(&format!(
            "UPDATE artifacts SET sha256 = '{HELLO_SHA256}' WHERE artifact_id = '{}'",
            b.artifact_id
        ))
        .unwrap();
    expect_code(store.get_artifact("s", &b.artifact_id), "CORRUPT");
    // Listing reads no bytes, so it still works; deleting the damaged artifact too.
    assert_eq!(
        store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        2
    );
    assert!(store.delete_artifact("s", &a.artifact_id).unwrap());
}

fn missing_artifact_is_not_found(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let meta = store.put_artifact(&artifact("s", b"x"), 1).unwrap();
    let error = expect_code(store.get_artifact("s", "nope"), "NOT_FOUND");
    assert!(
        matches!(
            error,
            Error::NotFound {
                entity: "artifact",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("nope"), "{error}");
    expect_code(store.get_artifact("other", &meta.artifact_id), "NOT_FOUND");
}

fn scope_lists_metadata_oldest_first(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let second = store.put_artifact(&artifact("s", b"b"), 20).unwrap();
    let first = store.put_artifact(&artifact("s", b"a"), 10).unwrap();
    let third = store.put_artifact(&artifact("s", b"c"), 30).unwrap();
    store.put_artifact(&artifact("t", b"z"), 5).unwrap();
    let listed = store
        .list_artifacts("s", &PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(
        ids(&listed),
        [
            first.artifact_id.as_str(),
            &second.artifact_id,
            &third.artifact_id
        ]
    );
    assert_eq!(listed[0], first);
    assert!(store
        .list_artifacts("none", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn delete_says_whether_it_existed_and_frees_the_key(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let kept = store.put_artifact(&artifact("s", b"keep"), 1).unwrap();
    let keyed_v1 = store.put_artifact(&keyed("s", "k", b"v1"), 2).unwrap();
    assert!(store.delete_artifact("s", &keyed_v1.artifact_id).unwrap());
    assert!(!store.delete_artifact("s", &keyed_v1.artifact_id).unwrap());
    assert!(!store.delete_artifact("other", &kept.artifact_id).unwrap());
    expect_code(store.get_artifact("s", &keyed_v1.artifact_id), "NOT_FOUND");
    // The key is free again.
    let v2 = store.put_artifact(&keyed("s", "k", b"v2"), 3).unwrap();
    assert_eq!(
        ids(&store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items),
        [kept.artifact_id.as_str(), &v2.artifact_id]
    );
}

fn purge_removes_artifacts_expired_as_of_a_time(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let at_100 = store
        .put_artifact(&expiring("s", b"1", Some(100)), 0)
        .unwrap();
    let at_200 = store
        .put_artifact(&expiring("t", b"2", Some(200)), 0)
        .unwrap();
    let forever = store.put_artifact(&expiring("s", b"3", None), 0).unwrap();
    assert_eq!(store.purge_expired_artifacts(99).unwrap(), 0);
    // Expired artifacts stay readable until purged.
    assert_eq!(
        store.get_artifact("s", &at_100.artifact_id).unwrap().bytes,
        b"1"
    );
    assert_eq!(store.purge_expired_artifacts(100).unwrap(), 1);
    expect_code(store.get_artifact("s", &at_100.artifact_id), "NOT_FOUND");
    assert_eq!(store.purge_expired_artifacts(150).unwrap(), 0);
    assert_eq!(
        ids(&store
            .list_artifacts("t", &PageRequest::default())
            .unwrap()
            .items),
        [at_200.artifact_id.as_str()]
    );
    assert_eq!(store.purge_expired_artifacts(i64::MAX).unwrap(), 1);
    assert!(store
        .list_artifacts("t", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert_eq!(
        ids(&store
            .list_artifacts("s", &PageRequest::default())
            .unwrap()
            .items),
        [forever.artifact_id.as_str()]
    );
}

fn invalid_puts_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let field_of = |put: NewArtifact, now: Millis| match expect_code(
        store.put_artifact(&put, now),
        "INVALID_INPUT",
    ) {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let base = artifact("s", b"x");
    assert_eq!(field_of(artifact("", b"x"), 0), "scope");
    let no_type = NewArtifact {
        media_type: String::new(),
        ..base.clone()
    };
    assert_eq!(field_of(no_type, 0), "mediaType");
    let empty_name = NewArtifact {
        name: Some(String::new()),
        ..base.clone()
    };
    assert_eq!(field_of(empty_name, 0), "name");
    assert_eq!(field_of(keyed("s", "", b"x"), 0), "idempotencyKey");
    let long_key = keyed("s", &"k".repeat(MAX_ID_BYTES + 1), b"x");
    assert_eq!(field_of(long_key, 0), "idempotencyKey");
    assert_eq!(
        field_of(expiring("s", b"x", Some(1_000)), 1_000),
        "expiresAt"
    );
    // An expiry in seconds next to a time in milliseconds.
    assert_eq!(
        field_of(expiring("s", b"x", Some(1_700_000_000)), 1_700_000_000_000),
        "expiresAt"
    );
    let huge = artifact("s", &vec![0; MAX_BLOB_BYTES + 1]);
    assert_eq!(field_of(huge, 0), "bytes");
    assert!(store
        .list_artifacts("s", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn artifacts_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let bytes: Vec<u8> = (0..=255).cycle().take(100_000).collect();
    let big = store.put_artifact(&keyed("s", "k", &bytes), 7).unwrap();
    after_reopen(location.as_ref(), store, |store| {
        let got = store.get_artifact("s", &big.artifact_id).unwrap();
        assert_eq!((got.meta, got.bytes), (big.clone(), bytes.clone()));
        assert_eq!(
            store.put_artifact(&keyed("s", "k", &bytes), 8).unwrap(),
            big
        );
        expect_code(
            store.put_artifact(&keyed("s", "k", b"other"), 9),
            "IDEMPOTENCY_CONFLICT",
        );
    });
}
