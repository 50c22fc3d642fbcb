//! Leases on workflows: a device takes a workflow's lease, renews it and releases it; a push
//! under a lease carries its holder and epoch and is fenced when they are not the lease's (see
//! [`crate::LeaseStore`]). Expiry is counted on this server's clock; answers say how long the
//! lease lasts (`ttlMs`), which a device counts on its own monotonic clock from when it asked.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::scope::Scope;
use super::{now_millis, Shared, StoreAccess};
use crate::{Lease, LeaseStore, Millis};

/// A take (no `epoch`) or a renewal (the epoch held) of a workflow's lease.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TakeRequest {
    pub holder: String,
    #[serde(default)]
    pub epoch: Option<u64>,
    pub ttl_ms: u64,
}

/// A release of the lease `holder` holds under `epoch`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseRequest {
    pub holder: String,
    pub epoch: u64,
}

/// A lease as a device sees it: how long it lasts from now, never the server's clock alone.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseAnswer {
    pub workflow_id: String,
    pub holder: String,
    pub epoch: u64,
    /// Whether the lease holds now.
    pub live: bool,
    /// How long it holds from now (0 once expired or released).
    pub ttl_ms: u64,
    /// When it ends by the server's clock (0 once released).
    pub expires_at: Millis,
}

fn answer(scope: &Scope, lease: Lease, now: Millis) -> LeaseAnswer {
    LeaseAnswer {
        live: lease.live_at(now),
        ttl_ms: u64::try_from(lease.expires_at - now).unwrap_or(0),
        workflow_id: scope.client_workflow(lease.workflow_id),
        holder: lease.holder,
        epoch: lease.epoch,
        expires_at: lease.expires_at,
    }
}

pub(crate) async fn take<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path((namespace, workflow_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<LeaseAnswer>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: TakeRequest = shared.body(body)?;
    let workflow = scope.workflow("workflowId", &workflow_id)?;
    let now = now_millis();
    let lease = shared
        .call(move |store| {
            store.take_lease(
                &workflow,
                &request.holder,
                request.epoch,
                request.ttl_ms,
                now,
            )
        })
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(Json(answer(&scope, lease, now)))
}

pub(crate) async fn release<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path((namespace, workflow_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: ReleaseRequest = shared.body(body)?;
    let workflow = scope.workflow("workflowId", &workflow_id)?;
    shared
        .call(move |store| store.release_lease(&workflow, &request.holder, request.epoch))
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(Json(json!({})))
}

pub(crate) async fn load<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path((namespace, workflow_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let workflow = scope.workflow("workflowId", &workflow_id)?;
    let now = now_millis();
    let lease = shared
        .call(move |store| store.load_lease(&workflow))
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(Json(
        json!({ "lease": lease.map(|lease| answer(&scope, lease, now)) }),
    ))
}
