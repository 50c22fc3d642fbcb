//! SQL of the visibility index (table `visibility`).
//!
//! A filter compiles to a conjunction of fixed fragments, one per given field, each with `?`
//! placeholders; every value (type, statuses, bounds, attribute paths and operands) is bound.
//! Attribute keys are checked to be plain names before they are put into a bound JSON path.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, OptionalExtension, Row};

use super::{
    check_id, check_size, encode_document, from_sql_int, to_sql_int, SqliteStore,
    MAX_DOCUMENT_BYTES, MAX_ID_BYTES,
};
use crate::error::{Error, Result};
use crate::model::visibility::*;
use crate::model::{Millis, MAX_PAGE_LIMIT};

const COLUMNS: &str = "workflow_id, run_id, workflow_type, status, start_time, close_time, \
                       failed_step, failure_reason, search_attributes, head";

/// The entity name in errors about a record.
pub(crate) const RECORD: &str = "visibility";

/// The listing order; the cursor condition below continues it.
const ORDER: &str = "start_time DESC, workflow_id";

/// Rows after the cursor position `(start_time, workflow_id)` in [`ORDER`]. The separate
/// `start_time <= ?` lets SQLite seek the start-time indexes to the position instead of
/// scanning every earlier page.
const AFTER_CURSOR: &str = "start_time <= ? AND (start_time < ? OR workflow_id > ?)";

/// The first byte of every cursor, so that a later format can tell old cursors apart.
const CURSOR_VERSION: u8 = 1;

/// Matches when the attribute at the bound path compares with `{op}` to one element of the
/// bound JSON operand (a scalar is its own single element) of the same JSON type, integers and
/// reals counting as one type. Parameters: operand, path, path, path.
fn operand_match(op: &'static str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM json_each(?) AS operand \
         WHERE json_extract(search_attributes, ?) {op} operand.value \
           AND (operand.type = json_type(search_attributes, ?) \
                OR (operand.type IN ('integer', 'real') \
                    AND json_type(search_attributes, ?) IN ('integer', 'real'))))"
    )
}

/// The WHERE clause of a listing under construction: fragments joined by AND, with their
/// parameters in placeholder order.
#[derive(Default)]
struct Conditions {
    fragments: Vec<String>,
    params: Vec<SqlValue>,
}

impl Conditions {
    fn push(&mut self, fragment: impl Into<String>, params: impl IntoIterator<Item = SqlValue>) {
        self.fragments.push(fragment.into());
        self.params.extend(params);
    }

    fn sql(&self) -> String {
        if self.fragments.is_empty() {
            return "1".to_owned();
        }
        self.fragments.join(" AND ")
    }
}

fn text(value: &str) -> SqlValue {
    SqlValue::Text(value.to_owned())
}

fn compile(filter: &VisibilityFilter) -> Result<Conditions> {
    let predicates = check_filter(filter)?;
    let mut conditions = Conditions::default();
    if let Some(workflow_type) = &filter.workflow_type {
        conditions.push("workflow_type = ?", [text(workflow_type)]);
    }
    if !filter.statuses.is_empty() {
        let statuses = serde_json::to_string(&filter.statuses)?;
        conditions.push(
            "status IN (SELECT value FROM json_each(?))",
            [SqlValue::Text(statuses)],
        );
    }
    push_range(&mut conditions, "start_time", filter.start_time);
    push_range(&mut conditions, "close_time", filter.close_time);
    for predicate in predicates {
        push_predicate(&mut conditions, predicate);
    }
    Ok(conditions)
}

fn push_range(conditions: &mut Conditions, column: &'static str, range: Option<TimeRange>) {
    let Some(range) = range else { return };
    conditions.push(format!("{column} IS NOT NULL"), []);
    if let Some(from) = range.from {
        conditions.push(format!("{column} >= ?"), [SqlValue::Integer(from)]);
    }
    if let Some(before) = range.before {
        conditions.push(format!("{column} < ?"), [SqlValue::Integer(before)]);
    }
}

fn push_predicate(conditions: &mut Conditions, predicate: Predicate<'_>) {
    match predicate {
        Predicate::Presence { key, present } => {
            let test = if present { "IS NOT NULL" } else { "IS NULL" };
            conditions.push(
                format!("json_type(search_attributes, ?) {test}"),
                [attribute_path(key)],
            );
        }
        Predicate::Compare { key, op, operand } => {
            let fragment = comparison(op, operand_match);
            let path = attribute_path(key);
            let params = [SqlValue::Text(operand), path.clone(), path.clone(), path];
            conditions.push(fragment, params);
        }
    }
}

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

/// The JSON path of a search attribute; [`check_attribute_key`] keeps the key inside its
/// quotes.
fn attribute_path(key: &str) -> SqlValue {
    text(&format!("$.\"{key}\""))
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

fn record_from_row(row: &Row<'_>) -> Result<VisibilityRecord> {
    let attributes: String = row.get(8)?;
    Ok(VisibilityRecord {
        workflow_id: row.get(0)?,
        run_id: row.get(1)?,
        workflow_type: row.get(2)?,
        status: row.get(3)?,
        start_time: row.get(4)?,
        close_time: row.get(5)?,
        failed_step: row.get(6)?,
        failure_reason: row.get(7)?,
        search_attributes: serde_json::from_str(&attributes)?,
        head: row
            .get::<_, Option<i64>>(9)?
            .map(|head| from_sql_int("head", head))
            .transpose()?,
    })
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

impl VisibilityStore for SqliteStore {
    fn upsert_visibility(&self, record: &VisibilityRecord) -> Result<()> {
        let attributes = check_record(record)?;
        let head = record
            .head
            .map(|head| to_sql_int("head", head))
            .transpose()?;
        let tx = self.write_tx()?;
        let stored = tx
            .prepare_cached(
                "SELECT run_id, start_time, close_time IS NOT NULL, head
                 FROM visibility WHERE workflow_id = ?1",
            )?
            .query_row([&record.workflow_id], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get::<_, Option<i64>>(3)?,
                ))
            })
            .optional()?;
        if let Some((run_id, start_time, closed, head)) = stored {
            let head = head.map(|h| from_sql_int("head", h)).transpose()?;
            check_forward(
                record,
                &Stored {
                    run_id,
                    start_time,
                    closed,
                    head,
                },
            )?;
        }
        tx.prepare_cached(&format!(
            "INSERT INTO visibility ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (workflow_id) DO UPDATE SET
               run_id = excluded.run_id,
               workflow_type = excluded.workflow_type,
               status = excluded.status,
               start_time = excluded.start_time,
               close_time = excluded.close_time,
               failed_step = excluded.failed_step,
               failure_reason = excluded.failure_reason,
               search_attributes = excluded.search_attributes,
               head = excluded.head"
        ))?
        .execute(params![
            record.workflow_id,
            record.run_id,
            record.workflow_type,
            record.status,
            record.start_time,
            record.close_time,
            record.failed_step,
            record.failure_reason,
            attributes,
            head
        ])?;
        tx.commit()?;
        Ok(())
    }

    fn get_visibility(&self, workflow_id: &str) -> Result<Option<VisibilityRecord>> {
        check_id("workflowId", workflow_id)?;
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT {COLUMNS} FROM visibility WHERE workflow_id = ?1"
        ))?;
        let mut rows = stmt.query([workflow_id])?;
        rows.next()?.map(record_from_row).transpose()
    }

    fn list_visibility(
        &self,
        filter: &VisibilityFilter,
        page_size: u32,
        cursor: Option<&str>,
    ) -> Result<VisibilityPage> {
        if page_size == 0 {
            return Err(Error::invalid("pageSize", "must be at least 1"));
        }
        if page_size > MAX_PAGE_LIMIT {
            return Err(Error::invalid(
                "pageSize",
                format!("is {page_size}; the largest page is {MAX_PAGE_LIMIT}"),
            ));
        }
        let mut conditions = compile(filter)?;
        if let Some(cursor) = cursor {
            let (start_time, workflow_id) = decode_cursor(cursor)?;
            let params = [
                SqlValue::Integer(start_time),
                SqlValue::Integer(start_time),
                SqlValue::Text(workflow_id),
            ];
            conditions.push(AFTER_CURSOR, params);
        }
        // One row beyond the page tells whether another page follows.
        conditions
            .params
            .push(SqlValue::Integer(i64::from(page_size) + 1));
        // Uncached: the text varies with the filter's shape, and caching every shape would
        // evict the hot statements of other areas from the connection's small cache.
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {COLUMNS} FROM visibility WHERE {} ORDER BY {ORDER} LIMIT ?",
            conditions.sql()
        ))?;
        let mut rows = stmt.query(params_from_iter(&conditions.params))?;
        let mut records = Vec::new();
        while let Some(row) = rows.next()? {
            records.push(record_from_row(row)?);
        }
        let next_cursor = if records.len() > page_size as usize {
            records.truncate(page_size as usize);
            records
                .last()
                .map(|last| encode_cursor(last.start_time, &last.workflow_id))
        } else {
            None
        };
        Ok(VisibilityPage {
            records,
            next_cursor,
        })
    }

    fn count_visibility(&self, filter: &VisibilityFilter) -> Result<u64> {
        let conditions = compile(filter)?;
        let count: i64 = self
            .conn()
            .prepare(&format!(
                "SELECT count(*) FROM visibility WHERE {}",
                conditions.sql()
            ))?
            .query_row(params_from_iter(&conditions.params), |row| row.get(0))?;
        from_sql_int("count", count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_refuses_tampering() {
        let cursor = encode_cursor(-5, "wf/1 é");
        assert_eq!(decode_cursor(&cursor).unwrap(), (-5, "wf/1 é".to_owned()));
        let mut other_version = cursor.clone();
        other_version.replace_range(0..2, "02");
        for bad in [
            "",
            "zz",
            "0",
            &cursor[..18],
            &other_version,
            &format!("{cursor}ff"),
        ] {
            assert_eq!(
                decode_cursor(bad).unwrap_err().code(),
                "INVALID_INPUT",
                "{bad}"
            );
        }
    }
}
