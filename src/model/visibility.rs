//! The visibility index: one searchable record per workflow, listed and counted with a typed
//! filter, newest start first, paged by an opaque cursor.
//!
//! Filters are data. The store turns each field into a fixed SQL fragment of its own and binds
//! every value, so no string a caller supplies ever becomes SQL text.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::{Error, Result};

/// The longest search-attribute key, in bytes.
pub const MAX_ATTRIBUTE_KEY_BYTES: usize = 128;

/// The most attribute predicates one filter may carry.
pub const MAX_PREDICATES: usize = 32;

/// The visibility record of one workflow (its latest run). Upserting replaces the whole record,
/// unless it would take the record backwards (see [`VisibilityStore::upsert_visibility`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisibilityRecord {
    /// The key: one record per workflow.
    pub workflow_id: String,
    pub run_id: String,
    pub workflow_type: String,
    /// The engine's own status word, stored and matched as given.
    ///
    /// A string rather than [`crate::WorkflowStatus`]: this index belongs to the engine, whose
    /// vocabulary is often wider than the journal's projection (`terminated`, `timedOut`, ...)
    /// and may change without a schema change. The store never interprets it, so a closed enum
    /// would only refuse valid engines. The journal's spellings (`running`, `paused`,
    /// `completed`, `failed`, `cancelled`, `continuedAsNew`) are the natural choice.
    pub status: String,
    pub start_time: Millis,
    /// When the run closed; `None` while it runs. Never before `start_time`.
    #[serde(default)]
    pub close_time: Option<Millis>,
    /// The step that failed, for failed runs.
    #[serde(default)]
    pub failed_step: Option<String>,
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// A JSON object of searchable attributes. Keys are plain names: 1 to
    /// [`MAX_ATTRIBUTE_KEY_BYTES`] ASCII letters, digits, `_`, `-` or `.`. Values are any JSON,
    /// but predicates compare only strings, numbers and booleans.
    #[serde(default = "empty_object")]
    pub search_attributes: serde_json::Value,
    /// The journal head (the workflow's last event seq, counted across its runs) this record
    /// reflects, when the writer knows it: an upsert with a lower head than the stored one is
    /// refused.
    #[serde(default)]
    pub head: Option<u64>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// A half-open time range `[from, before)`; an absent bound leaves that side open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub from: Option<Millis>,
    /// Exclusive upper bound.
    pub before: Option<Millis>,
}

/// How an [`AttributePredicate`] tests its attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AttributeOp {
    /// Equal to the value, which has the same JSON type (numbers compare across integer/real).
    Eq,
    /// Not [`AttributeOp::Eq`]: also matches records without the attribute.
    Ne,
    /// Greater than a number or a string (strings compare by UTF-8 bytes).
    Gt,
    Gte,
    Lt,
    Lte,
    /// Equal to one element of the value, a non-empty array.
    In,
    /// The attribute is present (even with JSON `null`); takes no value.
    Exists,
    /// The attribute is absent; takes no value.
    NotExists,
}

impl AttributeOp {
    /// Whether the operator orders values (and so refuses booleans).
    pub fn is_ordering(self) -> bool {
        matches!(self, Self::Gt | Self::Gte | Self::Lt | Self::Lte)
    }
}

/// One test on a search attribute. A value of another JSON type than the attribute's never
/// matches (except through [`AttributeOp::Ne`] and [`AttributeOp::NotExists`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttributePredicate {
    /// A top-level key of the search attributes; `.` is part of the name, not a path.
    pub key: String,
    pub op: AttributeOp,
    /// A string, number or boolean for comparisons; a non-empty array of them for `in`;
    /// absent (or `null`) for `exists` and `notExists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

impl AttributePredicate {
    /// A comparison (`eq`, `ne`, `gt`, `gte`, `lt`, `lte`) or `in` with its operand.
    pub fn compare(
        key: impl Into<String>,
        op: AttributeOp,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        Self {
            key: key.into(),
            op,
            value: Some(value.into()),
        }
    }

    /// The attribute is present.
    pub fn exists(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            op: AttributeOp::Exists,
            value: None,
        }
    }

    /// The attribute is absent.
    pub fn not_exists(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            op: AttributeOp::NotExists,
            value: None,
        }
    }
}

/// Which records to list or count. Every given field narrows the result; the default matches
/// every record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct VisibilityFilter {
    pub workflow_type: Option<String>,
    /// Records whose status is one of these; empty matches every status.
    pub statuses: Vec<String>,
    pub start_time: Option<TimeRange>,
    /// Matches closed records only.
    pub close_time: Option<TimeRange>,
    /// Predicates that must all hold, at most [`MAX_PREDICATES`].
    pub search: Vec<AttributePredicate>,
}

impl VisibilityFilter {
    /// Reads a filter from JSON as a client sends it (camelCase fields).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] on field `filter` for an unknown field or operator or a value
    /// of the wrong type.
    pub fn from_json(value: serde_json::Value) -> Result<Self> {
        serde_json::from_value(value).map_err(|e| Error::invalid("filter", e.to_string()))
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VisibilityPage {
    pub records: Vec<VisibilityRecord>,
    /// Pass it back to read the next page; `None` when this page is the last.
    pub next_cursor: Option<String>,
}

/// The visibility index.
pub trait VisibilityStore {
    /// Inserts the record, or replaces the stored record of the same workflow, in one
    /// transaction. A record never goes backwards; the upsert is refused (nothing written)
    /// when it would:
    /// - when both the stored record and `record` carry a `head`: if `record.head` is lower
    ///   (an equal head rewrites the record, so a retried upsert succeeds);
    /// - otherwise (either has no head): if `record` is of another run that started before the
    ///   stored one, or of the same run and open (`close_time` none) while the stored record
    ///   is closed.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] (entity `"visibility"`, id the workflow id) when refused as
    /// above: `expected` is `record.head` and `actual` the stored head for the head rule,
    /// both `None` for the others.
    ///
    /// [`crate::Error::InvalidInput`] naming the field for an empty or oversized id, type or
    /// status, a close time before the start time, search attributes that are not a JSON
    /// object or have a key that is not a plain name, or an oversized document; nothing is
    /// written then.
    fn upsert_visibility(&self, record: &VisibilityRecord) -> Result<()>;

    /// The record of one workflow, `None` when there is none.
    fn get_visibility(&self, workflow_id: &str) -> Result<Option<VisibilityRecord>>;

    /// Up to `page_size` records matching `filter`, newest `start_time` first, workflow id
    /// ascending among equal start times, starting after `cursor` (from the start when
    /// `None`). Paging to the end yields each matching record exactly once while the index is
    /// not written; a record upserted meanwhile appears if it sorts after the cursor. A cursor
    /// is a position in this order and stays valid across writes.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a `page_size` of 0 or above [`crate::MAX_PAGE_LIMIT`], a malformed cursor (field
    /// `cursor`) or an invalid filter (field `filter...`): an attribute key that is not a plain
    /// name, an operand of the wrong shape for its operator, ordering on a boolean, a range
    /// whose `from` is after its `before`, or more than [`MAX_PREDICATES`] predicates.
    fn list_visibility(
        &self,
        filter: &VisibilityFilter,
        page_size: u32,
        cursor: Option<&str>,
    ) -> Result<VisibilityPage>;

    /// How many records match `filter`: the length of the full listing.
    ///
    /// # Errors
    /// As [`VisibilityStore::list_visibility`] for the filter.
    fn count_visibility(&self, filter: &VisibilityFilter) -> Result<u64>;
}
