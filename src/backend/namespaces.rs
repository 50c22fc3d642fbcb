//! Namespaces' rules, whatever the backend.

use super::checks::encode_document;
use crate::error::Result;

/// Encodes a placement for its nullable column: JSON `null` means none.
pub(crate) fn encode_placement(
    field: &str,
    placement: Option<&serde_json::Value>,
) -> Result<Option<String>> {
    let Some(placement) = placement.filter(|p| !p.is_null()) else {
        return Ok(None);
    };
    encode_document(field, placement).map(Some)
}
