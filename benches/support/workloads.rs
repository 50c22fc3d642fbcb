//! The benchmark workloads of SPEC section 5, run through the store and, on a second database
//! set up the same way, as the same SQL through plain rusqlite with prepared statements. Shared
//! by the native benchmark (benches/workloads.rs) and the browser one (tests/browser_bench.rs).

use runstore::*;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::json;

/// Opens a fresh store for a workload; `name` is unique per call.
pub type OpenStore<'a> = &'a dyn Fn(&str) -> SqliteStore;
/// A monotonic clock in milliseconds.
pub type Clock<'a> = &'a dyn Fn() -> f64;

/// One workload's figures: the same `count` operations through the store and as plain SQL.
pub struct Figure {
    pub workload: &'static str,
    pub unit: &'static str,
    pub count: u64,
    pub store_ms: f64,
    pub raw_ms: f64,
}

impl Figure {
    pub fn store_per_sec(&self) -> f64 {
        self.count as f64 / (self.store_ms / 1000.0)
    }
    pub fn raw_per_sec(&self) -> f64 {
        self.count as f64 / (self.raw_ms / 1000.0)
    }
    /// Store throughput as a fraction of the plain-SQL throughput (1.0 = no overhead).
    pub fn ratio(&self) -> f64 {
        self.raw_ms / self.store_ms
    }
}

/// Prints figures as a Markdown table.
pub fn table(title: &str, figures: &[Figure]) -> String {
    let mut out = format!(
        "\n{title}\n\n| workload | unit | count | store, unit/s | plain SQL, unit/s | store / plain |\n|---|---|---:|---:|---:|---:|\n"
    );
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.2} |\n",
            f.workload,
            f.unit,
            f.count,
            f.store_per_sec(),
            f.raw_per_sec(),
            f.ratio()
        ));
    }
    out
}

/// A journal event of about 200 bytes once encoded.
pub fn payload_event(workflow: usize, n: usize) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "activityCompleted".into(),
        },
        recorded_at: 1_700_000_000_000 + n as i64,
        data: json!({
            "activity": "charge-card",
            "attempt": 1,
            "workflow": workflow,
            "step": n,
            "result": {"ok": true, "amount": 1999, "currency": "EUR", "ref": "ch_3NqL8XKf2b9sQz"}
        }),
    }
}

pub fn encoded_payload(workflow: usize, n: usize) -> Vec<u8> {
    let mut blob = vec![EVENT_VERSION as u8];
    serde_json::to_writer(&mut blob, &payload_event(workflow, n)).unwrap();
    blob
}

pub fn wf(i: usize) -> String {
    format!("workflow-{i:04}")
}

fn timed(clock: Clock, f: impl FnOnce()) -> f64 {
    let start = clock();
    f();
    clock() - start
}

/// Runs W1 to W5; `open` gives fresh stores, the plain-SQL side takes their connections.
pub fn run_all(open: OpenStore, clock: Clock) -> Vec<Figure> {
    vec![
        w1_single_appends(open, clock),
        w2_batched_appends(open, clock),
        w3_history_reads(open, clock),
        w3_history_reads_beside_decoding(open, clock),
        w3_history_reads_as_json(open, clock),
        w4_outbox(open, clock),
        w5_checkpoint_cas(open, clock),
    ]
}

/// How the plain-SQL journal keeps the `workflows` row.
#[derive(Clone, Copy)]
pub enum Projection {
    /// As the store does: the whole row when a workflow is new, otherwise only its head and
    /// time (a custom event changes nothing else).
    HeadOnly,
    /// The whole row rewritten at every append, status and type columns included.
    #[allow(dead_code)] // measured by the native benchmark only
    WholeRow,
}

/// The journal's SQL, as the store runs it for one append.
pub struct RawJournal<'c> {
    pub conn: &'c Connection,
    pub projection: Projection,
}

impl RawJournal<'_> {
    pub fn append(&self, workflow_id: &str, blobs: &[Vec<u8>], expected: i64) {
        let tx = rusqlite::Transaction::new_unchecked(self.conn, TransactionBehavior::Immediate)
            .unwrap();
        let head: Option<i64> = tx
            .prepare_cached(
                "SELECT workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at FROM workflows WHERE workflow_id = ?1",
            )
            .unwrap()
            .query_row([workflow_id], |row| row.get(1))
            .optional()
            .unwrap();
        assert_eq!(head.unwrap_or(0), expected);
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO events (workflow_id, seq, kind, recorded_at, event) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        let mut seq = expected;
        for blob in blobs {
            seq += 1;
            insert
                .execute(params![workflow_id, seq, "activityCompleted", seq, blob])
                .unwrap();
        }
        drop(insert);
        if expected > 0 && matches!(self.projection, Projection::HeadOnly) {
            tx.prepare_cached(
                "UPDATE workflows SET head = ?2, updated_at = ?3 WHERE workflow_id = ?1",
            )
            .unwrap()
            .execute(params![workflow_id, seq, seq])
            .unwrap();
            tx.commit().unwrap();
            return;
        }
        tx.prepare_cached(
            "INSERT INTO workflows (workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (workflow_id) DO UPDATE SET head = excluded.head, status = excluded.status,
               workflow_type = excluded.workflow_type, run_id = excluded.run_id,
               started_at = excluded.started_at, closed_at = excluded.closed_at,
               updated_at = excluded.updated_at",
        )
        .unwrap()
        .execute(params![
            workflow_id,
            seq,
            "pending",
            None::<String>,
            None::<String>,
            None::<i64>,
            None::<i64>,
            seq
        ])
        .unwrap();
        tx.commit().unwrap();
    }
}

/// W1: 100 workflows x 50 events, one event per append, each its own transaction.
pub fn w1_single_appends(open: OpenStore, clock: Clock) -> Figure {
    const WORKFLOWS: usize = 100;
    const EVENTS: usize = 50;
    let store = open("w1-store");
    let store_ms = timed(clock, || {
        for n in 0..EVENTS {
            for w in 0..WORKFLOWS {
                store
                    .append(&wf(w), &[payload_event(w, n)], n as u64)
                    .unwrap();
            }
        }
    });
    let conn = open("w1-raw").into_connection();
    let raw = RawJournal {
        conn: &conn,
        projection: Projection::HeadOnly,
    };
    let raw_ms = timed(clock, || {
        for n in 0..EVENTS {
            for w in 0..WORKFLOWS {
                raw.append(&wf(w), &[encoded_payload(w, n)], n as i64);
            }
        }
    });
    Figure {
        workload: "W1 single appends",
        unit: "appends",
        count: (WORKFLOWS * EVENTS) as u64,
        store_ms,
        raw_ms,
    }
}

pub const W2_WORKFLOWS: usize = 200;
pub const W2_EVENTS: usize = 500;
const W2_BATCH: usize = 100;

pub fn w2_store(store: &SqliteStore) {
    for w in 0..W2_WORKFLOWS {
        for start in (0..W2_EVENTS).step_by(W2_BATCH) {
            let batch: Vec<Event> = (start..start + W2_BATCH)
                .map(|n| payload_event(w, n))
                .collect();
            store.append(&wf(w), &batch, start as u64).unwrap();
        }
    }
}

fn w2_raw(conn: &Connection) {
    let raw = RawJournal {
        conn,
        projection: Projection::HeadOnly,
    };
    for w in 0..W2_WORKFLOWS {
        for start in (0..W2_EVENTS).step_by(W2_BATCH) {
            let batch: Vec<Vec<u8>> = (start..start + W2_BATCH)
                .map(|n| encoded_payload(w, n))
                .collect();
            raw.append(&wf(w), &batch, start as i64);
        }
    }
}

/// W2: 200 workflows x 500 events, 100 events per append.
pub fn w2_batched_appends(open: OpenStore, clock: Clock) -> Figure {
    let store = open("w2-store");
    let store_ms = timed(clock, || w2_store(&store));
    let conn = open("w2-raw").into_connection();
    let raw_ms = timed(clock, || w2_raw(&conn));
    Figure {
        workload: "W2 batched appends",
        unit: "events",
        count: (W2_WORKFLOWS * W2_EVENTS) as u64,
        store_ms,
        raw_ms,
    }
}

/// W3: read all 500 events of each of the 200 workflows written as in W2, through the typed
/// `read_history` (every event decoded); the plain-SQL side reads the same rows as bytes.
pub fn w3_history_reads(open: OpenStore, clock: Clock) -> Figure {
    w3("W3 history reads", open, clock, read_typed, RawRead::Bytes)
}

/// W3 as above, the plain-SQL side also decoding each event into an [`Event`], as an app on
/// plain SQL would to use it: the store's own cost beside the decode.
pub fn w3_history_reads_beside_decoding(open: OpenStore, clock: Clock) -> Figure {
    w3(
        "W3 history reads, plain SQL decoding too",
        open,
        clock,
        read_typed,
        RawRead::Decoded,
    )
}

/// W3 through `read_history_json`: each workflow's page as JSON text, the form a JS caller
/// gets it in; the plain-SQL side reads the same rows as bytes.
pub fn w3_history_reads_as_json(open: OpenStore, clock: Clock) -> Figure {
    w3(
        "W3 history reads, JSON text",
        open,
        clock,
        |store, workflow| {
            let text = store
                .read_history_json(workflow, 0, &PageRequest::default())
                .unwrap();
            assert!(text.ends_with(r#"],"nextCursor":null}"#));
        },
        RawRead::Bytes,
    )
}

fn read_typed(store: &SqliteStore, workflow: &str) {
    let page = store
        .read_history(workflow, &PageRequest::default())
        .unwrap();
    assert_eq!(page.items.len(), W2_EVENTS);
}

/// What the plain-SQL side of a W3 does with each row.
#[derive(Clone, Copy)]
enum RawRead {
    Bytes,
    Decoded,
}

fn w3(
    workload: &'static str,
    open: OpenStore,
    clock: Clock,
    read: fn(&SqliteStore, &str),
    raw_read: RawRead,
) -> Figure {
    // One database per variant: on a file, a variant run after another would find its events.
    let name = workload.to_lowercase().replace([' ', ','], "-");
    let store = open(&format!("{name}-store"));
    w2_store(&store);
    let store_ms = timed(clock, || {
        for w in 0..W2_WORKFLOWS {
            read(&store, &wf(w));
        }
    });
    let conn = open(&format!("{name}-raw")).into_connection();
    w2_raw(&conn);
    let raw_ms = timed(clock, || w3_raw(&conn, raw_read));
    Figure {
        workload,
        unit: "events",
        count: (W2_WORKFLOWS * W2_EVENTS) as u64,
        store_ms,
        raw_ms,
    }
}

fn w3_raw(conn: &Connection, raw_read: RawRead) {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, event FROM events WHERE workflow_id = ?1 AND seq >= ?2 ORDER BY seq",
        )
        .unwrap();
    for w in 0..W2_WORKFLOWS {
        let rows: Vec<(i64, Vec<u8>)> = stmt
            .query_map(params![wf(w), 0], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows.len(), W2_EVENTS);
        if let RawRead::Decoded = raw_read {
            for (_, blob) in &rows {
                let event: Event = serde_json::from_slice(&blob[1..]).unwrap();
                std::hint::black_box(event);
            }
        }
    }
}

const W4_ROWS: usize = 10_000;
const W4_BATCH: usize = 100;

fn outbox_row(i: usize) -> NewOutboxRow {
    NewOutboxRow {
        dispatch_key: format!("{}:{i:05}", wf(i % 100)),
        workflow_id: wf(i % 100),
        ordinal: i as u64,
        activity_type: "charge-card".into(),
        input:
            br#"{"amount":1999,"currency":"EUR","card":"tok_visa_4242","customer":"cus_9s8d7f"}"#
                .to_vec(),
        visible_after: (i % 1000) as i64,
        attempt: 0,
        run_id: Some("run-1".into()),
        namespace: Some("default".into()),
        task_queue: None,
        node: None,
        max_attempts: None,
    }
}

/// W4: insert 10,000 rows (100 per transaction), then claim 100 at a time and complete each
/// claimed batch in one transaction until none are left. Counts rows.
pub fn w4_outbox(open: OpenStore, clock: Clock) -> Figure {
    const NOW: i64 = 1_000_000;
    let store = open("w4-store");
    let store_ms = timed(clock, || {
        for start in (0..W4_ROWS).step_by(W4_BATCH) {
            let rows: Vec<NewOutboxRow> = (start..start + W4_BATCH).map(outbox_row).collect();
            store.insert_outbox(&rows).unwrap();
        }
        let mut done = 0;
        loop {
            let claimed = store
                .claim_outbox(NOW, W4_BATCH as u32, &ClaimFilter::default())
                .unwrap();
            if claimed.is_empty() {
                break;
            }
            let claims: Vec<OutboxClaim> = claimed
                .into_iter()
                .map(|r| OutboxClaim {
                    dispatch_key: r.dispatch_key,
                    claim_token: r.claim_token,
                })
                .collect();
            done += claims.len();
            store.complete_outbox_batch(&claims).unwrap();
        }
        assert_eq!(done, W4_ROWS);
    });
    let conn = open("w4-raw").into_connection();
    let raw_ms = timed(clock, || w4_raw(&conn, NOW));
    Figure {
        workload: "W4 outbox",
        unit: "rows",
        count: W4_ROWS as u64,
        store_ms,
        raw_ms,
    }
}

fn w4_raw(conn: &Connection, now: i64) {
    let immediate =
        || rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate).unwrap();
    for start in (0..W4_ROWS).step_by(W4_BATCH) {
        let tx = immediate();
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
                   status, attempt, visible_after, run_id, namespace, task_queue, node, max_attempts)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT (dispatch_key) DO NOTHING",
            )
            .unwrap();
        for row in (start..start + W4_BATCH).map(outbox_row) {
            insert
                .execute(params![
                    row.dispatch_key,
                    row.workflow_id,
                    row.ordinal as i64,
                    row.activity_type,
                    row.input,
                    row.attempt,
                    row.visible_after,
                    row.run_id,
                    row.namespace,
                    row.task_queue,
                    row.node,
                    10
                ])
                .unwrap();
        }
        drop(insert);
        tx.commit().unwrap();
    }
    let mut done = 0;
    loop {
        // The claim as the store makes it: a fresh token from the store-wide counter.
        let tx = immediate();
        let token: i64 = tx
            .prepare_cached("SELECT last_token FROM outbox_claim_counter WHERE id = 1")
            .unwrap()
            .query_row([], |row| row.get::<_, i64>(0))
            .unwrap()
            + 1;
        let claims: Vec<(String, i64)> = tx
            .prepare_cached(
                "UPDATE outbox SET status = 'claimed', claimed_at = ?1, claim_token = ?7
                 WHERE dispatch_key IN (
                   SELECT dispatch_key FROM outbox
                   WHERE status = 'pending' AND visible_after <= ?1
                     AND workflow_id NOT IN (SELECT value FROM json_each(?3))
                     AND (?4 IS NULL OR namespace = ?4)
                     AND (?5 IS NULL OR task_queue = ?5)
                     AND (?6 IS NULL OR node = ?6)
                   ORDER BY visible_after, dispatch_key
                   LIMIT ?2)
                 RETURNING dispatch_key, workflow_id, ordinal, activity_type, input, status,
                   attempt, visible_after, claimed_at, run_id, namespace, task_queue, node,
                   claim_token, max_attempts, dead_reason",
            )
            .unwrap()
            .query_map(
                params![
                    now,
                    W4_BATCH as i64,
                    "[]",
                    None::<String>,
                    None::<String>,
                    None::<String>,
                    token
                ],
                |row| Ok((row.get(0)?, row.get(13)?)),
            )
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        if !claims.is_empty() {
            tx.prepare_cached("UPDATE outbox_claim_counter SET last_token = ?1 WHERE id = 1")
                .unwrap()
                .execute([token])
                .unwrap();
        }
        tx.commit().unwrap();
        if claims.is_empty() {
            break;
        }
        done += claims.len();
        // Each claimed row completed under its token, all in one transaction.
        let tx = immediate();
        let mut complete = tx
            .prepare_cached(
                "UPDATE outbox SET status = 'done'
                 WHERE dispatch_key = ?1 AND claim_token = ?2 AND status IN ('pending', 'claimed')
                 RETURNING status",
            )
            .unwrap();
        for (key, token) in &claims {
            let status: String = complete
                .query_row(params![key, token], |row| row.get(0))
                .unwrap();
            assert_eq!(status, "done");
        }
        drop(complete);
        tx.commit().unwrap();
    }
    assert_eq!(done, W4_ROWS);
}

const W5_CHECKPOINTS: usize = 100;
const W5_UPDATES: usize = 10_000;

fn checkpoint_state(n: usize) -> serde_json::Value {
    json!({"step": n, "messages": 12, "cursor": "msg_01HZX3K9Q7", "tools": ["search", "fetch"]})
}

/// W5: 100 checkpoints, then 10,000 compare-and-swap updates round-robin. Counts updates.
pub fn w5_checkpoint_cas(open: OpenStore, clock: Clock) -> Figure {
    let id = |i: usize| format!("checkpoint-{i:03}");
    let store = open("w5-store");
    for i in 0..W5_CHECKPOINTS {
        let created = Checkpoint {
            checkpoint_id: id(i),
            run_id: Some("run-1".into()),
            revision: 0,
            state: checkpoint_state(0),
            updated_at: 0,
        };
        store.compare_and_swap_checkpoint(&created, None).unwrap();
    }
    let store_ms = timed(clock, || {
        for n in 0..W5_UPDATES {
            let expected = (n / W5_CHECKPOINTS) as u64;
            let next = Checkpoint {
                checkpoint_id: id(n % W5_CHECKPOINTS),
                run_id: Some("run-1".into()),
                revision: expected + 1,
                state: checkpoint_state(n),
                updated_at: n as i64,
            };
            store
                .compare_and_swap_checkpoint(&next, Some(expected))
                .unwrap();
        }
    });
    let conn = open("w5-raw").into_connection();
    for i in 0..W5_CHECKPOINTS {
        conn.execute(
            "INSERT INTO checkpoints (checkpoint_id, run_id, revision, state, updated_at) VALUES (?1, ?2, 0, ?3, 0)",
            params![id(i), "run-1", checkpoint_state(0).to_string()],
        )
        .unwrap();
    }
    let raw_ms = timed(clock, || {
        for n in 0..W5_UPDATES {
            let tx = rusqlite::Transaction::new_unchecked(&conn, TransactionBehavior::Immediate)
                .unwrap();
            let expected = (n / W5_CHECKPOINTS) as i64;
            let changed = tx
                .prepare_cached(
                    "UPDATE checkpoints SET revision = ?3, state = ?4, updated_at = ?5
                     WHERE checkpoint_id = ?1 AND revision = ?3 - 1 AND run_id IS ?2",
                )
                .unwrap()
                .execute(params![
                    id(n % W5_CHECKPOINTS),
                    "run-1",
                    expected + 1,
                    checkpoint_state(n).to_string(),
                    n as i64
                ])
                .unwrap();
            assert_eq!(changed, 1);
            tx.commit().unwrap();
        }
    });
    Figure {
        workload: "W5 checkpoint CAS",
        unit: "updates",
        count: W5_UPDATES as u64,
        store_ms,
        raw_ms,
    }
}
