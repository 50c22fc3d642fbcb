//! The transactional outbox: activity dispatches written with the events that schedule them
//! and delivered at least once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::Result;

/// The lifecycle of an outbox row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OutboxStatus {
    /// Waiting to be claimed once `visible_after` has passed.
    Pending,
    /// Claimed by a dispatcher at `claimed_at`.
    Claimed,
    /// Delivered.
    Done,
    /// Dead letter: failed for good.
    Failed,
    /// Cancelled with its workflow before delivery.
    Cancelled,
}

impl OutboxStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Claimed => "claimed",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Claimed,
            Self::Done,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A row to insert. It starts `pending` at the given attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewOutboxRow {
    /// Unique; a row whose key exists already is ignored on insert.
    pub dispatch_key: String,
    pub workflow_id: String,
    pub ordinal: u64,
    pub activity_type: String,
    #[serde(with = "serde_bytes")]
    pub input: Vec<u8>,
    /// Not claimable before this time.
    pub visible_after: Millis,
    #[serde(default)]
    pub attempt: u32,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub task_queue: Option<String>,
    #[serde(default)]
    pub node: Option<String>,
}

/// A stored row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRow {
    pub dispatch_key: String,
    pub workflow_id: String,
    pub ordinal: u64,
    pub activity_type: String,
    #[serde(with = "serde_bytes")]
    pub input: Vec<u8>,
    pub status: OutboxStatus,
    pub attempt: u32,
    pub visible_after: Millis,
    pub claimed_at: Option<Millis>,
    pub run_id: Option<String>,
    pub namespace: Option<String>,
    pub task_queue: Option<String>,
    pub node: Option<String>,
}

/// The lifecycle state of one row, for inspection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRowState {
    pub status: OutboxStatus,
    pub attempt: u32,
    pub visible_after: Millis,
    pub claimed_at: Option<Millis>,
}

/// A route: where a dispatcher claims. `None` in a field matches only rows without that field
/// in [`OutboxStore::claimable_routes`]; in a claim scope, `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClaimScope {
    pub namespace: Option<String>,
    pub task_queue: Option<String>,
    pub node: Option<String>,
}

/// Which rows a claim may take, beyond "pending and due".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClaimFilter {
    /// Rows of these workflows are left alone (for example paused workflows).
    pub exclude_workflows: Vec<String>,
    /// Only rows matching every `Some` field of the scope.
    pub scope: Option<ClaimScope>,
}

/// In-flight (pending or claimed) and claimed row counts of one namespace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceLoad {
    pub in_flight: u64,
    pub claimed: u64,
}

/// The outbox.
pub trait OutboxStore {
    /// Inserts `rows` in one transaction, ignoring rows whose dispatch key exists. Returns how
    /// many were inserted.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty key or id; nothing is inserted then.
    fn insert_outbox(&self, rows: &[NewOutboxRow]) -> Result<u64>;

    /// Atomically claims up to `limit` pending rows with `visible_after <= now` that pass
    /// `filter`, oldest `visible_after` first (dispatch key breaks ties): they become
    /// `claimed` with `claimed_at = now`. Two claimers never get the same row.
    fn claim_outbox(&self, now: Millis, limit: u32, filter: &ClaimFilter)
        -> Result<Vec<OutboxRow>>;

    /// Marks a claimed or pending row done.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown key; [`crate::Error::Conflict`] when the row
    /// is already settled (done, failed or cancelled).
    fn complete_outbox(&self, dispatch_key: &str) -> Result<()>;

    /// Completes several rows in one transaction; errors as [`OutboxStore::complete_outbox`],
    /// and then none is completed.
    fn complete_outbox_batch(&self, dispatch_keys: &[String]) -> Result<()>;

    /// Returns a live row to pending with `next_attempt` and a later `visible_after` fence.
    ///
    /// # Errors
    /// As [`OutboxStore::complete_outbox`].
    fn retry_outbox(
        &self,
        dispatch_key: &str,
        next_attempt: u32,
        visible_after: Millis,
    ) -> Result<()>;

    /// Moves a live row to the dead letter state `failed`.
    ///
    /// # Errors
    /// As [`OutboxStore::complete_outbox`].
    fn fail_outbox(&self, dispatch_key: &str) -> Result<()>;

    /// Cancels every live (pending or claimed) row of the workflow; returns their keys in key
    /// order. Idempotent: a second call returns nothing.
    fn cancel_workflow_outbox(&self, workflow_id: &str) -> Result<Vec<String>>;

    /// Returns up to `limit` rows claimed before `older_than` to pending with the given
    /// `visible_after`, and returns them as they are now.
    fn rearm_stale_claims(
        &self,
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    ) -> Result<Vec<OutboxRow>>;

    /// Up to `limit` rows claimed before `older_than`, oldest claim first, unchanged.
    fn list_stale_claims(&self, older_than: Millis, limit: u32) -> Result<Vec<OutboxRow>>;

    /// Ids of workflows with at least one pending or claimed row, in id order.
    fn list_unsettled_workflows(&self) -> Result<Vec<String>>;

    /// In-flight and claimed counts for each of `namespaces`, in one pass; namespaces without
    /// rows get zeros.
    fn namespace_loads(&self, namespaces: &[String]) -> Result<BTreeMap<String, NamespaceLoad>>;

    /// The distinct routes with at least one pending row due at `now`, in order.
    fn claimable_routes(&self, now: Millis) -> Result<Vec<ClaimScope>>;

    /// One row's state, `None` for an unknown key.
    fn outbox_row_state(&self, dispatch_key: &str) -> Result<Option<OutboxRowState>>;

    /// Rows in `status` (all when `None`), by dispatch key, at most `limit`.
    fn list_outbox(&self, status: Option<OutboxStatus>, limit: u32) -> Result<Vec<OutboxRow>>;
}
