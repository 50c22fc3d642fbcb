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
use runstore::{Durability, SqliteStore};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

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
    opened: RefCell<Vec<String>>,
}

impl OpfsOpener<'_> {
    fn open(&self, name: &str) -> SqliteStore {
        self.collect();
        let db = format!("/{}-{name}.db", self.prefix);
        self.pool.delete(&db).expect("delete an old database");
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
fn run_on_opfs(pool: &OpfsPool, durability: Durability, prefix: &'static str, title: &str) {
    let opener = OpfsOpener {
        pool,
        durability,
        prefix,
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
        "full",
        "browser, OPFS (sahpool), durability full",
    );
    run_on_opfs(
        &pool,
        Durability::Relaxed,
        "relaxed",
        "browser, OPFS (sahpool), durability relaxed",
    );
    assert_eq!(pool.databases().unwrap(), Vec::<String>::new());
    pool.close().await.unwrap();

    let started = now();
    let figures = workloads::run_all(&|_| open_in_memory().expect("open memory store"), &now);
    print_table("browser, memory", &figures, started);
}
