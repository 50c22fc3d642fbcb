//! Pages bounded by bytes as well as by count ([`PageBound`]).

use crate::error::{Error, Result};
use crate::model::sync::PageBound;
use crate::model::MAX_PAGE_LIMIT;

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

#[cfg(test)]
mod tests {
    use super::fitting;

    #[test]
    fn a_page_holds_what_fits_and_at_least_one_item() {
        assert_eq!(fitting([], 10), 0);
        assert_eq!(fitting([50], 10), 1);
        assert_eq!(fitting([4, 4, 4], 10), 2);
        assert_eq!(fitting([4, 6, 1], 10), 2);
        assert_eq!(fitting([3, 3, 3], 10), 3);
    }
}
