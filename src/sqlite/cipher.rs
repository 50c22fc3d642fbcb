//! Encryption at rest with SQLCipher: every page of the database, its WAL and its journal is
//! encrypted (AES-256 in CBC mode, each page authenticated with HMAC-SHA512), in the same
//! file format natively (OpenSSL's crypto) and in the browser (libtomcrypt). A store opened
//! with a [`Key`] gives it to SQLCipher before anything is read, and is then read once to
//! prove the key: a wrong one is [`Error::WrongKey`] before any setting touches the file.

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode};

use crate::error::{Error, Result};

/// The key of an encrypted store.
#[derive(Clone, PartialEq, Eq)]
pub enum Key {
    /// 32 random bytes, used as the encryption key as they are: opening costs nothing more.
    Bytes([u8; 32]),
    /// A passphrase, stretched into a key with PBKDF2-HMAC-SHA512 (256,000 rounds, with the
    /// salt kept in the file's first 16 bytes): every open pays for the rounds.
    Passphrase(String),
}

impl std::fmt::Debug for Key {
    /// Never the key itself: errors and logs may reach places the key must not.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Key::Bytes(_) => "Key::Bytes(..)",
            Key::Passphrase(_) => "Key::Passphrase(..)",
        })
    }
}

impl Key {
    /// A key from bytes: exactly 32 of them.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for another length.
    pub fn from_bytes(bytes: &[u8]) -> Result<Key> {
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| {
            Error::invalid(
                "key",
                format!("a key of bytes has 32 of them, not {}", bytes.len()),
            )
        })?;
        Ok(Key::Bytes(bytes))
    }

    /// A passphrase: not empty (SQLCipher would take an empty one for no key at all), without
    /// NUL (which would end it early).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `key`) for an empty passphrase, one with a NUL, or one in
    /// SQLCipher's form of raw key bytes (`x'…'`).
    pub fn passphrase(text: impl Into<String>) -> Result<Key> {
        let text = text.into();
        if text.is_empty() {
            return Err(Error::invalid("key", "a passphrase cannot be empty"));
        }
        // SQLCipher reads `x'<64 hex digits>'` as raw key bytes, not as a passphrase.
        if text.starts_with("x'") || text.starts_with("X'") {
            return Err(Error::invalid(
                "key",
                "a passphrase cannot start with x' (SQLCipher's form of raw key bytes): give the bytes as bytes",
            ));
        }
        if text.contains('\0') {
            return Err(Error::invalid(
                "key",
                "a passphrase cannot hold a NUL character",
            ));
        }
        Ok(Key::Passphrase(text))
    }

    /// The key as SQLCipher's `PRAGMA key` and `ATTACH ... KEY` take it: raw bytes as
    /// `x'<64 hex digits>'`.
    pub(super) fn pragma_value(&self) -> String {
        match self {
            Key::Bytes(bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("x'{hex}'")
            }
            Key::Passphrase(text) => text.clone(),
        }
    }
}

/// Gives the connection its key, before its first read. Without one, nothing is done: the
/// store is a plain SQLite file as before.
///
/// # Errors
/// [`Error::InvalidInput`] (field `key`) when this build has no SQLCipher; [`Error::Backend`]
/// when SQLCipher refuses the key.
pub(super) fn unlock(conn: &Connection, key: Option<&Key>) -> Result<()> {
    let Some(key) = key else { return Ok(()) };
    require()?;
    #[cfg(all(feature = "cipher", not(target_family = "wasm")))]
    await_sqlcipher_setup()?;
    // SQLCipher logs a failed page check (every wrong key) to stderr by default: the
    // store's error says what happened, and a library does not write to its host's stderr.
    conn.pragma_update_and_check(None, "cipher_log_level", "NONE", |_| Ok(()))?;
    conn.pragma_update(None, "key", key.pragma_value())
        .map_err(|error| key_refused("key", error))
}

/// Waits for SQLCipher's process-wide set-up, or runs it. SQLite runs that set-up
/// (`SQLITE_EXTRA_INIT`) only after it has marked itself initialized and left its mutexes,
/// so a store opened on another thread in that moment found SQLCipher not ready and its key
/// was refused (a rare failure of the first keyed opens of a process, on a busy 2-core
/// machine). The set-up is idempotent and runs under SQLite's main mutex: calling it here
/// returns at once once it is done, and otherwise waits for it or does it.
///
/// # Errors
/// [`Error::Backend`] when SQLCipher cannot start (its crypto provider or memory).
#[cfg(all(feature = "cipher", not(target_family = "wasm")))]
fn await_sqlcipher_setup() -> Result<()> {
    unsafe extern "C" {
        fn sqlcipher_extra_init(arg: *const std::ffi::c_char) -> std::ffi::c_int;
    }
    // SAFETY: the function takes no argument it reads and guards itself with SQLite's main
    // mutex. SQLite is initialized here (the caller holds an open connection), so the
    // allocations it makes do not re-enter SQLite's initialization.
    let rc = unsafe { sqlcipher_extra_init(std::ptr::null()) };
    if rc == rusqlite::ffi::SQLITE_OK {
        return Ok(());
    }
    Err(Error::Backend {
        message: format!("SQLCipher could not start (SQLite code {rc})"),
    })
}

/// Refuses a key where this build has no SQLCipher.
///
/// # Errors
/// [`Error::InvalidInput`] (field `key`) without the `cipher` feature.
pub(super) fn require() -> Result<()> {
    if cfg!(feature = "cipher") {
        return Ok(());
    }
    Err(Error::invalid(
        "key",
        "this build of runstore has no encryption (the `cipher` feature)",
    ))
}

/// A failure of `PRAGMA key` or `rekey` with its code, told without SQLite's message: that
/// could quote the statement, key and all.
fn key_refused(pragma: &str, error: rusqlite::Error) -> Error {
    let message = match error.sqlite_error() {
        Some(code) => format!(
            "PRAGMA {pragma} failed (SQLite code {})",
            code.extended_code
        ),
        None => format!("PRAGMA {pragma} failed"),
    };
    match Error::from(error) {
        Error::StorageFull { .. } => Error::StorageFull { message },
        Error::Busy { .. } => Error::Busy { message },
        _ => Error::Backend { message },
    }
}

/// Reads the database's schema once, which decrypts its first page: a store that cannot be
/// read with the key it was given (or without one) is [`Error::WrongKey`]. The refused
/// connection then closes without the checkpoint that closing the last connection runs: a
/// WAL left by a crash stays as it is, for the right key to recover.
///
/// # Errors
/// [`Error::WrongKey`] as above; the errors of a first read otherwise.
pub(super) fn prove_key(conn: &Connection, keyed: bool) -> Result<()> {
    let read = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()));
    match read {
        Err(error) if error.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
            Err(Error::WrongKey {
                message: if keyed {
                    "the key does not open this store (a wrong key, or a store that is not \
                     encrypted)"
                        .into()
                } else {
                    "the store is not a plain SQLite database: it is encrypted (open it with \
                     its key) or damaged"
                        .into()
                },
            })
        }
        other => Ok(other?),
    }
}

/// Encrypts the open, encrypted store's every page again under `key`, in place (SQLCipher
/// cannot encrypt a plain database so: see `encrypt.rs`).
///
/// # Errors
/// The errors of a write.
pub(super) fn rekey(conn: &Connection, key: &Key) -> Result<()> {
    conn.pragma_update(None, "rekey", key.pragma_value())
        .map_err(|error| key_refused("rekey", error))
}
