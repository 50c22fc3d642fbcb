//! What every backend of the store shares, whatever its database: the rules a request id is
//! decided by ([`requests`]), input checks and integer conversions ([`checks`]), event
//! encoding, the status projection and run chains ([`events`]), cursors and page bounds
//! ([`paging`]), and each area's own rules and fingerprints. `src/sqlite` and `src/postgres`
//! both build on it; neither owns a rule the other needs. Nothing here touches a database.

pub(crate) mod artifacts;
pub(crate) mod checks;
pub(crate) mod effects;
pub(crate) mod events;
pub(crate) mod leases;
pub(crate) mod namespaces;
pub(crate) mod outbox;
pub(crate) mod packages;
pub(crate) mod paging;
pub(crate) mod requests;
pub(crate) mod revisions;
pub(crate) mod sync;
pub(crate) mod visibility;

/// Lower-case hex of `bytes` (digests, ids).
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    text
}
