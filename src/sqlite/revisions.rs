//! Compare-and-swap on a revision column, shared by the areas that keep one (checkpoints,
//! effects, conversations): the revision a write must carry and the conflict it reports.

use rusqlite::{Connection, OptionalExtension};

use super::WriteTx;
use crate::backend::checks::from_sql_int;
use crate::backend::revisions::{conflict, Target};
use crate::error::Result;

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
