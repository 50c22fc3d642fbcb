//! The agent-run journal: immutable events per run, each at a caller-chosen sequence.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// One event of an agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunEvent {
    /// Unique across every run.
    pub event_id: String,
    pub run_id: String,
    /// Unique within the run; reads return events in this order. Gaps are allowed.
    pub sequence: u64,
    pub recorded_at: Millis,
    /// The runtime's payload, stored as given.
    #[serde(default)]
    pub data: serde_json::Value,
}

/// The agent-run journal.
pub trait RunJournal {
    /// Records `event`. Events are immutable: recording never replaces one.
    ///
    /// # Errors
    /// - [`crate::Error::Conflict`] when the event id is taken (entity `"run event"`, id the
    ///   event id) or when the run already has an event at that sequence (entity
    ///   `"run event sequence"`, id `"{run_id}:{sequence}"`). A stored event counts as
    ///   revision 0, so both have `expected: None, actual: Some(0)`. When both are taken the
    ///   event id is reported.
    /// - [`crate::Error::InvalidInput`] for an empty or oversized id, a sequence over
    ///   2^63-1 or data over [`crate::MAX_DOCUMENT_BYTES`].
    ///
    /// Nothing is written on any error.
    fn record_run_event(&self, event: &RunEvent) -> Result<()>;

    /// A page of the events of `run_id` in sequence order (empty for an unknown run).
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn read_run_events(&self, run_id: &str, page: &PageRequest) -> Result<Page<RunEvent>>;

    /// A page of the run ids with at least one event, in id order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_run_ids(&self, page: &PageRequest) -> Result<Page<String>>;
}
