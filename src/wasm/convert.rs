//! Conversions between JS values and the store's Rust types, and errors as JS `Error`s.
//!
//! Input is checked before serde sees it: serde-wasm-bindgen would quietly turn `NaN` inside a
//! JSON payload into `null` and a lone surrogate into U+FFFD, and a cyclic object would recurse
//! until the stack runs out. Each of those is INVALID_INPUT naming the field instead.

use js_sys::{Array, JsString, Object, Reflect, Uint8Array};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use crate::{Error, MAX_BLOB_BYTES};

/// Nesting deeper than this is refused (it also stops cycles).
const MAX_DEPTH: usize = 64;

/// Converts a JS argument to `T`, or throws INVALID_INPUT naming `field` (and the path inside
/// it).
pub(crate) fn input<T: DeserializeOwned + Serialize>(
    field: &str,
    value: JsValue,
) -> Result<T, JsValue> {
    convert(field, value).map_err(js_error)
}

/// As [`input`], with `T::default()` for an absent (`undefined` or `null`) argument.
pub(crate) fn input_or_default<T: DeserializeOwned + Serialize + Default>(
    field: &str,
    value: JsValue,
) -> Result<T, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    input(field, value)
}

fn convert<T: DeserializeOwned + Serialize>(field: &str, value: JsValue) -> Result<T, Error> {
    check_value(field, &value, 0)?;
    let deserializer = serde_wasm_bindgen::Deserializer::from(value.clone());
    let converted: T = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let field = match path.as_str() {
            "." | "" => field.to_owned(),
            index if index.starts_with('[') => format!("{field}{index}"),
            path => format!("{field}.{path}"),
        };
        Error::invalid(field, error.into_inner().to_string())
    })?;
    // serde-wasm-bindgen reads a struct by looking up its known fields only, so an unknown
    // (say, misspelt) field would pass unseen: the value read back must account for every key.
    let echo = converted
        .serialize(&serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true))
        .map_err(|e| Error::invalid(field, e.to_string()))?;
    reject_unknown_keys(field, &value, &echo)?;
    Ok(converted)
}

/// Fails on the first key of `input` (not `undefined`) that `echo`, the converted value
/// serialised back, does not have.
fn reject_unknown_keys(path: &str, input: &JsValue, echo: &JsValue) -> Result<(), Error> {
    if Array::is_array(input) && Array::is_array(echo) {
        let (input, echo) = (Array::from(input), Array::from(echo));
        for index in 0..input.length().min(echo.length()) {
            let item_path = format!("{path}[{index}]");
            reject_unknown_keys(&item_path, &input.get(index), &echo.get(index))?;
        }
        return Ok(());
    }
    if !is_plain_object(input) || !is_plain_object(echo) {
        return Ok(());
    }
    for key in Object::keys(input.unchecked_ref::<Object>()).iter() {
        let value = Reflect::get(input, &key).unwrap_or(JsValue::UNDEFINED);
        if value.is_undefined() || value.is_null() {
            // An absent optional field, however it is spelt.
            continue;
        }
        let name = key.as_string().unwrap_or_default();
        let item_path = format!("{path}.{name}");
        if !Reflect::has(echo, &key).unwrap_or(false) {
            return Err(Error::invalid(item_path, "is not a known field"));
        }
        let echoed = Reflect::get(echo, &key).unwrap_or(JsValue::UNDEFINED);
        reject_unknown_keys(&item_path, &value, &echoed)?;
    }
    Ok(())
}

fn is_plain_object(value: &JsValue) -> bool {
    value.is_object()
        && !Array::is_array(value)
        && !value.is_instance_of::<Uint8Array>()
        && !value.is_instance_of::<js_sys::Map>()
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

fn check_value(path: &str, value: &JsValue, depth: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(
            path,
            format!("is nested deeper than {MAX_DEPTH} levels (or is cyclic)"),
        ));
    }
    if let Some(number) = value.as_f64() {
        if !number.is_finite() {
            return Err(Error::invalid(
                path,
                format!("{number} is not a finite number"),
            ));
        }
    } else if let Some(text) = value.dyn_ref::<JsString>() {
        check_text(path, text)?;
    } else if value.is_symbol() || value.is_function() {
        return Err(Error::invalid(path, "is not plain data"));
    } else if Array::is_array(value) {
        for (index, item) in Array::from(value).iter().enumerate() {
            check_value(&format!("{path}[{index}]"), &item, depth + 1)?;
        }
    } else if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        // Refused before serde copies it into wasm memory.
        if bytes.length() as usize > MAX_BLOB_BYTES {
            return Err(Error::invalid(
                path,
                format!(
                    "is {} bytes long; the limit is {MAX_BLOB_BYTES}",
                    bytes.length()
                ),
            ));
        }
    } else if value.is_object() {
        check_object(path, value.unchecked_ref::<Object>(), depth)?;
    }
    Ok(())
}

/// Accepts plain objects only: serde would read a `Map` without seeing its cycles or its
/// `NaN`s, and a `Date` or class instance as `{}`.
fn check_object(path: &str, object: &Object, depth: usize) -> Result<(), Error> {
    let prototype = Object::get_prototype_of(object);
    if !prototype.is_null() && !Object::get_prototype_of(&prototype).is_null() {
        return Err(Error::invalid(
            path,
            "is not a plain object (a Map, Date or class instance cannot be stored)",
        ));
    }
    for entry in Object::entries(object).iter() {
        let entry = Array::from(&entry);
        let key = entry.get(0);
        let key_text = key.as_string().unwrap_or_default();
        let item_path = format!("{path}.{key_text}");
        if key_text == "__proto__" {
            // It would come back as the object's prototype, not as a field.
            return Err(Error::invalid(
                item_path,
                "__proto__ cannot be a field name",
            ));
        }
        if let Some(key) = key.dyn_ref::<JsString>() {
            check_text(&item_path, key)?;
        }
        check_value(&item_path, &entry.get(1), depth + 1)?;
    }
    Ok(())
}

fn check_text(path: &str, text: &JsString) -> Result<(), Error> {
    if text.is_valid_utf16() {
        Ok(())
    } else {
        Err(Error::invalid(
            path,
            "contains a lone surrogate (not valid Unicode)",
        ))
    }
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
        Error::SchemaTooNew { found, supported } => vec![
            ("found", JsValue::from_f64(f64::from(*found))),
            ("supported", JsValue::from_f64(f64::from(*supported))),
        ],
        _ => Vec::new(),
    }
}
