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

// ----- the sync state of a store that syncs with servers -----

/// What a store and one sync target (a server's namespace, named by the client, for example
/// `team@https://sync.example.com`) agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncTarget {
    /// The client id the target's pushes are made under; `None` before the first save.
    pub client_id: Option<String>,
    /// Where the store is in the namespace's change feed.
    pub cursor: u64,
    /// Every local append up to this change mark was handled by a sync pass; `None` until a
    /// first pass over every workflow ended.
    pub mark: Option<u64>,
    /// The store's change mark now: a pass that starts here and handles every workflow
    /// changed up to it may then save it as its `mark`.
    pub clock: u64,
}

/// How a workflow stands with a sync target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SyncHeadState {
    /// Events `1..=head` are the same here and on the server.
    Synced,
    /// Written here and on the server since they agreed on `head`: reported at each pass,
    /// never merged.
    Conflict,
    /// Purged here after agreeing on `head` (0 when a push's answer may have been lost): its
    /// events are not pulled back (unless the app asks), and a workflow written here again
    /// under its id is a conflict where the server holds events under that id.
    Purged,
}

/// One workflow as a sync pass sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncWorkflow {
    pub workflow_id: String,
    /// The local head (0: no events here).
    pub local_head: u64,
    /// The head the store and the target agree on (0: none).
    pub synced_head: u64,
    /// `None`: never synced with the target.
    pub state: Option<SyncHeadState>,
}

/// Which workflows [`SyncState::sync_workflows`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "select",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum SyncSelection {
    /// Every local workflow that needs a push (its head is past the agreed one, or it never
    /// synced) or stands unsettled (conflict, or written again after a purge), by id.
    All,
    /// As `All`, of the workflows appended with a change mark in `after + 1 ..= through`, in
    /// mark order.
    Changed { after: u64, through: u64 },
    /// The workflows the target holds in `state`, by id, local or not.
    InState { state: SyncHeadState },
}

/// A change of one workflow's agreed head, applied only when the stored head is `expected`
/// (`None`: the workflow has no sync state with the target yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncHeadUpdate {
    pub workflow_id: String,
    #[serde(default)]
    pub expected: Option<u64>,
    pub head: u64,
    pub state: SyncHeadState,
}

/// A move of the feed cursor from `from` to `to`, applied only when it is at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CursorMove {
    pub from: u64,
    pub to: u64,
}

/// The sync state of a store, per target: what it agrees on with each server, kept beside the
/// workflows so that a pass reads only what changed since the last.
///
/// While a target exists, every append gives its workflow the store's next change mark;
/// [`crate::RetentionStore::purge_workflows`] turns the purged workflows' sync state into
/// [`SyncHeadState::Purged`] tombstones.
pub trait SyncState {
    /// The target's state, and the store's change clock.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized target.
    fn sync_target(&self, target: &str) -> Result<SyncTarget>;

    /// A page of the workflows `selection` names.
    ///
    /// # Errors
    /// As [`SyncState::sync_target`]; [`crate::Error::InvalidInput`] for a bad page.
    fn sync_workflows(
        &self,
        target: &str,
        selection: SyncSelection,
        page: &super::PageRequest,
    ) -> Result<super::Page<SyncWorkflow>>;

    /// The named workflows as the target sees them, in the order given.
    ///
    /// # Errors
    /// As [`SyncState::sync_target`]; [`crate::Error::InvalidInput`] for a bad or repeated id
    /// or more than [`super::MAX_PAGE_LIMIT`] of them.
    fn sync_heads(&self, target: &str, workflow_ids: &[String]) -> Result<Vec<SyncWorkflow>>;
}
