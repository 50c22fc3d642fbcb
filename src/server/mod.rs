//! The sync server: browser stores push journal segments to it and pull the others' changes,
//! and backend workers claim the outbox rows pushed with them, over HTTP and JSON.
//!
//! It is generic over the store ([`StoreAccess`]), so the same server runs on a
//! [`crate::SqliteStore`] file or any other implementation of the store traits. Every
//! namespace lives in the one store under prefixed ids (see [`scope`]); each request names its
//! namespace and carries a bearer token granted it ([`Grants`]), or gets `UNAUTHORIZED` and
//! changes nothing. Writes carry request ids and are applied once however often they are sent,
//! also across a restart of the server (the store's request log).
//!
//! | Method and path | Body / query | Answer |
//! |---|---|---|
//! | `POST /v1/namespaces/{ns}/push` | `{ requestId, workflowId, expectedHead, events, outbox?, lease? }` | `{ head, replayed }`; 409 `SEQUENCE_CONFLICT` with `expected`, `actual` and the server's `events` after `expected`; 409 `FENCED` when `lease` (`{ holder, epoch }`) is not the workflow's lease |
//! | `GET /v1/namespaces/{ns}/changes` | `?after=&limit=&waitMs=&events=` | `{ changes: [{ workflowId, head }], cursor, more }`, or with `events=true` `{ segments: [{ workflowId, base, head, events }], cursor, more }`; waits up to `waitMs` for a change when there is none |
//! | `GET /v1/namespaces/{ns}/workflows/{id}/events` | `?after=&limit=` | `{ events, head, complete }` |
//! | `POST /v1/namespaces/{ns}/workflows/{id}/lease` | `{ holder, epoch?, ttlMs }` | `{ workflowId, holder, epoch, live, ttlMs, expiresAt }`: taken (no `epoch`) or renewed; 409 `LEASE_HELD` with `holder`, `epoch` and `expiresInMs` while another holder's lease is live, 409 `FENCED` for a renewal of a lease taken over |
//! | `POST /v1/namespaces/{ns}/workflows/{id}/lease/release` | `{ holder, epoch }` | `{}`; 409 `FENCED` when it is not that holder's lease |
//! | `GET /v1/namespaces/{ns}/workflows/{id}/lease` | | `{ lease }`, `null` when none was taken |
//! | `POST /v1/namespaces/{ns}/outbox/claim` | `{ limit, requestId? }` | `{ rows }` |
//! | `POST /v1/namespaces/{ns}/outbox/complete` | `{ dispatchKey, claimToken, requestId? }` | `{}` |
//! | `POST /v1/namespaces/{ns}/outbox/retry` | `{ dispatchKey, claimToken, nextAttempt, visibleAfter, requestId? }` | `{ status }` |
//! | `POST /v1/namespaces/{ns}/outbox/fail` | `{ dispatchKey, claimToken, reason, requestId? }` | `{}` |
//!
//! Errors are `{ code, message, ... }` with the store's codes: 400 `INVALID_INPUT`, 401/403
//! `UNAUTHORIZED`, 404 `NOT_FOUND`, 409 conflicts, 413 `INVALID_INPUT` for a body over the
//! limit.
//!
//! Answers that carry events (pulls, a conflict's server events) hold at most
//! [`ServerConfig::max_answer_bytes`] of them, or one push's segment or one event when that
//! alone is larger; `more`, `complete` or `eventsComplete` say whether the rest follows.
//!
//! Several server processes may serve one PostgreSQL database: a push's feed entry is
//! announced with `NOTIFY`, and each process wakes its waiting pulls when it hears it.

mod access;
mod api_error;
mod auth;
mod feed;
mod journal;
mod leases;
mod outbox;
mod request;
pub mod scope;
mod shared_reads;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tower_http::cors::CorsLayer;

pub use access::{Concurrent, Serialized, StoreAccess};
pub use api_error::ApiError;
pub use auth::{Grants, MAX_NAMESPACE_BYTES};

use crate::error::{Error, Result};
use crate::{Millis, SyncFeed};

/// The largest request body accepted by default (4 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;

/// The most bytes of events one answer carries by default (4 MiB).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 4 << 20;

/// The longest a `changes` request waits for a change.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// The server's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Who may use which namespace.
    pub grants: Grants,
    /// Bodies above this many bytes are refused with 413 `INVALID_INPUT`.
    pub max_body_bytes: usize,
    /// Answers carry at most this many bytes of events (or one segment or event, when that
    /// alone is larger).
    pub max_answer_bytes: usize,
}

impl ServerConfig {
    /// The settings with `grants` and the default body limit.
    pub fn new(grants: Grants) -> Self {
        Self {
            grants,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// What every handler shares.
pub(crate) struct Shared<A> {
    pub(crate) store: Arc<A>,
    pub(crate) config: ServerConfig,
    pub(crate) feeds: Arc<feed::FeedSignals>,
    /// The reads of changes under way, shared by the requests that need them at once.
    pub(crate) reads: shared_reads::SharedReads,
    /// Hears the pushes of other server processes for as long as the server lives.
    _listener: Option<crate::ChangeListener>,
}

impl<A: StoreAccess> Shared<A> {
    /// Runs `f` with the store on a blocking thread.
    pub(crate) async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&A::Store) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || store.with_store(f))
            .await
            .map_err(access::task_failed)?
    }

    /// A page of at most `limit` items and the answer's bytes.
    pub(crate) fn page_bound(&self, limit: u32) -> crate::PageBound {
        crate::PageBound {
            limit,
            max_bytes: self.config.max_answer_bytes as u64,
        }
    }
}

/// The server's routes over `store`, with CORS open to any origin (access is by bearer token,
/// never by cookie, so any page may call it with a token it holds). On a store that other
/// processes write too (PostgreSQL), a thread listens for their pushes for as long as the
/// routes live.
///
/// # Errors
/// [`Error::Unavailable`] when the store's change listener cannot start.
pub fn router<A: StoreAccess>(store: Arc<A>, config: ServerConfig) -> Result<Router> {
    let max_body = config.max_body_bytes;
    let feeds = Arc::new(feed::FeedSignals::default());
    let heard = Arc::clone(&feeds);
    let listener = store.with_store(|store| {
        store.listen_changes(Box::new(move |feed, position| heard.notify(feed, position)))
    })?;
    let shared = Arc::new(Shared {
        store,
        config,
        feeds,
        reads: shared_reads::SharedReads::default(),
        _listener: listener,
    });
    Ok(Router::new()
        .route(
            "/v1/health",
            get(|| async { axum::Json(serde_json::json!({ "ok": true })) }),
        )
        .route("/v1/namespaces/{ns}/push", post(journal::push::<A>))
        .route("/v1/namespaces/{ns}/changes", get(journal::changes::<A>))
        .route(
            "/v1/namespaces/{ns}/workflows/{workflow}/events",
            get(journal::events::<A>),
        )
        .route(
            "/v1/namespaces/{ns}/workflows/{workflow}/lease",
            get(leases::load::<A>).post(leases::take::<A>),
        )
        .route(
            "/v1/namespaces/{ns}/workflows/{workflow}/lease/release",
            post(leases::release::<A>),
        )
        .route("/v1/namespaces/{ns}/outbox/claim", post(outbox::claim::<A>))
        .route(
            "/v1/namespaces/{ns}/outbox/complete",
            post(outbox::complete::<A>),
        )
        .route("/v1/namespaces/{ns}/outbox/retry", post(outbox::retry::<A>))
        .route("/v1/namespaces/{ns}/outbox/fail", post(outbox::fail::<A>))
        .fallback(|| async { ApiError::new(Error::not_found("route", "no such endpoint")) })
        .layer(DefaultBodyLimit::max(max_body))
        .layer(CorsLayer::permissive())
        .with_state(shared))
}

/// Milliseconds since the Unix epoch by the server's clock.
pub(crate) fn now_millis() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| {
            Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
        })
}
