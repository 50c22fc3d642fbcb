//! PgStore next to the same SQL run directly on the `postgres` client, in the same run on the
//! same server: appends (one event per transaction, each client on its own workflows) and
//! outbox claims (claim 50, complete them in one transaction, until none are left), with 1 and
//! 8 concurrent clients. Prints operations per second and the ratio PgStore / direct SQL.
//!
//! Run: `scripts/bench-postgres.sh` (starts a throwaway cluster and sets `RUNSTORE_PG_URL`).

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use postgres::{Client, NoTls};
use runstore::*;

const APPENDS_PER_CLIENT: usize = 400;
const ROWS: usize = 4_000;
const CLAIM_BATCH: u32 = 50;

fn url() -> String {
    std::env::var("RUNSTORE_PG_URL").expect("RUNSTORE_PG_URL: run scripts/bench-postgres.sh")
}

fn store(schema: &str, pool_size: u32) -> PgStore {
    let options = PgOptions {
        pool_size,
        schema: Some(schema.to_owned()),
        ..PgOptions::default()
    };
    PgStore::connect_with(&url(), &options).expect("connect")
}

/// A plain client on the schema a store created.
fn client(schema: &str) -> Client {
    let mut config: postgres::Config = url().parse().unwrap();
    config.options(&format!("-c search_path={schema}"));
    config.connect(NoTls).expect("connect")
}

fn event(n: usize) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "step".into(),
        },
        recorded_at: n as i64,
        data: serde_json::json!({"order": n, "items": ["a", "b", "c"], "total": 1234.5,
            "note": "an event of about two hundred bytes, as the SPEC's workloads use"}),
    }
}

/// Runs `work(client_index)` on `clients` threads started together; returns operations/s.
fn timed(clients: usize, ops: usize, work: impl Fn(usize) + Sync + Send + 'static) -> f64 {
    let work = Arc::new(work);
    let start = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (work, start) = (work.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                work(c);
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    for handle in handles {
        handle.join().unwrap();
    }
    ops as f64 / began.elapsed().as_secs_f64()
}

fn appends_store(schema: &str, clients: usize) -> f64 {
    let store = Arc::new(store(schema, clients as u32));
    timed(clients, clients * APPENDS_PER_CLIENT, move |c| {
        for n in 0..APPENDS_PER_CLIENT {
            let workflow = format!("c{c}-wf{}", n % 10);
            let head = (n / 10) as u64;
            store.append(&workflow, &[event(n)], head).unwrap();
        }
    })
}

/// The store's append SQL on a plain client, statements prepared once: lock the projection
/// row, insert the event, upsert the projection.
fn appends_direct(schema: &str, clients: usize) -> f64 {
    let schema = schema.to_owned();
    let connections: Vec<_> = (0..clients)
        .map(|_| std::sync::Mutex::new(client(&schema)))
        .collect();
    let connections = Arc::new(connections);
    timed(clients, clients * APPENDS_PER_CLIENT, move |c| {
        let mut client = connections[c].lock().unwrap();
        let lock = client
            .prepare("SELECT head FROM workflows WHERE workflow_id = $1 FOR UPDATE")
            .unwrap();
        let insert = client
            .prepare(
                "INSERT INTO events (workflow_id, seq, kind, recorded_at, event)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .unwrap();
        let project = client
            .prepare(
                "INSERT INTO workflows (workflow_id, head, status, updated_at)
                 VALUES ($1, $2, 'pending', $3)
                 ON CONFLICT (workflow_id) DO UPDATE SET head = excluded.head,
                   updated_at = excluded.updated_at",
            )
            .unwrap();
        for n in 0..APPENDS_PER_CLIENT {
            let workflow = format!("direct-c{c}-wf{}", n % 10);
            let seq = (n / 10 + 1) as i64;
            let mut blob = vec![1u8];
            serde_json::to_writer(&mut blob, &event(n)).unwrap();
            let mut tx = client.transaction().unwrap();
            let head: i64 = tx
                .query_opt(&lock, &[&workflow])
                .unwrap()
                .map_or(0, |row| row.get(0));
            assert_eq!(head, seq - 1);
            tx.execute(&insert, &[&workflow, &seq, &"step", &(n as i64), &blob])
                .unwrap();
            tx.execute(&project, &[&workflow, &seq, &(n as i64)])
                .unwrap();
            tx.commit().unwrap();
        }
    })
}

fn fill_outbox(store: &PgStore) {
    let rows: Vec<NewOutboxRow> = (0..ROWS)
        .map(|i| NewOutboxRow {
            dispatch_key: format!("key-{i:06}"),
            workflow_id: format!("wf-{}", i % 100),
            ordinal: i as u64,
            activity_type: "send".into(),
            input: vec![7; 64],
            visible_after: 0,
            attempt: 0,
            run_id: None,
            namespace: None,
            task_queue: None,
            node: None,
            max_attempts: None,
        })
        .collect();
    for chunk in rows.chunks(500) {
        store.insert_outbox(chunk).unwrap();
    }
}

fn claims_store(schema: &str, clients: usize) -> f64 {
    let store = Arc::new(store(schema, clients as u32));
    fill_outbox(&store);
    timed(clients, ROWS, move |_| loop {
        let rows = store
            .claim_outbox(1, CLAIM_BATCH, &ClaimFilter::default())
            .unwrap();
        if rows.is_empty() {
            return;
        }
        let claims: Vec<OutboxClaim> = rows
            .into_iter()
            .map(|row| OutboxClaim {
                dispatch_key: row.dispatch_key,
                claim_token: row.claim_token,
            })
            .collect();
        store.complete_outbox_batch(&claims).unwrap();
    })
}

/// The store's claim and completion SQL on a plain client, prepared once.
fn claims_direct(schema: &str, clients: usize) -> f64 {
    fill_outbox(&store(schema, 1));
    let schema = schema.to_owned();
    let connections: Vec<_> = (0..clients)
        .map(|_| std::sync::Mutex::new(client(&schema)))
        .collect();
    let connections = Arc::new(connections);
    timed(clients, ROWS, move |c| {
        let mut client = connections[c].lock().unwrap();
        let claim = client
            .prepare(
                "WITH picked AS (
                   SELECT dispatch_key FROM outbox
                   WHERE status = 'pending' AND visible_after <= $1
                   ORDER BY visible_after, dispatch_key LIMIT $2
                   FOR UPDATE SKIP LOCKED),
                 token AS (SELECT nextval('outbox_claim_token') AS value
                   WHERE EXISTS (SELECT 1 FROM picked))
                 UPDATE outbox AS o SET status = 'claimed', claimed_at = $1,
                   claim_token = token.value
                 FROM picked, token
                 WHERE o.dispatch_key = picked.dispatch_key AND o.status = 'pending'
                 RETURNING o.dispatch_key, o.claim_token",
            )
            .unwrap();
        let complete = client
            .prepare(
                "UPDATE outbox SET status = 'done'
                 WHERE dispatch_key = $1 AND claim_token = $2 AND status IN ('pending', 'claimed')
                 RETURNING status",
            )
            .unwrap();
        loop {
            let claimed = {
                let mut tx = client.transaction().unwrap();
                let rows = tx.query(&claim, &[&1i64, &i64::from(CLAIM_BATCH)]).unwrap();
                tx.commit().unwrap();
                rows
            };
            if claimed.is_empty() {
                return;
            }
            let mut tx = client.transaction().unwrap();
            for row in &claimed {
                let key: String = row.get(0);
                let token: i64 = row.get(1);
                assert_eq!(tx.query(&complete, &[&key, &token]).unwrap().len(), 1);
            }
            tx.commit().unwrap();
        }
    })
}

fn main() {
    println!("workload                      clients   PgStore/s   direct SQL/s   ratio");
    for clients in [1, 8] {
        let schema = format!("bench_append_{clients}");
        drop(store(&schema, 1)); // creates the schema
        let direct = appends_direct(&schema, clients);
        let through_store = appends_store(&schema, clients);
        row("appends (1 event per txn)", clients, through_store, direct);

        let store_schema = format!("bench_claim_store_{clients}");
        let through_store = claims_store(&store_schema, clients);
        let direct = claims_direct(&format!("bench_claim_direct_{clients}"), clients);
        row("claims (50 per claim)", clients, through_store, direct);
    }
}

fn row(name: &str, clients: usize, store: f64, direct: f64) {
    println!(
        "{name:<29} {clients:>7} {store:>11.0} {direct:>14.0} {:>7.2}",
        store / direct
    );
}
