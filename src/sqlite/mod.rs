//! The SQLite implementation of every store trait: all SQL lives below this module, one file
//! per area, on one schema (`schema.sql`).

/// Makes a store method called on its own (not inside a step) run as a step of its one
/// operation, so that its change is numbered in the change feed (`SqliteStore::alone`), and
/// returns what `$done` answers. Inside a step it does nothing: the method applies itself.
macro_rules! alone {
    ($store:expr, $operation:expr, $done:pat => $answer:expr) => {
        if !$store.in_step() {
            return $store.alone($operation).map(|done| match done {
                $done => $answer,
                _ => unreachable!("an operation answers as itself"),
            });
        }
    };
}

mod migrations;

mod artifacts;
mod change_feed;
mod checkpoints;
mod cipher;
mod conversations;
mod effects;
mod encrypt;
mod import_rules;
mod journal;
mod leases;
mod namespaces;
mod outbox;
mod packages;
mod paging;
mod retention;
mod revisions;
mod room;
mod run_journal;
mod steps;
mod sync_feed;
mod sync_state;
mod timers;
mod transfer;
mod visibility;

use std::cell::Cell;
use std::ops::Deref;
use std::path::Path;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::{Error, Result};
pub use change_feed::KEPT_CHANGES;
pub use cipher::Key;
pub use encrypt::EncryptProgress;
pub use migrations::SCHEMA_VERSION;
pub use transfer::ImportOutcome;

/// How a commit must survive failures, named like IndexedDB's durability hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Durability {
    /// A commit that returned survives a crashed process, tab or worker and a power loss.
    #[default]
    Full,
    /// A commit that returned survives a crashed process, tab or worker; a power loss may drop
    /// the last commits. The database is never corrupted.
    Relaxed,
}

/// Where the connection's file lives, which decides the journal settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    /// A file on a native file system: WAL, shared with other connections.
    NativeFile,
    /// An OPFS file through the sahpool VFS: no shared memory, one connection at a time.
    Sahpool,
    /// A file on disk through Node's file calls (the wasm build in Node, Bun or Electron): no
    /// shared memory, one connection, other openers kept out by a lock file.
    NodeFile,
    /// A private in-memory database.
    Memory,
    /// A database held in memory and stored in IndexedDB after commits (see
    /// `runstore::wasm::IdbPool`): a rollback journal in memory, no flushes by SQLite. What a
    /// commit promises is decided by the store's write to IndexedDB.
    IndexedDb,
}

/// The store: one SQLite connection with the runstore schema.
///
/// Every multi-statement write runs in one `IMMEDIATE` transaction: all of it commits or
/// none. Several `SqliteStore`s may open the same native file; SQLite serialises their writes.
pub struct SqliteStore {
    conn: Connection,
    /// Set while [`crate::StepStore::commit`] applies a step: every write then joins the
    /// step's transaction instead of opening its own.
    in_step: Cell<bool>,
    /// Set when a delete inside a step freed pages: the step gives them back to the file
    /// system after it commits (see `SqliteStore::release_space`).
    release_after_step: Cell<bool>,
    /// Set while the WAL cannot be checkpointed for want of room, and while a delete runs
    /// (see `retention.rs`): writes other than deletes are then refused.
    room: room::Room,
    /// The newest request of each scope of the request log, as this connection knows it.
    newest: steps::Newest,
    /// The key the store was opened with (SQLCipher encrypts its pages), for its exports.
    key: Option<Key>,
    /// Where the store's file lives and what its commits promise, to open it again when it
    /// is encrypted in place.
    medium: Medium,
    durability: Durability,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) a store in a native file with [`Durability::Full`].
    ///
    /// # Errors
    /// [`Error::SchemaTooNew`] for a database written by a newer version; [`Error::Busy`],
    /// [`Error::Corrupt`] or [`Error::Backend`] when SQLite cannot open it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Durability::Full)
    }

    /// Opens a store in a native file with the given durability.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with(path: impl AsRef<Path>, durability: Durability) -> Result<Self> {
        Self::from_connection(Connection::open(path)?, Medium::NativeFile, durability)
    }

    /// Opens (creating if needed) a store in a native file encrypted with `key` (see [`Key`]);
    /// the browser build opens the same file with the same key.
    ///
    /// # Errors
    /// [`Error::WrongKey`] when the file is not encrypted with `key` (nothing is written);
    /// otherwise as [`SqliteStore::open`].
    pub fn open_encrypted(
        path: impl AsRef<Path>,
        key: &Key,
        durability: Durability,
    ) -> Result<Self> {
        let conn = Connection::open(path)?;
        Self::from_connection_with_key(conn, Medium::NativeFile, durability, Some(key))
    }

    /// Opens a private in-memory store.
    ///
    /// # Errors
    /// [`Error::Backend`] when SQLite cannot allocate the database.
    pub fn open_in_memory() -> Result<Self> {
        Self::from_connection(
            Connection::open_in_memory()?,
            Medium::Memory,
            Durability::Full,
        )
    }

    /// Wraps an open connection: applies the settings for `medium` and `durability`, then
    /// brings the schema up to date.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn from_connection(
        conn: Connection,
        medium: Medium,
        durability: Durability,
    ) -> Result<Self> {
        Self::from_connection_with_key(conn, medium, durability, None)
    }

    /// As [`SqliteStore::from_connection`], for a store encrypted with `key` when there is one.
    /// The key is proved by the first read, before any setting touches the file.
    ///
    /// # Errors
    /// [`Error::WrongKey`] when the key (or its absence) does not open the file; otherwise as
    /// [`SqliteStore::open`].
    pub fn from_connection_with_key(
        conn: Connection,
        medium: Medium,
        durability: Durability,
        key: Option<&Key>,
    ) -> Result<Self> {
        let mut ignore = |_| {};
        let mut counter = encrypt::Counter::new(&mut ignore, 0);
        Self::open_connection(conn, medium, durability, key, &mut counter)
    }

    /// As [`SqliteStore::from_connection_with_key`], reporting the rows copied when the open
    /// finishes an interrupted encryption (see `encrypt.rs`).
    fn open_connection(
        mut conn: Connection,
        medium: Medium,
        durability: Durability,
        key: Option<&Key>,
        counter: &mut encrypt::Counter,
    ) -> Result<Self> {
        cipher::unlock(&conn, key)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Room for every hot statement of every area (about 70); the default 16 would evict them
        // as soon as an application uses more than one or two areas.
        conn.set_prepared_statement_cache_capacity(128);
        if matches!(medium, Medium::Sahpool | Medium::NodeFile) {
            // sahpool and Node's file calls have no shared memory: WAL works only under exclusive locking, and a
            // database left in WAL mode cannot even be read without it, so this comes before
            // the first read. It changes nothing in the file.
            conn.pragma_update_and_check(None, "locking_mode", "EXCLUSIVE", |_| Ok(()))?;
        }
        cipher::prove_key(&conn, key.is_some())?;
        encrypt::finish(&conn, key, counter)?;
        // Refuse a newer database before any setting touches its file.
        migrations::refuse_newer(&conn)?;
        configure(&conn, medium, durability)?;
        migrations::migrate(&conn)?;
        let room = room::Room::watch(&mut conn)?;
        let store = Self {
            conn,
            in_step: Cell::new(false),
            release_after_step: Cell::new(false),
            room,
            newest: steps::Newest::default(),
            key: key.cloned(),
            medium,
            durability,
        };
        store.release_space_left();
        Ok(store)
    }

    /// Encrypts every page of this encrypted store again under `key`, in place: the store is
    /// then opened with `key` only. A plain store is encrypted (see [`SqliteStore::encrypt`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for a store in memory; the errors of a write.
    pub fn rekey(&mut self, key: &Key) -> Result<()> {
        if self.key.is_none() {
            return self.encrypt(key, &mut |_| {});
        }
        cipher::rekey(&self.conn, key)?;
        self.key = Some(key.clone());
        Ok(())
    }

    /// Whether the store was opened with a key.
    pub fn is_encrypted(&self) -> bool {
        self.key.is_some()
    }

    /// Hands back the connection, for SQL the store does not offer (the benchmarks' plain-SQL
    /// baseline runs on a connection set up exactly like the store's).
    pub fn into_connection(self) -> Connection {
        self.conn
    }

    /// Starts an `IMMEDIATE` transaction: it takes the write lock up front, so a read-then-write
    /// inside it cannot be invalidated by another writer. Dropping it uncommitted rolls back.
    ///
    /// Inside a step the write joins the step's transaction: its `commit` does nothing, and
    /// the step commits or rolls back everything at its end.
    fn write_tx(&self) -> Result<WriteTx<'_>> {
        let tx = if self.in_step.get() {
            None
        } else {
            self.check_room()?;
            Some(Transaction::new_unchecked(
                &self.conn,
                TransactionBehavior::Immediate,
            )?)
        };
        Ok(WriteTx {
            tx,
            conn: &self.conn,
        })
    }

    /// Runs SQL directly, bypassing every check of the store. For tests that simulate data
    /// damaged or written by other code; never needed by an application.
    #[doc(hidden)]
    pub fn raw_execute(&self, sql: &str) -> Result<()> {
        // The SQL may change the request log as no store method does.
        self.newest.forget();
        Ok(self.conn.execute_batch(sql)?)
    }

    /// The connection, for reads that need no transaction.
    fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// A write transaction of one store method: its own `IMMEDIATE` transaction, or a part of
/// the step being applied (see [`SqliteStore::write_tx`]).
struct WriteTx<'c> {
    tx: Option<Transaction<'c>>,
    conn: &'c Connection,
}

impl WriteTx<'_> {
    /// Commits the method's own transaction; inside a step, leaves that to the step.
    fn commit(self) -> Result<()> {
        if let Some(tx) = self.tx {
            tx.commit()?;
        }
        Ok(())
    }
}

impl Deref for WriteTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

/// The store owns its PRAGMAs: a caller's connection settings are replaced, so that the
/// durability promise holds whatever the connection came with.
///
/// On OPFS (sahpool) both levels use WAL under `locking_mode=EXCLUSIVE` (sahpool has no shared
/// memory; the exclusive lock is taken in `from_connection`, before the first read):
/// - `Full`: `synchronous=FULL` flushes the WAL (`FileSystemSyncAccessHandle.flush()`, the
///   one durability primitive OPFS has) at every commit.
/// - `Relaxed`: `synchronous=NORMAL` flushes only at checkpoints. Every write still reaches
///   the file through `write()` before the commit returns, so a crashed tab or worker loses
///   nothing; a power loss may drop the commits since the last checkpoint, and the WAL's
///   checksums keep the database consistent.
///
/// Measured in headless Chromium 156 (sahpool, single-event appends of about 200 bytes, each
/// its own transaction, 1000 per run, median of 7; three runs on a loaded 2-core machine; see
/// docs/durability.md): WAL+FULL 1484, 2456, 2417/s; WAL+NORMAL 3816, 9561, 8334/s;
/// TRUNCATE+FULL 611, 879, 880/s. The rollback journal (TRUNCATE, the only one sahpool can
/// use safely) is 2.4-2.8 times slower than WAL at the same strength and promises nothing
/// more, so WAL it is for both levels.
fn configure(conn: &Connection, medium: Medium, durability: Durability) -> Result<()> {
    conn.pragma_update(None, "foreign_keys", true)?;
    // Plans never depend on bound values. Otherwise SQLite prepares a statement again at every
    // run whose plan it weighed against a bound value (a listing's `run_id = ? ORDER BY
    // checkpoint_id` among them): a page of a run's checkpoints took 8 µs instead of 0.6
    // natively, nearly all of it in the parser. The store's plans are made for any value.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    set_new_layout(conn)?;
    let synchronous = match (medium, durability) {
        // SQLite's own flushes would do nothing there: the pool's write to IndexedDB does.
        (Medium::IndexedDb, _) => "OFF",
        (_, Durability::Full) => "FULL",
        (_, Durability::Relaxed) => "NORMAL",
    };
    let journal = match medium {
        Medium::Memory => None,
        // IndexedDB holds only what a whole commit left: the journal never needs to outlive a
        // transaction. Not exclusive locking: after a failed write to IndexedDB the pool puts
        // the stored pages back, and SQLite rereads them at its next transaction.
        Medium::IndexedDb => Some("memory"),
        Medium::NativeFile | Medium::Sahpool | Medium::NodeFile => Some("wal"),
    };
    if let Some(journal) = journal {
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", journal, |row| row.get(0))?;
        // A journal mode SQLite refused would silently change what a commit promises.
        if !mode.eq_ignore_ascii_case(journal) {
            return Err(Error::Backend {
                message: format!("journal_mode {journal} was refused; the mode is {mode}"),
            });
        }
    }
    conn.pragma_update(None, "synchronous", synchronous)?;
    // A large transaction grows the WAL; without a limit its file keeps that size for good.
    // This trims it back at the next checkpoint that restarts it.
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    Ok(())
}

/// Gives a new database [`NEW_PAGE_SIZE`] pages and incremental auto-vacuum (see
/// `migrations::set_incremental_vacuum`). Both are part of the file's layout, fixed once its
/// first page is written, which the switch to WAL does: so this comes first, and a database
/// that has pages keeps what it was made with. Set here, the mode needs no `VACUUM` to apply
/// it, which would be one more write and flush in a new store's open.
fn set_new_layout(conn: &Connection) -> Result<()> {
    let pages: i64 = conn.pragma_query_value(None, "page_count", |row| row.get(0))?;
    if pages == 0 {
        conn.pragma_update(None, "page_size", NEW_PAGE_SIZE)?;
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    Ok(())
}

/// The page size of a new database, in bytes. SQLite's own default, which sqlite-wasm-rs
/// raises to 8 KiB: a commit writes every page it changes whole to the WAL, and the store's
/// commits change a few rows on a few pages, so smaller pages mean fewer bytes per commit.
const NEW_PAGE_SIZE: i64 = 4096;

/// The size the WAL file is trimmed back to after a checkpoint, in bytes: about what
/// SQLite's automatic checkpoint (every 1000 pages) lets it reach in ordinary use.
const WAL_SIZE_LIMIT: i64 = 4 << 20;
