//! The lease rules, whatever the backend: the input checks, and what a take, a renewal, a
//! release or a fenced write decides from the stored lease. The backends read the lease in
//! the write's transaction, locked, and store what these functions return.

use crate::backend::checks::check_id;
use crate::error::{Error, Result};
use crate::model::leases::{Lease, MAX_LEASE_TTL_MS};
use crate::model::Millis;

/// Checks a take's or renewal's workflow id, holder, epoch and duration.
///
/// # Errors
/// [`Error::InvalidInput`] naming the field.
pub(crate) fn check_take(
    workflow_id: &str,
    holder: &str,
    epoch: Option<u64>,
    ttl_ms: u64,
) -> Result<()> {
    check_id("workflowId", workflow_id)?;
    check_holder("holder", holder, epoch.unwrap_or(1), "epoch")?;
    if ttl_ms == 0 || ttl_ms > MAX_LEASE_TTL_MS {
        return Err(Error::invalid(
            "ttlMs",
            format!("{ttl_ms} is not between 1 and {MAX_LEASE_TTL_MS}"),
        ));
    }
    Ok(())
}

/// Checks the holder and epoch a push or a release names.
///
/// # Errors
/// [`Error::InvalidInput`] naming `holder_field` or `epoch_field` (epochs start at 1).
pub(crate) fn check_holder(
    holder_field: &str,
    holder: &str,
    epoch: u64,
    epoch_field: &str,
) -> Result<()> {
    check_id(holder_field, holder)?;
    if epoch == 0 {
        return Err(Error::invalid(
            epoch_field,
            "must be 1 or more: epochs start at 1",
        ));
    }
    Ok(())
}

/// The lease to store for a take (`epoch` `None`) or a renewal (`Some`) by `holder` at `now`.
///
/// # Errors
/// [`Error::LeaseHeld`] when another device's lease is live (take); [`Error::Fenced`] when
/// the stored lease is not `holder`'s under `epoch` (renewal).
pub(crate) fn take(
    stored: Option<&Lease>,
    workflow_id: &str,
    holder: &str,
    epoch: Option<u64>,
    ttl_ms: u64,
    now: Millis,
) -> Result<Lease> {
    let expires_at = now.saturating_add(ttl_ms as Millis);
    let granted = |epoch| Lease {
        workflow_id: workflow_id.to_owned(),
        holder: holder.to_owned(),
        epoch,
        expires_at,
    };
    match (stored, epoch) {
        (None, None) => Ok(granted(1)),
        (Some(lease), None) if lease.holder == holder && lease.live_at(now) => {
            Ok(granted(lease.epoch))
        }
        (Some(lease), None) if lease.live_at(now) => Err(Error::LeaseHeld {
            workflow_id: workflow_id.to_owned(),
            holder: lease.holder.clone(),
            epoch: lease.epoch,
            expires_in_ms: u64::try_from(lease.expires_at - now).unwrap_or(0),
        }),
        (Some(lease), None) => Ok(granted(lease.epoch + 1)),
        // A renewal: the lease must still be this holder's under its epoch. One that expired
        // and was not taken since is renewed: no other device ran the workflow meanwhile.
        (_, Some(epoch)) => {
            check_fence(stored, workflow_id, Some(holder), Some(epoch))?;
            Ok(granted(epoch))
        }
    }
}

/// The lease to store for `holder`'s release of it under `epoch`: ended now, its epoch kept;
/// `None` when it was released before (nothing to write).
///
/// # Errors
/// [`Error::Fenced`] when the stored lease is not `holder`'s under `epoch`.
pub(crate) fn release(
    stored: Option<&Lease>,
    workflow_id: &str,
    holder: &str,
    epoch: u64,
) -> Result<Option<Lease>> {
    check_fence(stored, workflow_id, Some(holder), Some(epoch))?;
    Ok(stored
        .filter(|lease| lease.expires_at != 0)
        .map(|lease| Lease {
            expires_at: 0,
            ..lease.clone()
        }))
}

/// Admits a write to a workflow from `holder` under `epoch` (both `None`: a write that
/// carries no lease). A workflow never leased admits only writes without one; a leased one
/// only writes of its holder under its epoch, whether the lease is live or not: the epoch
/// rises when another device takes the workflow, which is what fences the former holder.
///
/// # Errors
/// [`Error::Fenced`] otherwise.
pub(crate) fn check_fence(
    stored: Option<&Lease>,
    workflow_id: &str,
    holder: Option<&str>,
    epoch: Option<u64>,
) -> Result<()> {
    let admitted = match stored {
        None => holder.is_none() && epoch.is_none(),
        Some(lease) => holder == Some(lease.holder.as_str()) && epoch == Some(lease.epoch),
    };
    if admitted {
        return Ok(());
    }
    Err(Error::Fenced {
        workflow_id: workflow_id.to_owned(),
        holder: holder.map(str::to_owned),
        epoch,
        current_holder: stored.map(|lease| lease.holder.clone()),
        current_epoch: stored.map(|lease| lease.epoch),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, epoch: u64, expires_at: Millis) -> Lease {
        Lease {
            workflow_id: "w".into(),
            holder: holder.into(),
            epoch,
            expires_at,
        }
    }

    #[test]
    fn a_take_is_granted_when_free_renews_its_own_and_raises_the_epoch_after_expiry() {
        assert_eq!(
            take(None, "w", "a", None, 10, 100).unwrap(),
            lease("a", 1, 110)
        );
        let held = lease("a", 3, 110);
        assert_eq!(
            take(Some(&held), "w", "a", None, 50, 105).unwrap(),
            lease("a", 3, 155)
        );
        assert_eq!(
            take(Some(&held), "w", "b", None, 10, 105).unwrap_err(),
            Error::LeaseHeld {
                workflow_id: "w".into(),
                holder: "a".into(),
                epoch: 3,
                expires_in_ms: 5
            }
        );
        assert_eq!(
            take(Some(&held), "w", "b", None, 10, 110).unwrap(),
            lease("b", 4, 120)
        );
        assert_eq!(
            take(Some(&held), "w", "a", None, 10, 110).unwrap(),
            lease("a", 4, 120)
        );
    }

    #[test]
    fn a_renewal_needs_the_holder_and_epoch_even_after_expiry() {
        let held = lease("a", 3, 110);
        assert_eq!(
            take(Some(&held), "w", "a", Some(3), 10, 500).unwrap(),
            lease("a", 3, 510)
        );
        for (holder, epoch) in [("a", 2), ("b", 3)] {
            let refused = take(Some(&held), "w", holder, Some(epoch), 10, 105).unwrap_err();
            assert_eq!(refused.code(), "FENCED");
        }
        assert_eq!(
            take(None, "w", "a", Some(1), 10, 0).unwrap_err().code(),
            "FENCED"
        );
    }

    #[test]
    fn a_fence_admits_the_leases_holder_and_epoch_only() {
        let held = lease("a", 3, 0);
        assert!(check_fence(None, "w", None, None).is_ok());
        assert!(check_fence(Some(&held), "w", Some("a"), Some(3)).is_ok());
        for (holder, epoch) in [(Some("a"), Some(2)), (Some("b"), Some(3)), (None, None)] {
            let refused = check_fence(Some(&held), "w", holder, epoch).unwrap_err();
            assert_eq!(
                refused,
                Error::Fenced {
                    workflow_id: "w".into(),
                    holder: holder.map(str::to_owned),
                    epoch,
                    current_holder: Some("a".into()),
                    current_epoch: Some(3),
                }
            );
        }
        assert!(check_fence(None, "w", Some("a"), Some(1)).is_err());
    }

    #[test]
    fn a_release_ends_the_lease_once_and_keeps_its_epoch() {
        let held = lease("a", 3, 110);
        assert_eq!(
            release(Some(&held), "w", "a", 3).unwrap(),
            Some(lease("a", 3, 0))
        );
        assert_eq!(release(Some(&lease("a", 3, 0)), "w", "a", 3).unwrap(), None);
        assert_eq!(
            release(Some(&held), "w", "b", 3).unwrap_err().code(),
            "FENCED"
        );
        assert_eq!(release(None, "w", "a", 1).unwrap_err().code(), "FENCED");
    }

    #[test]
    fn a_take_checks_its_duration() {
        let field = |result: Result<()>| match result {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(check_take("w", "a", None, 0)), "ttlMs");
        assert_eq!(
            field(check_take("w", "a", None, MAX_LEASE_TTL_MS + 1)),
            "ttlMs"
        );
        assert_eq!(field(check_take("w", "", None, 10)), "holder");
        assert_eq!(field(check_take("w", "a", Some(0), 10)), "epoch");
        assert!(check_take("w", "a", Some(1), MAX_LEASE_TTL_MS).is_ok());
    }
}
