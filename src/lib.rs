//! runstore: a durable store for workflow and agent-run state on SQLite, the same code natively
//! and in the browser (wasm32, persisted in OPFS).
//!
//! ```
//! use runstore::{Event, EventJournal, EventKind, SqliteStore};
//!
//! let store = SqliteStore::open_in_memory()?;
//! let started = Event {
//!     kind: EventKind::Started { workflow_type: "order".into(), run_id: "r1".into() },
//!     recorded_at: 1_700_000_000_000,
//!     data: serde_json::json!({"order": 42}),
//! };
//! assert_eq!(store.append("order-42", &[started], 0)?, 1);
//!
//! // A writer that read a stale head is refused, with both heads named.
//! let err = store.append("order-42", &[], 0).unwrap_err();
//! assert_eq!(err.code(), "SEQUENCE_CONFLICT");
//! # Ok::<(), runstore::Error>(())
//! ```

/// The Rust example of docs/servers.md, compiled with the doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/servers.md")]
pub struct DocsDoctests;

mod backend;
pub mod error;
pub mod model;
#[cfg(all(feature = "postgres", not(target_family = "wasm")))]
mod postgres;
#[cfg(all(feature = "server", not(target_family = "wasm")))]
pub mod server;
mod sqlite;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod wasm;

#[cfg(all(feature = "postgres", not(target_family = "wasm")))]
pub use self::postgres::{PgOptions, PgStore, PG_SCHEMA_VERSION};
pub use backend::checks::{MAX_BLOB_BYTES, MAX_DOCUMENT_BYTES, MAX_ID_BYTES, MAX_JSON_DEPTH};
pub use error::{Error, Result};
pub use model::artifacts::*;
pub use model::checkpoints::*;
pub use model::conversations::*;
pub use model::effects::*;
pub use model::journal::*;
pub use model::leases::*;
pub use model::namespaces::*;
pub use model::outbox::*;
pub use model::packages::*;
pub use model::retention::*;
pub use model::run_journal::*;
pub use model::steps::*;
pub use model::sync::*;
pub use model::timers::*;
pub use model::visibility::*;
pub use model::{Millis, Page, PageRequest, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};
pub use sqlite::{
    Durability, EncryptProgress, ImportOutcome, Key, Medium, SqliteStore, KEPT_CHANGES,
    SCHEMA_VERSION,
};
