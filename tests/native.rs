//! The conformance suite natively, on a file database and on memory.
#![cfg(not(target_arch = "wasm32"))]

#[macro_use]
mod conformance;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use conformance::{Backend, Location};
use runstore::SqliteStore;

/// The store the conformance cases run on.
type Store = SqliteStore;

struct NativeFile;
struct NativeMemory;

struct FileLocation {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

struct MemoryLocation;

impl Backend for NativeFile {
    fn fresh(&self) -> Box<dyn Location> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = tempfile::tempdir().expect("temporary directory");
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.path().join(format!("store-{n}.db"));
        Box::new(FileLocation { _dir: dir, path })
    }
    fn name(&self) -> &'static str {
        "native file"
    }
}

impl Location for FileLocation {
    fn open(&self) -> SqliteStore {
        SqliteStore::open(&self.path).expect("open file store")
    }
    fn persistent(&self) -> bool {
        true
    }
    fn open_second(&self) -> Option<SqliteStore> {
        Some(self.open())
    }
}

impl Backend for NativeMemory {
    fn fresh(&self) -> Box<dyn Location> {
        Box::new(MemoryLocation)
    }
    fn name(&self) -> &'static str {
        "native memory"
    }
}

impl Location for MemoryLocation {
    fn open(&self) -> SqliteStore {
        SqliteStore::open_in_memory().expect("open memory store")
    }
    fn persistent(&self) -> bool {
        false
    }
}

macro_rules! on_both {
    ($($area:ident),*) => {
        mod on_file {
            $(#[test] fn $area() { super::conformance::run(&super::NativeFile, super::conformance::$area::CASES) })*
        }
        mod on_memory {
            $(#[test] fn $area() { super::conformance::run(&super::NativeMemory, super::conformance::$area::CASES) })*
        }
    };
}

each_area!(on_both);
