//! SQL of the outbox (table `outbox`).
//!
//! Sets of values (excluded workflows, dispatch keys, namespaces) are bound as one JSON array
//! and read with `json_each`, so no SQL text is ever built from a caller's values.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension, Params, Row};

use super::{
    check_id, check_id_as, check_size, from_sql_int, to_sql_int, SqliteStore, MAX_BLOB_BYTES,
};
use crate::error::{Error, Result};
use crate::model::outbox::*;
use crate::model::Millis;

/// The entity name in errors about one row.
const ROW: &str = "outbox row";

/// The columns [`row_from`] reads, in its order.
const ROW_COLUMNS: &str = "dispatch_key, workflow_id, ordinal, activity_type, input, status, \
     attempt, visible_after, claimed_at, run_id, namespace, task_queue, node";

/// The transitions of one live row; `?1` is the dispatch key.
const COMPLETE: &str = "UPDATE outbox SET status = 'done'
     WHERE dispatch_key = ?1 AND status IN ('pending', 'claimed')";
const FAIL: &str = "UPDATE outbox SET status = 'failed'
     WHERE dispatch_key = ?1 AND status IN ('pending', 'claimed')";
const RETRY: &str = "UPDATE outbox SET status = 'pending', attempt = ?2, visible_after = ?3,
       claimed_at = NULL
     WHERE dispatch_key = ?1 AND status IN ('pending', 'claimed')";

fn check_row(index: usize, row: &NewOutboxRow) -> Result<()> {
    // Field names are built only to report a failure: a batch checks every row.
    let field = |name: &str| format!("outbox[{index}].{name}");
    check_id_as(|| field("dispatchKey"), &row.dispatch_key)?;
    check_id_as(|| field("workflowId"), &row.workflow_id)?;
    check_id_as(|| field("activityType"), &row.activity_type)?;
    if i64::try_from(row.ordinal).is_err() {
        to_sql_int(&field("ordinal"), row.ordinal)?;
    }
    if row.input.len() > MAX_BLOB_BYTES {
        check_size(&field("input"), row.input.len(), MAX_BLOB_BYTES)?;
    }
    let optional = [
        ("runId", &row.run_id),
        ("namespace", &row.namespace),
        ("taskQueue", &row.task_queue),
        ("node", &row.node),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            check_id_as(|| field(name), value)?;
        }
    }
    Ok(())
}

pub(super) fn check_rows(rows: &[NewOutboxRow]) -> Result<()> {
    rows.iter()
        .enumerate()
        .try_for_each(|(index, row)| check_row(index, row))
}

fn check_optional_id(field: &str, value: &Option<String>) -> Result<()> {
    value.as_deref().map_or(Ok(()), |v| check_id(field, v))
}

/// Checks a route's fields; `prefix` ends where the field name starts.
fn check_route(
    prefix: &str,
    namespace: &Option<String>,
    task_queue: &Option<String>,
    node: &Option<String>,
) -> Result<()> {
    check_optional_id(&format!("{prefix}namespace"), namespace)?;
    check_optional_id(&format!("{prefix}taskQueue"), task_queue)?;
    check_optional_id(&format!("{prefix}node"), node)
}

fn check_filter(filter: &ClaimFilter) -> Result<()> {
    for (index, id) in filter.exclude_workflows.iter().enumerate() {
        check_id(&format!("filter.excludeWorkflows[{index}]"), id)?;
    }
    filter.scope.as_ref().map_or(Ok(()), |scope| {
        check_route(
            "filter.scope.",
            &scope.namespace,
            &scope.task_queue,
            &scope.node,
        )
    })
}

/// Checks a list of keys or names: each usable, none twice.
fn check_distinct_ids(field: &str, values: &[String]) -> Result<()> {
    let mut seen = HashSet::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        check_id(&format!("{field}[{index}]"), value)?;
        if !seen.insert(value.as_str()) {
            return Err(Error::invalid(
                format!("{field}[{index}]"),
                format!("{value} is listed twice"),
            ));
        }
    }
    Ok(())
}

fn status_from(text: &str) -> Result<OutboxStatus> {
    OutboxStatus::parse(text).ok_or_else(|| Error::Corrupt {
        message: format!("outbox row has unknown status {text}"),
    })
}

fn attempt_from(value: i64) -> Result<u32> {
    u32::try_from(from_sql_int("attempt", value)?).map_err(|_| Error::Corrupt {
        message: format!("outbox attempt {value} is out of range"),
    })
}

/// The error for a transition of a row that is already settled.
fn settled(dispatch_key: &str) -> Error {
    Error::Conflict {
        entity: ROW,
        id: dispatch_key.to_owned(),
        expected: None,
        actual: None,
    }
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
        run_id: row.get(9)?,
        namespace: row.get(10)?,
        task_queue: row.get(11)?,
        node: row.get(12)?,
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

impl SqliteStore {
    /// Inserts rows that passed [`check_rows`] inside a caller's transaction, ignoring existing
    /// dispatch keys. Returns how many were inserted.
    pub(super) fn insert_checked_in(tx: &Connection, rows: &[NewOutboxRow]) -> Result<u64> {
        // `ON CONFLICT (dispatch_key)` ignores only a duplicate key, where `INSERT OR IGNORE`
        // would also swallow a violated CHECK or NOT NULL constraint.
        let mut insert = tx.prepare_cached(
            "INSERT INTO outbox (dispatch_key, workflow_id, ordinal, activity_type, input,
               status, attempt, visible_after, run_id, namespace, task_queue, node)
             VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT (dispatch_key) DO NOTHING",
        )?;
        let mut inserted = 0;
        for row in rows {
            inserted += insert.execute(params![
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
                row.node
            ])? as u64;
        }
        Ok(inserted)
    }

    /// One row's state, read with the given connection or transaction.
    fn row_state(
        conn: &rusqlite::Connection,
        dispatch_key: &str,
    ) -> Result<Option<OutboxRowState>> {
        conn.prepare_cached(
            "SELECT status, attempt, visible_after, claimed_at FROM outbox WHERE dispatch_key = ?1",
        )?
        .query_row([dispatch_key], |row: &Row<'_>| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get(2)?,
                row.get(3)?,
            ))
        })
        .optional()?
        .map(|(status, attempt, visible_after, claimed_at)| {
            Ok(OutboxRowState {
                status: status_from(&status)?,
                attempt: attempt_from(attempt)?,
                visible_after,
                claimed_at,
            })
        })
        .transpose()
    }

    /// Says why a transition of `dispatch_key` changed nothing: the row is unknown or settled.
    fn refusal_in(tx: &Connection, dispatch_key: &str) -> Result<Error> {
        Ok(match Self::row_state(tx, dispatch_key)? {
            None => Error::not_found(ROW, dispatch_key),
            Some(_) => settled(dispatch_key),
        })
    }

    /// Applies `update`, a transition of one live row with the key as `?1`, in one transaction.
    fn transition(&self, dispatch_key: &str, update: &str, params: impl Params) -> Result<()> {
        check_id("dispatchKey", dispatch_key)?;
        let tx = self.write_tx()?;
        if tx.prepare_cached(update)?.execute(params)? != 1 {
            return Err(Self::refusal_in(&tx, dispatch_key)?);
        }
        tx.commit()?;
        Ok(())
    }
}

impl OutboxStore for SqliteStore {
    fn insert_outbox(&self, rows: &[NewOutboxRow]) -> Result<u64> {
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
        check_filter(filter)?;
        let excluded = json_array(&filter.exclude_workflows)?;
        let scope = filter.scope.clone().unwrap_or_default();
        let tx = self.write_tx()?;
        // The inner SELECT walks the partial index `outbox_pending` in claim order and stops at
        // `limit`; the IMMEDIATE transaction keeps every other writer out until the commit.
        let mut claimed = query_rows(
            &tx,
            &format!(
                "UPDATE outbox SET status = 'claimed', claimed_at = ?1
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
                scope.node
            ],
        )?;
        tx.commit()?;
        // RETURNING gives no order; the claim order is recomputed from unchanged columns.
        claimed.sort_by(|a, b| {
            (a.visible_after, &a.dispatch_key).cmp(&(b.visible_after, &b.dispatch_key))
        });
        Ok(claimed)
    }

    fn complete_outbox(&self, dispatch_key: &str) -> Result<()> {
        self.transition(dispatch_key, COMPLETE, [dispatch_key])
    }

    fn complete_outbox_batch(&self, dispatch_keys: &[String]) -> Result<()> {
        check_distinct_ids("dispatchKeys", dispatch_keys)?;
        if dispatch_keys.is_empty() {
            return Ok(());
        }
        let keys = json_array(dispatch_keys)?;
        let tx = self.write_tx()?;
        let completed: HashSet<String> = {
            let mut stmt = tx.prepare_cached(
                "UPDATE outbox SET status = 'done'
                 WHERE dispatch_key IN (SELECT value FROM json_each(?1))
                   AND status IN ('pending', 'claimed')
                 RETURNING dispatch_key",
            )?;
            let rows = stmt.query_map([keys], |row| row.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        // A key the update skipped is unchanged, so its state still says why.
        if let Some(missed) = dispatch_keys.iter().find(|k| !completed.contains(*k)) {
            return Err(Self::refusal_in(&tx, missed)?);
        }
        tx.commit()?;
        Ok(())
    }

    fn retry_outbox(
        &self,
        dispatch_key: &str,
        next_attempt: u32,
        visible_after: Millis,
    ) -> Result<()> {
        self.transition(
            dispatch_key,
            RETRY,
            params![dispatch_key, next_attempt, visible_after],
        )
    }

    fn fail_outbox(&self, dispatch_key: &str) -> Result<()> {
        self.transition(dispatch_key, FAIL, [dispatch_key])
    }

    fn cancel_workflow_outbox(&self, workflow_id: &str) -> Result<Vec<String>> {
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
        let tx = self.write_tx()?;
        let mut rearmed = query_rows(
            &tx,
            &format!(
                "UPDATE outbox SET status = 'pending', visible_after = ?2, claimed_at = NULL
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

    fn list_stale_claims(&self, older_than: Millis, limit: u32) -> Result<Vec<OutboxRow>> {
        query_rows(
            self.conn(),
            &format!(
                "SELECT {ROW_COLUMNS} FROM outbox
                 WHERE status = 'claimed' AND claimed_at < ?1
                 ORDER BY claimed_at, dispatch_key
                 LIMIT ?2"
            ),
            params![older_than, i64::from(limit)],
        )
    }

    fn list_unsettled_workflows(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT DISTINCT workflow_id FROM outbox
             WHERE status IN ('pending', 'claimed')
             ORDER BY workflow_id",
        )?;
        let ids = stmt.query_map([], |row| row.get(0))?;
        Ok(ids.collect::<rusqlite::Result<_>>()?)
    }

    fn namespace_loads(&self, namespaces: &[String]) -> Result<BTreeMap<String, NamespaceLoad>> {
        for (index, name) in namespaces.iter().enumerate() {
            check_id(&format!("namespaces[{index}]"), name)?;
        }
        let mut stmt = self.conn().prepare_cached(
            "SELECT n.value, count(o.dispatch_key),
                    count(CASE WHEN o.status = 'claimed' THEN 1 END)
             FROM (SELECT DISTINCT value FROM json_each(?1)) AS n
             LEFT JOIN outbox AS o
               ON o.namespace = n.value AND o.status IN ('pending', 'claimed')
             GROUP BY n.value",
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
        Self::row_state(self.conn(), dispatch_key)
    }

    fn list_outbox(
        &self,
        status: Option<OutboxStatus>,
        after_key: Option<&str>,
        limit: u32,
    ) -> Result<Vec<OutboxRow>> {
        // Every stored key is non-empty, so "after the empty key" is "from the start".
        query_rows(
            self.conn(),
            &format!(
                "SELECT {ROW_COLUMNS} FROM outbox
                 WHERE (?1 IS NULL OR status = ?1) AND dispatch_key > ?2
                 ORDER BY dispatch_key
                 LIMIT ?3"
            ),
            params![
                status.map(OutboxStatus::as_str),
                after_key.unwrap_or(""),
                i64::from(limit)
            ],
        )
    }
}
