//! Request ids: what identifies a request's content (its fingerprint), and the one rule that
//! decides, for a request id and that fingerprint, whether a request is applied, a replay of
//! what the id did before, or a conflict. Every backend's `commit`, every server route and
//! the import go through [`decide`].

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::checks::check_id;
use super::hex;

use crate::error::{Error, Result};
use crate::model::outbox::OutboxRow;
use crate::model::steps::{
    Operation, OperationOutcome, RequestKey, RequestOutcome, RequestRecord, Step, StepOutcome,
    DEFAULT_REQUEST_SCOPE, MAX_STEP_OPERATIONS,
};
use crate::model::Millis;
use crate::MAX_ID_BYTES;

/// What to do with a request whose id the log may know.
#[derive(Debug)]
pub(crate) enum Decision {
    /// The id is not in the log: apply the request and record it.
    Apply,
    /// The id committed before with this very content: answer what it answered then.
    Replay(StepOutcome),
}

/// Decides a request with `fingerprint` under `request_id`, given what the log recorded for
/// the id (its fingerprint and record), if anything.
///
/// # Errors
/// [`Error::Conflict`] (entity `"request"`) when the id committed before with another
/// fingerprint: another request under a reused id, never to be answered as a replay.
pub(crate) fn decide(
    request_id: &str,
    fingerprint: &str,
    recorded: Option<(String, RequestRecord)>,
) -> Result<Decision> {
    match recorded {
        None => Ok(Decision::Apply),
        Some((recorded, record)) if recorded == fingerprint => Ok(Decision::Replay(StepOutcome {
            outcomes: record.outcomes,
            replayed: true,
            change: None,
        })),
        Some(_) => Err(request_conflict(request_id)),
    }
}

/// The conflict of a request id used for two requests.
pub(crate) fn request_conflict(request_id: &str) -> Error {
    Error::Conflict {
        entity: "request",
        id: request_id.to_owned(),
        expected: None,
        actual: None,
    }
}

/// Refuses a request scope that is not an identifier (the empty default scope aside).
///
/// # Errors
/// [`Error::InvalidInput`] (field `scope`) for a scope over [`MAX_ID_BYTES`].
pub(crate) fn check_scope(scope: &str) -> Result<()> {
    if scope.len() > MAX_ID_BYTES {
        return Err(Error::invalid(
            "scope",
            format!("is {} bytes long; the limit is {MAX_ID_BYTES}", scope.len()),
        ));
    }
    Ok(())
}

/// What the log says of `request_id`: its record when it holds one; else not committed when
/// its scope has forgotten nothing, and unknown past `forgotten` when it has.
pub(crate) fn outcome_of(
    request_id: &str,
    record: Option<RequestRecord>,
    forgotten: Option<Millis>,
) -> RequestOutcome {
    match (record, forgotten) {
        (Some(record), _) => record.into(),
        (None, None) => RequestOutcome::NotCommitted {
            request_id: request_id.to_owned(),
        },
        (None, Some(forgotten_through)) => RequestOutcome::Unknown {
            request_id: request_id.to_owned(),
            forgotten_through,
        },
    }
}

/// The log's text of a request's outcomes, kept compact: the outbox rows a claim or a re-arm
/// answered are kept without their inputs (up to 64 MiB each, spelled number by number in
/// JSON), which a read of the outbox gives back ([`StoredOutcomes::with_inputs`]). The rows
/// keep their keys, tokens and the state the request left them in.
///
/// The inputs are taken out of `outcomes` while they are written, and put back.
///
/// # Errors
/// [`Error::Serialization`] when they cannot be written as JSON.
pub(crate) fn encode_outcomes(outcomes: &mut [OperationOutcome]) -> Result<String> {
    let inputs: Vec<Vec<u8>> = claimed_rows(outcomes)
        .map(|row| std::mem::take(&mut row.input))
        .collect();
    let text = serde_json::to_string(&CompactRef {
        v: COMPACT_VERSION,
        outcomes,
    });
    for (row, input) in claimed_rows(outcomes).zip(inputs) {
        row.input = input;
    }
    Ok(text?)
}

/// [`Compact`], borrowed, as written.
#[derive(serde::Serialize)]
struct CompactRef<'a> {
    v: u32,
    outcomes: &'a [OperationOutcome],
}

/// The version of [`Compact`] written now; a log row of an earlier store is a plain array.
const COMPACT_VERSION: u32 = 2;

/// A request's outcomes as [`encode_outcomes`] writes them.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Compact {
    v: u32,
    outcomes: Vec<OperationOutcome>,
}

/// The outbox rows of claims and re-arms among `outcomes`.
fn claimed_rows(outcomes: &mut [OperationOutcome]) -> impl Iterator<Item = &mut OutboxRow> {
    outcomes.iter_mut().flat_map(|outcome| match outcome {
        OperationOutcome::ClaimOutbox { rows } | OperationOutcome::RearmStaleClaims { rows } => {
            rows.iter_mut()
        }
        _ => [].iter_mut(),
    })
}

/// A request's outcomes as read from the log, the inputs of their outbox rows still to fetch.
#[derive(Debug)]
pub(crate) struct StoredOutcomes {
    outcomes: Vec<OperationOutcome>,
    inputs_left_out: bool,
}

impl StoredOutcomes {
    /// The dispatch keys whose inputs [`StoredOutcomes::with_inputs`] needs.
    pub(crate) fn keys(&mut self) -> Vec<String> {
        if !self.inputs_left_out {
            return Vec::new();
        }
        claimed_rows(&mut self.outcomes)
            .map(|row| row.dispatch_key.clone())
            .collect()
    }

    /// The outcomes whole, each claimed row's input from `inputs` (by dispatch key).
    ///
    /// # Errors
    /// [`Error::NotFound`] when a row the request claimed was deleted since (a purge): its
    /// input is gone with it.
    pub(crate) fn with_inputs(
        mut self,
        mut inputs: HashMap<String, Vec<u8>>,
    ) -> Result<Vec<OperationOutcome>> {
        if self.inputs_left_out {
            for row in claimed_rows(&mut self.outcomes) {
                row.input = inputs
                    .remove(&row.dispatch_key)
                    .ok_or_else(|| Error::not_found(ROW_ENTITY, &row.dispatch_key))?;
            }
        }
        Ok(self.outcomes)
    }
}

/// The entity outbox rows are named by in errors.
const ROW_ENTITY: &str = "outbox row";

/// A request's outcomes from the log's text, as [`encode_outcomes`] wrote them (or a plain
/// array, as a store before schema version 5 wrote them).
///
/// # Errors
/// [`Error::Corrupt`] when the text is neither.
pub(crate) fn decode_outcomes(request_id: &str, text: &str) -> Result<StoredOutcomes> {
    let corrupt = |e: serde_json::Error| Error::Corrupt {
        message: format!("recorded outcome of request {request_id}: {e}"),
    };
    if text.starts_with('[') {
        return Ok(StoredOutcomes {
            outcomes: serde_json::from_str(text).map_err(corrupt)?,
            inputs_left_out: false,
        });
    }
    let compact: Compact = serde_json::from_str(text).map_err(corrupt)?;
    if compact.v != COMPACT_VERSION {
        return Err(Error::Corrupt {
            message: format!(
                "recorded outcome of request {request_id} is of version {}",
                compact.v
            ),
        });
    }
    Ok(StoredOutcomes {
        outcomes: compact.outcomes,
        inputs_left_out: true,
    })
}

/// The request key of a step: its id, and the fingerprint of its operations.
///
/// # Errors
/// [`Error::Serialization`] when an operation cannot be written as JSON.
pub(crate) fn step_key(step: &Step) -> Result<Option<RequestKey>> {
    step.request_id
        .as_ref()
        .map(|id| {
            Ok(RequestKey {
                scope: DEFAULT_REQUEST_SCOPE.to_owned(),
                id: id.clone(),
                fingerprint: fingerprint(&step.operations)?,
            })
        })
        .transpose()
}

/// What identifies a step's content: the same request id with another fingerprint is
/// another step, not a retry. The JSON is hashed as it is written, never held whole: a step may
/// carry a 64 MiB artifact, whose bytes JSON spells out number by number.
pub(crate) fn fingerprint(operations: &[Operation]) -> Result<String> {
    let mut hasher = HashWriter(Sha256::new());
    serde_json::to_writer(&mut hasher, operations)?;
    Ok(hex(&hasher.0.finalize()))
}

/// The fingerprint of a request of `kind` with `content` (see
/// [`crate::model::steps::request_fingerprint`]): the kind and a newline, then the JSON.
pub(crate) fn fingerprint_of(kind: &str, content: &impl Serialize) -> Result<String> {
    let mut hasher = HashWriter(Sha256::new());
    hasher.0.update(kind.as_bytes());
    hasher.0.update(b"\n");
    serde_json::to_writer(&mut hasher, content)?;
    Ok(hex(&hasher.0.finalize()))
}

/// Feeds what is written into a SHA-256.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn check_step(request_id: Option<&str>, operations: &[Operation]) -> Result<()> {
    if let Some(request_id) = request_id {
        check_id("requestId", request_id)?;
    }
    match operations.len() {
        0 => Err(Error::invalid(
            "operations",
            "a step needs at least one operation",
        )),
        n if n > MAX_STEP_OPERATIONS => Err(Error::invalid(
            "operations",
            format!("holds {n} operations; the limit is {MAX_STEP_OPERATIONS}"),
        )),
        _ => Ok(()),
    }
}
