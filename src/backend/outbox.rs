//! The outbox's rules, whatever the backend: checks of new rows, claim filters and batches,
//! status names, and the errors of settled and duplicate rows.

use std::collections::HashSet;

use super::checks::{check_id, check_id_as, check_size, to_sql_int, MAX_BLOB_BYTES};
use crate::error::{Error, Result};
use crate::model::outbox::*;
use crate::model::MAX_PAGE_LIMIT;

/// The entity name in errors about one row.
pub(crate) const ROW: &str = "outbox row";

fn check_row(index: usize, row: &NewOutboxRow) -> Result<()> {
    // Field names are built only to report a failure: a batch checks every row.
    let field = |name: &str| format!("outbox[{index}].{name}");
    check_id_as(|| field("dispatchKey"), &row.dispatch_key)?;
    check_id_as(|| field("workflowId"), &row.workflow_id)?;
    check_id_as(|| field("activityType"), &row.activity_type)?;
    if i64::try_from(row.ordinal).is_err() {
        to_sql_int(&field("ordinal"), row.ordinal)?;
    }
    if row.input.len() > MAX_BLOB_BYTES {
        check_size(&field("input"), row.input.len(), MAX_BLOB_BYTES)?;
    }
    check_max_attempts(index, row)?;
    let optional = [
        ("runId", &row.run_id),
        ("namespace", &row.namespace),
        ("taskQueue", &row.task_queue),
        ("node", &row.node),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            check_id_as(|| field(name), value)?;
        }
    }
    Ok(())
}

fn check_max_attempts(index: usize, row: &NewOutboxRow) -> Result<()> {
    let max = row.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
    if max == 0 || row.attempt >= max {
        let given = match row.max_attempts {
            Some(_) => format!("{max}"),
            None => format!("the default {max}"),
        };
        return Err(Error::invalid(
            format!("outbox[{index}].maxAttempts"),
            format!(
                "{given} must be at least 1 and above attempt {}",
                row.attempt
            ),
        ));
    }
    Ok(())
}

pub(crate) fn check_rows(rows: &[NewOutboxRow]) -> Result<()> {
    rows.iter()
        .enumerate()
        .try_for_each(|(index, row)| check_row(index, row))
}

fn check_optional_id(field: &str, value: &Option<String>) -> Result<()> {
    value.as_deref().map_or(Ok(()), |v| check_id(field, v))
}

/// Checks a route's fields; `prefix` ends where the field name starts.
fn check_route(
    prefix: &str,
    namespace: &Option<String>,
    task_queue: &Option<String>,
    node: &Option<String>,
) -> Result<()> {
    check_optional_id(&format!("{prefix}namespace"), namespace)?;
    check_optional_id(&format!("{prefix}taskQueue"), task_queue)?;
    check_optional_id(&format!("{prefix}node"), node)
}

/// Claims and re-arms answer with the rows they took, so their batches are bounded like a
/// page; 0 is allowed and takes nothing.
pub(crate) fn check_batch_limit(limit: u32) -> Result<()> {
    if limit > MAX_PAGE_LIMIT {
        return Err(Error::invalid(
            "limit",
            format!("is {limit}; the largest batch is {MAX_PAGE_LIMIT}"),
        ));
    }
    Ok(())
}

pub(crate) fn check_filter(filter: &ClaimFilter) -> Result<()> {
    for (index, id) in filter.exclude_workflows.iter().enumerate() {
        check_id(&format!("filter.excludeWorkflows[{index}]"), id)?;
    }
    filter.scope.as_ref().map_or(Ok(()), |scope| {
        check_route(
            "filter.scope.",
            &scope.namespace,
            &scope.task_queue,
            &scope.node,
        )
    })
}

/// Checks the keys of a batch of claims: each usable, none twice.
pub(crate) fn check_distinct_claims(claims: &[OutboxClaim]) -> Result<()> {
    let mut seen = HashSet::with_capacity(claims.len());
    for (index, claim) in claims.iter().enumerate() {
        let key = &claim.dispatch_key;
        let field = || format!("claims[{index}].dispatchKey");
        check_id_as(field, key)?;
        if !seen.insert(key.as_str()) {
            return Err(Error::invalid(field(), format!("{key} is listed twice")));
        }
    }
    Ok(())
}

pub(crate) fn is_live(status: OutboxStatus) -> bool {
    matches!(status, OutboxStatus::Pending | OutboxStatus::Claimed)
}

pub(crate) fn status_from(text: &str) -> Result<OutboxStatus> {
    OutboxStatus::parse(text).ok_or_else(|| Error::Corrupt {
        message: format!("outbox row has unknown status {text}"),
    })
}

/// The error for a transition of a row that is already settled.
pub(crate) fn settled(dispatch_key: &str) -> Error {
    Error::Conflict {
        entity: ROW,
        id: dispatch_key.to_owned(),
        expected: None,
        actual: None,
    }
}

/// The error for a new row whose key is stored already (or listed earlier in the same call).
pub(crate) fn duplicate(dispatch_key: &str) -> Error {
    settled(dispatch_key)
}
