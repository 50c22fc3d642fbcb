//! The IndexedDB medium in a browser's dedicated worker: the conformance suite on it, with
//! every case's database checked against what IndexedDB holds once the pool is installed
//! again; the VFS against sqlite-wasm-rs's own VFS tests; and what only this medium does:
//! flushes, a failed flush undoing what it did not store, one holder per pool.
#![cfg(target_arch = "wasm32")]

#[macro_use]
mod conformance;
#[path = "support/custom_events.rs"]
mod custom_events;

use std::cell::RefCell;
use std::rc::Rc;

use conformance::{expect_code, Backend, Case, Location};
use custom_events::{custom, names};
use runstore::wasm::{install_idb, install_pool, IdbPool};
use runstore::{Durability, Event, EventJournal, Key, SqliteStore};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

/// The store the conformance cases run on.
type Store = SqliteStore;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// Every `fresh()` is a new database of one installed pool. The databases stay until the
/// area's cases have run: then each is compared with what IndexedDB holds of it.
struct Idb {
    pool: Rc<IdbPool>,
    databases: Rc<RefCell<Vec<String>>>,
}

struct IdbLocation {
    pool: Rc<IdbPool>,
    db: String,
}

impl Idb {
    async fn install(pool_name: &str) -> Idb {
        let pool = install_idb(pool_name).await.expect("install the pool");
        // A run that failed part-way may have left databases behind in this browser profile.
        for db in pool.databases().unwrap() {
            pool.delete(&db).unwrap();
        }
        pool.flush().await.unwrap();
        Idb {
            pool: Rc::new(pool),
            databases: Rc::default(),
        }
    }

    /// Flushes, installs the pool again from IndexedDB and checks that every database reads
    /// back byte for byte; then deletes them all.
    async fn finish(self, pool_name: &str) {
        let databases = self.databases.take();
        let images: Vec<Vec<u8>> = databases.iter().map(|db| image(&self.pool, db)).collect();
        self.pool.flush().await.expect("flush");
        let pool = Rc::try_unwrap(self.pool).expect("a store outlived its test");
        pool.close().await.expect("close the pool");

        let pool = install_idb(pool_name)
            .await
            .expect("install the pool again");
        assert_eq!(sorted(pool.databases().unwrap()), sorted(databases.clone()));
        for (db, before) in databases.iter().zip(images) {
            let after = image(&pool, db);
            assert!(
                after == before,
                "{db} differs after the pool was loaded again"
            );
            assert!(pool.delete(db).unwrap());
        }
        pool.close().await.expect("close the pool");
    }
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// The database file `db` as SQLite reads it, page by page.
fn image(pool: &IdbPool, db: &str) -> Vec<u8> {
    let mut conn = pool
        .open(db, Durability::Full)
        .expect("open")
        .into_connection();
    let bytes = conn.serialize("main").expect("serialize").to_vec();
    bytes
}

impl Backend for Idb {
    fn fresh(&self) -> Box<dyn Location> {
        let n = self.databases.borrow().len();
        let db = format!("/conformance-{n}.db");
        self.databases.borrow_mut().push(db.clone());
        Box::new(IdbLocation {
            pool: self.pool.clone(),
            db,
        })
    }
    fn name(&self) -> &'static str {
        "IndexedDB"
    }
}

impl Location for IdbLocation {
    fn open(&self) -> SqliteStore {
        self.pool
            .open(&self.db, Durability::Full)
            .expect("open IndexedDB store")
    }
    fn persistent(&self) -> bool {
        true
    }
}

/// Runs an area's cases on a pool of its own, so that a failing area cannot leave a held pool
/// behind for the next.
async fn run_on_indexeddb(area: &str, cases: &[Case]) {
    let name = format!("conformance-{area}");
    let backend = Idb::install(&name).await;
    conformance::run(&backend, cases);
    backend.finish(&name).await;
}

macro_rules! on_indexeddb {
    ($($area:ident),*) => {
        mod on_indexeddb {
            use wasm_bindgen_test::wasm_bindgen_test;
            $(#[wasm_bindgen_test] async fn $area() {
                super::run_on_indexeddb(stringify!($area), super::conformance::$area::CASES).await
            })*
        }
    };
}

each_area!(on_indexeddb);

// ---- what only the IndexedDB medium does ----

/// Installs the pool `name` again after the last holder dropped it without closing it: the
/// browser lets its Web Lock go a moment later, as after a worker ended.
async fn install_after_drop(name: &str) -> IdbPool {
    for _ in 0..100 {
        match install_idb(name).await {
            Err(error) if error.code() == "BUSY" => sleep(20).await,
            installed => return installed.unwrap(),
        }
    }
    panic!("pool {name} stayed held after it was dropped");
}

async fn sleep(ms: i32) {
    let wait = js_sys::Promise::new(&mut |resolve, _| {
        let global: web_sys::WorkerGlobalScope =
            wasm_bindgen::JsCast::unchecked_into(js_sys::global());
        global
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(wait).await.unwrap();
}

/// A pool of `name` with no databases in it.
async fn empty_pool(name: &str) -> IdbPool {
    let pool = install_idb(name).await.unwrap();
    for db in pool.databases().unwrap() {
        pool.delete(&db).unwrap();
    }
    pool.flush().await.unwrap();
    pool
}

#[wasm_bindgen_test]
fn the_vfs_passes_sqlite_wasm_rs_own_vfs_tests() {
    runstore::wasm::check_idb_vfs_contract().unwrap();
}

#[wasm_bindgen_test]
async fn what_was_flushed_reads_back_and_what_was_not_is_gone() {
    let pool = empty_pool("idb-reopen").await;
    let store = pool.open("/reopen.db", Durability::Full).unwrap();
    store
        .append("wf", &[custom("a", 1), custom("b", 2)], 0)
        .unwrap();
    assert!(pool.has_unflushed_changes());
    pool.flush().await.unwrap();
    assert!(!pool.has_unflushed_changes());
    store.append("wf", &[custom("c", 3)], 2).unwrap();
    drop(store);
    // Dropped without close: what the last append wrote never reached IndexedDB.
    drop(pool);

    let pool = install_after_drop("idb-reopen").await;
    assert_eq!(pool.databases().unwrap(), ["/reopen.db"]);
    let store = pool.open("reopen.db", Durability::Relaxed).unwrap();
    assert_eq!(names(&store, "wf"), ["a", "b"]);
    store.append("wf", &[custom("c", 3)], 2).unwrap();
    drop(store);
    pool.close().await.unwrap(); // flushes

    let pool = install_idb("idb-reopen").await.unwrap();
    let store = pool.open("reopen.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["a", "b", "c"]);
    drop(store);
    assert!(pool.delete("/reopen.db").unwrap());
    pool.close().await.unwrap();
    let pool = install_idb("idb-reopen").await.unwrap();
    assert_eq!(pool.databases().unwrap(), Vec::<String>::new());
    pool.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn a_failed_flush_undoes_what_it_did_not_store_and_the_store_reads_on() {
    let pool = empty_pool("idb-failed-flush").await;
    let store = pool.open("/undo.db", Durability::Full).unwrap();
    store.append("wf", &[custom("kept", 1)], 0).unwrap();
    pool.flush().await.unwrap();
    // Pages of the journal, the workflow and its index change, and the file grows.
    let big: Vec<Event> = (0..200).map(|n| custom(&format!("lost-{n}"), n)).collect();
    store.append("wf", &big, 1).unwrap();
    store.append("other", &[custom("lost", 1)], 0).unwrap();
    assert_eq!(store.head("wf").unwrap(), 201);

    pool.disconnect();
    let error = pool.flush().await.unwrap_err();
    assert_eq!(error.code(), "BACKEND", "{error}");
    // The same connection reads what IndexedDB holds.
    assert_eq!(names(&store, "wf"), ["kept"]);
    assert_eq!(store.head("other").unwrap(), 0);
    assert!(!pool.has_unflushed_changes());
    // ... and writes on from there, as far as memory goes.
    store.append("wf", &[custom("again", 2)], 1).unwrap();
    assert_eq!(names(&store, "wf"), ["kept", "again"]);
    expect_code(pool.flush().await, "BACKEND");
    assert_eq!(names(&store, "wf"), ["kept"]);
    drop(store);
    drop(pool);

    let pool = install_after_drop("idb-failed-flush").await;
    let store = pool.open("/undo.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["kept"]);
    drop(store);
    pool.delete("/undo.db").unwrap();
    pool.close().await.unwrap();
}

/// A store encrypted in place whose flush then fails: IndexedDB still holds the plain store,
/// and the open connection (on the new file) reads what IndexedDB holds, so its calls fail
/// instead of answering from a file nothing stores. Reinstalled, the plain store is whole.
#[cfg(feature = "cipher")]
#[wasm_bindgen_test]
async fn a_failed_flush_after_an_encryption_in_place_leaves_the_plain_store() {
    let pool = empty_pool("idb-failed-encrypt").await;
    let mut store = pool.open("/plain.db", Durability::Relaxed).unwrap();
    store.append("wf", &[custom("kept", 1)], 0).unwrap();
    pool.flush().await.unwrap();
    let key = Key::passphrase("a passphrase").unwrap();
    store.encrypt(&key, &mut |_| {}).unwrap();
    assert_eq!(names(&store, "wf"), ["kept"]);

    pool.disconnect();
    expect_code(pool.flush().await, "BACKEND");
    assert!(!pool.has_unflushed_changes());
    assert!(
        store.head("wf").is_err(),
        "the encrypted connection does not read on as if its file were stored"
    );
    drop(store);
    drop(pool);

    let pool = install_after_drop("idb-failed-encrypt").await;
    assert_eq!(pool.databases().unwrap(), ["/plain.db"]);
    let store = pool.open("/plain.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["kept"]);
    drop(store);
    pool.delete("/plain.db").unwrap();
    pool.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn a_second_holder_of_the_pool_is_busy_whatever_its_medium() {
    let pool = empty_pool("idb-held").await;
    expect_code(install_idb("idb-held").await.map(|_| ()), "BUSY");
    // An OPFS pool of the same name is the same store: refused too (where OPFS exists).
    let has_opfs =
        js_sys::Reflect::has(&js_sys::global(), &"FileSystemSyncAccessHandle".into()).unwrap();
    let busy = if has_opfs { "BUSY" } else { "OPFS_UNAVAILABLE" };
    expect_code(install_pool("idb-held").await.map(|_| ()), busy);
    let store = pool.open("/one.db", Durability::Full).unwrap();
    expect_code(pool.open("/one.db", Durability::Full), "BUSY");
    expect_code(pool.delete("/one.db"), "BUSY");
    expect_code(pool.close().await, "BUSY");
    store.append("wf", &[custom("x", 1)], 0).unwrap();
    drop(store);
    pool.delete("/one.db").unwrap();
    pool.close().await.unwrap();
    pool.close().await.unwrap();
    expect_code(pool.open("/one.db", Durability::Full), "BACKEND");
    let again = install_idb("idb-held").await.unwrap();
    again.close().await.unwrap();
}

#[wasm_bindgen_test]
async fn bad_pool_and_database_names_are_invalid_input() {
    for name in ["", ".opfs-sahpool", "a/b", "é", "memvfs", "memdb"] {
        expect_code(install_idb(name).await.map(|_| ()), "INVALID_INPUT");
    }
    let pool = install_idb("idb-names").await.unwrap();
    expect_code(pool.open("/", Durability::Full), "INVALID_INPUT");
    expect_code(pool.open("a\0b", Durability::Full), "INVALID_INPUT");
    pool.close().await.unwrap();
}
