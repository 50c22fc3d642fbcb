//! The schema: applied once and idempotently, versioned with `PRAGMA user_version`, and a
//! database from a newer version is refused and left byte for byte as it was.
#![cfg(not(target_family = "wasm"))]

use runstore::{
    Error, EventJournal, Operation, PageRequest, SqliteStore, Step, StepStore, SCHEMA_VERSION,
};

fn user_version(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

#[test]
fn a_new_database_gets_the_current_version_and_reopening_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
    let store = SqliteStore::open(&path).unwrap();
    store
        .append("wf", &[], 0)
        .expect("schema usable after a second open");
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
}

#[test]
fn a_newer_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    {
        // A database as a future version might leave it: rollback journal, higher version.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE future (x); INSERT INTO future VALUES (1); PRAGMA user_version = 99;",
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        error,
        Error::SchemaTooNew {
            found: 99,
            supported: SCHEMA_VERSION
        }
    );
    assert_eq!(error.code(), "SCHEMA_TOO_NEW");
    assert_eq!(std::fs::read(&path).unwrap(), before, "file unchanged");
    assert!(!dir.path().join("newer.db-wal").exists(), "no WAL created");
}

#[test]
fn a_failed_migration_leaves_the_database_at_its_old_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clash.db");
    {
        // A table that clashes with the schema makes migration 1 fail half way.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE timers (x); INSERT INTO timers VALUES (1);")
            .unwrap();
    }
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(error.code(), "BACKEND", "{error}");
    assert_eq!(user_version(&path), 0);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        tables, 0,
        "the migration's earlier statements were rolled back"
    );
}

#[test]
fn a_version_1_database_is_brought_to_the_current_version_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        // A database as version 1 of the store left it, with one event.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../src/sqlite/schema.sql"))
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO events VALUES ('wf', 1, 'x', 5,
                 CAST(X'01' || '{"type":"custom","name":"x","recordedAt":5,"data":{"n":1}}' AS BLOB));
               INSERT INTO workflows (workflow_id, head, status, updated_at)
                 VALUES ('wf', 1, 'pending', 5);
               PRAGMA user_version = 1;"#,
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
    let history = store
        .read_history("wf", &PageRequest::default())
        .unwrap()
        .items;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].event.data, serde_json::json!({"n": 1}));
    // The request log (from version 2 on) is there and works.
    a_step_replays(&store);
}

#[test]
fn a_version_2_database_keeps_its_request_log_without_the_commit_time_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../src/sqlite/schema.sql"))
            .unwrap();
        conn.execute_batch(include_str!("../src/sqlite/schema_2.sql"))
            .unwrap();
        conn.execute_batch(
            r#"INSERT INTO requests (request_id, fingerprint, outcomes, committed_at)
                 VALUES ('before-upgrade', 'f', '[{"op":"scheduleTimer"}]',
                         CAST(unixepoch('subsec') * 1000 AS INTEGER));
               PRAGMA user_version = 2;"#,
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let kept = store
        .request_outcome("before-upgrade")
        .unwrap()
        .committed()
        .unwrap();
    assert_eq!(kept.outcomes.len(), 1);
    a_step_replays(&store);
    assert!(store
        .request_outcome("before-upgrade")
        .unwrap()
        .committed()
        .is_some());
    drop(store);
    assert_eq!(user_version(&path), i64::from(SCHEMA_VERSION));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'requests'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // No index: the table itself is keyed by (scope, request id) (schema_6.sql); none on
    // commit time.
    assert_eq!(indexes, Vec::<String>::new());
}

/// A step under a request id commits, and replays when sent again: the request log works.
fn a_step_replays(store: &SqliteStore) {
    let step = Step::new()
        .request_id("after-upgrade")
        .with(Operation::ScheduleTimer {
            workflow_id: "wf".into(),
            timer_id: "t".into(),
            fire_at: 1,
        });
    store.commit(&step).unwrap();
    assert!(store.commit(&step).unwrap().replayed);
}

fn page_size(path: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_query_value(None, "page_size", |row| row.get(0))
        .unwrap()
}

#[test]
fn a_new_database_gets_4_kib_pages_and_an_existing_one_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.db");
    drop(SqliteStore::open(&new).unwrap());
    assert_eq!(page_size(&new), 4096);

    let old = dir.path().join("old.db");
    {
        // A version-1 database made with 8 KiB pages, as the browser build used to make them.
        let conn = rusqlite::Connection::open(&old).unwrap();
        conn.execute_batch("PRAGMA page_size = 8192; PRAGMA journal_mode = WAL;")
            .unwrap();
        conn.execute_batch(include_str!("../src/sqlite/schema.sql"))
            .unwrap();
        conn.execute_batch("PRAGMA user_version = 1;").unwrap();
    }
    let store = SqliteStore::open(&old).unwrap();
    store
        .append(
            "wf",
            &[runstore::Event {
                kind: runstore::EventKind::Custom { name: "x".into() },
                recorded_at: 1,
                data: serde_json::json!({"n": 1}),
            }],
            0,
        )
        .unwrap();
    drop(store);
    assert_eq!(user_version(&old), i64::from(SCHEMA_VERSION));
    assert_eq!(page_size(&old), 8192);
    let store = SqliteStore::open(&old).unwrap();
    assert_eq!(store.head("wf").unwrap(), 1);
}
