//! Leases on workflows, kept by the sync server: which device runs a workflow, under which
//! fencing epoch, until when. A device takes a lease, renews it and releases it; when it
//! expires, another device may take the workflow over, and the epoch goes up. A push that
//! carries an older epoch (or another holder) than the workflow's lease is refused with
//! [`crate::Error::Fenced`] in the push's own transaction, so a paused or cut-off former owner
//! is refused rather than trusted to notice that it lost the lease.
//!
//! Expiry is counted on the server's clock only: the server answers how long the lease lasts,
//! and a device counts its renewal deadline on its own monotonic clock from when it asked, so
//! the devices' clocks never meet.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::Result;

/// The longest lease one request may take (30 days): a device that checks a run out to carry
/// on offline takes a long lease, and renews it when it is back.
pub const MAX_LEASE_TTL_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// A workflow's lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub workflow_id: String,
    /// The device that holds (or last held) the lease.
    pub holder: String,
    /// Raised each time the lease is granted anew; kept by renewals.
    pub epoch: u64,
    /// When the lease ends, by the server's clock (0 once released).
    pub expires_at: Millis,
}

impl Lease {
    /// Whether the lease still holds at `now`.
    pub fn live_at(&self, now: Millis) -> bool {
        self.expires_at > now
    }
}

/// Leases on workflows, as the sync server keeps them.
pub trait LeaseStore {
    /// Takes `workflow_id`'s lease for `holder` until `now + ttl_ms`, or renews it.
    ///
    /// With `epoch` `None` (take): granted when no live lease is held by another device, with
    /// the epoch one above the last (1 for the first); when `holder` holds a live lease already,
    /// that lease is renewed with its epoch. With `epoch` `Some` (renew): the lease must be
    /// `holder`'s under that epoch, live or expired but not taken since.
    ///
    /// # Errors
    /// - [`crate::Error::LeaseHeld`] when another device's lease is live (take).
    /// - [`crate::Error::Fenced`] when the lease is not `holder`'s under `epoch` (renew).
    /// - [`crate::Error::InvalidInput`] for an empty or overlong id, a `ttl_ms` of 0 or above
    ///   [`MAX_LEASE_TTL_MS`].
    fn take_lease(
        &self,
        workflow_id: &str,
        holder: &str,
        epoch: Option<u64>,
        ttl_ms: u64,
        now: Millis,
    ) -> Result<Lease>;

    /// Ends `holder`'s lease under `epoch` now, so that another device may take the workflow
    /// at once; the epoch is kept, and the next take raises it. Releasing a lease released
    /// before is no error.
    ///
    /// # Errors
    /// [`crate::Error::Fenced`] when the lease is not `holder`'s under `epoch`.
    fn release_lease(&self, workflow_id: &str, holder: &str, epoch: u64) -> Result<()>;

    /// The workflow's lease, live or not; `None` when none was ever taken.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or overlong id.
    fn load_lease(&self, workflow_id: &str) -> Result<Option<Lease>>;
}
