//! The change feed (table `changes`, schema_7.sql): every commit that changed something is
//! numbered, in commit order, and its change kept with it for a window of the newest
//! [`KEPT_CHANGES`]. A reader that saw change `n` asks for what came after it; one whose `n`
//! the window no longer reaches, or that an import has made stale, is told to read afresh.
//!
//! Each change is written by the transaction it describes: a commit and its number stand or
//! fall together, so the feed never holds a change that did not commit, nor misses one that
//! did.

use rusqlite::{Connection, OptionalExtension};

use super::SqliteStore;
use crate::backend::paging::checked_limit;
use crate::error::Result;
use crate::model::changes::{Change, ChangesSince};

/// How many of the newest changes the feed keeps: as many as the request log keeps requests,
/// so that a tab that can still have its request answered can still catch up on the changes.
pub const KEPT_CHANGES: u64 = 10_000;

/// The feed deletes what fell out of its window every this many changes, all at once.
const PRUNE_EVERY: i64 = 1024;

/// Numbers `change` as the feed's next and writes it, in the transaction on `conn`.
pub(super) fn record(conn: &Connection, change: &mut Change) -> Result<()> {
    change.number = None;
    let text = serde_json::to_string(change)?;
    conn.prepare_cached("INSERT INTO changes (change) VALUES (?1)")?
        .execute([text])?;
    let number = conn.last_insert_rowid();
    if number % PRUNE_EVERY == 0 {
        conn.prepare_cached("DELETE FROM changes WHERE number <= ?1")?
            .execute([number - KEPT_CHANGES as i64])?;
    }
    change.number = Some(number as u64);
    Ok(())
}

/// Marks the store's content as replaced (an import, in its transaction on `conn`): every
/// change before the mark goes, and the mark takes the next number after both the store's
/// newest change before the import (`before`) and the imported file's own.
pub(super) fn mark_replaced(conn: &Connection, before: u64) -> Result<()> {
    let number = before.max(newest(conn)?) + 1;
    conn.execute("DELETE FROM changes", [])?;
    conn.execute(
        "INSERT INTO changes (number, change) VALUES (?1, NULL)",
        [number as i64],
    )?;
    Ok(())
}

/// The newest change's number; 0 when nothing has changed yet.
pub(super) fn newest(conn: &Connection) -> Result<u64> {
    let newest: Option<i64> = conn
        .prepare_cached("SELECT max(number) FROM changes")?
        .query_row([], |row| row.get(0))?;
    Ok(newest.unwrap_or(0) as u64)
}

impl SqliteStore {
    /// The changes committed after change `after`, oldest first, at most `limit` of them (to
    /// read on, ask again after the last one's number); `after` 0 asks from the first.
    ///
    /// `reset` (with no changes) when the feed cannot tell what came after `after`: the
    /// window of the newest [`KEPT_CHANGES`] no longer reaches back to it, an import replaced
    /// the store's content since, or `after` is a number this store has not given yet (one
    /// from another store). The reader then reads what it shows afresh and follows the feed
    /// from `newest`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] (field `limit`) for a `limit` of 0 or above
    /// [`crate::MAX_PAGE_LIMIT`]; [`crate::Error::Backend`] from the database.
    pub fn changes_since(&self, after: u64, limit: u32) -> Result<ChangesSince> {
        let limit = checked_limit("limit", limit)?;
        // One snapshot for the window and its rows, even while another connection writes.
        let snapshot = self.conn().unchecked_transaction()?;
        let newest = newest(&snapshot)?;
        let reset = ChangesSince {
            changes: Vec::new(),
            reset: true,
            newest,
        };
        if after > newest {
            return Ok(reset);
        }
        let first: Option<(i64, Option<String>)> = snapshot
            .prepare_cached("SELECT number, change FROM changes ORDER BY number LIMIT 1")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        if let Some((oldest, mark)) = first {
            let unreachable = oldest as u64 > after + 1;
            let replaced_since = oldest as u64 > after && mark.is_none();
            if unreachable || replaced_since {
                return Ok(reset);
            }
        }
        let mut stmt = snapshot.prepare_cached(
            "SELECT number, change FROM changes WHERE number > ?1 ORDER BY number LIMIT ?2",
        )?;
        let rows = stmt.query_map([after as i64, i64::from(limit)], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, Option<String>>(1)?))
        })?;
        let mut changes = Vec::new();
        for row in rows {
            let (number, text) = row?;
            // Only the oldest row can be an import's mark, and that was answered above.
            let Some(text) = text else { return Ok(reset) };
            let mut change: Change = serde_json::from_str(&text)?;
            change.number = Some(number as u64);
            changes.push(change);
        }
        Ok(ChangesSince {
            changes,
            reset: false,
            newest,
        })
    }
}
