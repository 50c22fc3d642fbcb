//! Encryption at rest, natively: a store opened with a key leaves none of its text in its
//! files (the WAL included), opens again only with that key, refuses a wrong or missing key
//! and a key given to a plain store with WRONG_KEY while leaving the files byte-identical,
//! and takes a new key in place.
#![cfg(all(not(target_family = "wasm"), feature = "cipher"))]

use std::path::{Path, PathBuf};

use runstore::{Durability, Error, Event, EventJournal, Key, PageRequest, SqliteStore};
use serde_json::json;

/// Text that stands out in a file: found there only if the page holding it was not encrypted.
const SECRET: &str = "patient-record-7f3a9c-diagnosis";

fn event() -> Event {
    serde_json::from_value(json!({
        "type": "custom", "name": "noted", "recordedAt": 1_700_000_000_000_i64,
        "data": { "note": SECRET }
    }))
    .expect("the event reads")
}

fn bytes_key(seed: u8) -> Key {
    Key::from_bytes(&[seed; 32]).expect("32 bytes")
}

/// The database file and its WAL, as they are on disk now (a missing file reads as empty).
fn files(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    ["", "-wal", "-journal"]
        .iter()
        .map(|suffix| {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            let bytes = std::fs::read(&file).unwrap_or_default();
            (file, bytes)
        })
        .collect()
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A store at `path` with the secret appended; left open (its WAL holds the commit) when
/// `keep_open`, to check the WAL as well as the file.
fn written(path: &Path, key: Option<&Key>) -> SqliteStore {
    let store = match key {
        Some(key) => SqliteStore::open_encrypted(path, key, Durability::Full),
        None => SqliteStore::open(path),
    }
    .expect("the store opens");
    store
        .append("wf-secret", &[event()], 0)
        .expect("the event is written");
    store
}

fn code(result: Result<SqliteStore, Error>) -> &'static str {
    match result {
        Ok(_) => "opened",
        Err(error) => error.code(),
    }
}

#[test]
fn no_byte_of_an_encrypted_store_holds_its_text() {
    let dir = tempfile::tempdir().unwrap();
    // The negative control: a plain store's files do hold the text, so the search can find it.
    let plain = dir.path().join("plain.db");
    let plain_store = written(&plain, None);
    assert!(files(&plain).iter().any(|(_, bytes)| holds(bytes, SECRET)));
    drop(plain_store);

    for key in [bytes_key(7), Key::passphrase("correct horse").unwrap()] {
        let path = dir
            .path()
            .join(format!("{key:?}.db").replace([':', '(', ')', '.'], ""));
        let store = written(&path, Some(&key));
        let open_files = files(&path);
        assert!(
            open_files[1].1.len() > 4096,
            "the commit is in the WAL while the store is open"
        );
        for (file, bytes) in &open_files {
            assert!(!holds(bytes, SECRET), "{} holds the text", file.display());
            assert!(
                !holds(bytes, "SQLite format 3"),
                "{} has a plain header",
                file.display()
            );
        }
        drop(store);
        for (file, bytes) in files(&path) {
            assert!(
                !holds(&bytes, SECRET),
                "{} holds the text after close",
                file.display()
            );
        }
        let reopened = SqliteStore::open_encrypted(&path, &key, Durability::Full).unwrap();
        assert!(reopened.is_encrypted());
        let page = reopened
            .read_history("wf-secret", &PageRequest::default())
            .unwrap();
        assert_eq!(page.items.len(), 1, "the event reads back with the key");
    }
}

#[test]
fn a_wrong_or_missing_key_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let encrypted = dir.path().join("encrypted.db");
    drop(written(&encrypted, Some(&bytes_key(1))));
    let plain = dir.path().join("plain.db");
    drop(written(&plain, None));

    let before = (files(&encrypted), files(&plain));
    let wrong = SqliteStore::open_encrypted(&encrypted, &bytes_key(2), Durability::Full);
    assert_eq!(code(wrong), "WRONG_KEY");
    let passphrase = Key::passphrase("not the key").unwrap();
    let wrong_kind = SqliteStore::open_encrypted(&encrypted, &passphrase, Durability::Full);
    assert_eq!(code(wrong_kind), "WRONG_KEY");
    assert_eq!(code(SqliteStore::open(&encrypted)), "WRONG_KEY");
    let keyed_plain = SqliteStore::open_encrypted(&plain, &bytes_key(1), Durability::Full);
    assert_eq!(code(keyed_plain), "WRONG_KEY");
    assert!(
        before == (files(&encrypted), files(&plain)),
        "a refused open leaves every file byte-identical"
    );

    // And the right key still opens it afterwards.
    let store = SqliteStore::open_encrypted(&encrypted, &bytes_key(1), Durability::Full).unwrap();
    assert_eq!(store.head("wf-secret").unwrap(), 1);
}

#[test]
fn rekey_changes_the_key_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rekeyed.db");
    let mut store = written(&path, Some(&bytes_key(3)));
    let new_key = Key::passphrase("a new passphrase").unwrap();
    store.rekey(&new_key).unwrap();
    store.append("wf-after", &[event()], 0).unwrap();
    drop(store);

    for (file, bytes) in files(&path) {
        assert!(!holds(&bytes, SECRET), "{} holds the text", file.display());
    }
    let old = SqliteStore::open_encrypted(&path, &bytes_key(3), Durability::Full);
    assert_eq!(code(old), "WRONG_KEY");
    let store = SqliteStore::open_encrypted(&path, &new_key, Durability::Full).unwrap();
    assert_eq!(store.head("wf-secret").unwrap(), 1);
    assert_eq!(store.head("wf-after").unwrap(), 1);
}

#[test]
fn bad_keys_and_a_memory_store_rekeyed_are_invalid_input() {
    let short = Key::from_bytes(&[0; 31]).unwrap_err();
    assert_eq!(short.code(), "INVALID_INPUT");
    assert!(short.to_string().contains("32"), "{short}");
    assert_eq!(Key::passphrase("").unwrap_err().code(), "INVALID_INPUT");
    assert_eq!(Key::passphrase("a\0b").unwrap_err().code(), "INVALID_INPUT");
    let raw_form = format!("x'{}'", "ab".repeat(32));
    assert_eq!(
        Key::passphrase(raw_form).unwrap_err().code(),
        "INVALID_INPUT"
    );
    assert_eq!(
        format!("{:?}", bytes_key(9)),
        "Key::Bytes(..)",
        "Debug never shows a key"
    );

    let mut memory = SqliteStore::open_in_memory().unwrap();
    let refused = memory.rekey(&bytes_key(4)).unwrap_err();
    assert_eq!(refused.code(), "INVALID_INPUT");
    assert!(!memory.is_encrypted());
}

#[test]
fn an_encrypted_store_exports_encrypted_unless_asked_for_a_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = bytes_key(5);
    let source = written(&dir.path().join("source.db"), Some(&key));

    let encrypted = source.export_bytes().unwrap();
    assert!(!holds(&encrypted, SECRET), "the export holds the text");
    assert!(!holds(&encrypted, "SQLite format 3"));
    let plain = source.export_plain_bytes().unwrap();
    assert!(plain.starts_with(b"SQLite format 3\0"));
    assert!(
        holds(&plain, SECRET),
        "a plain export is the content itself"
    );

    // Into another store with the same key: the export imports, and that store's files stay
    // encrypted.
    let target_path = dir.path().join("target.db");
    let mut target = SqliteStore::open_encrypted(&target_path, &key, Durability::Full).unwrap();
    target.import_bytes(&encrypted, None).unwrap();
    assert_eq!(target.head("wf-secret").unwrap(), 1);
    // A plain file imports into an encrypted store too: that is how a plain store is encrypted.
    target.import_bytes(&plain, None).unwrap();
    assert_eq!(target.head("wf-secret").unwrap(), 1);
    for (file, bytes) in files(&target_path) {
        assert!(!holds(&bytes, SECRET), "{} holds the text", file.display());
    }

    // Without the key: a store with another key, and a plain store, refuse it unchanged.
    let mut other =
        SqliteStore::open_encrypted(dir.path().join("other.db"), &bytes_key(6), Durability::Full)
            .unwrap();
    assert_eq!(
        other.import_bytes(&encrypted, None).unwrap_err().code(),
        "WRONG_KEY"
    );
    assert_eq!(other.head("wf-secret").unwrap(), 0);
    let mut plain_store = SqliteStore::open_in_memory().unwrap();
    let refused = plain_store.import_bytes(&encrypted, None).unwrap_err();
    assert_eq!(refused.code(), "INVALID_INPUT");
    assert!(refused.to_string().contains("key"), "{refused}");
    // The plain export is an ordinary runstore file for a plain store.
    plain_store.import_bytes(&plain, None).unwrap();
    assert_eq!(plain_store.head("wf-secret").unwrap(), 1);
}

#[test]
fn a_refused_open_leaves_a_hot_wal_and_the_file_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let key = bytes_key(8);
    let store = written(&dir.path().join("live.db"), Some(&key));
    // What a process that was killed leaves: the file and its WAL, with commits only in the
    // WAL (copied while the store is open; no -shm, which the next opener rebuilds).
    let path = dir.path().join("hot.db");
    for suffix in ["", "-wal"] {
        std::fs::copy(
            dir.path().join(format!("live.db{suffix}")),
            dir.path().join(format!("hot.db{suffix}")),
        )
        .unwrap();
    }
    drop(store);
    let before = files(&path);
    assert!(before[1].1.len() > 4096, "the WAL holds the commit");
    assert_eq!(
        code(SqliteStore::open_encrypted(
            &path,
            &bytes_key(9),
            Durability::Full
        )),
        "WRONG_KEY"
    );
    assert_eq!(code(SqliteStore::open(&path)), "WRONG_KEY");
    assert!(
        before == files(&path),
        "a refused open checkpointed or changed the files"
    );
    let store = SqliteStore::open_encrypted(&path, &key, Durability::Full).unwrap();
    assert_eq!(store.head("wf-secret").unwrap(), 1);
}
