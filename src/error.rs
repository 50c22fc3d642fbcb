//! The one error type of the store, with a stable machine code per variant.

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the store reports. [`Error::code`] gives a stable string to branch on; the
/// message names the values involved; structured fields carry them for programs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An append expected a journal head other than the stored one.
    #[error(
        "sequence conflict on workflow {}: expected head {expected}, found {actual}",
        clip(.workflow_id)
    )]
    SequenceConflict {
        workflow_id: String,
        expected: u64,
        actual: u64,
    },

    /// A compare-and-swap or a uniqueness guard found state other than the caller expected.
    /// `expected`/`actual` are revisions where the entity has them (`None`: absent).
    #[error("conflict on {entity} {}{}", clip(.id), show_revisions(*.expected, *.actual))]
    Conflict {
        entity: &'static str,
        id: String,
        expected: Option<u64>,
        actual: Option<u64>,
    },

    /// A lifecycle event does not fit the status of the workflow's run: `paused` when it is not
    /// running, `resumed` when it is not paused, anything but a new `started` once the run is
    /// closed. Its code is `CONFLICT`, as for any other state than the caller expected.
    #[error(
        "conflict on workflow {workflow_id}: {event} does not apply to a run that is {status}"
    )]
    LifecycleConflict {
        workflow_id: String,
        /// The refused event's kind (`"resumed"`, ...).
        event: &'static str,
        /// The run's status when the event came (`"completed"`, ...).
        status: &'static str,
    },

    /// An idempotency key is already owned by another record.
    #[error(
        "idempotency key {} of {entity} {} already belongs to {}",
        clip(.key),
        clip(.id),
        clip(.owner)
    )]
    IdempotencyConflict {
        entity: &'static str,
        id: String,
        key: String,
        owner: String,
    },

    /// The named record does not exist.
    #[error("{entity} {} not found", clip(.id))]
    NotFound { entity: &'static str, id: String },

    /// The caller passed a value the store refuses; nothing was written.
    #[error("invalid {}: {}", clip_to(.field, MAX_FIELD_CHARS), clip_words(.reason))]
    InvalidInput { field: String, reason: String },

    /// A stored or supplied value could not be encoded or decoded.
    #[error("serialization failed: {message}")]
    Serialization { message: String },

    /// The database was written by a newer version of the store; it was left untouched.
    #[error("database schema version {found} is newer than the supported version {supported}")]
    SchemaTooNew { found: u32, supported: u32 },

    /// Another connection, worker or tab holds the database.
    #[error("database is busy: {message}")]
    Busy { message: String },

    /// The storage quota or the disk is exhausted.
    #[error("storage is full: {message}")]
    StorageFull { message: String },

    /// The persistent medium asked for (OPFS, IndexedDB) cannot be used in this context (not a
    /// dedicated worker, private browsing, Node, ...); the message names it.
    #[error("storage unavailable: {message}")]
    OpfsUnavailable { message: String },

    /// Stored data failed an integrity check (a digest mismatch, a damaged database file).
    #[error("corrupt data: {message}")]
    Corrupt { message: String },

    /// Any other failure of the underlying database.
    #[error("database failure: {message}")]
    Backend { message: String },

    /// No store answered within the caller's limit (for example while another tab takes over
    /// the database). A write may or may not have committed: ask
    /// [`crate::StepStore::request_outcome`] with `request_id` later.
    #[error("store unavailable: {message}")]
    Unavailable {
        message: String,
        request_id: Option<String>,
    },

    /// A sync or server request without the right credentials: no token, an unknown token, or
    /// a token not granted the namespace it names. Nothing was read or written.
    #[error("unauthorized: {message}")]
    Unauthorized { message: String },

    /// An encrypted store opened with a key that is not its own or without one, or a plain
    /// store opened with a key. Nothing was written.
    #[error("wrong key: {message}")]
    WrongKey { message: String },

    /// A write under a workflow's lease (a push, a renewal, a release) from a holder or epoch
    /// that is not the lease's: another device took the workflow over since, or no lease was
    /// taken. Nothing was written. `holder`/`epoch`: the caller's (`None`: it carried none);
    /// `current_holder`/`current_epoch`: the lease's (`None`: there is none).
    #[error(
        "fenced on workflow {}: {} is not the lease's {}",
        clip(.workflow_id),
        show_lease(.holder.as_deref(), *.epoch),
        show_lease(.current_holder.as_deref(), *.current_epoch)
    )]
    Fenced {
        workflow_id: String,
        holder: Option<String>,
        epoch: Option<u64>,
        current_holder: Option<String>,
        current_epoch: Option<u64>,
    },

    /// Another device holds a live lease on the workflow, for `expires_in_ms` more by the
    /// server's clock. Nothing was written.
    #[error(
        "lease on workflow {} is held by {} under epoch {epoch} for {expires_in_ms} ms more",
        clip(.workflow_id),
        clip(.holder)
    )]
    LeaseHeld {
        workflow_id: String,
        holder: String,
        epoch: u64,
        expires_in_ms: u64,
    },

    /// Operation `index` of a step failed with `error`; nothing of the step was written. Its
    /// [`Error::code`] is the code of `error`.
    #[error("operation {index} of the step failed: {error}")]
    Operation { index: usize, error: Box<Error> },
}

/// How many characters of a caller's value a message quotes; the rest is elided.
const CLIP_CHARS: usize = 64;

/// How many characters of a field path a message shows.
pub(crate) const MAX_FIELD_CHARS: usize = 256;

/// How many characters of a reason a message shows.
const MAX_REASON_CHARS: usize = 512;

/// `text`, shortened to [`CLIP_CHARS`] characters and its size when longer: a message quoting
/// a caller's value stays short however long the value is.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    clip_to(text, CLIP_CHARS)
}

/// `text`, shortened to `chars` characters and its size when longer.
pub(crate) fn clip_to(text: &str, chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(chars) {
        None => text.into(),
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()).into(),
    }
}

/// A reason with every overlong word (a quoted value, typically) clipped, and the whole
/// bounded too: the explanation around a quoted value survives.
fn clip_words(reason: &str) -> std::borrow::Cow<'_, str> {
    if reason.len() <= MAX_REASON_CHARS {
        return reason.into();
    }
    let words = reason.split(' ').map(clip).collect::<Vec<_>>().join(" ");
    clip_to(&words, MAX_REASON_CHARS).into_owned().into()
}

/// A lease's holder and epoch in a message; "no lease" without them.
fn show_lease(holder: Option<&str>, epoch: Option<u64>) -> String {
    match (holder, epoch) {
        (Some(holder), Some(epoch)) => format!("holder {} under epoch {epoch}", clip(holder)),
        _ => "no lease".to_owned(),
    }
}

/// The revision part of a conflict's message; nothing for an entity without revisions (a
/// settled outbox row, say), where "expected none, found none" would only confuse.
fn show_revisions(expected: Option<u64>, actual: Option<u64>) -> String {
    let show = |r: Option<u64>| r.map_or_else(|| "none".to_owned(), |r| r.to_string());
    match (expected, actual) {
        (None, None) => " (it exists already, or is settled)".to_owned(),
        _ => format!(
            ": expected revision {}, found {}",
            show(expected),
            show(actual)
        ),
    }
}

impl Error {
    /// The stable machine code, for example `"SEQUENCE_CONFLICT"`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::SequenceConflict { .. } => "SEQUENCE_CONFLICT",
            Error::Conflict { .. } | Error::LifecycleConflict { .. } => "CONFLICT",
            Error::IdempotencyConflict { .. } => "IDEMPOTENCY_CONFLICT",
            Error::NotFound { .. } => "NOT_FOUND",
            Error::InvalidInput { .. } => "INVALID_INPUT",
            Error::Serialization { .. } => "SERIALIZATION",
            Error::SchemaTooNew { .. } => "SCHEMA_TOO_NEW",
            Error::Busy { .. } => "BUSY",
            Error::StorageFull { .. } => "STORAGE_FULL",
            Error::OpfsUnavailable { .. } => "OPFS_UNAVAILABLE",
            Error::Corrupt { .. } => "CORRUPT",
            Error::Backend { .. } => "BACKEND",
            Error::Unavailable { .. } => "UNAVAILABLE",
            Error::Unauthorized { .. } => "UNAUTHORIZED",
            Error::WrongKey { .. } => "WRONG_KEY",
            Error::Fenced { .. } => "FENCED",
            Error::LeaseHeld { .. } => "LEASE_HELD",
            Error::Operation { error, .. } => error.code(),
        }
    }

    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// This error as the failure of operation `index` of a step.
    pub fn in_operation(self, index: usize) -> Self {
        Error::Operation {
            index,
            error: Box::new(self),
        }
    }

    /// The error itself, without the step operation that wraps it.
    pub fn cause(&self) -> &Error {
        match self {
            Error::Operation { error, .. } => error.cause(),
            other => other,
        }
    }

    /// Shorthand for [`Error::NotFound`].
    pub fn not_found(entity: &'static str, id: impl Into<String>) -> Self {
        Error::NotFound {
            entity,
            id: id.into(),
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        let message = error.to_string();
        if let rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) = error
        {
            // A stored value of the wrong type: the file was changed behind the store's back.
            return Error::Corrupt { message };
        }
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy { message },
            Some(ErrorCode::DiskFull) => Error::StorageFull { message },
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                Error::Corrupt { message }
            }
            _ => Error::Backend { message },
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::Serialization {
            message: error.to_string(),
        }
    }
}

impl From<rusqlite::types::FromSqlError> for Error {
    /// A stored value of the wrong type means the file was changed behind the store's back.
    fn from(error: rusqlite::types::FromSqlError) -> Self {
        Error::Corrupt {
            message: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quote_long_values_shortened() {
        let long = "x".repeat(2_000_000);
        let messages = [
            Error::not_found("workflow", long.clone()),
            Error::invalid(format!("record.{long}"), format!("{long:?} is no id")),
            Error::Conflict {
                entity: "checkpoint",
                id: long.clone(),
                expected: Some(1),
                actual: None,
            },
            Error::SequenceConflict {
                workflow_id: long.clone(),
                expected: 1,
                actual: 2,
            },
        ]
        .map(|error| error.to_string());
        for message in messages {
            assert!(message.len() < 1_000, "{} bytes", message.len());
            assert!(message.contains(" bytes)"), "{message}");
        }
        let reason = Error::invalid("id", format!("{long:?} is no id")).to_string();
        assert!(reason.ends_with(" is no id"), "{reason}");
    }

    #[test]
    fn short_values_are_quoted_whole() {
        let error = Error::invalid("workflowId", "must not be empty");
        assert_eq!(error.to_string(), "invalid workflowId: must not be empty");
        assert_eq!(clip("é".repeat(64).as_str()), "é".repeat(64));
        assert!(clip("é".repeat(65).as_str()).ends_with("… (130 bytes)"));
    }
}
