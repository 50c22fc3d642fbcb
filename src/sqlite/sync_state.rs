//! SQL of the sync state (tables `sync_targets`, `sync_heads`, `sync_clock`, and the
//! `changed` mark of `workflows`): what a store agrees on with each sync target, kept so that
//! a pass reads only the workflows appended to since the last.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::paging::{self, Listing};
use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::sync::{check_heads, check_save, conflict_on, state_name, state_of};
use crate::error::Result;
use crate::model::sync::*;
use crate::model::{Page, PageRequest};

/// The change mark the next append gives its workflow, or `None` while no sync target exists
/// (then appends leave the mark alone and cost nothing more).
pub(super) fn next_change_mark(conn: &Connection) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT max(floor, coalesce(
                      (SELECT max(changed) FROM workflows WHERE changed IS NOT NULL), 0)) + 1
             FROM sync_clock WHERE id = 1",
        )?
        .query_row([], |row| row.get(0))
        .optional()?)
}

/// What a purge of the workflows `ids` (a JSON array) leaves of their sync state, before their
/// rows go: each target's state becomes a tombstone, and the clock's floor rises to their
/// highest mark, so that marks never go back.
///
/// A workflow with events but no agreed head on a target gets a tombstone at head 0 there too:
/// a push of it may have applied on the server while its answer was lost, and without the
/// tombstone the next pull would bring the purged workflow back.
pub(super) fn tombstone(conn: &Connection, ids: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE sync_clock SET floor = max(floor, coalesce(
           (SELECT max(changed) FROM workflows
            WHERE workflow_id IN (SELECT value FROM json_each(?1))), 0))",
    )?
    .execute([ids])?;
    conn.prepare_cached(
        "INSERT INTO sync_heads (target, workflow_id, head, state)
         SELECT t.target, w.workflow_id, 0, 'purged' FROM sync_targets t, workflows w
         WHERE w.workflow_id IN (SELECT value FROM json_each(?1)) AND w.head > 0
         ON CONFLICT (target, workflow_id) DO NOTHING",
    )?
    .execute([ids])?;
    conn.prepare_cached(
        "UPDATE sync_heads SET state = 'purged'
         WHERE workflow_id IN (SELECT value FROM json_each(?1))",
    )?
    .execute([ids])?;
    Ok(())
}

impl SqliteStore {
    /// [`crate::Operation::SaveSync`].
    pub(super) fn save_sync(
        &self,
        target: &str,
        client_id: &str,
        cursor: Option<CursorMove>,
        mark: Option<u64>,
        heads: &[SyncHeadUpdate],
    ) -> Result<()> {
        check_save(target, client_id, heads)?;
        let tx = self.write_tx()?;
        tx.prepare_cached(
            "INSERT INTO sync_targets (target, client_id, cursor, mark) VALUES (?1, ?2, 0, NULL)
             ON CONFLICT (target) DO NOTHING",
        )?
        .execute([target, client_id])?;
        tx.prepare_cached("INSERT OR IGNORE INTO sync_clock (id, floor) VALUES (1, 0)")?
            .execute([])?;
        let (stored_client, stored_cursor): (String, i64) = tx
            .prepare_cached("SELECT client_id, cursor FROM sync_targets WHERE target = ?1")?
            .query_row([target], |row| Ok((row.get(0)?, row.get(1)?)))?;
        if stored_client != client_id {
            return Err(conflict_on("syncTarget", target, None, None));
        }
        if let Some(CursorMove { from, to }) = cursor {
            let stored = from_sql_int("cursor", stored_cursor)?;
            if stored != from {
                return Err(conflict_on("syncCursor", target, Some(from), Some(stored)));
            }
            tx.prepare_cached("UPDATE sync_targets SET cursor = ?2 WHERE target = ?1")?
                .execute(params![target, to_sql_int("cursor.to", to)?])?;
        }
        if let Some(mark) = mark {
            tx.prepare_cached(
                "UPDATE sync_targets SET mark = max(coalesce(mark, ?2), ?2) WHERE target = ?1",
            )?
            .execute(params![target, to_sql_int("mark", mark)?])?;
        }
        for update in heads {
            save_head(&tx, target, update)?;
        }
        tx.commit()
    }
}

/// Moves one workflow's agreed head, from the head the pass read.
fn save_head(conn: &Connection, target: &str, update: &SyncHeadUpdate) -> Result<()> {
    let stored: Option<i64> = conn
        .prepare_cached("SELECT head FROM sync_heads WHERE target = ?1 AND workflow_id = ?2")?
        .query_row([target, &update.workflow_id], |row| row.get(0))
        .optional()?;
    let stored = stored.map(|head| from_sql_int("head", head)).transpose()?;
    if stored != update.expected {
        return Err(conflict_on(
            "syncHead",
            &update.workflow_id,
            update.expected,
            stored,
        ));
    }
    conn.prepare_cached(
        "INSERT INTO sync_heads (target, workflow_id, head, state) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (target, workflow_id) DO UPDATE SET head = excluded.head, state = excluded.state",
    )?
    .execute(params![
        target,
        update.workflow_id,
        to_sql_int("head", update.head)?,
        state_name(update.state)
    ])?;
    Ok(())
}

/// A listed workflow, with its change mark (0 where the listing is not by mark).
struct Listed {
    workflow: SyncWorkflow,
    changed: i64,
}

/// A [`SyncWorkflow`] from a row of `(workflow id, local head, synced head, state, ...)`.
fn workflow_from(row: &Row<'_>) -> Result<SyncWorkflow> {
    let state: Option<String> = row.get(3)?;
    Ok(SyncWorkflow {
        workflow_id: row.get(0)?,
        local_head: from_sql_int("head", row.get(1)?)?,
        synced_head: from_sql_int("head", row.get(2)?)?,
        state: state.as_deref().map(state_of).transpose()?,
    })
}

/// A listed workflow from a row of `(workflow id, local head, synced head, state, mark)`.
fn listed_from(row: &Row<'_>) -> Result<Listed> {
    Ok(Listed {
        workflow: workflow_from(row)?,
        changed: row.get::<_, Option<i64>>(4)?.unwrap_or(0),
    })
}

/// A listing's ordering key of a listed workflow.
type KeyOf = fn(&Listed) -> Vec<SqlValue>;

fn by_id(listed: &Listed) -> Vec<SqlValue> {
    vec![paging::text(&listed.workflow.workflow_id)]
}

fn by_mark(listed: &Listed) -> Vec<SqlValue> {
    vec![
        SqlValue::Integer(listed.changed),
        paging::text(&listed.workflow.workflow_id),
    ]
}

/// Local workflows by id, with the target's state of each.
const BY_ID: Listing = Listing {
    name: "syncWorkflows",
    key: "w.workflow_id",
    key_len: 1,
};

/// Local workflows by change mark.
const BY_MARK: Listing = Listing {
    name: "syncChanged",
    key: "w.changed, w.workflow_id",
    key_len: 2,
};

/// The target's workflows in one state, by id.
const BY_STATE: Listing = Listing {
    name: "syncInState",
    key: "s.workflow_id",
    key_len: 1,
};

/// The local workflows a pass has to look at: past their agreed head, never synced, or not
/// in step.
const NEEDING_A_PASS: &str = "SELECT w.workflow_id, w.head, coalesce(s.head, 0), s.state,
            w.changed
     FROM workflows AS w
     LEFT JOIN sync_heads AS s ON s.target = ? AND s.workflow_id = w.workflow_id
     WHERE (s.state IS NULL OR s.state != 'synced' OR w.head != s.head)";

impl SyncState for SqliteStore {
    fn sync_target(&self, target: &str) -> Result<SyncTarget> {
        check_id("target", target)?;
        let _snapshot = self.conn().unchecked_transaction()?;
        let stored: Option<(String, i64, Option<i64>)> = self
            .conn()
            .prepare_cached("SELECT client_id, cursor, mark FROM sync_targets WHERE target = ?1")?
            .query_row([target], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .optional()?;
        let clock = next_change_mark(self.conn())?.map_or(0, |next| next - 1);
        let (client_id, cursor, mark) = match stored {
            Some((client, cursor, mark)) => (Some(client), cursor, mark),
            None => (None, 0, None),
        };
        Ok(SyncTarget {
            client_id,
            cursor: from_sql_int("cursor", cursor)?,
            mark: mark.map(|mark| from_sql_int("mark", mark)).transpose()?,
            clock: from_sql_int("clock", clock)?,
        })
    }

    fn sync_workflows(
        &self,
        target: &str,
        selection: SyncSelection,
        page: &PageRequest,
    ) -> Result<Page<SyncWorkflow>> {
        check_id("target", target)?;
        let mut params = vec![paging::text(target)];
        // One listing call whatever the selection, so that its code is in the build once.
        let (listing, sql, key_of): (&Listing, String, KeyOf) = match selection {
            SyncSelection::All => (&BY_ID, NEEDING_A_PASS.to_owned(), by_id),
            SyncSelection::Changed { after, through } => {
                params.push(SqlValue::Integer(to_sql_int("after", after)?));
                params.push(SqlValue::Integer(to_sql_int("through", through)?));
                let sql = format!("{NEEDING_A_PASS} AND w.changed > ? AND w.changed <= ?");
                (&BY_MARK, sql, by_mark)
            }
            SyncSelection::InState { state } => {
                params.push(paging::text(state_name(state)));
                let sql = "SELECT s.workflow_id, coalesce(w.head, 0), s.head, s.state, NULL
                               FROM sync_heads AS s
                               LEFT JOIN workflows AS w ON w.workflow_id = s.workflow_id
                               WHERE s.target = ? AND s.state = ?";
                (&BY_STATE, sql.to_owned(), by_id)
            }
        };
        let page = listing.read(self.conn(), &sql, params, page, listed_from, key_of)?;
        Ok(Page {
            items: page.items.into_iter().map(|l| l.workflow).collect(),
            next_cursor: page.next_cursor,
        })
    }

    fn sync_heads(&self, target: &str, workflow_ids: &[String]) -> Result<Vec<SyncWorkflow>> {
        check_id("target", target)?;
        check_heads(workflow_ids)?;
        let ids = serde_json::to_string(workflow_ids)?;
        let mut stmt = self.conn().prepare_cached(
            "SELECT j.value, coalesce(w.head, 0), coalesce(s.head, 0), s.state
             FROM json_each(?2) AS j
             LEFT JOIN workflows AS w ON w.workflow_id = j.value
             LEFT JOIN sync_heads AS s ON s.target = ?1 AND s.workflow_id = j.value
             ORDER BY j.key",
        )?;
        let mut rows = stmt.query(params![target, ids])?;
        let mut found = Vec::with_capacity(workflow_ids.len());
        while let Some(row) = rows.next()? {
            found.push(workflow_from(row)?);
        }
        Ok(found)
    }
}
