//! Checkpoints read as JSON text (what `loadCheckpoint` and `listRunCheckpoints` hand JS): the
//! stored state is copied in, keys in the order written, and a state JS would read wrongly is
//! refused rather than rounded.
#![cfg(not(target_family = "wasm"))]

use runstore::{Checkpoint, CheckpointStore, PageRequest, SqliteStore};
use serde_json::json;

fn checkpoint(id: &str, state: serde_json::Value) -> Checkpoint {
    Checkpoint {
        checkpoint_id: id.into(),
        run_id: Some("run".into()),
        revision: 0,
        state,
        updated_at: 1_700_000_000_000,
    }
}

#[test]
fn the_text_is_the_typed_checkpoint_written_out_with_its_keys_in_order() {
    let store = SqliteStore::open_in_memory().unwrap();
    let state = json!({ "z": 1, "a": [0.5, "\u{e9}\n", null], "m": { "y": true, "b": -3 } });
    store
        .compare_and_swap_checkpoint(&checkpoint("cp-1", state), None)
        .unwrap();
    let text = store.load_checkpoint_json("cp-1").unwrap();
    let typed = store.load_checkpoint("cp-1").unwrap();
    assert_eq!(text, serde_json::to_string(&typed).unwrap());
    assert!(text.contains(r#""state":{"z":1,"a":"#), "{text}");
}

#[test]
fn a_state_with_an_integer_js_cannot_hold_is_refused_as_text() {
    let store = SqliteStore::open_in_memory().unwrap();
    let big = json!({ "n": 9_007_199_254_740_993_u64 });
    store
        .compare_and_swap_checkpoint(&checkpoint("cp-big", big), None)
        .unwrap();
    store
        .compare_and_swap_checkpoint(
            &checkpoint("cp-ok", json!({ "n": 9_007_199_254_740_991_u64 })),
            None,
        )
        .unwrap();

    let error = store.load_checkpoint_json("cp-big").unwrap_err();
    assert_eq!(error.code(), "SERIALIZATION", "{error}");
    assert!(error.to_string().contains("cp-big"), "{error}");
    // The listing that holds it is refused whole; a page without it reads.
    let error = store
        .list_run_checkpoints_json("run", &PageRequest::default())
        .unwrap_err();
    assert_eq!(error.code(), "SERIALIZATION", "{error}");
    assert!(store
        .load_checkpoint_json("cp-ok")
        .unwrap()
        .contains("9007199254740991"));
    // The typed answer, for Rust callers, still reads it.
    assert_eq!(
        store.load_checkpoint("cp-big").unwrap().state["n"],
        9_007_199_254_740_993_u64
    );
}

#[test]
fn a_missing_checkpoint_is_not_found_and_an_empty_run_an_empty_page() {
    let store = SqliteStore::open_in_memory().unwrap();
    assert_eq!(
        store.load_checkpoint_json("nope").unwrap_err().code(),
        "NOT_FOUND"
    );
    assert_eq!(
        store
            .list_run_checkpoints_json("none", &PageRequest::default())
            .unwrap(),
        r#"{"items":[],"nextCursor":null}"#
    );
}
