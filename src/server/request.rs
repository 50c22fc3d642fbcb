//! Reading a request: its namespace admitted first, then its body or query, every failure an
//! [`ApiError`] with a code.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use super::api_error::ApiError;
use super::scope::Scope;
use super::Shared;
use crate::error::Error;

impl<A> Shared<A> {
    /// The namespace's scope, when the request's token is granted it.
    pub(crate) fn admit(&self, headers: &HeaderMap, namespace: &str) -> Result<Scope, ApiError> {
        self.config.grants.admit(headers, namespace)?;
        Ok(Scope::new(namespace))
    }

    /// The JSON body as `T`: 413 `INVALID_INPUT` over the body limit, 400 `INVALID_INPUT`
    /// (field `body`, the reason naming what was wrong and where) for anything else than a `T`.
    pub(crate) fn body<T: DeserializeOwned>(
        &self,
        body: Result<Bytes, BytesRejection>,
    ) -> Result<T, ApiError> {
        let bytes = body.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::with_status(
                    413,
                    Error::invalid(
                        "body",
                        format!(
                            "is larger than the limit of {} bytes",
                            self.config.max_body_bytes
                        ),
                    ),
                )
            } else {
                ApiError::new(Error::invalid("body", rejection.body_text()))
            }
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::new(Error::invalid("body", e.to_string())))
    }
}

/// The query as `T`, or 400 `INVALID_INPUT`.
pub(crate) fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(value)| value)
        .map_err(|rejection| ApiError::new(Error::invalid("query", rejection.body_text())))
}
