//! What every backend of the store shares, whatever its database: the rules a request id is
//! decided by, and the checks, encodings and fingerprints both `src/sqlite` and
//! `src/postgres` apply. No SQL here.

pub(crate) mod pages;
pub(crate) mod requests;
pub(crate) mod sync;
