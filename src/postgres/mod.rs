//! The PostgreSQL implementation of every store trait ([`PgStore`]): all its SQL lives below
//! this module, one file per area as in `src/sqlite`, on one schema (`schema.sql`).
//!
//! The semantics and error codes are the SQLite store's; the input checks, event encoding,
//! status projection, cursors and fingerprints are the very same functions, in `src/backend`. What differs is how
//! concurrency is said: many connections write at once, so
//! - every write runs in one `READ COMMITTED` transaction that locks what it reads before it
//!   writes (`SELECT ... FOR UPDATE`), and the database enforces the invariants with unique
//!   keys (`PRIMARY KEY (workflow_id, seq)`, request ids, dispatch keys);
//! - a transaction that loses a race (a serialization failure, a deadlock, or a unique key
//!   taken by a writer that committed first) is rolled back and run again from the start, a
//!   bounded number of times, so the caller sees what a serial run gives: the loser of two
//!   appends under the same head gets `SEQUENCE_CONFLICT` with the winner's head;
//! - outbox claims take rows with `FOR UPDATE SKIP LOCKED`, so claimers on many connections
//!   never wait for each other and never take the same row.
//!
//! Client: the synchronous `postgres` crate with an `r2d2` pool. The store traits are
//! synchronous (the SQLite store answers on the caller's thread), so a blocking client keeps
//! one way of writing every area; an async server calls the store from its blocking pool
//! (`spawn_blocking`). tokio-postgres would force a runtime on every caller, and sqlx's checked
//! queries need a database at build time.

mod artifacts;
mod checkpoints;
mod conversations;
mod effects;
mod journal;
mod leases;
mod migrations;
mod namespaces;
mod outbox;
mod packages;
mod paging;
mod retention;
mod run_journal;
mod session;
mod steps;
mod sync_feed;
mod sync_state;
mod timers;
mod visibility;

use std::time::Duration;

use postgres::NoTls;
use r2d2_postgres::PostgresConnectionManager;

use crate::error::{Error, Result};
pub use migrations::PG_SCHEMA_VERSION;
use session::{Manager, Session, Tx};

type Pool = r2d2::Pool<Manager>;
type PooledClient = r2d2::PooledConnection<Manager>;

/// How a [`PgStore`] connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Connections in the pool: at most this many calls run at once; others wait for one.
    pub pool_size: u32,
    /// How long a call waits for a free connection before it fails with `UNAVAILABLE`.
    pub connect_timeout: Duration,
    /// The PostgreSQL schema that holds the store's tables (created if needed), so that
    /// several stores can share one database; `None`: the connection's `search_path`.
    /// Lowercase letters, digits and `_`, starting with a letter or `_`.
    pub schema: Option<String>,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            schema: None,
        }
    }
}

/// The store on PostgreSQL: a pool of connections to one database (and schema).
///
/// `PgStore` is `Send + Sync`; share one per process (in an `Arc`) and call it from many
/// threads: each call takes a connection from the pool for its duration. Several processes
/// may open stores on the same database; the database keeps them consistent.
///
/// ```no_run
/// use runstore::{EventJournal, PgStore};
///
/// let store = PgStore::connect("postgresql://runstore@localhost/runstore")?;
/// assert_eq!(store.head("order-42")?, 0);
/// # Ok::<(), runstore::Error>(())
/// ```
pub struct PgStore {
    pool: Pool,
    /// How to connect, for the change listener's connection of its own.
    config: postgres::Config,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool_size", &self.pool.max_size())
            .finish_non_exhaustive()
    }
}

/// How many times a write that lost a race runs again before `BUSY` is returned.
const MAX_WRITE_ATTEMPTS: u32 = 30;

impl PgStore {
    /// Connects with [`PgOptions::default`] to the database at `url` (a `postgresql://` URL
    /// or a `key=value` connection string) and brings the schema up to date.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a malformed URL; [`Error::Unavailable`] when no connection
    /// can be made in time; [`Error::SchemaTooNew`] for a database written by a newer version
    /// (left untouched).
    pub fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, &PgOptions::default())
    }

    /// As [`PgStore::connect`], with the given pool size, timeout and schema.
    ///
    /// # Errors
    /// As [`PgStore::connect`]; [`Error::InvalidInput`] for a pool size of 0 or a schema name
    /// that is not a plain lowercase identifier.
    pub fn connect_with(url: &str, options: &PgOptions) -> Result<Self> {
        if options.pool_size == 0 {
            return Err(Error::invalid("poolSize", "must be at least 1"));
        }
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| Error::invalid("url", format!("is not a PostgreSQL URL: {e}")))?;
        if let Some(schema) = &options.schema {
            check_schema_name(schema)?;
            // Every connection of the pool resolves the store's unqualified table names in
            // the schema.
            config.options(&format!("-c search_path={schema}"));
        }
        config.connect_timeout(options.connect_timeout);
        let manager = Manager(PostgresConnectionManager::new(config.clone(), NoTls));
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size)
            .min_idle(Some(0))
            // No `SELECT`-like probe before every call: it would cost a round trip each time.
            // A connection the server closed fails its call with UNAVAILABLE and leaves the
            // pool; the next call gets a fresh one.
            .test_on_check_out(false)
            .connection_timeout(options.connect_timeout)
            .build(manager)
            .map_err(unavailable)?;
        let store = Self { pool, config };
        store.write(|tx| migrations::migrate(tx, options.schema.as_deref()))?;
        Ok(store)
    }

    /// The most connections the store uses at once.
    pub fn pool_size(&self) -> u32 {
        self.pool.max_size()
    }

    /// Runs SQL directly, bypassing every check of the store. For tests that simulate data
    /// damaged or written by other code; never needed by an application.
    #[doc(hidden)]
    pub fn raw_execute(&self, sql: &str) -> Result<()> {
        Ok(self.client()?.client.batch_execute(sql)?)
    }

    fn client(&self) -> Result<PooledClient> {
        self.pool.get().map_err(unavailable)
    }

    /// Runs `body` in one transaction and commits it. When the transaction lost a race
    /// ([`is_retryable`]), it is rolled back and `body` runs again from the start: the
    /// second run sees what the winner committed (a new head, a taken key) and answers as a
    /// serial execution would. Any other error rolls back and is returned.
    fn write<T>(&self, mut body: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.client()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match connection.in_transaction(&mut body) {
                Err(error) if attempt < MAX_WRITE_ATTEMPTS && is_retryable(&error) => {
                    backoff(attempt);
                }
                other => return other,
            }
        }
    }

    /// Runs a read on a pooled connection, outside any explicit transaction: each statement
    /// sees what was committed when it started.
    fn read<T>(&self, body: impl FnOnce(&mut Session<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.client()?;
        body(&mut connection.session())
    }
}

/// Waits a little before a write runs again, longer after each lost race and spread by the
/// clock's nanoseconds, so that writers that collided do not collide again in step.
fn backoff(attempt: u32) {
    let spread = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()) % 1000);
    let micros = 200 * u64::from(attempt.min(10)) + spread;
    std::thread::sleep(Duration::from_micros(micros));
}

/// Whether `error` (or the error of the step operation it wraps) means the transaction lost
/// a race and may succeed when run again. [`From<postgres::Error>`] maps exactly those
/// SQLSTATEs to [`Error::Busy`].
fn is_retryable(error: &Error) -> bool {
    matches!(error.cause(), Error::Busy { .. })
}

fn check_schema_name(schema: &str) -> Result<()> {
    let mut chars = schema.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !first_ok || !rest_ok || schema.len() > 63 {
        return Err(Error::invalid(
            "schema",
            format!("{schema:?} is not a plain lowercase identifier of at most 63 bytes"),
        ));
    }
    Ok(())
}

fn unavailable(error: r2d2::Error) -> Error {
    Error::Unavailable {
        message: format!("no PostgreSQL connection: {error}"),
        request_id: None,
    }
}

impl From<postgres::Error> for Error {
    fn from(error: postgres::Error) -> Self {
        use postgres::error::SqlState;
        let message = match error.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => match std::error::Error::source(&error) {
                Some(source) => format!("{error}: {source}"),
                None => error.to_string(),
            },
        };
        let Some(code) = error.code() else {
            if error.is_closed() {
                return Error::Unavailable {
                    message,
                    request_id: None,
                };
            }
            // A row that does not convert to the column's Rust type: the tables were changed
            // behind the store's back.
            return if error.to_string().contains("error deserializing") {
                Error::Corrupt { message }
            } else {
                Error::Backend { message }
            };
        };
        let class = &code.code()[..2];
        if *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
            || *code == SqlState::LOCK_NOT_AVAILABLE
        {
            // Lost a race; `PgStore::write` runs the transaction again.
            Error::Busy { message }
        } else if *code == SqlState::DISK_FULL || *code == SqlState::INSUFFICIENT_RESOURCES {
            Error::StorageFull { message }
        } else if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED {
            Error::Corrupt { message }
        } else if class == "08" || class == "57" {
            // Connection exceptions, operator intervention (shutdown, cancel).
            Error::Unavailable {
                message,
                request_id: None,
            }
        } else if *code == SqlState::CHARACTER_NOT_IN_REPERTOIRE
            || *code == SqlState::UNTRANSLATABLE_CHARACTER
        {
            // PostgreSQL text cannot hold U+0000.
            Error::invalid("text", message)
        } else {
            Error::Backend { message }
        }
    }
}

/// Converts a caller's unsigned count or sequence to PostgreSQL's `bigint`.
fn to_i64(field: &str, value: u64) -> Result<i64> {
    crate::backend::checks::to_sql_int(field, value)
}

/// Converts a stored `bigint` that must not be negative.
fn to_u64(column: &str, value: i64) -> Result<u64> {
    crate::backend::checks::from_sql_int(column, value)
}
