//! SQL of the visibility index (table `visibility`) on PostgreSQL.
//!
//! A filter compiles to fixed fragments joined by AND, one per given field, each with its own
//! numbered placeholders; every value is bound. Search attributes are stored as JSON text and
//! read as `jsonb`: an attribute matches an operand of the same JSON type, numbers compared as
//! numbers and strings bytewise, as the SQLite store compares them.

use postgres::Row;

use super::paging::{col, refs, Param};
use super::session::Tx;
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::visibility::{
    check_filter, check_forward, check_record, comparison, decode_cursor, encode_cursor, Predicate,
    Stored,
};
use crate::error::{Error, Result};
use crate::model::visibility::*;
use crate::model::MAX_PAGE_LIMIT;

const COLUMNS: &str = "workflow_id, run_id, workflow_type, status, start_time, close_time, \
                       failed_step, failure_reason, search_attributes, head";

const ORDER: &str = "start_time DESC, workflow_id";

/// The WHERE clause of a listing under construction.
#[derive(Default)]
struct Conditions {
    fragments: Vec<String>,
    params: Vec<Param>,
}

impl Conditions {
    /// Adds `fragment`, whose placeholders are written `$?1`, `$?2`, ... for the first,
    /// second, ... of `params`; they are renumbered after the parameters already held.
    fn push(&mut self, fragment: &str, params: Vec<Param>) {
        let base = self.params.len();
        let mut sql = fragment.to_owned();
        for i in (1..=params.len()).rev() {
            sql = sql.replace(&format!("$?{i}"), &format!("${}", base + i));
        }
        self.fragments.push(sql);
        self.params.extend(params);
    }

    fn sql(&self) -> String {
        if self.fragments.is_empty() {
            return "TRUE".to_owned();
        }
        self.fragments.join(" AND ")
    }
}

/// Matches when the attribute `$?1` compares with `op` to one element of the JSON array
/// `$?2` of the same JSON type.
fn operand_match(op: &'static str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM jsonb_array_elements($?2::text::jsonb) AS operand(v)
         WHERE jsonb_typeof(operand.v) = jsonb_typeof(search_attributes::jsonb -> $?1::text)
           AND CASE jsonb_typeof(operand.v)
             WHEN 'number' THEN (search_attributes::jsonb ->> $?1::text)::numeric {op}
                                (operand.v #>> '{{}}')::numeric
             ELSE (search_attributes::jsonb ->> $?1::text) COLLATE \"C\" {op}
                  (operand.v #>> '{{}}') COLLATE \"C\"
           END)"
    )
}

fn compile(filter: &VisibilityFilter) -> Result<Conditions> {
    let predicates = check_filter(filter)?;
    let mut conditions = Conditions::default();
    if let Some(workflow_type) = &filter.workflow_type {
        conditions.push("workflow_type = $?1", vec![Box::new(workflow_type.clone())]);
    }
    if !filter.statuses.is_empty() {
        conditions.push(
            "status = ANY($?1::text[])",
            vec![Box::new(filter.statuses.clone())],
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
    conditions.push(&format!("{column} IS NOT NULL"), Vec::new());
    if let Some(from) = range.from {
        conditions.push(&format!("{column} >= $?1"), vec![Box::new(from)]);
    }
    if let Some(before) = range.before {
        conditions.push(&format!("{column} < $?1"), vec![Box::new(before)]);
    }
}

fn push_predicate(conditions: &mut Conditions, predicate: Predicate<'_>) {
    match predicate {
        Predicate::Presence { key, present } => {
            let negation = if present { "" } else { "NOT " };
            conditions.push(
                &format!("{negation}(search_attributes::jsonb ? $?1::text)"),
                vec![Box::new(key.to_owned())],
            );
        }
        Predicate::Compare { key, op, operand } => {
            // A scalar operand is the array of itself, as SQLite's json_each reads it.
            let operand = match op {
                AttributeOp::In => operand,
                _ => format!("[{operand}]"),
            };
            let fragment = comparison(op, operand_match);
            conditions.push(&fragment, vec![Box::new(key.to_owned()), Box::new(operand)]);
        }
    }
}

fn record_from_row(row: &Row) -> Result<VisibilityRecord> {
    let attributes: String = col(row, 8)?;
    Ok(VisibilityRecord {
        workflow_id: col(row, 0)?,
        run_id: col(row, 1)?,
        workflow_type: col(row, 2)?,
        status: col(row, 3)?,
        start_time: col(row, 4)?,
        close_time: col(row, 5)?,
        failed_step: col(row, 6)?,
        failure_reason: col(row, 7)?,
        search_attributes: serde_json::from_str(&attributes)?,
        head: col::<Option<i64>>(row, 9)?
            .map(|head| to_u64("head", head))
            .transpose()?,
    })
}

pub(super) fn upsert_in(tx: &mut Tx<'_>, record: &VisibilityRecord) -> Result<()> {
    let attributes = check_record(record)?;
    let head = record.head.map(|head| to_i64("head", head)).transpose()?;
    let stored = tx.query_opt(
        "SELECT run_id, start_time, close_time IS NOT NULL, head
         FROM visibility WHERE workflow_id = $1 FOR UPDATE",
        &[&record.workflow_id],
    )?;
    let params: [&(dyn postgres::types::ToSql + Sync); 10] = [
        &record.workflow_id,
        &record.run_id,
        &record.workflow_type,
        &record.status,
        &record.start_time,
        &record.close_time,
        &record.failed_step,
        &record.failure_reason,
        &attributes,
        &head,
    ];
    let Some(row) = stored else {
        // No row to lock: a concurrent first upsert may insert first. The plain INSERT then
        // fails on the key and the transaction runs again, checking against that record.
        tx.execute(
            &format!(
                "INSERT INTO visibility ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ),
            &params,
        )?;
        return Ok(());
    };
    let stored = Stored {
        run_id: col(&row, 0)?,
        start_time: col(&row, 1)?,
        closed: col(&row, 2)?,
        head: col::<Option<i64>>(&row, 3)?
            .map(|h| to_u64("head", h))
            .transpose()?,
    };
    check_forward(record, &stored)?;
    tx.execute(
        "UPDATE visibility SET run_id = $2, workflow_type = $3, status = $4, start_time = $5,
           close_time = $6, failed_step = $7, failure_reason = $8, search_attributes = $9,
           head = $10
         WHERE workflow_id = $1",
        &params,
    )?;
    Ok(())
}

impl VisibilityStore for PgStore {
    fn upsert_visibility(&self, record: &VisibilityRecord) -> Result<()> {
        check_record(record)?;
        self.write(|tx| upsert_in(tx, record))
    }

    fn get_visibility(&self, workflow_id: &str) -> Result<Option<VisibilityRecord>> {
        check_id("workflowId", workflow_id)?;
        self.read(|client| {
            client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM visibility WHERE workflow_id = $1"),
                    &[&workflow_id],
                )?
                .map(|row| record_from_row(&row))
                .transpose()
        })
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
            conditions.push(
                "start_time <= $?1 AND (start_time < $?1 OR workflow_id > $?2)",
                vec![Box::new(start_time), Box::new(workflow_id)],
            );
        }
        // One row beyond the page tells whether another page follows.
        let limit = conditions.params.len() + 1;
        conditions.params.push(Box::new(i64::from(page_size) + 1));
        let sql = format!(
            "SELECT {COLUMNS} FROM visibility WHERE {} ORDER BY {ORDER} LIMIT ${limit}",
            conditions.sql()
        );
        let rows = self.read(|client| client.query(&sql, &refs(&conditions.params)))?;
        let mut records = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<_>>>()?;
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
        let sql = format!("SELECT count(*) FROM visibility WHERE {}", conditions.sql());
        let row = self.read(|client| client.query_one(&sql, &refs(&conditions.params)))?;
        to_u64("count", col(&row, 0)?)
    }
}
