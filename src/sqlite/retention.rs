//! SQL of retention: purging closed workflows across the per-workflow tables, and giving
//! freed space back to the file system.

use crate::model::steps::{Operation, OperationOutcome as Done};
use std::sync::atomic::Ordering;

use rusqlite::{params, Connection};

use super::room::{is_full, Deleting};
use super::sync_state::tombstone;
use super::SqliteStore;
use crate::backend::checks::from_sql_int;
use crate::backend::paging::checked_limit;
use crate::error::{Error, Result};
use crate::model::retention::*;
use crate::model::Millis;

/// The tables keyed by workflow id, in the order `purge_workflows` reads their counts.
const PER_WORKFLOW: [&str; 5] = ["events", "outbox", "timers", "visibility", "workflows"];

/// How many bytes of pages one step of [`SqliteStore::release_space`] moves: the most the WAL
/// grows by before the step's checkpoint empties it again. Chrome gives an OPFS file room in
/// chunks of at least 1 MiB, and keeps a chunk with the file while it is open: half of one
/// lets every step run in the room the delete itself got for the WAL.
const RELEASE_STEP_BYTES: u64 = 512 << 10;

/// Free pages an open leaves for later writes rather than giving them back.
const PAGES_LEFT_AT_OPEN: u64 = 64;

impl SqliteStore {
    /// Gives the pages freed by a delete back to the file system, in steps:
    /// `incremental_vacuum(n)` moves up to `n` pages from the end of the database into free
    /// ones and truncates it (in a database created with incremental auto-vacuum; in others
    /// it does nothing), and a checkpoint copies that into the file. Small steps keep the WAL
    /// small, so that this works on a full disk: each step needs room for about
    /// [`RELEASE_STEP_BYTES`] of WAL.
    ///
    /// Best effort, after the delete has committed: when a step fails for want of room, the
    /// freed pages left stay on the free list, where later writes reuse them, and the next
    /// delete (or the next open) tries again. The delete's own result stands either way.
    /// Returns whether every page that can go back went back: false when a step failed with
    /// pages left (the caller may make room and call again).
    pub(crate) fn release_space(&self) -> bool {
        if self.in_step.get() {
            // Checkpoints cannot run inside the step's transaction: after it commits.
            self.release_after_step.set(true);
            return true;
        }
        let conn = self.conn();
        let free_pages = || pragma_u64(conn, "freelist_count").unwrap_or(0);
        if free_pages() == 0 {
            return true;
        }
        let step = pragma_u64(conn, "page_size").map_or(1, |size| RELEASE_STEP_BYTES / size.max(1));
        // First the WAL, which may hold much of a full disk's space.
        self.checkpoint();
        loop {
            let free = free_pages();
            if free == 0 {
                return true;
            }
            if incremental_vacuum(conn, step.max(1)).is_err() {
                return false;
            }
            self.checkpoint();
            if free_pages() >= free {
                // No progress: the database does not use incremental auto-vacuum and keeps
                // its freed pages for later writes.
                return true;
            }
        }
    }

    /// Gives back the pages an earlier delete freed but could not give back (a full disk, a
    /// crash), when there are more than a few: a new database has the page a migration freed,
    /// which its first write takes again, and giving that back would cost a checkpoint (after
    /// which the next commit writes and flushes a new WAL header too).
    pub(crate) fn release_space_left(&self) {
        if pragma_u64(self.conn(), "freelist_count").unwrap_or(0) > PAGES_LEFT_AT_OPEN {
            self.release_space();
        }
    }

    /// Copies the WAL into the database file. On OPFS the store holds the database alone
    /// (exclusive locking): TRUNCATE also empties the WAL file, which gives its space back to
    /// the origin's quota once the file closes. A native file may have readers on other
    /// connections, which TRUNCATE would wait for: PASSIVE copies what it can without
    /// waiting, and `journal_size_limit` trims the WAL when it next restarts. Best effort, as
    /// [`SqliteStore::release_space`]; returns whether it found room (see [`Room`]).
    pub(super) fn checkpoint(&self) -> bool {
        let conn = self.conn();
        let mode = if exclusive(conn) {
            "TRUNCATE"
        } else {
            "PASSIVE"
        };
        let outcome = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()));
        let full = outcome.as_ref().is_err_and(is_full);
        self.room.blocked.store(full, Ordering::Relaxed);
        !full
    }

    /// Runs a delete; when the disk is full, makes room by checkpointing the WAL (on OPFS
    /// emptying it) and runs it once more. A delete needs room for its own WAL frames, and the
    /// WAL of a full disk may have none left.
    ///
    /// # Errors
    /// What the second attempt returns, `STORAGE_FULL` included.
    pub(crate) fn delete_with_room<T>(&self, delete: impl Fn() -> Result<T>) -> Result<T> {
        if self.in_step.get() {
            // Inside a step there is no checkpoint to make room with: the step fails whole.
            return delete();
        }
        let _deleting = Deleting::start(&self.room);
        match delete() {
            Err(Error::StorageFull { .. }) => {
                self.checkpoint();
                delete()
            }
            other => other,
        }
    }
}

/// Frees up to `pages` pages of the free list. The pragma frees one page per step (each step
/// is a row), so it is stepped to the end; `execute_batch` would stop after the first.
fn incremental_vacuum(conn: &Connection, pages: u64) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(&format!("PRAGMA incremental_vacuum({pages})"))?;
    let mut rows = stmt.query([])?;
    while rows.next()?.is_some() {}
    Ok(())
}

fn exclusive(conn: &Connection) -> bool {
    conn.pragma_query_value(None, "locking_mode", |row| row.get::<_, String>(0))
        .is_ok_and(|mode| mode.eq_ignore_ascii_case("exclusive"))
}

fn pragma_u64(conn: &Connection, name: &str) -> Result<u64> {
    let value: i64 = conn.pragma_query_value(None, name, |row| row.get(0))?;
    from_sql_int(name, value)
}

impl SqliteStore {
    /// The purge's one transaction: up to `limit` closed workflows, oldest close first.
    fn purge_in_tx(&self, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
        let tx = self.write_tx()?;
        let mut ids: Vec<String> = tx
            .prepare_cached(
                "SELECT workflow_id FROM workflows
                 WHERE status IN ('completed', 'failed', 'cancelled') AND closed_at < ?1
                 ORDER BY closed_at, workflow_id
                 LIMIT ?2",
            )?
            .query_map(params![closed_before, i64::from(limit) + 1], |row| {
                row.get(0)
            })?
            .collect::<rusqlite::Result<_>>()?;
        let more = ids.len() > limit as usize;
        ids.truncate(limit as usize);
        if ids.is_empty() {
            return Ok(PurgeCounts::default());
        }
        // The ids travel as one JSON array, read with json_each: no SQL text from values.
        let ids = serde_json::to_string(&ids)?;
        tombstone(&tx, &ids)?;
        let mut deleted = [0u64; PER_WORKFLOW.len()];
        for (count, table) in deleted.iter_mut().zip(PER_WORKFLOW) {
            *count = tx
                .prepare_cached(&format!(
                    "DELETE FROM {table} WHERE workflow_id IN (SELECT value FROM json_each(?1))"
                ))?
                .execute([&ids])? as u64;
        }
        // A purged workflow's lease (a sync server's) goes with it: the id may be used afresh.
        tx.prepare_cached(
            "DELETE FROM sync_leases WHERE workflow_id IN (SELECT value FROM json_each(?1))",
        )?
        .execute([&ids])?;
        tx.commit()?;
        let [events, outbox_rows, timers, visibility_records, workflows] = deleted;
        Ok(PurgeCounts {
            workflows,
            events,
            outbox_rows,
            timers,
            visibility_records,
            more,
        })
    }
}

impl RetentionStore for SqliteStore {
    fn purge_workflows(&self, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
        alone!(self, Operation::PurgeWorkflows { closed_before, limit }, Done::PurgeWorkflows { counts } => counts);
        let limit = checked_limit("limit", limit)?;
        let counts = self.delete_with_room(|| self.purge_in_tx(closed_before, limit))?;
        if counts.workflows > 0 {
            self.release_space();
        }
        Ok(counts)
    }

    fn storage_stats(&self) -> Result<StorageStats> {
        let conn = self.conn();
        Ok(StorageStats {
            page_size: pragma_u64(conn, "page_size")?,
            page_count: pragma_u64(conn, "page_count")?,
            freelist_count: pragma_u64(conn, "freelist_count")?,
            incremental_vacuum: incremental(conn),
        })
    }

    fn vacuum(&self) -> Result<()> {
        // The mode takes effect with the VACUUM that follows; both outside any transaction.
        let rewritten = self
            .conn()
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(Error::from);
        match rewritten {
            // A full disk has no room for the second copy VACUUM writes; a database in
            // incremental auto-vacuum gives its free pages back step by step instead, in
            // about no room at all.
            Err(Error::StorageFull { .. }) if self.compact_in_place() => Ok(()),
            Err(error) => Err(error),
            Ok(()) => {
                self.release_space();
                Ok(())
            }
        }
    }
}

impl SqliteStore {
    /// What [`RetentionStore::vacuum`] does on a full disk: where the database uses
    /// incremental auto-vacuum, gives its free pages back step by step, in about no room at
    /// all. Returns whether it did so and every free page went back.
    pub(crate) fn compact_in_place(&self) -> bool {
        incremental(self.conn()) && self.release_space()
    }
}

/// Whether the database uses incremental auto-vacuum (2; 1 would be FULL, which this store
/// never sets).
pub(super) fn incremental(conn: &Connection) -> bool {
    pragma_u64(conn, "auto_vacuum").is_ok_and(|mode| mode == 2)
}
