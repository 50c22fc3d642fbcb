//! The transactional outbox: activity dispatches written with the events that schedule them
//! and delivered at least once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// The maximum attempts of a row inserted without [`NewOutboxRow::max_attempts`].
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;

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
    /// Dead letter: failed for good ([`OutboxStore::fail_outbox`], or out of attempts).
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

/// A row to insert. It starts `pending` at the given attempt, with no claim (claim token 0).
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
    /// A re-arm or retry that would bring `attempt` to this value or beyond dead-letters the
    /// row instead; at least 1 and above `attempt`. `None`: [`DEFAULT_MAX_ATTEMPTS`].
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

/// A claim as a dispatcher holds it: the row's key and the token its claim handed out.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutboxClaim {
    pub dispatch_key: String,
    pub claim_token: u64,
}

/// A stored row. `claimed_at` is set by a claim, kept when the row settles (the time of its
/// last claim) and cleared when the row returns to `pending`. `claim_token` is the token of the
/// row's last claim (0 before its first) and changes only when the row is claimed again.
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
    pub claim_token: u64,
    pub max_attempts: u32,
    /// Why the row is a dead letter: the reason given to [`OutboxStore::fail_outbox`], or the
    /// attempts it ran out of. `None` unless `failed`.
    pub dead_reason: Option<String>,
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
    pub claim_token: u64,
    pub max_attempts: u32,
    pub dead_reason: Option<String>,
}

/// A route: the (namespace, task queue, node) a row is addressed to.
///
/// As a claim scope (in [`ClaimFilter::scope`]) a `None` field means "any value, or none".
/// As a result of [`OutboxStore::claimable_routes`] a `None` field means the rows have no
/// value there, so claiming with a returned route as the scope may also take rows of the
/// narrower routes that share its `Some` fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClaimScope {
    pub namespace: Option<String>,
    pub task_queue: Option<String>,
    pub node: Option<String>,
}

/// Which rows a claim may take, beyond "pending and due". The default takes any.
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

/// The outbox: at-least-once dispatch of activities.
///
/// A row is *live* while `pending` or `claimed`, and *settled* once `done`, `failed` (dead
/// letter) or `cancelled`; a settled row never changes again. Every write below is one
/// `IMMEDIATE` transaction: it commits whole or not at all, and two connections never both see
/// a row in the state they change it from.
///
/// Claims are fenced. Each claim hands out a new token (one store-wide counter: a token is
/// never handed out twice) and the rows it claims carry it as `claim_token`. Completing,
/// retrying and failing a row need the row's current token, so a dispatcher whose claim went
/// stale and was claimed again by another cannot settle the other's live claim. A claim that
/// [`OutboxStore::rearm_stale_claims`] returned to `pending` and no one claimed since still
/// holds the current token: it may finish its delivery, and its completion then settles the
/// row instead of forcing another delivery. A row never claimed has token 0.
///
/// Poison rows end: every re-arm counts an attempt, and a re-arm or retry that would bring a
/// row's `attempt` to its `max_attempts` ([`DEFAULT_MAX_ATTEMPTS`] unless the row says) makes
/// it a dead letter (`failed`, with `dead_reason`) instead of pending again.
pub trait OutboxStore {
    /// Inserts `rows` in one transaction. A row whose dispatch key is stored already, or
    /// appears earlier in `rows`, is ignored and the stored row is left untouched. Returns how
    /// many rows were inserted.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] naming `outbox[i].field` for an empty or oversized key,
    /// workflow id, activity type, run id, namespace, task queue or node, an oversized input,
    /// an ordinal above 2^63-1, or a `max_attempts` of 0 or not above `attempt`; nothing is
    /// inserted then.
    fn insert_outbox(&self, rows: &[NewOutboxRow]) -> Result<u64>;

    /// Atomically claims up to `limit` pending rows with `visible_after <= now` that pass
    /// `filter`: they become `claimed` with `claimed_at = now` and one new claim token, and
    /// are returned, oldest `visible_after` first (dispatch key breaks ties). Two claimers, on
    /// any connections, never get the same row. A `limit` of 0 claims nothing.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized id in the filter, or a `limit`
    /// above [`crate::MAX_PAGE_LIMIT`]; nothing is claimed then.
    fn claim_outbox(&self, now: Millis, limit: u32, filter: &ClaimFilter)
        -> Result<Vec<OutboxRow>>;

    /// Settles a live row as `done`, if `claim_token` is its current token.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] (entity `"outbox row"`) for an unknown key;
    /// [`crate::Error::Conflict`] (entity `"outbox row"`) when the row is already settled
    /// (no revisions), or when it is live and `claim_token` is stale (`expected` the token
    /// given, `actual` the row's current token); [`crate::Error::InvalidInput`] for an empty
    /// or oversized key. Nothing changes on error.
    fn complete_outbox(&self, dispatch_key: &str, claim_token: u64) -> Result<()>;

    /// Completes several claimed rows in one transaction. Errors as
    /// [`OutboxStore::complete_outbox`] for the first claim that fails, and then none is
    /// completed; a key listed twice is [`crate::Error::InvalidInput`] (field
    /// `claims[i].dispatchKey`). No claims is a no-op.
    fn complete_outbox_batch(&self, claims: &[OutboxClaim]) -> Result<()>;

    /// Returns a live row to `pending` with attempt `next_attempt` and the `visible_after`
    /// fence (both taken as given), and clears its claim time; the claim token stays until
    /// the row is claimed again. When `next_attempt` reaches the row's `max_attempts` the row
    /// becomes a dead letter instead (`failed`, with a `dead_reason` naming both numbers).
    /// Returns the row's new status, `Pending` or `Failed`.
    ///
    /// # Errors
    /// As [`OutboxStore::complete_outbox`].
    fn retry_outbox(
        &self,
        dispatch_key: &str,
        claim_token: u64,
        next_attempt: u32,
        visible_after: Millis,
    ) -> Result<OutboxStatus>;

    /// Settles a live row as `failed` with `reason` as its `dead_reason`: a dead letter,
    /// never claimed again.
    ///
    /// # Errors
    /// As [`OutboxStore::complete_outbox`]; [`crate::Error::InvalidInput`] (field `reason`)
    /// for a reason above [`crate::MAX_DOCUMENT_BYTES`].
    fn fail_outbox(&self, dispatch_key: &str, claim_token: u64, reason: &str) -> Result<()>;

    /// Settles every live row of the workflow as `cancelled`; returns their keys in key order.
    /// Idempotent: a second call, or a call for a workflow without rows, returns nothing.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized workflow id.
    fn cancel_workflow_outbox(&self, workflow_id: &str) -> Result<Vec<String>>;

    /// Atomically takes up to `limit` rows claimed before `older_than` (oldest claim first)
    /// and counts an attempt for each: a row whose attempt then reaches its `max_attempts`
    /// becomes a dead letter (`failed`, with a `dead_reason`), every other returns to
    /// `pending` with the given `visible_after` and no claim time. Claim tokens are kept, so
    /// the stale holder may still settle its row until someone claims it again. Returns those
    /// rows as they are now, in dispatch key order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a `limit` above [`crate::MAX_PAGE_LIMIT`].
    fn rearm_stale_claims(
        &self,
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    ) -> Result<Vec<OutboxRow>>;

    /// A page of the rows claimed before `older_than`, oldest claim first (dispatch key breaks
    /// ties), unchanged.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_stale_claims(&self, older_than: Millis, page: &PageRequest) -> Result<Page<OutboxRow>>;

    /// A page of the ids of workflows with at least one live row, in id order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_unsettled_workflows(&self, page: &PageRequest) -> Result<Page<String>>;

    /// In-flight and claimed counts for each of `namespaces`, in one query; namespaces without
    /// live rows get zeros. Rows without a namespace count for none.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized name.
    fn namespace_loads(&self, namespaces: &[String]) -> Result<BTreeMap<String, NamespaceLoad>>;

    /// The distinct routes with at least one pending row due at `now` (`visible_after <= now`),
    /// in [`ClaimScope`] order (`None` first).
    fn claimable_routes(&self, now: Millis) -> Result<Vec<ClaimScope>>;

    /// One row's state, `None` for an unknown key.
    fn outbox_row_state(&self, dispatch_key: &str) -> Result<Option<OutboxRowState>>;

    /// A page of the rows in `status` (any status when `None`), in dispatch key order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_outbox(
        &self,
        status: Option<OutboxStatus>,
        page: &PageRequest,
    ) -> Result<Page<OutboxRow>>;
}
