//! SQL of the durable timers (table `timers`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Row};

use super::paging::{self, Listing};
use super::SqliteStore;
use crate::backend::checks::check_id;
use crate::error::Result;
use crate::model::timers::*;
use crate::model::{Millis, Page, PageRequest};

/// Timers in fire order.
const TIMERS: Listing = Listing {
    name: "timers",
    key: "fire_at, workflow_id, timer_id",
    key_len: 3,
};

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
    fn timers_until(&self, as_of: Millis, page: &PageRequest) -> Result<Page<Timer>> {
        TIMERS.read(
            self.conn(),
            "SELECT workflow_id, timer_id, fire_at FROM timers WHERE fire_at <= ?",
            vec![SqlValue::Integer(as_of)],
            page,
            |row| Ok(timer_from_row(row)?),
            |timer| {
                vec![
                    SqlValue::Integer(timer.fire_at),
                    paging::text(&timer.workflow_id),
                    paging::text(&timer.timer_id),
                ]
            },
        )
    }
}

impl TimerStore for SqliteStore {
    fn schedule_timer(&self, workflow_id: &str, timer_id: &str, fire_at: Millis) -> Result<()> {
        alone!(self, Operation::ScheduleTimer { workflow_id: workflow_id.to_owned(), timer_id: timer_id.to_owned(), fire_at }, Done::ScheduleTimer {} => ());
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

    fn due_timers(&self, as_of: Millis, page: &PageRequest) -> Result<Page<Timer>> {
        self.timers_until(as_of, page)
    }

    fn cancel_timer(&self, workflow_id: &str, timer_id: &str) -> Result<bool> {
        alone!(self, Operation::CancelTimer { workflow_id: workflow_id.to_owned(), timer_id: timer_id.to_owned() }, Done::CancelTimer { removed } => removed);
        check_ids(workflow_id, timer_id)?;
        let tx = self.write_tx()?;
        let removed = tx
            .prepare_cached("DELETE FROM timers WHERE workflow_id = ?1 AND timer_id = ?2")?
            .execute([workflow_id, timer_id])?;
        tx.commit()?;
        Ok(removed > 0)
    }

    fn list_timers(&self, page: &PageRequest) -> Result<Page<Timer>> {
        self.timers_until(Millis::MAX, page)
    }
}
