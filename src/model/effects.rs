//! The side-effect ledger: one record per external call an agent run makes, so that a run
//! resumed after a crash knows which calls happened, which did not, and which may have.

use serde::{Deserialize, Serialize};

use super::{Millis, Page, PageRequest};
use crate::error::Result;

/// Where an effect stands, with what its outcome carries. In JS the tag is the `type` field:
/// `{ type: "completed", output: ... }`.
///
/// It is read through [`WireStatus`]: serde's own internally tagged form would accept any
/// other field beside a payload-free status (`{ type: "prepared", typo: 1 }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    try_from = "WireStatus"
)]
pub enum EffectStatus {
    /// Recorded, not yet issued: safe to issue.
    Prepared,
    /// Issued; no outcome recorded yet.
    Started,
    /// The call succeeded with `output`. Final: the record is never replaced again.
    Completed { output: serde_json::Value },
    /// The call returned an error.
    Failed { error: String },
    /// The call was interrupted mid-flight: it may or may not have taken effect.
    OutcomeUnknown,
}

/// The JSON form of an [`EffectStatus`], as read: every field it may have, none other.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireStatus {
    #[serde(rename = "type")]
    kind: EffectStatusKind,
    /// `Some(Value::Null)` for `output: null`, `None` when absent.
    #[serde(default, deserialize_with = "present")]
    output: Option<serde_json::Value>,
    error: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(deserializer).map(Some)
}

impl TryFrom<WireStatus> for EffectStatus {
    type Error = String;

    fn try_from(wire: WireStatus) -> std::result::Result<Self, String> {
        use EffectStatusKind as Kind;
        match (wire.kind, wire.output, wire.error) {
            (Kind::Prepared, None, None) => Ok(Self::Prepared),
            (Kind::Started, None, None) => Ok(Self::Started),
            (Kind::OutcomeUnknown, None, None) => Ok(Self::OutcomeUnknown),
            (Kind::Completed, Some(output), None) => Ok(Self::Completed { output }),
            (Kind::Completed, None, _) => Err("missing field `output`".into()),
            (Kind::Failed, None, Some(error)) => Ok(Self::Failed { error }),
            (Kind::Failed, _, None) => Err("missing field `error`".into()),
            (_, Some(_), _) => Err("unknown field `output` for this status".into()),
            (_, _, Some(_)) => Err("unknown field `error` for this status".into()),
        }
    }
}

impl EffectStatus {
    /// The status without its payload.
    pub fn kind(&self) -> EffectStatusKind {
        match self {
            Self::Prepared => EffectStatusKind::Prepared,
            Self::Started => EffectStatusKind::Started,
            Self::Completed { .. } => EffectStatusKind::Completed,
            Self::Failed { .. } => EffectStatusKind::Failed,
            Self::OutcomeUnknown => EffectStatusKind::OutcomeUnknown,
        }
    }
}

/// An [`EffectStatus`] without its payload, for filters and transition rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EffectStatusKind {
    Prepared,
    Started,
    Completed,
    Failed,
    OutcomeUnknown,
}

impl EffectStatusKind {
    const ALL: [Self; 5] = [
        Self::Prepared,
        Self::Started,
        Self::Completed,
        Self::Failed,
        Self::OutcomeUnknown,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prepared => "prepared",
            Self::Started => "started",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::OutcomeUnknown => "outcomeUnknown",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether a stored effect in this status may be replaced by one in `next`. Two rules keep
    /// the ledger from repeating a call:
    /// - `completed` is final: nothing replaces it;
    /// - `started` and `outcomeUnknown` never go back to `prepared`: the call may have reached
    ///   the outside world, so only an outcome (or a re-issue, `started`) may follow.
    ///
    /// Every other change is allowed, including `failed` back to `prepared` or `started` for a
    /// retry.
    pub fn can_become(self, next: Self) -> bool {
        match self {
            Self::Completed => false,
            Self::Started | Self::OutcomeUnknown => next != Self::Prepared,
            Self::Prepared | Self::Failed => true,
        }
    }
}

/// One effect as written and read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EffectRecord {
    pub effect_id: String,
    /// The tool or service called.
    pub capability_id: String,
    /// Unique per capability: at most one effect holds a given key. Fixed at creation, like
    /// the capability id.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// 0 when created; each successful compare-and-swap writes the stored revision + 1.
    pub revision: u64,
    /// The call as the runtime describes it, stored as given.
    pub request: serde_json::Value,
    pub status: EffectStatus,
    pub updated_at: Millis,
}

/// The side-effect ledger.
pub trait EffectStore {
    /// The stored effect, `None` when no effect has that id (a runtime asks before it
    /// prepares a call, so absence is an ordinary answer).
    fn load_effect(&self, effect_id: &str) -> Result<Option<EffectRecord>>;

    /// The effect of `capability_id` holding `idempotency_key`, `None` when no effect does.
    fn find_effect(
        &self,
        capability_id: &str,
        idempotency_key: &str,
    ) -> Result<Option<EffectRecord>>;

    /// Writes `record` when the stored revision is `expected_revision`, atomically:
    /// `None` creates the effect at revision 0 (in any status); `Some(n)` replaces an effect
    /// stored at revision `n` with `record` at revision `n + 1`.
    ///
    /// The store enforces [`EffectStatusKind::can_become`]: a completed effect is never
    /// replaced, and a started or outcome-unknown one never returns to prepared.
    ///
    /// # Errors
    /// - [`crate::Error::Conflict`] (entity `"effect"`) when the stored revision is not the
    ///   expected one (`actual: None` for a missing effect), or when the stored status may
    ///   not become the new one (then `expected` and `actual` are equal: the revision
    ///   matched, the stored state forbids the write).
    /// - [`crate::Error::IdempotencyConflict`] (entity `"effect"`) when creating an effect
    ///   whose idempotency key another effect of the same capability holds; `owner` names
    ///   that effect.
    /// - [`crate::Error::InvalidInput`] when `record.revision` is not 0 (create) or
    ///   `expected_revision + 1` (update), when an update changes the capability id or the
    ///   idempotency key, or for an empty or oversized id, key, request, output or error.
    ///
    /// Nothing is written on any error.
    fn compare_and_swap_effect(
        &self,
        record: &EffectRecord,
        expected_revision: Option<u64>,
    ) -> Result<()>;

    /// A page of the effects left `started` or `outcomeUnknown`, the calls to reconcile after
    /// a crash: oldest `updated_at` first, effect id breaking ties.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_unresolved_effects(&self, page: &PageRequest) -> Result<Page<EffectRecord>>;

    /// A page of the effects in `status` (all when `None`), by effect id.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a bad page request (see [`PageRequest`]).
    fn list_effects(
        &self,
        status: Option<EffectStatusKind>,
        page: &PageRequest,
    ) -> Result<Page<EffectRecord>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: serde_json::Value) -> std::result::Result<EffectStatus, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn every_status_reads_back_what_it_writes() {
        for status in [
            EffectStatus::Prepared,
            EffectStatus::Started,
            EffectStatus::OutcomeUnknown,
            EffectStatus::Completed {
                output: json!(null),
            },
            EffectStatus::Completed {
                output: json!({"id": 1}),
            },
            EffectStatus::Failed {
                error: "timeout".into(),
            },
        ] {
            let written = serde_json::to_value(&status).unwrap();
            assert_eq!(read(written).unwrap(), status);
        }
    }

    #[test]
    fn a_field_the_status_does_not_have_is_refused() {
        for bad in [
            json!({"type": "prepared", "typo": 1}),
            json!({"type": "prepared", "output": 1}),
            json!({"type": "started", "error": "x"}),
            json!({"type": "completed", "output": 1, "typo": 1}),
            json!({"type": "completed"}),
            json!({"type": "failed", "error": "x", "output": 1}),
            json!({"type": "failed"}),
            json!({"type": "exploded"}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad} was accepted");
        }
    }
}
