//! The visibility index's rules, whatever the backend: checks of records and filters, the rule
//! that a record never goes backwards, search-attribute comparisons, and its cursors.

use super::checks::{check_id, check_size, encode_document, MAX_DOCUMENT_BYTES, MAX_ID_BYTES};
use crate::error::{Error, Result};
use crate::model::visibility::*;
use crate::model::Millis;

/// The entity name in errors about a record.
pub(crate) const RECORD: &str = "visibility";

/// The first byte of every cursor, so that a later format can tell old cursors apart.
const CURSOR_VERSION: u8 = 1;

/// The SQL of a comparison with `op`, from the store's `operand_match` for one SQL operator:
/// `in` matches an equal element, `ne` is the negated `eq`.
pub(crate) fn comparison(op: AttributeOp, operand_match: fn(&'static str) -> String) -> String {
    match op {
        AttributeOp::Gt => operand_match(">"),
        AttributeOp::Gte => operand_match(">="),
        AttributeOp::Lt => operand_match("<"),
        AttributeOp::Lte => operand_match("<="),
        AttributeOp::Ne => format!("NOT {}", operand_match("=")),
        _ => operand_match("="),
    }
}

/// A search predicate that passed [`check_filter`].
pub(crate) enum Predicate<'f> {
    /// `exists` (`present`) or `notExists`.
    Presence { key: &'f str, present: bool },
    /// A comparison, or `in` (whose operand is an array), with the operand as JSON text.
    Compare {
        key: &'f str,
        op: AttributeOp,
        operand: String,
    },
}

/// Checks every field of a listing's filter, in the order of its fields, so that each store
/// refuses the same filter with the same error, and returns the search predicates checked.
pub(crate) fn check_filter(filter: &VisibilityFilter) -> Result<Vec<Predicate<'_>>> {
    if let Some(workflow_type) = &filter.workflow_type {
        check_id("filter.workflowType", workflow_type)?;
    }
    for (i, status) in filter.statuses.iter().enumerate() {
        check_id(&format!("filter.statuses[{i}]"), status)?;
    }
    check_range("filter.startTime", filter.start_time)?;
    check_range("filter.closeTime", filter.close_time)?;
    if filter.search.len() > MAX_PREDICATES {
        return Err(Error::invalid(
            "filter.search",
            format!(
                "has {} predicates; the limit is {MAX_PREDICATES}",
                filter.search.len()
            ),
        ));
    }
    filter
        .search
        .iter()
        .enumerate()
        .map(|(i, predicate)| check_predicate(&format!("filter.search[{i}]"), predicate))
        .collect()
}

fn check_range(field: &str, range: Option<TimeRange>) -> Result<()> {
    if let Some(TimeRange {
        from: Some(from),
        before: Some(before),
    }) = range
    {
        if from > before {
            return Err(Error::invalid(
                field,
                format!("from {from} is after before {before}"),
            ));
        }
    }
    Ok(())
}

fn check_predicate<'f>(field: &str, predicate: &'f AttributePredicate) -> Result<Predicate<'f>> {
    check_attribute_key(&format!("{field}.key"), &predicate.key)?;
    let key = predicate.key.as_str();
    let value_field = format!("{field}.value");
    let value = predicate.value.as_ref().filter(|v| !v.is_null());
    let present = match predicate.op {
        AttributeOp::Exists => Some(true),
        AttributeOp::NotExists => Some(false),
        _ => None,
    };
    if let Some(present) = present {
        if value.is_some() {
            return Err(Error::invalid(
                value_field,
                "exists and notExists take no value",
            ));
        }
        return Ok(Predicate::Presence { key, present });
    }
    let operand = check_operand(&value_field, predicate.op, value)?;
    let operand = serde_json::to_string(operand)?;
    check_size(&value_field, operand.len(), MAX_DOCUMENT_BYTES)?;
    Ok(Predicate::Compare {
        key,
        op: predicate.op,
        operand,
    })
}

fn is_scalar(value: &serde_json::Value) -> bool {
    value.is_string() || value.is_number() || value.is_boolean()
}

/// Checks the operand of a comparison or of `in` and returns it.
pub(crate) fn check_operand<'v>(
    field: &str,
    op: AttributeOp,
    value: Option<&'v serde_json::Value>,
) -> Result<&'v serde_json::Value> {
    let Some(value) = value else {
        return Err(Error::invalid(field, "is required for this operator"));
    };
    if op == AttributeOp::In {
        return match value.as_array() {
            Some(items) if !items.is_empty() && items.iter().all(is_scalar) => Ok(value),
            _ => Err(Error::invalid(
                field,
                "in needs a non-empty array of strings, numbers or booleans",
            )),
        };
    }
    if !is_scalar(value) {
        return Err(Error::invalid(
            field,
            "must be a string, a number or a boolean",
        ));
    }
    if op.is_ordering() && value.is_boolean() {
        return Err(Error::invalid(field, "ordering needs a string or a number"));
    }
    Ok(value)
}

/// Checks that a search-attribute key is a plain name: 1 to [`MAX_ATTRIBUTE_KEY_BYTES`] ASCII
/// letters, digits, `_`, `-` or `.`. Such a key cannot end the quoted JSON path label.
pub(crate) fn check_attribute_key(field: &str, key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_ATTRIBUTE_KEY_BYTES {
        return Err(Error::invalid(
            field,
            format!("must be 1 to {MAX_ATTRIBUTE_KEY_BYTES} bytes long"),
        ));
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if let Some(bad) = key.chars().find(|&c| !plain(c)) {
        return Err(Error::invalid(
            field,
            format!("{key:?} contains {bad:?}; use letters, digits, '_', '-' and '.'"),
        ));
    }
    Ok(())
}

/// Checks a record and returns its search attributes as JSON text.
pub(crate) fn check_record(record: &VisibilityRecord) -> Result<String> {
    check_id("workflowId", &record.workflow_id)?;
    check_id("runId", &record.run_id)?;
    check_id("workflowType", &record.workflow_type)?;
    check_id("status", &record.status)?;
    if let Some(close_time) = record.close_time {
        if close_time < record.start_time {
            return Err(Error::invalid(
                "closeTime",
                format!("{close_time} is before startTime {}", record.start_time),
            ));
        }
    }
    if let Some(step) = &record.failed_step {
        check_size("failedStep", step.len(), MAX_ID_BYTES)?;
    }
    if let Some(reason) = &record.failure_reason {
        check_size("failureReason", reason.len(), MAX_DOCUMENT_BYTES)?;
    }
    let attributes = record
        .search_attributes
        .as_object()
        .ok_or_else(|| Error::invalid("searchAttributes", "must be a JSON object"))?;
    for key in attributes.keys() {
        check_attribute_key("searchAttributes", key)?;
    }
    encode_document("searchAttributes", &record.search_attributes)
}

/// What [`check_forward`] needs of the stored record.
pub(crate) struct Stored {
    pub(crate) run_id: String,
    pub(crate) start_time: Millis,
    pub(crate) closed: bool,
    pub(crate) head: Option<u64>,
}

/// Refuses `record` when it would take the stored record backwards, as
/// [`VisibilityStore::upsert_visibility`] states.
pub(crate) fn check_forward(record: &VisibilityRecord, stored: &Stored) -> Result<()> {
    let conflict = |expected, actual| Error::Conflict {
        entity: RECORD,
        id: record.workflow_id.clone(),
        expected,
        actual,
    };
    if let (Some(given), Some(head)) = (record.head, stored.head) {
        if given < head {
            return Err(conflict(Some(given), Some(head)));
        }
        return Ok(());
    }
    let older_run = record.run_id != stored.run_id && record.start_time < stored.start_time;
    let reopened = record.run_id == stored.run_id && stored.closed && record.close_time.is_none();
    if older_run || reopened {
        return Err(conflict(None, None));
    }
    Ok(())
}

pub(crate) fn encode_cursor(start_time: Millis, workflow_id: &str) -> String {
    let mut bytes = vec![CURSOR_VERSION];
    bytes.extend_from_slice(&start_time.to_be_bytes());
    bytes.extend_from_slice(workflow_id.as_bytes());
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn decode_cursor(cursor: &str) -> Result<(Millis, String)> {
    let malformed = || Error::invalid("cursor", "is not a cursor this store returned");
    if cursor.len() > 2 * (9 + MAX_ID_BYTES) || !cursor.len().is_multiple_of(2) {
        return Err(malformed());
    }
    let bytes = (0..cursor.len())
        .step_by(2)
        .map(|i| {
            let pair = cursor.get(i..i + 2)?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(malformed)?;
    let (header, id) = bytes.split_at_checked(9).ok_or_else(malformed)?;
    if header[0] != CURSOR_VERSION || id.is_empty() {
        return Err(malformed());
    }
    let start_time = Millis::from_be_bytes(header[1..9].try_into().map_err(|_| malformed())?);
    let workflow_id = String::from_utf8(id.to_vec()).map_err(|_| malformed())?;
    Ok((start_time, workflow_id))
}
