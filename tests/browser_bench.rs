//! SPEC section 5 workloads in a browser's dedicated worker: each through the store on OPFS
//! (sahpool) and on memory and, in the same page, as the same SQL through plain rusqlite. A
//! measurement, not a test: it is ignored by default.
//!
//! Run: `bash scripts/bench-browser.sh` (see BENCHMARKS.md).
#![cfg(target_arch = "wasm32")]

#[path = "../benches/support/workloads.rs"]
mod workloads;

use std::cell::RefCell;

use runstore::wasm::{install_pool, open_in_memory, OpfsPool};
use runstore::{Durability, EventJournal, PageRequest, SqliteStore};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};
use workloads::{w2_store, wf, W2_EVENTS, W2_WORKFLOWS};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// A workload keeps two databases open at once (store and plain SQL), each a file and a WAL;
/// the rest is headroom for databases not yet deleted.
const BENCH_SLOTS: usize = 8;

fn now() -> f64 {
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    scope.performance().expect("performance").now()
}

/// Opens a fresh database per workload name in one pool, and deletes the databases of earlier
/// workloads once their stores are dropped, so that the pool's slots are not used up.
struct OpfsOpener<'p> {
    pool: &'p OpfsPool,
    durability: Durability,
    prefix: &'static str,
    /// Made with this page size before the store opens them, as a database made by an older
    /// version is; `None`: the store's own for a new database.
    page_size: Option<i64>,
    opened: RefCell<Vec<String>>,
}

impl OpfsOpener<'_> {
    fn open(&self, name: &str) -> SqliteStore {
        self.collect();
        let db = format!("/{}-{name}.db", self.prefix);
        self.pool.delete(&db).expect("delete an old database");
        if let Some(size) = self.page_size {
            // The pool is a VFS of the pool's name. A database with a page keeps its size.
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                | rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
            rusqlite::Connection::open_with_flags_and_vfs(&db, flags, self.pool.name())
                .unwrap()
                .execute_batch(&format!(
                    "PRAGMA page_size = {size}; PRAGMA user_version = 0;"
                ))
                .unwrap();
        }
        let store = self
            .pool
            .open(&db, self.durability)
            .expect("open OPFS store");
        self.opened.borrow_mut().push(db);
        store
    }

    /// Deletes every database this opener made whose store has been dropped (a database still
    /// open refuses deletion and is kept for later).
    fn collect(&self) {
        self.opened
            .borrow_mut()
            .retain(|db| self.pool.delete(db).is_err());
    }
}

/// Runs the workloads on a new set of databases in `pool` and prints their table.
fn run_on_opfs(
    pool: &OpfsPool,
    durability: Durability,
    page_size: Option<i64>,
    prefix: &'static str,
    title: &str,
) {
    let opener = OpfsOpener {
        pool,
        durability,
        prefix,
        page_size,
        opened: RefCell::default(),
    };
    let started = now();
    let figures = workloads::run_all(&|name| opener.open(name), &now);
    opener.collect();
    assert_eq!(opener.opened.borrow().len(), 0, "a store outlived its run");
    print_table(title, &figures, started);
}

fn print_table(title: &str, figures: &[workloads::Figure], started: f64) {
    console_log!("{}", workloads::table(title, figures));
    console_log!("({title}: {:.0} s in all)", (now() - started) / 1000.0);
}

#[wasm_bindgen_test]
#[ignore = "a measurement; run with scripts/bench-browser.sh"]
async fn workloads_on_opfs_and_memory() {
    let pool = install_pool("workloads-bench").await.unwrap();
    // A run that failed part-way may have left databases behind in this browser profile.
    for db in pool.databases().unwrap() {
        pool.delete(&db).unwrap();
    }
    pool.reserve(BENCH_SLOTS).await.unwrap();

    run_on_opfs(
        &pool,
        Durability::Full,
        None,
        "full",
        "browser, OPFS (sahpool), durability full",
    );
    run_on_opfs(
        &pool,
        Durability::Relaxed,
        None,
        "relaxed",
        "browser, OPFS (sahpool), durability relaxed",
    );
    // The page size the browser build gave databases before they got 4 KiB pages.
    run_on_opfs(
        &pool,
        Durability::Full,
        Some(8192),
        "full-8k",
        "browser, OPFS (sahpool), durability full, 8 KiB pages",
    );
    run_on_opfs(
        &pool,
        Durability::Relaxed,
        Some(8192),
        "relaxed-8k",
        "browser, OPFS (sahpool), durability relaxed, 8 KiB pages",
    );
    assert_eq!(pool.databases().unwrap(), Vec::<String>::new());
    pool.close().await.unwrap();

    let started = now();
    let figures = workloads::run_all(&|_| open_in_memory().expect("open memory store"), &now);
    print_table("browser, memory", &figures, started);
    histories_handed_to_js();
}

/// W3 as a JS caller gets it, on memory: the store's page as JSON text and one `JSON.parse`
/// (what `RunStoreCore.readHistory` does), the typed page converted by serde-wasm-bindgen
/// (what it did before), and plain SQL whose every event is `JSON.parse`d on its own (what an
/// application of the official SQLite build does). Events per second and the ratios.
fn histories_handed_to_js() {
    let store = open_in_memory().unwrap();
    w2_store(&store);
    let page = PageRequest::default();
    let events = (W2_WORKFLOWS * W2_EVENTS) as f64;
    let rate = |f: &dyn Fn(&str) -> usize| {
        let start = now();
        for w in 0..W2_WORKFLOWS {
            assert_eq!(f(&wf(w)), W2_EVENTS);
        }
        events / ((now() - start) / 1000.0)
    };
    let length = |value: &wasm_bindgen::JsValue| {
        let items = js_sys::Reflect::get(value, &"items".into()).unwrap();
        js_sys::Array::from(&items).length() as usize
    };
    let as_text = rate(&|id| {
        let text = store.read_history_json(id, 0, &page).unwrap();
        length(&js_sys::JSON::parse(&text).unwrap())
    });
    let serializer = serde_wasm_bindgen::Serializer::new()
        .serialize_missing_as_null(true)
        .serialize_maps_as_objects(true);
    let typed = rate(&|id| {
        let history = store.read_history(id, &page).unwrap();
        length(&serde::Serialize::serialize(&history, &serializer).unwrap())
    });
    let conn = store.into_connection();
    let plain = rate(&|id| {
        let mut stmt = conn
            .prepare_cached("SELECT seq, event FROM events WHERE workflow_id = ?1 ORDER BY seq")
            .unwrap();
        let items = js_sys::Array::new();
        let mut rows = stmt.query([id]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let blob = row.get_ref(1).unwrap().as_blob().unwrap();
            let text = std::str::from_utf8(&blob[1..]).unwrap();
            let event = js_sys::JSON::parse(text).unwrap();
            let seq: i64 = row.get(0).unwrap();
            js_sys::Reflect::set(&event, &"seq".into(), &(seq as f64).into()).unwrap();
            items.push(&event);
        }
        items.length() as usize
    });
    console_log!(
        "\nbrowser, memory: W3 history reads handed to JS, events/s\n\n\
         | store, JSON text + JSON.parse | store, serde-wasm-bindgen | plain SQL + JSON.parse per event | text / plain | serde-wasm-bindgen / plain |\n\
         |---:|---:|---:|---:|---:|\n\
         | {as_text:.0} | {typed:.0} | {plain:.0} | {:.2} | {:.2} |",
        as_text / plain,
        typed / plain
    );
}
