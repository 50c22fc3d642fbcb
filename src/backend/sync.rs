//! The sync state's rules, whatever the backend: input checks, and the names of the states as
//! stored.

use std::collections::HashSet;

use crate::backend::checks::check_id;
use crate::error::{Error, Result};
use crate::model::sync::{SyncHeadState, SyncHeadUpdate};
use crate::model::MAX_PAGE_LIMIT;

/// Checks a save's target, client id and workflow ids.
///
/// # Errors
/// [`Error::InvalidInput`] naming the field.
pub(crate) fn check_save(target: &str, client_id: &str, heads: &[SyncHeadUpdate]) -> Result<()> {
    check_id("target", target)?;
    check_id("clientId", client_id)?;
    for (index, update) in heads.iter().enumerate() {
        check_id(&format!("heads[{index}].workflowId"), &update.workflow_id)?;
    }
    if heads.len() > MAX_PAGE_LIMIT as usize {
        return Err(Error::invalid(
            "heads",
            format!("holds {}; the limit is {MAX_PAGE_LIMIT}", heads.len()),
        ));
    }
    Ok(())
}

/// Checks the workflow ids of a `sync_heads` lookup: each an id, none twice, a bounded count.
///
/// # Errors
/// [`Error::InvalidInput`] (field `workflowIds`).
pub(crate) fn check_heads(workflow_ids: &[String]) -> Result<()> {
    if workflow_ids.len() > MAX_PAGE_LIMIT as usize {
        return Err(Error::invalid(
            "workflowIds",
            format!(
                "holds {}; the limit is {MAX_PAGE_LIMIT}",
                workflow_ids.len()
            ),
        ));
    }
    let mut seen = HashSet::with_capacity(workflow_ids.len());
    for (index, id) in workflow_ids.iter().enumerate() {
        check_id(&format!("workflowIds[{index}]"), id)?;
        if !seen.insert(id.as_str()) {
            return Err(Error::invalid(
                format!("workflowIds[{index}]"),
                "names a workflow named before",
            ));
        }
    }
    Ok(())
}

/// The conflict of a save made from a state that changed since the pass read it.
pub(crate) fn conflict_on(
    entity: &'static str,
    id: &str,
    expected: Option<u64>,
    actual: Option<u64>,
) -> Error {
    Error::Conflict {
        entity,
        id: id.to_owned(),
        expected,
        actual,
    }
}

/// A state as stored.
pub(crate) fn state_name(state: SyncHeadState) -> &'static str {
    match state {
        SyncHeadState::Synced => "synced",
        SyncHeadState::Conflict => "conflict",
        SyncHeadState::Purged => "purged",
    }
}

/// A stored state.
///
/// # Errors
/// [`Error::Corrupt`] for a name no state has.
pub(crate) fn state_of(name: &str) -> Result<SyncHeadState> {
    match name {
        "synced" => Ok(SyncHeadState::Synced),
        "conflict" => Ok(SyncHeadState::Conflict),
        "purged" => Ok(SyncHeadState::Purged),
        other => Err(Error::Corrupt {
            message: format!("unknown sync state {other}"),
        }),
    }
}

/// Refuses a change that names no feed or workflow, or moves no head forward.
pub(crate) fn check_change(feed: &str, workflow_id: &str, base: u64, head: u64) -> Result<()> {
    check_id("feed", feed)?;
    check_id("workflowId", workflow_id)?;
    if head <= base {
        return Err(Error::invalid(
            "head",
            format!("{head} does not move past base {base}"),
        ));
    }
    Ok(())
}
