//! The conformance suite: written once, run by every target against every place a database
//! can live (native file, native memory, OPFS and memory in a browser worker).
//!
//! Each area module exports `CASES`, a list of named functions taking a [`Backend`]. A target
//! runs them with [`run`].
#![allow(dead_code)]

/// Lists functions as named cases.
#[macro_export]
macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), $name as fn(&dyn $crate::conformance::Backend))),*]
    };
}

/// Calls the macro `$target` with the name of every area, so that every target runs the same
/// list: `$target` makes one test per area.
#[macro_export]
macro_rules! each_area {
    ($target:ident) => {
        $target!(
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
            conversations,
            steps,
            sync_state,
            paging,
            retention,
            input_checks
        );
    };
}

pub mod artifacts;
pub mod checkpoints;
pub mod conversations;
pub mod effects;
pub mod input_checks;
pub mod journal;
pub mod namespaces;
pub mod outbox;
pub mod packages;
pub mod paging;
pub mod retention;
pub mod run_journal;
pub mod steps;
pub mod sync_state;
pub mod timers;
pub mod visibility;

/// The store type the cases run on: each test crate root names it (`Store`, or
/// `PgStore` in tests/postgres.rs), so the cases are written once for every implementation.
pub(crate) use crate::Store;

/// Where a test's databases live.
pub trait Backend {
    /// A new, empty database location.
    fn fresh(&self) -> Box<dyn Location>;
    /// A short name for messages, like `"native file"`.
    fn name(&self) -> &'static str;
    /// Whether the database is SQLite. Cases that inspect SQLite itself (its pages and
    /// free list, PRAGMAs, triggers and blob literals in raw SQL) run only where it is.
    fn is_sqlite(&self) -> bool {
        true
    }
}

/// One database location.
pub trait Location {
    /// Opens a store on this location. On a persistent location every call opens a new
    /// connection to the same database; the previous store must be dropped first where the
    /// medium allows one connection only (OPFS).
    fn open(&self) -> Store;
    /// Whether data outlives the store that wrote it (file, OPFS); memory does not.
    fn persistent(&self) -> bool;
    /// A second, concurrent connection to the same database, where the medium allows one.
    fn open_second(&self) -> Option<Store> {
        None
    }
}

/// A named conformance case.
pub type Case = (&'static str, fn(&dyn Backend));

/// Runs every case on `backend`, naming each so a failure says which one.
pub fn run(backend: &dyn Backend, cases: &[Case]) {
    for (name, case) in cases {
        println!("conformance on {}: {name}", backend.name());
        case(backend);
    }
}

/// Asserts that `result` is an error with `code`, and returns the error.
#[track_caller]
pub fn expect_code<T: std::fmt::Debug>(result: runstore::Result<T>, code: &str) -> runstore::Error {
    match result {
        Ok(value) => panic!("expected {code}, got Ok({value:?})"),
        Err(error) => {
            assert_eq!(error.code(), code, "unexpected error: {error}");
            error
        }
    }
}

/// Opens the location again and hands the new store to `check`, when it is persistent.
pub fn after_reopen(location: &dyn Location, store: Store, check: impl FnOnce(&Store)) {
    if location.persistent() {
        drop(store);
        check(&location.open());
    }
}
