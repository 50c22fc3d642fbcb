//! The conformance suite in a browser's dedicated worker, on OPFS (the sahpool VFS) and on
//! memory, and the OPFS behaviour only a browser has: reopening a pool, a second opener being
//! BUSY, and the pool's limits.
#![cfg(target_arch = "wasm32")]

#[macro_use]
mod conformance;
#[path = "support/custom_events.rs"]
mod custom_events;

use std::cell::RefCell;
use std::rc::Rc;

use conformance::{expect_code, Backend, Case, Location};
use custom_events::{custom, names};
use runstore::wasm::{install_pool, open_in_memory, OpfsPool};
use runstore::{Durability, EventJournal, SqliteStore};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

/// The store the conformance cases run on.
type Store = SqliteStore;

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
        // A run that failed part-way may have left databases behind in this browser profile.
        for db in pool.databases().unwrap() {
            pool.delete(&db).unwrap();
        }
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

each_area!(on_both);

// ---- OPFS behaviour only a browser has ----

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
    wasm_bindgen_test::console_log!(
        "a second install in this worker was refused after {waited} ms"
    );
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
async fn another_worker_is_busy_while_the_pool_is_held_and_reads_it_after_close() {
    let pool = install_pool("shared-between-workers").await.unwrap();
    pool.delete("/handover.db").unwrap();
    let store = pool.open("/handover.db", Durability::Full).unwrap();
    store.append("wf", &[custom("mine", 1)], 0).unwrap();

    let started = now();
    let reply = in_another_worker("shared-between-workers", "/handover.db").await;
    let waited = now() - started;
    wasm_bindgen_test::console_log!("another worker answered {reply} after {waited} ms");
    assert_eq!(reply, "BUSY");
    // Includes starting the worker and loading the module there.
    assert!(waited < 3_000.0, "BUSY took {waited} ms");

    store.append("wf", &[custom("still mine", 2)], 1).unwrap();
    drop(store);
    pool.close().await.unwrap();

    let reply = in_another_worker("shared-between-workers", "/handover.db").await;
    assert_eq!(reply, "OK mine,still mine");

    let pool = install_pool("shared-between-workers").await.unwrap();
    assert!(pool.delete("/handover.db").unwrap());
    pool.close().await.unwrap();
}

/// Runs [`open_in_another_worker`] in a new dedicated worker of this origin, loading this test
/// module there, and returns its answer.
async fn in_another_worker(pool: &str, db: &str) -> String {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let global = js_sys::global();
    let location = js_sys::Reflect::get(&global, &"location".into()).unwrap();
    let origin = js_sys::Reflect::get(&location, &"origin".into())
        .unwrap()
        .as_string()
        .unwrap();
    // The test runner serves this test's module at /wasm-bindgen-test.
    let source = format!(
        r#"import init, {{ open_in_another_worker }} from "{origin}/wasm-bindgen-test";
self.onmessage = async (event) => {{
  try {{
    await init("{origin}/wasm-bindgen-test_bg.wasm");
    postMessage(await open_in_another_worker(event.data[0], event.data[1]));
  }} catch (error) {{
    postMessage("JS " + error);
  }}
}};"#
    );
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(
        &js_sys::Array::of1(&source.into()),
        &options,
    )
    .unwrap();
    let url = web_sys::Url::create_object_url_with_blob(&blob).unwrap();
    let worker_options = web_sys::WorkerOptions::new();
    worker_options.set_type(web_sys::WorkerType::Module);
    let worker = web_sys::Worker::new_with_options(&url, &worker_options).unwrap();
    let reply = js_sys::Promise::new(&mut |resolve, reject| {
        worker.set_onmessage(Some(&resolve));
        worker.set_onerror(Some(&reject));
    });
    worker
        .post_message(&js_sys::Array::of2(&pool.into(), &db.into()))
        .unwrap();
    let event = JsFuture::from(reply)
        .await
        .expect("the other worker failed");
    worker.terminate();
    web_sys::Url::revoke_object_url(&url).unwrap();
    let event: web_sys::MessageEvent = event.unchecked_into();
    event.data().as_string().unwrap()
}

/// In another worker: opens `db` of `pool` and lists its workflow `wf`'s event names as
/// `"OK a,b"`, or answers the error code.
#[wasm_bindgen::prelude::wasm_bindgen]
pub async fn open_in_another_worker(pool: String, db: String) -> String {
    async fn read(pool: &str, db: &str) -> runstore::Result<Vec<String>> {
        let pool = install_pool(pool).await?;
        let store = pool.open(db, Durability::Full)?;
        let names = names(&store, "wf");
        drop(store);
        pool.close().await?;
        Ok(names)
    }
    match read(&pool, &db).await {
        Ok(names) => format!("OK {}", names.join(",")),
        Err(error) => error.code().to_owned(),
    }
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
    // holds a sync access handle on one of the pool's files without taking the Web Lock: the
    // first slot of the directory and then the last (install asks for every slot at once).
    let (first, last) = first_and_last_entries("held/.opaque").await;
    for held in [format!(".opaque/{first}"), format!(".opaque/{last}")] {
        let handle = open_sync_handle(&format!("held/{held}")).await;
        let started = now();
        let refused = install_pool("held").await;
        let waited = now() - started;
        wasm_bindgen_test::console_log!("with {held} held, install was refused after {waited} ms");
        expect_code(refused.map(|_| ()), "BUSY");
        // Bounded: a short retry for handles released late, then BUSY.
        assert!(waited < 5_000.0, "BUSY took {waited} ms with {held} held");
        handle.close();
    }

    // The refused installs released their Web Lock and every handle they had acquired, and
    // deleted nothing.
    let pool = install_pool("held").await.unwrap();
    let store = pool.open("/kept.db", Durability::Full).unwrap();
    assert_eq!(names(&store, "wf"), ["kept"]);
    drop(store);
    pool.delete("/kept.db").unwrap();
    pool.close().await.unwrap();
}

async fn directory(path: &str) -> web_sys::FileSystemDirectoryHandle {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let mut dir: web_sys::FileSystemDirectoryHandle =
        JsFuture::from(scope.navigator().storage().get_directory())
            .await
            .unwrap()
            .unchecked_into();
    for part in path.split('/') {
        dir = JsFuture::from(dir.get_directory_handle(part))
            .await
            .unwrap()
            .unchecked_into();
    }
    dir
}

/// The names of the first and the last entry of the OPFS directory `path`, in iteration
/// order.
async fn first_and_last_entries(path: &str) -> (String, String) {
    use wasm_bindgen_futures::JsFuture;
    let keys = directory(path).await.keys();
    let mut names = Vec::new();
    loop {
        let next = JsFuture::from(keys.next().unwrap()).await.unwrap();
        let done = js_sys::Reflect::get(&next, &"done".into()).unwrap();
        if done.is_truthy() {
            break;
        }
        names.extend(
            js_sys::Reflect::get(&next, &"value".into())
                .unwrap()
                .as_string(),
        );
    }
    assert!(names.len() > 1, "the directory has slots: {names:?}");
    (names[0].clone(), names[names.len() - 1].clone())
}

/// Opens a sync access handle on the OPFS file at `path`.
async fn open_sync_handle(path: &str) -> web_sys::FileSystemSyncAccessHandle {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let (dir, file) = path.rsplit_once('/').unwrap();
    let file: web_sys::FileSystemFileHandle =
        JsFuture::from(directory(dir).await.get_file_handle(file))
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
    for name in ["", ".opfs-sahpool", "a/b", "é", "memvfs", "memdb"] {
        let error = expect_code(install_pool(name).await.map(|_| ()), "INVALID_INPUT");
        assert!(error.to_string().contains("store name"), "{error}");
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
