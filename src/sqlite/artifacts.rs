//! SQL of artifacts (table `artifacts`) and the derivation of their ids.

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, OptionalExtension, Row};
use sha2::{Digest, Sha256};

use super::paging::{self, Listing};
use super::SqliteStore;
use crate::backend::artifacts::{artifact_id, check_artifact, verify};
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::hex;
use crate::error::{Error, Result};
use crate::model::artifacts::*;
use crate::model::{Millis, Page, PageRequest};

/// Every column but `bytes`, in the order [`meta_from_row`] reads them.
const META_COLUMNS: &str = "scope, artifact_id, media_type, name, size_bytes, sha256,
     idempotency_key, created_at, expires_at";

/// A metadata row as read, its size still a SQLite integer.
fn meta_from_row(row: &Row<'_>) -> rusqlite::Result<(ArtifactMeta, i64)> {
    Ok((
        ArtifactMeta {
            scope: row.get(0)?,
            artifact_id: row.get(1)?,
            media_type: row.get(2)?,
            name: row.get(3)?,
            size_bytes: 0,
            sha256: row.get(5)?,
            idempotency_key: row.get(6)?,
            created_at: row.get(7)?,
            expires_at: row.get(8)?,
        },
        row.get(4)?,
    ))
}

fn finish_meta((mut meta, size): (ArtifactMeta, i64)) -> Result<ArtifactMeta> {
    meta.size_bytes = from_sql_int("size_bytes", size)?;
    Ok(meta)
}

impl SqliteStore {
    /// Extends the expiry of a stored artifact to the later of the two and returns its
    /// metadata, `None` when it does not exist.
    fn extend_artifact(
        tx: &rusqlite::Connection,
        scope: &str,
        artifact_id: &str,
        expires_at: Option<Millis>,
    ) -> Result<Option<ArtifactMeta>> {
        tx.prepare_cached(&format!(
            "UPDATE artifacts SET expires_at =
               CASE WHEN expires_at IS NULL OR ?3 IS NULL THEN NULL ELSE max(expires_at, ?3) END
             WHERE scope = ?1 AND artifact_id = ?2
             RETURNING {META_COLUMNS}"
        ))?
        .query_row(params![scope, artifact_id, expires_at], meta_from_row)
        .optional()?
        .map(finish_meta)
        .transpose()
    }

    fn artifact_key_owner(
        tx: &rusqlite::Connection,
        scope: &str,
        key: &str,
    ) -> Result<Option<String>> {
        Ok(tx
            .prepare_cached(
                "SELECT artifact_id FROM artifacts WHERE scope = ?1 AND idempotency_key = ?2",
            )?
            .query_row([scope, key], |row| row.get(0))
            .optional()?)
    }
}

impl ArtifactStore for SqliteStore {
    fn put_artifact(&self, artifact: &NewArtifact, now: Millis) -> Result<ArtifactMeta> {
        alone!(self, Operation::PutArtifact { artifact: artifact.clone(), now }, Done::PutArtifact { artifact } => artifact);
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
        let tx = self.write_tx()?;
        if let Some(stored) =
            Self::extend_artifact(&tx, &meta.scope, &meta.artifact_id, meta.expires_at)?
        {
            tx.commit()?;
            return Ok(stored);
        }
        if let Some(key) = &meta.idempotency_key {
            if let Some(owner) = Self::artifact_key_owner(&tx, &meta.scope, key)? {
                return Err(Error::IdempotencyConflict {
                    entity: "artifact",
                    id: meta.artifact_id,
                    key: key.clone(),
                    owner,
                });
            }
        }
        tx.prepare_cached(&format!(
            "INSERT INTO artifacts ({META_COLUMNS}, bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ))?
        .execute(params![
            meta.scope,
            meta.artifact_id,
            meta.media_type,
            meta.name,
            to_sql_int("sizeBytes", meta.size_bytes)?,
            meta.sha256,
            meta.idempotency_key,
            meta.created_at,
            meta.expires_at,
            artifact.bytes
        ])?;
        tx.commit()?;
        Ok(meta)
    }

    fn get_artifact(&self, scope: &str, artifact_id: &str) -> Result<Artifact> {
        check_id("scope", scope)?;
        check_id("artifactId", artifact_id)?;
        let row = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {META_COLUMNS}, bytes FROM artifacts WHERE scope = ?1 AND artifact_id = ?2"
            ))?
            .query_row([scope, artifact_id], |row| {
                Ok((meta_from_row(row)?, row.get::<_, Vec<u8>>(9)?))
            })
            .optional()?;
        let (meta, bytes) = row.ok_or_else(|| {
            Error::not_found("artifact", format!("{artifact_id} of scope {scope}"))
        })?;
        let meta = finish_meta(meta)?;
        verify(&meta, &bytes)?;
        Ok(Artifact { meta, bytes })
    }

    fn list_artifacts(&self, scope: &str, page: &PageRequest) -> Result<Page<ArtifactMeta>> {
        check_id("scope", scope)?;
        ARTIFACTS.read(
            self.conn(),
            &format!("SELECT {META_COLUMNS} FROM artifacts WHERE scope = ?"),
            vec![paging::text(scope)],
            page,
            |row| finish_meta(meta_from_row(row)?),
            |meta| {
                vec![
                    SqlValue::Integer(meta.created_at),
                    paging::text(&meta.artifact_id),
                ]
            },
        )
    }

    fn delete_artifact(&self, scope: &str, artifact_id: &str) -> Result<bool> {
        alone!(self, Operation::DeleteArtifact { scope: scope.to_owned(), artifact_id: artifact_id.to_owned() }, Done::DeleteArtifact { deleted } => deleted);
        check_id("scope", scope)?;
        check_id("artifactId", artifact_id)?;
        let deleted = self.delete_with_room(|| {
            Ok(self
                .conn()
                .prepare_cached("DELETE FROM artifacts WHERE scope = ?1 AND artifact_id = ?2")?
                .execute([scope, artifact_id])?)
        })?;
        if deleted > 0 {
            self.release_space();
        }
        Ok(deleted > 0)
    }

    fn purge_expired_artifacts(&self, now: Millis) -> Result<u64> {
        alone!(self, Operation::PurgeExpiredArtifacts { now }, Done::PurgeExpiredArtifacts { purged } => purged);
        let purged = self.delete_with_room(|| {
            Ok(self
                .conn()
                .prepare_cached("DELETE FROM artifacts WHERE expires_at <= ?1")?
                .execute([now])?)
        })?;
        if purged > 0 {
            self.release_space();
        }
        Ok(purged as u64)
    }
}

/// A scope's artifacts, oldest first.
const ARTIFACTS: Listing = Listing {
    name: "artifacts",
    key: "created_at, artifact_id",
    key_len: 2,
};
