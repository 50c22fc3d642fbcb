//! SQL of the side-effect ledger (table `effects`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::paging::{self, Listing};

use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int};
use crate::backend::effects::{check_update, encode, target, Encoded, Stored};
use crate::backend::revisions::conflict;
use crate::error::{Error, Result};
use crate::model::effects::*;
use crate::model::{Page, PageRequest};

const COLUMNS: &str = "effect_id, capability_id, idempotency_key, revision, status, request,
     output, error, updated_at";

/// A stored row with its JSON still encoded, decoded outside the row callback so that a
/// decoding failure keeps its own error.
struct RawRecord {
    effect_id: String,
    capability_id: String,
    idempotency_key: Option<String>,
    revision: i64,
    status: String,
    request: String,
    output: Option<String>,
    error: Option<String>,
    updated_at: i64,
}

fn raw_from_row(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
    Ok(RawRecord {
        effect_id: row.get(0)?,
        capability_id: row.get(1)?,
        idempotency_key: row.get(2)?,
        revision: row.get(3)?,
        status: row.get(4)?,
        request: row.get(5)?,
        output: row.get(6)?,
        error: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

fn decode(raw: RawRecord) -> Result<EffectRecord> {
    let status = decode_status(&raw)?;
    Ok(EffectRecord {
        revision: from_sql_int("revision", raw.revision)?,
        request: serde_json::from_str(&raw.request)?,
        status,
        effect_id: raw.effect_id,
        capability_id: raw.capability_id,
        idempotency_key: raw.idempotency_key,
        updated_at: raw.updated_at,
    })
}

fn decode_status(raw: &RawRecord) -> Result<EffectStatus> {
    let corrupt = || Error::Corrupt {
        message: format!(
            "effect {} has status {} with output {:?} and error {:?}",
            raw.effect_id, raw.status, raw.output, raw.error
        ),
    };
    let kind = EffectStatusKind::parse(&raw.status).ok_or_else(corrupt)?;
    Ok(match (kind, &raw.output, &raw.error) {
        (EffectStatusKind::Prepared, None, None) => EffectStatus::Prepared,
        (EffectStatusKind::Started, None, None) => EffectStatus::Started,
        (EffectStatusKind::OutcomeUnknown, None, None) => EffectStatus::OutcomeUnknown,
        (EffectStatusKind::Completed, Some(output), None) => EffectStatus::Completed {
            output: serde_json::from_str(output)?,
        },
        (EffectStatusKind::Failed, None, Some(error)) => EffectStatus::Failed {
            error: error.clone(),
        },
        _ => return Err(corrupt()),
    })
}

fn read_stored(tx: &Connection, effect_id: &str) -> Result<Option<Stored>> {
    let row = tx
        .prepare_cached(
            "SELECT revision, status, capability_id, idempotency_key FROM effects
             WHERE effect_id = ?1",
        )?
        .query_row([effect_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get(2)?,
                row.get(3)?,
            ))
        })
        .optional()?;
    let Some((revision, status, capability_id, idempotency_key)) = row else {
        return Ok(None);
    };
    Ok(Some(Stored {
        revision: from_sql_int("revision", revision)?,
        status: EffectStatusKind::parse(&status).ok_or_else(|| Error::Corrupt {
            message: format!("effect {effect_id} has unknown status {status}"),
        })?,
        capability_id,
        idempotency_key,
    }))
}

impl SqliteStore {
    fn create_effect(&self, record: &EffectRecord, encoded: &Encoded<'_>) -> Result<()> {
        let tx = self.write_tx()?;
        let inserted = tx
            .prepare_cached(&format!(
                "INSERT INTO effects ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT DO NOTHING"
            ))?
            .execute(params![
                record.effect_id,
                record.capability_id,
                record.idempotency_key,
                encoded.revision,
                encoded.status,
                encoded.request,
                encoded.output,
                encoded.error,
                record.updated_at
            ])?;
        if inserted == 1 {
            tx.commit()?;
            return Ok(());
        }
        // Either the effect id or the (capability, key) pair is taken; the id wins.
        if let Some(stored) = read_stored(&tx, &record.effect_id)? {
            let target = target(&record.effect_id);
            return Err(conflict(&target, None, Some(stored.revision)));
        }
        match (&record.idempotency_key, Self::key_owner(&tx, record)?) {
            (Some(key), Some(owner)) => Err(Error::IdempotencyConflict {
                entity: "effect",
                id: record.effect_id.clone(),
                key: key.clone(),
                owner,
            }),
            _ => Err(Error::Backend {
                message: format!(
                    "insert of effect {} was ignored, yet no row holds its id or key",
                    record.effect_id
                ),
            }),
        }
    }

    fn key_owner(tx: &Connection, record: &EffectRecord) -> Result<Option<String>> {
        Ok(tx
            .prepare_cached(
                "SELECT effect_id FROM effects WHERE capability_id = ?1 AND idempotency_key = ?2",
            )?
            .query_row(
                params![record.capability_id, record.idempotency_key],
                |row| row.get(0),
            )
            .optional()?)
    }

    fn update_effect(
        &self,
        record: &EffectRecord,
        encoded: &Encoded<'_>,
        expected: u64,
    ) -> Result<()> {
        let tx = self.write_tx()?;
        check_update(record, expected, read_stored(&tx, &record.effect_id)?)?;
        // Capability and key are unchanged (checked above), so no uniqueness can fail here.
        tx.prepare_cached(
            "UPDATE effects SET revision = ?2, status = ?3, request = ?4, output = ?5,
               error = ?6, updated_at = ?7
             WHERE effect_id = ?1",
        )?
        .execute(params![
            record.effect_id,
            encoded.revision,
            encoded.status,
            encoded.request,
            encoded.output,
            encoded.error,
            record.updated_at
        ])?;
        tx.commit()?;
        Ok(())
    }

    /// The records matching `condition`, ordered and limited by `tail` (SQL text of this
    /// module over bound parameters).
    fn query_effects(
        &self,
        condition: &str,
        tail: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<EffectRecord>> {
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT {COLUMNS} FROM effects WHERE {condition} {tail}"
        ))?;
        let rows = stmt.query_map(params, raw_from_row)?;
        rows.map(|raw| decode(raw?)).collect()
    }
}

impl EffectStore for SqliteStore {
    fn load_effect(&self, effect_id: &str) -> Result<Option<EffectRecord>> {
        check_id("effectId", effect_id)?;
        Ok(self.query_effects("effect_id = ?1", "", [effect_id])?.pop())
    }

    fn find_effect(
        &self,
        capability_id: &str,
        idempotency_key: &str,
    ) -> Result<Option<EffectRecord>> {
        check_id("capabilityId", capability_id)?;
        check_id("idempotencyKey", idempotency_key)?;
        Ok(self
            .query_effects(
                "capability_id = ?1 AND idempotency_key = ?2",
                "",
                [capability_id, idempotency_key],
            )?
            .pop())
    }

    fn compare_and_swap_effect(
        &self,
        record: &EffectRecord,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        alone!(self, Operation::CompareAndSwapEffect { record: record.clone(), expected_revision }, Done::CompareAndSwapEffect { .. } => ());
        let encoded = encode(record, expected_revision)?;
        match expected_revision {
            None => self.create_effect(record, &encoded),
            Some(expected) => self.update_effect(record, &encoded, expected),
        }
    }

    fn list_unresolved_effects(&self, page: &PageRequest) -> Result<Page<EffectRecord>> {
        UNRESOLVED.read(
            self.conn(),
            &format!("SELECT {COLUMNS} FROM effects WHERE status IN ('started', 'outcomeUnknown')"),
            Vec::new(),
            page,
            |row| decode(raw_from_row(row)?),
            |effect| {
                vec![
                    SqlValue::Integer(effect.updated_at),
                    paging::text(&effect.effect_id),
                ]
            },
        )
    }

    fn list_effects(
        &self,
        status: Option<EffectStatusKind>,
        page: &PageRequest,
    ) -> Result<Page<EffectRecord>> {
        EFFECTS.read(
            self.conn(),
            &format!("SELECT {COLUMNS} FROM effects WHERE (?1 IS NULL OR status = ?1)"),
            vec![status.map_or(SqlValue::Null, |s| paging::text(s.as_str()))],
            page,
            |row| decode(raw_from_row(row)?),
            |effect| vec![paging::text(&effect.effect_id)],
        )
    }
}

/// Unresolved effects, oldest update first.
const UNRESOLVED: Listing = Listing {
    name: "unresolvedEffects",
    key: "updated_at, effect_id",
    key_len: 2,
};

/// Effects by id.
const EFFECTS: Listing = Listing {
    name: "effects",
    key: "effect_id",
    key_len: 1,
};
