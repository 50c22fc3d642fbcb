//! Conversions between JS values and the store's Rust types, and errors as JS `Error`s.
//!
//! An argument is read once, by `walk.rs`, into plain Rust data that serde then converts:
//! serde never calls into JS, so the caller's getters and Proxies run once, an exception they
//! throw is INVALID_INPUT naming the field, and a value cannot change between a check and its
//! use. `NaN`, lone surrogates, cycles, exotic objects and oversized values are refused by the
//! walk, naming the field.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

use super::value::{self, DeError};
use super::{intrinsics, to_js, walk};
use crate::error::{clip, clip_to, MAX_FIELD_CHARS};
use crate::Error;

/// Converts a JS argument to `T`, or throws INVALID_INPUT naming `field` (and the path inside
/// it). An `undefined` argument is a missing one: `None` for an optional `T`, refused
/// otherwise.
pub(crate) fn input<T: DeserializeOwned>(field: &str, value: JsValue) -> Result<T, JsValue> {
    convert(field, &value).map_err(js_error)
}

/// As [`input`], with `T::default()` for an absent (`undefined` or `null`) argument.
pub(crate) fn input_or_default<T: DeserializeOwned + Default>(
    field: &str,
    value: JsValue,
) -> Result<T, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    input(field, value)
}

fn convert<T: DeserializeOwned>(field: &str, value: &JsValue) -> Result<T, Error> {
    from_tree(field, walk::read(field, value)?)
}

pub(super) fn from_tree<T: DeserializeOwned>(field: &str, tree: value::Value) -> Result<T, Error> {
    value::deserialize(field, tree).map_err(|error| {
        let DeError {
            reason,
            path,
            unknown_key,
        } = error;
        let mut field = path.unwrap_or_else(|| field.to_owned());
        if let Some(key) = unknown_key {
            field = format!("{field}.{}", clip(&key));
        }
        Error::invalid(clip_to(&field, MAX_FIELD_CHARS), reason)
    })
}

/// Converts a result to what a JS caller gets: the value as plain JS data (objects, arrays,
/// `null` for absent values, `Uint8Array` for bytes; see `to_js.rs`) or a thrown [`js_error`].
pub(crate) fn output<T: Serialize>(result: Result<T, Error>) -> Result<JsValue, JsValue> {
    result
        .and_then(|value| to_js::to_js(&value))
        .map_err(js_error)
}

/// Converts a result the store gave as JSON text (see `SqliteStore::read_history_json`): one
/// `JSON.parse` builds the JS value. Only for results with no bytes, whose numbers JS reads
/// exactly: the text has no other way to say `Uint8Array` or a larger integer.
pub(crate) fn output_json(result: Result<String, Error>) -> Result<JsValue, JsValue> {
    let text = result.map_err(js_error)?;
    intrinsics::from_json(&text, None, None).map_err(|_| {
        js_error(Error::Serialization {
            message: "the store's JSON text did not parse".into(),
        })
    })
}

/// The JS form of an error: an `Error` whose `name` is `RunStoreError`, with `code` and the
/// variant's structured fields as own properties (defined, not assigned: see `to_js.rs`).
pub(crate) fn js_error(error: Error) -> JsValue {
    let mut fields = serde_json::Map::new();
    fields.insert("code".into(), error.code().into());
    if let Error::Operation { index, .. } = &error {
        fields.insert("operation".into(), (*index).into());
    }
    for (key, value) in error_fields(error.cause()) {
        fields.insert(key.into(), value);
    }
    let fields = serde_json::Value::Object(fields).to_string();
    intrinsics::make_error(&error.to_string(), &fields)
        // Only a browser out of memory gets here: an error still, if a plainer one.
        .unwrap_or_else(|_| JsValue::from_str(&error.to_string()))
}

fn error_fields(error: &Error) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::Value;
    let text = |s: &str| Value::from(s);
    let revision = |r: &Option<u64>| r.map_or(Value::Null, Value::from);
    match error {
        Error::SequenceConflict {
            workflow_id,
            expected,
            actual,
        } => vec![
            ("workflowId", text(workflow_id)),
            ("expected", Value::from(*expected)),
            ("actual", Value::from(*actual)),
        ],
        Error::Conflict {
            entity,
            id,
            expected,
            actual,
        } => vec![
            ("entity", text(entity)),
            ("id", text(id)),
            ("expected", revision(expected)),
            ("actual", revision(actual)),
        ],
        Error::LifecycleConflict {
            workflow_id,
            event,
            status,
        } => vec![
            ("entity", text("workflow")),
            ("id", text(workflow_id)),
            ("event", text(event)),
            ("status", text(status)),
        ],
        Error::IdempotencyConflict {
            entity,
            id,
            key,
            owner,
        } => vec![
            ("entity", text(entity)),
            ("id", text(id)),
            ("key", text(key)),
            ("owner", text(owner)),
        ],
        Error::NotFound { entity, id } => vec![("entity", text(entity)), ("id", text(id))],
        Error::InvalidInput { field, .. } => vec![("field", text(field))],
        Error::Unavailable { request_id, .. } => {
            vec![("requestId", request_id.as_deref().map_or(Value::Null, text))]
        }
        Error::SchemaTooNew { found, supported } => vec![
            ("found", Value::from(*found)),
            ("supported", Value::from(*supported)),
        ],
        _ => Vec::new(),
    }
}
