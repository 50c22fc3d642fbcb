//! The namespace's outbox for backend workers: claim the rows pushed with journal segments,
//! then complete, retry or fail each under its claim token. Each call is one step of the
//! store; with a request id it is applied once however often it is sent (a claim re-sent after
//! a lost answer gets the same rows and tokens back).

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
use crate::error::{Error, Result};
use crate::{
    request_fingerprint, ClaimFilter, ClaimScope, Millis, Operation, OperationOutcome, RequestKey,
    StepStore, MAX_PAGE_LIMIT,
};

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClaimRequest {
    limit: u32,
    #[serde(skip_serializing)]
    request_id: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CompleteRequest {
    dispatch_key: String,
    claim_token: u64,
    #[serde(skip_serializing)]
    request_id: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RetryRequest {
    dispatch_key: String,
    claim_token: u64,
    next_attempt: u32,
    visible_after: Millis,
    #[serde(skip_serializing)]
    request_id: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FailRequest {
    dispatch_key: String,
    claim_token: u64,
    reason: String,
    #[serde(skip_serializing)]
    request_id: Option<String>,
}

pub(crate) async fn claim<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: ClaimRequest = shared.body(body)?;
    let key = request_key(&scope, "claim", request.request_id.as_deref(), &request)?;
    if request.limit > MAX_PAGE_LIMIT {
        return Err(ApiError::new(Error::invalid(
            "limit",
            format!("{} is above {MAX_PAGE_LIMIT}", request.limit),
        )));
    }
    let operation = Operation::ClaimOutbox {
        now: now_millis(),
        limit: request.limit,
        filter: ClaimFilter {
            exclude_workflows: Vec::new(),
            scope: Some(ClaimScope {
                namespace: Some(scope.namespace().to_owned()),
                task_queue: None,
                node: None,
            }),
        },
    };
    let outcome = run(&shared, &scope, key, operation).await?;
    let OperationOutcome::ClaimOutbox { rows } = outcome else {
        return Err(unexpected());
    };
    let rows: Vec<_> = rows.into_iter().map(|row| scope.unscope_row(row)).collect();
    Ok(Json(json!({ "rows": rows })))
}

pub(crate) async fn complete<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: CompleteRequest = shared.body(body)?;
    let key = request_key(&scope, "complete", request.request_id.as_deref(), &request)?;
    let operation = Operation::CompleteOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
    };
    run(&shared, &scope, key, operation).await?;
    Ok(Json(json!({})))
}

pub(crate) async fn retry<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: RetryRequest = shared.body(body)?;
    let key = request_key(&scope, "retry", request.request_id.as_deref(), &request)?;
    let operation = Operation::RetryOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
        next_attempt: request.next_attempt,
        visible_after: request.visible_after,
    };
    let outcome = run(&shared, &scope, key, operation).await?;
    let OperationOutcome::RetryOutbox { status } = outcome else {
        return Err(unexpected());
    };
    Ok(Json(json!({ "status": status })))
}

pub(crate) async fn fail<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: FailRequest = shared.body(body)?;
    let key = request_key(&scope, "fail", request.request_id.as_deref(), &request)?;
    let operation = Operation::FailOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
        reason: request.reason,
    };
    run(&shared, &scope, key, operation).await?;
    Ok(Json(json!({})))
}

/// The request key of a call of `route` under the client's `request_id`: the id in the
/// namespace's scope, and the fingerprint of the request as the client sent it. A claim re-sent later
/// becomes another operation (the server stamps its time into it), yet it is the same
/// request; the same id with another body is another request.
fn request_key(
    scope: &Scope,
    route: &str,
    request_id: Option<&str>,
    request: &impl Serialize,
) -> Result<Option<RequestKey>, ApiError> {
    let Some(id) = request_id else {
        return Ok(None);
    };
    Ok(Some(
        scope.request_key(id, request_fingerprint(route, request)?)?,
    ))
}

/// Commits `operation` as a step of its own under `key`: applied once, a replay of the same
/// request answered with its recorded outcome, the same id with another request `CONFLICT`.
async fn run<A: StoreAccess>(
    shared: &Shared<A>,
    scope: &Scope,
    key: Option<RequestKey>,
    operation: Operation,
) -> Result<OperationOutcome, ApiError> {
    let outcome = shared
        .call(move |store| {
            let outcome = store.commit_request(key.as_ref(), &[operation])?;
            outcome
                .outcomes
                .into_iter()
                .next_back()
                .ok_or_else(|| Error::Corrupt {
                    message: "a recorded step has no outcome".into(),
                })
        })
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(outcome)
}

fn unexpected() -> ApiError {
    ApiError::new(Error::Corrupt {
        message: "the request id was recorded for another kind of call".into(),
    })
}
