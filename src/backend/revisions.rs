//! Compare-and-swap on a revision, whatever the backend (checkpoints, effects,
//! conversations): the revision a write must carry and the conflict it reports.

use super::checks::to_sql_int;
use crate::error::{Error, Result};

/// The row a compare-and-swap targets.
pub(crate) struct Target<'a> {
    pub table: &'static str,
    pub key_column: &'static str,
    /// The entity named in a conflict.
    pub entity: &'static str,
    pub id: &'a str,
}

/// Checks that a write carries the revision its expectation implies (0 for a create,
/// `expected + 1` for an update) and converts it for SQLite. Depends on the arguments alone,
/// so it runs before any lock is taken.
pub(crate) fn next_revision(revision: u64, expected: Option<u64>) -> Result<i64> {
    let required = match expected {
        None => Some(0),
        Some(current) => current.checked_add(1),
    };
    if required != Some(revision) {
        let reason = match (expected, required) {
            (None, _) => format!("is {revision}; a create writes revision 0"),
            (Some(current), Some(next)) => {
                format!("is {revision}; an update of revision {current} writes {next}")
            }
            (Some(current), None) => format!("revision {current} cannot be updated further"),
        };
        return Err(Error::invalid("revision", reason));
    }
    to_sql_int("revision", revision)
}

/// The conflict of a write that expected `expected` and found `actual`.
pub(crate) fn conflict(target: &Target<'_>, expected: Option<u64>, actual: Option<u64>) -> Error {
    Error::Conflict {
        entity: target.entity,
        id: target.id.to_owned(),
        expected,
        actual,
    }
}
