//! Steps: operations of any areas applied in one transaction, under an optional request id
//! that makes the whole step exactly-once across retries.
//!
//! An [`Operation`] is a write as data: the same shape travels from a workflow engine's step,
//! from JS (one worker message), and later from another tab or a sync push. The store applies
//! a [`Step`]'s operations in order inside one `IMMEDIATE` transaction, and records the request
//! id with the outcome in that same transaction.

use serde::{Deserialize, Serialize};

use super::artifacts::{ArtifactMeta, NewArtifact};
use super::checkpoints::Checkpoint;
use super::conversations::ConversationState;
use super::effects::EffectRecord;
use super::journal::Event;
use super::namespaces::{NamespaceOrigin, NamespaceRecord, RegisterOutcome};
use super::outbox::{ClaimFilter, NewOutboxRow, OutboxClaim, OutboxRow, OutboxStatus};
use super::packages::PackageRecord;
use super::retention::PurgeCounts;
use super::run_journal::RunEvent;
use super::sync::{CursorMove, SyncHeadUpdate};
use super::visibility::VisibilityRecord;
use super::Millis;
use crate::error::Result;

/// Most operations one step may hold: a step is one transaction that holds the write lock.
pub const MAX_STEP_OPERATIONS: usize = 1000;

/// Request ids are kept at most this long after their commit (7 days), counted from the newest
/// request of their scope.
pub const REQUEST_RETENTION_MS: Millis = 7 * 24 * 60 * 60 * 1000;

/// At most this many request ids are kept per scope; the oldest go first.
pub const MAX_KEPT_REQUESTS: u64 = 10_000;

/// The scope of the store's own steps (and of every request the JS package makes). A sync
/// server keeps one scope per namespace.
pub const DEFAULT_REQUEST_SCOPE: &str = "";

/// One write, as data. In JS the tag is the `op` field: `{ op: "append", workflowId, ... }`.
/// Each operation has the semantics and errors of the store method of the same name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "op",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Operation {
    /// [`crate::EventJournal::append_with_outbox`]: events under the expected head, with
    /// outbox rows (a dispatch key that exists already fails the step).
    Append {
        workflow_id: String,
        events: Vec<Event>,
        expected_seq: u64,
        #[serde(default)]
        outbox: Vec<NewOutboxRow>,
    },
    /// [`crate::OutboxStore::insert_outbox`]: rows whose key exists already are skipped.
    InsertOutbox { rows: Vec<NewOutboxRow> },
    /// [`crate::OutboxStore::claim_outbox`].
    ClaimOutbox {
        now: Millis,
        limit: u32,
        #[serde(default)]
        filter: ClaimFilter,
    },
    /// [`crate::OutboxStore::complete_outbox`].
    CompleteOutbox {
        dispatch_key: String,
        claim_token: u64,
    },
    /// [`crate::OutboxStore::complete_outbox_batch`].
    CompleteOutboxBatch { claims: Vec<OutboxClaim> },
    /// [`crate::OutboxStore::retry_outbox`].
    RetryOutbox {
        dispatch_key: String,
        claim_token: u64,
        next_attempt: u32,
        visible_after: Millis,
    },
    /// [`crate::OutboxStore::fail_outbox`].
    FailOutbox {
        dispatch_key: String,
        claim_token: u64,
        reason: String,
    },
    /// [`crate::OutboxStore::cancel_workflow_outbox`].
    CancelWorkflowOutbox { workflow_id: String },
    /// [`crate::OutboxStore::rearm_stale_claims`].
    RearmStaleClaims {
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    },
    /// [`crate::TimerStore::schedule_timer`].
    ScheduleTimer {
        workflow_id: String,
        timer_id: String,
        fire_at: Millis,
    },
    /// [`crate::TimerStore::cancel_timer`].
    CancelTimer {
        workflow_id: String,
        timer_id: String,
    },
    /// [`crate::CheckpointStore::compare_and_swap_checkpoint`].
    CompareAndSwapCheckpoint {
        checkpoint: Checkpoint,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    /// [`crate::EffectStore::compare_and_swap_effect`].
    CompareAndSwapEffect {
        record: EffectRecord,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    /// [`crate::VisibilityStore::upsert_visibility`].
    UpsertVisibility { record: VisibilityRecord },
    /// [`crate::RunJournal::record_run_event`].
    RecordRunEvent { event: RunEvent },
    /// [`crate::ConversationStore::save_conversation`].
    SaveConversation {
        state: ConversationState,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    /// [`crate::ArtifactStore::put_artifact`] at time `now`.
    PutArtifact { artifact: NewArtifact, now: Millis },
    /// [`crate::ArtifactStore::delete_artifact`].
    DeleteArtifact { scope: String, artifact_id: String },
    /// [`crate::ArtifactStore::purge_expired_artifacts`].
    PurgeExpiredArtifacts { now: Millis },
    /// [`crate::RetentionStore::purge_workflows`].
    PurgeWorkflows { closed_before: Millis, limit: u32 },
    /// [`crate::NamespaceStore::register_namespace`].
    RegisterNamespace {
        name: String,
        origin: NamespaceOrigin,
        now: Millis,
    },
    /// [`crate::NamespaceStore::put_namespace`].
    PutNamespace { record: NamespaceRecord },
    /// [`crate::NamespaceStore::set_namespace_placement`].
    SetNamespacePlacement {
        name: String,
        placement: serde_json::Value,
    },
    /// [`crate::NamespaceStore::deprecate_namespace`].
    DeprecateNamespace { name: String },
    /// [`crate::PackageStore::put_package`], or with `member_types`
    /// [`crate::PackageStore::put_package_for_types`].
    PutPackage {
        record: PackageRecord,
        #[serde(default)]
        member_types: Option<Vec<String>>,
    },
    /// [`crate::PackageStore::delete_package`].
    DeletePackage {
        workflow_type: String,
        content_hash: String,
    },
    /// [`crate::PackageStore::set_package_route`].
    SetPackageRoute {
        workflow_type: String,
        content_hash: String,
    },
    /// [`crate::SyncState`]: what a sync pass keeps (the target's client id, cursor and mark,
    /// and agreed heads), each part applied only from the state the pass read.
    SaveSync {
        target: String,
        client_id: String,
        #[serde(default)]
        cursor: Option<CursorMove>,
        #[serde(default)]
        mark: Option<u64>,
        #[serde(default)]
        heads: Vec<SyncHeadUpdate>,
    },
    /// The sync server's record of a push (see [`crate::SyncFeed`]): `workflow_id` went from
    /// head `base` to head `head`, the next entry of `feed`. Entries take their positions in
    /// the order their steps commit. Not part of the JS API: never read from JSON.
    #[serde(skip_deserializing)]
    RecordChange {
        feed: String,
        workflow_id: String,
        base: u64,
        head: u64,
    },
    /// The sync server's fence on a push (see [`crate::LeaseStore`]): the step is refused with
    /// [`crate::Error::Fenced`] unless `holder` under `epoch` may write to `workflow_id` (both
    /// `None`: a push without a lease, admitted to a workflow never leased). Checked in the
    /// step's transaction, so no take-over lands between the check and the push. Not part of
    /// the JS API: never read from JSON.
    #[serde(skip_deserializing)]
    CheckLease {
        workflow_id: String,
        holder: Option<String>,
        epoch: Option<u64>,
    },
}

/// What one operation did, in the order of the step. The tag `op` names the operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum OperationOutcome {
    /// The workflow's new head.
    Append {
        head: u64,
    },
    /// How many rows were inserted (duplicates skipped).
    InsertOutbox {
        inserted: u64,
    },
    /// The rows claimed, with their claim tokens.
    ClaimOutbox {
        rows: Vec<OutboxRow>,
    },
    CompleteOutbox {},
    CompleteOutboxBatch {},
    /// The row's status after the retry: pending, or failed when its attempts ran out.
    RetryOutbox {
        status: OutboxStatus,
    },
    FailOutbox {},
    /// The dispatch keys of the rows cancelled.
    CancelWorkflowOutbox {
        cancelled: Vec<String>,
    },
    /// The rows re-armed (or dead-lettered), as they are now.
    RearmStaleClaims {
        rows: Vec<OutboxRow>,
    },
    ScheduleTimer {},
    /// Whether a timer was there to cancel.
    CancelTimer {
        removed: bool,
    },
    /// The checkpoint's revision now stored.
    CompareAndSwapCheckpoint {
        revision: u64,
    },
    /// The effect's revision now stored.
    CompareAndSwapEffect {
        revision: u64,
    },
    UpsertVisibility {},
    RecordRunEvent {},
    /// The conversation's revision now stored.
    SaveConversation {
        revision: u64,
    },
    /// The artifact stored (or the one already holding the idempotency key).
    PutArtifact {
        artifact: ArtifactMeta,
    },
    /// Whether an artifact was there to delete.
    DeleteArtifact {
        deleted: bool,
    },
    /// What the purge deleted, per table.
    PurgeWorkflows {
        counts: PurgeCounts,
    },
    /// How many expired artifacts were purged.
    PurgeExpiredArtifacts {
        purged: u64,
    },
    RegisterNamespace {
        outcome: RegisterOutcome,
    },
    PutNamespace {
        outcome: RegisterOutcome,
    },
    SetNamespacePlacement {},
    /// Whether the namespace was active before.
    DeprecateNamespace {
        deprecated: bool,
    },
    PutPackage {},
    /// The workflow types whose route pointed at the deleted package, dropped with it.
    DeletePackage {
        dropped_routes: Vec<String>,
    },
    SetPackageRoute {},
    SaveSync {},
    /// The entry's position in its feed.
    RecordChange {
        position: u64,
    },
    CheckLease {},
}

/// Operations to apply together, with an optional request id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Makes the step exactly-once: a step whose id committed before is not applied again;
    /// the recorded outcome is returned instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub operations: Vec<Operation>,
}

impl Step {
    /// An empty step; add operations with [`Step::with`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The step under `request_id`.
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The step with `operation` added at the end.
    pub fn with(mut self, operation: Operation) -> Self {
        self.operations.push(operation);
        self
    }

    /// Whether every operation of the step deletes (artifacts, packages, workflows): such a
    /// step must work on a full disk, where it is how room comes back.
    pub fn frees_space(&self) -> bool {
        Self::frees_space_of(&self.operations)
    }

    /// Whether every one of `operations` deletes (see [`Step::frees_space`]).
    pub fn frees_space_of(operations: &[Operation]) -> bool {
        operations.iter().all(|operation| {
            matches!(
                operation,
                Operation::DeleteArtifact { .. }
                    | Operation::PurgeExpiredArtifacts { .. }
                    | Operation::PurgeWorkflows { .. }
                    | Operation::DeletePackage { .. }
            )
        })
    }
}

/// What a committed step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutcome {
    /// One outcome per operation, in order.
    pub outcomes: Vec<OperationOutcome>,
    /// True when the request id had committed before: nothing was applied now, and
    /// `outcomes` are the ones recorded then.
    pub replayed: bool,
    /// What the step changed, numbered in the store's change feed; `None` when it changed
    /// nothing, was replayed, or was committed by a store without a feed (PostgreSQL).
    #[serde(skip)]
    pub change: Option<super::changes::Change>,
}

/// A request as the log knows it: its id, and a fingerprint of its content. The same id with
/// another fingerprint is another request: `CONFLICT`, never a replay.
///
/// [`StepStore::commit`] makes one from the step (the fingerprint of its operations); a
/// caller whose operations differ between retries of one request (a server route that stamps
/// its own time into them) fingerprints the request as it received it instead, with
/// [`request_fingerprint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKey {
    /// The window the id belongs to ([`DEFAULT_REQUEST_SCOPE`], or a namespace of a server):
    /// each scope keeps its own [`MAX_KEPT_REQUESTS`] ids, so that one scope's traffic never
    /// pushes another's ids out, and the same id in two scopes names two requests.
    pub scope: String,
    pub id: String,
    pub fingerprint: String,
}

/// The fingerprint of a request of kind `kind` (a route's name, say) with content `content`:
/// a SHA-256 of the kind and the content's JSON, keys in the order they were written.
///
/// # Errors
/// [`crate::Error::Serialization`] when `content` cannot be written as JSON.
pub fn request_fingerprint(kind: &str, content: &impl Serialize) -> Result<String> {
    crate::backend::requests::fingerprint_of(kind, content)
}

/// A committed request as the store recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    pub request_id: String,
    /// When it committed, by the store's clock (ms since the epoch).
    pub committed_at: Millis,
    pub outcomes: Vec<OperationOutcome>,
}

/// What the request log says of a request id ([`StepStore::request_outcome`]).
///
/// The log keeps the latest [`MAX_KEPT_REQUESTS`] ids of each scope for at most
/// [`REQUEST_RETENTION_MS`], so an id it does not hold either never committed or committed and
/// was forgotten. It tells the two apart only as far as it can: an expired id is never taken
/// for one that did not commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "status",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RequestOutcome {
    /// The request committed, with these outcomes.
    Committed {
        request_id: String,
        /// When it committed, by the store's clock (ms since the epoch).
        committed_at: Millis,
        outcomes: Vec<OperationOutcome>,
    },
    /// No request under this id committed: the log has forgotten no request of its scope.
    NotCommitted { request_id: String },
    /// The log does not hold the id, and it has forgotten requests committed up to
    /// `forgotten_through` (the store's clock, ms since the epoch): a request sent after that
    /// time did not commit; one sent before may have committed and been forgotten.
    Unknown {
        request_id: String,
        forgotten_through: Millis,
    },
}

impl RequestOutcome {
    /// The record of a committed request, `None` for the other answers.
    pub fn committed(self) -> Option<RequestRecord> {
        match self {
            RequestOutcome::Committed {
                request_id,
                committed_at,
                outcomes,
            } => Some(RequestRecord {
                request_id,
                committed_at,
                outcomes,
            }),
            _ => None,
        }
    }
}

impl From<RequestRecord> for RequestOutcome {
    fn from(record: RequestRecord) -> Self {
        RequestOutcome::Committed {
            request_id: record.request_id,
            committed_at: record.committed_at,
            outcomes: record.outcomes,
        }
    }
}

/// Steps and their request log.
pub trait StepStore {
    /// Applies every operation of `step`, in order, in one `IMMEDIATE` transaction: all of
    /// them commit or none. With a request id, the id and the outcomes are recorded in the
    /// same transaction; a step under an id that committed before applies nothing and returns
    /// the recorded outcomes with `replayed: true`.
    ///
    /// Request ids are kept for [`REQUEST_RETENTION_MS`] and at most [`MAX_KEPT_REQUESTS`] of
    /// them per scope (oldest dropped first); an id older than that is unknown again.
    ///
    /// # Errors
    /// - [`crate::Error::Operation`] wrapping the failing operation's own error (its code is
    ///   that error's code) with the operation's index; nothing is written.
    /// - [`crate::Error::InvalidInput`] for an empty step, one of more than
    ///   [`MAX_STEP_OPERATIONS`] operations, or an empty or oversized request id.
    /// - [`crate::Error::Conflict`] (entity `"request"`) when the request id committed before
    ///   with other operations.
    fn commit(&self, step: &Step) -> Result<StepOutcome> {
        let key = crate::backend::requests::step_key(step)?;
        self.commit_request(key.as_ref(), &step.operations)
    }

    /// As [`StepStore::commit`], under `request` as given (or none): the request is a replay
    /// when its id committed before with the same fingerprint, a [`crate::Error::Conflict`]
    /// (entity `"request"`) when with another, and applied otherwise.
    ///
    /// # Errors
    /// As [`StepStore::commit`].
    fn commit_request(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
    ) -> Result<StepOutcome>;

    /// What the log says of request `request_id` of the store's own scope: committed (with its
    /// outcomes), not committed, or unknown (not held, but possibly forgotten).
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized id.
    fn request_outcome(&self, request_id: &str) -> Result<RequestOutcome> {
        self.request_outcome_in(DEFAULT_REQUEST_SCOPE, request_id)
    }

    /// As [`StepStore::request_outcome`], for an id of `scope`.
    ///
    /// # Errors
    /// As [`StepStore::request_outcome`]; [`crate::Error::InvalidInput`] for an oversized scope.
    fn request_outcome_in(&self, scope: &str, request_id: &str) -> Result<RequestOutcome>;
}
