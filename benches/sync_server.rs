//! The sync server's throughput on PostgreSQL: pushes (journal appends) and outbox claims per
//! second with 1, 8 and 32 concurrent clients over real HTTP on loopback, each next to the
//! same work done by calling the store directly from as many threads, in the same run.
//!
//! A push writes more than a plain append: the namespace's feed entry and the request log, in
//! the same transaction. So the pushes are shown beside both the direct plain append and the
//! direct step the server commits (append + feed entry under a request id).
//!
//! Run with `bash scripts/bench-sync.sh` (a throwaway PostgreSQL cluster); needs
//! `RUNSTORE_PG_URL`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use runstore::server::{router, Concurrent, Grants, ServerConfig};
use runstore::{
    ClaimFilter, ClaimScope, Event, EventJournal, EventKind, NewOutboxRow, Operation, OutboxStore,
    PgOptions, PgStore, Step, StepStore,
};
use serde_json::{json, Value};

const TOKEN: &str = "bench-token";
const NAMESPACE: &str = "bench";
/// Operations per measurement, split among the clients.
const OPS: u64 = 1600;
const LEVELS: [u64; 3] = [1, 8, 32];

fn main() {
    let Ok(url) = std::env::var("RUNSTORE_PG_URL") else {
        eprintln!("set RUNSTORE_PG_URL (scripts/bench-sync.sh starts a throwaway cluster)");
        return;
    };
    let options = PgOptions {
        pool_size: 32,
        schema: Some(format!("bench_sync_{}", std::process::id())),
        ..PgOptions::default()
    };
    let store = Arc::new(Concurrent::open(|| PgStore::connect_with(&url, &options)).unwrap());
    let direct = Arc::new(Concurrent::open(|| PgStore::connect_with(&url, &options)).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let base = runtime.block_on(serve(Arc::clone(&store)));
    println!("sync server on PostgreSQL, {OPS} operations per figure, loopback HTTP/1.1");
    println!("| clients | pushes/s | direct append/s | direct push step/s | push ÷ append | push ÷ step | claims/s (HTTP) | claims/s (direct) | ratio |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (round, clients) in LEVELS.into_iter().enumerate() {
        let pushes = runtime.block_on(http_pushes(&base, round, clients));
        let appends = direct_ops(clients, |c, n| {
            with(&direct, |s| {
                s.append(&format!("direct-{round}-{c}"), &[event(n)], n)
                    .map(drop)
            })
        });
        let feed = AtomicU64::new(0);
        let steps = direct_ops(clients, |c, n| {
            with(&direct, |s| push_step(s, round, c, n, &feed))
        });
        insert_rows(&direct, &format!("http-{round}"), OPS);
        let claims = runtime.block_on(http_claims(&base, clients));
        insert_rows(&direct, &format!("direct-{round}"), OPS);
        let direct_claims = direct_ops(clients, |_, _| with(&direct, claim_and_complete));
        println!(
            "| {clients} | {pushes:.0} | {appends:.0} | {steps:.0} | {:.2} | {:.2} | {claims:.0} | {direct_claims:.0} | {:.2} |",
            pushes / appends,
            pushes / steps,
            claims / direct_claims
        );
    }
    drop(runtime);
}

fn with<R>(store: &Concurrent<PgStore>, f: impl FnOnce(&PgStore) -> runstore::Result<R>) -> R {
    use runstore::server::StoreAccess;
    store.with_store(f).unwrap()
}

async fn serve(store: Arc<Concurrent<PgStore>>) -> String {
    let mut grants = Grants::default();
    grants.grant(TOKEN, [NAMESPACE]).unwrap();
    let app = router(store, ServerConfig::new(grants)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1/namespaces/{NAMESPACE}")
}

fn event(n: u64) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "bench".into(),
        },
        recorded_at: n as i64,
        data: json!({ "payload": "x".repeat(150), "n": n }),
    }
}

/// What the server commits for a push, called directly: the append and its feed entry, under
/// a request id.
fn push_step(
    store: &PgStore,
    round: usize,
    client: u64,
    n: u64,
    feed: &AtomicU64,
) -> runstore::Result<()> {
    let workflow = format!("step-{round}-{client}");
    let step = Step::new()
        .request_id(format!("step-{round}-{client}-{n}"))
        .with(Operation::Append {
            workflow_id: workflow.clone(),
            events: vec![event(n)],
            expected_seq: n,
            outbox: vec![],
        })
        .with(Operation::RecordChange {
            feed: format!("step-feed-{round}"),
            workflow_id: workflow,
            base: n,
            head: n + 1,
        });
    store.commit(&step)?;
    feed.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn claim_and_complete(store: &PgStore) -> runstore::Result<()> {
    let filter = ClaimFilter {
        exclude_workflows: vec![],
        scope: Some(ClaimScope {
            namespace: Some(NAMESPACE.into()),
            task_queue: None,
            node: None,
        }),
    };
    for row in store.claim_outbox(i64::MAX / 2, 1, &filter)? {
        store.complete_outbox(&row.dispatch_key, row.claim_token)?;
    }
    Ok(())
}

/// Due rows of the bench namespace, stored as the server stores them (scoped keys and ids).
fn insert_rows(store: &Concurrent<PgStore>, prefix: &str, count: u64) {
    let rows: Vec<_> = (0..count)
        .map(|i| NewOutboxRow {
            dispatch_key: format!("{NAMESPACE}/{prefix}-{i}"),
            workflow_id: format!("{NAMESPACE}/w/{prefix}"),
            ordinal: i,
            activity_type: "bench".into(),
            input: vec![1; 64],
            visible_after: 0,
            attempt: 0,
            run_id: None,
            namespace: Some(NAMESPACE.into()),
            task_queue: None,
            node: None,
            max_attempts: None,
        })
        .collect();
    for chunk in rows.chunks(500) {
        with(store, |s| s.insert_outbox(chunk));
    }
}

/// Operations per second of `op(client, n)` run by `clients` threads, OPS in all.
fn direct_ops(clients: u64, op: impl Fn(u64, u64) + Sync) -> f64 {
    let per_client = OPS / clients;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for c in 0..clients {
            let op = &op;
            scope.spawn(move || (0..per_client).for_each(|n| op(c, n)));
        }
    });
    rate(per_client * clients, started.elapsed())
}

fn rate(ops: u64, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64()
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn post(client: &HttpClient, url: &str, body: Value) -> Value {
    let request = hyper::Request::post(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(status.is_success(), "{status}: {value}");
    value
}

async fn http_pushes(base: &str, round: usize, clients: u64) -> f64 {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let per_client = OPS / clients;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (client, url) = (client.clone(), format!("{base}/push"));
            tokio::spawn(async move {
                for n in 0..per_client {
                    let body = json!({ "requestId": format!("http-{round}-{c}-{n}"), "workflowId": format!("http-{round}-{c}"), "expectedHead": n, "events": [event(n)] });
                    post(&client, &url, body).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    rate(per_client * clients, started.elapsed())
}

async fn http_claims(base: &str, clients: u64) -> f64 {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let per_client = OPS / clients;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, base) = (client.clone(), base.to_owned());
            tokio::spawn(async move {
                for _ in 0..per_client {
                    let claimed = post(&client, &format!("{base}/outbox/claim"), json!({ "limit": 1 })).await;
                    for row in claimed["rows"].as_array().unwrap() {
                        let body = json!({ "dispatchKey": row["dispatchKey"], "claimToken": row["claimToken"] });
                        post(&client, &format!("{base}/outbox/complete"), body).await;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    rate(per_client * clients, started.elapsed())
}
