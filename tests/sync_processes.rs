//! Several `runstore-sync` processes on one PostgreSQL database (`RUNSTORE_PG_URL`, started
//! by scripts/test-sync.sh): a pull waiting on one process is woken by a push through another
//! (the feed's `NOTIFY`), and pushes to one namespace through both at once are each applied
//! once, in one gapless feed, without a refusal. Skipped without a database.
#![cfg(not(target_family = "wasm"))]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

const TOKEN: &str = "process-token";

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// One server process; killed when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(url: &str, schema: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runstore-sync"))
            .env("RUNSTORE_SYNC_TOKENS", json!({ TOKEN: ["ns"] }).to_string())
            .env("RUNSTORE_SYNC_POSTGRES", url)
            .env("RUNSTORE_SYNC_PG_SCHEMA", schema)
            .env("RUNSTORE_SYNC_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .spawn()
            .expect("runstore-sync starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let address = line
            .trim()
            .strip_prefix("runstore-sync listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Server {
            child,
            base: format!("{address}/v1/namespaces/ns"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(client: &HttpClient, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            body.map_or_else(String::new, |b| b.to_string()),
        )))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

async fn push(
    client: &HttpClient,
    server: &Server,
    id: &str,
    workflow: &str,
    head: u64,
) -> (u16, Value) {
    let body = json!({ "requestId": id, "workflowId": workflow, "expectedHead": head,
                       "events": [{ "type": "custom", "name": "e", "recordedAt": head, "data": { "n": head } }] });
    call(client, "POST", &format!("{}/push", server.base), Some(body)).await
}

fn servers(count: usize) -> Option<Vec<Server>> {
    let url = std::env::var("RUNSTORE_PG_URL").ok()?;
    let schema = format!("sync_processes_{}", std::process::id());
    // The first creates the schema; the others start on it.
    let mut started = vec![Server::start(&url, &schema)];
    started.extend((1..count).map(|_| Server::start(&url, &schema)));
    Some(started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn processes_on_one_database_share_one_feed_and_wake_each_others_pulls() {
    let Some(servers) = servers(2) else {
        eprintln!("RUNSTORE_PG_URL not set: skipped");
        return;
    };
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    // A pull waiting on the second process hears of a push through the first.
    let waiter = {
        let (client, url) = (
            client.clone(),
            format!("{}/changes?after=0&waitMs=20000", servers[1].base),
        );
        tokio::spawn(async move { call(&client, "GET", &url, None).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "nothing to answer yet: it waits");
    assert_eq!(push(&client, &servers[0], "first", "wf", 0).await.0, 200);
    let (status, answer) = tokio::time::timeout(Duration::from_secs(15), waiter)
        .await
        .expect("woken by the push")
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        answer["changes"],
        json!([{ "workflowId": "wf", "head": 1 }]),
        "{answer}"
    );

    // Pushes through both at once: each applied once, none refused, one gapless feed.
    const CLIENTS: u64 = 16;
    const PUSHES: u64 = 10;
    let servers = std::sync::Arc::new(servers);
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (client, servers) = (client.clone(), std::sync::Arc::clone(&servers));
            tokio::spawn(async move {
                for n in 0..PUSHES {
                    let server = &servers[((c + n) % 2) as usize];
                    let (status, body) =
                        push(&client, server, &format!("c{c}-{n}"), &format!("w{c}"), n).await;
                    assert_eq!(status, 200, "{body}");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut cursor = 1;
    let mut positions = 0;
    loop {
        let url = format!("{}/changes?after={cursor}&events=true", servers[1].base);
        let (_, page) = call(&client, "GET", &url, None).await;
        let segments = page["segments"].as_array().unwrap();
        positions += segments.len() as u64;
        for segment in segments {
            assert_eq!(
                segment["head"].as_u64().unwrap(),
                segment["base"].as_u64().unwrap() + 1
            );
            assert_eq!(segment["events"].as_array().unwrap().len(), 1);
        }
        cursor = page["cursor"].as_u64().unwrap();
        if page["more"] == json!(false) {
            break;
        }
    }
    assert_eq!(
        (positions, cursor),
        (CLIENTS * PUSHES, CLIENTS * PUSHES + 1)
    );
    for c in 0..CLIENTS {
        let (_, events) = call(
            &client,
            "GET",
            &format!("{}/workflows/w{c}/events", servers[0].base),
            None,
        )
        .await;
        assert_eq!(events["head"], PUSHES);
    }
}
