//! The database file on disk shrinks after a purge, and its WAL stays bounded after a large
//! write. Native only: it reads the files' sizes from the file system.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use runstore::*;

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn closed_workflow(store: &SqliteStore, id: &str, events: usize) {
    let payload = serde_json::json!({"text": "y".repeat(4_000)});
    let mut batch = vec![Event {
        kind: EventKind::Started {
            workflow_type: "t".into(),
            run_id: "r".into(),
        },
        recorded_at: 1,
        data: serde_json::Value::Null,
    }];
    batch.extend((0..events).map(|i| Event {
        kind: EventKind::Custom { name: "s".into() },
        recorded_at: i as Millis,
        data: payload.clone(),
    }));
    batch.push(Event {
        kind: EventKind::Completed,
        recorded_at: 10,
        data: serde_json::Value::Null,
    });
    store.append(id, &batch, 0).unwrap();
}

#[test]
fn the_file_shrinks_after_a_purge_and_the_wal_is_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let wal = dir.path().join("store.db-wal");
    let store = SqliteStore::open(&path).unwrap();
    // One large transaction of about 16 MB: the WAL grows to hold it.
    closed_workflow(&store, "big", 4_000);
    for i in 0..20 {
        closed_workflow(&store, &format!("w{i}"), 50);
    }
    store.raw_execute("PRAGMA wal_checkpoint(PASSIVE)").unwrap();
    let before = size(&path);
    assert!(before > 16_000_000, "database file of {before} bytes");

    let counts = store.purge_workflows(100, 1_000).unwrap();
    assert_eq!(counts.workflows, 21);
    let after = size(&path);
    println!("database file: {before} bytes before the purge, {after} after");
    assert!(after < before / 20, "{after} bytes after, {before} before");
    // The next write restarts the WAL, which `journal_size_limit` trims to 4 MiB.
    closed_workflow(&store, "small", 1);
    store.raw_execute("PRAGMA wal_checkpoint(PASSIVE)").unwrap();
    closed_workflow(&store, "small2", 1);
    let wal_size = size(&wal);
    println!("WAL: {wal_size} bytes after the restart");
    assert!(wal_size <= 4 << 20, "WAL of {wal_size} bytes");
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    let ids = store
        .list_workflow_ids(&PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(ids, ["small", "small2"]);
}

#[test]
fn pages_a_delete_left_free_go_back_when_the_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).unwrap();
    closed_workflow(&store, "big", 2_000);
    store
        .raw_execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let before = size(&path);
    // A delete whose freed pages did not go back: the disk was full, or the process ended
    // before they could.
    store.raw_execute("DELETE FROM events").unwrap();
    store
        .raw_execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let stats = store.storage_stats().unwrap();
    assert!(
        stats.freelist_count * stats.page_size > before / 2,
        "{stats:?}"
    );
    assert_eq!(size(&path), before);
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    let after = size(&path);
    println!("database file: {before} bytes with the free pages, {after} once opened again");
    assert_eq!(store.storage_stats().unwrap().freelist_count, 0);
    assert!(after < before / 10, "{after} bytes after, {before} before");
    let history = store.read_history("big", &PageRequest::default()).unwrap();
    assert!(history.items.is_empty());
}
