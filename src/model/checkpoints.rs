//! Agent-run checkpoints: one JSON state per checkpoint id, replaced by compare-and-swap on a
//! revision that counts up from 0 by one per write.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// A checkpoint as written and read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoint {
    pub checkpoint_id: String,
    /// The run the checkpoint belongs to, for [`CheckpointStore::list_run_checkpoints`].
    #[serde(default)]
    pub run_id: Option<String>,
    /// 0 when created; each successful compare-and-swap writes the stored revision + 1.
    pub revision: u64,
    /// The runtime's state, stored as given.
    pub state: serde_json::Value,
    pub updated_at: Millis,
}

/// Checkpoints.
pub trait CheckpointStore {
    /// The stored checkpoint.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when no checkpoint has that id.
    fn load_checkpoint(&self, checkpoint_id: &str) -> Result<Checkpoint>;

    /// Writes `checkpoint` when the stored revision is `expected_revision`, atomically:
    /// - `None` creates the checkpoint; `checkpoint.revision` must be 0.
    /// - `Some(n)` replaces a checkpoint stored at revision `n`; `checkpoint.revision` must be
    ///   `n + 1`. Run id, state and time are all replaced.
    ///
    /// Of several writers that loaded the same revision, exactly one succeeds.
    ///
    /// # Errors
    /// - [`crate::Error::Conflict`] (entity `"checkpoint"`) when the stored revision is not the
    ///   expected one: `expected` is `expected_revision`, `actual` the stored revision, `None`
    ///   when the checkpoint does not exist (so an update of a missing checkpoint is a conflict
    ///   with `actual: None`, and a create of an existing one has `expected: None`).
    /// - [`crate::Error::InvalidInput`] when `checkpoint.revision` is not 0 (create) or
    ///   `expected_revision + 1` (update): this depends on the arguments alone, so retrying
    ///   after a reload would not help. Also for an empty or oversized id, run id or state.
    ///
    /// Nothing is written on any error.
    fn compare_and_swap_checkpoint(
        &self,
        checkpoint: &Checkpoint,
        expected_revision: Option<u64>,
    ) -> Result<()>;

    /// A page of the checkpoints of `run_id`, in checkpoint id order (empty for an unknown
    /// run).
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_run_checkpoints(&self, run_id: &str, page: &PageRequest) -> Result<Page<Checkpoint>>;

    /// As [`CheckpointStore::load_checkpoint`], as the checkpoint's JSON text, for a caller
    /// that parses JSON anyway, such as JS. A store may copy the stored state into the text
    /// without decoding it (the SQLite store does, and refuses an integer JS would not read
    /// exactly); this default writes out the typed checkpoint.
    ///
    /// # Errors
    /// As [`CheckpointStore::load_checkpoint`]; [`crate::Error::Serialization`] for a stored
    /// state that does not decode.
    fn load_checkpoint_json(&self, checkpoint_id: &str) -> Result<String> {
        Ok(serde_json::to_string(
            &self.load_checkpoint(checkpoint_id)?,
        )?)
    }

    /// As [`CheckpointStore::list_run_checkpoints`], as the JSON text of the page (see
    /// [`CheckpointStore::load_checkpoint_json`]).
    ///
    /// # Errors
    /// As [`CheckpointStore::list_run_checkpoints`] and
    /// [`CheckpointStore::load_checkpoint_json`].
    fn list_run_checkpoints_json(&self, run_id: &str, page: &PageRequest) -> Result<String> {
        Ok(serde_json::to_string(
            &self.list_run_checkpoints(run_id, page)?,
        )?)
    }
}
