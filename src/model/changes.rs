//! What a committed step changed, as a change notice tells it: the areas it wrote, the
//! workflows it touched, the new heads and revisions. The SQLite store numbers each one in its
//! change feed, in commit order, in the commit's own transaction (`SqliteStore::changes_since`
//! reads them back); the browser package announces them to every tab (`store.subscribe`). An
//! operation that changed nothing (a timer cancelled that was not there, a purge that found
//! nothing) adds nothing, and a step that changed nothing has no change.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::steps::{Operation, OperationOutcome};

/// One area of the store, as a change notice names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Area {
    Journal,
    Timers,
    Outbox,
    Visibility,
    Namespaces,
    Packages,
    Checkpoints,
    Effects,
    RunJournal,
    Artifacts,
    Conversations,
}

/// The kind of record whose revision a step set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RevisionKind {
    Checkpoint,
    Effect,
    Conversation,
}

/// A record whose revision a step set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    pub kind: RevisionKind,
    pub id: String,
    pub revision: u64,
}

/// What one step changed, in the order its operations first touched each thing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// Its number in the store's change feed: one more than the change committed before it.
    /// `None` in a change not read from the feed nor recorded in it (one worked out again
    /// for a request answered from the request log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// The step's request id, if it had one.
    pub request_id: Option<String>,
    pub areas: Vec<Area>,
    pub workflow_ids: Vec<String>,
    /// Each appended workflow's new head (serialised as an object keyed by workflow id).
    #[serde(serialize_with = "as_map", deserialize_with = "from_map")]
    pub heads: Vec<(String, u64)>,
    pub revisions: Vec<Revision>,
}

/// What the change feed holds after a number (`SqliteStore::changes_since`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesSince {
    /// The changes after the number asked for, oldest first, each with its `number`; empty
    /// when `reset`.
    pub changes: Vec<Change>,
    /// True when the feed cannot say what came after the number asked for (its window no
    /// longer reaches back there, or the store's content was replaced since): what was read
    /// before is to be read afresh, and the feed followed from `newest`.
    pub reset: bool,
    /// The newest change's number (0 while nothing has changed).
    pub newest: u64,
}

impl Change {
    /// What `operations` changed, committed with `outcomes` (one per operation, in order, as
    /// the store answered them or recorded them under the step's request id); `None` when
    /// nothing changed.
    pub fn of(
        request_id: Option<&str>,
        operations: &[Operation],
        outcomes: &[OperationOutcome],
    ) -> Option<Change> {
        let mut collect = Collect {
            change: Change {
                request_id: request_id.map(str::to_owned),
                ..Change::default()
            },
            workflows: HashSet::new(),
            heads: HashMap::new(),
        };
        for (operation, outcome) in operations.iter().zip(outcomes) {
            collect.add(operation, outcome);
        }
        let change = collect.change;
        (!change.areas.is_empty()).then_some(change)
    }
}

/// A change being gathered from a step's operations. A step may touch a thousand workflows:
/// the ones already named are found by hash, not by a walk of the list.
struct Collect<'a> {
    change: Change,
    workflows: HashSet<&'a str>,
    /// Workflow id → its place in `change.heads`.
    heads: HashMap<&'a str, usize>,
}

impl<'a> Collect<'a> {
    fn area(&mut self, area: Area) -> &mut Self {
        if !self.change.areas.contains(&area) {
            self.change.areas.push(area);
        }
        self
    }

    fn workflow(&mut self, id: &'a str) -> &mut Self {
        if self.workflows.insert(id) {
            self.change.workflow_ids.push(id.to_owned());
        }
        self
    }

    fn head(&mut self, id: &'a str, head: u64) {
        let heads = &mut self.change.heads;
        let at = *self.heads.entry(id).or_insert_with(|| {
            heads.push((id.to_owned(), head));
            heads.len() - 1
        });
        heads[at].1 = head;
    }

    fn revision(&mut self, kind: RevisionKind, id: &str, revision: u64) {
        self.change.revisions.push(Revision {
            kind,
            id: id.to_owned(),
            revision,
        });
    }

    /// Adds what one operation changed, judged by its outcome.
    fn add(&mut self, operation: &'a Operation, outcome: &'a OperationOutcome) {
        use Operation as Op;
        use OperationOutcome as Done;
        match (operation, outcome) {
            (
                Op::Append {
                    workflow_id,
                    events,
                    outbox,
                    ..
                },
                Done::Append { head },
            ) => {
                if !events.is_empty() {
                    self.area(Area::Journal).workflow(workflow_id);
                    self.head(workflow_id, *head);
                }
                if !outbox.is_empty() {
                    self.area(Area::Outbox);
                }
            }
            (Op::InsertOutbox { rows }, Done::InsertOutbox { inserted }) if *inserted > 0 => {
                self.area(Area::Outbox);
                for row in rows {
                    self.workflow(&row.workflow_id);
                }
            }
            (Op::ClaimOutbox { .. }, Done::ClaimOutbox { rows })
            | (Op::RearmStaleClaims { .. }, Done::RearmStaleClaims { rows })
                if !rows.is_empty() =>
            {
                self.area(Area::Outbox);
                for row in rows {
                    self.workflow(&row.workflow_id);
                }
            }
            (Op::CompleteOutboxBatch { claims }, _) if claims.is_empty() => {}
            (Op::CompleteOutbox { .. }, _)
            | (Op::CompleteOutboxBatch { .. }, _)
            | (Op::RetryOutbox { .. }, _)
            | (Op::FailOutbox { .. }, _) => {
                self.area(Area::Outbox);
            }
            (
                Op::CancelWorkflowOutbox { workflow_id },
                Done::CancelWorkflowOutbox { cancelled },
            ) if !cancelled.is_empty() => {
                self.area(Area::Outbox).workflow(workflow_id);
            }
            (Op::ScheduleTimer { workflow_id, .. }, _) => {
                self.area(Area::Timers).workflow(workflow_id);
            }
            (Op::CancelTimer { workflow_id, .. }, Done::CancelTimer { removed: true }) => {
                self.area(Area::Timers).workflow(workflow_id);
            }
            (
                Op::CompareAndSwapCheckpoint { checkpoint, .. },
                Done::CompareAndSwapCheckpoint { revision },
            ) => {
                self.area(Area::Checkpoints);
                self.revision(
                    RevisionKind::Checkpoint,
                    &checkpoint.checkpoint_id,
                    *revision,
                );
            }
            (Op::CompareAndSwapEffect { record, .. }, Done::CompareAndSwapEffect { revision }) => {
                self.area(Area::Effects);
                self.revision(RevisionKind::Effect, &record.effect_id, *revision);
            }
            (Op::SaveConversation { state, .. }, Done::SaveConversation { revision }) => {
                self.area(Area::Conversations);
                self.revision(
                    RevisionKind::Conversation,
                    &state.conversation_id,
                    *revision,
                );
            }
            (Op::UpsertVisibility { record }, _) => {
                self.area(Area::Visibility).workflow(&record.workflow_id);
            }
            (Op::RecordRunEvent { .. }, _) => {
                self.area(Area::RunJournal);
            }
            (Op::PutArtifact { .. }, _)
            | (Op::DeleteArtifact { .. }, Done::DeleteArtifact { deleted: true }) => {
                self.area(Area::Artifacts);
            }
            (Op::PurgeExpiredArtifacts { .. }, Done::PurgeExpiredArtifacts { purged })
                if *purged > 0 =>
            {
                self.area(Area::Artifacts);
            }
            (Op::PurgeWorkflows { .. }, Done::PurgeWorkflows { counts }) => {
                let purged = [
                    (counts.events, Area::Journal),
                    (counts.outbox_rows, Area::Outbox),
                    (counts.timers, Area::Timers),
                    (counts.visibility_records, Area::Visibility),
                ];
                for (count, area) in purged {
                    if count > 0 {
                        self.area(area);
                    }
                }
                // A workflow's projection row goes with its events; one without events is
                // still a journal change.
                if counts.workflows > 0 {
                    self.area(Area::Journal);
                }
            }
            (Op::RegisterNamespace { .. }, _)
            | (Op::PutNamespace { .. }, _)
            | (Op::SetNamespacePlacement { .. }, _)
            | (Op::DeprecateNamespace { .. }, Done::DeprecateNamespace { deprecated: true }) => {
                self.area(Area::Namespaces);
            }
            (Op::PutPackage { .. }, _)
            | (Op::DeletePackage { .. }, _)
            | (Op::SetPackageRoute { .. }, _) => {
                self.area(Area::Packages);
            }
            // What remains changed nothing: a cancel, claim, re-arm, delete or purge that
            // found nothing to act on.
            _ => {}
        }
    }
}

fn as_map<S: Serializer>(pairs: &[(String, u64)], serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(pairs.len()))?;
    for (key, value) in pairs {
        map.serialize_entry(key, value)?;
    }
    map.end()
}

/// Reads the heads back from their object, in its order (serde_json keeps the order of keys).
fn from_map<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, u64)>, D::Error> {
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Vec<(String, u64)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of heads")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
    deserializer.deserialize_map(Pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::retention::PurgeCounts;

    fn timer(workflow_id: &str) -> Operation {
        Operation::CancelTimer {
            workflow_id: workflow_id.into(),
            timer_id: "t".into(),
        }
    }

    #[test]
    fn operations_that_changed_nothing_add_nothing() {
        let nothing = Change::of(
            Some("r"),
            &[
                timer("wf"),
                Operation::PurgeWorkflows {
                    closed_before: 1,
                    limit: 10,
                },
            ],
            &[
                OperationOutcome::CancelTimer { removed: false },
                OperationOutcome::PurgeWorkflows {
                    counts: PurgeCounts::default(),
                },
            ],
        );
        assert_eq!(nothing, None);
    }

    #[test]
    fn a_change_names_areas_and_workflows_once_in_first_touched_order() {
        let change = Change::of(
            None,
            &[timer("b"), timer("a"), timer("b")],
            &vec![OperationOutcome::CancelTimer { removed: true }; 3],
        )
        .expect("a change");
        assert_eq!(change.areas, [Area::Timers]);
        assert_eq!(change.workflow_ids, ["b", "a"]);
        assert_eq!(change.request_id, None);
    }

    #[test]
    fn a_workflow_appended_to_twice_keeps_its_first_place_and_its_last_head() {
        let append = |workflow_id: &str| Operation::Append {
            workflow_id: workflow_id.into(),
            events: vec![crate::model::journal::Event {
                kind: crate::model::journal::EventKind::Paused,
                recorded_at: 1,
                data: serde_json::Value::Null,
            }],
            expected_seq: 0,
            outbox: vec![],
        };
        let change = Change::of(
            None,
            &[append("b"), append("a"), append("b")],
            &[
                OperationOutcome::Append { head: 1 },
                OperationOutcome::Append { head: 4 },
                OperationOutcome::Append { head: 2 },
            ],
        )
        .expect("a change");
        assert_eq!(change.workflow_ids, ["b", "a"]);
        assert_eq!(change.heads, [("b".into(), 2), ("a".into(), 4)]);
    }
}
