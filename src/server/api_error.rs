//! Errors as HTTP answers: the store's code and message as JSON, `{ code, message, ... }`,
//! with the same structured fields the JS client carries on a `RunStoreError`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::error::Error;

/// A failed request: its HTTP status, the store error, and fields beyond the error's own
/// (the server's events on a push's `SEQUENCE_CONFLICT`). The extra fields are boxed: with
/// keys kept in order a map is large, and every handler's `Result` carries this error.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub error: Error,
    pub extra: Box<Map<String, Value>>,
}

impl ApiError {
    /// `error` with the status its code calls for.
    pub fn new(error: Error) -> Self {
        let status = status_of(&error);
        Self {
            status,
            error,
            extra: Box::default(),
        }
    }

    /// `error` under another status (401 or 403 for `UNAUTHORIZED`, 413 for a body too large).
    pub fn with_status(status: u16, error: Error) -> Self {
        Self {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            error,
            extra: Box::default(),
        }
    }

    /// The error with `key: value` in its JSON.
    pub fn field(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("code".into(), json!(self.error.code()));
        body.insert("message".into(), json!(self.error.to_string()));
        if let Value::Object(fields) = error_fields(&self.error) {
            body.extend(fields);
        }
        body.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(body)
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        Self::new(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

fn status_of(error: &Error) -> StatusCode {
    match error.code() {
        "INVALID_INPUT" | "SERIALIZATION" => StatusCode::BAD_REQUEST,
        "UNAUTHORIZED" => StatusCode::UNAUTHORIZED,
        "NOT_FOUND" => StatusCode::NOT_FOUND,
        "SEQUENCE_CONFLICT" | "CONFLICT" | "IDEMPOTENCY_CONFLICT" | "FENCED" | "LEASE_HELD" => {
            StatusCode::CONFLICT
        }
        "BUSY" | "UNAVAILABLE" => StatusCode::SERVICE_UNAVAILABLE,
        "STORAGE_FULL" => StatusCode::INSUFFICIENT_STORAGE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The structured fields of `error`, named as in JS (src/wasm/convert.rs).
fn error_fields(error: &Error) -> Value {
    match error.cause() {
        Error::SequenceConflict {
            workflow_id,
            expected,
            actual,
        } => json!({ "workflowId": workflow_id, "expected": expected, "actual": actual }),
        Error::Conflict {
            entity,
            id,
            expected,
            actual,
        } => json!({ "entity": entity, "id": id, "expected": expected, "actual": actual }),
        Error::LifecycleConflict {
            workflow_id,
            event,
            status,
        } => json!({ "entity": "workflow", "id": workflow_id, "event": event, "status": status }),
        Error::IdempotencyConflict {
            entity,
            id,
            key,
            owner,
        } => json!({ "entity": entity, "id": id, "key": key, "owner": owner }),
        Error::Fenced {
            workflow_id,
            holder,
            epoch,
            current_holder,
            current_epoch,
        } => json!({
            "workflowId": workflow_id,
            "holder": holder,
            "epoch": epoch,
            "currentHolder": current_holder,
            "currentEpoch": current_epoch,
        }),
        Error::LeaseHeld {
            workflow_id,
            holder,
            epoch,
            expires_in_ms,
        } => json!({
            "workflowId": workflow_id,
            "holder": holder,
            "epoch": epoch,
            "expiresInMs": expires_in_ms,
        }),
        Error::NotFound { entity, id } => json!({ "entity": entity, "id": id }),
        Error::InvalidInput { field, .. } => json!({ "field": field }),
        _ => json!({}),
    }
}
