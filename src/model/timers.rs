//! Durable timers: a workflow's wake-ups that survive restarts.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// A scheduled timer, identified by its workflow and its timer id within that workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timer {
    pub workflow_id: String,
    pub timer_id: String,
    pub fire_at: Millis,
}

/// Durable timers. The store only keeps them: it never fires a timer by itself; a scheduler
/// asks for the due ones with the current time and cancels each once it has acted on it.
pub trait TimerStore {
    /// Schedules the timer, or replaces the fire time of the existing one with the same
    /// workflow and timer ids (an upsert: one write, atomic).
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized id; nothing is written then.
    fn schedule_timer(&self, workflow_id: &str, timer_id: &str, fire_at: Millis) -> Result<()>;

    /// A page of the timers with `fire_at <= as_of`, earliest first; at the same fire time by
    /// workflow id, then timer id. Reading does not remove them.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn due_timers(&self, as_of: Millis, page: &PageRequest) -> Result<Page<Timer>>;

    /// Removes the timer; returns whether it existed (`false` is not an error, so cancelling
    /// twice is harmless).
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized id, which no timer can have.
    fn cancel_timer(&self, workflow_id: &str, timer_id: &str) -> Result<bool>;

    /// A page of every timer, in the order of [`TimerStore::due_timers`].
    ///
    /// # Errors
    /// As [`TimerStore::due_timers`].
    fn list_timers(&self, page: &PageRequest) -> Result<Page<Timer>>;
}
