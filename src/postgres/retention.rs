//! SQL of retention on PostgreSQL: purging closed workflows across the per-workflow tables.
//! PostgreSQL reclaims the space of deleted rows itself (autovacuum); `vacuum` asks for a
//! full rewrite of the store's tables.

use super::session::Tx;

use super::paging::col;
use super::sync_state::tombstone;
use super::{to_u64, PgStore};
use crate::backend::paging::checked_limit;
use crate::error::Result;
use crate::model::retention::*;
use crate::model::Millis;

/// The tables keyed by workflow id, in the order `purge_workflows` reads their counts.
const PER_WORKFLOW: [&str; 5] = ["events", "outbox", "timers", "visibility", "workflows"];

/// Every table of the store, for `storage_stats` and `vacuum`.
const TABLES: [&str; 22] = [
    "events",
    "workflows",
    "timers",
    "outbox",
    "visibility",
    "namespaces",
    "packages",
    "package_routes",
    "checkpoints",
    "effects",
    "run_events",
    "artifacts",
    "conversations",
    "requests",
    "request_scopes",
    "sync_feed",
    "sync_feed_heads",
    "sync_targets",
    "sync_heads",
    "sync_clock",
    "sync_leases",
    "runstore_schema",
];

pub(super) fn purge_in(tx: &mut Tx<'_>, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
    let limit = checked_limit("limit", limit)?;
    // Locked, so that an append racing the purge waits and then finds the workflow gone.
    let rows = tx.query(
        "SELECT workflow_id FROM workflows
         WHERE status IN ('completed', 'failed', 'cancelled') AND closed_at < $1
         ORDER BY closed_at, workflow_id
         LIMIT $2
         FOR UPDATE",
        &[&closed_before, &(i64::from(limit) + 1)],
    )?;
    let mut ids = rows
        .iter()
        .map(|row| col(row, 0))
        .collect::<Result<Vec<String>>>()?;
    let more = ids.len() > limit as usize;
    ids.truncate(limit as usize);
    if ids.is_empty() {
        return Ok(PurgeCounts::default());
    }
    tombstone(tx, &ids)?;
    let mut deleted = [0u64; PER_WORKFLOW.len()];
    for (count, table) in deleted.iter_mut().zip(PER_WORKFLOW) {
        *count = tx.execute(
            &format!("DELETE FROM {table} WHERE workflow_id = ANY($1::text[])"),
            &[&ids],
        )?;
    }
    // A purged workflow's lease goes with it: the id may be used afresh.
    tx.execute(
        "DELETE FROM sync_leases WHERE workflow_id = ANY($1::text[])",
        &[&ids],
    )?;
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

impl RetentionStore for PgStore {
    fn purge_workflows(&self, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
        checked_limit("limit", limit)?;
        self.write(|tx| purge_in(tx, closed_before, limit))
    }

    /// The store's tables in PostgreSQL pages (`block_size`, 8 KiB by default), indexes and
    /// TOAST included. PostgreSQL keeps no free list a caller could shrink: `freelist_count`
    /// is 0, and `incremental_vacuum` says that autovacuum is on.
    fn storage_stats(&self) -> Result<StorageStats> {
        let tables: Vec<&str> = TABLES.to_vec();
        let row = self.read(|client| {
            client.query_one(
                "SELECT current_setting('block_size')::bigint,
                        coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint,
                        current_setting('autovacuum') = 'on'
                 FROM pg_class AS c
                 WHERE c.relkind = 'r' AND c.oid = ANY(
                   SELECT to_regclass(t)::oid FROM unnest($1::text[]) AS t)",
                &[&tables],
            )
        })?;
        let page_size = to_u64("block_size", col(&row, 0)?)?.max(1);
        let bytes = to_u64("size", col(&row, 1)?)?;
        Ok(StorageStats {
            page_size,
            page_count: bytes.div_ceil(page_size),
            freelist_count: 0,
            incremental_vacuum: col(&row, 2)?,
        })
    }

    /// `VACUUM FULL` of every table of the store: rewrites them compactly, and like SQLite's
    /// `VACUUM` needs room for a second copy while it runs.
    fn vacuum(&self) -> Result<()> {
        self.read(|client| {
            for table in TABLES {
                client.batch_execute(&format!("VACUUM FULL {table}"))?;
            }
            Ok(())
        })
    }
}
