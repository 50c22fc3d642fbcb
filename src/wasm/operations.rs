//! How a step comes in from JS: its operations are read as the internally tagged objects they
//! are (`{ op: "append", workflowId, ... }`), each field through the same checks as a method's
//! argument.
//!
//! serde's derived form of an internally tagged enum buffers an object's values before it knows
//! the variant, and reads the variant's fields from that buffer: there a `Uint8Array` passes for
//! a string and an array for an object (by position), and errors lose the field's path. So the
//! tree deserializer (`value.rs`) reads operations itself: [`OperationFields`] lists each
//! operation's fields, as `Operation` declares them, under a name that tells it the tag.

use serde::Deserialize;

use crate::*;

/// A step as an argument: as [`Step`], with its operations read by [`OperationFields`].
pub(super) struct StepArgument(pub(super) Step);

impl<'de> Deserialize<'de> for StepArgument {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StepFields::deserialize(deserializer).map(StepArgument)
    }
}

#[derive(Deserialize)]
#[serde(remote = "Step", rename_all = "camelCase", deny_unknown_fields)]
struct StepFields {
    #[serde(default)]
    request_id: Option<String>,
    #[serde(deserialize_with = "operations")]
    operations: Vec<Operation>,
}

fn operations<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Operation>, D::Error> {
    let tagged: Vec<TaggedOperation> = Deserialize::deserialize(deserializer)?;
    Ok(tagged.into_iter().map(|operation| operation.0).collect())
}

#[derive(Deserialize)]
struct TaggedOperation(#[serde(with = "OperationFields")] Operation);

/// Every operation's fields as `Operation` declares them, read by the variant named in `op`
/// (see `value::TAGGED_BY`).
#[derive(Deserialize)]
#[serde(
    remote = "Operation",
    rename = "$runstore::tagged_by::op",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
enum OperationFields {
    Append {
        workflow_id: String,
        events: Vec<Event>,
        expected_seq: u64,
        #[serde(default)]
        outbox: Vec<NewOutboxRow>,
    },
    InsertOutbox {
        rows: Vec<NewOutboxRow>,
    },
    ClaimOutbox {
        now: Millis,
        limit: u32,
        #[serde(default)]
        filter: ClaimFilter,
    },
    CompleteOutbox {
        dispatch_key: String,
        claim_token: u64,
    },
    CompleteOutboxBatch {
        claims: Vec<OutboxClaim>,
    },
    RetryOutbox {
        dispatch_key: String,
        claim_token: u64,
        next_attempt: u32,
        visible_after: Millis,
    },
    FailOutbox {
        dispatch_key: String,
        claim_token: u64,
        reason: String,
    },
    CancelWorkflowOutbox {
        workflow_id: String,
    },
    RearmStaleClaims {
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    },
    ScheduleTimer {
        workflow_id: String,
        timer_id: String,
        fire_at: Millis,
    },
    CancelTimer {
        workflow_id: String,
        timer_id: String,
    },
    CompareAndSwapCheckpoint {
        checkpoint: Checkpoint,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    CompareAndSwapEffect {
        record: EffectRecord,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    UpsertVisibility {
        record: VisibilityRecord,
    },
    RecordRunEvent {
        event: RunEvent,
    },
    SaveConversation {
        state: ConversationState,
        #[serde(default)]
        expected_revision: Option<u64>,
    },
    PutArtifact {
        artifact: NewArtifact,
        now: Millis,
    },
    DeleteArtifact {
        scope: String,
        artifact_id: String,
    },
    PurgeExpiredArtifacts {
        now: Millis,
    },
    PurgeWorkflows {
        closed_before: Millis,
        limit: u32,
    },
    RegisterNamespace {
        name: String,
        origin: NamespaceOrigin,
        now: Millis,
    },
    PutNamespace {
        record: NamespaceRecord,
    },
    SetNamespacePlacement {
        name: String,
        placement: serde_json::Value,
    },
    DeprecateNamespace {
        name: String,
    },
    PutPackage {
        record: PackageRecord,
        #[serde(default)]
        member_types: Option<Vec<String>>,
    },
    DeletePackage {
        workflow_type: String,
        content_hash: String,
    },
    SetPackageRoute {
        workflow_type: String,
        content_hash: String,
    },
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
    // The sync server's own record of a push: never read from JS.
    #[serde(skip_deserializing)]
    RecordChange {
        feed: String,
        workflow_id: String,
        base: u64,
        head: u64,
    },
    // The sync server's fence on a push: never read from JS.
    #[serde(skip_deserializing)]
    CheckLease {
        workflow_id: String,
        holder: Option<String>,
        epoch: Option<u64>,
    },
}

/// Fails to compile when `Operation` gains a variant: add its fields to [`OperationFields`]
/// too, or steps from JS could not hold it.
const _: fn(&Operation) = |operation| match operation {
    Operation::Append { .. }
    | Operation::InsertOutbox { .. }
    | Operation::ClaimOutbox { .. }
    | Operation::CompleteOutbox { .. }
    | Operation::CompleteOutboxBatch { .. }
    | Operation::RetryOutbox { .. }
    | Operation::FailOutbox { .. }
    | Operation::CancelWorkflowOutbox { .. }
    | Operation::RearmStaleClaims { .. }
    | Operation::ScheduleTimer { .. }
    | Operation::CancelTimer { .. }
    | Operation::CompareAndSwapCheckpoint { .. }
    | Operation::CompareAndSwapEffect { .. }
    | Operation::UpsertVisibility { .. }
    | Operation::RecordRunEvent { .. }
    | Operation::SaveConversation { .. }
    | Operation::PutArtifact { .. }
    | Operation::DeleteArtifact { .. }
    | Operation::PurgeExpiredArtifacts { .. }
    | Operation::PurgeWorkflows { .. }
    | Operation::RegisterNamespace { .. }
    | Operation::PutNamespace { .. }
    | Operation::SetNamespacePlacement { .. }
    | Operation::DeprecateNamespace { .. }
    | Operation::PutPackage { .. }
    | Operation::DeletePackage { .. }
    | Operation::SetPackageRoute { .. }
    | Operation::SaveSync { .. }
    | Operation::RecordChange { .. }
    | Operation::CheckLease { .. } => {}
};
