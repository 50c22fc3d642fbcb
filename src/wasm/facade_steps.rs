//! Steps and the request log in `RunStoreCore`, and the package's main-thread client's way in
//! for writes. Conversions only; see `facade.rs`.

use js_sys::Array;
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::convert::{from_tree, input, js_error, output};
use super::facade::RunStoreCore;
use super::json_text::{self, Holes};
use super::operations::StepArgument;
use super::to_js::to_js;
use super::value::Value;
use super::walk;
use crate::model::changes::Change;
use crate::*;

/// Names an INVALID_INPUT by its path from the `step` argument: `step.requestId`, or
/// `step.operations[2].workflowId` for a field of the operation that failed.
fn within_step(error: Error) -> Error {
    match error {
        Error::InvalidInput { field, reason } => Error::InvalidInput {
            field: format!("step.{field}"),
            reason,
        },
        Error::Operation { index, error } => match *error {
            Error::InvalidInput { field, reason } => Error::InvalidInput {
                field: format!("step.operations[{index}].{field}"),
                reason,
            },
            other => other,
        }
        .in_operation(index),
        other => other,
    }
}

/// What a write of the main-thread client did: the step's outcome, and what it changed (also
/// for a replay, which a tab that missed the first announcement hears; tabs drop a request id
/// they heard before).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Written {
    outcomes: Vec<OperationOutcome>,
    replayed: bool,
    change: Option<Change>,
}

impl Written {
    /// What the method `method` answers: for `commit` the step's outcome (without its change),
    /// for a write method what its operation's outcome says.
    fn answer(self, method: &str) -> Result<JsValue> {
        if method == "commit" {
            return to_js(&StepOutcome {
                outcomes: self.outcomes,
                replayed: self.replayed,
                change: None,
            });
        }
        self.outcomes
            .first()
            .map_or(Ok(JsValue::UNDEFINED), method_result)
    }
}

/// What a write method answers, from its operation's outcome (js/methods.js, `WRITE_RESULTS`,
/// makes the same answers from the outcomes the main-thread client gets). A number, a boolean
/// or nothing is made without a call into JS.
fn method_result(outcome: &OperationOutcome) -> Result<JsValue> {
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

/// JS values as a call's arguments.
fn values(arguments: Array) -> Arguments {
    Arguments::Values(arguments.iter().collect::<Vec<_>>().into_iter())
}

/// A call's arguments, read one by one as the store method of the same name reads them: as
/// JSON text (already read into trees) or as JS values (walked when their turn comes).
enum Arguments {
    Text(std::vec::IntoIter<Value>),
    Values(std::vec::IntoIter<JsValue>),
}

impl Arguments {
    /// The next argument, read as `name` (a missing one is `undefined`, as in JS).
    fn tree(&mut self, name: &str) -> Result<Value> {
        match self {
            Arguments::Text(trees) => Ok(trees.next().unwrap_or(Value::Undefined)),
            Arguments::Values(values) => {
                walk::read(name, &values.next().unwrap_or(JsValue::UNDEFINED))
            }
        }
    }

    /// The next argument as `T`, named `name`.
    fn next<T: DeserializeOwned>(&mut self, name: &str) -> Result<T> {
        let tree = self.tree(name)?;
        from_tree(name, tree)
    }

    /// As [`Arguments::next`], with `T::default()` for an absent (`undefined` or `null`) one.
    fn next_or_default<T: DeserializeOwned + Default>(&mut self, name: &str) -> Result<T> {
        match self.tree(name)? {
            Value::Undefined | Value::Null => Ok(T::default()),
            tree => from_tree(name, tree),
        }
    }
}

/// The write method `method` called with `args`, as the operation it applies: each argument
/// converted and checked as the method converts and checks it (a missing one refused where
/// the method refuses it, fields named from the method's parameters).
fn operation(method: &str, mut a: Arguments) -> Result<Operation> {
    use Operation as Op;
    Ok(match method {
        "append" | "appendWithOutbox" => Op::Append {
            workflow_id: a.next("workflowId")?,
            events: a.next("events")?,
            expected_seq: a.next("expectedSeq")?,
            outbox: match method {
                "append" => Vec::new(),
                _ => a.next("outbox")?,
            },
        },
        "insertOutbox" => Op::InsertOutbox {
            rows: a.next("rows")?,
        },
        "claimOutbox" => Op::ClaimOutbox {
            now: a.next("now")?,
            limit: a.next("limit")?,
            filter: a.next_or_default("filter")?,
        },
        "completeOutbox" => Op::CompleteOutbox {
            dispatch_key: a.next("dispatchKey")?,
            claim_token: a.next("claimToken")?,
        },
        "completeOutboxBatch" => Op::CompleteOutboxBatch {
            claims: a.next("claims")?,
        },
        "retryOutbox" => Op::RetryOutbox {
            dispatch_key: a.next("dispatchKey")?,
            claim_token: a.next("claimToken")?,
            next_attempt: a.next("nextAttempt")?,
            visible_after: a.next("visibleAfter")?,
        },
        "failOutbox" => Op::FailOutbox {
            dispatch_key: a.next("dispatchKey")?,
            claim_token: a.next("claimToken")?,
            reason: a.next("reason")?,
        },
        "cancelWorkflowOutbox" => Op::CancelWorkflowOutbox {
            workflow_id: a.next("workflowId")?,
        },
        "rearmStaleClaims" => Op::RearmStaleClaims {
            older_than: a.next("olderThan")?,
            visible_after: a.next("visibleAfter")?,
            limit: a.next("limit")?,
        },
        "scheduleTimer" => Op::ScheduleTimer {
            workflow_id: a.next("workflowId")?,
            timer_id: a.next("timerId")?,
            fire_at: a.next("fireAt")?,
        },
        "cancelTimer" => Op::CancelTimer {
            workflow_id: a.next("workflowId")?,
            timer_id: a.next("timerId")?,
        },
        "compareAndSwapCheckpoint" => Op::CompareAndSwapCheckpoint {
            checkpoint: a.next("checkpoint")?,
            expected_revision: a.next("expectedRevision")?,
        },
        "compareAndSwapEffect" => Op::CompareAndSwapEffect {
            record: a.next("record")?,
            expected_revision: a.next("expectedRevision")?,
        },
        "upsertVisibility" => Op::UpsertVisibility {
            record: a.next("record")?,
        },
        "recordRunEvent" => Op::RecordRunEvent {
            event: a.next("event")?,
        },
        "saveConversation" => Op::SaveConversation {
            state: a.next("state")?,
            expected_revision: a.next("expectedRevision")?,
        },
        "putArtifact" => Op::PutArtifact {
            artifact: a.next("artifact")?,
            now: a.next("now")?,
        },
        "deleteArtifact" => Op::DeleteArtifact {
            scope: a.next("scope")?,
            artifact_id: a.next("artifactId")?,
        },
        "purgeExpiredArtifacts" => Op::PurgeExpiredArtifacts {
            now: a.next("now")?,
        },
        "purgeWorkflows" => Op::PurgeWorkflows {
            closed_before: a.next("closedBefore")?,
            limit: a.next("limit")?,
        },
        "registerNamespace" => Op::RegisterNamespace {
            name: a.next("name")?,
            origin: a.next("origin")?,
            now: a.next("now")?,
        },
        "putNamespace" => Op::PutNamespace {
            record: a.next("record")?,
        },
        "setNamespacePlacement" => Op::SetNamespacePlacement {
            name: a.next("name")?,
            placement: a.next("placement")?,
        },
        "deprecateNamespace" => Op::DeprecateNamespace {
            name: a.next("name")?,
        },
        "putPackage" | "putPackageForTypes" => Op::PutPackage {
            record: a.next("record")?,
            member_types: match method {
                "putPackage" => None,
                _ => Some(a.next("memberTypes")?),
            },
        },
        "deletePackage" => Op::DeletePackage {
            workflow_type: a.next("workflowType")?,
            content_hash: a.next("contentHash")?,
        },
        "setPackageRoute" => Op::SetPackageRoute {
            workflow_type: a.next("workflowType")?,
            content_hash: a.next("contentHash")?,
        },
        other => {
            return Err(Error::invalid(
                "method",
                format!("{} is not a write", crate::error::clip(other)),
            ))
        }
    })
}

/// The byte arrays a client's message holds beside its text: `holes` the ordinals of the
/// nulls they stand in, `bytes` the arrays. Each is read as the walk reads bytes, by its
/// internal slots, not by `instanceof`: in Node the client's copies come from
/// `structuredClone`, in Node's own realm, while an app's tests may run under another realm's
/// globals (jsdom's `Uint8Array`). Their lengths are checked before anything is copied into
/// wasm memory. The client copies every byte array it sends into a fresh `Uint8Array`
/// (js/wire.js), so only a message it did not make can be refused here, as `arguments`.
fn byte_holes(holes: &[u32], bytes: &Array) -> Result<Holes> {
    if holes.len() != bytes.length() as usize {
        return Err(Error::invalid(
            "arguments",
            "every byte array needs the null it stands in",
        ));
    }
    let mut arrays = Vec::with_capacity(holes.len());
    for (index, at) in holes.iter().enumerate() {
        let array = walk::read_bytes("arguments", &bytes.get(index as u32), MAX_BLOB_BYTES)?;
        arrays.push((u64::from(*at), array));
    }
    Ok(arrays)
}

// `commit` is defined in js/core.js, as the write methods are (below). Its type is generic
// (each outcome typed as its operation's), which wasm-bindgen could not write anyway.
#[wasm_bindgen(typescript_custom_section)]
const COMMIT_TYPE: &str = r#"
export interface RunStoreCore {
    /**
     * Applies every operation of the step in one transaction: all commit or none. A failing operation rejects with its own code and `operation`, its index; nothing is written. Under a `requestId` that committed before, nothing is applied and the recorded outcomes come back with `replayed: true`.
     */
    commit<O extends Operation[] | []>(step: Step<O>): StepOutcome<O>;
}
"#;

// The write methods are defined in js/core.js: each runs as a step of its one operation
// through `__call` (its arguments as JSON text) or `__callValues`, as the main-thread client's
// writes run through `__write`, so that every write's arguments are read by one set of
// conversions (`operation`) and not by a wrapper of its own. Their declarations are here,
// merged into the class's.
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

#[wasm_bindgen]
impl RunStoreCore {
    /// The main-thread client's worker's way in for a write (js/host.js): the write method
    /// `method` (or `commit`) with its arguments as JSON text (see `json_text.rs`), run as
    /// one step under `requestId`; answers the step's outcome and what it changed. Not part of
    /// the API, hence the name.
    #[wasm_bindgen(js_name = __write, skip_typescript)]
    pub fn write_text(
        &self,
        method: String,
        request_id: Option<String>,
        arguments: String,
        holes: Vec<u32>,
        bytes: Array,
    ) -> Result<JsValue, JsValue> {
        output(self.write_from_text(&method, request_id, &arguments, &holes, &bytes))
    }

    /// As `__write`, with the arguments as JS values (the client sends those when they are not
    /// plain data: the walk then names what it refuses). Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __writeValues, skip_typescript)]
    pub fn write_values(
        &self,
        method: String,
        request_id: Option<String>,
        arguments: Array,
    ) -> Result<JsValue, JsValue> {
        output(self.write(&method, request_id, values(arguments)))
    }

    /// `runstore/core`'s way in for its own write methods and `commit` (js/core.js): as
    /// `__write`, answering what the method answers (for `commit`, the step's outcome without
    /// its change notice, which no tab hears from here). Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __call, skip_typescript)]
    pub fn call_method(
        &self,
        method: String,
        request_id: Option<String>,
        arguments: String,
        holes: Vec<u32>,
        bytes: Array,
    ) -> Result<JsValue, JsValue> {
        self.write_from_text(&method, request_id, &arguments, &holes, &bytes)
            .and_then(|written| written.answer(&method))
            .map_err(js_error)
    }

    /// As `__call`, with the arguments as JS values. Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __callValues, skip_typescript)]
    pub fn call_method_values(
        &self,
        method: String,
        request_id: Option<String>,
        arguments: Array,
    ) -> Result<JsValue, JsValue> {
        self.write(&method, request_id, values(arguments))
            .and_then(|written| written.answer(&method))
            .map_err(js_error)
    }

    /// What the request log says of `requestId`: `committed` (with its outcomes), `notCommitted`, or `unknown` when the log does not hold it but has forgotten requests committed up to `forgottenThrough` (a request sent after that time did not commit).
    #[wasm_bindgen(js_name = requestOutcome, unchecked_return_type = "RequestOutcome")]
    pub fn request_outcome(
        &self,
        #[wasm_bindgen(js_name = requestId, unchecked_param_type = "string")] request_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let request_id: String = input("requestId", request_id)?;
        self.call(|s| s.request_outcome(&request_id))
    }

    /// The changes committed after change number `after` (0: from the first), oldest first, at most `limit` (default 1000, at most 10000): `{ changes, reset, newest }`. `reset` (with no changes) when the feed cannot tell what came after `after` (it keeps the newest 10,000 changes, an import replaced the store since, or `after` is from another store): read afresh, then follow from `newest`.
    #[wasm_bindgen(js_name = changesSince, unchecked_return_type = "ChangesSince")]
    pub fn changes_since(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] after: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] limit: JsValue,
    ) -> Result<JsValue, JsValue> {
        let after: u64 = input("after", after)?;
        let limit: Option<u32> = input("limit", limit)?;
        self.call(|s| s.changes_since(after, limit.unwrap_or(DEFAULT_PAGE_LIMIT)))
    }
}

impl RunStoreCore {
    /// [`RunStoreCore::write`] of the arguments' JSON text, the byte arrays `bytes` standing in
    /// the nulls `holes` counts.
    fn write_from_text(
        &self,
        method: &str,
        request_id: Option<String>,
        arguments: &str,
        holes: &[u32],
        bytes: &Array,
    ) -> Result<Written> {
        let trees = json_text::read_arguments(arguments, byte_holes(holes, bytes)?)?;
        self.write(method, request_id, Arguments::Text(trees.into_iter()))
    }

    /// Commits `step`, naming its errors with `name`; a step that only deletes gives up the
    /// reserve on a full disk (see [`RunStoreCore::freeing`]).
    fn commit_step(&self, step: &Step, name: fn(Error) -> Error) -> Result<StepOutcome> {
        let commit = |s: &SqliteStore| s.commit(step).map_err(name);
        if step.frees_space() {
            self.freeing(commit)
        } else {
            commit(self.store()?).map_err(|e| self.full_if_short(e))
        }
    }

    /// Runs the client's write: `commit` with its step (under `request_id` when the step has
    /// none), or a write method as a step of its one operation under `request_id`, whose
    /// errors are the method's own (no operation index; fields named from its parameters).
    fn write(
        &self,
        method: &str,
        request_id: Option<String>,
        mut arguments: Arguments,
    ) -> Result<Written> {
        let (step, outcome) = if method == "commit" {
            let StepArgument(mut step) = arguments.next("step")?;
            step.request_id = step.request_id.or(request_id);
            let outcome = self.commit_step(&step, within_step)?;
            (step, outcome)
        } else {
            let step = Step {
                request_id,
                operations: vec![operation(method, arguments)?],
            };
            let outcome = self.commit_step(&step, as_call)?;
            (step, outcome)
        };
        // A step answered from the request log committed before: its change is worked out
        // again for the tabs that may have missed it, without its number (the feed has it).
        let change = match outcome.change {
            Some(change) => Some(change),
            None if outcome.replayed => Change::of(
                step.request_id.as_deref(),
                &step.operations,
                &outcome.outcomes,
            ),
            None => None,
        };
        Ok(Written {
            outcomes: outcome.outcomes,
            replayed: outcome.replayed,
            change,
        })
    }
}

/// A one-operation step's error as the method of that operation reports it: without the
/// operation's index.
fn as_call(error: Error) -> Error {
    match error {
        Error::Operation { index: 0, error } => *error,
        other => other,
    }
}
