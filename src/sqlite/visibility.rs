//! SQL of the visibility index (table `visibility`).
//!
//! A filter compiles to a conjunction of fixed fragments, one per given field, each with `?`
//! placeholders; every value (type, statuses, bounds, attribute paths and operands) is bound.
//! Attribute keys are checked to be plain names before they are put into a bound JSON path.

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, OptionalExtension, Row};

use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::visibility::{
    check_filter, check_forward, check_record, comparison, decode_cursor, encode_cursor, Predicate,
    Stored,
};
use crate::error::{Error, Result};
use crate::model::visibility::*;
use crate::model::MAX_PAGE_LIMIT;

const COLUMNS: &str = "workflow_id, run_id, workflow_type, status, start_time, close_time, \
                       failed_step, failure_reason, search_attributes, head";

/// The listing order; the cursor condition below continues it.
const ORDER: &str = "start_time DESC, workflow_id";

/// Rows after the cursor position `(start_time, workflow_id)` in [`ORDER`]. The separate
/// `start_time <= ?` lets SQLite seek the start-time indexes to the position instead of
/// scanning every earlier page.
const AFTER_CURSOR: &str = "start_time <= ? AND (start_time < ? OR workflow_id > ?)";

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

/// The JSON path of a search attribute; [`check_attribute_key`] keeps the key inside its
/// quotes.
fn attribute_path(key: &str) -> SqlValue {
    text(&format!("$.\"{key}\""))
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

impl VisibilityStore for SqliteStore {
    fn upsert_visibility(&self, record: &VisibilityRecord) -> Result<()> {
        alone!(self, Operation::UpsertVisibility { record: record.clone() }, Done::UpsertVisibility {} => ());
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
