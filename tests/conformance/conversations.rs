//! Conversation state: one versioned blob per conversation, saved under a revision check.

use runstore::*;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    save_creates_at_revision_zero_and_updates_count_up_by_one,
    missing_conversation_loads_as_none,
    stale_or_missing_revision_is_a_conflict_naming_both_revisions,
    invalid_saves_are_refused_and_write_nothing,
    conversations_survive_reopen,
];

fn state(id: &str, revision: u64, format_version: u32, bytes: &[u8]) -> ConversationState {
    ConversationState {
        conversation_id: id.into(),
        revision,
        format_version,
        state: bytes.to_vec(),
        updated_at: 500 + revision as i64,
    }
}

fn conflict(id: &str, expected: Option<u64>, actual: Option<u64>) -> Error {
    Error::Conflict {
        entity: "conversation",
        id: id.into(),
        expected,
        actual,
    }
}

fn save_creates_at_revision_zero_and_updates_count_up_by_one(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let created = state("c1", 0, 1, b"\x00hello\xff");
    store.save_conversation(&created, None).unwrap();
    assert_eq!(store.load_conversation("c1").unwrap(), Some(created));
    // A save may move the blob to a new format version.
    let migrated = state("c1", 1, 2, b"");
    store.save_conversation(&migrated, Some(0)).unwrap();
    assert_eq!(store.load_conversation("c1").unwrap(), Some(migrated));
    let next = state("c1", 2, 2, &[7; 4096]);
    store.save_conversation(&next, Some(1)).unwrap();
    assert_eq!(store.load_conversation("c1").unwrap(), Some(next));
    // Conversations are independent.
    store
        .save_conversation(&state("c2", 0, 1, b"x"), None)
        .unwrap();
    assert_eq!(store.load_conversation("c1").unwrap().unwrap().revision, 2);
}

fn missing_conversation_loads_as_none(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.load_conversation("none").unwrap(), None);
}

fn stale_or_missing_revision_is_a_conflict_naming_both_revisions(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(
        store.save_conversation(&state("c", 1, 1, b"a"), Some(0)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("c", Some(0), None));
    assert_eq!(store.load_conversation("c").unwrap(), None);

    store
        .save_conversation(&state("c", 0, 1, b"a"), None)
        .unwrap();
    let current = state("c", 1, 1, b"b");
    store.save_conversation(&current, Some(0)).unwrap();
    let error = expect_code(
        store.save_conversation(&state("c", 0, 1, b"z"), None),
        "CONFLICT",
    );
    assert_eq!(error, conflict("c", None, Some(1)));
    let error = expect_code(
        store.save_conversation(&state("c", 1, 1, b"z"), Some(0)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("c", Some(0), Some(1)));
    assert!(
        error.to_string().contains("expected revision 0, found 1"),
        "{error}"
    );
    assert_eq!(store.load_conversation("c").unwrap(), Some(current));
}

fn invalid_saves_are_refused_and_write_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let field_of = |result: Result<()>| match expect_code(result, "INVALID_INPUT") {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field_of(store.save_conversation(&state("c", 1, 1, b"a"), None)),
        "revision"
    );
    assert_eq!(
        field_of(store.save_conversation(&state("", 0, 1, b"a"), None)),
        "conversationId"
    );
    let huge = state("c", 0, 1, &vec![0; MAX_BLOB_BYTES + 1]);
    assert_eq!(field_of(store.save_conversation(&huge, None)), "state");
    assert_eq!(store.load_conversation("c").unwrap(), None);

    store
        .save_conversation(&state("c", 0, 1, b"a"), None)
        .unwrap();
    assert_eq!(
        field_of(store.save_conversation(&state("c", 3, 1, b"b"), Some(0))),
        "revision"
    );
    assert_eq!(
        store.load_conversation("c").unwrap(),
        Some(state("c", 0, 1, b"a"))
    );
}

fn conversations_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .save_conversation(&state("c", 0, 3, b"v0"), None)
        .unwrap();
    let current = state("c", 1, 3, b"v1");
    store.save_conversation(&current, Some(0)).unwrap();
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(store.load_conversation("c").unwrap(), Some(current));
        expect_code(
            store.save_conversation(&state("c", 1, 3, b"x"), Some(0)),
            "CONFLICT",
        );
        store
            .save_conversation(&state("c", 2, 3, b"v2"), Some(1))
            .unwrap();
    });
}
