//! SQL of the side-effect ledger (table `effects`) on PostgreSQL.

use postgres::Row;

use super::session::{Sql, Tx};

use super::paging::{col, Key, KeyKind, Listing, Param};
use super::{to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::effects::{check_update, encode, Encoded, Stored};
use crate::backend::revisions::{conflict, Target};
use crate::error::{Error, Result};
use crate::model::effects::*;
use crate::model::{Page, PageRequest};

const COLUMNS: &str = "effect_id, capability_id, idempotency_key, revision, status, request,
     output, error, updated_at";

fn decode(row: &Row) -> Result<EffectRecord> {
    let effect_id: String = col(row, 0)?;
    let status: String = col(row, 4)?;
    let request: String = col(row, 5)?;
    let output: Option<String> = col(row, 6)?;
    let error: Option<String> = col(row, 7)?;
    let corrupt = || Error::Corrupt {
        message: format!(
            "effect {effect_id} has status {status} with output {output:?} and error {error:?}"
        ),
    };
    let kind = EffectStatusKind::parse(&status).ok_or_else(corrupt)?;
    let status = match (kind, &output, &error) {
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
    };
    Ok(EffectRecord {
        capability_id: col(row, 1)?,
        idempotency_key: col(row, 2)?,
        revision: to_u64("revision", col(row, 3)?)?,
        request: serde_json::from_str(&request)?,
        status,
        updated_at: col(row, 8)?,
        effect_id,
    })
}

fn target(effect_id: &str) -> Target<'_> {
    Target {
        table: "effects",
        key_column: "effect_id",
        entity: "effect",
        id: effect_id,
    }
}

/// The stored revision, status and identity, locked for the update that follows.
fn read_stored(tx: &mut Tx<'_>, effect_id: &str) -> Result<Option<Stored>> {
    let Some(row) = tx.query_opt(
        "SELECT revision, status, capability_id, idempotency_key FROM effects
         WHERE effect_id = $1 FOR UPDATE",
        &[&effect_id],
    )?
    else {
        return Ok(None);
    };
    let status: String = col(&row, 1)?;
    Ok(Some(Stored {
        revision: to_u64("revision", col(&row, 0)?)?,
        status: EffectStatusKind::parse(&status).ok_or_else(|| Error::Corrupt {
            message: format!("effect {effect_id} has unknown status {status}"),
        })?,
        capability_id: col(&row, 2)?,
        idempotency_key: col(&row, 3)?,
    }))
}

fn create(tx: &mut Tx<'_>, record: &EffectRecord, encoded: &Encoded<'_>) -> Result<()> {
    let inserted = tx.execute(
        &format!(
            "INSERT INTO effects ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT DO NOTHING"
        ),
        &[
            &record.effect_id,
            &record.capability_id,
            &record.idempotency_key,
            &encoded.revision,
            &encoded.status,
            &encoded.request,
            &encoded.output,
            &encoded.error,
            &record.updated_at,
        ],
    )?;
    if inserted == 1 {
        return Ok(());
    }
    // Either the effect id or the (capability, key) pair is taken; the id wins.
    if let Some(stored) = read_stored(tx, &record.effect_id)? {
        return Err(conflict(
            &target(&record.effect_id),
            None,
            Some(stored.revision),
        ));
    }
    let owner = tx.query_opt(
        "SELECT effect_id FROM effects WHERE capability_id = $1 AND idempotency_key = $2",
        &[&record.capability_id, &record.idempotency_key],
    )?;
    match (&record.idempotency_key, owner) {
        (Some(key), Some(owner)) => Err(Error::IdempotencyConflict {
            entity: "effect",
            id: record.effect_id.clone(),
            key: key.clone(),
            owner: col(&owner, 0)?,
        }),
        _ => Err(Error::Backend {
            message: format!(
                "insert of effect {} was ignored, yet no row holds its id or key",
                record.effect_id
            ),
        }),
    }
}

fn update(
    tx: &mut Tx<'_>,
    record: &EffectRecord,
    encoded: &Encoded<'_>,
    expected: u64,
) -> Result<()> {
    let stored = read_stored(tx, &record.effect_id)?;
    check_update(record, expected, stored)?;
    tx.execute(
        "UPDATE effects SET revision = $2, status = $3, request = $4, output = $5,
           error = $6, updated_at = $7
         WHERE effect_id = $1",
        &[
            &record.effect_id,
            &encoded.revision,
            &encoded.status,
            &encoded.request,
            &encoded.output,
            &encoded.error,
            &record.updated_at,
        ],
    )?;
    Ok(())
}

pub(super) fn compare_and_swap_in(
    tx: &mut Tx<'_>,
    record: &EffectRecord,
    expected_revision: Option<u64>,
) -> Result<()> {
    let encoded = encode(record, expected_revision)?;
    match expected_revision {
        None => create(tx, record, &encoded),
        Some(expected) => update(tx, record, &encoded, expected),
    }
}

fn query_one_effect(
    client: &mut impl Sql,
    condition: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> Result<Option<EffectRecord>> {
    client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM effects WHERE {condition}"),
            params,
        )?
        .map(|row| decode(&row))
        .transpose()
}

impl EffectStore for PgStore {
    fn load_effect(&self, effect_id: &str) -> Result<Option<EffectRecord>> {
        check_id("effectId", effect_id)?;
        self.read(|client| query_one_effect(client, "effect_id = $1", &[&effect_id]))
    }

    fn find_effect(
        &self,
        capability_id: &str,
        idempotency_key: &str,
    ) -> Result<Option<EffectRecord>> {
        check_id("capabilityId", capability_id)?;
        check_id("idempotencyKey", idempotency_key)?;
        self.read(|client| {
            query_one_effect(
                client,
                "capability_id = $1 AND idempotency_key = $2",
                &[&capability_id, &idempotency_key],
            )
        })
    }

    fn compare_and_swap_effect(
        &self,
        record: &EffectRecord,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        encode(record, expected_revision)?;
        self.write(|tx| compare_and_swap_in(tx, record, expected_revision))
    }

    fn list_unresolved_effects(&self, page: &PageRequest) -> Result<Page<EffectRecord>> {
        self.read(|client| {
            UNRESOLVED.read(
                client,
                &format!(
                    "SELECT {COLUMNS} FROM effects WHERE status IN ('started', 'outcomeUnknown')"
                ),
                Vec::new(),
                page,
                decode,
                |effect| vec![Key::Int(effect.updated_at), Key::text(&effect.effect_id)],
            )
        })
    }

    fn list_effects(
        &self,
        status: Option<EffectStatusKind>,
        page: &PageRequest,
    ) -> Result<Page<EffectRecord>> {
        let status: Param = Box::new(status.map(|s| s.as_str().to_owned()));
        self.read(|client| {
            EFFECTS.read(
                client,
                &format!("SELECT {COLUMNS} FROM effects WHERE ($1::text IS NULL OR status = $1)"),
                vec![status],
                page,
                decode,
                |effect| vec![Key::text(&effect.effect_id)],
            )
        })
    }
}

/// Unresolved effects, oldest update first.
const UNRESOLVED: Listing = Listing {
    name: "unresolvedEffects",
    key: "updated_at, effect_id",
    kinds: &[KeyKind::Int, KeyKind::Text],
};

/// Effects by id.
const EFFECTS: Listing = Listing {
    name: "effects",
    key: "effect_id",
    kinds: &[KeyKind::Text],
};
