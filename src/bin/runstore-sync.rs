//! `runstore-sync`: the sync server over a store file.
//!
//! Settings come from the environment:
//! - `RUNSTORE_SYNC_TOKENS`: the grants as JSON, `{ "<token>": ["namespace", ...] }`, or
//!   `RUNSTORE_SYNC_TOKENS_FILE`: a file holding them;
//! - `RUNSTORE_SYNC_POSTGRES`: the PostgreSQL database's URL, with `RUNSTORE_SYNC_PG_SCHEMA`
//!   the schema that holds the store (default: the connection's `search_path`), or
//! - `RUNSTORE_SYNC_SQLITE`: a SQLite store's file (created if missing);
//! - `RUNSTORE_SYNC_LISTEN`: the address to listen on (default `127.0.0.1:8787`; port 0 picks
//!   a free one);
//! - `RUNSTORE_SYNC_MAX_BODY`: the largest request body in bytes (default 4 MiB);
//! - `RUNSTORE_SYNC_MAX_ANSWER`: the most bytes of events one answer carries (default 4 MiB).
//!
//! It prints `runstore-sync listening on http://<address>` once it accepts connections, and
//! stops on SIGINT or SIGTERM after the requests in flight.

use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use runstore::server::{
    router, Concurrent, Grants, Serialized, ServerConfig, DEFAULT_MAX_ANSWER_BYTES,
    DEFAULT_MAX_BODY_BYTES,
};
use runstore::{PgOptions, PgStore, SqliteStore};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("runstore-sync: {message}");
            ExitCode::FAILURE
        }
    }
}

fn setting(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn config() -> Result<ServerConfig, String> {
    let grants_json = match (
        setting("RUNSTORE_SYNC_TOKENS"),
        setting("RUNSTORE_SYNC_TOKENS_FILE"),
    ) {
        (Some(json), None) => json,
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read RUNSTORE_SYNC_TOKENS_FILE {path}: {e}"))?,
        _ => return Err("set one of RUNSTORE_SYNC_TOKENS and RUNSTORE_SYNC_TOKENS_FILE".into()),
    };
    let grants = Grants::from_json(&grants_json).map_err(|e| e.to_string())?;
    Ok(ServerConfig {
        grants,
        max_body_bytes: bytes_setting("RUNSTORE_SYNC_MAX_BODY", DEFAULT_MAX_BODY_BYTES)?,
        max_answer_bytes: bytes_setting("RUNSTORE_SYNC_MAX_ANSWER", DEFAULT_MAX_ANSWER_BYTES)?,
    })
}

/// A number of bytes from the environment, `default` when unset.
fn bytes_setting(name: &str, default: usize) -> Result<usize, String> {
    match setting(name) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{name} {text:?} is not a number of bytes")),
    }
}

fn run() -> Result<(), String> {
    let config = config()?;
    let app = open_store(config)?;
    let listen = setting("RUNSTORE_SYNC_LISTEN").unwrap_or_else(|| "127.0.0.1:8787".into());
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        println!("runstore-sync listening on http://{address}");
        axum::serve(listener, app)
            .with_graceful_shutdown(stop_signal())
            .await
            .map_err(|e| e.to_string())
    })
}

/// The router over the store the settings name.
fn open_store(config: ServerConfig) -> Result<Router, String> {
    match (
        setting("RUNSTORE_SYNC_POSTGRES"),
        setting("RUNSTORE_SYNC_SQLITE"),
    ) {
        (Some(url), None) => {
            let options = PgOptions {
                schema: setting("RUNSTORE_SYNC_PG_SCHEMA"),
                ..PgOptions::default()
            };
            let store = Concurrent::open(|| PgStore::connect_with(&url, &options))
                .map_err(|e| format!("cannot open the PostgreSQL store: {e}"))?;
            router(Arc::new(store), config).map_err(|e| e.to_string())
        }
        (None, Some(path)) => {
            let store = SqliteStore::open(&path).map_err(|e| format!("cannot open {path}: {e}"))?;
            router(Arc::new(Serialized::new(store)), config).map_err(|e| e.to_string())
        }
        _ => Err("set one of RUNSTORE_SYNC_POSTGRES and RUNSTORE_SYNC_SQLITE".into()),
    }
}

async fn stop_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler can be installed");
    tokio::select! {
        _ = interrupt => {}
        _ = terminate.recv() => {}
    }
}
