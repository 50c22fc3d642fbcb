//! The conformance suite in a browser's dedicated worker, on OPFS (the sahpool VFS) and on
//! memory, and the OPFS behaviour only a browser has: reopening a pool, a second opener being
//! BUSY, and the pool's limits.
#![cfg(target_arch = "wasm32")]

#[macro_use]
mod conformance;

use std::cell::RefCell;
use std::rc::Rc;

use conformance::{expect_code, Backend, Case, Location};
use runstore::wasm::{install_pool, open_in_memory, OpfsPool};
use runstore::{Durability, Event, EventJournal, EventKind, SqliteStore};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// Slots for the conformance pools: a case keeps a few databases open at once, each with a
/// file and a WAL.
const CONFORMANCE_SLOTS: usize = 16;

/// Every `fresh()` is a new database file in one installed pool. A file is deleted as soon as
/// its location is gone and no store has it open (or at the end of the test), so the pool's
/// slots are not used up.
struct Opfs {
    pool: Rc<OpfsPool>,
    /// Databases whose location is gone but which a store still had open.
    leftover: Rc<RefCell<Vec<String>>>,
    next: RefCell<usize>,
}

struct OpfsLocation {
    pool: Rc<OpfsPool>,
    db: String,
    leftover: Rc<RefCell<Vec<String>>>,
}

impl Opfs {
    async fn install(pool_name: &str) -> Opfs {
        let pool = install_pool(pool_name)
            .await
            .expect("install the OPFS pool");
        pool.reserve(CONFORMANCE_SLOTS)
            .await
            .expect("reserve slots");
        Opfs {
            pool: Rc::new(pool),
            leftover: Rc::default(),
            next: RefCell::new(0),
        }
    }

    /// Deletes the databases whose stores have been dropped since.
    fn collect(&self) {
        self.leftover
            .borrow_mut()
            .retain(|db| self.pool.delete(db).is_err());
    }

    async fn finish(self) {
        self.collect();
        assert_eq!(self.leftover.borrow().len(), 0, "a store outlived its test");
        assert_eq!(self.pool.databases().unwrap(), Vec::<String>::new());
        self.pool.close().await.expect("close the pool");
    }
}

impl Backend for Opfs {
    fn fresh(&self) -> Box<dyn Location> {
        self.collect();
        let n = self.next.replace_with(|n| *n + 1);
        let db = format!("/conformance-{n}.db");
        Box::new(OpfsLocation {
            pool: self.pool.clone(),
            db,
            leftover: self.leftover.clone(),
        })
    }
    fn name(&self) -> &'static str {
        "OPFS (sahpool)"
    }
}

impl Location for OpfsLocation {
    fn open(&self) -> SqliteStore {
        self.pool
            .open(&self.db, Durability::Full)
            .expect("open OPFS store")
    }
    fn persistent(&self) -> bool {
        true
    }
}

impl Drop for OpfsLocation {
    fn drop(&mut self) {
        if self.pool.delete(&self.db).is_err() {
            self.leftover.borrow_mut().push(self.db.clone());
        }
    }
}

struct Memory;
struct MemoryLocation;

impl Backend for Memory {
    fn fresh(&self) -> Box<dyn Location> {
        Box::new(MemoryLocation)
    }
    fn name(&self) -> &'static str {
        "browser memory"
    }
}

impl Location for MemoryLocation {
    fn open(&self) -> SqliteStore {
        open_in_memory().expect("open memory store")
    }
    fn persistent(&self) -> bool {
        false
    }
}

/// Runs an area's cases on a pool of its own, so that a failing area cannot leave a held pool
/// behind for the next.
async fn run_on_opfs(area: &str, cases: &[Case]) {
    let backend = Opfs::install(&format!("conformance-{area}")).await;
    conformance::run(&backend, cases);
    backend.finish().await;
}

macro_rules! on_both {
    ($($area:ident),*) => {
        mod on_opfs {
            use wasm_bindgen_test::wasm_bindgen_test;
            $(#[wasm_bindgen_test] async fn $area() {
                super::run_on_opfs(stringify!($area), super::conformance::$area::CASES).await
            })*
        }
        mod on_memory {
            use wasm_bindgen_test::wasm_bindgen_test;
            $(#[wasm_bindgen_test] fn $area() {
                super::conformance::run(&super::Memory, super::conformance::$area::CASES)
            })*
        }
    };
}

on_both!(
    journal,
    timers,
    outbox,
    visibility,
    namespaces,
    packages,
    checkpoints,
    effects,
    run_journal,
    artifacts,
    conversations
);

// ---- OPFS behaviour only a browser has ----

fn custom(name: &str, at: i64) -> Event {
    Event {
        kind: EventKind::Custom { name: name.into() },
        recorded_at: at,
        data: serde_json::json!({ "step": name }),
    }
}

fn names(store: &SqliteStore, workflow: &str) -> Vec<String> {
    store
        .read_history(workflow)
        .unwrap()
        .into_iter()
        .map(|stored| match stored.event.kind {
            EventKind::Custom { name } => name,
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
}

fn now() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen_test]
async fn a_closed_pool_reopened_reads_everything_back() {
    let pool = install_pool("reopen").await.unwrap();
    pool.delete("/reopen.db").unwrap();
    let store = pool.open("/reopen.db", Durability::Full).unwrap();
    store
        .append("wf", &[custom("a", 1), custom("b", 2)], 0)
        .unwrap();
    store.append("wf", &[custom("c", 3)], 2).unwrap();
    drop(store);
    pool.close().await.unwrap();

    let pool = install_pool("reopen").await.unwrap();
    assert_eq!(pool.databases().unwrap(), ["/reopen.db"]);
    let store = pool.open("reopen.db", Durability::Relaxed).unwrap();
    assert_eq!(names(&store, "wf"), ["a", "b", "c"]);
    assert_eq!(store.head("wf").unwrap(), 3);
    drop(store);
    assert!(pool.delete("/reopen.db").unwrap());
    assert_eq!(pool.databases().unwrap(), Vec::<String>::new());
    pool.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn a_second_opener_is_busy_at_once_and_takes_over_after_close() {
    let first = install_pool("contended").await.unwrap();
    first.delete("/shared.db").unwrap();
    let store = first.open("/shared.db", Durability::Full).unwrap();
    store.append("wf", &[custom("first", 1)], 0).unwrap();

    // The Web Lock is origin-wide: another install from this worker meets it like one from
    // another tab or worker would.
    let started = now();
    let refused = install_pool("contended").await;
    let waited = now() - started;
    let error = expect_code(refused.map(|_| ()), "BUSY");
    assert!(error.to_string().contains("contended"), "{error}");
    assert!(waited < 500.0, "BUSY took {waited} ms");

    // The failed opener took nothing away: the first keeps writing.
    store.append("wf", &[custom("after", 2)], 1).unwrap();
    drop(store);
    first.close().await.unwrap();

    let second = install_pool("contended").await.unwrap();
    let store = second.open("/shared.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["first", "after"]);
    drop(store);
    second.delete("/shared.db").unwrap();
    second.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn files_held_by_another_context_make_install_busy_and_delete_nothing() {
    let pool = install_pool("held").await.unwrap();
    pool.delete("/kept.db").unwrap();
    let store = pool.open("/kept.db", Durability::Full).unwrap();
    store.append("wf", &[custom("kept", 1)], 0).unwrap();
    drop(store);
    pool.close().await.unwrap();

    // Something outside the store (the official SQLite build, a worker still shutting down)
    // holds a sync access handle on the pool's lock file; it does not use the Web Lock.
    let handle = open_sync_handle("held", ".lock").await;
    let started = now();
    let refused = install_pool("held").await;
    let waited = now() - started;
    expect_code(refused.map(|_| ()), "BUSY");
    assert!(waited < 5_000.0, "BUSY took {waited} ms");
    handle.close();

    // The refused install released its Web Lock and handles and deleted nothing.
    let pool = install_pool("held").await.unwrap();
    let store = pool.open("/kept.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["kept"]);
    drop(store);
    pool.delete("/kept.db").unwrap();
    pool.close().await.unwrap();
}

/// Opens a sync access handle on `file` in the OPFS directory `dir`.
async fn open_sync_handle(dir: &str, file: &str) -> web_sys::FileSystemSyncAccessHandle {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let root: web_sys::FileSystemDirectoryHandle =
        JsFuture::from(scope.navigator().storage().get_directory())
            .await
            .unwrap()
            .unchecked_into();
    let dir: web_sys::FileSystemDirectoryHandle = JsFuture::from(root.get_directory_handle(dir))
        .await
        .unwrap()
        .unchecked_into();
    let file: web_sys::FileSystemFileHandle = JsFuture::from(dir.get_file_handle(file))
        .await
        .unwrap()
        .unchecked_into();
    JsFuture::from(file.create_sync_access_handle())
        .await
        .unwrap()
        .unchecked_into()
}

#[wasm_bindgen_test]
async fn one_database_has_one_connection_and_an_open_store_keeps_the_pool_open() {
    let pool = install_pool("single").await.unwrap();
    pool.delete("/one.db").unwrap();
    let store = pool.open("/one.db", Durability::Full).unwrap();
    store.append("wf", &[custom("x", 1)], 0).unwrap();

    expect_code(pool.open("/one.db", Durability::Full), "BUSY");
    expect_code(pool.delete("/one.db"), "BUSY");
    expect_code(pool.close().await, "BUSY");
    // Still usable after the refusals.
    store.append("wf", &[custom("y", 2)], 1).unwrap();

    drop(store);
    let store = pool.open("/one.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["x", "y"]);
    drop(store);
    assert!(pool.delete("/one.db").unwrap());
    assert!(!pool.delete("/one.db").unwrap());
    pool.close().await.unwrap();
    pool.close().await.unwrap();
    expect_code(pool.open("/one.db", Durability::Full), "BACKEND");
}

#[wasm_bindgen_test]
async fn a_full_pool_says_storage_full_until_slots_are_reserved() {
    let pool = install_pool("small").await.unwrap();
    let mut open = Vec::new();
    for db in pool.databases().unwrap() {
        pool.delete(&db).unwrap();
    }
    // The default pool has room for three databases with their WALs.
    for n in 0..3 {
        let store = pool.open(&format!("/db{n}.db"), Durability::Full).unwrap();
        store.append("wf", &[custom("x", 1)], 0).unwrap();
        open.push(store);
    }
    let error = expect_code(pool.open("/db3.db", Durability::Full), "STORAGE_FULL");
    assert!(error.to_string().contains("reserve"), "{error}");
    pool.reserve(2).await.unwrap();
    let store = pool.open("/db3.db", Durability::Full).unwrap();
    store.append("wf", &[custom("x", 1)], 0).unwrap();
    open.push(store);
    drop(open);
    for n in 0..4 {
        assert!(pool.delete(&format!("/db{n}.db")).unwrap());
    }
    pool.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn bad_pool_and_database_names_are_invalid_input() {
    for name in ["", ".opfs-sahpool", "a/b", "é"] {
        let error = expect_code(install_pool(name).await.map(|_| ()), "INVALID_INPUT");
        assert!(error.to_string().contains("pool"), "{error}");
    }
    let pool = install_pool("names").await.unwrap();
    expect_code(pool.open("/", Durability::Full), "INVALID_INPUT");
    expect_code(pool.open("a\0b", Durability::Full), "INVALID_INPUT");
    pool.close().await.unwrap();
}

#[wasm_bindgen_test]
fn memory_stores_are_separate() {
    let a = open_in_memory().unwrap();
    let b = open_in_memory().unwrap();
    a.append("wf", &[custom("x", 1)], 0).unwrap();
    assert_eq!(b.head("wf").unwrap(), 0);
}
