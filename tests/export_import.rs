//! Export and import of a whole store: every area round-trips (file and bytes, memory and
//! file stores, across page sizes), an older file is migrated, and a file that is not a
//! runstore database is refused with the store left exactly as it was.
#![cfg(not(target_family = "wasm"))]

use std::path::Path;

use runstore::{
    CursorMove, Error, EventJournal, LeaseStore, Operation, OutboxStore, SqliteStore, Step,
    StepStore, SyncHeadState, SyncHeadUpdate, SCHEMA_VERSION,
};
use rusqlite::types::Value;
use rusqlite::Connection;
use serde_json::json;

const NOW: i64 = 1_700_000_000_000;
const HASH: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// One step that writes to every area, under a request id.
fn every_area() -> Step {
    serde_json::from_value(json!({
        "requestId": "fill-every-area",
        "operations": [
            { "op": "append", "workflowId": "order-1", "expectedSeq": 0,
              "events": [
                  { "type": "started", "workflowType": "order", "runId": "r1", "recordedAt": NOW },
                  { "type": "custom", "name": "charged", "recordedAt": NOW + 1, "data": { "amount": 1999 } }
              ],
              "outbox": [{ "dispatchKey": "order-1:ship", "workflowId": "order-1", "ordinal": 1,
                           "activityType": "ship", "input": [1, 2, 3], "visibleAfter": NOW }] },
            { "op": "insertOutbox", "rows": [{ "dispatchKey": "order-1:mail", "workflowId": "order-1",
                "ordinal": 2, "activityType": "mail", "input": [4], "visibleAfter": NOW }] },
            { "op": "claimOutbox", "now": NOW, "limit": 1 },
            { "op": "scheduleTimer", "workflowId": "order-1", "timerId": "ship-by", "fireAt": NOW + 86_400_000 },
            { "op": "upsertVisibility", "record": { "workflowId": "order-1", "runId": "r1",
                "workflowType": "order", "status": "running", "startTime": NOW,
                "searchAttributes": { "customer": "ada" }, "head": 2 } },
            { "op": "registerNamespace", "name": "shop", "origin": "explicit", "now": NOW },
            { "op": "putPackage", "record": { "workflowType": "order", "contentHash": HASH,
                "archive": [9, 9, 9], "deployedAt": NOW } },
            { "op": "compareAndSwapCheckpoint", "checkpoint": { "checkpointId": "agent-1",
                "runId": "run-a", "revision": 0, "state": { "step": 3 }, "updatedAt": NOW } },
            { "op": "compareAndSwapEffect", "record": { "effectId": "effect-1", "capabilityId": "email",
                "idempotencyKey": "welcome:1", "revision": 0, "request": { "to": "ada@example.com" },
                "status": { "type": "prepared" }, "updatedAt": NOW } },
            { "op": "recordRunEvent", "event": { "eventId": "ev-1", "runId": "run-a", "sequence": 0,
                "recordedAt": NOW, "data": { "tool": "search" } } },
            { "op": "putArtifact", "now": NOW, "artifact": { "scope": "run-a", "mediaType": "text/plain",
                "name": "notes.txt", "bytes": [104, 105] } },
            { "op": "saveConversation", "state": { "conversationId": "chat-1", "revision": 0,
                "formatVersion": 1, "state": [7, 7], "updatedAt": NOW } }
        ]
    }))
    .expect("the step reads")
}

fn filled(store: &SqliteStore) {
    store.commit(&every_area()).expect("every area written");
    // The sync server's feed and a sync target's state, which no JS step writes.
    let sync = Step::new()
        .with(Operation::RecordChange {
            feed: "shop".into(),
            workflow_id: "order-1".into(),
            base: 0,
            head: 2,
        })
        .with(Operation::SaveSync {
            target: "shop@https://sync.example.com".into(),
            client_id: "client-1".into(),
            cursor: Some(CursorMove { from: 0, to: 1 }),
            mark: Some(0),
            heads: vec![SyncHeadUpdate {
                workflow_id: "order-1".into(),
                expected: None,
                head: 2,
                state: SyncHeadState::Synced,
            }],
        });
    store.commit(&sync).expect("sync state written");
    // And its leases.
    store
        .take_lease("order-1", "laptop", None, 60_000, 1_000)
        .expect("lease taken");
}

/// Every row of every table, in a fixed order: what "the same data" means.
/// The rows of every table but the change feed, which an import replaces with its own mark
/// (`an_import_marks_the_change_feed`).
fn rows(conn: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'changes' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|table| {
            let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
            let width = stmt.column_count();
            let mut all: Vec<Vec<Value>> = stmt
                .query_map([], |row| (0..width).map(|i| row.get(i)).collect())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            all.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            (table, all)
        })
        .collect()
}

fn rows_of_file(path: &Path) -> Vec<(String, Vec<Vec<Value>>)> {
    rows(&Connection::open(path).unwrap())
}

fn rows_of_bytes(bytes: &[u8]) -> Vec<(String, Vec<Vec<Value>>)> {
    let mut conn = Connection::open_in_memory().unwrap();
    conn.deserialize_read_exact(rusqlite::MAIN_DB, bytes, bytes.len(), true)
        .unwrap();
    rows(&conn)
}

#[test]
fn every_area_round_trips_through_a_file_into_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let source_path = dir.path().join("source.db");
    let source = SqliteStore::open(&source_path).unwrap();
    filled(&source);
    // A log that has forgotten requests (committed up to 1 ms after the epoch) says so.
    source
        .raw_execute("UPDATE request_scopes SET forgotten_through = 1 WHERE scope = ''")
        .unwrap();
    let file = dir.path().join("export.runstore");
    source.export_to(&file).unwrap();
    let expected = rows_of_file(&source_path);
    assert!(expected
        .iter()
        .all(|(table, rows)| !rows.is_empty() || table == "package_routes"));

    let target_path = dir.path().join("target.db");
    let mut target = SqliteStore::open(&target_path).unwrap();
    // Another connection to the same file sees the import whole once it committed.
    let watcher = SqliteStore::open(&target_path).unwrap();
    assert_eq!(watcher.head("order-1").unwrap(), 0);
    let outcome = target.import_from(&file, None).unwrap();
    assert_eq!(watcher.head("order-1").unwrap(), 2);
    assert_eq!(outcome.schema_version, SCHEMA_VERSION);
    assert!(!outcome.replayed);
    drop(target);
    assert_eq!(rows_of_file(&target_path), expected);

    // The imported store works on: its heads, its request log, its claims.
    let target = SqliteStore::open(&target_path).unwrap();
    assert_eq!(target.head("order-1").unwrap(), 2);
    assert!(target.commit(&every_area()).unwrap().replayed);
    assert_eq!(
        target
            .outbox_row_state("order-1:ship")
            .unwrap()
            .unwrap()
            .status,
        source
            .outbox_row_state("order-1:ship")
            .unwrap()
            .unwrap()
            .status
    );
}

#[test]
fn bytes_round_trip_between_memory_and_file_stores_and_replace_what_was_there() {
    let source = SqliteStore::open_in_memory().unwrap();
    filled(&source);
    let bytes = source.export_bytes().unwrap();
    assert_eq!(&bytes[..16], b"SQLite format 3\0");
    assert_eq!(
        &bytes[18..20],
        &[1, 1],
        "rollback mode: opens without a WAL"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target.db");
    let mut target = SqliteStore::open(&path).unwrap();
    let gone = runstore::Event {
        kind: runstore::EventKind::Custom {
            name: "gone".into(),
        },
        recorded_at: NOW,
        data: json!(null),
    };
    target
        .append("gone-after-import", &[gone], 0)
        .expect("content the import replaces");
    assert_eq!(target.head("gone-after-import").unwrap(), 1);
    target.import_bytes(&bytes, None).unwrap();
    assert_eq!(target.head("gone-after-import").unwrap(), 0);
    drop(target);
    assert_eq!(rows_of_file(&path), rows_of_bytes(&bytes));

    // And back from the file store into a memory store.
    let again = SqliteStore::open(&path).unwrap().export_bytes().unwrap();
    let mut memory = SqliteStore::open_in_memory().unwrap();
    memory.import_bytes(&again, None).unwrap();
    assert_eq!(
        rows_of_bytes(&memory.export_bytes().unwrap()),
        rows_of_bytes(&bytes)
    );
}

#[test]
fn a_file_of_another_page_size_loads_and_the_store_keeps_its_own() {
    // Stores made before 4 KiB pages became the default (the browser's) have 8 KiB pages.
    let dir = tempfile::tempdir().unwrap();
    let big_pages = dir.path().join("big.db");
    let source = SqliteStore::open_in_memory().unwrap();
    filled(&source);
    source.export_to(&big_pages).unwrap();
    Connection::open(&big_pages)
        .unwrap()
        .execute_batch("PRAGMA journal_mode = DELETE; PRAGMA page_size = 8192; VACUUM;")
        .unwrap();
    let bytes = std::fs::read(&big_pages).unwrap();
    assert_eq!(u16::from_be_bytes([bytes[16], bytes[17]]), 8192);
    let path = dir.path().join("small.db");
    let mut store = SqliteStore::open(&path).unwrap();
    store.import_bytes(&bytes, None).unwrap();
    drop(store);
    assert_eq!(rows_of_file(&path), rows_of_file(&big_pages));
    let page_size: i64 = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "page_size", |row| row.get(0))
        .unwrap();
    assert_eq!(page_size, 4096);
}

#[test]
fn under_a_request_id_an_import_is_applied_once() {
    let source = SqliteStore::open_in_memory().unwrap();
    filled(&source);
    let bytes = source.export_bytes().unwrap();
    let mut target = SqliteStore::open_in_memory().unwrap();
    let first = target.import_bytes(&bytes, Some("import-1")).unwrap();
    assert!(!first.replayed);
    assert!(target
        .request_outcome("import-1")
        .unwrap()
        .committed()
        .is_some());
    // A write after the import must survive the retry.
    let kept = runstore::Event {
        kind: runstore::EventKind::Custom {
            name: "kept".into(),
        },
        recorded_at: NOW,
        data: json!(null),
    };
    target.append("after-import", &[kept], 0).unwrap();
    let again = target.import_bytes(&bytes, Some("import-1")).unwrap();
    assert!(again.replayed);
    assert_eq!(again.schema_version, SCHEMA_VERSION);
    assert_eq!(target.head("after-import").unwrap(), 1);
    assert!(target
        .list_outbox(None, &Default::default())
        .unwrap()
        .items
        .iter()
        .any(|row| row.dispatch_key == "order-1:ship"));
    let other = SqliteStore::open_in_memory()
        .unwrap()
        .export_bytes()
        .unwrap();
    let error = target.import_bytes(&other, Some("import-1")).unwrap_err();
    assert_eq!(error.code(), "CONFLICT");

    // A file whose own log holds the id (the exported store imported under it) takes it over.
    let carried = target.export_bytes().unwrap();
    let mut elsewhere = SqliteStore::open_in_memory().unwrap();
    let outcome = elsewhere.import_bytes(&carried, Some("import-1")).unwrap();
    assert!(!outcome.replayed);
    assert!(
        elsewhere
            .import_bytes(&carried, Some("import-1"))
            .unwrap()
            .replayed
    );
}

#[test]
fn a_version_1_file_is_migrated_on_the_way_in() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v1.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(include_str!("../src/sqlite/schema.sql"))
            .unwrap();
        conn.execute_batch(
            "INSERT INTO workflows (workflow_id, head, status, updated_at) VALUES ('old', 0, 'pending', 1);
             INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input, status, attempt, visible_after)
             VALUES ('old:1', 'old', 1, 'x', x'00', 'pending', 0, 0);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let mut store = SqliteStore::open_in_memory().unwrap();
    let outcome = store.import_from(&old, None).unwrap();
    assert_eq!(outcome.schema_version, 1);
    let [row] = <[_; 1]>::try_from(store.claim_outbox(5, 10, &Default::default()).unwrap())
        .expect("the old row, claimable after the migration");
    assert_eq!(row.dispatch_key, "old:1");
    assert!(
        row.claim_token > 0,
        "a fenced claim: the version 2 columns exist"
    );
}

/// Imports `bytes` into a filled store and checks that it is refused with `code` and that
/// the store is byte for byte what it was.
fn refused(bytes: &[u8], code: &str) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut store = SqliteStore::open(&path).unwrap();
    filled(&store);
    let before = store.export_bytes().unwrap();
    let error = store.import_bytes(bytes, Some("refused")).unwrap_err();
    assert_eq!(error.code(), code, "{error}");
    assert_eq!(
        store.export_bytes().unwrap(),
        before,
        "the store is unchanged"
    );
    assert!(store
        .request_outcome("refused")
        .unwrap()
        .committed()
        .is_none());
    assert_eq!(store.head("order-1").unwrap(), 2, "and still works");
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.export_bytes().unwrap(), before);
    error
}

fn field(error: &Error) -> &str {
    match error {
        Error::InvalidInput { field, .. } => field,
        other => panic!("not INVALID_INPUT: {other:?}"),
    }
}

fn exported() -> Vec<u8> {
    let store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    store.export_bytes().unwrap()
}

#[test]
fn what_is_not_a_sqlite_database_is_refused() {
    for bytes in [&b""[..], b"hello, world", &[0u8; 4096][..]] {
        assert_eq!(field(&refused(bytes, "INVALID_INPUT")), "bytes");
    }
    let mut cut = exported();
    cut.truncate(cut.len() - 100);
    refused(&cut, "INVALID_INPUT");
}

#[test]
fn a_damaged_database_is_refused() {
    let good = exported();
    let page = usize::from(u16::from_be_bytes([good[16], good[17]]));
    let mut damaged = good.clone();
    // Garbage over every page but the first: the schema reads, the tables do not.
    for byte in damaged[page..].iter_mut() {
        *byte = 0x5a;
    }
    let error = refused(&damaged, "INVALID_INPUT");
    assert!(error.to_string().contains("SQLite"), "{error}");
    // The header promises more pages than there are.
    let mut short = good;
    let pages = u32::from_be_bytes([short[28], short[29], short[30], short[31]]);
    short.truncate(short.len() - page);
    assert!(pages > 1);
    refused(&short, "INVALID_INPUT");
}

#[test]
fn a_foreign_database_is_refused_even_under_a_known_version() {
    let mut foreign = Connection::open_in_memory().unwrap();
    foreign
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
        .unwrap();
    let plain = foreign.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
    let error = refused(&plain, "INVALID_INPUT");
    assert!(
        error.to_string().contains("not a runstore database"),
        "{error}"
    );
    foreign.execute_batch("PRAGMA user_version = 2").unwrap();
    let posing = foreign.serialize(rusqlite::MAIN_DB).unwrap().to_vec();
    let error = refused(&posing, "INVALID_INPUT");
    assert!(
        error.to_string().contains("not a runstore database"),
        "{error}"
    );
}

#[test]
fn a_runstore_file_with_an_extra_table_or_a_newer_version_is_refused() {
    let store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    store.raw_execute("CREATE TABLE extra (x)").unwrap();
    refused(&store.export_bytes().unwrap(), "INVALID_INPUT");

    let newer = SqliteStore::open_in_memory().unwrap();
    newer
        .raw_execute(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
        .unwrap();
    let error = refused(&newer.export_bytes().unwrap(), "SCHEMA_TOO_NEW");
    assert_eq!(
        error,
        Error::SchemaTooNew {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
}

#[test]
fn rows_that_break_the_schema_are_refused() {
    // An integrity check finds what a CHECK constraint forbids.
    let store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    store
        .raw_execute("PRAGMA ignore_check_constraints = ON; UPDATE outbox SET status = 'lost';")
        .unwrap();
    let error = refused(&store.export_bytes().unwrap(), "INVALID_INPUT");
    assert!(error.to_string().contains("integrity check"), "{error}");
}

#[test]
fn an_export_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken");
    std::fs::write(&path, b"keep me").unwrap();
    let store = SqliteStore::open_in_memory().unwrap();
    let error = store.export_to(&path).unwrap_err();
    assert_eq!(error.code(), "INVALID_INPUT");
    assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
    let missing = dir.path().join("missing");
    let mut store = store;
    assert_eq!(
        store.import_from(&missing, None).unwrap_err().code(),
        "INVALID_INPUT"
    );
}

/// An older export brings back rows claimed since, but never the claim-token counter: the
/// next claim hands out a token no holder had, so a stale holder's settlement is refused.
#[test]
fn an_older_export_never_brings_claim_tokens_back() {
    let mut store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    let before = store.export_bytes().unwrap();
    let stale = store.claim_outbox(NOW, 10, &Default::default()).unwrap();
    assert_eq!(stale.len(), 1, "order-1:ship is pending");
    let stale_token = stale[0].claim_token;

    store.import_bytes(&before, None).unwrap();
    let fresh = store.claim_outbox(NOW, 10, &Default::default()).unwrap();
    assert_eq!(fresh[0].dispatch_key, "order-1:ship");
    assert!(
        fresh[0].claim_token > stale_token,
        "token {} handed out again after {stale_token}",
        fresh[0].claim_token
    );
    let error = store
        .complete_outbox("order-1:ship", stale_token)
        .unwrap_err();
    assert_eq!(error.code(), "CONFLICT", "{error}");
    store
        .complete_outbox("order-1:ship", fresh[0].claim_token)
        .unwrap();
}

/// A filled store's export after `damage` (raw SQL, bypassing every check of the store).
fn exported_after(damage: &str) -> Vec<u8> {
    let store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    store
        .raw_execute(&format!("PRAGMA ignore_check_constraints = ON; {damage}"))
        .unwrap();
    store.export_bytes().unwrap()
}

/// A file that holds what the store never writes itself is refused with CORRUPT naming the
/// rule it breaks, and the store is left as it was.
#[test]
fn a_file_that_breaks_the_stores_rules_is_refused_naming_the_rule() {
    let completed = "CAST(X'01' || '{\"type\":\"completed\",\"recordedAt\":5}' AS BLOB)";
    let cases = [
        // A head with no events behind it: the next append would get seq 6.
        ("UPDATE workflows SET head = 5", "head"),
        ("DELETE FROM events WHERE seq = 1", "head"),
        ("INSERT INTO events VALUES ('ghost', 1, 'custom', 1, CAST(X'01' || '{\"type\":\"custom\",\"name\":\"x\",\"recordedAt\":1}' AS BLOB))", "head"),
        // A projection its events do not give, and events out of their lifecycle.
        ("UPDATE workflows SET status = 'completed', closed_at = 9", "lifecycle"),
        (&format!(
            "INSERT INTO events VALUES ('order-1', 3, 'completed', 5, {completed});
             INSERT INTO events VALUES ('order-1', 4, 'completed', 5, {completed});
             UPDATE workflows SET head = 4, status = 'completed', closed_at = 5, updated_at = 5"
        ), "lifecycle"),
        ("UPDATE events SET event = CAST(X'07' || '{}' AS BLOB) WHERE seq = 2", "lifecycle"),
        ("UPDATE events SET event = 'text' WHERE seq = 2", "lifecycle"),
        // Outbox rows and their claims.
        ("UPDATE outbox SET claimed_at = NULL WHERE status = 'claimed'", "claim"),
        ("UPDATE outbox SET claim_token = 99", "claim token"),
        ("UPDATE outbox SET status = 'failed' WHERE status = 'pending'", "dead letter"),
        ("UPDATE outbox SET attempt = 10 WHERE status = 'pending'", "attempt"),
        // What the store computes itself.
        ("UPDATE artifacts SET bytes = X'00'", "artifact"),
        ("UPDATE package_routes SET content_hash = 'b' || substr(content_hash, 2)", "route"),
        ("INSERT INTO package_routes VALUES ('other', 'cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc')", "route"),
        // The sync server's feed and a sync target's state.
        ("INSERT INTO sync_feed VALUES ('shop', 5, 'order-1', 2, 3)", "feed"),
        ("UPDATE sync_heads SET head = 3", "agreed head"),
        ("UPDATE sync_targets SET mark = 5", "mark"),
        ("DELETE FROM sync_clock", "mark"),
        // The request log.
        ("UPDATE requests SET outcomes = 'not json'", "request log"),
        ("UPDATE requests SET scope_number = 7", "request log"),
    ];
    for (damage, rule) in cases {
        let error = refused(&exported_after(damage), "CORRUPT");
        assert!(
            error.to_string().contains(rule),
            "{damage}: {error} does not name {rule}"
        );
    }
    // The same file, undamaged, imports.
    let mut store = SqliteStore::open_in_memory().unwrap();
    store.import_bytes(&exported_after(""), None).unwrap();
}

/// SQLite's own objects are left out of the schema check by their `sqlite_` prefix only: a
/// table named `sqliteXnotes` is a table of the file like any other, one the store has not.
#[test]
fn a_table_named_like_sqlites_own_is_not_hidden_from_the_schema_check() {
    let store = SqliteStore::open_in_memory().unwrap();
    filled(&store);
    store.raw_execute("CREATE TABLE sqliteXnotes (x)").unwrap();
    let error = refused(&store.export_bytes().unwrap(), "INVALID_INPUT");
    assert!(
        error.to_string().contains("not a runstore database"),
        "{error}"
    );
}

#[test]
fn an_import_marks_the_change_feed() {
    let source = SqliteStore::open_in_memory().unwrap();
    filled(&source);
    let bytes = source.export_bytes().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target.db");
    let mut target = SqliteStore::open(&path).unwrap();
    target.import_bytes(&bytes, None).unwrap();
    drop(target);
    // The file's feed (one change) is not the store's: one mark stands after both.
    let conn = Connection::open(&path).unwrap();
    let feed: Vec<(i64, Option<String>)> = conn
        .prepare("SELECT number, change FROM changes")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(feed, [(2, None)]);
}
