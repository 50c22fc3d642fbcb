//! Workflow packages: deployed archives keyed by (workflow type, content hash), and the route
//! of each workflow type, which names the hash of the archive that new runs of the type use.
//!
//! A route names a content hash, not a row: every stored package with that hash holds the
//! same archive. The store keeps one invariant: a route always names a hash some stored
//! package has.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// The shortest accepted content hash, in hex digits.
pub const MIN_HASH_HEX_DIGITS: usize = 8;

/// The longest accepted content hash, in hex digits (a 512-bit digest).
pub const MAX_HASH_HEX_DIGITS: usize = 128;

/// A deployed archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageRecord {
    pub workflow_type: String,
    /// The digest of the archive under the engine's own scheme (the store does not recompute
    /// it): lowercase hex, [`MIN_HASH_HEX_DIGITS`] to [`MAX_HASH_HEX_DIGITS`] digits. Lowercase
    /// only, so that one digest has one spelling.
    pub content_hash: String,
    #[serde(with = "serde_bytes")]
    pub archive: Vec<u8>,
    pub deployed_at: Millis,
}

impl PackageRecord {
    /// The record's metadata, as a listing gives it.
    pub fn meta(&self) -> PackageMeta {
        PackageMeta {
            workflow_type: self.workflow_type.clone(),
            content_hash: self.content_hash.clone(),
            size_bytes: self.archive.len() as u64,
            deployed_at: self.deployed_at,
        }
    }
}

/// A deployed archive without its bytes, as listings give it; [`PackageStore::get_package`]
/// reads the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageMeta {
    pub workflow_type: String,
    pub content_hash: String,
    /// The archive's length in bytes.
    pub size_bytes: u64,
    pub deployed_at: Millis,
}

/// The archive that new runs of a workflow type use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRoute {
    pub workflow_type: String,
    pub content_hash: String,
}

/// Deployed packages and their routes.
pub trait PackageStore {
    /// Stores `record` and points its type's route at its hash, in one transaction. Putting an
    /// existing (type, hash) again is a redeploy: its archive and `deployed_at` are replaced.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized type, a content hash that is
    /// not lowercase hex of an accepted length, or an oversized archive; nothing is written.
    fn put_package(&self, record: &PackageRecord) -> Result<()>;

    /// As [`PackageStore::put_package`], and also points the route of every type in
    /// `member_types` (the other workflow types the archive holds) at the same hash. The
    /// archive is stored once, under `record.workflow_type`. All of it commits or none.
    ///
    /// # Errors
    /// As [`PackageStore::put_package`]; an invalid member type fails the whole put, naming
    /// `memberTypes[i]`.
    fn put_package_for_types(&self, record: &PackageRecord, member_types: &[String]) -> Result<()>;

    /// One package, `None` when absent.
    fn get_package(&self, workflow_type: &str, content_hash: &str)
        -> Result<Option<PackageRecord>>;

    /// A page of the packages' metadata (archives are not read) in deploy order:
    /// `deployed_at`, then workflow type, then hash, so that replaying them in this order is
    /// deterministic.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_packages(&self, page: &PageRequest) -> Result<Page<PackageMeta>>;

    /// Deletes one package. When no other package has its hash, the routes naming that hash
    /// are removed in the same transaction (a route never names a missing archive), and the
    /// types that lost their route are returned in type order; new runs of those types then
    /// find no route until one is set again.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when no such package exists.
    fn delete_package(&self, workflow_type: &str, content_hash: &str) -> Result<Vec<String>>;

    /// Points the route of `workflow_type` at `content_hash` (for example to roll back),
    /// creating or replacing it.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] (entity `package with hash`) when no stored package has
    /// that hash; [`crate::Error::InvalidInput`] for an invalid type or hash.
    fn set_package_route(&self, workflow_type: &str, content_hash: &str) -> Result<()>;

    /// A page of the routes, in workflow type order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_package_routes(&self, page: &PageRequest) -> Result<Page<PackageRoute>>;

    /// The hash the route of `workflow_type` names, `None` when it has no route.
    fn get_package_route(&self, workflow_type: &str) -> Result<Option<String>>;
}
