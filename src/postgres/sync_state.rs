//! SQL of the sync state on PostgreSQL, as `src/sqlite/sync_state.rs` keeps it. While a target
//! exists, an append locks the clock's row (`FOR UPDATE`) before taking the next change mark,
//! so that marks are taken in commit order: a pass that reads the clock then never misses an
//! append that commits later with a lower mark.

use postgres::Row;

use super::paging::{col, Key, KeyKind, Listing, Param};
use super::session::Tx;
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::sync::{check_heads, check_save, conflict_on, state_name, state_of};
use crate::error::Result;
use crate::model::sync::*;
use crate::model::{Page, PageRequest};

/// The change mark the next append gives its workflow, or `None` while no target exists.
pub(super) fn next_change_mark(tx: &mut Tx<'_>) -> Result<Option<i64>> {
    let Some(row) = tx.query_opt("SELECT floor FROM sync_clock WHERE id = 1 FOR UPDATE", &[])?
    else {
        return Ok(None);
    };
    let floor: i64 = col(&row, 0)?;
    let row = tx.query_one(
        "SELECT coalesce(max(changed), 0) FROM workflows WHERE changed IS NOT NULL",
        &[],
    )?;
    let highest: i64 = col(&row, 0)?;
    Ok(Some(floor.max(highest) + 1))
}

/// The purged workflows' sync state becomes tombstones (at head 0 where a target agreed on
/// none), and the clock's floor rises to their highest mark (see `src/sqlite/sync_state.rs`).
pub(super) fn tombstone(tx: &mut Tx<'_>, ids: &[String]) -> Result<()> {
    tx.execute(
        "UPDATE sync_clock SET floor = greatest(floor, coalesce(
           (SELECT max(changed) FROM workflows WHERE workflow_id = ANY($1::text[])), 0))",
        &[&ids],
    )?;
    tx.execute(
        "INSERT INTO sync_heads (target, workflow_id, head, state)
         SELECT t.target, w.workflow_id, 0, 'purged' FROM sync_targets t, workflows w
         WHERE w.workflow_id = ANY($1::text[]) AND w.head > 0
         ON CONFLICT (target, workflow_id) DO NOTHING",
        &[&ids],
    )?;
    tx.execute(
        "UPDATE sync_heads SET state = 'purged' WHERE workflow_id = ANY($1::text[])",
        &[&ids],
    )?;
    Ok(())
}

/// [`crate::Operation::SaveSync`] inside the caller's transaction.
pub(super) fn save_in(
    tx: &mut Tx<'_>,
    target: &str,
    client_id: &str,
    cursor: Option<CursorMove>,
    mark: Option<u64>,
    heads: &[SyncHeadUpdate],
) -> Result<()> {
    check_save(target, client_id, heads)?;
    tx.execute(
        "INSERT INTO sync_clock (id, floor) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        &[],
    )?;
    tx.execute(
        "INSERT INTO sync_targets (target, client_id, cursor, mark) VALUES ($1, $2, 0, NULL)
         ON CONFLICT (target) DO NOTHING",
        &[&target, &client_id],
    )?;
    let row = tx.query_one(
        "SELECT client_id, cursor FROM sync_targets WHERE target = $1 FOR UPDATE",
        &[&target],
    )?;
    let stored_client: String = col(&row, 0)?;
    if stored_client != client_id {
        return Err(conflict_on("syncTarget", target, None, None));
    }
    if let Some(CursorMove { from, to }) = cursor {
        let stored = to_u64("cursor", col(&row, 1)?)?;
        if stored != from {
            return Err(conflict_on("syncCursor", target, Some(from), Some(stored)));
        }
        tx.execute(
            "UPDATE sync_targets SET cursor = $2 WHERE target = $1",
            &[&target, &to_i64("cursor.to", to)?],
        )?;
    }
    if let Some(mark) = mark {
        tx.execute(
            "UPDATE sync_targets SET mark = greatest(coalesce(mark, $2), $2) WHERE target = $1",
            &[&target, &to_i64("mark", mark)?],
        )?;
    }
    for update in heads {
        save_head(tx, target, update)?;
    }
    Ok(())
}

/// Moves one workflow's agreed head, from the head the pass read.
fn save_head(tx: &mut Tx<'_>, target: &str, update: &SyncHeadUpdate) -> Result<()> {
    let stored = tx
        .query_opt(
            "SELECT head FROM sync_heads WHERE target = $1 AND workflow_id = $2 FOR UPDATE",
            &[&target, &update.workflow_id],
        )?
        .map(|row| to_u64("head", col(&row, 0)?))
        .transpose()?;
    if stored != update.expected {
        return Err(conflict_on(
            "syncHead",
            &update.workflow_id,
            update.expected,
            stored,
        ));
    }
    tx.execute(
        "INSERT INTO sync_heads (target, workflow_id, head, state) VALUES ($1, $2, $3, $4)
         ON CONFLICT (target, workflow_id)
         DO UPDATE SET head = excluded.head, state = excluded.state",
        &[
            &target,
            &update.workflow_id,
            &to_i64("head", update.head)?,
            &state_name(update.state),
        ],
    )?;
    Ok(())
}

/// A [`SyncWorkflow`] from a row of `(workflow id, local head, synced head, state)`.
fn workflow_from(row: &Row) -> Result<SyncWorkflow> {
    let state: Option<String> = col(row, 3)?;
    Ok(SyncWorkflow {
        workflow_id: col(row, 0)?,
        local_head: to_u64("head", col(row, 1)?)?,
        synced_head: to_u64("head", col(row, 2)?)?,
        state: state.as_deref().map(state_of).transpose()?,
    })
}

const BY_ID: Listing = Listing {
    name: "syncWorkflows",
    key: "w.workflow_id",
    kinds: &[KeyKind::Text],
};

const BY_MARK: Listing = Listing {
    name: "syncChanged",
    key: "w.changed, w.workflow_id",
    kinds: &[KeyKind::Int, KeyKind::Text],
};

const BY_STATE: Listing = Listing {
    name: "syncInState",
    key: "s.workflow_id",
    kinds: &[KeyKind::Text],
};

/// The local workflows a pass has to look at (see `src/sqlite/sync_state.rs`).
const NEEDING_A_PASS: &str = "SELECT w.workflow_id, w.head, coalesce(s.head, 0), s.state,
            w.changed
     FROM workflows AS w
     LEFT JOIN sync_heads AS s ON s.target = $1 AND s.workflow_id = w.workflow_id
     WHERE (s.state IS NULL OR s.state != 'synced' OR w.head != s.head)";

impl SyncState for PgStore {
    fn sync_target(&self, target: &str) -> Result<SyncTarget> {
        check_id("target", target)?;
        self.read(|client| {
            let stored = client.query_opt(
                "SELECT client_id, cursor, mark FROM sync_targets WHERE target = $1",
                &[&target],
            )?;
            let clock = client.query_opt(
                "SELECT greatest(floor, (SELECT coalesce(max(changed), 0) FROM workflows
                                         WHERE changed IS NOT NULL))
                 FROM sync_clock WHERE id = 1",
                &[],
            )?;
            let clock = match clock {
                Some(row) => to_u64("clock", col(&row, 0)?)?,
                None => 0,
            };
            Ok(match stored {
                Some(row) => SyncTarget {
                    client_id: Some(col(&row, 0)?),
                    cursor: to_u64("cursor", col(&row, 1)?)?,
                    mark: col::<Option<i64>>(&row, 2)?
                        .map(|mark| to_u64("mark", mark))
                        .transpose()?,
                    clock,
                },
                None => SyncTarget {
                    client_id: None,
                    cursor: 0,
                    mark: None,
                    clock,
                },
            })
        })
    }

    fn sync_workflows(
        &self,
        target: &str,
        selection: SyncSelection,
        page: &PageRequest,
    ) -> Result<Page<SyncWorkflow>> {
        check_id("target", target)?;
        let target: Param = Box::new(target.to_owned());
        self.read(|client| match selection {
            SyncSelection::All => BY_ID.read(
                client,
                NEEDING_A_PASS,
                vec![target],
                page,
                workflow_from,
                |w| vec![Key::text(&w.workflow_id)],
            ),
            SyncSelection::Changed { after, through } => {
                let page = BY_MARK.read(
                    client,
                    &format!("{NEEDING_A_PASS} AND w.changed > $2 AND w.changed <= $3"),
                    vec![
                        target,
                        Box::new(to_i64("after", after)?),
                        Box::new(to_i64("through", through)?),
                    ],
                    page,
                    |row| Ok((workflow_from(row)?, col::<i64>(row, 4)?)),
                    |(w, changed)| vec![Key::Int(*changed), Key::text(&w.workflow_id)],
                )?;
                Ok(Page {
                    items: page.items.into_iter().map(|(w, _)| w).collect(),
                    next_cursor: page.next_cursor,
                })
            }
            SyncSelection::InState { state } => BY_STATE.read(
                client,
                "SELECT s.workflow_id, coalesce(w.head, 0), s.head, s.state
                 FROM sync_heads AS s LEFT JOIN workflows AS w ON w.workflow_id = s.workflow_id
                 WHERE s.target = $1 AND s.state = $2",
                vec![target, Box::new(state_name(state).to_owned())],
                page,
                workflow_from,
                |w| vec![Key::text(&w.workflow_id)],
            ),
        })
    }

    fn sync_heads(&self, target: &str, workflow_ids: &[String]) -> Result<Vec<SyncWorkflow>> {
        check_id("target", target)?;
        check_heads(workflow_ids)?;
        self.read(|client| {
            let rows = client.query(
                "SELECT j.id, coalesce(w.head, 0), coalesce(s.head, 0), s.state
                 FROM unnest($2::text[]) WITH ORDINALITY AS j (id, n)
                 LEFT JOIN workflows AS w ON w.workflow_id = j.id
                 LEFT JOIN sync_heads AS s ON s.target = $1 AND s.workflow_id = j.id
                 ORDER BY j.n",
                &[&target, &workflow_ids],
            )?;
            rows.iter().map(workflow_from).collect()
        })
    }
}
