//! Domain types and store traits, one module per area. No SQL and no wasm here: the traits
//! state the contract every implementation keeps; [`crate::SqliteStore`] implements them all.
//!
//! Conventions: times are milliseconds since the Unix epoch (`i64`), as `Date.now()` gives
//! them; byte payloads are `Vec<u8>` (a `Uint8Array` in JS); JSON payloads are
//! `serde_json::Value`; every struct is camelCase when serialised.

pub mod artifacts;
pub mod checkpoints;
pub mod conversations;
pub mod effects;
pub mod journal;
pub mod namespaces;
pub mod outbox;
pub mod packages;
pub mod run_journal;
pub mod steps;
pub mod timers;
pub mod visibility;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;
