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
        "sequence conflict on workflow {workflow_id}: expected head {expected}, found {actual}"
    )]
    SequenceConflict {
        workflow_id: String,
        expected: u64,
        actual: u64,
    },

    /// A compare-and-swap or a uniqueness guard found state other than the caller expected.
    /// `expected`/`actual` are revisions where the entity has them (`None`: absent).
    #[error("conflict on {entity} {id}{}", show_revisions(*.expected, *.actual))]
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
    #[error("idempotency key {key} of {entity} {id} already belongs to {owner}")]
    IdempotencyConflict {
        entity: &'static str,
        id: String,
        key: String,
        owner: String,
    },

    /// The named record does not exist.
    #[error("{entity} {id} not found")]
    NotFound { entity: &'static str, id: String },

    /// The caller passed a value the store refuses; nothing was written.
    #[error("invalid {field}: {reason}")]
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

    /// OPFS cannot be used in this context (not a dedicated worker, private browsing, ...).
    #[error("OPFS is unavailable: {message}")]
    OpfsUnavailable { message: String },

    /// Stored data failed an integrity check (a digest mismatch, a damaged database file).
    #[error("corrupt data: {message}")]
    Corrupt { message: String },

    /// Any other failure of the underlying database.
    #[error("database failure: {message}")]
    Backend { message: String },

    /// Operation `index` of a step failed with `error`; nothing of the step was written. Its
    /// [`Error::code`] is the code of `error`.
    #[error("operation {index} of the step failed: {error}")]
    Operation { index: usize, error: Box<Error> },
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
