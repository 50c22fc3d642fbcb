//! Paging, whatever the backend: cursors (a position in a listing's order, opaque to callers),
//! page limits, and pages bounded by bytes as well as by count ([`PageBound`]).

use super::checks::MAX_ID_BYTES;
use crate::error::{Error, Result};
use crate::model::sync::PageBound;
use crate::model::{PageRequest, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};

/// Refuses a bound that lets no item through, or too many.
///
/// # Errors
/// [`Error::InvalidInput`] (field `limit`) for a limit of 0 or above [`MAX_PAGE_LIMIT`].
pub(crate) fn check_bound(bound: PageBound) -> Result<()> {
    if bound.limit == 0 || bound.limit > MAX_PAGE_LIMIT {
        return Err(Error::invalid(
            "limit",
            format!("{} is not between 1 and {MAX_PAGE_LIMIT}", bound.limit),
        ));
    }
    Ok(())
}

/// How many of the items, of these sizes in bytes and in order, one page holds: as many as fit
/// in `max_bytes` together, and at least the first, so that a reader always moves on.
pub(crate) fn fitting(sizes: impl IntoIterator<Item = u64>, max_bytes: u64) -> usize {
    let mut total = 0u64;
    let mut count = 0;
    for size in sizes {
        total = total.saturating_add(size);
        if count > 0 && total > max_bytes {
            break;
        }
        count += 1;
    }
    count
}

/// The longest cursor accepted, in characters: a few ids of at most `MAX_ID_BYTES`, JSON
/// escaped (up to 6 bytes per byte) and hex encoded, with room to spare.
const MAX_CURSOR_CHARS: usize = 2 * 4 * 6 * MAX_ID_BYTES;

/// A cursor's text: the listing's name and its key values as a JSON array, hex-encoded so that
/// it reads as one opaque token. Shared by every store's listings.
pub(crate) fn cursor_text(name: &str, key: impl IntoIterator<Item = serde_json::Value>) -> String {
    let mut fields = vec![serde_json::Value::from(name)];
    fields.extend(key);
    let text = serde_json::Value::Array(fields).to_string();
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The `key_len` key values of a cursor [`cursor_text`] made for the listing `name`; anything
/// else is `INVALID_INPUT` (field `page.cursor`).
pub(crate) fn cursor_key(
    name: &str,
    key_len: usize,
    cursor: &str,
) -> Result<Vec<serde_json::Value>> {
    if cursor.len() > MAX_CURSOR_CHARS || !cursor.len().is_multiple_of(2) {
        return Err(malformed_cursor(name));
    }
    let bytes = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| malformed_cursor(name))?;
    let mut fields: Vec<serde_json::Value> =
        serde_json::from_slice(&bytes).map_err(|_| malformed_cursor(name))?;
    match fields.first() {
        Some(first) if first == name && fields.len() == key_len + 1 => {
            fields.remove(0);
            Ok(fields)
        }
        _ => Err(malformed_cursor(name)),
    }
}

/// The error for a cursor that the listing `name` did not make.
pub(crate) fn malformed_cursor(name: &str) -> Error {
    Error::invalid(
        "page.cursor",
        format!("is not a cursor of the {name} listing"),
    )
}

/// The page size a request asks for, checked.
///
/// # Errors
/// [`Error::InvalidInput`] (field `page.limit`) for 0 or more than [`MAX_PAGE_LIMIT`].
pub(crate) fn page_limit(page: &PageRequest) -> Result<u32> {
    checked_limit("page.limit", page.limit.unwrap_or(DEFAULT_PAGE_LIMIT))
}

/// A batch size of 1 to [`MAX_PAGE_LIMIT`], named `field` when it is not.
pub(crate) fn checked_limit(field: &str, limit: u32) -> Result<u32> {
    match limit {
        0 => Err(Error::invalid(field, "must be at least 1")),
        n if n > MAX_PAGE_LIMIT => Err(Error::invalid(
            field,
            format!("is {n}; the largest page is {MAX_PAGE_LIMIT}"),
        )),
        n => Ok(n),
    }
}
#[cfg(test)]
mod tests {
    use super::{fitting, page_limit};
    use crate::model::{PageRequest, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};

    #[test]
    fn limits_outside_the_range_are_refused() {
        assert_eq!(
            page_limit(&PageRequest::default()).unwrap(),
            DEFAULT_PAGE_LIMIT
        );
        assert_eq!(
            page_limit(&PageRequest::first(MAX_PAGE_LIMIT)).unwrap(),
            MAX_PAGE_LIMIT
        );
        for bad in [0, MAX_PAGE_LIMIT + 1, u32::MAX] {
            let error = page_limit(&PageRequest::first(bad)).unwrap_err();
            assert_eq!(error.code(), "INVALID_INPUT");
            assert!(error.to_string().contains("limit"), "{error}");
        }
    }

    #[test]
    fn a_page_holds_what_fits_and_at_least_one_item() {
        assert_eq!(fitting([], 10), 0);
        assert_eq!(fitting([50], 10), 1);
        assert_eq!(fitting([4, 4, 4], 10), 2);
        assert_eq!(fitting([4, 6, 1], 10), 2);
        assert_eq!(fitting([3, 3, 3], 10), 3);
    }
}
