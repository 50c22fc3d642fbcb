//! Forward-only schema migrations, versioned in the table `runstore_schema` (PostgreSQL has no
//! `PRAGMA user_version`). Every migration runs in the caller's transaction: DDL is
//! transactional in PostgreSQL, so a migration applies whole or not at all.

use super::session::Tx;

use crate::error::{Error, Result};

/// Migration `i` brings a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("schema.sql"),
    include_str!("schema_2.sql"),
    include_str!("schema_3.sql"),
];

/// The PostgreSQL schema version this code writes and reads.
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Creates the schema (when named) and the version table if needed, then applies every
/// missing migration. The version row is locked first, so of two stores connecting at once
/// one migrates and the other finds it done.
///
/// # Errors
/// [`Error::SchemaTooNew`] when the database is newer than this code; nothing is changed.
pub(super) fn migrate(tx: &mut Tx<'_>, schema: Option<&str>) -> Result<()> {
    if let Some(schema) = schema {
        // Checked by `check_schema_name`: a plain lowercase identifier, safe as SQL text.
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))?;
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS runstore_schema (
           id      INTEGER PRIMARY KEY CHECK (id = 1),
           version BIGINT NOT NULL CHECK (version >= 0));
         INSERT INTO runstore_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    )?;
    let found: i64 = tx
        .query_one(
            "SELECT version FROM runstore_schema WHERE id = 1 FOR UPDATE",
            &[],
        )?
        .get(0);
    let found = u32::try_from(found).map_err(|_| Error::Corrupt {
        message: format!("schema version {found} is out of range"),
    })?;
    if found > PG_SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found,
            supported: PG_SCHEMA_VERSION,
        });
    }
    for sql in &MIGRATIONS[found as usize..] {
        tx.batch_execute(sql)?;
    }
    if found < PG_SCHEMA_VERSION {
        tx.execute(
            "UPDATE runstore_schema SET version = $1 WHERE id = 1",
            &[&i64::from(PG_SCHEMA_VERSION)],
        )?;
    }
    Ok(())
}
