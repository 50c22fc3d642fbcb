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
use serde::Deserialize;
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::scope::Scope;
use super::{now_millis, Shared, StoreAccess};
use crate::error::{Error, Result};
use crate::{
    ClaimFilter, ClaimScope, Millis, Operation, OperationOutcome, Step, StepStore, MAX_PAGE_LIMIT,
};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClaimRequest {
    limit: u32,
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CompleteRequest {
    dispatch_key: String,
    claim_token: u64,
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RetryRequest {
    dispatch_key: String,
    claim_token: u64,
    next_attempt: u32,
    visible_after: Millis,
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FailRequest {
    dispatch_key: String,
    claim_token: u64,
    reason: String,
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
    let outcome = run(&shared, &scope, request.request_id, operation).await?;
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
    let operation = Operation::CompleteOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
    };
    run(&shared, &scope, request.request_id, operation).await?;
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
    let operation = Operation::RetryOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
        next_attempt: request.next_attempt,
        visible_after: request.visible_after,
    };
    let outcome = run(&shared, &scope, request.request_id, operation).await?;
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
    let operation = Operation::FailOutbox {
        dispatch_key: scope.key("dispatchKey", &request.dispatch_key)?,
        claim_token: request.claim_token,
        reason: request.reason,
    };
    run(&shared, &scope, request.request_id, operation).await?;
    Ok(Json(json!({})))
}

/// Commits `operation` as a step of its own, under the namespace's form of `request_id`.
async fn run<A: StoreAccess>(
    shared: &Shared<A>,
    scope: &Scope,
    request_id: Option<String>,
    operation: Operation,
) -> Result<OperationOutcome, ApiError> {
    let request_id = request_id
        .map(|id| scope.key("requestId", &id))
        .transpose()?;
    let step = Step {
        request_id,
        operations: vec![operation],
    };
    let outcome = shared
        .call(move |store| commit_one(store, &step))
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(outcome)
}

/// The step's outcome: the recorded one when its request id committed before (a claim re-sent
/// at a later time is another operation to the store's fingerprint, yet the same request).
fn commit_one<S: StepStore>(store: &S, step: &Step) -> Result<OperationOutcome> {
    let recorded = |store: &S| -> Result<Option<Vec<OperationOutcome>>> {
        match &step.request_id {
            Some(id) => Ok(store.request_outcome(id)?.map(|record| record.outcomes)),
            None => Ok(None),
        }
    };
    let outcomes = match recorded(store)? {
        Some(outcomes) => outcomes,
        None => match store.commit(step) {
            Ok(outcome) => outcome.outcomes,
            Err(Error::Conflict {
                entity: "request", ..
            }) => recorded(store)?.unwrap_or_default(),
            Err(other) => return Err(other),
        },
    };
    outcomes
        .into_iter()
        .next_back()
        .ok_or_else(|| Error::Corrupt {
            message: "a recorded step has no outcome".into(),
        })
}

fn unexpected() -> ApiError {
    ApiError::new(Error::Corrupt {
        message: "the request id was recorded for another kind of call".into(),
    })
}
