//! SQL of artifacts (table `artifacts`) on PostgreSQL; ids and digests as the SQLite store
//! derives them.

use postgres::Row;

use super::session::Tx;
use sha2::{Digest, Sha256};

use super::paging::{col, Key, KeyKind, Listing};
use super::{to_i64, to_u64, PgStore};
use crate::backend::artifacts::{artifact_id, check_artifact, verify};
use crate::backend::checks::check_id;
use crate::backend::hex;
use crate::error::{Error, Result};
use crate::model::artifacts::*;
use crate::model::{Millis, Page, PageRequest};

/// Every column but `bytes`, in the order [`meta_from_row`] reads them.
const META_COLUMNS: &str = "scope, artifact_id, media_type, name, size_bytes, sha256,
     idempotency_key, created_at, expires_at";

fn meta_from_row(row: &Row) -> Result<ArtifactMeta> {
    Ok(ArtifactMeta {
        scope: col(row, 0)?,
        artifact_id: col(row, 1)?,
        media_type: col(row, 2)?,
        name: col(row, 3)?,
        size_bytes: to_u64("size_bytes", col(row, 4)?)?,
        sha256: col(row, 5)?,
        idempotency_key: col(row, 6)?,
        created_at: col(row, 7)?,
        expires_at: col(row, 8)?,
    })
}

pub(super) fn put_in(tx: &mut Tx<'_>, artifact: &NewArtifact, now: Millis) -> Result<ArtifactMeta> {
    check_artifact(artifact, now)?;
    let content_digest = Sha256::digest(&artifact.bytes);
    let meta = ArtifactMeta {
        scope: artifact.scope.clone(),
        artifact_id: artifact_id(artifact, &content_digest),
        media_type: artifact.media_type.clone(),
        name: artifact.name.clone(),
        size_bytes: artifact.bytes.len() as u64,
        sha256: hex(&content_digest),
        idempotency_key: artifact.idempotency_key.clone(),
        created_at: now,
        expires_at: artifact.expires_at,
    };
    // A stored artifact of the same identity: its expiry extends to the later of the two.
    let stored = tx.query_opt(
        &format!(
            "UPDATE artifacts SET expires_at =
               CASE WHEN expires_at IS NULL OR $3::bigint IS NULL THEN NULL
                    ELSE greatest(expires_at, $3) END
             WHERE scope = $1 AND artifact_id = $2
             RETURNING {META_COLUMNS}"
        ),
        &[&meta.scope, &meta.artifact_id, &meta.expires_at],
    )?;
    if let Some(row) = stored {
        return meta_from_row(&row);
    }
    if let Some(key) = &meta.idempotency_key {
        let owner = tx.query_opt(
            "SELECT artifact_id FROM artifacts WHERE scope = $1 AND idempotency_key = $2",
            &[&meta.scope, key],
        )?;
        if let Some(owner) = owner {
            return Err(Error::IdempotencyConflict {
                entity: "artifact",
                id: meta.artifact_id,
                key: key.clone(),
                owner: col(&owner, 0)?,
            });
        }
    }
    // A plain INSERT: a concurrent put of the same artifact or key makes it fail on the unique
    // key, and the transaction runs again to find that one.
    tx.execute(
        &format!(
            "INSERT INTO artifacts ({META_COLUMNS}, bytes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ),
        &[
            &meta.scope,
            &meta.artifact_id,
            &meta.media_type,
            &meta.name,
            &to_i64("sizeBytes", meta.size_bytes)?,
            &meta.sha256,
            &meta.idempotency_key,
            &meta.created_at,
            &meta.expires_at,
            &artifact.bytes,
        ],
    )?;
    Ok(meta)
}

pub(super) fn delete_in(tx: &mut Tx<'_>, scope: &str, artifact_id: &str) -> Result<bool> {
    check_id("scope", scope)?;
    check_id("artifactId", artifact_id)?;
    let deleted = tx.execute(
        "DELETE FROM artifacts WHERE scope = $1 AND artifact_id = $2",
        &[&scope, &artifact_id],
    )?;
    Ok(deleted > 0)
}

pub(super) fn purge_expired_in(tx: &mut Tx<'_>, now: Millis) -> Result<u64> {
    tx.execute("DELETE FROM artifacts WHERE expires_at <= $1", &[&now])
}

impl ArtifactStore for PgStore {
    fn put_artifact(&self, artifact: &NewArtifact, now: Millis) -> Result<ArtifactMeta> {
        check_artifact(artifact, now)?;
        self.write(|tx| put_in(tx, artifact, now))
    }

    fn get_artifact(&self, scope: &str, artifact_id: &str) -> Result<Artifact> {
        check_id("scope", scope)?;
        check_id("artifactId", artifact_id)?;
        let row = self.read(|client| {
            client.query_opt(
                &format!(
                    "SELECT {META_COLUMNS}, bytes FROM artifacts WHERE scope = $1 AND artifact_id = $2"
                ),
                &[&scope, &artifact_id],
            )
        })?;
        let row = row.ok_or_else(|| {
            Error::not_found("artifact", format!("{artifact_id} of scope {scope}"))
        })?;
        let meta = meta_from_row(&row)?;
        let bytes: Vec<u8> = col(&row, 9)?;
        verify(&meta, &bytes)?;
        Ok(Artifact { meta, bytes })
    }

    fn list_artifacts(&self, scope: &str, page: &PageRequest) -> Result<Page<ArtifactMeta>> {
        check_id("scope", scope)?;
        self.read(|client| {
            ARTIFACTS.read(
                client,
                &format!("SELECT {META_COLUMNS} FROM artifacts WHERE scope = $1"),
                vec![Box::new(scope.to_owned())],
                page,
                meta_from_row,
                |meta| vec![Key::Int(meta.created_at), Key::text(&meta.artifact_id)],
            )
        })
    }

    fn delete_artifact(&self, scope: &str, artifact_id: &str) -> Result<bool> {
        check_id("scope", scope)?;
        check_id("artifactId", artifact_id)?;
        self.write(|tx| delete_in(tx, scope, artifact_id))
    }

    fn purge_expired_artifacts(&self, now: Millis) -> Result<u64> {
        self.write(|tx| purge_expired_in(tx, now))
    }
}

/// A scope's artifacts, oldest first.
const ARTIFACTS: Listing = Listing {
    name: "artifacts",
    key: "created_at, artifact_id",
    kinds: &[KeyKind::Int, KeyKind::Text],
};
