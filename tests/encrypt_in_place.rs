//! A plain store encrypted in place (`SqliteStore::encrypt`, and `rekey` on a plain store):
//! every row comes through, progress reaches its total, no byte of the files holds the text
//! afterwards, and an open finishes or undoes an encryption that stopped midway, in each of
//! the states a crash can leave.
#![cfg(all(not(target_family = "wasm"), feature = "cipher"))]

use std::path::{Path, PathBuf};

use runstore::{Durability, EncryptProgress, Event, EventJournal, Key, SqliteStore};
use serde_json::json;

const SECRET: &str = "ledger-entry-4b1d-account";

/// Workflows written to the plain store, with two events each.
const WORKFLOWS: usize = 1500;

fn event(n: usize) -> Event {
    serde_json::from_value(json!({
        "type": "custom", "name": "noted", "recordedAt": 1_700_000_000_000_i64,
        "data": { "note": format!("{SECRET}-{n}") }
    }))
    .expect("the event reads")
}

const PASSPHRASE: &str = "the store's passphrase";

fn key() -> Key {
    Key::passphrase(PASSPHRASE).unwrap()
}

/// A plain store at `path` holding [`WORKFLOWS`] workflows.
fn plain_store(path: &Path) -> SqliteStore {
    let store = SqliteStore::open(path).unwrap();
    for n in 0..WORKFLOWS {
        store
            .append(&format!("wf-{n}"), &[event(n), event(n)], 0)
            .unwrap();
    }
    store
}

fn files_hold(path: &Path, needle: &str) -> bool {
    ["", "-wal", "-journal", "-encrypting"]
        .iter()
        .any(|suffix| {
            let bytes = std::fs::read(format!("{}{suffix}", path.display())).unwrap_or_default();
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
}

/// Everything a store's file holds, as text to compare: every table's rows (sorted), the
/// schema, `user_version`, `auto_vacuum` and the integrity check. Read with the passphrase
/// when given.
fn contents(path: &Path, passphrase: Option<&str>) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    if let Some(passphrase) = passphrase {
        conn.pragma_update(None, "key", passphrase).unwrap();
    }
    let pragma = |name: &str| -> String {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|value| format!("{value:?}"))
        .unwrap()
    };
    let mut out = vec![
        format!("user_version {}", pragma("user_version")),
        format!("auto_vacuum {}", pragma("auto_vacuum")),
        format!("integrity {}", pragma("integrity_check")),
    ];
    let mut stmt = conn
        .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY name")
        .unwrap();
    let objects: Vec<(String, String, Option<String>)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name, sql) in objects {
        out.push(format!("{kind} {name} {sql:?}"));
        if kind != "table" {
            continue;
        }
        let mut rows_stmt = conn.prepare(&format!("SELECT * FROM \"{name}\"")).unwrap();
        let columns = rows_stmt.column_count();
        let mut rows: Vec<String> = rows_stmt
            .query_map([], |row| {
                let values: Vec<rusqlite::types::Value> =
                    (0..columns).map(|i| row.get(i)).collect::<Result<_, _>>()?;
                Ok(format!("{values:?}"))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        out.push(format!("{name}: {} rows", rows.len()));
        out.extend(rows);
    }
    out.join("\n")
}

fn staging(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-encrypting", path.display()))
}

fn assert_whole(store: &SqliteStore) {
    for n in [0, WORKFLOWS / 2, WORKFLOWS - 1] {
        assert_eq!(store.head(&format!("wf-{n}")).unwrap(), 2, "wf-{n}");
    }
}

#[test]
fn a_plain_store_is_encrypted_in_place_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut store = plain_store(&path);
    assert!(
        files_hold(&path, SECRET),
        "the negative control: a plain store holds its text"
    );

    let before = contents(&path, None);
    assert!(
        before.contains("auto_vacuum Integer(2)"),
        "a new store vacuums incrementally"
    );
    let mut reports: Vec<EncryptProgress> = Vec::new();
    store
        .encrypt(&key(), &mut |progress| reports.push(progress))
        .unwrap();
    assert!(store.is_encrypted());
    assert!(
        reports.len() > 4,
        "progress is reported as rows are copied: {}",
        reports.len()
    );
    assert!(
        reports.windows(2).all(|w| w[0].done < w[1].done),
        "progress only grows"
    );
    let last = reports.last().unwrap();
    assert_eq!(last.done, last.total, "progress ends at its total");
    assert!(
        last.total >= 2 * 2 * WORKFLOWS as u64,
        "both copies count every event: {last:?}"
    );

    // The same store object goes on, encrypted.
    assert_whole(&store);
    store.append("wf-after", &[event(0)], 0).unwrap();
    drop(store);

    assert!(
        !files_hold(&path, SECRET),
        "no file holds the text after encryption"
    );
    assert!(
        !files_hold(&path, "SQLite format 3"),
        "no plain header is left"
    );
    assert!(
        !staging(&path).exists(),
        "the copy beside the store is gone"
    );
    assert_eq!(
        SqliteStore::open(&path).unwrap_err().code(),
        "WRONG_KEY",
        "without the key the store does not open"
    );
    // Every row, the schema and the layout came through (the append after it aside).
    let mut store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    assert_whole(&store);
    assert_eq!(store.head("wf-after").unwrap(), 1);
    drop(store);
    let after = contents(&path, Some(PASSPHRASE));
    assert!(
        after.contains("integrity Text(\"ok\")"),
        "{}",
        &after[..200]
    );
    let compare = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|line| !line.contains("wf-after") && !line.contains(" rows"))
            .map(str::to_owned)
            .collect()
    };
    let (before_lines, after_lines) = (compare(&before), compare(&after));
    let missing: Vec<_> = before_lines
        .iter()
        .filter(|line| !after_lines.contains(line))
        .take(5)
        .collect();
    assert!(missing.is_empty(), "lost in the encryption: {missing:?}");
    store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    drop(store);
}

#[test]
fn rekey_of_a_plain_store_encrypts_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut store = plain_store(&path);
    store.rekey(&key()).unwrap();
    drop(store);
    let store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    assert_whole(&store);
    assert!(!files_hold(&path, SECRET));
}

/// A crash after the encrypted copy committed and the plain file was deleted: the store's
/// data is only in the copy beside it. Made here by encrypting a copy of the store and
/// putting its file where the copy goes.
#[test]
fn an_open_finishes_an_encryption_whose_plain_file_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let elsewhere = dir.path().join("elsewhere.db");
    let mut store = plain_store(&elsewhere);
    store.encrypt(&key(), &mut |_| {}).unwrap();
    drop(store);
    std::fs::rename(&elsewhere, staging(&path)).unwrap();

    assert_eq!(
        SqliteStore::open(&path).unwrap_err().code(),
        "WRONG_KEY",
        "without the key the open cannot finish, and makes no plain store"
    );
    assert!(!path.exists() || std::fs::metadata(&path).unwrap().len() == 0);
    let other_key = Key::passphrase("not the store's passphrase").unwrap();
    assert_eq!(
        SqliteStore::open_encrypted(&path, &other_key, Durability::Full)
            .unwrap_err()
            .code(),
        "WRONG_KEY",
        "another key reads no copy: WRONG_KEY, not CORRUPT"
    );
    assert!(
        staging(&path).exists(),
        "the copy is kept for the right key"
    );
    let store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    assert_whole(&store);
    assert!(
        !staging(&path).exists(),
        "the copy is gone once copied back"
    );
    drop(store);
    assert!(!files_hold(&path, SECRET));
}

/// A crash before the plain file was deleted: the store is the plain file, and the copy
/// beside it (whole or not) is dropped by the next open, with a key or without.
#[test]
fn an_open_drops_the_copy_of_an_encryption_that_stopped_before_the_delete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(plain_store(&path));
    let other = dir.path().join("other.db");
    let mut copy = plain_store(&other);
    copy.encrypt(&key(), &mut |_| {}).unwrap();
    drop(copy);
    std::fs::rename(&other, staging(&path)).unwrap();

    let store = SqliteStore::open(&path).unwrap();
    assert_whole(&store);
    assert!(!store.is_encrypted());
    assert!(!staging(&path).exists(), "the stale copy is dropped");
    drop(store);
    // And the encryption, run again, completes.
    let mut store = SqliteStore::open(&path).unwrap();
    store.encrypt(&key(), &mut |_| {}).unwrap();
    assert_whole(&store);
}

/// A crash after the copy back committed, before the copy beside it was deleted.
#[test]
fn an_open_drops_the_copy_left_after_the_copy_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut store = plain_store(&path);
    store.encrypt(&key(), &mut |_| {}).unwrap();
    drop(store);
    std::fs::write(staging(&path), b"left over").unwrap();
    let store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    assert_whole(&store);
    assert!(!staging(&path).exists());
}

/// A process that dies midway (`abort`, no destructor runs) at each point of the encryption:
/// the next open finds every workflow, plain while the plain file was still there, encrypted
/// (with the key only) once it was deleted.
#[test]
fn a_process_killed_midway_through_an_encryption_loses_nothing() {
    if let Ok(path) = std::env::var("RUNSTORE_ENCRYPT_CHILD") {
        let stop_at: u64 = std::env::var("RUNSTORE_ENCRYPT_STOP")
            .unwrap()
            .parse()
            .unwrap();
        let mut store = SqliteStore::open(&path).unwrap();
        store
            .encrypt(&key(), &mut |progress| {
                if progress.done >= stop_at {
                    std::process::abort();
                }
            })
            .unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rows = {
        let path = dir.path().join("measure.db");
        let mut store = plain_store(&path);
        let mut total = 0;
        store
            .encrypt(&key(), &mut |progress| total = progress.total)
            .unwrap();
        total
    };
    // Into the first copy, at its end, into the second, at its last chunk.
    for stop_at in [1, rows / 4, rows / 2, rows * 3 / 4, rows] {
        let path = dir.path().join(format!("killed-{stop_at}.db"));
        drop(plain_store(&path));
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_process_killed_midway_through_an_encryption_loses_nothing",
                "--test-threads=1",
            ])
            .env("RUNSTORE_ENCRYPT_CHILD", &path)
            .env("RUNSTORE_ENCRYPT_STOP", stop_at.to_string())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(
            !status.success(),
            "the child died midway (stop at {stop_at} of {rows})"
        );
        let store = match SqliteStore::open(&path) {
            Ok(store) => {
                assert!(
                    stop_at <= rows / 2,
                    "stopped at {stop_at} of {rows}: the plain file is still there"
                );
                store
            }
            Err(error) => {
                assert_eq!(error.code(), "WRONG_KEY", "stopped at {stop_at}: {error}");
                assert!(
                    stop_at > rows / 2,
                    "stopped at {stop_at} of {rows}: in the first copy"
                );
                SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap()
            }
        };
        for n in [0, WORKFLOWS / 2, WORKFLOWS - 1] {
            let head = store.head(&format!("wf-{n}")).unwrap();
            assert_eq!(head, 2, "stopped at {stop_at} of {rows}: wf-{n}");
        }
        drop(store);
        // A copy killed before its first commit left an empty file (SQLite's own VFS reports it
        // as absent, and the next encryption deletes it).
        let left = std::fs::metadata(staging(&path)).map_or(0, |m| m.len());
        assert_eq!(
            left, 0,
            "stopped at {stop_at}: no copy is left after the open"
        );
    }
}

/// Natively another connection may hold the file: the encryption is refused (BUSY) and changes
/// nothing, rather than deleting a file the other connection goes on writing to.
#[test]
fn another_connection_to_the_file_refuses_the_encryption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut store = plain_store(&path);
    let other = SqliteStore::open(&path).unwrap();
    assert_eq!(other.head("wf-0").unwrap(), 2);
    let refused = store.encrypt(&key(), &mut |_| {}).unwrap_err();
    assert_eq!(refused.code(), "BUSY", "{refused}");
    assert!(!store.is_encrypted());
    other.append("wf-other", &[event(0)], 0).unwrap();
    assert_whole(&store);
    assert_eq!(store.head("wf-other").unwrap(), 1);
    drop(other);
    store.encrypt(&key(), &mut |_| {}).unwrap();
    drop(store);
    let store = SqliteStore::open_encrypted(&path, &key(), Durability::Full).unwrap();
    assert_eq!(store.head("wf-other").unwrap(), 1);
}
