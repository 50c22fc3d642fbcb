//! On a page's main thread: OPFS sync access handles do not exist there, so an OPFS store is
//! refused with OPFS_UNAVAILABLE (never silently replaced by memory), while an IndexedDB store
//! and an in-memory store work.
#![cfg(target_arch = "wasm32")]

#[macro_use]
mod conformance;

use conformance::expect_code;
use runstore::wasm::{install_idb, install_pool, open_in_memory};
use runstore::Durability;
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

#[wasm_bindgen_test]
async fn indexeddb_works_on_the_main_thread_and_reads_back() {
    let event = Event {
        kind: EventKind::Custom { name: "x".into() },
        recorded_at: 1,
        data: serde_json::Value::Null,
    };
    let pool = install_idb("main-thread").await.unwrap();
    let _ = pool.delete("/main.db");
    let store = pool.open("/main.db", Durability::Full).unwrap();
    assert_eq!(store.append("wf", &[event], 0).unwrap(), 1);
    drop(store);
    pool.close().await.unwrap();

    let pool = install_idb("main-thread").await.unwrap();
    let store = pool.open("/main.db", Durability::Full).unwrap();
    assert_eq!(store.head("wf").unwrap(), 1);
    drop(store);
    assert!(pool.delete("/main.db").unwrap());
    pool.close().await.unwrap();
}
