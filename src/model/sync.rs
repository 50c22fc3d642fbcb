//! Change feeds, for the sync server: each push to a namespace is one entry of the namespace's
//! feed (which workflow went from which head to which), recorded in the push's own transaction
//! by [`crate::Operation::RecordChange`], in commit order. Readers follow a feed by position,
//! and pages are bounded by bytes as well as by count.

use serde::{Deserialize, Serialize};

use super::journal::StoredEvent;
use crate::error::Result;

/// One entry of a feed: `workflow_id` went from head `base` to head `head`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedEntry {
    pub position: u64,
    pub workflow_id: String,
    pub base: u64,
    pub head: u64,
    /// The events `base + 1 ..= head`, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<StoredEvent>>,
}

/// A page of a feed, and whether more entries follow it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedPage {
    pub entries: Vec<FeedEntry>,
    pub more: bool,
}

/// A page of a workflow's events, and whether it reaches the head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    pub events: Vec<StoredEvent>,
    /// No event follows the page's last.
    pub complete: bool,
}

/// How much one page may hold: at most `limit` items and `max_bytes` bytes of events, counted
/// as stored; a page holds one item even when that alone is larger, so that a reader always
/// moves on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBound {
    pub limit: u32,
    pub max_bytes: u64,
}

/// What a [`ChangeListener`] calls with each entry another process recorded: the feed and the
/// position (0: look again, changes may have gone unheard).
pub type OnChange = Box<dyn Fn(&str, u64) + Send + Sync>;

/// Change feeds and byte-bounded reads, as the sync server uses them.
pub trait SyncFeed {
    /// The entries of `feed` after position `after`, in position order (the order their pushes
    /// committed in), with their events when `with_events`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized feed name or a limit of 0.
    fn read_feed(
        &self,
        feed: &str,
        after: u64,
        bound: PageBound,
        with_events: bool,
    ) -> Result<FeedPage>;

    /// The events of `workflow_id` after seq `after`.
    ///
    /// # Errors
    /// As [`SyncFeed::read_feed`], for the workflow id.
    fn read_events_after(
        &self,
        workflow_id: &str,
        after: u64,
        bound: PageBound,
    ) -> Result<EventsPage>;

    /// Calls `on_change(feed, position)` for entries that other processes record, for as long
    /// as the returned listener lives (`None` when this store has no other writers to hear
    /// from). The calls come from a thread of the listener's; one with position 0 means that
    /// changes may have been missed (the connection was lost), so that every reader looks again.
    ///
    /// # Errors
    /// [`crate::Error::Unavailable`] when the store cannot be listened to.
    fn listen_changes(&self, on_change: OnChange) -> Result<Option<ChangeListener>>;
}

/// Listens for as long as it lives; dropping it stops the listening thread.
pub struct ChangeListener {
    stop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl ChangeListener {
    /// A listener that runs `stop` when dropped.
    pub fn new(stop: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            stop: Some(Box::new(stop)),
        }
    }
}

impl std::fmt::Debug for ChangeListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeListener").finish_non_exhaustive()
    }
}

impl Drop for ChangeListener {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
    }
}
