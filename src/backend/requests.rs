//! Request ids: what identifies a request's content (its fingerprint), and the one rule that
//! decides, for a request id and that fingerprint, whether a request is applied, a replay of
//! what the id did before, or a conflict. Every backend's `commit`, every server route and
//! the import go through [`decide`].

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::model::steps::{
    Operation, OperationOutcome, RequestKey, RequestOutcome, RequestRecord, Step, StepOutcome,
    DEFAULT_REQUEST_SCOPE,
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

/// The log's text of a request's outcomes.
///
/// # Errors
/// [`Error::Serialization`] when they cannot be written as JSON.
pub(crate) fn encode_outcomes(outcomes: &[OperationOutcome]) -> Result<String> {
    Ok(serde_json::to_string(outcomes)?)
}

/// A request's outcomes from the log's text.
///
/// # Errors
/// [`Error::Corrupt`] when the text is not what [`encode_outcomes`] writes.
pub(crate) fn decode_outcomes(request_id: &str, text: &str) -> Result<Vec<OperationOutcome>> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt {
        message: format!("recorded outcome of request {request_id}: {e}"),
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

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
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
