//! The SQLite store's request log at its bounds: a request reads as forgotten from the commit
//! that takes it past them, while the rows past them are deleted in batches; a forgotten id
//! can be used again; and what one request costs the WAL, with the log small and full.
#![cfg(not(target_family = "wasm"))]

use runstore::{
    ClaimFilter, NewOutboxRow, Operation, OperationOutcome, OutboxStore, RequestKey,
    RequestOutcome, SqliteStore, Step, StepStore, MAX_KEPT_REQUESTS, REQUEST_RETENTION_MS,
};

/// Every this many requests of a scope the log deletes what is past its bounds (`PRUNE_EVERY`
/// in src/sqlite/steps.rs).
const PRUNE_EVERY: u64 = 1024;

fn timer(request_id: &str, n: u64) -> Step {
    Step::new()
        .request_id(request_id)
        .with(Operation::ScheduleTimer {
            workflow_id: "wf".into(),
            timer_id: format!("t{n}"),
            fire_at: n as i64,
        })
}

/// The rows of the request log, forgotten ones included (read from a copy: the store holds its
/// database exclusively).
fn rows(store: &SqliteStore) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    store
        .raw_execute(&format!("VACUUM INTO '{}'", copy.display()))
        .unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM requests", [], |row| row.get(0))
        .unwrap();
    count as u64
}

#[test]
fn a_full_log_forgets_its_oldest_request_at_once_and_deletes_the_forgotten_rows_in_batches() {
    let store = SqliteStore::open_in_memory().unwrap();
    for n in 0..MAX_KEPT_REQUESTS {
        store.commit(&timer(&format!("r{n}"), n)).unwrap();
    }
    assert!(store.request_outcome("r0").unwrap().committed().is_some());
    let mut most = 0;
    for n in MAX_KEPT_REQUESTS..MAX_KEPT_REQUESTS + PRUNE_EVERY + 200 {
        store.commit(&timer(&format!("r{n}"), n)).unwrap();
        // The oldest request past the bound is forgotten by this very commit ...
        let forgotten = n - MAX_KEPT_REQUESTS;
        assert!(matches!(
            store.request_outcome(&format!("r{forgotten}")).unwrap(),
            RequestOutcome::Unknown { .. }
        ));
        assert!(store
            .request_outcome(&format!("r{}", forgotten + 1))
            .unwrap()
            .committed()
            .is_some());
        if n % 100 == 0 {
            most = most.max(rows(&store));
        }
    }
    // ... and its row goes with the next batch: the log never holds a batch more.
    let left = rows(&store);
    assert!(left < MAX_KEPT_REQUESTS + PRUNE_EVERY, "{left} rows");
    assert!(most < MAX_KEPT_REQUESTS + PRUNE_EVERY, "{most} rows");
    assert!(left >= MAX_KEPT_REQUESTS, "{left} rows");
    // A forgotten id is new again: it applies its step once more, then replays it.
    let again = timer("r3", 99_999);
    assert!(!store.commit(&again).unwrap().replayed);
    assert!(store.commit(&again).unwrap().replayed);
}

#[test]
fn expired_requests_read_as_forgotten_and_their_rows_go_with_the_next_batch() {
    let store = SqliteStore::open_in_memory().unwrap();
    for n in 0..10 {
        store.commit(&timer(&format!("old{n}"), n)).unwrap();
    }
    store
        .raw_execute(&format!(
            "UPDATE requests SET committed_at = committed_at - {}",
            REQUEST_RETENTION_MS + 1
        ))
        .unwrap();
    // Still within the bounds of the newest request, itself aged.
    assert!(store.request_outcome("old0").unwrap().committed().is_some());
    store.commit(&timer("new0", 100)).unwrap();
    for n in 0..10 {
        assert!(matches!(
            store.request_outcome(&format!("old{n}")).unwrap(),
            RequestOutcome::Unknown { .. }
        ));
    }
    // An expired id committed anew replaces its row.
    assert!(!store.commit(&timer("old4", 101)).unwrap().replayed);
    assert!(store.request_outcome("old4").unwrap().committed().is_some());
    for n in 1..PRUNE_EVERY {
        store.commit(&timer(&format!("new{n}"), 100 + n)).unwrap();
    }
    // The batch of the request in slot PRUNE_EVERY deleted the other nine expired rows.
    assert_eq!(rows(&store), PRUNE_EVERY + 1);
}

/// A UUID-shaped request id for request `n`: 128 random-looking bits, or (`ordered`) a
/// version 7 UUID's shape, a counter standing in for its milliseconds in the first 48 bits,
/// as the package's client makes them.
fn uuid(n: u64, ordered: bool) -> String {
    // splitmix64: fixed, so that every run writes the same pages.
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (high, low) = (mix(2 * n), mix(2 * n + 1));
    let high = if ordered {
        ((1_700_000_000_000 + n) << 16) | 0x7000 | (high & 0x0fff)
    } else {
        high
    };
    let hex = format!("{high:016x}{low:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// What one checkpoint update under a request id adds to the WAL, against the same update
/// without one (both with the change feed's row): the log's row (its one b-tree: schema_6.sql), and no deletion per commit once
/// the log is full. Printed for BENCHMARKS.md; the assertions bound it below what the
/// layout of schema 5 wrote.
#[test]
fn a_request_costs_the_wal_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut per_commit = Vec::new();
    type Ids = fn(u64) -> Option<String>;
    let cases: [(&str, u64, Ids); 5] = [
        ("without a request id", 0, |_| None),
        ("ids r0, r1, ..., log small", 0, |n| Some(format!("r{n}"))),
        ("random UUIDs, log small", 0, |n| Some(uuid(n, false))),
        ("time-ordered UUIDs, log small", 0, |n| Some(uuid(n, true))),
        ("time-ordered UUIDs, log full", MAX_KEPT_REQUESTS, |n| {
            Some(uuid(n, true))
        }),
    ];
    for (label, fill, ids) in cases {
        let path = dir.path().join(format!("{}.db", per_commit.len()));
        let store = SqliteStore::open(&path).unwrap();
        store.raw_execute("PRAGMA wal_autocheckpoint = 0").unwrap();
        for n in 0..fill {
            store.commit(&timer(&uuid(n, true), n)).unwrap();
        }
        store
            .raw_execute("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        let commits = 1000;
        for n in 0..commits {
            store.commit(&checkpoint_update(n, ids(fill + n))).unwrap();
        }
        let wal = std::fs::metadata(format!("{}-wal", path.display()))
            .unwrap()
            .len();
        let bytes = wal / commits;
        println!("checkpoint update, {label}: {bytes} WAL bytes per commit");
        per_commit.push(bytes);
    }
    let page = 4096 + 24;
    // The checkpoint's page, and the change feed's newest page (its row numbers the commit).
    assert!(per_commit[0] <= 3 * page, "{per_commit:?}");
    // Schema 5 (a table by slot and a UNIQUE index by id) wrote 2.4 pages a request with
    // the log small and 2.65 with it full; one b-tree writes its leaf, and a split of three
    // leaves and their parent every few requests.
    assert!(
        per_commit[1] <= per_commit[0] + 5 * page / 2,
        "{per_commit:?}"
    );
    assert!(
        per_commit[2] <= per_commit[0] + 5 * page / 2,
        "{per_commit:?}"
    );
    assert!(per_commit[3] <= per_commit[0] + 2 * page, "{per_commit:?}");
    assert!(
        per_commit[4] <= per_commit[0] + 9 * page / 4,
        "{per_commit:?}"
    );
}

fn checkpoint_update(n: u64, request_id: Option<String>) -> Step {
    let revision = n / 100;
    let checkpoint = runstore::Checkpoint {
        checkpoint_id: format!("cp-{:03}", n % 100),
        run_id: None,
        revision,
        state: serde_json::json!({ "step": n, "cursor": "msg_01HZX3K9Q7" }),
        updated_at: n as i64,
    };
    Step {
        request_id,
        operations: vec![Operation::CompareAndSwapCheckpoint {
            checkpoint,
            expected_revision: revision.checked_sub(1),
        }],
    }
}

/// What the log says of an id it does not hold: that it did not commit only while it has
/// forgotten nothing; past that, that it cannot tell, with the time up to which it forgot.
#[test]
fn an_id_the_log_does_not_hold_is_not_committed_only_while_nothing_was_forgotten() {
    let store = SqliteStore::open_in_memory().unwrap();
    for n in 0..MAX_KEPT_REQUESTS {
        store.commit(&timer(&format!("r{n}"), n)).unwrap();
    }
    assert_eq!(
        store.request_outcome("never-sent").unwrap(),
        RequestOutcome::NotCommitted {
            request_id: "never-sent".into()
        }
    );
    let first = store.request_outcome("r0").unwrap().committed().unwrap();
    store.commit(&timer("one-more", 0)).unwrap();
    // r0 is forgotten now: neither it nor an id never sent reads as "not committed".
    for id in ["r0", "never-sent"] {
        assert_eq!(
            store.request_outcome(id).unwrap(),
            RequestOutcome::Unknown {
                request_id: id.into(),
                forgotten_through: first.committed_at
            }
        );
    }
    // Deleted in a batch later, its time is still known.
    for n in 0..PRUNE_EVERY {
        store.commit(&timer(&format!("later{n}"), n)).unwrap();
    }
    assert!(rows(&store) < MAX_KEPT_REQUESTS + PRUNE_EVERY);
    assert!(matches!(
        store.request_outcome("r0").unwrap(),
        RequestOutcome::Unknown { forgotten_through, .. } if forgotten_through >= first.committed_at
    ));
}

/// An import replaces the log: every request the store knew before reads as forgotten, never
/// as not committed, and the file's own requests as the file says.
#[test]
fn after_an_import_the_requests_the_store_knew_read_as_forgotten() {
    let source = SqliteStore::open_in_memory().unwrap();
    source.commit(&timer("in-file", 1)).unwrap();
    let file = source.export_bytes().unwrap();
    let mut store = SqliteStore::open_in_memory().unwrap();
    store.commit(&timer("before-import", 2)).unwrap();
    let known = store
        .request_outcome("before-import")
        .unwrap()
        .committed()
        .unwrap();
    store.import_bytes(&file, None).unwrap();
    assert_eq!(
        store.request_outcome("before-import").unwrap(),
        RequestOutcome::Unknown {
            request_id: "before-import".into(),
            forgotten_through: known.committed_at
        }
    );
    assert!(store
        .request_outcome("in-file")
        .unwrap()
        .committed()
        .is_some());
}

/// Each scope keeps its own window: a full window of one scope forgets nothing of another.
#[test]
fn each_scope_keeps_its_own_window() {
    let store = SqliteStore::open_in_memory().unwrap();
    let key = |scope: &str, id: String| RequestKey {
        scope: scope.into(),
        id,
        fingerprint: "f".into(),
    };
    let op = |n: u64| timer("x", n).operations;
    store
        .commit_request(Some(&key("a", "kept".into())), &op(0))
        .unwrap();
    for n in 0..MAX_KEPT_REQUESTS + 100 {
        store
            .commit_request(Some(&key("b", format!("b{n}"))), &op(n))
            .unwrap();
    }
    assert!(store
        .request_outcome_in("a", "kept")
        .unwrap()
        .committed()
        .is_some());
    assert!(matches!(
        store.request_outcome_in("b", "b0").unwrap(),
        RequestOutcome::Unknown { .. }
    ));
    // The same id in another scope is another request.
    assert_eq!(
        store.request_outcome("kept").unwrap(),
        RequestOutcome::NotCommitted {
            request_id: "kept".into()
        }
    );
    let replay = store
        .commit_request(Some(&key("a", "kept".into())), &op(0))
        .unwrap();
    assert!(replay.replayed);
}

/// A claim's outcome is kept as its rows' keys, tokens and state, not their inputs: a read
/// fetches those again, so a replay and `request_outcome` answer the whole rows.
#[test]
fn a_claim_of_a_large_input_keeps_a_small_log_row() {
    let store = SqliteStore::open_in_memory().unwrap();
    let input: Vec<u8> = (0..1_024_000u32).map(|n| (n % 251) as u8).collect();
    store
        .insert_outbox(&[NewOutboxRow {
            dispatch_key: "big".into(),
            workflow_id: "wf".into(),
            ordinal: 1,
            activity_type: "upload".into(),
            input: input.clone(),
            visible_after: 0,
            attempt: 0,
            run_id: None,
            namespace: None,
            task_queue: None,
            node: None,
            max_attempts: None,
        }])
        .unwrap();
    let claim = Step::new()
        .request_id("claim-big")
        .with(Operation::ClaimOutbox {
            now: 10,
            limit: 1,
            filter: ClaimFilter::default(),
        });
    let first = store.commit(&claim).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    store
        .raw_execute(&format!("VACUUM INTO '{}'", copy.display()))
        .unwrap();
    let logged: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row(
            "SELECT length(outcomes) FROM requests WHERE request_id = 'claim-big'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(logged < 4096, "the log row holds {logged} bytes");
    // The replay and the recorded outcome still hand the whole row back.
    let replay = store.commit(&claim).unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.outcomes, first.outcomes);
    let OperationOutcome::ClaimOutbox { rows } = &first.outcomes[0] else {
        panic!("{first:?}");
    };
    assert_eq!(rows[0].input, input);
    let recorded = store
        .request_outcome("claim-big")
        .unwrap()
        .committed()
        .unwrap();
    assert_eq!(recorded.outcomes, first.outcomes);
}

/// Two connections to one file take turns recording requests: each numbers its request after
/// the other's (the newest slot one connection remembers is checked against the other's
/// commits), replays the other's ids, and no slot is given twice.
#[test]
fn two_connections_number_their_requests_after_each_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let first = SqliteStore::open(&path).unwrap();
    let second = SqliteStore::open(&path).unwrap();
    for n in 0..300u64 {
        let (writer, other) = if n % 3 == 0 {
            (&second, &first)
        } else {
            (&first, &second)
        };
        let step = timer(&format!("r{n}"), n);
        assert!(!writer.commit(&step).unwrap().replayed);
        assert!(other.commit(&step).unwrap().replayed, "r{n}");
    }
    let copy = dir.path().join("copy.db");
    first
        .raw_execute(&format!("VACUUM INTO '{}'", copy.display()))
        .unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let (rows, slots, span): (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT slot), max(slot) - min(slot) + 1 FROM requests",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!((rows, slots, span), (300, 300, 300));
    // The requests in commit order are the slots in order.
    let ids: Vec<String> = conn
        .prepare("SELECT request_id FROM requests ORDER BY slot")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<String> = (0..300).map(|n| format!("r{n}")).collect();
    assert_eq!(ids, expected);
}
