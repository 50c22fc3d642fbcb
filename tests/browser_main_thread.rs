//! On a page's main thread: OPFS sync access handles do not exist there, so a persistent store
//! is refused with OPFS_UNAVAILABLE (never silently replaced by memory), while an in-memory
//! store works.
#![cfg(target_arch = "wasm32")]

#[macro_use]
mod conformance;

use conformance::expect_code;
use runstore::wasm::{install_pool, open_in_memory};
use runstore::{Event, EventJournal, EventKind};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

/// The store the conformance module is written for.
type Store = runstore::SqliteStore;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn opfs_outside_a_dedicated_worker_is_unavailable() {
    let error = expect_code(
        install_pool("main-thread").await.map(|_| ()),
        "OPFS_UNAVAILABLE",
    );
    assert!(error.to_string().contains("dedicated worker"), "{error}");
}

#[wasm_bindgen_test]
fn memory_works_on_the_main_thread() {
    let store = open_in_memory().unwrap();
    let event = Event {
        kind: EventKind::Custom { name: "x".into() },
        recorded_at: 1,
        data: serde_json::Value::Null,
    };
    assert_eq!(store.append("wf", &[event], 0).unwrap(), 1);
    assert_eq!(store.head("wf").unwrap(), 1);
}
