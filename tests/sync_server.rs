//! The sync server, called in process through its router, over a real SQLite store file and,
//! when `RUNSTORE_PG_URL` names a database (scripts/test-sync.sh starts one), over PostgreSQL:
//! tokens, pushes under the expected head, conflicts with the server's events, request-id
//! retries across a restart, pulls and long-polls, the namespace's outbox, body limits and
//! bad input, and leases on workflows (tests/sync_server/leases.rs). Every refused request is
//! checked to have changed nothing.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use runstore::server::{router, Concurrent, Grants, Serialized, ServerConfig};
use runstore::{Durability, PgOptions, PgStore, SqliteStore};
use serde_json::{json, Value};
use tower::ServiceExt;

#[path = "sync_server/leases.rs"]
mod leases;

const TOKEN: &str = "secret-a";
const OTHER_TOKEN: &str = "secret-b";

fn grants() -> Grants {
    Grants::from_json(&json!({ TOKEN: ["team", "shared"], OTHER_TOKEN: ["other"] }).to_string())
        .unwrap()
}

/// Where a test's server keeps its store; reopening it is a restart of the server.
enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres { url: String, schema: String },
}

impl Backend {
    /// A fresh SQLite file, and a fresh PostgreSQL schema when a database is given.
    fn all() -> Vec<Backend> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let mut backends = vec![Backend::Sqlite(tempfile::tempdir().unwrap())];
        if let Ok(url) = std::env::var("RUNSTORE_PG_URL") {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let schema = format!("sync_test_{}_{n}", std::process::id());
            backends.push(Backend::Postgres { url, schema });
        }
        backends
    }

    fn server_with(&self, max_body_bytes: usize) -> Router {
        let config = ServerConfig {
            max_body_bytes,
            ..ServerConfig::new(grants())
        };
        match self {
            Backend::Sqlite(dir) => {
                // Relaxed: a commit that returned survives the server's process, which is what
                // a restart here tests; no test cuts the power.
                let store =
                    SqliteStore::open_with(dir.path().join("server.db"), Durability::Relaxed)
                        .unwrap();
                router(Arc::new(Serialized::new(store)), config).unwrap()
            }
            Backend::Postgres { url, schema } => {
                let options = PgOptions {
                    schema: Some(schema.clone()),
                    ..PgOptions::default()
                };
                router(
                    Arc::new(Concurrent::open(|| PgStore::connect_with(url, &options)).unwrap()),
                    config,
                )
                .unwrap()
            }
        }
    }

    fn server(&self) -> Router {
        self.server_with(1 << 20)
    }
}

/// One request; the answer's status and JSON body.
async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({ "text": String::from_utf8_lossy(&bytes) }));
    (status, value)
}

async fn post(app: &Router, uri: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    call(app, "POST", uri, token, Some(body.to_string().into_bytes())).await
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    call(app, "GET", uri, Some(TOKEN), None).await
}

fn event(name: &str, n: u64) -> Value {
    json!({ "type": "custom", "name": name, "recordedAt": n, "data": { "n": n } })
}

fn push_body(request_id: &str, workflow: &str, expected: u64, events: Vec<Value>) -> Value {
    json!({ "requestId": request_id, "workflowId": workflow, "expectedHead": expected, "events": events })
}

async fn push(
    app: &Router,
    request_id: &str,
    workflow: &str,
    expected: u64,
    events: Vec<Value>,
) -> (StatusCode, Value) {
    post(
        app,
        "/v1/namespaces/team/push",
        Some(TOKEN),
        push_body(request_id, workflow, expected, events),
    )
    .await
}

async fn head(app: &Router, namespace: &str, workflow: &str) -> u64 {
    let (status, body) = call(
        app,
        "GET",
        &format!("/v1/namespaces/{namespace}/workflows/{workflow}/events"),
        Some(if namespace == "other" {
            OTHER_TOKEN
        } else {
            TOKEN
        }),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["head"].as_u64().unwrap()
}

async fn changes(app: &Router, after: u64) -> Value {
    let (status, body) = get(app, &format!("/v1/namespaces/team/changes?after={after}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn a_push_is_applied_under_the_expected_head_and_pulled_by_cursor() {
    for backend in Backend::all() {
        let app = backend.server();
        let (status, body) =
            push(&app, "r1", "order-1", 0, vec![event("a", 1), event("b", 2)]).await;
        assert_eq!(
            (status, &body),
            (StatusCode::OK, &json!({ "head": 2, "replayed": false }))
        );
        push(&app, "r2", "order-2", 0, vec![event("x", 1)]).await;
        let (status, _) = push(&app, "r3", "order-1", 2, vec![event("c", 3)]).await;
        assert_eq!(status, StatusCode::OK);

        let all = changes(&app, 0).await;
        assert_eq!(
            all["changes"],
            json!([{ "workflowId": "order-2", "head": 1 }, { "workflowId": "order-1", "head": 3 }])
        );
        assert_eq!(
            (all["cursor"].as_u64(), all["more"].as_bool()),
            (Some(3), Some(false))
        );
        let later = changes(&app, 1).await;
        assert_eq!(later["changes"].as_array().unwrap().len(), 2);
        assert_eq!(changes(&app, 3).await["changes"], json!([]));

        let (_, events) = get(&app, "/v1/namespaces/team/workflows/order-1/events?after=1").await;
        assert_eq!(events["head"], 3);
        let seqs: Vec<_> = events["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["seq"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(seqs, [(2, "b".to_owned()), (3, "c".to_owned())]);
        // Namespaces do not see each other: the same workflow id elsewhere is empty.
        assert_eq!(head(&app, "shared", "order-1").await, 0);
    }
}

#[tokio::test]
async fn a_moved_head_is_a_sequence_conflict_with_the_servers_events() {
    for backend in Backend::all() {
        let app = backend.server();
        push(&app, "first", "wf", 0, vec![event("a", 1), event("b", 2)]).await;
        let (status, body) = push(&app, "second", "wf", 1, vec![event("mine", 2)]).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body["code"], "SEQUENCE_CONFLICT");
        assert_eq!(
            (
                body["workflowId"].as_str(),
                body["expected"].as_u64(),
                body["actual"].as_u64()
            ),
            (Some("wf"), Some(1), Some(2))
        );
        assert_eq!(
            body["events"],
            json!([{ "seq": 2, "type": "custom", "name": "b", "recordedAt": 2, "data": { "n": 2 } }])
        );
        assert_eq!(body["eventsComplete"], true);
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("expected head 1, found 2"),
            "{body}"
        );
        assert_eq!(head(&app, "team", "wf").await, 2);
        assert_eq!(
            changes(&app, 0).await["cursor"],
            1,
            "a refused push adds nothing to the feed"
        );
    }
}

#[tokio::test]
async fn a_request_id_sent_again_is_answered_from_the_log_even_after_a_restart() {
    for backend in Backend::all() {
        let app = backend.server();
        push(&app, "other-first", "wf", 0, vec![event("a", 1)]).await;
        let (_, first) = push(&app, "again", "wf", 1, vec![event("b", 2)]).await;
        assert_eq!(first, json!({ "head": 2, "replayed": false }));
        let (_, second) = push(&app, "again", "wf", 1, vec![event("b", 2)]).await;
        assert_eq!(second, json!({ "head": 2, "replayed": true }));
        // Meanwhile another push moved the feed: the replay is still found, not re-applied.
        push(&app, "elsewhere", "wf-2", 0, vec![event("x", 1)]).await;
        drop(app);

        let restarted = backend.server();
        let (status, third) = push(&restarted, "again", "wf", 1, vec![event("b", 2)]).await;
        assert_eq!(
            (status, third),
            (StatusCode::OK, json!({ "head": 2, "replayed": true }))
        );
        assert_eq!(head(&restarted, "team", "wf").await, 2);
        let feed = changes(&restarted, 0).await;
        assert_eq!(feed["cursor"], 3, "one feed entry per applied push: {feed}");
        // The same request id in another namespace is another request.
        let (status, body) = post(
            &restarted,
            "/v1/namespaces/shared/push",
            Some(TOKEN),
            push_body("again", "wf", 0, vec![event("s", 1)]),
        )
        .await;
        assert_eq!(
            (status, body["replayed"].as_bool()),
            (StatusCode::OK, Some(false))
        );
    }
}

#[tokio::test]
async fn a_missing_unknown_or_foreign_token_is_unauthorized_and_changes_nothing() {
    for backend in Backend::all() {
        let app = backend.server();
        let body = push_body("r", "wf", 0, vec![event("a", 1)]);
        let cases = [
            (None, "team", StatusCode::UNAUTHORIZED),
            (Some("wrong"), "team", StatusCode::UNAUTHORIZED),
            (Some(OTHER_TOKEN), "team", StatusCode::FORBIDDEN),
            (Some(TOKEN), "other", StatusCode::FORBIDDEN),
            (Some(TOKEN), "Team", StatusCode::FORBIDDEN),
            (Some(TOKEN), "team%2Fw", StatusCode::FORBIDDEN),
        ];
        for (token, namespace, expected) in cases {
            let (status, answer) = post(
                &app,
                &format!("/v1/namespaces/{namespace}/push"),
                token,
                body.clone(),
            )
            .await;
            assert_eq!(
                (status, answer["code"].as_str()),
                (expected, Some("UNAUTHORIZED")),
                "{token:?} {namespace}: {answer}"
            );
            let (status, answer) = call(
                &app,
                "GET",
                &format!("/v1/namespaces/{namespace}/changes"),
                token,
                None,
            )
            .await;
            assert_eq!(
                (status, answer["code"].as_str()),
                (expected, Some("UNAUTHORIZED")),
                "{answer}"
            );
            let (status, answer) = post(
                &app,
                &format!("/v1/namespaces/{namespace}/outbox/claim"),
                token,
                json!({ "limit": 10 }),
            )
            .await;
            assert_eq!(
                (status, answer["code"].as_str()),
                (expected, Some("UNAUTHORIZED")),
                "{answer}"
            );
        }
        // A bad token with a bad body is still UNAUTHORIZED: nothing of the request is read.
        let (status, answer) = call(
            &app,
            "POST",
            "/v1/namespaces/team/push",
            Some("wrong"),
            Some(b"{".to_vec()),
        )
        .await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("UNAUTHORIZED"))
        );
        assert_eq!(head(&app, "team", "wf").await, 0);
        assert_eq!(head(&app, "other", "wf").await, 0);
        assert_eq!(changes(&app, 0).await["cursor"], 0);
        // The granted token works.
        let (status, _) = post(&app, "/v1/namespaces/team/push", Some(TOKEN), body).await;
        assert_eq!(status, StatusCode::OK);
    }
}

#[tokio::test]
async fn bodies_over_the_limit_and_bad_input_are_invalid_input_and_write_nothing() {
    for backend in Backend::all() {
        let app = backend.server_with(2048);
        let big = json!({ "requestId": "big", "workflowId": "wf", "expectedHead": 0, "events": [{ "type": "custom", "name": "x", "recordedAt": 1, "data": "y".repeat(4096) }] });
        let (status, body) = post(&app, "/v1/namespaces/team/push", Some(TOKEN), big).await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                Some("INVALID_INPUT"),
                Some("body")
            ),
            "{body}"
        );

        let bad_bodies = [
        b"{not json".to_vec(),
        br#"{"requestId":"r","workflowId":"wf","expectedHead":0,"events":[],"extra":1}"#.to_vec(),
        br#"{"requestId":"r","workflowId":"wf","expectedHead":-1,"events":[]}"#.to_vec(),
        br#"{"requestId":"r","workflowId":"wf","expectedHead":0,"events":[{"type":"started","recordedAt":1}]}"#.to_vec(),
        br#"{"requestId":"r","workflowId":"","expectedHead":0,"events":[]}"#.to_vec(),
        br#"{"requestId":"","workflowId":"wf","expectedHead":0,"events":[]}"#.to_vec(),
        br#"{"requestId":"r","workflowId":"wf","expectedHead":0,"events":[],"outbox":[{"dispatchKey":"k","workflowId":"wf","ordinal":1,"activityType":"a","input":[1],"visibleAfter":0,"namespace":"other"}]}"#.to_vec(),
    ];
        for bad in bad_bodies {
            let text = String::from_utf8_lossy(&bad).into_owned();
            let (status, body) = call(
                &app,
                "POST",
                "/v1/namespaces/team/push",
                Some(TOKEN),
                Some(bad),
            )
            .await;
            assert_eq!(
                (status, body["code"].as_str()),
                (StatusCode::BAD_REQUEST, Some("INVALID_INPUT")),
                "{text}: {body}"
            );
            assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
        for uri in [
            "/v1/namespaces/team/changes?after=-1",
            "/v1/namespaces/team/changes?limit=0",
            "/v1/namespaces/team/changes?bogus=1",
            "/v1/namespaces/team/workflows/wf/events?limit=5000",
        ] {
            let (status, body) = get(&app, uri).await;
            assert_eq!(
                (status, body["code"].as_str()),
                (StatusCode::BAD_REQUEST, Some("INVALID_INPUT")),
                "{uri}: {body}"
            );
        }
        let (status, body) = get(&app, "/v1/nowhere").await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("NOT_FOUND"))
        );
        assert_eq!(head(&app, "team", "wf").await, 0);
        assert_eq!(changes(&app, 0).await["cursor"], 0);
    }
}

#[tokio::test]
async fn a_waiting_pull_wakes_at_the_next_push() {
    for backend in Backend::all() {
        let app = backend.server();
        let waiter = {
            let app = app.clone();
            tokio::spawn(async move {
                get(&app, "/v1/namespaces/team/changes?after=0&waitMs=20000").await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished(), "a pull with nothing to answer waits");
        push(&app, "r", "wf", 0, vec![event("a", 1)]).await;
        let (status, body) = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["changes"], json!([{ "workflowId": "wf", "head": 1 }]));
    }
}

/// Readers long-polling together share the server's reads of a page (src/server/shared_reads.rs):
/// each is still woken by every push and sees it before the next is sent. The next push goes
/// out as soon as every reader has the last, while some of them are reading again: a reader
/// that joined a read begun before that push's commit would miss it and wait out its 20 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_waiting_together_each_see_every_push_at_once() {
    const READERS: usize = 16;
    const PUSHES: u64 = 40;
    for backend in Backend::all() {
        let app = backend.server();
        let progress: Arc<Vec<AtomicU64>> =
            Arc::new((0..READERS).map(|_| AtomicU64::new(0)).collect());
        let readers: Vec<_> = (0..READERS)
            .map(|reader| {
                let (app, progress) = (app.clone(), Arc::clone(&progress));
                tokio::spawn(async move {
                    let (mut cursor, mut seen) = (0, Vec::new());
                    while (seen.len() as u64) < PUSHES {
                        let uri = format!(
                            "/v1/namespaces/team/changes?after={cursor}&events=true&waitMs=20000"
                        );
                        let (status, body) = get(&app, &uri).await;
                        assert_eq!(status, StatusCode::OK, "{body}");
                        for segment in body["segments"].as_array().unwrap() {
                            seen.push(segment["events"][0]["data"]["n"].as_u64().unwrap());
                        }
                        progress[reader].store(seen.len() as u64, Ordering::SeqCst);
                        cursor = body["cursor"].as_u64().unwrap();
                    }
                    seen
                })
            })
            .collect();
        for n in 1..=PUSHES {
            let (status, body) =
                push(&app, &format!("r{n}"), "wf", n - 1, vec![event("e", n)]).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let everyone = async {
                while progress.iter().any(|seen| seen.load(Ordering::SeqCst) < n) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(5), everyone)
                .await
                .unwrap_or_else(|_| panic!("push {n} did not reach every waiting reader"));
        }
        let all: Vec<u64> = (1..=PUSHES).collect();
        for reader in readers {
            assert_eq!(reader.await.unwrap(), all);
        }
    }
}

#[tokio::test]
async fn concurrent_pushes_to_one_namespace_lose_nothing() {
    for backend in Backend::all() {
        let app = backend.server();
        let mut tasks = Vec::new();
        for client in 0..8 {
            let app = app.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..10u64 {
                    let (status, body) = push(
                        &app,
                        &format!("c{client}-{n}"),
                        &format!("wf-{client}"),
                        n,
                        vec![event("e", n + 1)],
                    )
                    .await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let feed = changes(&app, 0).await;
        assert_eq!(feed["cursor"], 80);
        let mut heads: Vec<_> = feed["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["head"].as_u64().unwrap())
            .collect();
        heads.sort_unstable();
        assert_eq!(heads, vec![10; 8]);
    }
}

#[tokio::test]
async fn pushed_outbox_rows_are_claimed_by_the_namespaces_workers_under_fenced_tokens() {
    for backend in Backend::all() {
        let app = backend.server();
        let row = |key: &str| json!({ "dispatchKey": key, "workflowId": "wf", "ordinal": 1, "activityType": "charge", "input": [1, 2], "visibleAfter": 0 });
        let mut body = push_body("with-rows", "wf", 0, vec![event("a", 1)]);
        body["outbox"] = json!([row("k1"), row("k2")]);
        let (status, answer) = post(&app, "/v1/namespaces/team/push", Some(TOKEN), body).await;
        assert_eq!(status, StatusCode::OK, "{answer}");

        // Another namespace's worker sees none of them.
        let (_, other) = post(
            &app,
            "/v1/namespaces/other/outbox/claim",
            Some(OTHER_TOKEN),
            json!({ "limit": 10 }),
        )
        .await;
        assert_eq!(other["rows"], json!([]));

        let claim = json!({ "limit": 1, "requestId": "claim-1" });
        let (status, first) = post(
            &app,
            "/v1/namespaces/team/outbox/claim",
            Some(TOKEN),
            claim.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{first}");
        let rows = first["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (
                rows[0]["dispatchKey"].as_str(),
                rows[0]["workflowId"].as_str(),
                rows[0]["namespace"].as_str()
            ),
            (Some("k1"), Some("wf"), Some("team"))
        );
        // The claim re-sent under its request id gets the same row and token back.
        let (_, again) = post(&app, "/v1/namespaces/team/outbox/claim", Some(TOKEN), claim).await;
        assert_eq!(again, first);
        let token = rows[0]["claimToken"].as_u64().unwrap();

        let (status, stale) = post(
            &app,
            "/v1/namespaces/team/outbox/complete",
            Some(TOKEN),
            json!({ "dispatchKey": "k1", "claimToken": token + 100 }),
        )
        .await;
        assert_eq!(
            (status, stale["code"].as_str(), stale["id"].as_str()),
            (StatusCode::CONFLICT, Some("CONFLICT"), Some("k1")),
            "{stale}"
        );
        let (status, _) = post(
            &app,
            "/v1/namespaces/team/outbox/complete",
            Some(TOKEN),
            json!({ "dispatchKey": "k1", "claimToken": token }),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let (status, missing) = post(
            &app,
            "/v1/namespaces/team/outbox/complete",
            Some(TOKEN),
            json!({ "dispatchKey": "nope", "claimToken": 1 }),
        )
        .await;
        assert_eq!(
            (status, missing["code"].as_str(), missing["id"].as_str()),
            (StatusCode::NOT_FOUND, Some("NOT_FOUND"), Some("nope"))
        );

        let (_, second) = post(
            &app,
            "/v1/namespaces/team/outbox/claim",
            Some(TOKEN),
            json!({ "limit": 10 }),
        )
        .await;
        let rows = second["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        let token = rows[0]["claimToken"].as_u64().unwrap();
        let (status, failed) = post(
        &app,
        "/v1/namespaces/team/outbox/retry",
        Some(TOKEN),
        json!({ "dispatchKey": "k2", "claimToken": token, "nextAttempt": 1, "visibleAfter": 0 }),
    )
    .await;
        assert_eq!(
            (status, failed["status"].as_str()),
            (StatusCode::OK, Some("pending"))
        );
        let (_, third) = post(
            &app,
            "/v1/namespaces/team/outbox/claim",
            Some(TOKEN),
            json!({ "limit": 10 }),
        )
        .await;
        let token = third["rows"][0]["claimToken"].as_u64().unwrap();
        let (status, _) = post(
            &app,
            "/v1/namespaces/team/outbox/fail",
            Some(TOKEN),
            json!({ "dispatchKey": "k2", "claimToken": token, "reason": "card declined" }),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let (_, none) = post(
            &app,
            "/v1/namespaces/team/outbox/claim",
            Some(TOKEN),
            json!({ "limit": 10 }),
        )
        .await;
        assert_eq!(none["rows"], json!([]));
    }
}

/// Runs `request(app, n)` for every `n` below `count`, four at a time.
async fn in_parallel<F, R>(app: &Router, count: u64, request: F)
where
    F: Fn(Router, u64) -> R + Send + Sync + Copy + 'static,
    R: std::future::Future<Output = ()> + Send,
{
    let tasks: Vec<_> = (0..4)
        .map(|lane| {
            let app = app.clone();
            tokio::spawn(async move {
                for n in (lane..count).step_by(4) {
                    request(app.clone(), n).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// The answer to a request re-sent under `request_id` with other content: a conflict on the
/// request id (never a replay of what the id first did).
fn assert_request_conflict(status: StatusCode, body: &Value, request_id: &str) {
    assert_eq!(
        (
            status,
            body["code"].as_str(),
            body["entity"].as_str(),
            body["id"].as_str()
        ),
        (
            StatusCode::CONFLICT,
            Some("CONFLICT"),
            Some("request"),
            Some(request_id)
        ),
        "{body}"
    );
}

#[tokio::test]
async fn a_push_id_sent_again_with_other_events_is_a_conflict_never_a_replay() {
    for backend in Backend::all() {
        let app = backend.server();
        let (status, _) = push(&app, "p", "wf", 0, vec![event("a", 1), event("b", 2)]).await;
        assert_eq!(status, StatusCode::OK);
        // A client that lost this state (an import of an older export, a relaxed power loss)
        // wrote two other events and pushes them under the same id: they must not be
        // answered as the first push's replay, which would drop them silently.
        let (status, body) = push(&app, "p", "wf", 0, vec![event("x", 1), event("y", 2)]).await;
        assert_request_conflict(status, &body, "p");
        // The same id for another workflow, or another head, is another request too.
        let (status, body) = push(&app, "p", "wf-2", 0, vec![event("a", 1), event("b", 2)]).await;
        assert_request_conflict(status, &body, "p");
        let (status, body) = push(&app, "p", "wf", 1, vec![event("b", 2)]).await;
        assert_request_conflict(status, &body, "p");
        // The very same push is still a replay.
        let (status, body) = push(&app, "p", "wf", 0, vec![event("a", 1), event("b", 2)]).await;
        assert_eq!(
            (status, &body),
            (StatusCode::OK, &json!({ "head": 2, "replayed": true }))
        );

        let (_, history) = get(&app, "/v1/namespaces/team/workflows/wf/events").await;
        let names: Vec<_> = history["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b")]);
        assert_eq!(head(&app, "team", "wf-2").await, 0);
        assert_eq!(changes(&app, 0).await["cursor"], 1, "one push applied");
    }
}

#[tokio::test]
async fn an_outbox_request_id_sent_again_with_other_content_is_a_conflict() {
    for backend in Backend::all() {
        let app = backend.server();
        let row = |key: &str| json!({ "dispatchKey": key, "workflowId": "wf", "ordinal": 1, "activityType": "charge", "input": [1], "visibleAfter": 0 });
        let mut body = push_body("rows", "wf", 0, vec![event("a", 1)]);
        body["outbox"] = json!([row("k1"), row("k2"), row("k3")]);
        assert_eq!(
            post(&app, "/v1/namespaces/team/push", Some(TOKEN), body)
                .await
                .0,
            StatusCode::OK
        );
        let outbox = |route: &str| format!("/v1/namespaces/team/outbox/{route}");

        let (_, claimed) = post(
            &app,
            &outbox("claim"),
            Some(TOKEN),
            json!({ "limit": 2, "requestId": "c" }),
        )
        .await;
        let rows = claimed["rows"].as_array().unwrap().clone();
        assert_eq!(rows.len(), 2, "{claimed}");
        let token = rows[0]["claimToken"].as_u64().unwrap();
        // A claim under the same id asking for another limit is another claim.
        let (status, body) = post(
            &app,
            &outbox("claim"),
            Some(TOKEN),
            json!({ "limit": 3, "requestId": "c" }),
        )
        .await;
        assert_request_conflict(status, &body, "c");

        let complete = |key: &str, token: u64| json!({ "dispatchKey": key, "claimToken": token, "requestId": "done" });
        assert_eq!(
            post(
                &app,
                &outbox("complete"),
                Some(TOKEN),
                complete("k1", token)
            )
            .await
            .0,
            StatusCode::OK
        );
        // The same completion id for another row or under another token is refused, not
        // answered as the first completion's success.
        for other in [complete("k2", token), complete("k1", token + 7)] {
            let (status, body) = post(&app, &outbox("complete"), Some(TOKEN), other).await;
            assert_request_conflict(status, &body, "done");
        }
        let (status, body) = post(
            &app,
            &outbox("complete"),
            Some(TOKEN),
            complete("k1", token),
        )
        .await;
        assert_eq!((status, body), (StatusCode::OK, json!({})));

        let retry = |next: u32| json!({ "dispatchKey": "k2", "claimToken": token, "nextAttempt": next, "visibleAfter": 0, "requestId": "again" });
        assert_eq!(
            post(&app, &outbox("retry"), Some(TOKEN), retry(1)).await.0,
            StatusCode::OK
        );
        let (status, body) = post(&app, &outbox("retry"), Some(TOKEN), retry(2)).await;
        assert_request_conflict(status, &body, "again");

        let fail = |reason: &str| json!({ "dispatchKey": "k2", "claimToken": token, "reason": reason, "requestId": "again" });
        let (status, body) = post(&app, &outbox("fail"), Some(TOKEN), fail("declined")).await;
        assert_request_conflict(status, &body, "again");

        // Nothing of the refused requests happened: k2 is pending again, k3 never claimed.
        let (_, next) = post(&app, &outbox("claim"), Some(TOKEN), json!({ "limit": 10 })).await;
        let mut keys: Vec<_> = next["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["dispatchKey"].as_str().unwrap().to_owned())
            .collect();
        keys.sort();
        assert_eq!(keys, ["k2", "k3"]);
    }
}

#[tokio::test]
async fn a_namespaces_request_ids_outlive_other_namespaces_traffic_and_rolled_back_requests() {
    for backend in Backend::all() {
        let app = backend.server();
        let row = |key: &str| json!({ "dispatchKey": key, "workflowId": "wf", "ordinal": 1, "activityType": "charge", "input": [1], "visibleAfter": 0 });
        let mut body = push_body("rows", "wf", 0, vec![event("a", 1)]);
        body["outbox"] = json!([row("k1"), row("k2")]);
        assert_eq!(
            post(&app, "/v1/namespaces/team/push", Some(TOKEN), body)
                .await
                .0,
            StatusCode::OK
        );
        let claim = json!({ "limit": 1, "requestId": "claim-1" });
        let (_, first) = post(
            &app,
            "/v1/namespaces/team/outbox/claim",
            Some(TOKEN),
            claim.clone(),
        )
        .await;
        assert_eq!(first["rows"][0]["dispatchKey"], "k1", "{first}");

        // Another namespace's traffic fills its own window, not this one's.
        in_parallel(&app, runstore::MAX_KEPT_REQUESTS + 1, |app, n| async move {
            let body = json!({ "limit": 1, "requestId": format!("poll-{n}") });
            let (status, answer) = post(
                &app,
                "/v1/namespaces/other/outbox/claim",
                Some(OTHER_TOKEN),
                body,
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
        })
        .await;
        // Requests that roll back (pushes under a stale head) commit nothing, and count for
        // nothing, whatever sequence values they use up.
        in_parallel(&app, runstore::MAX_KEPT_REQUESTS + 1, |app, n| async move {
            let (status, _) = push(&app, &format!("stale-{n}"), "wf", 0, vec![event("b", n)]).await;
            assert_eq!(status, StatusCode::CONFLICT);
        })
        .await;
        let (status, _) = push(&app, "next", "wf", 1, vec![event("c", 2)]).await;
        assert_eq!(status, StatusCode::OK);

        // The claim re-sent is still its replay: the same row and token, not another row.
        let (_, again) = post(&app, "/v1/namespaces/team/outbox/claim", Some(TOKEN), claim).await;
        assert_eq!(again, first);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pushes_to_one_namespace_never_wedge_on_its_feed_under_concurrency() {
    const CLIENTS: u64 = 48;
    const PUSHES: u64 = 15;
    for backend in Backend::all() {
        let app = backend.server();
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let app = app.clone();
                tokio::spawn(async move {
                    for n in 0..PUSHES {
                        let id = format!("c{client}-{n}");
                        let workflow = format!("wf-{client}");
                        let (status, body) =
                            push(&app, &id, &workflow, n, vec![event("e", n + 1)]).await;
                        assert_eq!(status, StatusCode::OK, "{body}");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let mut after = 0;
        let mut heads = std::collections::BTreeMap::new();
        loop {
            let page = changes(&app, after).await;
            for change in page["changes"].as_array().unwrap() {
                heads.insert(
                    change["workflowId"].as_str().unwrap().to_owned(),
                    change["head"].as_u64().unwrap(),
                );
            }
            after = page["cursor"].as_u64().unwrap();
            if !page["more"].as_bool().unwrap() {
                break;
            }
        }
        assert_eq!(
            after,
            CLIENTS * PUSHES,
            "one feed entry per push, none lost"
        );
        assert_eq!(heads.len() as u64, CLIENTS);
        assert!(heads.values().all(|&head| head == PUSHES), "{heads:?}");
    }
}

/// A body of events of about `size` bytes each.
fn big_event(n: u64, size: usize) -> Value {
    json!({ "type": "custom", "name": "big", "recordedAt": n, "data": { "n": n, "blob": "x".repeat(size) } })
}

#[tokio::test]
async fn pulls_and_conflicts_answer_a_bounded_number_of_bytes() {
    const EVENT: usize = 900_000;
    const EVENTS: u64 = 12;
    for backend in Backend::all() {
        let app = backend.server();
        for n in 0..EVENTS {
            let (status, body) = push(
                &app,
                &format!("big-{n}"),
                "big",
                n,
                vec![big_event(n + 1, EVENT)],
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        let limit = runstore::server::DEFAULT_MAX_ANSWER_BYTES;
        // A pull pages by bytes: each page holds at most the limit (or one event, when one
        // alone is larger), and paging on reads every event once.
        let mut after = 0;
        let mut seen = Vec::new();
        loop {
            let (status, body) = call(
                &app,
                "GET",
                &format!("/v1/namespaces/team/workflows/big/events?after={after}"),
                Some(TOKEN),
                None,
            )
            .await;
            assert_eq!(status, StatusCode::OK);
            let size = body.to_string().len();
            let events = body["events"].as_array().unwrap();
            assert!(!events.is_empty());
            assert!(
                size <= limit + EVENT + 1024 || events.len() == 1,
                "{size} bytes in one answer"
            );
            seen.extend(events.iter().map(|e| e["seq"].as_u64().unwrap()));
            after = *seen.last().unwrap();
            if body["complete"] == json!(true) {
                break;
            }
        }
        assert_eq!(seen, (1..=EVENTS).collect::<Vec<_>>());
        // A conflict names the server's head and carries a bounded part of its events.
        let (status, body) = push(&app, "late", "big", 0, vec![event("mine", 1)]).await;
        assert_eq!(
            (status, body["actual"].as_u64()),
            (StatusCode::CONFLICT, Some(EVENTS))
        );
        assert!(
            body.to_string().len() <= limit + EVENT + 1024,
            "{} bytes",
            body.to_string().len()
        );
        assert_eq!(body["eventsComplete"], false);
    }
}
