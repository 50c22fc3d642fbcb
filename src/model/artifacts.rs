//! Artifacts: byte payloads of agent runs (files, images, tool outputs) kept under a scope,
//! verified by their SHA-256 on every read and purged when they expire.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// An artifact to put.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewArtifact {
    /// The namespace of the artifact, for example a run id.
    pub scope: String,
    /// For example `"image/png"`.
    pub media_type: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    /// Purged by [`ArtifactStore::purge_expired_artifacts`] from this time on; never when
    /// `None`.
    #[serde(default)]
    pub expires_at: Option<Millis>,
    /// Unique within the scope: a put under a key already held returns the holder.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// What the store knows of an artifact, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactMeta {
    pub scope: String,
    /// Derived by the store from the artifact's identity; see [`ArtifactStore::put_artifact`].
    pub artifact_id: String,
    pub media_type: String,
    pub name: Option<String>,
    pub size_bytes: u64,
    /// SHA-256 of the bytes, 64 lower-case hex digits.
    pub sha256: String,
    pub idempotency_key: Option<String>,
    pub created_at: Millis,
    pub expires_at: Option<Millis>,
}

/// An artifact with its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(flatten)]
    pub meta: ArtifactMeta,
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

/// Artifacts.
pub trait ArtifactStore {
    /// Stores `artifact` at time `now`, computing its size and SHA-256, and returns its
    /// metadata.
    ///
    /// The artifact id is the lower-case hex SHA-256 of the put's identity: scope, media type,
    /// name, idempotency key and the SHA-256 of the bytes. The same identity is the same
    /// artifact, so a repeated put (a retry, or identical content put twice) stores nothing
    /// new and returns the stored artifact, with its expiry extended to the later of the two
    /// (no expiry being the latest): an artifact lives as long as its longest-lived put asked.
    ///
    /// # Errors
    /// - [`crate::Error::IdempotencyConflict`] (entity `"artifact"`, id the new artifact's id)
    ///   when the key is held in that scope by an artifact with another identity (other bytes,
    ///   media type or name); `owner` is the holder's id.
    /// - [`crate::Error::InvalidInput`] for an empty or oversized scope, media type, name or
    ///   key, bytes over [`crate::MAX_BLOB_BYTES`], or an `expires_at` not after `now`.
    ///
    /// Nothing is written on any error.
    fn put_artifact(&self, artifact: &NewArtifact, now: Millis) -> Result<ArtifactMeta>;

    /// The artifact with its bytes, checked against the stored size and SHA-256. An expired
    /// artifact stays readable until it is purged.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when the scope has no such artifact;
    /// [`crate::Error::Corrupt`] when the stored bytes do not match their digest or size.
    fn get_artifact(&self, scope: &str, artifact_id: &str) -> Result<Artifact>;

    /// A page of the metadata of the artifacts of `scope` (bytes are not read), oldest first,
    /// artifact id breaking ties.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_artifacts(&self, scope: &str, page: &PageRequest) -> Result<Page<ArtifactMeta>>;

    /// Deletes the artifact, freeing its idempotency key; returns whether it existed.
    fn delete_artifact(&self, scope: &str, artifact_id: &str) -> Result<bool>;

    /// Deletes every artifact, in every scope, with `expires_at <= now`; returns how many.
    fn purge_expired_artifacts(&self, now: Millis) -> Result<u64>;
}
