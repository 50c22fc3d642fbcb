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

/// A new store's schema at [`SCHEMA_VERSION`] in one script: every entry the migrations leave,
/// SQL text and all, and the rows they insert. A new store is made from it rather than by
/// replaying the migrations, whose `ALTER TABLE`s parse the whole schema again each: a
/// first visit's schema statements take a third of the time (BENCHMARKS.md, "Time to a
/// usable store: a new store's schema in one script"). A store made either way has exactly the
/// same schema; a test checks it, and writes the script again after a new migration (see
/// `tests` below).
const NEW_STORE: &str = include_str!("new_store.sql");

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
    if current == 0 {
        tx.execute_batch(NEW_STORE)?;
    } else {
        for sql in &MIGRATIONS[current as usize..] {
            tx.execute_batch(sql)?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the script is, for the test that writes it.
    const NEW_STORE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sqlite/new_store.sql");

    /// A database with every migration applied, one after another.
    fn migrated() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for sql in MIGRATIONS {
            conn.execute_batch(sql).unwrap();
        }
        conn
    }

    /// The script [`NEW_STORE`] should be: the migrated schema's entries in the order SQLite
    /// keeps them (each after what it refers to), then the rows of every table as `INSERT`s.
    fn script_of(conn: &Connection) -> String {
        let mut script = String::from(
            "-- A new store's schema at the current version, in one transaction (migrations.rs).\n\
             -- Written from the migrations by `RUNSTORE_WRITE_SCHEMA=1 cargo test --lib\n\
             -- new_store`; do not edit: change the schema by a new migration.\n",
        );
        let entries: Vec<(String, String)> = conn
            .prepare(
                "SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL
                 AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid",
            )
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for (_, sql) in &entries {
            script.push('\n');
            script.push_str(sql);
            script.push_str(";\n");
        }
        for (table, _) in &entries {
            for row in rows_of(conn, table) {
                script.push_str(&format!("\nINSERT INTO {table} VALUES ({row});"));
            }
        }
        script.push('\n');
        script
    }

    /// Each row of `table` as SQL literals (`quote()`), separated by commas; none for an index.
    fn rows_of(conn: &Connection, table: &str) -> Vec<String> {
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .unwrap()
            .query_map([table], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        if columns.is_empty() {
            return Vec::new();
        }
        let literals: Vec<String> = columns.iter().map(|c| format!("quote({c})")).collect();
        let sql = format!(
            "SELECT {} FROM {table} ORDER BY 1",
            literals.join(" || ', ' || ")
        );
        conn.prepare(&sql)
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn new_store_script_is_what_the_migrations_leave() {
        let expected = script_of(&migrated());
        if std::env::var_os("RUNSTORE_WRITE_SCHEMA").is_some() {
            std::fs::write(NEW_STORE_PATH, &expected).unwrap();
            return;
        }
        assert!(
            NEW_STORE == expected,
            "src/sqlite/new_store.sql is not what the migrations leave: write it again \
             with `RUNSTORE_WRITE_SCHEMA=1 cargo test --lib new_store`"
        );
    }

    #[test]
    fn a_new_store_has_the_migrated_schema_and_rows() {
        let made = Connection::open_in_memory().unwrap();
        migrate(&made).unwrap();
        let migrated = migrated();
        assert_eq!(
            schema_of(&made, "main").unwrap(),
            expected_schema(SCHEMA_VERSION).unwrap()
        );
        assert_eq!(user_version(&made).unwrap(), SCHEMA_VERSION);
        let tables: Vec<String> = schema_of(&migrated, "main")
            .unwrap()
            .into_iter()
            .filter(|(kind, ..)| kind == "table")
            .map(|(_, name, ..)| name)
            .collect();
        assert!(tables.len() > 20, "the schema has its tables: {tables:?}");
        for table in &tables {
            assert_eq!(
                rows_of(&made, table),
                rows_of(&migrated, table),
                "rows of {table}"
            );
        }
        // The rows the migrations seed are there (a store without them refuses claims).
        assert_eq!(rows_of(&made, "outbox_claim_counter"), ["1, 0"]);
    }

    #[test]
    fn an_older_store_still_takes_the_migrations() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        migrate(&conn).unwrap();
        assert_eq!(
            schema_of(&conn, "main").unwrap(),
            expected_schema(SCHEMA_VERSION).unwrap()
        );
        assert_eq!(
            rows_of(&conn, "request_scopes"),
            rows_of(&migrated(), "request_scopes")
        );
    }
}
