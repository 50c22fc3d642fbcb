//! Journal events, whatever the backend: their checks, their versioned encoding, the status
//! projection a workflow's lifecycle events drive, and the run chain folded from them.

use std::fmt::Write;

use super::checks::{check_depth, check_id, check_id_as, check_size, MAX_DOCUMENT_BYTES};
use crate::error::{Error, Result};
use crate::model::journal::*;
use crate::model::Millis;

/// Lifecycle kinds, the events a run chain is built from.
pub(crate) const LIFECYCLE: [&str; 7] = [
    "started",
    "completed",
    "failed",
    "cancelled",
    "paused",
    "resumed",
    "continuedAsNew",
];

/// Encodes an event as its version byte followed by its JSON.
pub(crate) fn encode(index: usize, event: &Event) -> Result<Vec<u8>> {
    check_depth(|| format!("events[{index}].data"), &event.data)?;
    let mut blob = Vec::with_capacity(256);
    blob.push(EVENT_VERSION as u8);
    serde_json::to_writer(&mut blob, event)?;
    check_size(
        &format!("events[{index}]"),
        blob.len() - 1,
        MAX_DOCUMENT_BYTES,
    )?;
    Ok(blob)
}

/// The JSON of a stored event, refusing versions newer than this code knows.
fn stored_json(blob: &[u8]) -> std::result::Result<&[u8], String> {
    let (&version, json) = blob.split_first().ok_or("empty event blob")?;
    if version == 0 || u32::from(version) > EVENT_VERSION {
        return Err(format!(
            "encoded with version {version}; this code reads versions 1 to {EVENT_VERSION}"
        ));
    }
    Ok(json)
}

/// Decodes a stored event.
pub(crate) fn decode(blob: &[u8]) -> std::result::Result<Event, String> {
    serde_json::from_slice(stored_json(blob)?).map_err(|e| e.to_string())
}

fn undecodable(workflow_id: &str, seq: u64, reason: String) -> Error {
    Error::Serialization {
        message: format!("event {seq} of workflow {workflow_id}: {reason}"),
    }
}

pub(crate) fn decode_at(workflow_id: &str, seq: u64, blob: &[u8]) -> Result<Event> {
    decode(blob).map_err(|reason| undecodable(workflow_id, seq, reason))
}

/// Refuses a seq that JS would not read exactly, as a typed page handed to JS would.
fn check_seq_for_json(seq: u64) -> std::result::Result<(), String> {
    if seq >= 1 << 53 {
        return Err(format!("seq {seq} is beyond what JS reads exactly"));
    }
    Ok(())
}

/// Appends the JSON of the [`StoredEvent`] `seq` to `out`: the stored text itself behind its
/// seq once it is checked as a decode would check it, so that its `data` is never built as a
/// value. An event stored in another shape (no `data`, whitespace around it) is decoded and
/// written anew.
pub(crate) fn push_event_json(
    out: &mut String,
    workflow_id: &str,
    seq: u64,
    blob: &[u8],
) -> Result<()> {
    let checked = stored_json(blob).and_then(|json| {
        check_seq_for_json(seq)?;
        Ok((json, check_event_json(json)?))
    });
    let (json, has_data) = checked.map_err(|reason| undecodable(workflow_id, seq, reason))?;
    match (has_data, std::str::from_utf8(json)) {
        (true, Ok(text)) if text.starts_with('{') => {
            // Writing to a String cannot fail.
            let _ = write!(out, "{{\"seq\":{seq},{}", &text[1..]);
        }
        _ => {
            let event = decode_at(workflow_id, seq, blob)?;
            out.push_str(&serde_json::to_string(&StoredEvent { seq, event })?);
        }
    }
    Ok(())
}

/// Checks a query's workflow type as every other path checks one (`filter.workflowType` of a
/// visibility listing).
pub(crate) fn check_query(query: &WorkflowQuery) -> Result<()> {
    match &query.workflow_type {
        Some(workflow_type) => check_id("query.workflowType", workflow_type),
        None => Ok(()),
    }
}

pub(crate) fn check_event(index: usize, event: &Event) -> Result<()> {
    let field = |name: &str| format!("events[{index}].{name}");
    let non_empty = |name: &str, value: &str| check_id_as(|| field(name), value);
    match &event.kind {
        EventKind::Started {
            workflow_type,
            run_id,
        } => {
            non_empty("workflowType", workflow_type)?;
            non_empty("runId", run_id)
        }
        EventKind::Failed { .. } => Ok(()),
        EventKind::ContinuedAsNew { next_run_id } => non_empty("nextRunId", next_run_id),
        EventKind::Custom { name } => {
            non_empty("name", name)?;
            if LIFECYCLE.contains(&name.as_str()) {
                return Err(Error::invalid(
                    field("name"),
                    format!("{name} is a lifecycle kind; use its own type"),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The projection row of one workflow, advanced event by event.
#[derive(Clone, PartialEq)]
pub(crate) struct Projection {
    pub(crate) status: WorkflowStatus,
    pub(crate) workflow_type: Option<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) started_at: Option<Millis>,
    pub(crate) closed_at: Option<Millis>,
    pub(crate) updated_at: Millis,
}

impl Projection {
    pub(crate) fn new() -> Self {
        Projection {
            status: WorkflowStatus::Pending,
            workflow_type: None,
            run_id: None,
            started_at: None,
            closed_at: None,
            updated_at: 0,
        }
    }

    /// Checks that `event` may follow the current status, as [`EventJournal::append`] states:
    /// a lifecycle event must fit the run; any other event always fits.
    pub(crate) fn check(&self, workflow_id: &str, event: &Event) -> Result<()> {
        use WorkflowStatus as S;
        let open = matches!(self.status, S::Running | S::Paused);
        let (name, fits) = match &event.kind {
            // A new run may start where none is open: first, after continue-as-new, or
            // reusing the id of a closed workflow.
            EventKind::Started { .. } => ("started", !open),
            EventKind::Paused => ("paused", self.status == S::Running),
            EventKind::Resumed => ("resumed", self.status == S::Paused),
            EventKind::Completed => ("completed", open),
            EventKind::Failed { .. } => ("failed", open),
            EventKind::Cancelled => ("cancelled", open),
            EventKind::ContinuedAsNew { .. } => ("continuedAsNew", open),
            EventKind::Custom { .. } => return Ok(()),
        };
        if fits {
            return Ok(());
        }
        Err(Error::LifecycleConflict {
            workflow_id: workflow_id.to_owned(),
            event: name,
            status: self.status.as_str(),
        })
    }

    pub(crate) fn apply(&mut self, event: &Event) {
        let at = event.recorded_at;
        self.updated_at = at;
        match &event.kind {
            EventKind::Started {
                workflow_type,
                run_id,
            } => {
                self.status = WorkflowStatus::Running;
                self.workflow_type = Some(workflow_type.clone());
                self.run_id = Some(run_id.clone());
                self.started_at = Some(at);
                self.closed_at = None;
            }
            EventKind::Completed => self.close(WorkflowStatus::Completed, at),
            EventKind::Failed { .. } => self.close(WorkflowStatus::Failed, at),
            EventKind::Cancelled => self.close(WorkflowStatus::Cancelled, at),
            EventKind::Paused => self.status = WorkflowStatus::Paused,
            EventKind::Resumed => self.status = WorkflowStatus::Running,
            EventKind::ContinuedAsNew { .. } => self.status = WorkflowStatus::ContinuedAsNew,
            EventKind::Custom { .. } => {}
        }
    }

    /// Whether `other` differs from this row in its head time only.
    pub(crate) fn same_run_as(&self, other: &Projection) -> bool {
        Projection {
            updated_at: other.updated_at,
            ..self.clone()
        } == *other
    }

    fn close(&mut self, status: WorkflowStatus, at: Millis) {
        self.status = status;
        self.closed_at = Some(at);
    }
}

/// A workflow's runs, folded from its lifecycle events in seq order: each `started` opens a
/// run (and ends the one before), the others close or pause the current one. Shared by every
/// store's `read_run_chain`.
#[derive(Default)]
pub(crate) struct RunChain {
    pub(crate) runs: Vec<RunSummary>,
}

impl RunChain {
    /// Folds in the lifecycle event `seq` of a workflow whose head is `head`.
    pub(crate) fn push(&mut self, seq: u64, head: u64, event: Event) {
        if let EventKind::Started {
            workflow_type,
            run_id,
        } = &event.kind
        {
            if let Some(previous) = self.runs.last_mut() {
                previous.last_seq = seq - 1;
            }
            self.runs.push(RunSummary {
                run_id: run_id.clone(),
                workflow_type: workflow_type.clone(),
                first_seq: seq,
                last_seq: head,
                status: WorkflowStatus::Running,
                started_at: event.recorded_at,
                closed_at: None,
            });
            return;
        }
        let Some(run) = self.runs.last_mut() else {
            return;
        };
        let mut projection = Projection {
            status: run.status,
            closed_at: run.closed_at,
            ..Projection::new()
        };
        projection.apply(&event);
        run.status = projection.status;
        run.closed_at = match event.kind {
            EventKind::ContinuedAsNew { .. } => Some(event.recorded_at),
            _ => projection.closed_at,
        };
    }
}
