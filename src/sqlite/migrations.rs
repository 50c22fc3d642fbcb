//! Forward-only schema migrations gated on `PRAGMA user_version`.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::{Error, Result};

/// Migration `i` brings a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("schema.sql"),
    include_str!("schema_2.sql"),
    include_str!("schema_3.sql"),
    include_str!("schema_4.sql"),
    include_str!("schema_5.sql"),
    include_str!("schema_6.sql"),
    include_str!("schema_7.sql"),
    include_str!("schema_8.sql"),
];

/// The schema version this code writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn user_version(conn: &Connection) -> Result<u32> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    u32::try_from(version).map_err(|_| Error::Corrupt {
        message: format!("user_version {version} is out of range"),
    })
}

/// Applies every missing migration in one `IMMEDIATE` transaction.
///
/// # Errors
/// [`Error::SchemaTooNew`] when the database is newer than this code; it is left untouched.
pub(crate) fn migrate(conn: &Connection) -> Result<()> {
    let found = user_version(conn)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if found == 0 {
        set_incremental_vacuum(conn)?;
    }
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    // Another connection may have migrated between the read above and the lock.
    let current = user_version(&tx)?;
    check(current)?;
    for sql in &MIGRATIONS[current as usize..] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// Gives a new database incremental auto-vacuum, so that the pages a delete frees go back to
/// the file system (see `release_space`). The mode is part of the file's layout: it must be
/// set before the first table. A database this code makes has it already, set before its
/// first page was written (`set_new_layout`); this is for an empty database begun without it
/// (by older code or another SQLite client), whose header the WAL has written, where only a
/// VACUUM applies it (at no cost on an empty database).
///
/// A database created at version 1 keeps `NONE` (its freed pages are reused by later writes)
/// until `RetentionStore::vacuum` rewrites it: an upgrade must not demand room for a second
/// copy of the file from a disk that may be nearly full.
fn set_incremental_vacuum(conn: &Connection) -> Result<()> {
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
    // A database made by this code has the mode already, set before its first page was
    // written (`set_new_layout`).
    if tables == 0 && !super::retention::incremental(conn) {
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")?;
    }
    Ok(())
}

/// Refuses a database written by a newer version, reading only.
///
/// # Errors
/// [`Error::SchemaTooNew`].
pub(crate) fn refuse_newer(conn: &Connection) -> Result<()> {
    check(user_version(conn)?)
}

fn check(found: u32) -> Result<()> {
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// One entry of a database's schema: its type (`table`, `index`), name, table and SQL text.
pub(crate) type SchemaEntry = (String, String, String, Option<String>);

/// The schema of the database `schema` (`main`, or an attached name) as SQLite keeps it,
/// without SQLite's own objects (named `sqlite_...`; the `_` escaped, since LIKE reads it as
/// any character), in a fixed order.
pub(crate) fn schema_of(conn: &Connection, schema: &str) -> Result<Vec<SchemaEntry>> {
    let sql = format!(
        "SELECT type, name, tbl_name, sql FROM \"{}\".sqlite_schema
         WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY type, name",
        schema.replace('"', "\"\"")
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The schema a database of `version` has: the migrations up to it, applied to an empty
/// database. There is one path to each version, so every store of that version has exactly
/// this schema, SQL text included.
pub(crate) fn expected_schema(version: u32) -> Result<Vec<SchemaEntry>> {
    let conn = Connection::open_in_memory()?;
    for sql in &MIGRATIONS[..version as usize] {
        conn.execute_batch(sql)?;
    }
    schema_of(&conn, "main")
}
