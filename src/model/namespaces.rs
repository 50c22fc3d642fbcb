//! The namespace registry: a namespace comes into being on first use, is listed and placed,
//! and is retired by deprecation rather than deleted, so its history is never orphaned.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// How a namespace came to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NamespaceOrigin {
    /// A worker registered for a namespace not seen before.
    Worker,
    /// A workflow start named a namespace not seen before.
    Start,
    /// An operator created it.
    Explicit,
    /// Back-filled because durable state existed without a registry record.
    Inferred,
}

impl NamespaceOrigin {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::Start => "start",
            Self::Explicit => "explicit",
            Self::Inferred => "inferred",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Worker, Self::Start, Self::Explicit, Self::Inferred]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// The lifecycle of a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NamespaceState {
    /// In service.
    Active,
    /// Retired: no new work should target it; its records and history stay.
    Deprecated,
}

impl NamespaceState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Deprecated => "deprecated",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Active, Self::Deprecated]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceRecord {
    /// The key, free-form.
    pub name: String,
    pub origin: NamespaceOrigin,
    pub state: NamespaceState,
    /// The engine's placement directive (node or shard affinity), stored as given; `None`
    /// (JSON `null`) when unplaced.
    #[serde(default)]
    pub placement: Option<serde_json::Value>,
    /// When it was first registered.
    pub created_at: Millis,
    /// The latest time it was referenced; never before `created_at`.
    pub last_seen: Millis,
}

/// What a registration or an explicit upsert found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RegisterOutcome {
    /// This call created the namespace.
    Created,
    /// The namespace existed already.
    Existed,
}

/// The namespace registry.
pub trait NamespaceStore {
    /// Registers `name` on first use, idempotently: when absent it is created active, with
    /// `origin`, no placement and `created_at = last_seen = now`; when present only `last_seen`
    /// moves to `now` (never backwards) and origin, state and placement stay, so registering a
    /// deprecated namespace does not revive it. Atomic: one transaction.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized name.
    fn register_namespace(
        &self,
        name: &str,
        origin: NamespaceOrigin,
        now: Millis,
    ) -> Result<RegisterOutcome>;

    /// Writes `record` as given, creating or wholly replacing the namespace of its name: a
    /// later [`NamespaceStore::get_namespace`] returns exactly `record`. A JSON `null`
    /// placement is stored as `None`. Atomic: one transaction.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for an empty or oversized name, `last_seen` before
    /// `created_at`, or an oversized placement; nothing is written then.
    fn put_namespace(&self, record: &NamespaceRecord) -> Result<RegisterOutcome>;

    /// The namespace, `None` when there is none.
    fn get_namespace(&self, name: &str) -> Result<Option<NamespaceRecord>>;

    /// A page of the namespaces, oldest `created_at` first, name breaking ties.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_namespaces(&self, page: &PageRequest) -> Result<Page<NamespaceRecord>>;

    /// Replaces the placement of an existing namespace; a JSON `null` clears it. Leaves every
    /// other field alone.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown namespace; [`crate::Error::InvalidInput`] for
    /// an oversized placement.
    fn set_namespace_placement(&self, name: &str, placement: &serde_json::Value) -> Result<()>;

    /// Moves an active namespace to deprecated. Idempotent, so that a retried command is
    /// harmless: deprecating a deprecated namespace succeeds and changes nothing. Returns
    /// whether this call changed the state.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown namespace.
    fn deprecate_namespace(&self, name: &str) -> Result<bool>;
}
