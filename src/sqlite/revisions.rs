//! Compare-and-swap on a revision column, shared by the areas that keep one (checkpoints,
//! effects, conversations): the revision a write must carry and the conflict it reports.

use rusqlite::{Connection, OptionalExtension};

use super::{from_sql_int, to_sql_int, WriteTx};
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

/// The revision stored for the target now, `None` when the row does not exist.
pub(super) fn stored_revision(conn: &Connection, target: &Target<'_>) -> Result<Option<u64>> {
    let sql = format!(
        "SELECT revision FROM {} WHERE {} = ?1",
        target.table, target.key_column
    );
    let revision: Option<i64> = conn
        .prepare_cached(&sql)?
        .query_row([target.id], |row| row.get(0))
        .optional()?;
    revision.map(|r| from_sql_int("revision", r)).transpose()
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

/// Finishes a single-row compare-and-swap whose statement changed `changed` rows: commits
/// when it wrote the row, otherwise reports the revision found, read in the same
/// transaction so that it is the one the write saw. Dropping `tx` rolls back.
pub(super) fn commit_if_written(
    tx: WriteTx<'_>,
    changed: usize,
    target: &Target<'_>,
    expected: Option<u64>,
) -> Result<()> {
    if changed == 1 {
        tx.commit()?;
        return Ok(());
    }
    let actual = stored_revision(&tx, target)?;
    Err(conflict(target, expected, actual))
}
