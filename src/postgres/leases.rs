//! SQL of the leases on workflows (table `sync_leases`) on PostgreSQL. A take or release locks
//! the workflow's row (`FOR UPDATE`) and a push's fence shares it (`FOR SHARE`), so a take-over
//! and a push of the former holder are ordered: the push lands first, or it is fenced.

use super::paging::col;
use super::session::{Arg, Sql, Tx};
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::leases::{check_fence, check_take, release, take};
use crate::error::{Error, Result};
use crate::model::leases::{Lease, LeaseStore};
use crate::model::Millis;

/// How a read of a lease locks its row.
#[derive(Clone, Copy)]
enum Lock {
    None,
    /// A push's fence: takes wait for the push's commit.
    Share,
    /// A take or release: pushes and other takes wait for it.
    Update,
}

/// The workflow's lease, its row locked as `lock` says, or none.
fn load(sql: &mut impl Sql, workflow_id: &str, lock: Lock) -> Result<Option<Lease>> {
    let query = match lock {
        Lock::None => "SELECT holder, epoch, expires_at FROM sync_leases WHERE workflow_id = $1",
        Lock::Share => {
            "SELECT holder, epoch, expires_at FROM sync_leases WHERE workflow_id = $1 FOR SHARE"
        }
        Lock::Update => {
            "SELECT holder, epoch, expires_at FROM sync_leases WHERE workflow_id = $1 FOR UPDATE"
        }
    };
    let Some(row) = sql.query_opt(query, &[&workflow_id])? else {
        return Ok(None);
    };
    Ok(Some(Lease {
        workflow_id: workflow_id.to_owned(),
        holder: col(&row, 0)?,
        epoch: to_u64("epoch", col(&row, 1)?)?,
        expires_at: col(&row, 2)?,
    }))
}

/// Stores `lease` over the one read (`existed`), or as the workflow's first. Two first takes at
/// once both read none: the one whose insert finds the row taken is `BUSY`, which the store's
/// write retries, and the retry reads the other's lease.
fn store(tx: &mut Tx<'_>, lease: &Lease, existed: bool) -> Result<()> {
    let epoch = to_i64("epoch", lease.epoch)?;
    let args = [
        &lease.workflow_id as Arg<'_>,
        &lease.holder,
        &epoch,
        &lease.expires_at,
    ];
    if existed {
        tx.execute(
            "UPDATE sync_leases SET holder = $2, epoch = $3, expires_at = $4 WHERE workflow_id = $1",
            &args,
        )?;
        return Ok(());
    }
    let inserted = tx.execute(
        "INSERT INTO sync_leases (workflow_id, holder, epoch, expires_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (workflow_id) DO NOTHING",
        &args,
    )?;
    if inserted == 0 {
        return Err(Error::Busy {
            message: format!(
                "workflow {}'s first lease was taken meanwhile",
                lease.workflow_id
            ),
        });
    }
    Ok(())
}

/// [`crate::Operation::CheckLease`] inside the caller's transaction.
pub(super) fn check_in(
    tx: &mut Tx<'_>,
    workflow_id: &str,
    holder: Option<&str>,
    epoch: Option<u64>,
) -> Result<()> {
    check_id("workflowId", workflow_id)?;
    let stored = load(tx, workflow_id, Lock::Share)?;
    check_fence(stored.as_ref(), workflow_id, holder, epoch)
}

impl LeaseStore for PgStore {
    fn take_lease(
        &self,
        workflow_id: &str,
        holder: &str,
        epoch: Option<u64>,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<Lease> {
        check_take(workflow_id, holder, ttl_ms)?;
        self.write(|tx| {
            let stored = load(tx, workflow_id, Lock::Update)?;
            let lease = take(stored.as_ref(), workflow_id, holder, epoch, ttl_ms, now)?;
            store(tx, &lease, stored.is_some())?;
            Ok(lease)
        })
    }

    fn release_lease(&self, workflow_id: &str, holder: &str, epoch: u64) -> Result<()> {
        check_id("workflowId", workflow_id)?;
        check_id("holder", holder)?;
        self.write(|tx| {
            let stored = load(tx, workflow_id, Lock::Update)?;
            if let Some(released) = release(stored.as_ref(), workflow_id, holder, epoch)? {
                store(tx, &released, true)?;
            }
            Ok(())
        })
    }

    fn load_lease(&self, workflow_id: &str) -> Result<Option<Lease>> {
        check_id("workflowId", workflow_id)?;
        self.read(|session| load(session, workflow_id, Lock::None))
    }
}
