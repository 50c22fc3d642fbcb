//! The side-effect ledger's rules, whatever the backend: a record's checks and columns, and
//! which updates the stored effect allows.

use super::checks::{check_id, check_size, encode_document, MAX_DOCUMENT_BYTES};
use super::revisions::{conflict, next_revision, Target};
use crate::error::{Error, Result};
use crate::model::effects::*;

/// A record's columns as stored: the status split into its kind and its outcome columns.
pub(crate) struct Encoded<'a> {
    pub(crate) revision: i64,
    pub(crate) status: &'static str,
    pub(crate) request: String,
    pub(crate) output: Option<String>,
    pub(crate) error: Option<&'a str>,
}

/// Checks a record and encodes its columns, before any lock is taken.
pub(crate) fn encode(record: &EffectRecord, expected: Option<u64>) -> Result<Encoded<'_>> {
    let revision = next_revision(record.revision, expected)?;
    check_id("effectId", &record.effect_id)?;
    check_id("capabilityId", &record.capability_id)?;
    if let Some(key) = &record.idempotency_key {
        check_id("idempotencyKey", key)?;
    }
    let request = encode_document("request", &record.request)?;
    let (output, error) = match &record.status {
        EffectStatus::Completed { output } => {
            (Some(encode_document("status.output", output)?), None)
        }
        EffectStatus::Failed { error } => {
            check_size("status.error", error.len(), MAX_DOCUMENT_BYTES)?;
            (None, Some(error.as_str()))
        }
        _ => (None, None),
    };
    Ok(Encoded {
        revision,
        status: record.status.kind().as_str(),
        request,
        output,
        error,
    })
}

pub(crate) fn target(effect_id: &str) -> Target<'_> {
    Target {
        table: "effects",
        key_column: "effect_id",
        entity: "effect",
        id: effect_id,
    }
}

/// What an update is checked against: the stored revision, status and identity.
pub(crate) struct Stored {
    pub(crate) revision: u64,
    pub(crate) status: EffectStatusKind,
    pub(crate) capability_id: String,
    pub(crate) idempotency_key: Option<String>,
}

/// Refuses an update the stored effect does not allow: another revision, another identity,
/// or a status it may not become.
pub(crate) fn check_update(
    record: &EffectRecord,
    expected: u64,
    stored: Option<Stored>,
) -> Result<()> {
    let target = target(&record.effect_id);
    let Some(stored) = stored else {
        return Err(conflict(&target, Some(expected), None));
    };
    if stored.revision != expected {
        return Err(conflict(&target, Some(expected), Some(stored.revision)));
    }
    if stored.capability_id != record.capability_id {
        return Err(Error::invalid(
            "capabilityId",
            format!(
                "effect {} belongs to capability {}; it cannot change to {}",
                record.effect_id, stored.capability_id, record.capability_id
            ),
        ));
    }
    if stored.idempotency_key != record.idempotency_key {
        return Err(Error::invalid(
            "idempotencyKey",
            format!(
                "effect {} holds key {:?}; it cannot change to {:?}",
                record.effect_id, stored.idempotency_key, record.idempotency_key
            ),
        ));
    }
    if !stored.status.can_become(record.status.kind()) {
        return Err(conflict(&target, Some(expected), Some(stored.revision)));
    }
    Ok(())
}
