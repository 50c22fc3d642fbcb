//! SQL of retention: purging closed workflows across the per-workflow tables, and giving
//! freed space back to the file system.

use rusqlite::{params, Connection};

use super::paging::page_limit;
use super::{from_sql_int, SqliteStore};
use crate::error::Result;
use crate::model::retention::*;
use crate::model::{Millis, PageRequest};

/// The tables keyed by workflow id, in the order `purge_workflows` reads their counts.
const PER_WORKFLOW: [&str; 5] = ["events", "outbox", "timers", "visibility", "workflows"];

impl SqliteStore {
    /// Gives the pages freed by a delete back to the file system: `incremental_vacuum`
    /// truncates the database (it moves pages only in databases created with incremental
    /// auto-vacuum, and does nothing in others), and a checkpoint copies that into the file.
    ///
    /// Best effort, after the delete has committed: when it fails (a full disk has no room for
    /// the pages it moves) the freed pages stay on the free list, where later writes reuse
    /// them, and the next delete tries again. The delete's own result stands either way.
    pub(crate) fn release_space(&self) {
        let conn = self.conn();
        if incremental_vacuum(conn).is_err() {
            return;
        }
        // On OPFS the store holds the database alone (exclusive locking): TRUNCATE empties the
        // WAL file, giving its space back to the origin's quota. A native file may have
        // readers on other connections, which TRUNCATE would wait for: PASSIVE copies what it
        // can without waiting, and `journal_size_limit` trims the WAL when it next restarts.
        let mode = if exclusive(conn) {
            "TRUNCATE"
        } else {
            "PASSIVE"
        };
        let _ = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |_| Ok(()));
    }
}

/// Frees every page on the free list. The pragma frees one page per step (each step is a
/// row), so it is stepped to the end; `execute_batch` would stop after the first.
fn incremental_vacuum(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached("PRAGMA incremental_vacuum")?;
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

impl RetentionStore for SqliteStore {
    fn purge_workflows(&self, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
        let limit = page_limit(&PageRequest::first(limit))?;
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
        let mut deleted = [0u64; PER_WORKFLOW.len()];
        for (count, table) in deleted.iter_mut().zip(PER_WORKFLOW) {
            *count = tx
                .prepare_cached(&format!(
                    "DELETE FROM {table} WHERE workflow_id IN (SELECT value FROM json_each(?1))"
                ))?
                .execute([&ids])? as u64;
        }
        tx.commit()?;
        self.release_space();
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

    fn storage_stats(&self) -> Result<StorageStats> {
        let conn = self.conn();
        Ok(StorageStats {
            page_size: pragma_u64(conn, "page_size")?,
            page_count: pragma_u64(conn, "page_count")?,
            freelist_count: pragma_u64(conn, "freelist_count")?,
            // 2 is INCREMENTAL (1 would be FULL, which this store never sets).
            incremental_vacuum: pragma_u64(conn, "auto_vacuum")? == 2,
        })
    }

    fn vacuum(&self) -> Result<()> {
        // The mode takes effect with the VACUUM that follows; both outside any transaction.
        self.conn()
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")?;
        self.release_space();
        Ok(())
    }
}
