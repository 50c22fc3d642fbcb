//! Retention: closed workflows purged by age, and the size of the store.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::Result;

/// What one [`RetentionStore::purge_workflows`] call deleted, per table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeCounts {
    /// Workflows (projection rows) deleted.
    pub workflows: u64,
    /// Journal events deleted.
    pub events: u64,
    /// Outbox rows deleted, whatever their status.
    pub outbox_rows: u64,
    /// Timers deleted.
    pub timers: u64,
    /// Visibility records deleted.
    pub visibility_records: u64,
    /// Whether closed workflows older than the time remain: call again to purge them.
    pub more: bool,
}

/// The size of the database, in SQLite pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageStats {
    pub page_size: u64,
    /// Pages in the database, free ones included: `page_size * page_count` is its size.
    pub page_count: u64,
    /// Pages that hold nothing; the file shrinks by them after a delete when the database
    /// uses incremental auto-vacuum.
    pub freelist_count: u64,
    /// Whether the database was created with incremental auto-vacuum (every database created
    /// since schema version 2, and any after [`RetentionStore::vacuum`]).
    pub incremental_vacuum: bool,
}

/// Retention and space.
pub trait RetentionStore {
    /// Deletes up to `limit` closed workflows (status `completed`, `failed` or `cancelled`)
    /// with `closed_at < closed_before`, oldest close first, and everything the store keeps
    /// per workflow id: their journal events, projection rows, outbox rows (any status),
    /// timers and visibility records. One `IMMEDIATE` transaction per call, so a large purge
    /// holds the write lock for `limit` workflows at a time; `more` says whether to call
    /// again. The freed pages are returned to the file system afterwards (see
    /// [`RetentionStore::storage_stats`]).
    ///
    /// Not deleted: what is not keyed by workflow id. Checkpoints, effects and run events
    /// belong to agent runs; artifacts expire by their own `expires_at`
    /// ([`crate::ArtifactStore::purge_expired_artifacts`]); namespaces and packages are
    /// shared by many workflows; recorded request ids expire by their own rule.
    /// A workflow still `running`, `paused`, `pending` or `continuedAsNew` is never purged.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a `limit` of 0 or above
    /// [`crate::MAX_PAGE_LIMIT`]; nothing is deleted then.
    fn purge_workflows(&self, closed_before: Millis, limit: u32) -> Result<PurgeCounts>;

    /// The database's size in pages.
    fn storage_stats(&self) -> Result<StorageStats>;

    /// Rewrites the whole database into a compact file and switches it to incremental
    /// auto-vacuum if it was not (a database created at schema version 1). That needs free
    /// space for a second copy while it runs; on a full disk a database already in incremental
    /// auto-vacuum gives its free pages back in small steps instead, which needs next to none
    /// (a database of schema version 1 then fails with [`crate::Error::StorageFull`]). Cannot
    /// run inside a transaction.
    fn vacuum(&self) -> Result<()>;
}
