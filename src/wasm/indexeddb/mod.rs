//! Stores persisted in IndexedDB, for where OPFS sync access handles are missing (WebKit
//! without them, private windows, the main thread). Any context with IndexedDB can hold one.
//!
//! An [`IdbPool`] holds its databases in memory, where SQLite reads and writes them
//! synchronously, and [`IdbPool::flush`] stores every change since the last flush in IndexedDB
//! in one transaction, resolving once IndexedDB has committed it (`durability: "strict"` for
//! [`Durability::Full`], `"relaxed"` for [`Durability::Relaxed`]). So what IndexedDB holds is
//! always the databases as of one flush: a closed tab or a terminated worker loses only what
//! was not flushed. The package's client flushes after every write before it answers it.
//!
//! When a flush fails (the quota is exhausted, the browser aborted it), every change not
//! stored is undone: the databases go back to what IndexedDB holds, and the flush reports why.
//! Connections stay open and read the restored pages (SQLite sees the file change counter go
//! back and drops its cache; the store never uses exclusive locking here).
//!
//! Like an OPFS pool, a pool is held by one context of the origin at a time, under the same
//! Web Lock: another tab or worker installing it gets [`Error::Busy`].
//!
//! ```no_run
//! # async fn example() -> runstore::Result<()> {
//! use runstore::{Durability, EventJournal};
//!
//! let pool = runstore::wasm::install_idb("my-app").await?;
//! let store = pool.open("/app.db", Durability::Full)?;
//! assert_eq!(store.head("order-42")?, 0);
//! pool.flush().await?; // what the store wrote is in IndexedDB now
//! drop(store);
//! pool.close().await?;
//! # Ok(())
//! # }
//! ```

mod blocks;
mod idb;
mod vfs;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Function, Promise};
use rusqlite::{Connection, OpenFlags};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use super::lock::WebLock;
use super::{check_pool_name, db_path, lock_name};
use crate::error::{Error, Result};
use crate::sqlite::{Durability, Key, Medium, SqliteStore};

#[doc(hidden)]
pub use vfs::check_vfs_contract;

/// Installs the IndexedDB pool `name`: takes the origin-wide Web Lock of the pool (the same
/// one an OPFS pool of that name takes), opens the IndexedDB database `runstore:<name>` and
/// loads every database of the pool into memory.
///
/// `name` follows the rules of [`super::install_pool`].
///
/// # Errors
/// - [`Error::InvalidInput`] for a bad `name`.
/// - [`Error::OpfsUnavailable`] without IndexedDB or Web Locks, or where the browser blocks
///   IndexedDB.
/// - [`Error::Busy`] when another tab or worker (or this worker) holds the pool, or IndexedDB
///   did not open in time.
/// - [`Error::Corrupt`] when the stored data is damaged; [`Error::Backend`] otherwise.
pub async fn install_idb(name: &str) -> Result<IdbPool> {
    check_pool_name(name)?;
    idb::check_available()?;
    let Some(lock) = WebLock::try_acquire(&lock_name(name)).await? else {
        return Err(Error::Busy {
            message: format!("store pool {name} is held by another tab or worker"),
        });
    };
    match load(name).await {
        Ok((database, files)) => {
            let files = Rc::new(RefCell::new(files));
            let vfs_name = format!("runstore-idb:{name}");
            let registration = vfs::register(&vfs_name, files.clone()).map_err(|error| {
                database.close();
                Error::Backend {
                    message: format!("registering the IndexedDB VFS of {name}: {error}"),
                }
            });
            match registration {
                Ok(registration) => Ok(IdbPool {
                    name: name.to_owned(),
                    vfs_name,
                    database,
                    files,
                    registration: RefCell::new(Some(registration)),
                    lock: RefCell::new(Some(lock)),
                    last_write: RefCell::new(None),
                    reverts: Cell::new(0),
                    last_failure: RefCell::new(None),
                }),
                Err(error) => {
                    let _ = lock.release().await;
                    Err(error)
                }
            }
        }
        Err(error) => {
            let _ = lock.release().await;
            Err(error)
        }
    }
}

async fn load(name: &str) -> Result<(idb::Database, vfs::Files)> {
    let database = idb::open(name).await?;
    match database.load().await {
        Ok(files) => Ok((database, vfs::Files::loaded(files))),
        Err(error) => {
            database.close();
            Err(error)
        }
    }
}

/// An installed IndexedDB pool: its databases in memory, the IndexedDB database they are
/// stored in, and the Web Lock that keeps other tabs and workers out while it is open.
///
/// Open stores with [`IdbPool::open`], store what they wrote with [`IdbPool::flush`]; drop
/// them, then [`IdbPool::close`].
pub struct IdbPool {
    name: String,
    vfs_name: String,
    database: idb::Database,
    files: Rc<RefCell<vfs::Files>>,
    registration: RefCell<Option<vfs::Registration>>,
    lock: RefCell<Option<WebLock>>,
    /// Settles when the last flush begun has finished: flushes take turns.
    last_write: RefCell<Option<Promise>>,
    /// How many times a failed flush undid changes, and the last such failure.
    reverts: Cell<u64>,
    last_failure: RefCell<Option<Error>>,
}

impl std::fmt::Debug for IdbPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdbPool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl IdbPool {
    /// The pool's name (its IndexedDB database is `runstore:<name>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Opens (creating if needed) the database `db` of this pool, on one connection. Its
    /// changes are stored by [`IdbPool::flush`], strictly (`durability: "strict"`) when a
    /// database with changes to store was opened with [`Durability::Full`].
    ///
    /// # Errors
    /// - [`Error::Busy`] when a store of this pool already has `db` open;
    ///   [`Error::InvalidInput`] for a bad name.
    /// - [`Error::SchemaTooNew`], [`Error::Corrupt`], [`Error::Backend`] as
    ///   [`SqliteStore::open`]; a closed pool is [`Error::Backend`].
    pub fn open(&self, db: &str, durability: Durability) -> Result<SqliteStore> {
        self.open_with_key(db, durability, None)
    }

    /// As [`IdbPool::open`], for a database encrypted with `key` when there is one: IndexedDB
    /// then holds only encrypted pages.
    ///
    /// # Errors
    /// As [`IdbPool::open`]; [`Error::WrongKey`] when the key does not open the database.
    pub fn open_with_key(
        &self,
        db: &str,
        durability: Durability,
        key: Option<&Key>,
    ) -> Result<SqliteStore> {
        let path = db_path(db)?;
        self.check_open()?;
        if self.files.borrow().is_open(&path) {
            return Err(Error::Busy {
                message: format!(
                    "database {path} of store pool {} is already open",
                    self.name
                ),
            });
        }
        self.files.borrow_mut().set_durability(&path, durability);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(&path, flags, self.vfs_name.as_str())?;
        SqliteStore::from_connection_with_key(conn, Medium::IndexedDb, durability, key)
    }

    /// Deletes the database `db` (from IndexedDB at the next flush). Returns whether it
    /// existed.
    ///
    /// # Errors
    /// [`Error::Busy`] while a store has it open; [`Error::InvalidInput`] for a bad name;
    /// [`Error::Backend`] when the pool is closed.
    pub fn delete(&self, db: &str) -> Result<bool> {
        let path = db_path(db)?;
        self.check_open()?;
        let mut files = self.files.borrow_mut();
        if files.is_open(&path) {
            return Err(Error::Busy {
                message: format!("database {path} of store pool {} is open", self.name),
            });
        }
        // And the encrypted copy an interrupted encryption left (see `sqlite/encrypt.rs`).
        files.delete(&format!("{path}-encrypting"));
        Ok(files.delete(&path))
    }

    /// The databases of this pool, with their leading slash.
    ///
    /// # Errors
    /// [`Error::Backend`] when the pool is closed.
    pub fn databases(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let files = self.files.borrow();
        let names = files.names().filter(|name| !name.contains("-encrypting"));
        Ok(names.cloned().collect())
    }

    /// Whether a database of the pool changed since the last flush began.
    pub fn has_unflushed_changes(&self) -> bool {
        self.files.borrow().changed()
    }

    /// Stores every change made so far in IndexedDB, in one transaction, and resolves once
    /// IndexedDB has committed it. A flush begun while another runs waits for it.
    ///
    /// # Errors
    /// When IndexedDB refuses the write ([`Error::StorageFull`] for the quota,
    /// [`Error::Backend`] otherwise), or an earlier flush failed while this one waited: every
    /// change not stored has been undone, and the databases hold what IndexedDB holds.
    pub async fn flush(&self) -> Result<()> {
        let reverts = self.reverts.get();
        let (turn, finished) = turn();
        let previous = self.last_write.replace(Some(turn));
        if let Some(previous) = previous {
            let _ = JsFuture::from(previous).await;
        }
        let result = self.write_changes().await;
        let _ = finished.call0(&JsValue::UNDEFINED);
        result?;
        match (
            self.reverts.get() == reverts,
            self.last_failure.borrow().clone(),
        ) {
            (false, Some(failure)) => Err(failure),
            _ => Ok(()),
        }
    }

    async fn write_changes(&self) -> Result<()> {
        let Some(batch) = self.files.borrow_mut().take_batch() else {
            return Ok(());
        };
        match self.database.write(&batch).await {
            Ok(()) => Ok(()),
            Err(error) => {
                self.files.borrow_mut().revert(batch);
                self.reverts.set(self.reverts.get() + 1);
                self.last_failure.replace(Some(error.clone()));
                Err(error)
            }
        }
    }

    /// Flushes, then closes the pool: unregisters its VFS, closes IndexedDB and releases the
    /// Web Lock, so that once this returns another tab or worker can install it. Closing a
    /// closed pool does nothing.
    ///
    /// # Errors
    /// [`Error::Busy`] while a store opened from this pool is still open (the pool stays open
    /// and usable); a failed flush as [`IdbPool::flush`] (the pool stays open).
    pub async fn close(&self) -> Result<()> {
        if self.registration.borrow().is_none() {
            return Ok(());
        }
        self.flush().await?;
        let in_use = self
            .files
            .borrow()
            .names()
            .any(|name| self.files.borrow().is_open(name));
        if in_use {
            return Err(Error::Busy {
                message: format!("a store of store pool {} is still open", self.name),
            });
        }
        self.unregister();
        self.database.close();
        let lock = self.lock.borrow_mut().take();
        match lock {
            Some(lock) => lock.release().await,
            None => Ok(()),
        }
    }

    /// Closes the connection to IndexedDB as a browser does when the user clears the site's
    /// data: every later flush fails and undoes what it did not store. For tests of that path.
    #[doc(hidden)]
    pub fn disconnect(&self) {
        self.database.close();
    }

    fn unregister(&self) {
        if let Some(registration) = self.registration.borrow_mut().take() {
            // SAFETY: no connection on the VFS is open (checked by the callers), and nothing
            // else uses it.
            if let Err((registration, _)) = unsafe { registration.unregister() } {
                // SQLite refused: keep the VFS registered for the worker's lifetime.
                let _ = registration.into_raw();
            }
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.registration.borrow().is_none() {
            return Err(Error::Backend {
                message: format!("store pool {} is closed", self.name),
            });
        }
        Ok(())
    }
}

impl Drop for IdbPool {
    /// Without [`IdbPool::close`]: releases the VFS, IndexedDB and the lock when no store of the
    /// pool is open (changes not flushed are lost); otherwise keeps the lock and the VFS until
    /// the worker ends.
    fn drop(&mut self) {
        let Some(lock) = self.lock.get_mut().take() else {
            return;
        };
        let files = self.files.borrow();
        let in_use = files.names().any(|name| files.is_open(name));
        drop(files);
        if in_use {
            if let Some(registration) = self.registration.get_mut().take() {
                let _ = registration.into_raw();
            }
            lock.hold_until_worker_ends();
            return;
        }
        self.unregister();
        self.database.close();
        drop(lock);
    }
}

/// A turn for a flush: a promise that settles when `finished` is called.
fn turn() -> (Promise, Function) {
    let mut finish = None;
    let promise = Promise::new(&mut |resolve, _reject| finish = Some(resolve));
    (
        promise,
        finish.expect("a Promise executor runs synchronously"),
    )
}
