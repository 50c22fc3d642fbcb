//! Measures single-event appends per second on OPFS (sahpool) under the journal settings that
//! could back each durability level. A measurement, not a test: it is ignored by default.
//!
//! Run: `bash scripts/bench-durability.sh` (see docs/durability.md).
#![cfg(target_arch = "wasm32")]

use runstore::wasm::{install_pool, OpfsPool};
use runstore::{Durability, Event, EventJournal, EventKind, SqliteStore};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// Appends per measured run: `WORKFLOWS` workflows, one event per append, round-robin.
const WORKFLOWS: usize = 40;
const EVENTS_PER_WORKFLOW: usize = 25;
const RUNS: usize = 7;

/// (label, journal_mode, synchronous as SQLite reports it: 2 = FULL, 1 = NORMAL)
const CANDIDATES: &[(&str, &str, u8)] = &[
    ("WAL, locking_mode=EXCLUSIVE, synchronous=FULL", "wal", 2),
    ("WAL, locking_mode=EXCLUSIVE, synchronous=NORMAL", "wal", 1),
    (
        "TRUNCATE, locking_mode=EXCLUSIVE, synchronous=FULL",
        "truncate",
        2,
    ),
];

fn now() -> f64 {
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    scope.performance().expect("performance").now()
}

/// An event of about 200 bytes once encoded, like the benchmark workloads' payload.
fn event(n: usize) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "step-completed".into(),
        },
        recorded_at: 1_700_000_000_000 + n as i64,
        data: serde_json::json!({
            "step": n,
            "activity": "charge-card",
            "result": {"ok": true, "reference": "ch_3NqFzK2eZvKYlo2C0x7y8z9a", "amountCents": 4200},
            "attempt": 1,
            "note": "payload of about two hundred bytes"
        }),
    }
}

/// Single-event appends per second on `store`.
fn appends_per_second(store: &SqliteStore) -> f64 {
    let started = now();
    for seq in 0..EVENTS_PER_WORKFLOW {
        for wf in 0..WORKFLOWS {
            let id = format!("wf-{wf}");
            store.append(&id, &[event(seq)], seq as u64).unwrap();
        }
    }
    let seconds = (now() - started) / 1000.0;
    (WORKFLOWS * EVENTS_PER_WORKFLOW) as f64 / seconds
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One measured run of a candidate on a new database.
fn measure(pool: &OpfsPool, journal_mode: &str, synchronous: u8) -> f64 {
    pool.delete("/durability.db").unwrap();
    let store = pool.open("/durability.db", Durability::Full).unwrap();
    store
        .raw_execute(&format!(
            "PRAGMA journal_mode={journal_mode}; PRAGMA synchronous={synchronous};"
        ))
        .unwrap();
    let rate = appends_per_second(&store);
    assert_setting(&store, "journal_mode", journal_mode);
    assert_setting(&store, "synchronous", &synchronous.to_string());
    assert_setting(&store, "locking_mode", "exclusive");
    rate
}

/// Fails unless PRAGMA `name` reads `expected`: the store offers no query of its settings, so
/// a mismatch is turned into an SQL error (malformed JSON).
fn assert_setting(store: &SqliteStore, name: &str, expected: &str) {
    let check = format!(
        "SELECT json(CASE WHEN CAST((SELECT * FROM pragma_{name}) AS TEXT) = '{expected}' \
         THEN '1' ELSE 'setting differs' END);"
    );
    if let Err(error) = store.raw_execute(&check) {
        panic!("PRAGMA {name} is not {expected}: {error}");
    }
}

#[wasm_bindgen_test]
#[ignore = "a measurement; run with scripts/bench-durability.sh"]
async fn single_event_appends_per_second_by_journal_setting() {
    let pool = install_pool("durability-bench").await.unwrap();
    let appends = WORKFLOWS * EVENTS_PER_WORKFLOW;
    // Runs alternate between candidates so that a change in machine load spreads over all.
    let mut rates = vec![Vec::new(); CANDIDATES.len()];
    for _ in 0..RUNS {
        for (rates, (_, journal_mode, synchronous)) in rates.iter_mut().zip(CANDIDATES) {
            rates.push(measure(&pool, journal_mode, *synchronous));
        }
    }
    console_log!("single-event appends on OPFS (sahpool), {appends} per run, median of {RUNS}:");
    for (rates, (label, ..)) in rates.into_iter().zip(CANDIDATES) {
        let shown: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
        console_log!(
            "  {label}: {:.0}/s (runs: {})",
            median(rates),
            shown.join(", ")
        );
    }
    let memory = runstore::wasm::open_in_memory().unwrap();
    console_log!("  memory (reference): {:.0}/s", appends_per_second(&memory));
    pool.delete("/durability.db").unwrap();
    pool.close().await.unwrap();
}
