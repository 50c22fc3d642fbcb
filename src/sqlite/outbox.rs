//! SQL of the outbox (table `outbox`).

use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::{check_id, check_size, from_sql_int, to_sql_int, SqliteStore, MAX_BLOB_BYTES};
use crate::error::{Error, Result};
use crate::model::outbox::*;

fn check_row(index: usize, row: &NewOutboxRow) -> Result<()> {
    let field = |name: &str| format!("outbox[{index}].{name}");
    check_id(&field("dispatchKey"), &row.dispatch_key)?;
    check_id(&field("workflowId"), &row.workflow_id)?;
    check_id(&field("activityType"), &row.activity_type)?;
    check_size(&field("input"), row.input.len(), MAX_BLOB_BYTES)
}

fn status_from(text: &str) -> Result<OutboxStatus> {
    OutboxStatus::parse(text).ok_or_else(|| Error::Corrupt {
        message: format!("outbox row has unknown status {text}"),
    })
}

impl SqliteStore {
    /// Inserts rows inside a caller's transaction, ignoring existing dispatch keys. Returns how
    /// many were inserted. Every row is checked before the first is written.
    pub(super) fn insert_outbox_in(tx: &Transaction<'_>, rows: &[NewOutboxRow]) -> Result<u64> {
        for (index, row) in rows.iter().enumerate() {
            check_row(index, row)?;
        }
        let mut insert = tx.prepare_cached(
            "INSERT OR IGNORE INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
               status, attempt, visible_after, run_id, namespace, task_queue, node)
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        let mut inserted = 0;
        for row in rows {
            inserted += insert.execute(params![
                row.dispatch_key,
                row.workflow_id,
                to_sql_int("ordinal", row.ordinal)?,
                row.activity_type,
                row.input,
                row.attempt,
                row.visible_after,
                row.run_id,
                row.namespace,
                row.task_queue,
                row.node
            ])? as u64;
        }
        Ok(inserted)
    }

    /// One row's state, read with the given connection or transaction.
    fn row_state(
        conn: &rusqlite::Connection,
        dispatch_key: &str,
    ) -> Result<Option<OutboxRowState>> {
        conn.prepare_cached(
            "SELECT status, attempt, visible_after, claimed_at FROM outbox WHERE dispatch_key = ?1",
        )?
        .query_row([dispatch_key], |row: &Row<'_>| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get(2)?,
                row.get(3)?,
            ))
        })
        .optional()?
        .map(|(status, attempt, visible_after, claimed_at)| {
            Ok(OutboxRowState {
                status: status_from(&status)?,
                attempt: u32::try_from(from_sql_int("attempt", attempt)?).map_err(|_| {
                    Error::Corrupt {
                        message: format!("attempt {attempt} out of range"),
                    }
                })?,
                visible_after,
                claimed_at,
            })
        })
        .transpose()
    }

    /// The state of one outbox row, `None` for an unknown key.
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a row whose stored state is not one this code wrote.
    pub fn outbox_row_state(&self, dispatch_key: &str) -> Result<Option<OutboxRowState>> {
        Self::row_state(self.conn(), dispatch_key)
    }
}
