//! Input checks and integer conversions every backend applies before it touches its database:
//! identifiers, sizes, JSON depth, and counts that must fit a signed 64-bit column.

use crate::error::{Error, Result};

/// Converts a caller's unsigned count or sequence to SQLite's signed integer.
pub(crate) fn to_sql_int(field: &str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::invalid(field, format!("{value} exceeds 2^63-1")))
}

/// Converts a stored non-negative integer back; a negative one means the file was tampered with.
pub(crate) fn from_sql_int(column: &str, value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::Corrupt {
        message: format!("column {column} holds negative value {value}"),
    })
}

/// Checks that a caller's identifier is usable: non-empty and of bounded length.
pub(crate) fn check_id(field: &str, value: &str) -> Result<()> {
    check_id_as(|| field.to_owned(), value)
}

/// As [`check_id`], building the field's name only to report a failure: appends and batch
/// inserts check several ids per event or row.
pub(crate) fn check_id_as(field: impl FnOnce() -> String, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field(), "must not be empty"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            field(),
            format!("is {} bytes long; the limit is {MAX_ID_BYTES}", value.len()),
        ));
    }
    Ok(())
}

/// Upper bound on identifiers (workflow ids, keys, names), in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 1024;

/// Upper bound on one encoded journal event or JSON document, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Upper bound on one byte payload (artifact, archive, outbox input, state blob), in bytes.
pub const MAX_BLOB_BYTES: usize = 64 << 20;

/// Deepest nesting of a JSON document the store accepts. serde_json refuses to read more than
/// 128 levels, so a deeper document would be written and then be unreadable.
pub const MAX_JSON_DEPTH: usize = 100;

/// Encodes a caller's JSON document for a TEXT column, refusing one that is too large or too
/// deeply nested to be read back.
pub(crate) fn encode_document(field: &str, value: &serde_json::Value) -> Result<String> {
    check_depth(|| field.to_owned(), value)?;
    let text = serde_json::to_string(value)?;
    check_size(field, text.len(), MAX_DOCUMENT_BYTES)?;
    Ok(text)
}

/// Refuses JSON nested deeper than [`MAX_JSON_DEPTH`], naming the field only on failure.
pub(crate) fn check_depth(field: impl FnOnce() -> String, value: &serde_json::Value) -> Result<()> {
    if nested_deeper_than(value, MAX_JSON_DEPTH) {
        return Err(Error::invalid(
            field(),
            format!("is nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    Ok(())
}

/// Whether `value` has more than `levels` levels of arrays and objects. The recursion stops
/// at `levels`, so it is bounded whatever the input.
fn nested_deeper_than(value: &serde_json::Value, levels: usize) -> bool {
    let deeper = |child: &serde_json::Value| nested_deeper_than(child, levels - 1);
    match value {
        serde_json::Value::Array(items) => levels == 0 || items.iter().any(deeper),
        serde_json::Value::Object(map) => levels == 0 || map.values().any(deeper),
        _ => false,
    }
}

/// Checks a payload against its size limit.
pub(crate) fn check_size(field: &str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::invalid(
            field,
            format!("is {len} bytes long; the limit is {max}"),
        ));
    }
    Ok(())
}
