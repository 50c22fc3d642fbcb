//! Durable timers: a workflow's wake-ups that survive restarts.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::Result;

/// A scheduled timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timer {
    pub workflow_id: String,
    pub timer_id: String,
    pub fire_at: Millis,
}

/// Durable timers.
pub trait TimerStore {
    /// Schedules the timer, replacing the fire time of an existing one with the same ids.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty id.
    fn schedule_timer(&self, workflow_id: &str, timer_id: &str, fire_at: Millis) -> Result<()>;

    /// Timers with `fire_at <= as_of`, by fire time (ids break ties).
    fn due_timers(&self, as_of: Millis) -> Result<Vec<Timer>>;

    /// Removes the timer; returns whether it existed.
    fn cancel_timer(&self, workflow_id: &str, timer_id: &str) -> Result<bool>;

    /// Every timer, by fire time.
    fn list_timers(&self) -> Result<Vec<Timer>>;
}
