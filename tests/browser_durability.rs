//! Measures single-event appends per second on OPFS (sahpool) under the journal settings that
//! could back each durability level, and at larger page sizes, with the time each commit spends
//! in `FileSystemSyncAccessHandle.write()` and `flush()` (wrapped on the prototype with
//! timers): where an engine's appends are slow, these say whether its flush or its writes cost
//! it. A measurement, not a test: it is ignored by default.
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

/// (label, journal_mode, synchronous as SQLite reports it: 2 = FULL, 1 = NORMAL, page size)
const CANDIDATES: &[(&str, &str, u8, u32)] = &[
    (
        "WAL, locking_mode=EXCLUSIVE, synchronous=FULL",
        "wal",
        2,
        4096,
    ),
    (
        "WAL, locking_mode=EXCLUSIVE, synchronous=NORMAL",
        "wal",
        1,
        4096,
    ),
    (
        "TRUNCATE, locking_mode=EXCLUSIVE, synchronous=FULL",
        "truncate",
        2,
        4096,
    ),
    ("WAL, synchronous=FULL, 8 KiB pages", "wal", 2, 8192),
    ("WAL, synchronous=FULL, 16 KiB pages", "wal", 2, 16384),
];

/// Wraps `write` and `flush` of `FileSystemSyncAccessHandle.prototype` once with counters and
/// timers; returns [writes, ms in writes, flushes, ms in flushes] so far.
fn handle_costs() -> [f64; 4] {
    let totals = js_sys::Function::new_no_args(
        "const proto = FileSystemSyncAccessHandle.prototype;
         const stats = (self.runstoreHandleCosts ??= { writes: 0, writeMs: 0, flushes: 0, flushMs: 0 });
         for (const [name, count, ms] of [['write', 'writes', 'writeMs'], ['flush', 'flushes', 'flushMs']]) {
           if (proto[name].runstoreTimed) continue;
           const original = proto[name];
           const timed = function (...args) {
             const started = performance.now();
             try { return original.apply(this, args); }
             finally { stats[count]++; stats[ms] += performance.now() - started; }
           };
           timed.runstoreTimed = true;
           proto[name] = timed;
         }
         return [stats.writes, stats.writeMs, stats.flushes, stats.flushMs];",
    )
    .call0(&wasm_bindgen::JsValue::NULL)
    .expect("timing write and flush");
    let values: Vec<f64> = js_sys::Array::from(&totals)
        .iter()
        .map(|v| v.as_f64().unwrap_or(0.0))
        .collect();
    [values[0], values[1], values[2], values[3]]
}

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

/// One measured run of a candidate on a new database: appends per second, and per commit the
/// writes, ms in writes, flushes and ms in flushes.
fn measure(
    pool: &OpfsPool,
    journal_mode: &str,
    synchronous: u8,
    page_size: u32,
) -> (f64, [f64; 4]) {
    pool.delete("/durability.db").unwrap();
    let store = pool.open("/durability.db", Durability::Full).unwrap();
    if page_size != 4096 {
        // The page size of a database in WAL mode changes only through a rollback journal.
        store
            .raw_execute(&format!(
                "PRAGMA journal_mode=TRUNCATE; PRAGMA page_size={page_size}; VACUUM;"
            ))
            .unwrap();
    }
    store
        .raw_execute(&format!(
            "PRAGMA journal_mode={journal_mode}; PRAGMA synchronous={synchronous};"
        ))
        .unwrap();
    let before = handle_costs();
    let rate = appends_per_second(&store);
    let after = handle_costs();
    let commits = (WORKFLOWS * EVENTS_PER_WORKFLOW) as f64;
    let per_commit = std::array::from_fn(|i| (after[i] - before[i]) / commits);
    assert_setting(&store, "journal_mode", journal_mode);
    assert_setting(&store, "synchronous", &synchronous.to_string());
    assert_setting(&store, "locking_mode", "exclusive");
    assert_setting(&store, "page_size", &page_size.to_string());
    (rate, per_commit)
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
    let mut costs = vec![[0.0; 4]; CANDIDATES.len()];
    for _ in 0..RUNS {
        for ((rates, costs), (_, journal_mode, synchronous, page_size)) in
            rates.iter_mut().zip(costs.iter_mut()).zip(CANDIDATES)
        {
            let (rate, per_commit) = measure(&pool, journal_mode, *synchronous, *page_size);
            rates.push(rate);
            for (total, value) in costs.iter_mut().zip(per_commit) {
                *total += value / RUNS as f64;
            }
        }
    }
    console_log!("single-event appends on OPFS (sahpool), {appends} per run, median of {RUNS}:");
    for ((rates, costs), (label, ..)) in rates.into_iter().zip(costs).zip(CANDIDATES) {
        let shown: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
        console_log!(
            "  {label}: {:.0}/s (runs: {}); per commit: {:.1} writes taking {:.3} ms, {:.2} flushes taking {:.3} ms",
            median(rates),
            shown.join(", "),
            costs[0],
            costs[1],
            costs[2],
            costs[3]
        );
    }
    let memory = runstore::wasm::open_in_memory().unwrap();
    console_log!("  memory (reference): {:.0}/s", appends_per_second(&memory));
    pool.delete("/durability.db").unwrap();
    pool.close().await.unwrap();
}
