//! SQL of the outbox (table `outbox`).
//!
//! Sets of values (excluded workflows, dispatch keys, namespaces) are bound as one JSON array
//! and read with `json_each`, so no SQL text is ever built from a caller's values.

use crate::model::steps::{Operation, OperationOutcome as Done};
use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Params, Row};

use super::paging::{self, Listing};

use super::SqliteStore;
use crate::backend::checks::{check_id, check_size, from_sql_int, to_sql_int, MAX_DOCUMENT_BYTES};
use crate::backend::outbox::{
    check_batch_limit, check_distinct_claims, check_filter, check_rows, duplicate, is_live,
    settled, status_from, ROW,
};
use crate::error::{Error, Result};
use crate::model::outbox::*;
use crate::model::{Millis, Page, PageRequest};

/// The columns [`row_from`] reads, in its order.
const ROW_COLUMNS: &str = "dispatch_key, workflow_id, ordinal, activity_type, input, status, \
     attempt, visible_after, claimed_at, run_id, namespace, task_queue, node, claim_token, \
     max_attempts, dead_reason";

/// One row's state, in [`state_from`]'s order.
const SELECT_STATE: &str = "SELECT status, attempt, visible_after, claimed_at, claim_token, \
     max_attempts, dead_reason FROM outbox WHERE dispatch_key = ?1";

/// The transitions of one live row held by the claim `?2`; `?1` is the dispatch key. A row
/// whose token is another's is left alone: that is the fence. Each returns the new status.
const COMPLETE: &str = "UPDATE outbox SET status = 'done'
     WHERE dispatch_key = ?1 AND claim_token = ?2 AND status IN ('pending', 'claimed')
     RETURNING status";
const FAIL: &str = "UPDATE outbox SET status = 'failed', dead_reason = ?3
     WHERE dispatch_key = ?1 AND claim_token = ?2 AND status IN ('pending', 'claimed')
     RETURNING status";
/// A retry to attempt `?3` behind the fence `?4`, or a dead letter when `?3` reaches the
/// row's maximum; a dead letter keeps its fence and the time of its last claim, as every
/// settled row does.
const RETRY: &str = "UPDATE outbox SET attempt = ?3,
       status = iif(?3 >= max_attempts, 'failed', 'pending'),
       dead_reason = iif(?3 >= max_attempts,
         'retry to attempt ' || ?3 || ' reaches the maximum of ' || max_attempts, NULL),
       visible_after = iif(?3 >= max_attempts, visible_after, ?4),
       claimed_at = iif(?3 >= max_attempts, claimed_at, NULL)
     WHERE dispatch_key = ?1 AND claim_token = ?2 AND status IN ('pending', 'claimed')
     RETURNING status";

fn u32_from(column: &str, value: i64) -> Result<u32> {
    u32::try_from(from_sql_int(column, value)?).map_err(|_| Error::Corrupt {
        message: format!("outbox {column} {value} is out of range"),
    })
}

fn attempt_from(value: i64) -> Result<u32> {
    u32_from("attempt", value)
}

/// Reads a row selected (or returned) as [`ROW_COLUMNS`].
fn row_from(row: &Row<'_>) -> Result<OutboxRow> {
    Ok(OutboxRow {
        dispatch_key: row.get(0)?,
        workflow_id: row.get(1)?,
        ordinal: from_sql_int("ordinal", row.get(2)?)?,
        activity_type: row.get(3)?,
        input: row.get(4)?,
        status: status_from(row.get_ref(5)?.as_str()?)?,
        attempt: attempt_from(row.get(6)?)?,
        visible_after: row.get(7)?,
        claimed_at: row.get(8)?,
        claim_token: from_sql_int("claim_token", row.get(13)?)?,
        max_attempts: u32_from("max_attempts", row.get(14)?)?,
        dead_reason: row.get(15)?,
        run_id: row.get(9)?,
        namespace: row.get(10)?,
        task_queue: row.get(11)?,
        node: row.get(12)?,
    })
}

/// Reads a state selected by [`SELECT_STATE`].
fn state_from(row: &Row<'_>) -> Result<OutboxRowState> {
    Ok(OutboxRowState {
        status: status_from(row.get_ref(0)?.as_str()?)?,
        attempt: attempt_from(row.get(1)?)?,
        visible_after: row.get(2)?,
        claimed_at: row.get(3)?,
        claim_token: from_sql_int("claim_token", row.get(4)?)?,
        max_attempts: u32_from("max_attempts", row.get(5)?)?,
        dead_reason: row.get(6)?,
    })
}

/// Runs a statement that selects or returns [`ROW_COLUMNS`] and reads every row.
fn query_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl Params,
) -> Result<Vec<OutboxRow>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(row_from(row)?);
    }
    Ok(out)
}

/// Binds a set of strings as one JSON array, read in SQL with `json_each`.
fn json_array(values: &[String]) -> Result<String> {
    Ok(serde_json::to_string(values)?)
}

/// What an insert does with a dispatch key that is stored already.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnDuplicate {
    /// Leaves the stored row alone and skips the new one.
    Ignore,
    /// Fails the insert with a conflict naming the key.
    Refuse,
}

impl SqliteStore {
    /// Inserts rows that passed [`check_rows`] inside a caller's transaction, ignoring existing
    /// dispatch keys. Returns how many were inserted.
    pub(super) fn insert_checked_in(tx: &Connection, rows: &[NewOutboxRow]) -> Result<u64> {
        Self::insert_rows_in(tx, rows, OnDuplicate::Ignore)
    }

    /// Inserts rows that passed [`check_rows`] inside a caller's transaction, all of them new.
    ///
    /// # Errors
    /// [`Error::Conflict`] (entity `"outbox row"`, no revisions) naming the first key that is
    /// stored already or listed twice; the caller's transaction must then be dropped.
    pub(super) fn insert_unique_in(tx: &Connection, rows: &[NewOutboxRow]) -> Result<()> {
        Self::insert_rows_in(tx, rows, OnDuplicate::Refuse).map(|_| ())
    }

    fn insert_rows_in(
        tx: &Connection,
        rows: &[NewOutboxRow],
        on_duplicate: OnDuplicate,
    ) -> Result<u64> {
        // `ON CONFLICT (dispatch_key)` ignores only a duplicate key, where `INSERT OR IGNORE`
        // would also swallow a violated CHECK or NOT NULL constraint.
        let mut insert = tx.prepare_cached(
            "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
               status, attempt, visible_after, run_id, namespace, task_queue, node, max_attempts)
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (dispatch_key) DO NOTHING",
        )?;
        let mut inserted = 0;
        for row in rows {
            let changed = insert.execute(params![
                row.dispatch_key,
                row.workflow_id,
                to_sql_int("ordinal", row.ordinal)?,
                row.activity_type,
                row.input,
                row.attempt,
                row.visible_after,
                row.run_id,
                row.namespace,
                row.task_queue,
                row.node,
                row.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS)
            ])?;
            if changed == 0 && on_duplicate == OnDuplicate::Refuse {
                return Err(duplicate(&row.dispatch_key));
            }
            inserted += changed as u64;
        }
        Ok(inserted)
    }

    /// One row's state, read with the given connection or transaction.
    fn row_state(
        conn: &rusqlite::Connection,
        dispatch_key: &str,
    ) -> Result<Option<OutboxRowState>> {
        let mut stmt = conn.prepare_cached(SELECT_STATE)?;
        let mut rows = stmt.query([dispatch_key])?;
        rows.next()?.map(state_from).transpose()
    }

    /// Says why a transition of `dispatch_key` under `claim_token` changed nothing: the row is
    /// unknown, settled, or live under another token.
    fn refusal_in(tx: &Connection, dispatch_key: &str, claim_token: u64) -> Result<Error> {
        Ok(match Self::row_state(tx, dispatch_key)? {
            None => Error::not_found(ROW, dispatch_key),
            Some(state) if !is_live(state.status) => settled(dispatch_key),
            Some(state) => Error::Conflict {
                entity: ROW,
                id: dispatch_key.to_owned(),
                expected: Some(claim_token),
                actual: Some(state.claim_token),
            },
        })
    }

    /// Applies `update`, a transition of one live row with the key as `?1` and the claim
    /// token as `?2` that returns the new status, in one transaction.
    fn transition(
        &self,
        dispatch_key: &str,
        claim_token: u64,
        update: &str,
        params: impl Params,
    ) -> Result<OutboxStatus> {
        check_id("dispatchKey", dispatch_key)?;
        let tx = self.write_tx()?;
        let Some(status) = Self::settle_in(&tx, update, params)? else {
            return Err(Self::refusal_in(&tx, dispatch_key, claim_token)?);
        };
        tx.commit()?;
        status_from(&status)
    }

    /// Runs a transition inside a caller's transaction: the new status, `None` when the row
    /// was left alone (unknown, settled, or held under another token).
    fn settle_in(tx: &Connection, update: &str, params: impl Params) -> Result<Option<String>> {
        let mut stmt = tx.prepare_cached(update)?;
        Ok(stmt.query_row(params, |row| row.get(0)).optional()?)
    }

    /// The token the next claim hands out, read inside the claim's transaction.
    fn next_claim_token_in(tx: &Connection) -> Result<i64> {
        let last: i64 = tx
            .prepare_cached("SELECT last_token FROM outbox_claim_counter WHERE id = 1")?
            .query_row([], |row| row.get(0))?;
        Ok(last + 1)
    }
}

impl OutboxStore for SqliteStore {
    fn insert_outbox(&self, rows: &[NewOutboxRow]) -> Result<u64> {
        alone!(self, Operation::InsertOutbox { rows: rows.to_vec() }, Done::InsertOutbox { inserted } => inserted);
        check_rows(rows)?;
        let tx = self.write_tx()?;
        let inserted = Self::insert_checked_in(&tx, rows)?;
        tx.commit()?;
        Ok(inserted)
    }

    fn claim_outbox(
        &self,
        now: Millis,
        limit: u32,
        filter: &ClaimFilter,
    ) -> Result<Vec<OutboxRow>> {
        alone!(self, Operation::ClaimOutbox { now, limit, filter: filter.clone() }, Done::ClaimOutbox { rows } => rows);
        check_batch_limit(limit)?;
        check_filter(filter)?;
        let excluded = json_array(&filter.exclude_workflows)?;
        let scope = filter.scope.clone().unwrap_or_default();
        let tx = self.write_tx()?;
        let token = Self::next_claim_token_in(&tx)?;
        // The inner SELECT walks the partial index `outbox_pending` in claim order and stops at
        // `limit`; the IMMEDIATE transaction keeps every other writer out until the commit.
        let mut claimed = query_rows(
            &tx,
            &format!(
                "UPDATE outbox SET status = 'claimed', claimed_at = ?1, claim_token = ?7
                 WHERE dispatch_key IN (
                   SELECT dispatch_key FROM outbox
                   WHERE status = 'pending' AND visible_after <= ?1
                     AND workflow_id NOT IN (SELECT value FROM json_each(?3))
                     AND (?4 IS NULL OR namespace = ?4)
                     AND (?5 IS NULL OR task_queue = ?5)
                     AND (?6 IS NULL OR node = ?6)
                   ORDER BY visible_after, dispatch_key
                   LIMIT ?2)
                 RETURNING {ROW_COLUMNS}"
            ),
            params![
                now,
                i64::from(limit),
                excluded,
                scope.namespace,
                scope.task_queue,
                scope.node,
                token
            ],
        )?;
        // The counter moves only when the token was used, so that polling an empty outbox
        // writes nothing.
        if !claimed.is_empty() {
            tx.prepare_cached("UPDATE outbox_claim_counter SET last_token = ?1 WHERE id = 1")?
                .execute([token])?;
        }
        tx.commit()?;
        // RETURNING gives no order; the claim order is recomputed from unchanged columns.
        claimed.sort_by(|a, b| {
            (a.visible_after, &a.dispatch_key).cmp(&(b.visible_after, &b.dispatch_key))
        });
        Ok(claimed)
    }

    fn complete_outbox(&self, dispatch_key: &str, claim_token: u64) -> Result<()> {
        alone!(self, Operation::CompleteOutbox { dispatch_key: dispatch_key.to_owned(), claim_token }, Done::CompleteOutbox {} => ());
        let token = to_sql_int("claimToken", claim_token)?;
        self.transition(
            dispatch_key,
            claim_token,
            COMPLETE,
            params![dispatch_key, token],
        )
        .map(drop)
    }

    fn complete_outbox_batch(&self, claims: &[OutboxClaim]) -> Result<()> {
        alone!(self, Operation::CompleteOutboxBatch { claims: claims.to_vec() }, Done::CompleteOutboxBatch {} => ());
        check_distinct_claims(claims)?;
        if claims.is_empty() {
            return Ok(());
        }
        let tx = self.write_tx()?;
        for (index, claim) in claims.iter().enumerate() {
            let token = to_sql_int(&format!("claims[{index}].claimToken"), claim.claim_token)?;
            let params = params![claim.dispatch_key, token];
            if Self::settle_in(&tx, COMPLETE, params)?.is_none() {
                // Unchanged by the update, so its state still says why; dropping the
                // transaction undoes the completions before it.
                let refusal = Self::refusal_in(&tx, &claim.dispatch_key, claim.claim_token)?;
                return Err(refusal);
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn retry_outbox(
        &self,
        dispatch_key: &str,
        claim_token: u64,
        next_attempt: u32,
        visible_after: Millis,
    ) -> Result<OutboxStatus> {
        alone!(self, Operation::RetryOutbox { dispatch_key: dispatch_key.to_owned(), claim_token, next_attempt, visible_after }, Done::RetryOutbox { status } => status);
        let token = to_sql_int("claimToken", claim_token)?;
        self.transition(
            dispatch_key,
            claim_token,
            RETRY,
            params![dispatch_key, token, next_attempt, visible_after],
        )
    }

    fn fail_outbox(&self, dispatch_key: &str, claim_token: u64, reason: &str) -> Result<()> {
        alone!(self, Operation::FailOutbox { dispatch_key: dispatch_key.to_owned(), claim_token, reason: reason.to_owned() }, Done::FailOutbox {} => ());
        check_size("reason", reason.len(), MAX_DOCUMENT_BYTES)?;
        let token = to_sql_int("claimToken", claim_token)?;
        self.transition(
            dispatch_key,
            claim_token,
            FAIL,
            params![dispatch_key, token, reason],
        )
        .map(drop)
    }

    fn cancel_workflow_outbox(&self, workflow_id: &str) -> Result<Vec<String>> {
        alone!(self, Operation::CancelWorkflowOutbox { workflow_id: workflow_id.to_owned() }, Done::CancelWorkflowOutbox { cancelled } => cancelled);
        check_id("workflowId", workflow_id)?;
        let tx = self.write_tx()?;
        let mut keys: Vec<String> = {
            let mut stmt = tx.prepare_cached(
                "UPDATE outbox SET status = 'cancelled'
                 WHERE workflow_id = ?1 AND status IN ('pending', 'claimed')
                 RETURNING dispatch_key",
            )?;
            let rows = stmt.query_map([workflow_id], |row| row.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        tx.commit()?;
        keys.sort_unstable();
        Ok(keys)
    }

    fn rearm_stale_claims(
        &self,
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    ) -> Result<Vec<OutboxRow>> {
        alone!(self, Operation::RearmStaleClaims { older_than, visible_after, limit }, Done::RearmStaleClaims { rows } => rows);
        check_batch_limit(limit)?;
        let tx = self.write_tx()?;
        let mut rearmed = query_rows(
            &tx,
            &format!(
                "UPDATE outbox SET attempt = attempt + 1,
                   status = iif(attempt + 1 >= max_attempts, 'failed', 'pending'),
                   dead_reason = iif(attempt + 1 >= max_attempts,
                     'stale claim re-armed to attempt ' || (attempt + 1)
                       || ' reaches the maximum of ' || max_attempts, NULL),
                   visible_after = iif(attempt + 1 >= max_attempts, visible_after, ?2),
                   claimed_at = iif(attempt + 1 >= max_attempts, claimed_at, NULL)
                 WHERE dispatch_key IN (
                   SELECT dispatch_key FROM outbox
                   WHERE status = 'claimed' AND claimed_at < ?1
                   ORDER BY claimed_at, dispatch_key
                   LIMIT ?3)
                 RETURNING {ROW_COLUMNS}"
            ),
            params![older_than, visible_after, i64::from(limit)],
        )?;
        tx.commit()?;
        rearmed.sort_unstable_by(|a, b| a.dispatch_key.cmp(&b.dispatch_key));
        Ok(rearmed)
    }

    fn list_stale_claims(&self, older_than: Millis, page: &PageRequest) -> Result<Page<OutboxRow>> {
        STALE_CLAIMS.read(
            self.conn(),
            &format!(
                "SELECT {ROW_COLUMNS} FROM outbox WHERE status = 'claimed' AND claimed_at < ?"
            ),
            vec![SqlValue::Integer(older_than)],
            page,
            row_from,
            |row| {
                vec![
                    SqlValue::Integer(row.claimed_at.unwrap_or_default()),
                    paging::text(&row.dispatch_key),
                ]
            },
        )
    }

    fn list_unsettled_workflows(&self, page: &PageRequest) -> Result<Page<String>> {
        UNSETTLED.read(
            self.conn(),
            "SELECT DISTINCT workflow_id FROM outbox WHERE status IN ('pending', 'claimed')",
            Vec::new(),
            page,
            |row| Ok(row.get(0)?),
            |id: &String| vec![paging::text(id)],
        )
    }

    fn namespace_loads(&self, namespaces: &[String]) -> Result<BTreeMap<String, NamespaceLoad>> {
        for (index, name) in namespaces.iter().enumerate() {
            check_id(&format!("namespaces[{index}]"), name)?;
        }
        let mut stmt = self.conn().prepare_cached(
            // One pass over the live rows, through the partial indexes of pending and of
            // claimed rows (no index follows a row's namespace and status: claims and
            // completions would rewrite it).
            "WITH live (namespace, claimed) AS (
               SELECT namespace, 0 FROM outbox WHERE status = 'pending'
               UNION ALL
               SELECT namespace, 1 FROM outbox WHERE status = 'claimed'),
             wanted (name) AS (SELECT DISTINCT value FROM json_each(?1)),
             counts (namespace, in_flight, claimed) AS (
               SELECT namespace, count(*), sum(claimed) FROM live
               WHERE namespace IN (SELECT name FROM wanted)
               GROUP BY namespace)
             SELECT w.name, coalesce(c.in_flight, 0), coalesce(c.claimed, 0)
             FROM wanted AS w LEFT JOIN counts AS c ON c.namespace = w.name",
        )?;
        let mut rows = stmt.query([json_array(namespaces)?])?;
        let mut loads = BTreeMap::new();
        while let Some(row) = rows.next()? {
            let load = NamespaceLoad {
                in_flight: from_sql_int("in_flight", row.get(1)?)?,
                claimed: from_sql_int("claimed", row.get(2)?)?,
            };
            loads.insert(row.get(0)?, load);
        }
        Ok(loads)
    }

    fn claimable_routes(&self, now: Millis) -> Result<Vec<ClaimScope>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT DISTINCT namespace, task_queue, node FROM outbox
             WHERE status = 'pending' AND visible_after <= ?1
             ORDER BY namespace, task_queue, node",
        )?;
        let routes = stmt.query_map([now], |row| {
            Ok(ClaimScope {
                namespace: row.get(0)?,
                task_queue: row.get(1)?,
                node: row.get(2)?,
            })
        })?;
        Ok(routes.collect::<rusqlite::Result<_>>()?)
    }

    fn outbox_row_state(&self, dispatch_key: &str) -> Result<Option<OutboxRowState>> {
        check_id("dispatchKey", dispatch_key)?;
        Self::row_state(self.conn(), dispatch_key)
    }

    fn list_outbox(
        &self,
        status: Option<OutboxStatus>,
        page: &PageRequest,
    ) -> Result<Page<OutboxRow>> {
        ROWS.read(
            self.conn(),
            &format!("SELECT {ROW_COLUMNS} FROM outbox WHERE (?1 IS NULL OR status = ?1)"),
            vec![status.map_or(SqlValue::Null, |s| paging::text(s.as_str()))],
            page,
            row_from,
            |row| vec![paging::text(&row.dispatch_key)],
        )
    }
}

/// Claimed rows, oldest claim first.
const STALE_CLAIMS: Listing = Listing {
    name: "staleClaims",
    key: "claimed_at, dispatch_key",
    key_len: 2,
};

/// Workflows with live rows.
const UNSETTLED: Listing = Listing {
    name: "unsettledWorkflows",
    key: "workflow_id",
    key_len: 1,
};

/// Rows by dispatch key.
const ROWS: Listing = Listing {
    name: "outbox",
    key: "dispatch_key",
    key_len: 1,
};
