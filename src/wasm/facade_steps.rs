//! Steps and the request log in `RunStoreCore`, and the package's main-thread client's way in
//! for writes. Conversions only; see `facade.rs`.

use js_sys::Array;
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::convert::{from_tree, input, js_error, output};
use super::facade::RunStoreCore;
use super::facade_writes;
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
            .map_or(Ok(JsValue::UNDEFINED), facade_writes::method_result)
    }
}

/// JS values as a call's arguments.
fn values(arguments: Array) -> Arguments {
    Arguments::Values(arguments.iter().collect::<Vec<_>>().into_iter())
}

/// A call's arguments, read one by one as the store method of the same name reads them: as
/// JSON text (already read into trees) or as JS values (walked when their turn comes).
pub(super) enum Arguments {
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
    pub(super) fn next<T: DeserializeOwned>(&mut self, name: &str) -> Result<T> {
        let tree = self.tree(name)?;
        from_tree(name, tree)
    }

    /// As [`Arguments::next`], with `T::default()` for an absent (`undefined` or `null`) one.
    pub(super) fn next_or_default<T: DeserializeOwned + Default>(
        &mut self,
        name: &str,
    ) -> Result<T> {
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

// `commit` is defined in js/core.js, as the write methods are (`facade_writes.rs`). Its type
// is generic (each outcome typed as its operation's), which wasm-bindgen could not write anyway.
#[wasm_bindgen(typescript_custom_section)]
const COMMIT_TYPE: &str = r#"
export interface RunStoreCore {
    /**
     * Applies every operation of the step in one transaction: all commit or none. A failing operation rejects with its own code and `operation`, its index; nothing is written. Under a `requestId` that committed before, nothing is applied and the recorded outcomes come back with `replayed: true`.
     */
    commit<O extends Operation[] | []>(step: Step<O>): StepOutcome<O>;
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
