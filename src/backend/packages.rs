//! Packages' rules, whatever the backend: a content hash's form and a record's checks.

use super::checks::{check_id, check_size, MAX_BLOB_BYTES};
use crate::error::{Error, Result};
use crate::model::packages::*;

pub(crate) fn check_hash(field: &str, hash: &str) -> Result<()> {
    let digits = MIN_HASH_HEX_DIGITS..=MAX_HASH_HEX_DIGITS;
    if !digits.contains(&hash.len()) {
        return Err(Error::invalid(
            field,
            format!(
                "is {} characters long; a content hash has {MIN_HASH_HEX_DIGITS} to \
                 {MAX_HASH_HEX_DIGITS} hex digits",
                hash.len()
            ),
        ));
    }
    if let Some(bad) = hash.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(Error::invalid(
            field,
            format!("contains {bad:?}; a content hash is lowercase hex"),
        ));
    }
    Ok(())
}

pub(crate) fn check_record(record: &PackageRecord) -> Result<()> {
    check_id("workflowType", &record.workflow_type)?;
    check_hash("contentHash", &record.content_hash)?;
    check_size("archive", record.archive.len(), MAX_BLOB_BYTES)
}
