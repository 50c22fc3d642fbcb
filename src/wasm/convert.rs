//! Conversions between JS values and the store's Rust types, and errors as JS `Error`s.
//!
//! An argument is read once, by `walk.rs`, into plain Rust data that serde then converts:
//! serde never calls into JS, so the caller's getters and Proxies run once, an exception they
//! throw is INVALID_INPUT naming the field, and a value cannot change between a check and its
//! use. `NaN`, lone surrogates, cycles, exotic objects and oversized values are refused by the
//! walk, naming the field.

use js_sys::Reflect;
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

use super::value::{self, DeError};
use super::walk;
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
/// `null` for absent values, `Uint8Array` for bytes) or a thrown [`js_error`].
pub(crate) fn output<T: Serialize>(result: Result<T, Error>) -> Result<JsValue, JsValue> {
    let value = result.map_err(js_error)?;
    let serializer = serde_wasm_bindgen::Serializer::new()
        .serialize_missing_as_null(true)
        .serialize_maps_as_objects(true);
    value.serialize(&serializer).map_err(|e| {
        js_error(Error::Serialization {
            message: e.to_string(),
        })
    })
}

/// Converts a result the store gave as JSON text (see `SqliteStore::read_history_json`): one
/// `JSON.parse` builds the JS value, where [`output`] would build it property by property
/// through calls between wasm and JS. Only for results with no bytes, whose numbers JS reads
/// exactly: the text has no other way to say `Uint8Array` or a larger integer.
pub(crate) fn output_json(result: Result<String, Error>) -> Result<JsValue, JsValue> {
    let text = result.map_err(js_error)?;
    js_sys::JSON::parse(&text).map_err(|_| {
        js_error(Error::Serialization {
            message: "the store's JSON text did not parse".into(),
        })
    })
}

/// The JS form of an error: an `Error` whose `name` is `RunStoreError`, with `code` and the
/// variant's structured fields as own properties.
pub(crate) fn js_error(error: Error) -> JsValue {
    let js = js_sys::Error::new(&error.to_string());
    js.set_name("RunStoreError");
    let set = |key: &str, value: JsValue| {
        // Setting a property on a fresh Error cannot fail.
        let _ = Reflect::set(&js, &JsValue::from_str(key), &value);
    };
    set("code", JsValue::from_str(error.code()));
    if let Error::Operation { index, .. } = &error {
        set("operation", JsValue::from_f64(*index as f64));
    }
    for (key, value) in error_fields(error.cause()) {
        set(key, value);
    }
    js.into()
}

fn error_fields(error: &Error) -> Vec<(&'static str, JsValue)> {
    let text = |s: &str| JsValue::from_str(s);
    let revision = |r: &Option<u64>| r.map_or(JsValue::NULL, |r| JsValue::from_f64(r as f64));
    match error {
        Error::SequenceConflict {
            workflow_id,
            expected,
            actual,
        } => vec![
            ("workflowId", text(workflow_id)),
            ("expected", JsValue::from_f64(*expected as f64)),
            ("actual", JsValue::from_f64(*actual as f64)),
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
        Error::Unavailable { request_id, .. } => vec![(
            "requestId",
            request_id.as_deref().map_or(JsValue::NULL, text),
        )],
        Error::SchemaTooNew { found, supported } => vec![
            ("found", JsValue::from_f64(f64::from(*found))),
            ("supported", JsValue::from_f64(f64::from(*supported))),
        ],
        _ => Vec::new(),
    }
}
