//! The SQLite implementation of every store trait: all SQL lives below this module, one file
//! per area, on one schema (`schema.sql`).

mod migrations;

pub(crate) mod artifacts;
mod checkpoints;
mod conversations;
pub(crate) mod effects;
mod import_rules;
pub(crate) mod journal;
pub(crate) mod namespaces;
pub(crate) mod outbox;
pub(crate) mod packages;
pub(crate) mod paging;
mod retention;
pub(crate) mod revisions;
mod run_journal;
pub(crate) mod steps;
pub(crate) mod sync_feed;
mod sync_state;
mod timers;
mod transfer;
pub(crate) mod visibility;

use std::cell::Cell;
use std::ops::Deref;
use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::{Error, Result};
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
    /// A private in-memory database.
    Memory,
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
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Room for every hot statement of every area (about 70); the default 16 would evict them
        // as soon as an application uses more than one or two areas.
        conn.set_prepared_statement_cache_capacity(128);
        if medium == Medium::Sahpool {
            // sahpool has no shared memory: WAL works only under exclusive locking, and a
            // database left in WAL mode cannot even be read without it, so this comes before
            // the first read. It changes nothing in the file.
            conn.pragma_update_and_check(None, "locking_mode", "EXCLUSIVE", |_| Ok(()))?;
        }
        // Refuse a newer database before any setting touches its file.
        migrations::refuse_newer(&conn)?;
        configure(&conn, medium, durability)?;
        migrations::migrate(&conn)?;
        Ok(Self {
            conn,
            in_step: Cell::new(false),
            release_after_step: Cell::new(false),
        })
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
    set_new_page_size(conn)?;
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Relaxed => "NORMAL",
    };
    if medium != Medium::Memory {
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        // A journal mode SQLite refused would silently change what a commit promises.
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Backend {
                message: format!("journal_mode WAL was refused; the mode is {mode}"),
            });
        }
    }
    conn.pragma_update(None, "synchronous", synchronous)?;
    // A large transaction grows the WAL; without a limit its file keeps that size for good.
    // This trims it back at the next checkpoint that restarts it.
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    Ok(())
}

/// Gives a new database [`NEW_PAGE_SIZE`] pages. The size is part of the file and is fixed
/// once its first page is written, which the switch to WAL does: so this comes first, and a
/// database that has pages keeps the size it was made with.
fn set_new_page_size(conn: &Connection) -> Result<()> {
    let pages: i64 = conn.pragma_query_value(None, "page_count", |row| row.get(0))?;
    if pages == 0 {
        conn.pragma_update(None, "page_size", NEW_PAGE_SIZE)?;
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

/// Converts a caller's unsigned count or sequence to SQLite's signed integer.
pub(crate) fn to_sql_int(field: &str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::invalid(field, format!("{value} exceeds 2^63-1")))
}

/// Converts a stored non-negative integer back; a negative one means the file was tampered with.
pub(crate) fn from_sql_int(column: &str, value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::Corrupt {
        message: format!("column {column} holds negative value {value}"),
    })
}

/// Checks that a caller's identifier is usable: non-empty and of bounded length.
pub(crate) fn check_id(field: &str, value: &str) -> Result<()> {
    check_id_as(|| field.to_owned(), value)
}

/// As [`check_id`], building the field's name only to report a failure: appends and batch
/// inserts check several ids per event or row.
pub(crate) fn check_id_as(field: impl FnOnce() -> String, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field(), "must not be empty"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            field(),
            format!("is {} bytes long; the limit is {MAX_ID_BYTES}", value.len()),
        ));
    }
    Ok(())
}

/// Upper bound on identifiers (workflow ids, keys, names), in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 1024;

/// Upper bound on one encoded journal event or JSON document, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Upper bound on one byte payload (artifact, archive, outbox input, state blob), in bytes.
pub const MAX_BLOB_BYTES: usize = 64 << 20;

/// Deepest nesting of a JSON document the store accepts. serde_json refuses to read more than
/// 128 levels, so a deeper document would be written and then be unreadable.
pub const MAX_JSON_DEPTH: usize = 100;

/// Encodes a caller's JSON document for a TEXT column, refusing one that is too large or too
/// deeply nested to be read back.
pub(crate) fn encode_document(field: &str, value: &serde_json::Value) -> Result<String> {
    check_depth(|| field.to_owned(), value)?;
    let text = serde_json::to_string(value)?;
    check_size(field, text.len(), MAX_DOCUMENT_BYTES)?;
    Ok(text)
}

/// Refuses JSON nested deeper than [`MAX_JSON_DEPTH`], naming the field only on failure.
pub(crate) fn check_depth(field: impl FnOnce() -> String, value: &serde_json::Value) -> Result<()> {
    if nested_deeper_than(value, MAX_JSON_DEPTH) {
        return Err(Error::invalid(
            field(),
            format!("is nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    Ok(())
}

/// Whether `value` has more than `levels` levels of arrays and objects. The recursion stops
/// at `levels`, so it is bounded whatever the input.
fn nested_deeper_than(value: &serde_json::Value, levels: usize) -> bool {
    let deeper = |child: &serde_json::Value| nested_deeper_than(child, levels - 1);
    match value {
        serde_json::Value::Array(items) => levels == 0 || items.iter().any(deeper),
        serde_json::Value::Object(map) => levels == 0 || map.values().any(deeper),
        _ => false,
    }
}

/// Checks a payload against its size limit.
pub(crate) fn check_size(field: &str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::invalid(
            field,
            format!("is {len} bytes long; the limit is {max}"),
        ));
    }
    Ok(())
}
