//! The store on a real PostgreSQL: the conformance suite, each location a fresh schema, and
//! races between many connections (appends to the same workflows, claims of the same outbox,
//! steps under the same request id).
//!
//! Run by scripts/test-postgres.sh, which starts a throwaway cluster and sets
//! `RUNSTORE_PG_URL` (`cargo test --features postgres --test postgres`).
#![cfg(all(feature = "postgres", not(target_arch = "wasm32")))]

#[macro_use]
mod conformance;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use conformance::{Backend, Location};
use runstore::*;
use serde_json::json;

/// The store the conformance cases run on.
type Store = PgStore;

fn url() -> String {
    std::env::var("RUNSTORE_PG_URL")
        .expect("RUNSTORE_PG_URL names the test database; scripts/test-postgres.sh sets it")
}

/// A new schema name, unique within the cluster's lifetime.
fn fresh_schema(prefix: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{}_{n}", std::process::id())
}

fn open(schema: &str, pool_size: u32) -> PgStore {
    let options = PgOptions {
        pool_size,
        schema: Some(schema.to_owned()),
        ..PgOptions::default()
    };
    PgStore::connect_with(&url(), &options).expect("connect to the test PostgreSQL")
}

struct Postgres;

struct SchemaLocation {
    schema: String,
}

impl Backend for Postgres {
    fn fresh(&self) -> Box<dyn Location> {
        Box::new(SchemaLocation {
            schema: fresh_schema("conformance"),
        })
    }
    fn name(&self) -> &'static str {
        "postgresql"
    }
    fn is_sqlite(&self) -> bool {
        false
    }
}

impl Location for SchemaLocation {
    fn open(&self) -> PgStore {
        open(&self.schema, 2)
    }
    fn persistent(&self) -> bool {
        true
    }
    fn open_second(&self) -> Option<PgStore> {
        Some(self.open())
    }
}

macro_rules! on_postgres {
    ($($area:ident),*) => {
        mod conformance_on_postgres {
            $(#[test] fn $area() { super::conformance::run(&super::Postgres, super::conformance::$area::CASES) })*
        }
    };
}

each_area!(on_postgres);

const THREADS: usize = 8;

fn custom(writer: usize, n: usize) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "wrote".into(),
        },
        recorded_at: n as i64,
        data: json!({"writer": writer, "n": n}),
    }
}

/// Every thread appends to the same few workflows on its own connection, each append under
/// the head it last read, reading again after a SEQUENCE_CONFLICT. Every acknowledged append
/// is in the journal exactly once, and every head has no gap.
#[test]
fn racing_appends_lose_nothing_and_leave_no_gap() {
    const WORKFLOWS: usize = 4;
    const APPENDS: usize = 60;
    let schema = fresh_schema("race_append");
    drop(open(&schema, 1));
    let start = Arc::new(Barrier::new(THREADS));
    let writers: Vec<_> = (0..THREADS)
        .map(|writer| {
            let (schema, start) = (schema.clone(), start.clone());
            thread::spawn(move || {
                let store = open(&schema, 1);
                let mut conflicts = 0;
                start.wait();
                let mut acknowledged = Vec::new();
                for n in 0..APPENDS {
                    let workflow = format!("wf-{}", (writer + n) % WORKFLOWS);
                    loop {
                        let head = store.head(&workflow).unwrap();
                        match store.append(&workflow, &[custom(writer, n)], head) {
                            Ok(new_head) => {
                                assert_eq!(new_head, head + 1);
                                acknowledged.push((workflow, new_head));
                                break;
                            }
                            Err(Error::SequenceConflict { actual, .. }) => {
                                assert!(actual > head, "the head only moves forward");
                                conflicts += 1;
                            }
                            Err(other) => panic!("append failed: {other}"),
                        }
                    }
                }
                (acknowledged, conflicts)
            })
        })
        .collect();
    let mut acknowledged = BTreeMap::new();
    let mut conflicts = 0;
    for (writer, handle) in writers.into_iter().enumerate() {
        let (appends, lost) = handle.join().unwrap();
        conflicts += lost;
        for (n, (workflow, seq)) in appends.into_iter().enumerate() {
            let previous = acknowledged.insert((workflow, seq), (writer, n));
            assert_eq!(previous, None, "two appends acknowledged the same seq");
        }
    }
    println!(
        "{} appends, {conflicts} sequence conflicts",
        acknowledged.len()
    );
    assert!(
        conflicts > 0,
        "the writers never raced; the test proves nothing"
    );
    let store = open(&schema, 1);
    let mut total = 0;
    for w in 0..WORKFLOWS {
        let workflow = format!("wf-{w}");
        let events = store
            .read_history(&workflow, &PageRequest::first(MAX_PAGE_LIMIT))
            .unwrap()
            .items;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (1..=events.len() as u64).collect::<Vec<_>>(),
            "gapless"
        );
        assert_eq!(store.head(&workflow).unwrap(), events.len() as u64);
        for event in &events {
            let writer = event.event.data["writer"].as_u64().unwrap() as usize;
            let n = event.event.data["n"].as_u64().unwrap() as usize;
            assert_eq!(
                acknowledged.get(&(workflow.clone(), event.seq)),
                Some(&(writer, n)),
                "event {} of {workflow} is the append acknowledged for that seq",
                event.seq
            );
        }
        total += events.len();
    }
    assert_eq!(total, THREADS * APPENDS);
}

/// Every thread claims from the same outbox on its own connection until it is empty and
/// completes what it claimed with its token. No row is claimed twice; every row is done.
#[test]
fn racing_claims_take_every_row_exactly_once() {
    const ROWS: usize = 1_500;
    let schema = fresh_schema("race_claim");
    let store = open(&schema, 1);
    let rows: Vec<NewOutboxRow> = (0..ROWS)
        .map(|i| NewOutboxRow {
            dispatch_key: format!("key-{i:05}"),
            workflow_id: format!("wf-{}", i % 37),
            ordinal: i as u64,
            activity_type: "send".into(),
            input: vec![1, 2, 3],
            visible_after: (i % 50) as i64,
            attempt: 0,
            run_id: None,
            namespace: Some("shop".into()),
            task_queue: None,
            node: None,
            max_attempts: None,
        })
        .collect();
    for chunk in rows.chunks(500) {
        assert_eq!(store.insert_outbox(chunk).unwrap(), chunk.len() as u64);
    }
    let start = Arc::new(Barrier::new(THREADS));
    let claimers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (schema, start) = (schema.clone(), start.clone());
            thread::spawn(move || {
                let store = open(&schema, 1);
                start.wait();
                let mut claimed = Vec::new();
                loop {
                    let batch = store
                        .claim_outbox(100, 20, &ClaimFilter::default())
                        .unwrap();
                    if batch.is_empty() {
                        return claimed;
                    }
                    let claims: Vec<OutboxClaim> = batch
                        .iter()
                        .map(|row| OutboxClaim {
                            dispatch_key: row.dispatch_key.clone(),
                            claim_token: row.claim_token,
                        })
                        .collect();
                    store.complete_outbox_batch(&claims).unwrap();
                    claimed.extend(claims);
                }
            })
        })
        .collect();
    let mut keys = BTreeSet::new();
    let mut tokens_per_claimer = Vec::new();
    for handle in claimers {
        let claimed = handle.join().unwrap();
        tokens_per_claimer.push(claimed.len());
        for claim in claimed {
            assert!(
                keys.insert(claim.dispatch_key.clone()),
                "{} claimed twice",
                claim.dispatch_key
            );
        }
    }
    println!("rows claimed per connection: {tokens_per_claimer:?}");
    assert_eq!(keys.len(), ROWS);
    assert!(
        tokens_per_claimer.iter().filter(|&&n| n > 0).count() > 1,
        "one connection claimed everything; the test proves nothing"
    );
    let done = store
        .list_outbox(
            Some(OutboxStatus::Done),
            &PageRequest::first(MAX_PAGE_LIMIT),
        )
        .unwrap()
        .items;
    assert_eq!(done.len(), ROWS);
    let pending = store.list_outbox(Some(OutboxStatus::Pending), &PageRequest::default());
    assert_eq!(pending.unwrap().items, []);
}

/// The same step under one request id, sent by every thread at once (as retries from several
/// places would be): it is applied once, every other call gets its recorded outcome.
#[test]
fn racing_retries_of_one_step_apply_it_once() {
    let schema = fresh_schema("race_step");
    let store = open(&schema, 1);
    store.append("wf", &[custom(0, 0)], 0).unwrap();
    let step = Step::new().request_id("req-1").with(Operation::Append {
        workflow_id: "wf".into(),
        events: vec![custom(1, 1)],
        expected_seq: 1,
        outbox: vec![],
    });
    let start = Arc::new(Barrier::new(THREADS));
    let senders: Vec<_> = (0..THREADS)
        .map(|_| {
            let (schema, start, step) = (schema.clone(), start.clone(), step.clone());
            thread::spawn(move || {
                let store = open(&schema, 1);
                start.wait();
                store.commit(&step).unwrap()
            })
        })
        .collect();
    let outcomes: Vec<StepOutcome> = senders.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        outcomes.iter().filter(|o| !o.replayed).count(),
        1,
        "{outcomes:?}"
    );
    for outcome in &outcomes {
        assert_eq!(outcome.outcomes, [OperationOutcome::Append { head: 2 }]);
    }
    assert_eq!(store.head("wf").unwrap(), 2);
    let recorded = store.request_outcome("req-1").unwrap().committed().unwrap();
    assert_eq!(recorded.outcomes, [OperationOutcome::Append { head: 2 }]);
}

/// Steps that append and record the change in one feed under a request id (a push, whose
/// feed entry is written with its request's record in one statement), sent by every thread at
/// once while a reader follows the feed: the positions are 1 to n, each once; the reader only
/// ever sees positions without a gap below them (they commit in order); and each step sent
/// again replays the position it got, also as its request's recorded outcome.
#[test]
fn racing_pushes_to_one_feed_take_gapless_positions_in_commit_order() {
    const PUSHES: usize = 25;
    let total = (THREADS * PUSHES) as u64;
    let schema = fresh_schema("race_feed");
    let store = Arc::new(open(&schema, 2));
    let push = |writer: usize, n: usize| {
        let workflow = format!("wf-{writer}");
        Step::new()
            .request_id(format!("push-{writer}-{n}"))
            .with(Operation::Append {
                workflow_id: workflow.clone(),
                events: vec![custom(writer, n)],
                expected_seq: n as u64,
                outbox: vec![],
            })
            .with(Operation::RecordChange {
                feed: "feed".into(),
                workflow_id: workflow,
                base: n as u64,
                head: n as u64 + 1,
            })
    };
    let reader = {
        let store = store.clone();
        thread::spawn(move || {
            let bound = PageBound {
                limit: 50,
                max_bytes: u64::MAX,
            };
            let mut after = 0;
            while after < total {
                let page = store.read_feed("feed", after, bound, false).unwrap();
                for entry in page.entries {
                    assert_eq!(
                        entry.position,
                        after + 1,
                        "a position seen before a lower one"
                    );
                    after = entry.position;
                }
            }
        })
    };
    let start = Arc::new(Barrier::new(THREADS));
    let writers: Vec<_> = (0..THREADS)
        .map(|writer| {
            let (schema, start) = (schema.clone(), start.clone());
            thread::spawn(move || {
                let store = open(&schema, 1);
                start.wait();
                (0..PUSHES)
                    .map(|n| (n, store.commit(&push(writer, n)).unwrap()))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut positions = BTreeSet::new();
    for (writer, handle) in writers.into_iter().enumerate() {
        for (n, outcome) in handle.join().unwrap() {
            assert!(!outcome.replayed);
            let [OperationOutcome::Append { head }, OperationOutcome::RecordChange { position }] =
                outcome.outcomes[..]
            else {
                panic!("{outcome:?}");
            };
            assert_eq!(head, n as u64 + 1);
            assert!(
                positions.insert(position),
                "position {position} taken twice"
            );
            if n % 7 == 0 {
                let again = store.commit(&push(writer, n)).unwrap();
                assert!(again.replayed);
                assert_eq!(again.outcomes, outcome.outcomes);
                let recorded = store
                    .request_outcome(&format!("push-{writer}-{n}"))
                    .unwrap()
                    .committed()
                    .unwrap();
                assert_eq!(recorded.outcomes, outcome.outcomes);
            }
        }
    }
    reader.join().unwrap();
    assert_eq!(positions, (1..=total).collect::<BTreeSet<_>>());
}

/// One store serves many threads: it can be shared in an `Arc` (checked when compiling).
#[test]
fn a_store_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<PgStore>();
}

/// The decode check pages through the journal: an undecodable event past the first page is
/// found, and the first one in (workflow id, seq) order is named.
#[test]
fn the_decode_check_pages_through_a_large_journal() {
    let store = open(&fresh_schema("decode"), 1);
    let events: Vec<Event> = (0..1_500).map(|n| custom(0, n)).collect();
    store.append("a", &events, 0).unwrap();
    store.append("b", &events[..10], 0).unwrap();
    assert_eq!(store.find_undecodable_event().unwrap(), None);
    // Version 9 of the encoding: written by a newer store.
    store
        .raw_execute(
            "UPDATE events SET event = '\\x09'::bytea || substr(event, 2)
             WHERE (workflow_id = 'a' AND seq = 1201) OR (workflow_id = 'b' AND seq = 3)",
        )
        .unwrap();
    let found = store
        .find_undecodable_event()
        .unwrap()
        .expect("an undecodable event");
    assert_eq!((found.workflow_id.as_str(), found.seq), ("a", 1201));
    assert!(found.reason.contains("version 9"), "{}", found.reason);
}

/// A statement failing inside an append's transaction (here a trigger refusing the outbox
/// row, after the events were written) rolls back the whole append.
#[test]
fn a_failure_inside_the_transaction_rolls_back_the_whole_append() {
    let store = open(&fresh_schema("rollback"), 1);
    store.append("wf", &[custom(0, 0)], 0).unwrap();
    store
        .raw_execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
               AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$;
             CREATE TRIGGER refuse_outbox BEFORE INSERT ON outbox
               FOR EACH ROW EXECUTE FUNCTION refuse();",
        )
        .unwrap();
    let row = NewOutboxRow {
        dispatch_key: "wf:1".into(),
        workflow_id: "wf".into(),
        ordinal: 1,
        activity_type: "send".into(),
        input: vec![1],
        visible_after: 0,
        attempt: 0,
        run_id: None,
        namespace: None,
        task_queue: None,
        node: None,
        max_attempts: None,
    };
    let error = store
        .append_with_outbox(
            "wf",
            &[custom(0, 1), custom(0, 2)],
            1,
            std::slice::from_ref(&row),
        )
        .unwrap_err();
    assert_eq!(error.code(), "BACKEND", "{error}");
    assert!(error.to_string().contains("refused by test"), "{error}");
    assert_eq!(store.head("wf").unwrap(), 1);
    let history = store.read_history("wf", &PageRequest::default()).unwrap();
    assert_eq!(history.items.len(), 1);
    assert_eq!(store.outbox_row_state("wf:1").unwrap(), None);
    store
        .raw_execute("DROP TRIGGER refuse_outbox ON outbox")
        .unwrap();
    assert_eq!(
        store
            .append_with_outbox("wf", &[custom(0, 1)], 1, &[row])
            .unwrap(),
        2
    );
}

/// A database written by a newer version is refused and left as it was.
#[test]
fn a_newer_schema_is_refused_untouched() {
    let schema = fresh_schema("newer");
    let store = open(&schema, 1);
    store
        .raw_execute(&format!(
            "UPDATE runstore_schema SET version = {}",
            PG_SCHEMA_VERSION + 1
        ))
        .unwrap();
    let options = PgOptions {
        schema: Some(schema.clone()),
        ..PgOptions::default()
    };
    let error = PgStore::connect_with(&url(), &options).unwrap_err();
    assert_eq!(error.code(), "SCHEMA_TOO_NEW", "{error}");
    assert!(matches!(error, Error::SchemaTooNew { found, supported }
        if found == PG_SCHEMA_VERSION + 1 && supported == PG_SCHEMA_VERSION));
}

/// Connection settings the store cannot use are INVALID_INPUT before anything connects.
#[test]
fn bad_connection_settings_are_invalid_input() {
    let bad_schema = PgOptions {
        schema: Some("Robert'); DROP TABLE students;--".into()),
        ..PgOptions::default()
    };
    let error = PgStore::connect_with(&url(), &bad_schema).unwrap_err();
    assert_eq!(error.code(), "INVALID_INPUT", "{error}");
    let no_pool = PgOptions {
        pool_size: 0,
        ..PgOptions::default()
    };
    assert_eq!(
        PgStore::connect_with(&url(), &no_pool).unwrap_err().code(),
        "INVALID_INPUT"
    );
    assert_eq!(
        PgStore::connect("postgresql://[::1").unwrap_err().code(),
        "INVALID_INPUT"
    );
}

/// No server where the URL points: UNAVAILABLE once the connect timeout has passed, not a hang.
#[test]
fn no_server_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let options = PgOptions {
        connect_timeout: std::time::Duration::from_millis(500),
        ..PgOptions::default()
    };
    let url = format!(
        "host={} port=1 user=nobody dbname=none",
        dir.path().display()
    );
    let error = PgStore::connect_with(&url, &options).unwrap_err();
    assert_eq!(error.code(), "UNAVAILABLE", "{error}");
}
