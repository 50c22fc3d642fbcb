//! Opening stores in the browser: persistent ones in OPFS through the sqlite-wasm-vfs `sahpool`
//! VFS (dedicated workers only), in-memory ones anywhere. Persistence is always chosen by the
//! caller: when OPFS cannot be used the answer is [`Error::OpfsUnavailable`], never a quiet
//! switch to memory.
//!
//! One [`OpfsPool`] owns a directory of pre-opened OPFS files. Only one context (tab or worker)
//! of an origin can hold a pool: a second [`install_pool`] of the same name, from any worker or
//! tab (or the same worker), fails promptly with [`Error::Busy`] and leaves the pool's files
//! untouched.
//!
//! The pool lives in a directory of its own, never the official SQLite wasm build's default
//! `.opfs-sahpool`: sqlite-wasm-vfs 0.3 does not write the slot digest the official build checks,
//! so a slot shared with it could later be discarded by the official build.
//!
//! ```no_run
//! # async fn example() -> runstore::Result<()> {
//! use runstore::{Durability, EventJournal};
//!
//! let pool = runstore::wasm::install_pool("my-app").await?;
//! let store = pool.open("/app.db", Durability::Full)?;
//! assert_eq!(store.head("order-42")?, 0);
//! drop(store);
//! pool.close().await?;
//! # Ok(())
//! # }
//! ```

mod context;
mod convert;
mod errors;
mod facade;
mod facade_agent;
mod facade_reads;
mod facade_retention;
mod facade_steps;
mod facade_sync;
mod facade_transfer;
mod facade_workflow;
mod facade_writes;
mod indexeddb;
mod intrinsics;
mod json_text;
mod lock;
mod node_file;
mod operations;
mod persistence;
mod reserve;
mod time;
mod to_js;
mod value;
mod walk;

pub use facade::RunStoreCore;
#[doc(hidden)]
pub use indexeddb::check_vfs_contract as check_idb_vfs_contract;
pub use indexeddb::{install_idb, IdbPool};

use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_rs::vfs::transfer::DbTransfer;
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_vfs::sahpool::{self, OpfsSAHError, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};
use wasm_bindgen::JsCast;

use crate::error::{Error, Result};
use crate::sqlite::{Durability, Key, Medium, SqliteStore};
use lock::WebLock;

/// Slots a new pool holds: a database takes one for its file and one for its WAL.
pub const DEFAULT_POOL_SLOTS: usize = 6;

/// How long installing may keep failing because another context still holds the pool's files
/// (Chrome can release them a moment after a reload) before the answer is BUSY.
const HANDLE_RETRY_MS: i32 = 1_500;

/// The longest one install attempt may take.
const INSTALL_MS: i32 = 10_000;

/// The files a database uses next to its main file: its journals, and the encrypted copy
/// (with its journal) that encrypting it in place makes (see `sqlite/encrypt.rs`).
const SIDECARS: [&str; 4] = ["-wal", "-journal", "-encrypting", "-encrypting-journal"];

/// Opens a private in-memory store, in any context (window, worker).
///
/// # Errors
/// [`Error::Backend`] when SQLite cannot allocate the database.
pub fn open_in_memory() -> Result<SqliteStore> {
    SqliteStore::open_in_memory()
}

/// Installs the OPFS pool `name` (the OPFS directory `name`, holding every database of the
/// pool) in this dedicated worker and takes the origin-wide Web Lock of the same name for as
/// long as the pool stays open.
///
/// `name` is 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not starting with `.` (which
/// keeps it off the official build's `.opfs-sahpool`), and not `memvfs` or `memdb` (the pool
/// is a VFS of that name, and SQLite has those already).
///
/// # Errors
/// - [`Error::InvalidInput`] for a bad `name`.
/// - [`Error::OpfsUnavailable`] outside a dedicated worker, without OPFS or Web Locks, or in
///   private browsing.
/// - [`Error::Busy`] when another tab or worker (or this worker) holds the pool, or the
///   browser did not answer in time. Nothing is deleted and nothing stays acquired.
/// - [`Error::Corrupt`] when a pool file has an unreadable header; [`Error::StorageFull`] when
///   the quota does not allow the pool's files; [`Error::Backend`] otherwise.
pub async fn install_pool(name: &str) -> Result<OpfsPool> {
    let (pool, ()) = install_pool_beside(name, DEFAULT_POOL_SLOTS, std::future::ready(())).await?;
    Ok(pool)
}

/// As [`install_pool`], a new pool with `slots` slots, running `beside` once the pool's lock is
/// held, while the pool's files are being opened (each a round trip to the browser's storage
/// process): what belongs to the pool is asked for at once, and only by the lock's holder.
pub(super) async fn install_pool_beside<F: std::future::Future>(
    name: &str,
    slots: usize,
    beside: F,
) -> Result<(OpfsPool, F::Output)> {
    check_pool_name(name)?;
    check_opfs()?;
    let Some(lock) = WebLock::try_acquire(&lock_name(name)).await? else {
        return Err(Error::Busy {
            message: format!("OPFS pool {name} is held by another tab or worker"),
        });
    };
    match futures_util::future::join(install_with_retry(name, slots), beside).await {
        (Ok(util), beside) => Ok((
            OpfsPool {
                name: name.to_owned(),
                util,
                lock: std::cell::RefCell::new(Some(lock)),
            },
            beside,
        )),
        (Err(error), _) => {
            // sqlite-wasm-vfs has closed the handles the failed install acquired; the lock
            // goes too, and the install's error is the one worth reporting.
            let _ = lock.release().await;
            Err(error)
        }
    }
}

/// Names the Web Lock after the pool.
fn lock_name(pool: &str) -> String {
    format!("runstore-pool:{pool}")
}

/// The VFS names SQLite (`memdb`) and sqlite-wasm-rs (`memvfs`) register themselves.
const RESERVED_POOL_NAMES: [&str; 2] = ["memvfs", "memdb"];

/// Why a store's name must be a pool name, in every context (Node too, where `auto` takes
/// memory): an app's store name then works wherever it runs.
const POOL_NAME_WHY: &str = "a persistent store (persistence 'auto', the default, included) \
                             is named so in OPFS and IndexedDB; 'memory' takes any name";

pub(super) fn check_pool_name(name: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > 64 || name.starts_with('.') || !name.chars().all(allowed) {
        return Err(Error::invalid(
            "name",
            format!(
                "store name {:?} must be 1 to 64 of A-Z a-z 0-9 - _ . and not start with .: \
                 {POOL_NAME_WHY}",
                crate::error::clip(name)
            ),
        ));
    }
    if RESERVED_POOL_NAMES.contains(&name) {
        return Err(Error::invalid(
            "name",
            format!("store name {name:?} is taken by one of SQLite's own VFSes: {POOL_NAME_WHY}"),
        ));
    }
    Ok(())
}

/// Refuses contexts without synchronous OPFS access before anything is requested.
fn check_opfs() -> Result<()> {
    let global = js_sys::global();
    if global
        .dyn_ref::<web_sys::DedicatedWorkerGlobalScope>()
        .is_none()
    {
        return Err(Error::OpfsUnavailable {
            message: format!(
                "persistence 'opfs' needs OPFS sync access handles, which exist only in a \
                 browser's dedicated worker, not in {}{}",
                context::describe(),
                context::instead()
            ),
        });
    }
    let has = |object: &wasm_bindgen::JsValue, key: &str| {
        js_sys::Reflect::get(object, &key.into()).is_ok_and(|v| !v.is_undefined() && !v.is_null())
    };
    let navigator = js_sys::Reflect::get(&global, &"navigator".into()).unwrap_or_default();
    let storage = js_sys::Reflect::get(&navigator, &"storage".into()).unwrap_or_default();
    if !has(&global, "FileSystemSyncAccessHandle") || !has(&storage, "getDirectory") {
        return Err(Error::OpfsUnavailable {
            message: "persistence 'opfs' needs OPFS sync access handles \
                      (navigator.storage.getDirectory, FileSystemSyncAccessHandle), which this \
                      browser's dedicated worker does not have"
                .into(),
        });
    }
    Ok(())
}

/// Installs the pool, retrying with a growing pause while another context still holds its
/// files, for at most [`HANDLE_RETRY_MS`]. The pauses stay short (10 ms, doubling up to
/// 100 ms): the files of a worker that just ended come free within a few hundred ms, and a
/// tab taking over should notice within one short pause of that.
async fn install_with_retry(name: &str, slots: usize) -> Result<OpfsSAHPoolUtil> {
    let config = OpfsSAHPoolCfgBuilder::new()
        .vfs_name(name)
        .directory(name)
        .initial_capacity(slots)
        // The pool's Web Lock, taken before the install, keeps other tabs and workers out: the
        // lock file would be one more file and handle for every open to wait for.
        .lock_file(false)
        .build();
    let mut waited = 0;
    let mut pause = 10;
    loop {
        let attempt = sahpool::install::<WasmOsCallback>(&config, false);
        match time::within(INSTALL_MS, "installing the OPFS pool", attempt).await? {
            Ok(util) => return Ok(util),
            Err(error) if errors::is_handle_held(&error) && waited < HANDLE_RETRY_MS => {
                time::sleep(pause).await;
                waited += pause;
                pause = (pause * 2).min(100);
            }
            Err(error) => return Err(errors::pool(error)),
        }
    }
}

/// An installed OPFS pool: the databases in its directory, and the Web Lock that keeps other
/// tabs and workers out while it is open.
///
/// Open stores with [`OpfsPool::open`]; drop them, then [`OpfsPool::close`]. Dropping an open
/// pool closes it when no store of it is open; otherwise its files and lock stay held until
/// the worker ends.
pub struct OpfsPool {
    name: String,
    util: OpfsSAHPoolUtil,
    lock: std::cell::RefCell<Option<WebLock>>,
}

impl std::fmt::Debug for OpfsPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpfsPool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OpfsPool {
    /// The pool's name (its OPFS directory and Web Lock).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Opens (creating if needed) the database `db` of this pool, on one connection.
    /// File names are kept with a leading slash (`"app.db"` is `"/app.db"`), as the official
    /// SQLite wasm build looks them up.
    ///
    /// # Errors
    /// - [`Error::Busy`] when a store of this pool already has `db` open (the VFS does not
    ///   coordinate two connections), [`Error::InvalidInput`] for a bad name.
    /// - [`Error::StorageFull`] when the pool has too few free slots (see
    ///   [`OpfsPool::reserve`]) or the quota is exhausted.
    /// - [`Error::SchemaTooNew`], [`Error::Corrupt`], [`Error::Backend`] as
    ///   [`SqliteStore::open`]; a closed pool is [`Error::Backend`].
    pub fn open(&self, db: &str, durability: Durability) -> Result<SqliteStore> {
        self.open_with_key(db, durability, None)
    }

    /// As [`OpfsPool::open`], for a database encrypted with `key` when there is one.
    ///
    /// # Errors
    /// As [`OpfsPool::open`]; [`Error::WrongKey`] when the key does not open the database.
    pub fn open_with_key(
        &self,
        db: &str,
        durability: Durability,
        key: Option<&Key>,
    ) -> Result<SqliteStore> {
        let path = db_path(db)?;
        self.check_open()?;
        self.refuse_in_use(&path)?;
        self.check_slots(&path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(&path, flags, self.name.as_str())?;
        SqliteStore::from_connection_with_key(conn, Medium::Sahpool, durability, key)
    }

    /// Deletes the database `db` and its journal files from the pool, freeing their slots.
    /// Returns whether the database existed.
    ///
    /// # Errors
    /// [`Error::Busy`] while a store has it open; [`Error::InvalidInput`] for a bad name;
    /// [`Error::Backend`] when the pool is closed or OPFS fails.
    pub fn delete(&self, db: &str) -> Result<bool> {
        let path = db_path(db)?;
        self.check_open()?;
        let existed = self.util.remove(&path).map_err(errors::pool)?;
        for sidecar in SIDECARS {
            self.util
                .remove(&format!("{path}{sidecar}"))
                .map_err(errors::pool)?;
        }
        Ok(existed)
    }

    /// The databases of this pool, with their leading slash.
    ///
    /// # Errors
    /// [`Error::Backend`] when the pool is closed.
    pub fn databases(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let mut names = self.util.names().map_err(errors::pool)?;
        names.retain(|name| !SIDECARS.iter().any(|s| name.ends_with(s)));
        names.sort();
        Ok(names)
    }

    /// Makes sure the pool has at least `free` unused slots (each database needs two: its file
    /// and its WAL).
    ///
    /// # Errors
    /// [`Error::StorageFull`] when the quota does not allow more files; [`Error::Busy`] while
    /// a store is being opened; [`Error::Backend`] when the pool is closed or OPFS fails.
    pub async fn reserve(&self, free: usize) -> Result<()> {
        self.check_open()?;
        let used = self.util.len().map_err(errors::pool)?;
        self.util
            .ensure_capacity(used + free)
            .await
            .map_err(errors::pool)
    }

    /// Closes the pool: releases its OPFS files, then its Web Lock, so that once this returns
    /// another tab or worker can install it. Closing a closed pool does nothing.
    ///
    /// # Errors
    /// [`Error::Busy`] while a store opened from this pool is still open; the pool then stays
    /// open and usable, and `close` can be called again after dropping the store.
    /// [`Error::Busy`] too when the browser does not confirm the lock's release in time (the
    /// pool is closed then).
    pub async fn close(&self) -> Result<()> {
        self.close_files()?;
        let lock = self.lock.borrow_mut().take();
        match lock {
            Some(lock) => lock.release().await,
            None => Ok(()),
        }
    }

    /// Closes the pool's OPFS files but keeps its Web Lock (and so keeps other tabs and workers
    /// out) until [`OpfsPool::close`]: the browser counts what the files hold now, not the room
    /// they were given while open. Closing closed files does nothing.
    ///
    /// # Errors
    /// As [`OpfsPool::close`].
    pub fn close_files(&self) -> Result<()> {
        if self.util.is_uninstalled() {
            return Ok(());
        }
        // SAFETY: every connection on this VFS is opened by `open` on a named file, so a
        // connection on it holds a file open; `uninstall` checks that none is and fails
        // otherwise. The pool is not SQLite's default VFS, so no other connection uses it.
        unsafe { self.util.uninstall() }.map_err(|error| match error {
            OpfsSAHError::FilesInUse => Error::Busy {
                message: format!("a store of OPFS pool {} is still open", self.name),
            },
            other => errors::pool(other),
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.util.is_uninstalled() {
            return Err(Error::Backend {
                message: format!("OPFS pool {} is closed", self.name),
            });
        }
        Ok(())
    }

    /// Refuses a second connection to a database: the VFS's locks are per connection, so two
    /// connections would each believe they hold the file alone. Starting an export is the
    /// pool's one non-destructive probe of whether a file is open (the probe is dropped
    /// unused).
    fn refuse_in_use(&self, path: &str) -> Result<()> {
        match self.util.open_export(path) {
            Err(OpfsSAHError::FileInUse(_)) => Err(Error::Busy {
                message: format!("database {path} of OPFS pool {} is already open", self.name),
            }),
            Err(OpfsSAHError::Busy) => Err(errors::pool(OpfsSAHError::Busy)),
            _ => Ok(()),
        }
    }

    /// Refuses to start a database that could not get its file and WAL slots: SQLite would
    /// fail part-way with a bare "unable to open database file".
    fn check_slots(&self, path: &str) -> Result<()> {
        let present = |name: &str| self.util.contains(name).map_err(errors::pool);
        let mut needed = 0;
        for name in [path.to_owned(), format!("{path}-wal")] {
            if !present(&name)? {
                needed += 1;
            }
        }
        let used = self.util.len().map_err(errors::pool)?;
        let free = self.util.capacity().saturating_sub(used);
        if free < needed {
            return Err(Error::StorageFull {
                message: format!(
                    "OPFS pool {} has {free} free slot(s), database {path} needs {needed}; \
                     OpfsPool::reserve adds slots",
                    self.name
                ),
            });
        }
        Ok(())
    }
}

impl Drop for OpfsPool {
    /// Without [`OpfsPool::close`]: releases the files and the lock when no store of the pool
    /// is open (the lock goes a moment later); otherwise keeps both until the worker ends.
    fn drop(&mut self) {
        let Some(lock) = self.lock.get_mut().take() else {
            return;
        };
        // SAFETY: as in `close`.
        match unsafe { self.util.uninstall() } {
            Ok(()) => drop(lock),
            Err(_) => lock.hold_until_worker_ends(),
        }
    }
}

/// The pool's name for database `db`: with one leading slash, of a length the pool header
/// can store with SQLite's suffixes.
fn db_path(db: &str) -> Result<String> {
    let bare = db.trim_start_matches('/');
    if bare.is_empty() || bare.contains('\0') || bare.len() > 480 {
        return Err(Error::invalid(
            "database",
            format!(
                "{:?} must be 1 to 480 bytes without NUL",
                crate::error::clip(db)
            ),
        ));
    }
    Ok(format!("/{bare}"))
}
