//! Checkpoints: load, compare-and-swap from revision 0 up by one, the refusals with their
//! revisions, listing by run.

use runstore::*;
use serde_json::json;

use super::{after_reopen, expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    create_writes_revision_zero_and_updates_count_up_by_one,
    missing_checkpoint_is_not_found,
    stale_expected_revision_is_a_conflict_naming_both_revisions,
    creating_an_existing_checkpoint_is_a_conflict,
    updating_a_missing_checkpoint_is_a_conflict_without_actual_revision,
    revision_other_than_the_next_is_invalid_input,
    invalid_ids_and_oversized_state_are_refused,
    run_checkpoints_are_listed_in_id_order,
    a_second_connection_loses_to_the_first_writer,
    checkpoints_survive_reopen,
];

fn checkpoint(id: &str, run_id: Option<&str>, revision: u64, step: i64) -> Checkpoint {
    Checkpoint {
        checkpoint_id: id.into(),
        run_id: run_id.map(Into::into),
        revision,
        state: json!({"step": step, "messages": ["hi", {"role": "tool"}]}),
        updated_at: 1_000 + step,
    }
}

fn conflict(id: &str, expected: Option<u64>, actual: Option<u64>) -> Error {
    Error::Conflict {
        entity: "checkpoint",
        id: id.into(),
        expected,
        actual,
    }
}

fn create_writes_revision_zero_and_updates_count_up_by_one(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let first = checkpoint("cp", Some("run"), 0, 0);
    store.compare_and_swap_checkpoint(&first, None).unwrap();
    assert_eq!(store.load_checkpoint("cp").unwrap(), first);
    for revision in 1..=3 {
        let next = checkpoint("cp", Some("run"), revision, revision as i64);
        store
            .compare_and_swap_checkpoint(&next, Some(revision - 1))
            .unwrap();
        assert_eq!(store.load_checkpoint("cp").unwrap(), next);
    }
    // An update replaces the run id too.
    let moved = checkpoint("cp", None, 4, 4);
    store.compare_and_swap_checkpoint(&moved, Some(3)).unwrap();
    assert_eq!(store.load_checkpoint("cp").unwrap().run_id, None);
}

fn missing_checkpoint_is_not_found(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(store.load_checkpoint("nope"), "NOT_FOUND");
    assert_eq!(error, Error::not_found("checkpoint", "nope"));
}

fn stale_expected_revision_is_a_conflict_naming_both_revisions(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .compare_and_swap_checkpoint(&checkpoint("cp", None, 0, 0), None)
        .unwrap();
    let current = checkpoint("cp", None, 1, 1);
    store
        .compare_and_swap_checkpoint(&current, Some(0))
        .unwrap();

    let stale = checkpoint("cp", None, 1, 99);
    let error = expect_code(
        store.compare_and_swap_checkpoint(&stale, Some(0)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("cp", Some(0), Some(1)));
    assert!(
        error.to_string().contains("expected revision 0, found 1"),
        "{error}"
    );
    // Expecting a revision ahead of the stored one is a conflict too.
    let ahead = checkpoint("cp", None, 6, 99);
    let error = expect_code(
        store.compare_and_swap_checkpoint(&ahead, Some(5)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("cp", Some(5), Some(1)));
    assert_eq!(store.load_checkpoint("cp").unwrap(), current);
}

fn creating_an_existing_checkpoint_is_a_conflict(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let original = checkpoint("cp", Some("run"), 0, 0);
    store.compare_and_swap_checkpoint(&original, None).unwrap();
    let error = expect_code(
        store.compare_and_swap_checkpoint(&checkpoint("cp", Some("other"), 0, 7), None),
        "CONFLICT",
    );
    assert_eq!(error, conflict("cp", None, Some(0)));
    assert!(
        error
            .to_string()
            .contains("expected revision none, found 0"),
        "{error}"
    );
    assert_eq!(store.load_checkpoint("cp").unwrap(), original);
    assert!(store
        .list_run_checkpoints("other", &PageRequest::default())
        .unwrap()
        .items
        .is_empty());
}

fn updating_a_missing_checkpoint_is_a_conflict_without_actual_revision(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(
        store.compare_and_swap_checkpoint(&checkpoint("cp", None, 3, 3), Some(2)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("cp", Some(2), None));
    expect_code(store.load_checkpoint("cp"), "NOT_FOUND");
}

fn revision_other_than_the_next_is_invalid_input(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(
        store.compare_and_swap_checkpoint(&checkpoint("cp", None, 1, 0), None),
        "INVALID_INPUT",
    );
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "revision"),
        "{error:?}"
    );
    expect_code(store.load_checkpoint("cp"), "NOT_FOUND");

    store
        .compare_and_swap_checkpoint(&checkpoint("cp", None, 0, 0), None)
        .unwrap();
    for (revision, expected) in [(0, Some(0)), (2, Some(0)), (0, Some(u64::MAX))] {
        expect_code(
            store.compare_and_swap_checkpoint(&checkpoint("cp", None, revision, 5), expected),
            "INVALID_INPUT",
        );
    }
    let stored = store.load_checkpoint("cp").unwrap();
    assert_eq!(stored, checkpoint("cp", None, 0, 0));
}

fn invalid_ids_and_oversized_state_are_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let field_of = |result: Result<()>| match expect_code(result, "INVALID_INPUT") {
        Error::InvalidInput { field, .. } => field,
        other => panic!("{other:?}"),
    };
    let cas = |cp: Checkpoint| store.compare_and_swap_checkpoint(&cp, None);
    assert_eq!(field_of(cas(checkpoint("", None, 0, 0))), "checkpointId");
    let long = "x".repeat(MAX_ID_BYTES + 1);
    assert_eq!(field_of(cas(checkpoint(&long, None, 0, 0))), "checkpointId");
    assert_eq!(field_of(cas(checkpoint("cp", Some(""), 0, 0))), "runId");
    let huge = Checkpoint {
        state: json!("x".repeat(MAX_DOCUMENT_BYTES)),
        ..checkpoint("cp", None, 0, 0)
    };
    assert_eq!(field_of(cas(huge)), "state");
    expect_code(store.load_checkpoint("cp"), "NOT_FOUND");
}

fn run_checkpoints_are_listed_in_id_order(backend: &dyn Backend) {
    let store = backend.fresh().open();
    for (id, run) in [
        ("c", Some("r1")),
        ("a", Some("r1")),
        ("b", Some("r2")),
        ("d", None),
    ] {
        store
            .compare_and_swap_checkpoint(&checkpoint(id, run, 0, 0), None)
            .unwrap();
    }
    let ids = |run: &str| -> Vec<String> {
        store
            .list_run_checkpoints(run, &PageRequest::default())
            .unwrap()
            .items
            .into_iter()
            .map(|c| c.checkpoint_id)
            .collect()
    };
    assert_eq!(ids("r1"), ["a", "c"]);
    assert_eq!(ids("r2"), ["b"]);
    assert!(ids("r3").is_empty());
    store
        .compare_and_swap_checkpoint(&checkpoint("c", Some("r2"), 1, 1), Some(0))
        .unwrap();
    assert_eq!(ids("r1"), ["a"]);
    assert_eq!(
        store
            .list_run_checkpoints("r2", &PageRequest::default())
            .unwrap()
            .items[1]
            .revision,
        1
    );
    // Into a run from none, out of it again, and an update that keeps its run.
    store
        .compare_and_swap_checkpoint(&checkpoint("d", Some("r3"), 1, 1), Some(0))
        .unwrap();
    assert_eq!(ids("r3"), ["d"]);
    store
        .compare_and_swap_checkpoint(&checkpoint("d", None, 2, 2), Some(1))
        .unwrap();
    assert!(ids("r3").is_empty());
    assert_eq!(store.load_checkpoint("d").unwrap().run_id, None);
    store
        .compare_and_swap_checkpoint(&checkpoint("a", Some("r1"), 1, 5), Some(0))
        .unwrap();
    assert_eq!(ids("r1"), ["a"]);
    assert_eq!(
        store.load_checkpoint("a").unwrap(),
        checkpoint("a", Some("r1"), 1, 5)
    );
    // A stale revision is refused whether or not the run would change.
    for run in [Some("r1"), Some("r9"), None] {
        expect_code(
            store.compare_and_swap_checkpoint(&checkpoint("a", run, 1, 6), Some(0)),
            "CONFLICT",
        );
    }
    assert_eq!(store.load_checkpoint("a").unwrap().revision, 1);
}

fn a_second_connection_loses_to_the_first_writer(backend: &dyn Backend) {
    let location = backend.fresh();
    let first = location.open();
    let Some(second) = location.open_second() else {
        return;
    };
    first
        .compare_and_swap_checkpoint(&checkpoint("cp", None, 0, 0), None)
        .unwrap();
    let seen = second.load_checkpoint("cp").unwrap();
    first
        .compare_and_swap_checkpoint(&checkpoint("cp", None, 1, 1), Some(0))
        .unwrap();
    let error = expect_code(
        second.compare_and_swap_checkpoint(&checkpoint("cp", None, 1, 2), Some(seen.revision)),
        "CONFLICT",
    );
    assert_eq!(error, conflict("cp", Some(0), Some(1)));
    assert_eq!(second.load_checkpoint("cp").unwrap().state["step"], 1);
}

fn checkpoints_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .compare_and_swap_checkpoint(&checkpoint("cp", Some("run"), 0, 0), None)
        .unwrap();
    let current = checkpoint("cp", Some("run"), 1, 1);
    store
        .compare_and_swap_checkpoint(&current, Some(0))
        .unwrap();
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(store.load_checkpoint("cp").unwrap(), current);
        assert_eq!(
            store
                .list_run_checkpoints("run", &PageRequest::default())
                .unwrap()
                .items,
            std::slice::from_ref(&current)
        );
        expect_code(
            store.compare_and_swap_checkpoint(&checkpoint("cp", None, 1, 9), Some(0)),
            "CONFLICT",
        );
        store
            .compare_and_swap_checkpoint(&checkpoint("cp", None, 2, 2), Some(1))
            .unwrap();
    });
}
