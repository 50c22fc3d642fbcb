//! SQL of the leases on workflows (table `sync_leases`). Each change reads the lease in its
//! own `IMMEDIATE` transaction (or the step's), where no other writer can move it, and stores
//! what the rules in `backend::leases` decide.

use rusqlite::{params, Connection, OptionalExtension};

use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::leases::{check_fence, check_holder, check_take, release, take};
use crate::error::Result;
use crate::model::leases::{Lease, LeaseStore};
use crate::model::Millis;

fn load(conn: &Connection, workflow_id: &str) -> Result<Option<Lease>> {
    let row = conn
        .prepare_cached("SELECT holder, epoch, expires_at FROM sync_leases WHERE workflow_id = ?1")?
        .query_row([workflow_id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?, row.get(2)?))
        })
        .optional()?;
    row.map(|(holder, epoch, expires_at)| {
        Ok(Lease {
            workflow_id: workflow_id.to_owned(),
            holder,
            epoch: from_sql_int("epoch", epoch)?,
            expires_at,
        })
    })
    .transpose()
}

fn store(conn: &Connection, lease: &Lease) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO sync_leases (workflow_id, holder, epoch, expires_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (workflow_id) DO UPDATE
         SET holder = excluded.holder, epoch = excluded.epoch, expires_at = excluded.expires_at",
    )?
    .execute(params![
        lease.workflow_id,
        lease.holder,
        to_sql_int("epoch", lease.epoch)?,
        lease.expires_at
    ])?;
    Ok(())
}

impl SqliteStore {
    /// [`crate::Operation::CheckLease`]: refuses the step unless `holder` under `epoch` may
    /// write to `workflow_id` (see `backend::leases::check_fence`).
    pub(super) fn check_lease(
        &self,
        workflow_id: &str,
        holder: Option<&str>,
        epoch: Option<u64>,
    ) -> Result<()> {
        check_id("workflowId", workflow_id)?;
        let tx = self.write_tx()?;
        check_fence(load(&tx, workflow_id)?.as_ref(), workflow_id, holder, epoch)?;
        tx.commit()
    }
}

impl LeaseStore for SqliteStore {
    fn take_lease(
        &self,
        workflow_id: &str,
        holder: &str,
        epoch: Option<u64>,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<Lease> {
        check_take(workflow_id, holder, epoch, ttl_ms)?;
        let tx = self.write_tx()?;
        let stored = load(&tx, workflow_id)?;
        let lease = take(stored.as_ref(), workflow_id, holder, epoch, ttl_ms, now)?;
        store(&tx, &lease)?;
        tx.commit()?;
        Ok(lease)
    }

    fn release_lease(&self, workflow_id: &str, holder: &str, epoch: u64) -> Result<()> {
        check_id("workflowId", workflow_id)?;
        check_holder("holder", holder, epoch, "epoch")?;
        let tx = self.write_tx()?;
        if let Some(released) =
            release(load(&tx, workflow_id)?.as_ref(), workflow_id, holder, epoch)?
        {
            store(&tx, &released)?;
        }
        tx.commit()
    }

    fn load_lease(&self, workflow_id: &str) -> Result<Option<Lease>> {
        check_id("workflowId", workflow_id)?;
        load(self.conn(), workflow_id)
    }
}
