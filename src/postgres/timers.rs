//! SQL of the durable timers (table `timers`) on PostgreSQL.

use super::session::Tx;

use super::paging::{col, Key, KeyKind, Listing};
use super::PgStore;
use crate::backend::checks::check_id;
use crate::error::Result;
use crate::model::timers::*;
use crate::model::{Millis, Page, PageRequest};

/// Timers in fire order.
const TIMERS: Listing = Listing {
    name: "timers",
    key: "fire_at, workflow_id, timer_id",
    kinds: &[KeyKind::Int, KeyKind::Text, KeyKind::Text],
};

fn check_ids(workflow_id: &str, timer_id: &str) -> Result<()> {
    check_id("workflowId", workflow_id)?;
    check_id("timerId", timer_id)
}

pub(super) fn schedule_in(
    tx: &mut Tx<'_>,
    workflow_id: &str,
    timer_id: &str,
    fire_at: Millis,
) -> Result<()> {
    check_ids(workflow_id, timer_id)?;
    tx.execute(
        "INSERT INTO timers (workflow_id, timer_id, fire_at) VALUES ($1, $2, $3)
         ON CONFLICT (workflow_id, timer_id) DO UPDATE SET fire_at = excluded.fire_at",
        &[&workflow_id, &timer_id, &fire_at],
    )?;
    Ok(())
}

pub(super) fn cancel_in(tx: &mut Tx<'_>, workflow_id: &str, timer_id: &str) -> Result<bool> {
    check_ids(workflow_id, timer_id)?;
    let removed = tx.execute(
        "DELETE FROM timers WHERE workflow_id = $1 AND timer_id = $2",
        &[&workflow_id, &timer_id],
    )?;
    Ok(removed > 0)
}

impl PgStore {
    fn timers_until(&self, as_of: Millis, page: &PageRequest) -> Result<Page<Timer>> {
        self.read(|client| {
            TIMERS.read(
                client,
                "SELECT workflow_id, timer_id, fire_at FROM timers WHERE fire_at <= $1",
                vec![Box::new(as_of)],
                page,
                |row| {
                    Ok(Timer {
                        workflow_id: col(row, 0)?,
                        timer_id: col(row, 1)?,
                        fire_at: col(row, 2)?,
                    })
                },
                |timer| {
                    vec![
                        Key::Int(timer.fire_at),
                        Key::text(&timer.workflow_id),
                        Key::text(&timer.timer_id),
                    ]
                },
            )
        })
    }
}

impl TimerStore for PgStore {
    fn schedule_timer(&self, workflow_id: &str, timer_id: &str, fire_at: Millis) -> Result<()> {
        check_ids(workflow_id, timer_id)?;
        self.write(|tx| schedule_in(tx, workflow_id, timer_id, fire_at))
    }

    fn due_timers(&self, as_of: Millis, page: &PageRequest) -> Result<Page<Timer>> {
        self.timers_until(as_of, page)
    }

    fn cancel_timer(&self, workflow_id: &str, timer_id: &str) -> Result<bool> {
        check_ids(workflow_id, timer_id)?;
        self.write(|tx| cancel_in(tx, workflow_id, timer_id))
    }

    fn list_timers(&self, page: &PageRequest) -> Result<Page<Timer>> {
        self.timers_until(Millis::MAX, page)
    }
}
