//! Domain types and store traits, one module per area. No SQL and no wasm here: the traits
//! state the contract every implementation keeps; [`crate::SqliteStore`] implements them all.
//!
//! Conventions: times are milliseconds since the Unix epoch (`i64`), as `Date.now()` gives
//! them; byte payloads are `Vec<u8>` (a `Uint8Array` in JS); JSON payloads are
//! `serde_json::Value`; every struct is camelCase when serialised. Every method, reads and
//! deletes included, refuses an empty or overlong identifier and a malformed content hash with
//! [`crate::Error::InvalidInput`] naming the parameter, before it touches the database.

pub mod artifacts;
pub(crate) mod bytes;
pub mod changes;
pub mod checkpoints;
pub mod conversations;
pub mod effects;
pub(crate) mod fields;
pub mod journal;
pub mod leases;
pub mod namespaces;
pub mod outbox;
pub mod packages;
pub mod retention;
pub mod run_journal;
pub mod steps;
pub mod sync;
pub mod timers;
pub mod visibility;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// Which page of a listing to read: at most `limit` items (default [`DEFAULT_PAGE_LIMIT`]),
/// starting after `cursor` (from the start when `None`).
///
/// Every listing of the store is paged this way, so no call returns an unbounded amount.
/// A cursor is a position in the listing's order, opaque to the caller: pass back the
/// `next_cursor` of the previous page, to the same listing with the same arguments. It stays
/// valid across writes; paging to the end yields every item exactly once while nothing is
/// written, and an item written meanwhile appears if it sorts after the cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PageRequest {
    /// 1..=[`MAX_PAGE_LIMIT`]; anything else is `INVALID_INPUT` (field `page.limit`).
    pub limit: Option<u32>,
    /// A `next_cursor` this listing returned; anything else is `INVALID_INPUT` (field `page.cursor`).
    pub cursor: Option<String>,
}

impl PageRequest {
    /// The first page of at most `limit` items.
    pub fn first(limit: u32) -> Self {
        Self {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// The page after `cursor`, of at most `limit` items.
    pub fn after(limit: u32, cursor: impl Into<String>) -> Self {
        Self {
            limit: Some(limit),
            cursor: Some(cursor.into()),
        }
    }
}

/// One page of a listing: its `items` in the listing's order, and the cursor of the next page
/// (`None` when this page is the last).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// The page size when a [`PageRequest`] names none. A history of up to this many events is
/// read in one call.
pub const DEFAULT_PAGE_LIMIT: u32 = 1000;

/// The largest page a caller may ask for. A larger `limit` is refused rather than clamped:
/// a caller that asked for more learns at once that it must page.
pub const MAX_PAGE_LIMIT: u32 = 10_000;
