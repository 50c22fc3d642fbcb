//! `RunStoreCore`'s write methods, which js/core.js defines: each runs as a step of its one
//! operation through `__call` or `__callValues` (`facade_steps.rs`), as the main-thread
//! client's writes run through `__write`, so that every write's arguments are read by one set
//! of conversions and not by a wrapper of its own. Here: what each answers, and their
//! TypeScript declarations.

use wasm_bindgen::prelude::*;

use super::to_js::to_js;
use crate::*;

/// What a write method answers, from its operation's outcome (js/methods.js, `WRITE_RESULTS`,
/// makes the same answers from the outcomes the main-thread client gets). A number, a boolean
/// or nothing is made without a call into JS.
pub(super) fn method_result(outcome: &OperationOutcome) -> Result<JsValue> {
    use OperationOutcome as Done;
    match outcome {
        Done::Append { head } => to_js(head),
        Done::InsertOutbox { inserted } => to_js(inserted),
        Done::ClaimOutbox { rows } | Done::RearmStaleClaims { rows } => to_js(rows),
        Done::RetryOutbox { status } => to_js(status),
        Done::CancelWorkflowOutbox { cancelled } => to_js(cancelled),
        Done::CancelTimer { removed } => to_js(removed),
        Done::PutArtifact { artifact } => to_js(artifact),
        Done::DeleteArtifact { deleted } => to_js(deleted),
        Done::PurgeWorkflows { counts } => to_js(counts),
        Done::PurgeExpiredArtifacts { purged } => to_js(purged),
        Done::RegisterNamespace { outcome } | Done::PutNamespace { outcome } => to_js(outcome),
        Done::DeprecateNamespace { deprecated } => to_js(deprecated),
        Done::DeletePackage { dropped_routes } => to_js(dropped_routes),
        Done::CompleteOutbox {}
        | Done::CompleteOutboxBatch {}
        | Done::FailOutbox {}
        | Done::ScheduleTimer {}
        | Done::CompareAndSwapCheckpoint { .. }
        | Done::CompareAndSwapEffect { .. }
        | Done::UpsertVisibility {}
        | Done::RecordRunEvent {}
        | Done::SaveConversation { .. }
        | Done::SetNamespacePlacement {}
        | Done::PutPackage {}
        | Done::SetPackageRoute {}
        | Done::SaveSync {}
        | Done::RecordChange { .. }
        | Done::CheckLease {} => Ok(JsValue::UNDEFINED),
    }
}

// Their declarations, merged into the class's.
#[wasm_bindgen(typescript_custom_section)]
const WRITE_METHOD_TYPES: &str = r#"
export interface RunStoreCore {
    /**
     * Appends events when the stored head equals `expectedSeq`; returns the new head. SEQUENCE_CONFLICT otherwise.
     */
    append(workflowId: string, events: Event[], expectedSeq: number): number;
    /**
     * As `append`, and inserts outbox rows in the same transaction; a dispatch key that exists
     * is CONFLICT and nothing is written.
     */
    appendWithOutbox(workflowId: string, events: Event[], expectedSeq: number, outbox: NewOutboxRow[]): number;
    /**
     * Inserts rows, ignoring keys that exist; returns how many were inserted.
     */
    insertOutbox(rows: NewOutboxRow[]): number;
    /**
     * Claims up to `limit` due pending rows, oldest `visibleAfter` first.
     */
    claimOutbox(now: number, limit: number, filter?: ClaimFilter): OutboxRow[];
    /**
     * Marks a live row done, if `claimToken` is its current claim token; CONFLICT otherwise.
     */
    completeOutbox(dispatchKey: string, claimToken: number): undefined;
    /**
     * Marks several claimed rows done in one transaction, all or none.
     */
    completeOutboxBatch(claims: OutboxClaim[]): undefined;
    /**
     * Returns a live row to pending with its next attempt and a later fence, or dead-letters
     * it when that attempt reaches its maximum; returns the row's new status.
     */
    retryOutbox(dispatchKey: string, claimToken: number, nextAttempt: number, visibleAfter: number): 'pending' | 'failed';
    /**
     * Moves a live row to the dead letter state `failed` with a reason.
     */
    failOutbox(dispatchKey: string, claimToken: number, reason: string): undefined;
    /**
     * Cancels every live row of a workflow; returns their keys.
     */
    cancelWorkflowOutbox(workflowId: string): string[];
    /**
     * Returns rows claimed before `olderThan` to pending, counting an attempt; a row out of
     * attempts becomes a dead letter instead.
     */
    rearmStaleClaims(olderThan: number, visibleAfter: number, limit: number): OutboxRow[];
    /**
     * Schedules a timer, replacing the fire time of one with the same ids.
     */
    scheduleTimer(workflowId: string, timerId: string, fireAt: number): undefined;
    /**
     * Removes a timer; returns whether it existed.
     */
    cancelTimer(workflowId: string, timerId: string): boolean;
    /**
     * Creates (expectedRevision null, revision 0) or updates (revision expected + 1) a checkpoint; CONFLICT when the stored revision differs.
     */
    compareAndSwapCheckpoint(checkpoint: Checkpoint, expectedRevision?: number | null): undefined;
    /**
     * Creates or updates an effect record under a revision check; IDEMPOTENCY_CONFLICT when its key belongs to another effect.
     */
    compareAndSwapEffect(record: EffectRecord, expectedRevision?: number | null): undefined;
    /**
     * Inserts or replaces a workflow's visibility record; CONFLICT when it would go backwards
     * (a lower `head`, an older run, a closed run reopened).
     */
    upsertVisibility(record: VisibilityRecord): undefined;
    /**
     * Records an agent-run event; CONFLICT for a taken id or (run, sequence).
     */
    recordRunEvent(event: RunEvent): undefined;
    /**
     * Saves a conversation's state under a revision check.
     */
    saveConversation(state: ConversationState, expectedRevision?: number | null): undefined;
    /**
     * Stores bytes; the store computes size and sha256. Putting the same artifact again under its idempotency key returns the stored one; other content under a held key is IDEMPOTENCY_CONFLICT.
     */
    putArtifact(artifact: NewArtifact, now: number): ArtifactMeta;
    /**
     * Deletes an artifact; returns whether it existed.
     */
    deleteArtifact(scope: string, artifactId: string): boolean;
    /**
     * Deletes the artifacts expired at `now`; returns how many.
     */
    purgeExpiredArtifacts(now: number): number;
    /**
     * Deletes up to `limit` workflows closed (completed, failed, cancelled) before `closedBefore`, oldest first, with their events, outbox rows, timers and visibility records, in one transaction; returns the counts and whether more remain. The freed space goes back to the file system.
     */
    purgeWorkflows(closedBefore: number, limit: number): PurgeCounts;
    /**
     * Registers a namespace on first use; says whether it was created.
     */
    registerNamespace(name: string, origin: NamespaceOrigin, now: number): RegisterOutcome;
    /**
     * Creates or replaces a namespace record.
     */
    putNamespace(record: NamespaceRecord): RegisterOutcome;
    /**
     * Sets (or, with null, clears) a namespace's placement.
     */
    setNamespacePlacement(name: string, placement: unknown): undefined;
    /**
     * Deprecates a namespace; false when it already was.
     */
    deprecateNamespace(name: string): boolean;
    /**
     * Stores a package and routes its type to it, atomically.
     */
    putPackage(record: PackageRecord): undefined;
    /**
     * Stores a package once and routes every member type to it, atomically.
     */
    putPackageForTypes(record: PackageRecord, memberTypes: string[]): undefined;
    /**
     * Deletes a package; returns the types whose route went with it.
     */
    deletePackage(workflowType: string, contentHash: string): string[];
    /**
     * Routes a workflow type to a stored package hash.
     */
    setPackageRoute(workflowType: string, contentHash: string): undefined;
}
"#;
