//! SQL of the outbox (table `outbox`) on PostgreSQL.
//!
//! Claims pick their rows with `FOR UPDATE SKIP LOCKED`: claimers on other connections skip
//! the rows one of them holds instead of waiting for it, and none takes a row twice. Each
//! claim draws one token from the sequence `outbox_claim_token`. Transitions (complete, retry,
//! fail) are single `UPDATE`s fenced by that token.

use std::collections::BTreeMap;

use postgres::types::ToSql;
use postgres::Row;

use super::session::{Sql, Tx};

use super::paging::{col, Key, KeyKind, Listing, Param};
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::{check_id, check_size, MAX_DOCUMENT_BYTES};
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

/// The same columns of the alias `o`, for statements that join.
const O_COLUMNS: &str = "o.dispatch_key, o.workflow_id, o.ordinal, o.activity_type, o.input, \
     o.status, o.attempt, o.visible_after, o.claimed_at, o.run_id, o.namespace, o.task_queue, \
     o.node, o.claim_token, o.max_attempts, o.dead_reason";

const SELECT_STATE: &str = "SELECT status, attempt, visible_after, claimed_at, claim_token, \
     max_attempts, dead_reason FROM outbox WHERE dispatch_key = $1";

/// Transitions of one live row held by the claim `$2`; `$1` is the dispatch key. Each returns
/// the new status; a row under another token is left alone (the fence).
const COMPLETE: &str = "UPDATE outbox SET status = 'done'
     WHERE dispatch_key = $1 AND claim_token = $2 AND status IN ('pending', 'claimed')
     RETURNING status";
const FAIL: &str = "UPDATE outbox SET status = 'failed', dead_reason = $3
     WHERE dispatch_key = $1 AND claim_token = $2 AND status IN ('pending', 'claimed')
     RETURNING status";
/// A retry to attempt `$3` behind the fence `$4`, or a dead letter when `$3` reaches the
/// row's maximum (as the SQLite store's `RETRY`).
const RETRY: &str = "UPDATE outbox SET attempt = $3,
       status = CASE WHEN $3 >= max_attempts THEN 'failed' ELSE 'pending' END,
       dead_reason = CASE WHEN $3 >= max_attempts
         THEN 'retry to attempt ' || $3 || ' reaches the maximum of ' || max_attempts END,
       visible_after = CASE WHEN $3 >= max_attempts THEN visible_after ELSE $4 END,
       claimed_at = CASE WHEN $3 >= max_attempts THEN claimed_at END
     WHERE dispatch_key = $1 AND claim_token = $2 AND status IN ('pending', 'claimed')
     RETURNING status";

fn u32_from(column: &str, value: i64) -> Result<u32> {
    u32::try_from(to_u64(column, value)?).map_err(|_| Error::Corrupt {
        message: format!("outbox {column} {value} is out of range"),
    })
}

fn row_from(row: &Row) -> Result<OutboxRow> {
    let status: String = col(row, 5)?;
    Ok(OutboxRow {
        dispatch_key: col(row, 0)?,
        workflow_id: col(row, 1)?,
        ordinal: to_u64("ordinal", col(row, 2)?)?,
        activity_type: col(row, 3)?,
        input: col(row, 4)?,
        status: status_from(&status)?,
        attempt: u32_from("attempt", col(row, 6)?)?,
        visible_after: col(row, 7)?,
        claimed_at: col(row, 8)?,
        run_id: col(row, 9)?,
        namespace: col(row, 10)?,
        task_queue: col(row, 11)?,
        node: col(row, 12)?,
        claim_token: to_u64("claim_token", col(row, 13)?)?,
        max_attempts: u32_from("max_attempts", col(row, 14)?)?,
        dead_reason: col(row, 15)?,
    })
}

fn state_from(row: &Row) -> Result<OutboxRowState> {
    let status: String = col(row, 0)?;
    Ok(OutboxRowState {
        status: status_from(&status)?,
        attempt: u32_from("attempt", col(row, 1)?)?,
        visible_after: col(row, 2)?,
        claimed_at: col(row, 3)?,
        claim_token: to_u64("claim_token", col(row, 4)?)?,
        max_attempts: u32_from("max_attempts", col(row, 5)?)?,
        dead_reason: col(row, 6)?,
    })
}

fn row_state(client: &mut impl Sql, dispatch_key: &str) -> Result<Option<OutboxRowState>> {
    client
        .query_opt(SELECT_STATE, &[&dispatch_key])?
        .map(|row| state_from(&row))
        .transpose()
}

/// Inserts rows that passed `check_rows`; a key stored already is skipped (`refuse`: fails
/// with a conflict naming it). Returns how many were inserted.
fn insert_rows(tx: &mut Tx<'_>, rows: &[NewOutboxRow], refuse: bool) -> Result<u64> {
    const INSERT: &str =
        "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
           status, attempt, visible_after, run_id, namespace, task_queue, node, max_attempts)
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (dispatch_key) DO NOTHING";
    let mut inserted = 0;
    for row in rows {
        let changed = tx.execute(
            INSERT,
            &[
                &row.dispatch_key,
                &row.workflow_id,
                &to_i64("ordinal", row.ordinal)?,
                &row.activity_type,
                &row.input,
                &i64::from(row.attempt),
                &row.visible_after,
                &row.run_id,
                &row.namespace,
                &row.task_queue,
                &row.node,
                &i64::from(row.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS)),
            ],
        )?;
        if changed == 0 && refuse {
            return Err(duplicate(&row.dispatch_key));
        }
        inserted += changed;
    }
    Ok(inserted)
}

/// Inserts rows, all of them new, inside the caller's transaction (an append's outbox).
///
/// # Errors
/// [`Error::Conflict`] naming the first key that is stored already or listed twice.
pub(super) fn insert_unique(tx: &mut Tx<'_>, rows: &[NewOutboxRow]) -> Result<()> {
    insert_rows(tx, rows, true).map(drop)
}

pub(super) fn insert_in(tx: &mut Tx<'_>, rows: &[NewOutboxRow]) -> Result<u64> {
    check_rows(rows)?;
    insert_rows(tx, rows, false)
}

/// Says why a transition of `dispatch_key` under `claim_token` changed nothing.
fn refusal(tx: &mut Tx<'_>, dispatch_key: &str, claim_token: u64) -> Result<Error> {
    Ok(match row_state(tx, dispatch_key)? {
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

/// Applies a transition (`$1` key, `$2` token, then `extra`) inside the caller's transaction.
fn transition(
    tx: &mut Tx<'_>,
    dispatch_key: &str,
    claim_token: u64,
    update: &str,
    extra: &[&(dyn ToSql + Sync)],
) -> Result<OutboxStatus> {
    check_id("dispatchKey", dispatch_key)?;
    let token = to_i64("claimToken", claim_token)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&dispatch_key, &token];
    params.extend_from_slice(extra);
    match tx.query_opt(update, &params)? {
        Some(row) => status_from(&col::<String>(&row, 0)?),
        None => Err(refusal(tx, dispatch_key, claim_token)?),
    }
}

pub(super) fn claim_in(
    tx: &mut Tx<'_>,
    now: Millis,
    limit: u32,
    filter: &ClaimFilter,
) -> Result<Vec<OutboxRow>> {
    check_batch_limit(limit)?;
    check_filter(filter)?;
    if limit == 0 {
        return Ok(Vec::new());
    }
    let scope = filter.scope.clone().unwrap_or_default();
    // Only the filter's given fields become conditions: a prepared statement's generic plan
    // cannot use the pending index for `($n IS NULL OR column = $n)`. At most 16 shapes.
    let limit = i64::from(limit);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&now, &limit];
    let mut conditions = String::new();
    if !filter.exclude_workflows.is_empty() {
        params.push(&filter.exclude_workflows);
        conditions.push_str(&format!(
            " AND workflow_id <> ALL(${}::text[])",
            params.len()
        ));
    }
    let route = [
        ("namespace", &scope.namespace),
        ("task_queue", &scope.task_queue),
        ("node", &scope.node),
    ];
    for (column, value) in route {
        if let Some(value) = value {
            params.push(value);
            conditions.push_str(&format!(" AND {column} = ${}", params.len()));
        }
    }
    // `picked` takes the due rows in claim order, skipping those another claimer holds; the
    // token is drawn only when there is something to claim. The outer condition repeats the
    // status, so a row changed since the snapshot is not claimed from a stale state.
    let rows = tx.query(
        &format!(
            "WITH picked AS (
               SELECT dispatch_key FROM outbox
               WHERE status = 'pending' AND visible_after <= $1{conditions}
               ORDER BY visible_after, dispatch_key
               LIMIT $2
               FOR UPDATE SKIP LOCKED),
             token AS (
               SELECT nextval('outbox_claim_token') AS value
               WHERE EXISTS (SELECT 1 FROM picked))
             UPDATE outbox AS o SET status = 'claimed', claimed_at = $1, claim_token = token.value
             FROM picked, token
             WHERE o.dispatch_key = picked.dispatch_key AND o.status = 'pending'
             RETURNING {O_COLUMNS}"
        ),
        &params,
    )?;
    let mut claimed = rows.iter().map(row_from).collect::<Result<Vec<_>>>()?;
    // RETURNING gives no order; the claim order is recomputed from unchanged columns.
    claimed.sort_by(|a, b| {
        (a.visible_after, &a.dispatch_key).cmp(&(b.visible_after, &b.dispatch_key))
    });
    Ok(claimed)
}

pub(super) fn complete_in(tx: &mut Tx<'_>, dispatch_key: &str, claim_token: u64) -> Result<()> {
    transition(tx, dispatch_key, claim_token, COMPLETE, &[]).map(drop)
}

pub(super) fn complete_batch_in(tx: &mut Tx<'_>, claims: &[OutboxClaim]) -> Result<()> {
    check_distinct_claims(claims)?;
    for (index, claim) in claims.iter().enumerate() {
        to_i64(&format!("claims[{index}].claimToken"), claim.claim_token)?;
        transition(tx, &claim.dispatch_key, claim.claim_token, COMPLETE, &[])?;
    }
    Ok(())
}

pub(super) fn retry_in(
    tx: &mut Tx<'_>,
    dispatch_key: &str,
    claim_token: u64,
    next_attempt: u32,
    visible_after: Millis,
) -> Result<OutboxStatus> {
    let attempt = i64::from(next_attempt);
    transition(
        tx,
        dispatch_key,
        claim_token,
        RETRY,
        &[&attempt, &visible_after],
    )
}

pub(super) fn fail_in(
    tx: &mut Tx<'_>,
    dispatch_key: &str,
    claim_token: u64,
    reason: &str,
) -> Result<()> {
    check_size("reason", reason.len(), MAX_DOCUMENT_BYTES)?;
    transition(tx, dispatch_key, claim_token, FAIL, &[&reason]).map(drop)
}

pub(super) fn cancel_workflow_in(tx: &mut Tx<'_>, workflow_id: &str) -> Result<Vec<String>> {
    check_id("workflowId", workflow_id)?;
    let rows = tx.query(
        "UPDATE outbox SET status = 'cancelled'
         WHERE workflow_id = $1 AND status IN ('pending', 'claimed')
         RETURNING dispatch_key",
        &[&workflow_id],
    )?;
    let mut keys = rows
        .iter()
        .map(|row| col(row, 0))
        .collect::<Result<Vec<String>>>()?;
    keys.sort_unstable();
    Ok(keys)
}

pub(super) fn rearm_in(
    tx: &mut Tx<'_>,
    older_than: Millis,
    visible_after: Millis,
    limit: u32,
) -> Result<Vec<OutboxRow>> {
    check_batch_limit(limit)?;
    if limit == 0 {
        return Ok(Vec::new());
    }
    let rows = tx.query(
        &format!(
            "WITH stale AS (
               SELECT dispatch_key FROM outbox
               WHERE status = 'claimed' AND claimed_at < $1
               ORDER BY claimed_at, dispatch_key
               LIMIT $3
               FOR UPDATE SKIP LOCKED)
             UPDATE outbox AS o SET attempt = o.attempt + 1,
               status = CASE WHEN o.attempt + 1 >= o.max_attempts THEN 'failed' ELSE 'pending' END,
               dead_reason = CASE WHEN o.attempt + 1 >= o.max_attempts
                 THEN 'stale claim re-armed to attempt ' || (o.attempt + 1)
                   || ' reaches the maximum of ' || o.max_attempts END,
               visible_after = CASE WHEN o.attempt + 1 >= o.max_attempts
                 THEN o.visible_after ELSE $2 END,
               claimed_at = CASE WHEN o.attempt + 1 >= o.max_attempts THEN o.claimed_at END
             FROM stale
             WHERE o.dispatch_key = stale.dispatch_key
               AND o.status = 'claimed' AND o.claimed_at < $1
             RETURNING {O_COLUMNS}"
        ),
        &[&older_than, &visible_after, &i64::from(limit)],
    )?;
    let mut rearmed = rows.iter().map(row_from).collect::<Result<Vec<_>>>()?;
    rearmed.sort_unstable_by(|a, b| a.dispatch_key.cmp(&b.dispatch_key));
    Ok(rearmed)
}

impl OutboxStore for PgStore {
    fn insert_outbox(&self, rows: &[NewOutboxRow]) -> Result<u64> {
        check_rows(rows)?;
        self.write(|tx| insert_in(tx, rows))
    }

    fn claim_outbox(
        &self,
        now: Millis,
        limit: u32,
        filter: &ClaimFilter,
    ) -> Result<Vec<OutboxRow>> {
        check_batch_limit(limit)?;
        check_filter(filter)?;
        self.write(|tx| claim_in(tx, now, limit, filter))
    }

    fn complete_outbox(&self, dispatch_key: &str, claim_token: u64) -> Result<()> {
        check_id("dispatchKey", dispatch_key)?;
        self.write(|tx| complete_in(tx, dispatch_key, claim_token))
    }

    fn complete_outbox_batch(&self, claims: &[OutboxClaim]) -> Result<()> {
        check_distinct_claims(claims)?;
        if claims.is_empty() {
            return Ok(());
        }
        self.write(|tx| complete_batch_in(tx, claims))
    }

    fn retry_outbox(
        &self,
        dispatch_key: &str,
        claim_token: u64,
        next_attempt: u32,
        visible_after: Millis,
    ) -> Result<OutboxStatus> {
        check_id("dispatchKey", dispatch_key)?;
        self.write(|tx| retry_in(tx, dispatch_key, claim_token, next_attempt, visible_after))
    }

    fn fail_outbox(&self, dispatch_key: &str, claim_token: u64, reason: &str) -> Result<()> {
        check_id("dispatchKey", dispatch_key)?;
        self.write(|tx| fail_in(tx, dispatch_key, claim_token, reason))
    }

    fn cancel_workflow_outbox(&self, workflow_id: &str) -> Result<Vec<String>> {
        check_id("workflowId", workflow_id)?;
        self.write(|tx| cancel_workflow_in(tx, workflow_id))
    }

    fn rearm_stale_claims(
        &self,
        older_than: Millis,
        visible_after: Millis,
        limit: u32,
    ) -> Result<Vec<OutboxRow>> {
        check_batch_limit(limit)?;
        self.write(|tx| rearm_in(tx, older_than, visible_after, limit))
    }

    fn list_stale_claims(&self, older_than: Millis, page: &PageRequest) -> Result<Page<OutboxRow>> {
        self.read(|client| {
            STALE_CLAIMS.read(
                client,
                &format!(
                    "SELECT {ROW_COLUMNS} FROM outbox WHERE status = 'claimed' AND claimed_at < $1"
                ),
                vec![Box::new(older_than)],
                page,
                row_from,
                |row| {
                    vec![
                        Key::Int(row.claimed_at.unwrap_or_default()),
                        Key::text(&row.dispatch_key),
                    ]
                },
            )
        })
    }

    fn list_unsettled_workflows(&self, page: &PageRequest) -> Result<Page<String>> {
        self.read(|client| {
            UNSETTLED.read(
                client,
                "SELECT DISTINCT workflow_id FROM outbox WHERE status IN ('pending', 'claimed')",
                Vec::new(),
                page,
                |row| col(row, 0),
                |id: &String| vec![Key::text(id)],
            )
        })
    }

    fn namespace_loads(&self, namespaces: &[String]) -> Result<BTreeMap<String, NamespaceLoad>> {
        for (index, name) in namespaces.iter().enumerate() {
            check_id(&format!("namespaces[{index}]"), name)?;
        }
        let rows = self.read(|client| {
            client.query(
                "SELECT n.name, count(o.dispatch_key),
                        count(CASE WHEN o.status = 'claimed' THEN 1 END)
                 FROM (SELECT DISTINCT unnest($1::text[]) COLLATE \"C\" AS name) AS n
                 LEFT JOIN outbox AS o
                   ON o.namespace = n.name AND o.status IN ('pending', 'claimed')
                 GROUP BY n.name",
                &[&namespaces],
            )
        })?;
        let mut loads = BTreeMap::new();
        for row in &rows {
            let load = NamespaceLoad {
                in_flight: to_u64("in_flight", col(row, 1)?)?,
                claimed: to_u64("claimed", col(row, 2)?)?,
            };
            loads.insert(col(row, 0)?, load);
        }
        Ok(loads)
    }

    fn claimable_routes(&self, now: Millis) -> Result<Vec<ClaimScope>> {
        let rows = self.read(|client| {
            client.query(
                "SELECT DISTINCT namespace, task_queue, node FROM outbox
                 WHERE status = 'pending' AND visible_after <= $1
                 ORDER BY namespace NULLS FIRST, task_queue NULLS FIRST, node NULLS FIRST",
                &[&now],
            )
        })?;
        rows.iter()
            .map(|row| {
                Ok(ClaimScope {
                    namespace: col(row, 0)?,
                    task_queue: col(row, 1)?,
                    node: col(row, 2)?,
                })
            })
            .collect()
    }

    fn outbox_row_state(&self, dispatch_key: &str) -> Result<Option<OutboxRowState>> {
        check_id("dispatchKey", dispatch_key)?;
        self.read(|client| row_state(client, dispatch_key))
    }

    fn list_outbox(
        &self,
        status: Option<OutboxStatus>,
        page: &PageRequest,
    ) -> Result<Page<OutboxRow>> {
        let status: Param = Box::new(status.map(|s| s.as_str().to_owned()));
        self.read(|client| {
            ROWS.read(
                client,
                &format!(
                    "SELECT {ROW_COLUMNS} FROM outbox WHERE ($1::text IS NULL OR status = $1)"
                ),
                vec![status],
                page,
                row_from,
                |row| vec![Key::text(&row.dispatch_key)],
            )
        })
    }
}

/// Claimed rows, oldest claim first.
const STALE_CLAIMS: Listing = Listing {
    name: "staleClaims",
    key: "claimed_at, dispatch_key",
    kinds: &[KeyKind::Int, KeyKind::Text],
};

/// Workflows with live rows.
const UNSETTLED: Listing = Listing {
    name: "unsettledWorkflows",
    key: "workflow_id",
    kinds: &[KeyKind::Text],
};

/// Rows by dispatch key.
const ROWS: Listing = Listing {
    name: "outbox",
    key: "dispatch_key",
    kinds: &[KeyKind::Text],
};
