//! Export and import of a whole store as one SQLite database file: a file an application can
//! keep, download or send, and load again into any store, native or in the browser.
//!
//! Export takes a consistent snapshot with SQLite's backup API (writers may go on meanwhile),
//! compacts it and hands it out in rollback-journal mode, so that the file opens in any SQLite
//! tool without `-wal` or `-shm` files next to it.
//!
//! Import checks the file before it touches the store (a SQLite database, SQLite's integrity
//! check passes, exactly the runstore schema of a version this code knows, migrated in memory
//! when older), then replaces the rows of every table in one `IMMEDIATE` transaction: all of
//! the file is in the store, or none of it and the store is as it was. Replacing rows rather
//! than pages keeps the store's own page size, journal mode and auto-vacuum, so a file of the
//! browser's 8 KiB pages loads into a native store of 4 KiB pages and back, on any VFS and with
//! the store open. (The sahpool VFS's transfer helpers copy whole pool files by name and refuse
//! to replace a file, which could not be atomic.)

use std::io::Read;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{ffi, Connection, Transaction, TransactionBehavior, MAIN_DB};
use sha2::{Digest, Sha256};

use super::import_rules::check_rules;
use super::migrations::{self, expected_schema, schema_of, SCHEMA_VERSION};
use super::steps::{forget_through, record, recorded, Newest};
use super::{change_feed, Key, SqliteStore};
use crate::backend::checks::check_id;
use crate::backend::hex;
use crate::backend::requests::{decide, Decision};
use crate::error::{clip, Error, Result};
use crate::model::steps::DEFAULT_REQUEST_SCOPE;
use crate::model::Millis;

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportOutcome {
    /// The schema version of the file; an older one was migrated to [`SCHEMA_VERSION`] on
    /// the way in.
    pub schema_version: u32,
    /// True when the request id had imported this file already: nothing was done again.
    pub replayed: bool,
}

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The length of a SQLite database file's header.
const HEADER_BYTES: usize = 100;

/// The name the file being imported is attached under, for the copy.
const IMPORT_SCHEMA: &str = "runstore_import";

/// The name an encrypted store's export is attached under while it is written.
const EXPORT_SCHEMA: &str = "runstore_export";

impl SqliteStore {
    /// The whole store as the bytes of one SQLite database file, for [`SqliteStore::import_bytes`]
    /// (here or in any other store, native or in the browser). A consistent snapshot: writes
    /// that commit meanwhile are in it entirely or not at all.
    ///
    /// Holds about twice the database's size in memory while it runs.
    ///
    /// # Errors
    /// [`Error::Busy`] when another connection's write kept the snapshot from completing;
    /// [`Error::Backend`] (or [`Error::StorageFull`] for memory) otherwise.
    ///
    /// An encrypted store's export is encrypted with the store's key: only a store opened
    /// with that key imports it. [`SqliteStore::export_plain_bytes`] gives a plain file.
    pub fn export_bytes(&self) -> Result<Vec<u8>> {
        match &self.key {
            Some(key) => self.export_through_cipher(Some(key)),
            None => self.export_copy(),
        }
    }

    /// As [`SqliteStore::export_bytes`], always as a plain SQLite file: an encrypted store's
    /// content decrypted, readable by anyone who holds the bytes.
    ///
    /// # Errors
    /// As [`SqliteStore::export_bytes`].
    pub fn export_plain_bytes(&self) -> Result<Vec<u8>> {
        match &self.key {
            Some(_) => self.export_through_cipher(None),
            None => self.export_copy(),
        }
    }

    /// A plain store's export: a snapshot by the backup API, compacted.
    fn export_copy(&self) -> Result<Vec<u8>> {
        let mut copy = Connection::open_in_memory()?;
        {
            let backup = Backup::new(&self.conn, &mut copy)?;
            if backup.step(-1)? != StepResult::Done {
                return Err(Error::Busy {
                    message: "another connection held the database during the export".into(),
                });
            }
        }
        // Leaves out the free pages the snapshot copied.
        copy.execute_batch("VACUUM")?;
        let mut bytes = copy.serialize(MAIN_DB)?.to_vec();
        set_rollback_mode(&mut bytes);
        Ok(bytes)
    }

    /// An encrypted store's export through `sqlcipher_export`, which copies between an
    /// encrypted and a plain database where the backup API refuses to: encrypted with `key`,
    /// or plain. The copy is made in a database of SQLite's in-memory VFS (`memdb`), whose
    /// bytes are the file as SQLCipher wrote it.
    fn export_through_cipher(&self, key: Option<&Key>) -> Result<Vec<u8>> {
        let key_text = key.map(Key::pragma_value).unwrap_or_default();
        self.conn.execute(
            &format!("ATTACH 'file:runstore-export?vfs=memdb' AS {EXPORT_SCHEMA} KEY ?1"),
            [&key_text],
        )?;
        let exported = self
            .export_into_attached()
            .and_then(|()| serialized(&self.conn, EXPORT_SCHEMA));
        let detached = self.conn.execute_batch(&format!("DETACH {EXPORT_SCHEMA}"));
        let mut bytes = exported?;
        detached?;
        if key.is_none() {
            set_rollback_mode(&mut bytes);
        }
        Ok(bytes)
    }

    /// Copies the store into the attached export database, in one read transaction (a
    /// snapshot, as the backup API's).
    fn export_into_attached(&self) -> Result<()> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)?;
        tx.query_row(
            &format!("SELECT sqlcipher_export('{EXPORT_SCHEMA}')"),
            [],
            |_| Ok(()),
        )?;
        // The copy has the schema and the rows, not the header's schema version.
        let version = migrations::user_version(&tx)?;
        tx.pragma_update(Some(EXPORT_SCHEMA), "user_version", version)?;
        tx.commit()?;
        Ok(())
    }

    /// Writes the whole store, compacted, to a new database file at `path` (`VACUUM INTO`),
    /// without holding it in memory. A consistent snapshot, as [`SqliteStore::export_bytes`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `path`) when `path` exists or is not UTF-8;
    /// [`Error::StorageFull`] or [`Error::Backend`] when the file cannot be written.
    #[cfg(not(target_family = "wasm"))]
    pub fn export_to(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let path = path.as_ref();
        let text = path
            .to_str()
            .ok_or_else(|| Error::invalid("path", "is not valid UTF-8"))?;
        if path.exists() {
            return Err(Error::invalid(
                "path",
                format!("{} exists already; an export writes a new file", clip(text)),
            ));
        }
        self.conn.execute("VACUUM INTO ?1", [text])?;
        Ok(())
    }

    /// Replaces everything in the store with the database in `bytes` (a file from
    /// [`SqliteStore::export_bytes`] or [`SqliteStore::export_to`]), after checking it: a
    /// SQLite database whose integrity check passes, with the runstore schema of a version this
    /// code knows (an older one is migrated). All of the file is imported or nothing is.
    ///
    /// Under a `request_id` the import is recorded in the store's request log in the same
    /// transaction: sent again, it imports nothing more and answers `replayed: true`.
    ///
    /// Holds about three times the file's size in memory while it runs.
    ///
    /// # Errors
    /// Nothing is changed on any error.
    /// - [`Error::InvalidInput`] (field `bytes`) for anything but a runstore database that
    ///   passes the checks; (field `requestId`) for a bad request id.
    /// - [`Error::SchemaTooNew`] for a file written by a newer version.
    /// - [`Error::Conflict`] when `request_id` was used for another request.
    /// - [`Error::Busy`], [`Error::StorageFull`], [`Error::Backend`] from the database.
    pub fn import_bytes(
        &mut self,
        bytes: &[u8],
        request_id: Option<&str>,
    ) -> Result<ImportOutcome> {
        self.import_as("bytes", bytes, request_id)
    }

    /// As [`SqliteStore::import_bytes`] for the database file at `path`, which is read and
    /// never changed.
    ///
    /// # Errors
    /// As [`SqliteStore::import_bytes`], with the field `path`; a file that cannot be read is
    /// [`Error::InvalidInput`].
    #[cfg(not(target_family = "wasm"))]
    pub fn import_from(
        &mut self,
        path: impl AsRef<std::path::Path>,
        request_id: Option<&str>,
    ) -> Result<ImportOutcome> {
        let bytes = std::fs::read(path.as_ref())
            .map_err(|error| Error::invalid("path", format!("cannot be read: {error}")))?;
        self.import_as("path", &bytes, request_id)
    }

    fn import_as(
        &mut self,
        field: &str,
        bytes: &[u8],
        request_id: Option<&str>,
    ) -> Result<ImportOutcome> {
        if let Some(id) = request_id {
            check_id("requestId", id)?;
        }
        let fingerprint = import_fingerprint(bytes);
        let decrypted;
        let bytes = match &self.key {
            Some(key) if !bytes.starts_with(SQLITE_MAGIC) => {
                decrypted = decrypt(field, bytes, key)?;
                &decrypted[..]
            }
            _ => bytes,
        };
        let schema_version = check_header(field, bytes)?;
        let done = ImportOutcome {
            schema_version,
            replayed: true,
        };
        // A retry is answered before the file is read again.
        if let Some(id) = request_id {
            if already_imported(self.conn(), &self.newest, id, &fingerprint)? {
                return Ok(done);
            }
        }
        let candidate = load_checked(field, bytes)?;
        let copied = self
            .attach_candidate(candidate)
            .and_then(|()| self.replace_with_attached(field, request_id, &fingerprint));
        // The log's rows were replaced, or rolled back: its newest requests are read anew.
        self.newest.forget();
        let detached = self.conn.execute_batch(&format!("DETACH {IMPORT_SCHEMA}"));
        let replayed = copied?;
        detached?;
        if !replayed {
            // The previous content's pages are free now: give them back.
            self.release_space();
        }
        Ok(ImportOutcome { replayed, ..done })
    }

    /// Attaches the checked file to the store's connection as [`IMPORT_SCHEMA`]. An encrypted
    /// store's attachment is plain (`KEY ''`) and filled by the backup API: deserializing into
    /// it would attach it again under the store's key.
    fn attach_candidate(&mut self, mut candidate: Connection) -> Result<()> {
        if self.key.is_none() {
            let image = candidate.serialize(MAIN_DB)?;
            self.conn
                .execute_batch(&format!("ATTACH ':memory:' AS {IMPORT_SCHEMA}"))?;
            return Ok(self.conn.deserialize_read_exact(
                IMPORT_SCHEMA,
                &image[..],
                image.len(),
                false,
            )?);
        }
        self.conn
            .execute_batch(&format!("ATTACH ':memory:' AS {IMPORT_SCHEMA} KEY ''"))?;
        let backup = Backup::new_with_names(&candidate, MAIN_DB, &mut self.conn, IMPORT_SCHEMA)?;
        backup.step(-1)?;
        Ok(())
    }

    /// Replaces the rows of every table with the attached file's, in one transaction.
    /// Returns true when the request id turned out to have imported this file already.
    fn replace_with_attached(
        &self,
        field: &str,
        request_id: Option<&str>,
        fingerprint: &str,
    ) -> Result<bool> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(id) = request_id {
            // Again under the write lock: another connection may have imported meanwhile.
            if already_imported(&tx, &self.newest, id, fingerprint)? {
                return Ok(true);
            }
        }
        if schema_of(&tx, "main")? != schema_of(&tx, IMPORT_SCHEMA)? {
            return Err(Error::invalid(
                field,
                "has another schema than this store after migration",
            ));
        }
        let replaced_logs = newest_requests(&tx)?;
        let last_claim_token = last_claim_token(&tx)?;
        let last_change = change_feed::newest(&tx)?;
        self.newest.forget();
        for table in tables(&tx)? {
            copy_table(&tx, &table)?;
        }
        // Fencing only moves forward: a claim after the import hands out a token that no
        // holder of a claim made before it (here, or in the file) was given.
        tx.execute(
            "UPDATE outbox_claim_counter SET last_token = max(last_token, ?1) WHERE id = 1",
            [last_claim_token],
        )?;
        // Change numbers only move forward too, and a reader of the feed from before the
        // import is told to read the store afresh.
        change_feed::mark_replaced(&tx, last_change)?;
        // Every request the store knew before is forgotten now: `request_outcome` must not
        // take one of them for a request that never committed.
        for (scope, newest) in replaced_logs {
            forget_through(&tx, &scope, newest)?;
        }
        if let Some(id) = request_id {
            // The file's own log may hold this id (from an import the exported store made
            // under it): `record` replaces its row, this import is what the id means here now.
            record(
                &tx,
                &self.newest,
                DEFAULT_REQUEST_SCOPE,
                id,
                fingerprint,
                &mut [],
            )?;
        }
        tx.commit()?;
        Ok(false)
    }
}

/// The bytes of the attached database `schema` (`sqlite3_serialize`, which rusqlite offers only
/// on a connection held mutably; the store's is shared by its methods). For a `memdb`
/// database they are its storage as written, encrypted pages and all.
fn serialized(conn: &Connection, schema: &str) -> Result<Vec<u8>> {
    let name = std::ffi::CString::new(schema).expect("a schema name of the store's own");
    let mut size: ffi::sqlite3_int64 = 0;
    // SAFETY: the handle is the open connection's; SQLite allocates the copy it returns, which
    // is read once and freed with sqlite3_free before anything else runs on the connection.
    unsafe {
        let data = ffi::sqlite3_serialize(conn.handle(), name.as_ptr(), &mut size, 0);
        if data.is_null() {
            return Err(Error::Backend {
                message: format!("the export of {schema} could not be read back"),
            });
        }
        let length = usize::try_from(size).unwrap_or(0);
        let bytes = std::slice::from_raw_parts(data, length).to_vec();
        ffi::sqlite3_free(data.cast());
        Ok(bytes)
    }
}

/// An encrypted export's bytes decrypted with the store's `key`, as a plain database file.
///
/// # Errors
/// [`Error::WrongKey`] when `key` does not open them (another store's export, or bytes that
/// are no database at all); [`Error::InvalidInput`] when they cannot be loaded.
fn decrypt(field: &str, bytes: &[u8], key: &Key) -> Result<Vec<u8>> {
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(MAIN_DB, bytes, bytes.len(), true)
        .map_err(|error| Error::invalid(field, format!("cannot be loaded: {error}")))?;
    super::cipher::unlock(&conn, Some(key))?;
    super::cipher::prove_key(&conn, true).map_err(|error| match error {
        Error::WrongKey { .. } => Error::WrongKey {
            message: format!(
                "{field} is not a plain SQLite database file, nor one encrypted with this \
                 store's key"
            ),
        },
        other => other,
    })?;
    conn.execute_batch("ATTACH ':memory:' AS plain KEY ''")?;
    conn.query_row("SELECT sqlcipher_export('plain')", [], |_| Ok(()))?;
    let version = migrations::user_version(&conn)?;
    conn.pragma_update(Some("plain"), "user_version", version)?;
    Ok(conn.serialize("plain")?.to_vec())
}

/// Checks what can be checked without reading the file as a database: the signature, and a
/// length of whole pages. Returns the schema version the header names (`user_version`).
fn check_header(field: &str, bytes: &[u8]) -> Result<u32> {
    if bytes.len() < HEADER_BYTES || !bytes.starts_with(SQLITE_MAGIC) {
        return Err(Error::invalid(
            field,
            "is not a SQLite database file (an encrypted export is imported by a store opened \
             with its key)",
        ));
    }
    let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        size => usize::from(size),
    };
    if !page_size.is_power_of_two() || page_size < 512 || !bytes.len().is_multiple_of(page_size) {
        return Err(Error::invalid(
            field,
            format!(
                "is not a whole SQLite database file: {} bytes in pages of {page_size}",
                bytes.len()
            ),
        ));
    }
    Ok(u32::from_be_bytes([
        bytes[60], bytes[61], bytes[62], bytes[63],
    ]))
}

/// Loads the file into a private in-memory database and checks it: SQLite's integrity check,
/// a known schema version, exactly that version's schema. Brings it to the current version.
fn load_checked(field: &str, bytes: &[u8]) -> Result<Connection> {
    let refuse = |reason: String| Error::invalid(field, reason);
    // In rollback mode: an in-memory database cannot open a file whose header says WAL.
    let mut header = bytes[..HEADER_BYTES].to_vec();
    set_rollback_mode(&mut header);
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(
        MAIN_DB,
        header.as_slice().chain(&bytes[HEADER_BYTES..]),
        bytes.len(),
        false,
    )
    .map_err(|error| refuse(format!("cannot be loaded as a SQLite database: {error}")))?;
    let problems = integrity_problems(&conn)
        .map_err(|error| refuse(format!("cannot be read as a SQLite database: {error}")))?;
    if let Some(first) = problems.first() {
        return Err(refuse(format!(
            "fails SQLite's integrity check: {}",
            clip(first)
        )));
    }
    let version = migrations::user_version(&conn)?;
    if version == 0 {
        return Err(refuse(
            "is not a runstore database (its schema version is 0)".into(),
        ));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if schema_of(&conn, "main")? != expected_schema(version)? {
        return Err(refuse(format!(
            "is not a runstore database: its schema is not that of version {version}"
        )));
    }
    migrations::migrate(&conn)?;
    check_rules(&conn)?;
    Ok(conn)
}

/// What SQLite's integrity check reports, at most ten problems; empty when it passes.
fn integrity_problems(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("PRAGMA integrity_check(10)")?;
    let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
    let mut problems = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    problems.retain(|line| line != "ok");
    Ok(problems)
}

/// Marks a database image as in rollback-journal mode (header bytes 18 and 19, the file format
/// write and read versions): SQLite then opens it without a WAL, and a store sets its own
/// journal mode when it opens it.
fn set_rollback_mode(image: &mut [u8]) {
    if let Some(versions) = image.get_mut(18..20) {
        versions.copy_from_slice(&[1, 1]);
    }
}

/// The request log's fingerprint of importing `bytes`.
fn import_fingerprint(bytes: &[u8]) -> String {
    format!("import:{}", hex(&Sha256::digest(bytes)))
}

/// Whether `request_id` imported this file already; [`Error::Conflict`] when it was used for
/// another request.
fn already_imported(
    conn: &Connection,
    newest: &Newest,
    request_id: &str,
    fingerprint: &str,
) -> Result<bool> {
    let recorded = recorded(conn, newest, DEFAULT_REQUEST_SCOPE, request_id)?;
    let decision = decide(request_id, fingerprint, recorded)?;
    Ok(matches!(decision, Decision::Replay(_)))
}

/// The last claim token the store handed out.
fn last_claim_token(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT last_token FROM main.outbox_claim_counter WHERE id = 1",
        [],
        |row| row.get(0),
    )?)
}

/// The commit time of each scope's newest request in the store's log.
fn newest_requests(conn: &Connection) -> Result<Vec<(String, Millis)>> {
    let mut stmt = conn.prepare(
        "SELECT s.scope, max(r.committed_at)
         FROM main.requests AS r JOIN main.request_scopes AS s USING (scope_number)
         GROUP BY s.scope",
    )?;
    let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The store's tables (not SQLite's own, whose names start with `sqlite_`: the `_` escaped,
/// since LIKE reads it as any character).
fn tables(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM pragma_table_list
         WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'
         ORDER BY name",
    )?;
    let names = stmt.query_map([], |row| row.get(0))?;
    Ok(names.collect::<rusqlite::Result<_>>()?)
}

/// Replaces the rows of `table` with those of the attached file's table of the same name.
fn copy_table(conn: &Connection, table: &str) -> Result<()> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid")?;
    let columns = stmt
        .query_map([table], |row| row.get::<_, String>(0))?
        .map(|name| name.map(|name| quote(&name)))
        .collect::<rusqlite::Result<Vec<_>>>()?
        .join(", ");
    let table = quote(table);
    conn.execute_batch(&format!(
        "DELETE FROM main.{table};
         INSERT INTO main.{table} ({columns}) SELECT {columns} FROM {IMPORT_SCHEMA}.{table};"
    ))?;
    Ok(())
}

/// `name` as a quoted SQL identifier.
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
