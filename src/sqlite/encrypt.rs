//! Encrypting a plain store in place. SQLCipher cannot give a plain database a key (its
//! `rekey` changes the key of an encrypted one), so the store is copied, table by table and
//! with progress, into an encrypted database beside it (its file's name with
//! [`STAGING_SUFFIX`]), the plain file is deleted, and the encrypted copy is copied back under
//! the store's own name. Every open of the store finishes what a crash interrupted:
//!
//! | the store's file | the copy beside it | what the open does |
//! |---|---|---|
//! | plain, with a schema | there | the copy is unfinished or stale: deleted, the plain store opens |
//! | without a schema (no schema version) | there, encrypted | the copy is whole: with the key it is copied back; without one, `WRONG_KEY` |
//! | encrypted, with a schema | there | the copy back committed: the copy is deleted |
//!
//! Each copy is one transaction, so a crash leaves it whole or empty; the plain file is
//! deleted only after the first copy committed.

use std::ffi::{c_int, CString};

use rusqlite::{ffi, Connection, OpenFlags, Transaction, TransactionBehavior};

use super::transfer::quote;
use super::{Key, SqliteStore};
use crate::error::{Error, Result};

/// The encrypted copy's file: the store's file's name with this after it.
const STAGING_SUFFIX: &str = "-encrypting";

/// The name the other database is attached under while a copy runs.
const OTHER_SCHEMA: &str = "runstore_encrypting";

/// The files SQLite may keep beside a database.
const SIDECARS: [&str; 3] = ["-wal", "-journal", "-shm"];

/// Rows copied per statement: the progress reported between them.
const CHUNK_ROWS: i64 = 2048;

/// How far an encryption has come, in rows: both copies count, so `done` reaches `total`
/// when the store is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptProgress {
    /// Rows copied so far.
    pub done: u64,
    /// Rows to copy in all (twice the store's rows).
    pub total: u64,
}

impl SqliteStore {
    /// Encrypts this plain store under `key`, in place: afterwards it opens with `key` only.
    /// `progress` is called after each chunk of rows copied. Natively no other connection may
    /// have the file open (in the browser and in Node a store has one connection).
    ///
    /// A crash or a failure midway loses nothing: the next open of the store (with `key`
    /// once the plain file was deleted, with either before) finishes or undoes it. After a
    /// failure once the plain file was closed ([`SqliteStore::lost_its_file`]) this store
    /// must be dropped and opened again.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for a store that is encrypted already (see
    /// [`SqliteStore::rekey`]) or kept in memory; [`Error::Busy`] while another connection has
    /// the native file open (nothing is changed); the errors of a write.
    pub fn encrypt(&mut self, key: &Key, progress: &mut dyn FnMut(EncryptProgress)) -> Result<()> {
        super::cipher::require()?;
        if self.key.is_some() {
            return Err(Error::invalid(
                "key",
                "the store is encrypted already: rekey changes its key",
            ));
        }
        let Some(main) = file_of(&self.conn) else {
            return Err(Error::invalid(
                "key",
                "a memory store is never stored and cannot be encrypted",
            ));
        };
        if self.medium == super::Medium::NativeFile {
            hold_alone(&self.conn)?;
        }
        let vfs = Vfs::of(&self.conn)?;
        let staging = format!("{main}{STAGING_SUFFIX}");
        vfs.delete_with_sidecars(&staging)?;
        let rows = count_rows(&self.conn, "main")?;
        let mut counter = Counter::new(progress, rows * 2);
        let copied = attach(&self.conn, &staging, key).and_then(|()| {
            let copied = copy_database(&self.conn, "main", OTHER_SCHEMA, &mut counter);
            detach(&self.conn, copied)
        });
        if let Err(error) = copied {
            // The store stays plain and open: as it was before (natively, in WAL again).
            if self.medium == super::Medium::NativeFile {
                let _ = self.conn.pragma_update(None, "locking_mode", "NORMAL");
                let _ = self.conn.pragma_update(None, "journal_mode", "WAL");
            }
            return Err(error);
        }
        // From here the store's own file is replaced: its connection closes first.
        let plain = std::mem::replace(&mut self.conn, Connection::open_in_memory()?);
        plain.close().map_err(|(_, error)| error)?;
        let reopened = vfs
            .delete_with_sidecars(&main)
            .and_then(|()| self.reopen(&vfs, &main, key, &mut counter));
        // On an error the store answers no more calls (its connection is an empty one in
        // memory); the next open with the key finishes the encryption.
        reopened
    }

    /// Whether an encryption failed after the store's plain file was closed: the store then
    /// holds an empty database in memory and must not be used; opening it again with the key
    /// finishes the encryption.
    pub fn lost_its_file(&self) -> bool {
        self.medium != super::Medium::Memory && file_of(&self.conn).is_none()
    }

    /// Opens the store's file again, with `key`: its open copies the encrypted copy back.
    fn reopen(&mut self, vfs: &Vfs, main: &str, key: &Key, counter: &mut Counter) -> Result<()> {
        let conn = Connection::open_with_flags_and_vfs(main, OpenFlags::default(), vfs.name()?)?;
        *self = Self::open_connection(conn, self.medium, self.durability, Some(key), counter)?;
        Ok(())
    }
}

/// Makes sure no other connection has the native file open, and keeps others out until this
/// one closes: the file is about to be deleted, and another connection would go on writing
/// to the deleted file. Leaving WAL needs every other connection gone; the exclusive locking
/// mode then keeps the lock the copy's read takes.
///
/// # Errors
/// [`Error::Busy`] while another connection has the file open.
fn hold_alone(conn: &Connection) -> Result<()> {
    let busy = || Error::Busy {
        message: "another connection has the store's file open: close it before encrypting".into(),
    };
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "DELETE", |row| row.get(0))
        .map_err(|error| match Error::from(error) {
            Error::Busy { .. } => busy(),
            other => other,
        })?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(busy());
    }
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    Ok(())
}

/// Finishes or undoes an encryption a crash interrupted (see the module's table), on a
/// connection whose key (or its absence) was proved. Does nothing when there is none.
///
/// # Errors
/// [`Error::WrongKey`] when the store's data is in the encrypted copy and no key was given;
/// the errors of a write.
pub(super) fn finish(conn: &Connection, key: Option<&Key>, counter: &mut Counter) -> Result<()> {
    let Some(main) = file_of(conn) else {
        return Ok(());
    };
    let vfs = Vfs::of(conn)?;
    let staging = format!("{main}{STAGING_SUFFIX}");
    if !vfs.exists(&staging)? {
        return Ok(());
    }
    // A store's every commit leaves its schema version set, the copy back's included; an
    // interrupted copy back leaves none (its file may have a header, but no schema).
    let empty = conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))? == 0;
    match (key, empty) {
        (None, true) => Err(Error::WrongKey {
            message: "the store is being encrypted: open it with its key to finish".into(),
        }),
        (Some(key), true) => {
            attach(conn, &staging, key)
                .and_then(|()| {
                    let copied = count_rows(conn, OTHER_SCHEMA).and_then(|rows| {
                        counter.total = counter.total.max(counter.done + rows);
                        copy_database(conn, OTHER_SCHEMA, "main", counter)
                    });
                    detach(conn, copied)
                })
                .map_err(wrong_key_for_copy)?;
            vfs.delete_with_sidecars(&staging)
        }
        // A plain store whose encryption stopped before its file was deleted, or an
        // encrypted one whose copy back committed: the copy beside it is not needed.
        (_, false) => vfs.delete_with_sidecars(&staging),
    }
}

/// The copy beside an empty store holds its data; with another key its first read fails as
/// no database (which would be CORRUPT): the key is wrong, the data is whole.
fn wrong_key_for_copy(error: Error) -> Error {
    match error {
        Error::Corrupt { .. } => Error::WrongKey {
            message: "the key does not open this store (being encrypted: its data is in the \
                      encrypted copy beside its file)"
                .into(),
        },
        other => other,
    }
}

/// Counts the rows copied and reports them.
pub(super) struct Counter<'a> {
    report: &'a mut dyn FnMut(EncryptProgress),
    done: u64,
    total: u64,
}

impl<'a> Counter<'a> {
    pub(super) fn new(report: &'a mut dyn FnMut(EncryptProgress), total: u64) -> Self {
        Counter {
            report,
            done: 0,
            total,
        }
    }

    fn add(&mut self, rows: u64) {
        if rows == 0 {
            return;
        }
        self.done += rows;
        (self.report)(EncryptProgress {
            done: self.done,
            total: self.total.max(self.done),
        });
    }
}

/// The file of the connection's main database, or `None` for one in memory.
fn file_of(conn: &Connection) -> Option<String> {
    conn.path()
        .filter(|path| !path.is_empty())
        .map(str::to_owned)
}

fn attach(conn: &Connection, file: &str, key: &Key) -> Result<()> {
    conn.execute(
        &format!("ATTACH ?1 AS {OTHER_SCHEMA} KEY ?2"),
        [file, &key.pragma_value()],
    )?;
    Ok(())
}

/// Detaches the other database, and reports the copy's error first.
fn detach(conn: &Connection, copied: Result<()>) -> Result<()> {
    let detached = conn.execute_batch(&format!("DETACH {OTHER_SCHEMA}"));
    copied?;
    Ok(detached?)
}

/// Copies every table, its rows and its indexes from the database `from` into the empty
/// database `to`, and the schema version, in one transaction.
fn copy_database(conn: &Connection, from: &str, to: &str, counter: &mut Counter) -> Result<()> {
    // Part of the file's layout: set before the transaction writes the empty file's header,
    // or SQLite ignores it.
    conn.pragma_update(Some(to), "auto_vacuum", "INCREMENTAL")?;
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    // Every table exists before rows arrive, and references are checked at the commit.
    tx.pragma_update(None, "defer_foreign_keys", true)?;
    let objects = schema_objects(&tx, from)?;
    let tables = || objects.iter().filter(|(kind, ..)| kind == "table");
    for (kind, name, sql) in tables() {
        tx.execute_batch(&retarget(kind, name, sql, to)?)?;
    }
    for (_, name, _) in tables() {
        copy_rows(&tx, from, to, name, counter)?;
    }
    for (kind, name, sql) in objects.iter().filter(|(kind, ..)| kind != "table") {
        tx.execute_batch(&retarget(kind, name, sql, to)?)?;
    }
    let version: i64 = tx.pragma_query_value(Some(from), "user_version", |row| row.get(0))?;
    tx.pragma_update(Some(to), "user_version", version)?;
    tx.commit()?;
    Ok(())
}

/// The tables and indexes of `schema` that have SQL (not SQLite's own), as (type, name, sql).
fn schema_objects(conn: &Connection, schema: &str) -> Result<Vec<(String, String, String)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT type, name, sql FROM {schema}.sqlite_schema
         WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name"
    ))?;
    let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A table's or index's `CREATE` statement made to create it in the database `to`. SQLite
/// keeps each statement with its leading keywords written as here.
fn retarget(kind: &str, name: &str, sql: &str, to: &str) -> Result<String> {
    for prefix in ["CREATE TABLE ", "CREATE INDEX ", "CREATE UNIQUE INDEX "] {
        if let Some(rest) = sql.strip_prefix(prefix) {
            return Ok(format!("{prefix}{to}.{rest}"));
        }
    }
    Err(Error::Backend {
        message: format!("the store's {kind} {name} cannot be copied: it is not a table or index"),
    })
}

/// Copies the rows of `table`, in chunks of [`CHUNK_ROWS`] by rowid (a `WITHOUT ROWID` table
/// at once), reporting each.
fn copy_rows(
    conn: &Connection,
    from: &str,
    to: &str,
    table: &str,
    counter: &mut Counter,
) -> Result<()> {
    let rowid = has_rowid(conn, from, table)?;
    let table = quote(table);
    if !rowid {
        let copied = conn.execute(
            &format!("INSERT INTO {to}.{table} SELECT * FROM {from}.{table}"),
            [],
        )?;
        counter.add(copied as u64);
        return Ok(());
    }
    // `?1 IS NULL` at the start: the smallest rowid is i64::MIN.
    let mut next_end = conn.prepare(&format!(
        "SELECT rowid FROM {from}.{table} WHERE ?1 IS NULL OR rowid > ?1 ORDER BY rowid
         LIMIT 1 OFFSET {}",
        CHUNK_ROWS - 1
    ))?;
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {to}.{table} SELECT * FROM {from}.{table}
         WHERE (?1 IS NULL OR rowid > ?1) AND rowid <= ?2"
    ))?;
    let mut after: Option<i64> = None;
    loop {
        let end: Option<i64> = next_end
            .query_row([after], |row| row.get(0))
            .map(Some)
            .or_else(|error| match error {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                other => Err(other),
            })?;
        let copied = insert.execute(rusqlite::params![after, end.unwrap_or(i64::MAX)])?;
        counter.add(copied as u64);
        match end {
            Some(end) => after = Some(end),
            None => return Ok(()),
        }
    }
}

fn has_rowid(conn: &Connection, schema: &str, table: &str) -> Result<bool> {
    let without: bool = conn.query_row(
        "SELECT wr FROM pragma_table_list WHERE schema = ?1 AND name = ?2",
        [schema, table],
        |row| row.get(0),
    )?;
    Ok(!without)
}

/// The rows of the store's tables in the database `schema` (`main`, or the attached copy).
fn count_rows(conn: &Connection, schema: &str) -> Result<u64> {
    let mut rows = 0;
    for (kind, name, _) in schema_objects(conn, schema)? {
        if kind == "table" {
            let count: i64 = conn.query_row(
                &format!("SELECT count(*) FROM {schema}.{}", quote(&name)),
                [],
                |row| row.get(0),
            )?;
            rows += count as u64;
        }
    }
    Ok(rows)
}

/// The VFS a connection's files live on, for what SQL cannot do: ask whether a file exists
/// and delete one.
struct Vfs(*mut ffi::sqlite3_vfs);

impl Vfs {
    fn of(conn: &Connection) -> Result<Vfs> {
        let mut vfs: *mut ffi::sqlite3_vfs = std::ptr::null_mut();
        // SAFETY: the handle is the open connection's; SQLite writes the VFS pointer of its
        // main database, which lives as long as the VFS stays registered (the store's pool
        // outlives the store).
        let rc = unsafe {
            ffi::sqlite3_file_control(
                conn.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_VFS_POINTER,
                (&raw mut vfs).cast(),
            )
        };
        if rc != ffi::SQLITE_OK || vfs.is_null() {
            return Err(Error::Backend {
                message: "the store's file system could not be found".into(),
            });
        }
        Ok(Vfs(vfs))
    }

    fn name(&self) -> Result<&str> {
        // SAFETY: a registered VFS has a NUL-terminated name for as long as it is registered.
        let name = unsafe { std::ffi::CStr::from_ptr((*self.0).zName) };
        name.to_str().map_err(|_| Error::Backend {
            message: "the store's file system has a name that is not UTF-8".into(),
        })
    }

    fn exists(&self, file: &str) -> Result<bool> {
        let path = c_path(file)?;
        let mut out: c_int = 0;
        // SAFETY: the VFS is registered; SQLite's contract for xAccess: a path and an out int.
        let rc = unsafe {
            match (*self.0).xAccess {
                Some(access) => access(self.0, path.as_ptr(), ffi::SQLITE_ACCESS_EXISTS, &mut out),
                None => ffi::SQLITE_MISUSE,
            }
        };
        vfs_result(rc, "ask for", file)?;
        Ok(out != 0)
    }

    /// Deletes `file` and the files SQLite keeps beside it, those that exist. Each is deleted
    /// without asking first: SQLite's own VFS says an empty file does not exist.
    fn delete_with_sidecars(&self, file: &str) -> Result<()> {
        for name in std::iter::once(file.to_owned()).chain(SIDECARS.map(|s| format!("{file}{s}"))) {
            let path = c_path(&name)?;
            // SAFETY: the VFS is registered and no connection has the file open.
            let rc = unsafe {
                match (*self.0).xDelete {
                    Some(delete) => delete(self.0, path.as_ptr(), 1),
                    None => ffi::SQLITE_MISUSE,
                }
            };
            // A VFS that fails to delete a file that is not there has nothing left to do.
            if rc != ffi::SQLITE_IOERR_DELETE_NOENT && self.exists(&name)? {
                vfs_result(rc, "delete", &name)?;
            }
        }
        Ok(())
    }
}

fn c_path(file: &str) -> Result<CString> {
    CString::new(file).map_err(|_| Error::invalid("path", "holds a NUL character"))
}

fn vfs_result(rc: c_int, what: &str, file: &str) -> Result<()> {
    match rc {
        ffi::SQLITE_OK => Ok(()),
        ffi::SQLITE_FULL => Err(Error::StorageFull {
            message: format!("could not {what} {file}: the storage is full"),
        }),
        rc => Err(Error::Backend {
            message: format!("could not {what} {file} (SQLite result {rc})"),
        }),
    }
}
