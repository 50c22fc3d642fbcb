//! SQL of the durable timers (table `timers`).

use rusqlite::{params, Row};

use super::{check_id, SqliteStore};
use crate::error::Result;
use crate::model::timers::*;
use crate::model::Millis;

fn check_ids(workflow_id: &str, timer_id: &str) -> Result<()> {
    check_id("workflowId", workflow_id)?;
    check_id("timerId", timer_id)
}

fn timer_from_row(row: &Row<'_>) -> rusqlite::Result<Timer> {
    Ok(Timer {
        workflow_id: row.get(0)?,
        timer_id: row.get(1)?,
        fire_at: row.get(2)?,
    })
}

impl SqliteStore {
    /// Timers firing at or before `as_of`, in fire order: a range scan of `timers_fire_at`.
    fn timers_until(&self, as_of: Millis) -> Result<Vec<Timer>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT workflow_id, timer_id, fire_at FROM timers
             WHERE fire_at <= ?1
             ORDER BY fire_at, workflow_id, timer_id",
        )?;
        let timers = stmt.query_map([as_of], timer_from_row)?;
        Ok(timers.collect::<rusqlite::Result<_>>()?)
    }
}

impl TimerStore for SqliteStore {
    fn schedule_timer(&self, workflow_id: &str, timer_id: &str, fire_at: Millis) -> Result<()> {
        check_ids(workflow_id, timer_id)?;
        let tx = self.write_tx()?;
        tx.prepare_cached(
            "INSERT INTO timers (workflow_id, timer_id, fire_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (workflow_id, timer_id) DO UPDATE SET fire_at = excluded.fire_at",
        )?
        .execute(params![workflow_id, timer_id, fire_at])?;
        tx.commit()?;
        Ok(())
    }

    fn due_timers(&self, as_of: Millis) -> Result<Vec<Timer>> {
        self.timers_until(as_of)
    }

    fn cancel_timer(&self, workflow_id: &str, timer_id: &str) -> Result<bool> {
        check_ids(workflow_id, timer_id)?;
        let tx = self.write_tx()?;
        let removed = tx
            .prepare_cached("DELETE FROM timers WHERE workflow_id = ?1 AND timer_id = ?2")?
            .execute([workflow_id, timer_id])?;
        tx.commit()?;
        Ok(removed > 0)
    }

    fn list_timers(&self) -> Result<Vec<Timer>> {
        self.timers_until(Millis::MAX)
    }
}
