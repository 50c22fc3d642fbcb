//! The workflow event journal: events per workflow, numbered 1..n with no gaps, appended under
//! an expected-head check, with a status projection kept from lifecycle events.

use serde::{Deserialize, Serialize};

use super::outbox::NewOutboxRow;
use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// The version [`Event`]s are encoded with now. Stored events carry their version; a decoder
/// accepts every version up to this one.
pub const EVENT_VERSION: u32 = 1;

/// One journal event as the caller supplies it and reads it back.
///
/// Its JSON form is flat: the kind's `type` and fields beside `recordedAt` and `data`. It is
/// read through [`WireEvent`] rather than serde's `flatten`, which buffers every field first:
/// history reads decode each event, and this keeps them about a third faster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "WireEvent")]
pub struct Event {
    /// What happened; lifecycle kinds drive the status projection.
    #[serde(flatten)]
    pub kind: EventKind,
    /// When it happened.
    pub recorded_at: Millis,
    /// The engine's own payload, stored as given.
    #[serde(default)]
    pub data: serde_json::Value,
}

/// The flat JSON form of an [`Event`], as read: with its `data` as a value, or only checked
/// (see [`check_event_json`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireEvent<D = serde_json::Value> {
    #[serde(rename = "type")]
    kind: String,
    workflow_type: Option<String>,
    run_id: Option<String>,
    reason: Option<String>,
    next_run_id: Option<String>,
    name: Option<String>,
    recorded_at: Millis,
    #[serde(default)]
    data: D,
}

impl TryFrom<WireEvent> for Event {
    type Error = String;

    fn try_from(wire: WireEvent) -> Result<Self, String> {
        let (kind, recorded_at, data) = wire.into_parts()?;
        Ok(Event {
            kind,
            recorded_at,
            data,
        })
    }
}

impl<D> WireEvent<D> {
    /// The event's kind, checked: its `type` is known and it has exactly that kind's fields.
    fn into_parts(self) -> Result<(EventKind, Millis, D), String> {
        let WireEvent {
            kind: type_name,
            mut workflow_type,
            mut run_id,
            mut reason,
            mut next_run_id,
            mut name,
            recorded_at,
            data,
        } = self;
        let take = |field: &mut Option<String>, label: &str| {
            field
                .take()
                .ok_or_else(|| format!("a {type_name} event needs `{label}`"))
        };
        let kind = match type_name.as_str() {
            "started" => EventKind::Started {
                workflow_type: take(&mut workflow_type, "workflowType")?,
                run_id: take(&mut run_id, "runId")?,
            },
            "completed" => EventKind::Completed,
            "failed" => EventKind::Failed {
                reason: take(&mut reason, "reason")?,
            },
            "cancelled" => EventKind::Cancelled,
            "paused" => EventKind::Paused,
            "resumed" => EventKind::Resumed,
            "continuedAsNew" => EventKind::ContinuedAsNew {
                next_run_id: take(&mut next_run_id, "nextRunId")?,
            },
            "custom" => EventKind::Custom {
                name: take(&mut name, "name")?,
            },
            other => return Err(format!("unknown event type `{other}`")),
        };
        let extra = [
            ("workflowType", &workflow_type),
            ("runId", &run_id),
            ("reason", &reason),
            ("nextRunId", &next_run_id),
            ("name", &name),
        ]
        .into_iter()
        .find(|(_, value)| value.is_some());
        if let Some((label, _)) = extra {
            return Err(format!("`{label}` is not a field of a {type_name} event"));
        }
        Ok((kind, recorded_at, data))
    }
}

/// Checks an event's JSON text as [`Event`] reads it, without building its `data`, and that
/// every number in it (`recordedAt` too) reads back exactly as a JS number (an integer beyond ±(2^53 − 1) would
/// not). Returns whether the text has a `data` field (an absent one reads as `null`).
///
/// # Errors
/// Why the text is not an event, as decoding it would say, or which number is out of range.
pub(crate) fn check_event_json(json: &[u8]) -> Result<bool, String> {
    let wire: WireEvent<ExactJson> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let (_, recorded_at, data) = wire.into_parts()?;
    check_exact_integer(recorded_at)?;
    Ok(data.present)
}

/// Checks that `json` is one JSON value whose every integer reads back exactly as a JS number,
/// without building the value. As everywhere serde_json reads numbers, an integer literal too
/// long for 64 bits (which only text written by other code can hold) reads as a float: it is
/// taken, and reads back as the nearest float, as a decoded value would.
///
/// # Errors
/// Why the text is not JSON, or which integer is beyond ±(2^53 − 1).
pub(crate) fn check_exact_json(json: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<ExactJson>(json)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Checks that the integer `n` reads back exactly as a JS number.
///
/// # Errors
/// Says that `n` is beyond ±(2^53 − 1).
pub(crate) fn check_exact_integer(n: i64) -> Result<(), String> {
    exact_integer(n.unsigned_abs(), n)
}

/// Integers up to this magnitude are exact in an `f64`, so in JS.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Refuses an integer of `magnitude` that JS would not read exactly.
fn exact_integer(magnitude: u64, shown: impl std::fmt::Display) -> Result<(), String> {
    if magnitude > MAX_SAFE_INTEGER {
        return Err(format!("integer {shown} is beyond what JS reads exactly"));
    }
    Ok(())
}

/// A JSON value checked and dropped as it is read: nothing is allocated for it.
#[derive(Default)]
struct ExactJson {
    present: bool,
}

impl<'de> Deserialize<'de> for ExactJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ExactJsonVisitor)?;
        Ok(ExactJson { present: true })
    }
}

struct ExactJsonVisitor;

impl<'de> serde::de::Visitor<'de> for ExactJsonVisitor {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<(), E> {
        exact_integer(n, n).map_err(E::custom)
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<(), E> {
        exact_integer(n.unsigned_abs(), n).map_err(E::custom)
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<ExactJson>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, ExactJson>()?
            .is_some()
        {}
        Ok(())
    }
}

/// The kind of an [`Event`]. In JS the tag is the `type` field: `{ type: "started", ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EventKind {
    /// A run of the workflow started.
    Started {
        workflow_type: String,
        run_id: String,
    },
    /// The run completed; terminal.
    Completed,
    /// The run failed; terminal.
    Failed { reason: String },
    /// The run was cancelled; terminal.
    Cancelled,
    /// The run was paused; it stays active.
    Paused,
    /// A paused run resumed.
    Resumed,
    /// The run ended and a new run `next_run_id` of the same workflow continues it; the next
    /// `Started` event carries that run id.
    ContinuedAsNew { next_run_id: String },
    /// Any other event of the engine (activity scheduled, timer fired, signal, ...).
    Custom { name: String },
}

impl EventKind {
    /// The short name stored beside the event, for scans and projections.
    pub fn name(&self) -> &str {
        match self {
            EventKind::Started { .. } => "started",
            EventKind::Completed => "completed",
            EventKind::Failed { .. } => "failed",
            EventKind::Cancelled => "cancelled",
            EventKind::Paused => "paused",
            EventKind::Resumed => "resumed",
            EventKind::ContinuedAsNew { .. } => "continuedAsNew",
            EventKind::Custom { name } => name,
        }
    }
}

/// An event read back with its sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredEvent {
    pub seq: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// A workflow's status, projected from its lifecycle events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WorkflowStatus {
    /// Events exist but no run has started yet.
    Pending,
    Running,
    Paused,
    /// The last run continued as new and the next has not started yet; still active.
    ContinuedAsNew,
    Completed,
    Failed,
    Cancelled,
}

impl WorkflowStatus {
    /// Completed, failed and cancelled are terminal; every other status is active.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::ContinuedAsNew => "continuedAsNew",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Running,
            Self::Paused,
            Self::ContinuedAsNew,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// The projected state of one workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSummary {
    pub workflow_id: String,
    pub status: WorkflowStatus,
    /// The journal head: the seq of the last event.
    pub head: u64,
    pub workflow_type: Option<String>,
    /// The current (latest) run.
    pub run_id: Option<String>,
    pub started_at: Option<Millis>,
    pub closed_at: Option<Millis>,
    pub updated_at: Millis,
}

/// A typed query over workflow summaries; every field narrows the result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct WorkflowQuery {
    pub status: Option<WorkflowStatus>,
    pub workflow_type: Option<String>,
    /// Started at or after.
    pub started_after: Option<Millis>,
    /// Started before.
    pub started_before: Option<Millis>,
}

/// One run of a workflow within its history, in the order of the continue-as-new chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub run_id: String,
    pub workflow_type: String,
    /// The seq of the run's `started` event.
    pub first_seq: u64,
    /// The seq of the run's last event.
    pub last_seq: u64,
    pub status: WorkflowStatus,
    pub started_at: Millis,
    pub closed_at: Option<Millis>,
}

/// A stored event the current code cannot decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndecodableEvent {
    pub workflow_id: String,
    pub seq: u64,
    pub reason: String,
}

/// The workflow event journal.
pub trait EventJournal {
    /// Appends `events` to `workflow_id` when its stored head equals `expected_seq` (0 for a
    /// workflow with no events); they get seqs `expected_seq + 1..` in order. Atomic: on any
    /// error nothing is written. Appending no events checks the head and writes nothing.
    ///
    /// Lifecycle events must fit the run, judged event by event as the status advances (also
    /// within one call): `started` only where no run is open (a new workflow, after
    /// `continuedAsNew`, or a new run reusing the id of a completed, failed or cancelled
    /// workflow); `paused` only while running; `resumed` only while paused; `completed`,
    /// `failed`, `cancelled` and `continuedAsNew` only while a run is open (running or paused).
    /// So a closed run is never resumed, paused or closed again. Custom events always fit.
    ///
    /// # Errors
    /// [`crate::Error::SequenceConflict`] with the expected and the actual head;
    /// [`crate::Error::LifecycleConflict`] (code `CONFLICT`) naming the refused event and the
    /// run's status; [`crate::Error::InvalidInput`] for an empty id or a lifecycle event with
    /// missing fields (`started` needs a non-empty type and run id).
    fn append(&self, workflow_id: &str, events: &[Event], expected_seq: u64) -> Result<u64>;

    /// As [`EventJournal::append`], and inserts `outbox` rows in the same transaction, every
    /// one new. Returns the new head.
    ///
    /// # Errors
    /// As [`EventJournal::append`]; an invalid outbox row fails the whole append, and so does
    /// a dispatch key that is stored already or listed twice: [`crate::Error::Conflict`]
    /// (entity `"outbox row"`, id the key, no revisions). Unlike
    /// [`crate::OutboxStore::insert_outbox`], which ignores such rows, nothing is written then,
    /// since the events would otherwise commit without the dispatch they schedule.
    fn append_with_outbox(
        &self,
        workflow_id: &str,
        events: &[Event],
        expected_seq: u64,
        outbox: &[NewOutboxRow],
    ) -> Result<u64>;

    /// A page of the workflow's events in seq order (an empty last page for an unknown
    /// workflow). Replaying a workflow reads pages until `next_cursor` is `None`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn read_history(&self, workflow_id: &str, page: &PageRequest) -> Result<Page<StoredEvent>>;

    /// As [`EventJournal::read_history`], from the event with seq `from_seq` on. The cursor of
    /// either call continues either.
    ///
    /// # Errors
    /// As [`EventJournal::read_history`].
    fn read_history_from(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<Page<StoredEvent>>;

    /// As [`EventJournal::read_history_from`], as the JSON text of the [`Page`] of
    /// [`StoredEvent`]s (`{"items":[...],"nextCursor":...}`), for a caller that parses JSON
    /// anyway, such as JS. Keys keep the order they were written in. A store may build the
    /// text without decoding its events (the SQLite store does, and refuses an integer JS
    /// would not read exactly); this default writes out the typed page.
    ///
    /// # Errors
    /// As [`EventJournal::read_history_from`]; [`crate::Error::Serialization`] for a stored
    /// event that does not decode.
    fn read_history_json(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<String> {
        let page = self.read_history_from(workflow_id, from_seq, page)?;
        Ok(serde_json::to_string(&page)?)
    }

    /// The seq of the last event, 0 for an unknown workflow.
    fn head(&self, workflow_id: &str) -> Result<u64>;

    /// A page of the workflow ids with at least one event, in id order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_workflow_ids(&self, page: &PageRequest) -> Result<Page<String>>;

    /// A page of the ids of workflows whose status is not terminal, in id order.
    ///
    /// # Errors
    /// As [`EventJournal::list_workflow_ids`].
    fn list_active(&self, page: &PageRequest) -> Result<Page<String>>;

    /// A page of the ids of paused workflows, in id order.
    ///
    /// # Errors
    /// As [`EventJournal::list_workflow_ids`].
    fn list_paused(&self, page: &PageRequest) -> Result<Page<String>>;

    /// The projected summary of one workflow.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for a workflow with no events.
    fn workflow_summary(&self, workflow_id: &str) -> Result<WorkflowSummary>;

    /// A page of the summaries matching `query`, newest start first (never-started workflows
    /// last), workflow id ascending among equal start times.
    ///
    /// # Errors
    /// As [`EventJournal::list_workflow_ids`].
    fn query_workflows(
        &self,
        query: &WorkflowQuery,
        page: &PageRequest,
    ) -> Result<Page<WorkflowSummary>>;

    /// The runs of the workflow in continue-as-new order (empty for an unknown workflow).
    fn read_run_chain(&self, workflow_id: &str) -> Result<Vec<RunSummary>>;

    /// Scans every stored event and returns the first (in workflow id, seq order) that the
    /// current code cannot decode, or `None` when all decode.
    fn find_undecodable_event(&self) -> Result<Option<UndecodableEvent>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: serde_json::Value) -> Result<Event, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn the_flat_form_reads_back_as_written() {
        let event = Event {
            kind: EventKind::Started {
                workflow_type: "order".into(),
                run_id: "r1".into(),
            },
            recorded_at: 5,
            data: json!({"n": 1}),
        };
        let written = serde_json::to_value(&event).unwrap();
        assert_eq!(
            written,
            json!({"type": "started", "workflowType": "order", "runId": "r1", "recordedAt": 5, "data": {"n": 1}})
        );
        assert_eq!(read(written), Ok(event));
    }

    #[test]
    fn a_kind_without_its_fields_or_with_another_kinds_is_refused() {
        let missing = read(json!({"type": "started", "workflowType": "t", "recordedAt": 1}));
        assert!(missing
            .unwrap_err()
            .contains("a started event needs `runId`"));
        let extra = read(json!({"type": "completed", "reason": "x", "recordedAt": 1}));
        assert!(extra
            .unwrap_err()
            .contains("`reason` is not a field of a completed event"));
        let unknown = read(json!({"type": "exploded", "recordedAt": 1}));
        assert!(unknown
            .unwrap_err()
            .contains("unknown event type `exploded`"));
        let stray = read(json!({"type": "custom", "name": "x", "recordedAt": 1, "dat": 1}));
        assert!(stray.unwrap_err().contains("unknown field `dat`"));
        assert_eq!(
            read(json!({"type": "custom", "name": "x", "recordedAt": 1})).map(|e| e.data),
            Ok(serde_json::Value::Null)
        );
    }
}
