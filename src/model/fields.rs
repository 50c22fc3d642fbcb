//! Which field an INVALID_INPUT names, seen from the argument the caller passed.
//!
//! A store method names its parameters and, for a record, the record's own fields
//! (`contentHash`). A caller that passed the record inside something else (a step's operation,
//! a JS method's argument) looks for it by its path from there: `record.contentHash`, or
//! `rows[3].dispatchKey` where the method says `outbox[3].dispatchKey`.

use crate::error::Error;
use crate::model::steps::Operation;

/// Whether `field` is `name` or a path inside it (`name.x`, `name[0]`).
fn is_within(field: &str, name: &str) -> bool {
    field
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// For a method whose argument `record` the store checks field by field: names an
/// INVALID_INPUT about one of the record's fields (`contentHash`) by its path from the
/// argument (`record.contentHash`). Fields under `others`, the method's other parameters,
/// stay as they are.
pub(crate) fn in_argument<'a>(
    record: &'a str,
    others: &'a [&'a str],
) -> impl FnOnce(Error) -> Error + 'a {
    move |error| match error {
        Error::InvalidInput { field, reason }
            if !others.iter().any(|other| is_within(&field, other))
                && !field.starts_with(&format!("{record}.")) =>
        {
            Error::InvalidInput {
                field: format!("{record}.{field}"),
                reason,
            }
        }
        other => other,
    }
}

/// Names an INVALID_INPUT the store reports under `from` (`outbox[3].dispatchKey`) by the
/// argument `to` it came from (`rows[3].dispatchKey`).
pub(crate) fn renamed<'a>(from: &'a str, to: &'a str) -> impl FnOnce(Error) -> Error + 'a {
    move |error| match error {
        Error::InvalidInput { field, reason } if is_within(&field, from) => Error::InvalidInput {
            field: format!("{to}{}", &field[from.len()..]),
            reason,
        },
        other => other,
    }
}

impl Operation {
    /// Names an INVALID_INPUT that this operation's store method reported by its path inside
    /// the operation: `rows[3].dispatchKey` for an `insertOutbox` row, `record.contentHash` for
    /// a `putPackage` record. Any other error is returned as it is.
    pub fn name_field(&self, error: Error) -> Error {
        match self {
            Operation::InsertOutbox { .. } => renamed("outbox", "rows")(error),
            Operation::CompareAndSwapCheckpoint { .. } => {
                in_argument("checkpoint", &["expectedRevision"])(error)
            }
            Operation::CompareAndSwapEffect { .. } => {
                in_argument("record", &["expectedRevision"])(error)
            }
            Operation::SaveConversation { .. } => {
                in_argument("state", &["expectedRevision"])(error)
            }
            Operation::UpsertVisibility { .. } | Operation::PutNamespace { .. } => {
                in_argument("record", &[])(error)
            }
            Operation::PutPackage { .. } => in_argument("record", &["memberTypes"])(error),
            Operation::RecordRunEvent { .. } => in_argument("event", &[])(error),
            Operation::PutArtifact { .. } => in_argument("artifact", &["now"])(error),
            _ => error,
        }
    }
}
