//! Artifacts' rules, whatever the backend: the checks of a put, the id derived from its
//! identity, and the digest check of a read.

use sha2::{Digest, Sha256};

use super::checks::{check_id, check_size, MAX_BLOB_BYTES};
use super::hex;
use crate::error::{Error, Result};
use crate::model::artifacts::*;
use crate::model::Millis;

/// Feeds one optional field to the identity hash, length-prefixed so that no two different
/// field lists hash the same input.
fn hash_field(hasher: &mut Sha256, value: Option<&str>) {
    match value {
        None => hasher.update([0]),
        Some(text) => {
            hasher.update([1]);
            hasher.update((text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
    }
}

/// The artifact id: SHA-256 over the put's identity. Stored ids depend on this encoding, so
/// changing it would make repeated puts of old artifacts create new ones.
pub(crate) fn artifact_id(artifact: &NewArtifact, content_digest: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"runstore artifact v1\0");
    hash_field(&mut hasher, Some(&artifact.scope));
    hash_field(&mut hasher, Some(&artifact.media_type));
    hash_field(&mut hasher, artifact.name.as_deref());
    hash_field(&mut hasher, artifact.idempotency_key.as_deref());
    hasher.update(content_digest);
    hex(&hasher.finalize())
}

pub(crate) fn check_artifact(artifact: &NewArtifact, now: Millis) -> Result<()> {
    check_id("scope", &artifact.scope)?;
    check_id("mediaType", &artifact.media_type)?;
    if let Some(name) = &artifact.name {
        check_id("name", name)?;
    }
    if let Some(key) = &artifact.idempotency_key {
        check_id("idempotencyKey", key)?;
    }
    check_size("bytes", artifact.bytes.len(), MAX_BLOB_BYTES)?;
    match artifact.expires_at {
        // Also catches an expiry given in seconds rather than milliseconds.
        Some(expires_at) if expires_at <= now => Err(Error::invalid(
            "expiresAt",
            format!("{expires_at} is not after now ({now})"),
        )),
        _ => Ok(()),
    }
}

/// Refuses bytes that no longer match the size and digest recorded when they were put.
pub(crate) fn verify(meta: &ArtifactMeta, bytes: &[u8]) -> Result<()> {
    let digest = hex(&Sha256::digest(bytes));
    if bytes.len() as u64 != meta.size_bytes || digest != meta.sha256 {
        return Err(Error::Corrupt {
            message: format!(
                "artifact {} of scope {}: stored bytes are {} long with SHA-256 {digest}; \
                 recorded {} with {}",
                meta.artifact_id,
                meta.scope,
                bytes.len(),
                meta.size_bytes,
                meta.sha256
            ),
        });
    }
    Ok(())
}
