//! SQL of the leases on workflows (table `sync_leases`) on PostgreSQL. A take or release holds
//! the workflow's lease lock exclusively and a push's fence shares it, so a take-over and a
//! push of the former holder are ordered: the push lands first, or it is fenced.

use super::paging::col;
use super::session::{Arg, Sql, Tx};
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::leases::{check_fence, check_holder, check_take, release, take};
use crate::error::{Error, Result};
use crate::model::leases::{Lease, LeaseStore};
use crate::model::Millis;

/// How a change to a lease and a push's fence exclude each other.
#[derive(Clone, Copy)]
enum Lock {
    /// A push's fence: pushes go together; a take waits for them, and they for it.
    Shared,
    /// A take or a release.
    Exclusive,
}

/// Locks the workflow's lease until the transaction ends. An advisory lock, not the row's:
/// it exists before the workflow's first lease, so a push that found none holds it to its
/// commit, and the first take waits for that push instead of slipping in before it lands.
/// Keyed by a constant and the schema-qualified workflow id, apart from an app's own locks.
fn lock(tx: &mut Tx<'_>, workflow_id: &str, lock: Lock) -> Result<()> {
    let sql = match lock {
        Lock::Shared => {
            "SELECT pg_advisory_xact_lock_shared($1, hashtext(current_schema() || '/' || $2))"
        }
        Lock::Exclusive => {
            "SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/' || $2))"
        }
    };
    tx.query_one(sql, &[&LOCK_CLASS, &workflow_id])?;
    Ok(())
}

/// The first key of the leases' advisory locks ("rnst").
const LOCK_CLASS: i32 = 0x726e_7374;

/// The workflow's lease, or none. Read after [`lock`], in a statement of its own, so that it
/// sees what a take committed while the lock was awaited.
fn load(sql: &mut impl Sql, workflow_id: &str) -> Result<Option<Lease>> {
    let Some(row) = sql.query_opt(
        "SELECT holder, epoch, expires_at FROM sync_leases WHERE workflow_id = $1",
        &[&workflow_id],
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Lease {
        workflow_id: workflow_id.to_owned(),
        holder: col(&row, 0)?,
        epoch: to_u64("epoch", col(&row, 1)?)?,
        expires_at: col(&row, 2)?,
    }))
}

/// Stores `lease` over the one read (`existed`), or as the workflow's first. The exclusive lock
/// keeps two first takes apart; should an insert still find the row taken, it is `BUSY`, which
/// the store's write retries, and the retry reads the other's lease.
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
    lock(tx, workflow_id, Lock::Shared)?;
    let stored = load(tx, workflow_id)?;
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
        check_take(workflow_id, holder, epoch, ttl_ms)?;
        self.write(|tx| {
            lock(tx, workflow_id, Lock::Exclusive)?;
            let stored = load(tx, workflow_id)?;
            let lease = take(stored.as_ref(), workflow_id, holder, epoch, ttl_ms, now)?;
            store(tx, &lease, stored.is_some())?;
            Ok(lease)
        })
    }

    fn release_lease(&self, workflow_id: &str, holder: &str, epoch: u64) -> Result<()> {
        check_id("workflowId", workflow_id)?;
        check_holder("holder", holder, epoch, "epoch")?;
        self.write(|tx| {
            lock(tx, workflow_id, Lock::Exclusive)?;
            let stored = load(tx, workflow_id)?;
            if let Some(released) = release(stored.as_ref(), workflow_id, holder, epoch)? {
                store(tx, &released, true)?;
            }
            Ok(())
        })
    }

    fn load_lease(&self, workflow_id: &str) -> Result<Option<Lease>> {
        check_id("workflowId", workflow_id)?;
        self.read(|session| load(session, workflow_id))
    }
}
