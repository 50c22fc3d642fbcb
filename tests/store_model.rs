//! A model-based property test of the store: random sequences of journal appends (lifecycle
//! events that fit the run or not), outbox inserts, claims, completions, retries, failures and
//! re-arms under current or stale claim tokens, cancellations, checkpoint and effect
//! compare-and-swaps, steps of several of these in one commit (under request ids, and sent
//! again), purges of closed workflows, and reopenings of the database file run against the SQLite store and
//! against a plain in-memory model of the documented contracts. Every answer (the value, or the
//! error code with its structured fields) must agree, and after each reopening, and at the end
//! of every case, the whole state must agree too.
//!
//! Ids come from small pools so that operations collide: appends race stale heads, inserts
//! repeat dispatch keys, claims meet settled rows, creates meet taken idempotency keys.
//!
//! The default of 64 cases of up to 60 operations keeps the test well under a minute on two
//! cores (about a second in a debug build); set `PROPTEST_CASES` to run more.
#![cfg(not(target_family = "wasm"))]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use runstore::model::changes::Change;
use runstore::{
    Checkpoint, CheckpointStore, ClaimFilter, ClaimScope, Durability, EffectRecord, EffectStatus,
    EffectStatusKind, EffectStore, Error, Event, EventJournal, EventKind, Millis, NewOutboxRow,
    OutboxClaim, OutboxRow, OutboxRowState, OutboxStatus, OutboxStore, PageRequest, Result,
    SqliteStore, StoredEvent, WorkflowStatus, WorkflowSummary, DEFAULT_MAX_ATTEMPTS,
    MAX_PAGE_LIMIT,
};
use runstore::{Operation, OperationOutcome, PurgeCounts, RetentionStore, StepOutcome, StepStore};
use serde_json::json;

const DEFAULT_CASES: u32 = 64;
const MAX_OPS: usize = 60;

const WORKFLOWS: usize = 3;
const DISPATCH_KEYS: usize = 6;
const NAMESPACES: [Option<&str>; 3] = [None, Some("ns-a"), Some("ns-b")];
const CHECKPOINTS: usize = 3;
const RUNS: usize = 2;
const EFFECTS: usize = 4;
const CAPABILITIES: usize = 2;
const IDEMPOTENCY_KEYS: usize = 3;
const REQUEST_IDS: usize = 3;

/// The store's clock starts here; claims move it on.
const START: Millis = 1_000;

fn workflow_id(i: usize) -> String {
    format!("wf-{i}")
}
fn dispatch_key(i: usize) -> String {
    format!("key-{i}")
}
fn checkpoint_id(i: usize) -> String {
    format!("cp-{i}")
}
fn run_id(i: usize) -> String {
    format!("run-{i}")
}
fn effect_id(i: usize) -> String {
    format!("fx-{i}")
}
fn capability_id(i: usize) -> String {
    format!("cap-{i}")
}
fn idempotency_key(i: usize) -> String {
    format!("idem-{i}")
}
fn request_id(i: usize) -> String {
    format!("req-{i}")
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

/// The head an append expects: the current one, or a fixed number (often stale).
#[derive(Debug, Clone)]
enum Head {
    Current,
    Fixed(u64),
}

/// An event to append; the last two are refused by validation.
#[derive(Debug, Clone)]
enum EventSpec {
    Started(usize),
    Completed,
    Failed,
    Cancelled,
    Paused,
    Resumed,
    ContinuedAsNew(usize),
    Custom(u8),
    StartedWithoutRunId,
    CustomWithLifecycleName,
}

#[derive(Debug, Clone)]
struct RowSpec {
    key: usize,
    workflow: usize,
    ordinal: u64,
    /// An invalid row has an empty activity type.
    valid: bool,
    input: Vec<u8>,
    /// `visible_after` relative to the clock.
    delay: i64,
    attempt: u32,
    namespace: usize,
    /// Often none (the store's default), else small so that rows run out of attempts.
    max_attempts: Option<u32>,
}

/// The claim token a settlement names: the row's current one, or a fixed (often stale) one.
#[derive(Debug, Clone, Copy)]
enum Token {
    Current,
    Fixed(u64),
}

/// The revision a compare-and-swap expects.
#[derive(Debug, Clone)]
enum Expected {
    /// The stored revision (a create when nothing is stored).
    Current,
    Create,
    Stale(u64),
}

/// The revision a compare-and-swap writes.
#[derive(Debug, Clone)]
enum Written {
    /// What the expectation implies: 0 for a create, expected + 1 for an update.
    Implied,
    Other(u64),
}

#[derive(Debug, Clone)]
struct EffectWrite {
    effect: usize,
    /// Reuse the stored capability and key when the effect exists.
    keep_identity: bool,
    capability: usize,
    key: Option<usize>,
    status: (u8, u8),
    expected: Expected,
    written: Written,
}

#[derive(Debug, Clone)]
enum Op {
    Append {
        workflow: usize,
        events: Vec<EventSpec>,
        head: Head,
    },
    AppendWithOutbox {
        workflow: usize,
        events: Vec<EventSpec>,
        head: Head,
        rows: Vec<RowSpec>,
    },
    ReadHistory(usize),
    ReadHead(usize),
    Summary(usize),
    InsertOutbox(Vec<RowSpec>),
    Claim {
        advance: i64,
        limit: u32,
        exclude: Vec<usize>,
        namespace: Option<usize>,
    },
    Complete(usize, Token),
    CompleteBatch(Vec<(usize, Token)>),
    Retry {
        key: usize,
        token: Token,
        attempt: u32,
        delay: i64,
    },
    Fail(usize, Token),
    Rearm {
        /// Claims older than this much before the clock are stale.
        age: i64,
        delay: i64,
        limit: u32,
    },
    CancelWorkflow(usize),
    RowState(usize),
    CheckpointWrite {
        checkpoint: usize,
        run: Option<usize>,
        state: u8,
        expected: Expected,
        written: Written,
    },
    LoadCheckpoint(usize),
    EffectWrite(EffectWrite),
    LoadEffect(usize),
    FindEffect {
        capability: usize,
        key: usize,
    },
    Reopen,
    /// The write operations among these, as one step (non-writes are left out), under request
    /// id `request` of a small pool when given.
    Step {
        ops: Vec<Op>,
        request: Option<usize>,
    },
    /// The last step sent again, under its request id: applied once, answered twice.
    Resend,
    /// Purges closed workflows that closed more than `age` before the clock.
    Purge {
        age: i64,
        limit: u32,
    },
}

impl EventSpec {
    fn event(&self, recorded_at: Millis, index: usize) -> Event {
        let kind = match self {
            Self::Started(run) => EventKind::Started {
                workflow_type: "order".into(),
                run_id: run_id(*run),
            },
            Self::Completed => EventKind::Completed,
            Self::Failed => EventKind::Failed {
                reason: "boom".into(),
            },
            Self::Cancelled => EventKind::Cancelled,
            Self::Paused => EventKind::Paused,
            Self::Resumed => EventKind::Resumed,
            Self::ContinuedAsNew(run) => EventKind::ContinuedAsNew {
                next_run_id: run_id(*run),
            },
            Self::Custom(n) => EventKind::Custom {
                name: format!("custom-{n}"),
            },
            Self::StartedWithoutRunId => EventKind::Started {
                workflow_type: "order".into(),
                run_id: String::new(),
            },
            Self::CustomWithLifecycleName => EventKind::Custom {
                name: "completed".into(),
            },
        };
        Event {
            kind,
            recorded_at,
            data: json!({ "index": index }),
        }
    }
}

impl RowSpec {
    fn row(&self, now: Millis) -> NewOutboxRow {
        NewOutboxRow {
            dispatch_key: dispatch_key(self.key),
            workflow_id: workflow_id(self.workflow),
            ordinal: self.ordinal,
            activity_type: if self.valid {
                "charge".into()
            } else {
                String::new()
            },
            input: self.input.clone(),
            visible_after: now + self.delay,
            attempt: self.attempt,
            run_id: Some(run_id(0)),
            namespace: NAMESPACES[self.namespace].map(str::to_owned),
            task_queue: None,
            node: None,
            max_attempts: self.max_attempts,
        }
    }
}

fn effect_status((kind, payload): (u8, u8)) -> EffectStatus {
    match kind {
        0 => EffectStatus::Prepared,
        1 => EffectStatus::Started,
        2 => EffectStatus::Completed {
            output: json!({ "output": payload }),
        },
        3 => EffectStatus::Failed {
            error: format!("error-{payload}"),
        },
        _ => EffectStatus::OutcomeUnknown,
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn head_strategy() -> impl Strategy<Value = Head> {
    prop_oneof![3 => Just(Head::Current), 1 => (0u64..5).prop_map(Head::Fixed)]
}

fn event_strategy() -> impl Strategy<Value = EventSpec> {
    prop_oneof![
        3 => (0..RUNS).prop_map(EventSpec::Started),
        1 => Just(EventSpec::Completed),
        1 => Just(EventSpec::Failed),
        1 => Just(EventSpec::Cancelled),
        2 => Just(EventSpec::Paused),
        2 => Just(EventSpec::Resumed),
        1 => (0..RUNS).prop_map(EventSpec::ContinuedAsNew),
        6 => (0u8..3).prop_map(EventSpec::Custom),
        1 => prop_oneof![
            Just(EventSpec::StartedWithoutRunId),
            Just(EventSpec::CustomWithLifecycleName)
        ],
    ]
}

fn events_strategy() -> impl Strategy<Value = Vec<EventSpec>> {
    prop::collection::vec(event_strategy(), 0..4)
}

fn row_strategy() -> impl Strategy<Value = RowSpec> {
    (
        0..DISPATCH_KEYS,
        0..WORKFLOWS,
        0u64..4,
        prop::bool::weighted(0.95),
        prop::collection::vec(any::<u8>(), 0..4),
        -20i64..40,
        0u32..3,
        0..NAMESPACES.len(),
        prop::option::weighted(0.6, prop_oneof![1 => Just(0u32), 8 => 1u32..5]),
    )
        .prop_map(
            |(key, workflow, ordinal, valid, input, delay, attempt, namespace, max_attempts)| {
                RowSpec {
                    key,
                    workflow,
                    ordinal,
                    valid,
                    input,
                    delay,
                    attempt,
                    namespace,
                    max_attempts,
                }
            },
        )
}

fn rows_strategy() -> impl Strategy<Value = Vec<RowSpec>> {
    prop::collection::vec(row_strategy(), 0..4)
}

fn expected_strategy() -> impl Strategy<Value = Expected> {
    prop_oneof![
        6 => Just(Expected::Current),
        1 => Just(Expected::Create),
        2 => (0u64..4).prop_map(Expected::Stale),
    ]
}

fn written_strategy() -> impl Strategy<Value = Written> {
    prop_oneof![9 => Just(Written::Implied), 1 => (0u64..4).prop_map(Written::Other)]
}

fn journal_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..WORKFLOWS, events_strategy(), head_strategy())
            .prop_map(|(workflow, events, head)| Op::Append { workflow, events, head }),
        3 => (0..WORKFLOWS, events_strategy(), head_strategy(), rows_strategy()).prop_map(
            |(workflow, events, head, rows)| Op::AppendWithOutbox { workflow, events, head, rows }
        ),
        1 => (0..WORKFLOWS).prop_map(Op::ReadHistory),
        1 => (0..WORKFLOWS).prop_map(Op::ReadHead),
        1 => (0..WORKFLOWS).prop_map(Op::Summary),
    ]
}

fn token_strategy() -> impl Strategy<Value = Token> {
    prop_oneof![4 => Just(Token::Current), 1 => (0u64..4).prop_map(Token::Fixed)]
}

fn outbox_op() -> impl Strategy<Value = Op> {
    let key = || 0..DISPATCH_KEYS;
    prop_oneof![
        4 => rows_strategy().prop_map(Op::InsertOutbox),
        4 => (
            0i64..40,
            prop_oneof![1 => Just(0u32), 6 => 1u32..5],
            prop::collection::vec(0..WORKFLOWS, 0..2),
            prop::option::weighted(0.25, 1..NAMESPACES.len()),
        )
            .prop_map(|(advance, limit, exclude, namespace)| Op::Claim {
                advance,
                limit,
                exclude,
                namespace,
            }),
        2 => (key(), token_strategy()).prop_map(|(key, token)| Op::Complete(key, token)),
        2 => prop::collection::vec((key(), token_strategy()), 0..4).prop_map(Op::CompleteBatch),
        2 => (key(), token_strategy(), 0u32..12, 0i64..100).prop_map(
            |(key, token, attempt, delay)| Op::Retry { key, token, attempt, delay }
        ),
        1 => (key(), token_strategy()).prop_map(|(key, token)| Op::Fail(key, token)),
        3 => (0i64..30, 0i64..50, prop_oneof![1 => Just(0u32), 6 => 1u32..5])
            .prop_map(|(age, delay, limit)| Op::Rearm { age, delay, limit }),
        1 => (0..WORKFLOWS).prop_map(Op::CancelWorkflow),
        1 => key().prop_map(Op::RowState),
    ]
}

fn checkpoint_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            0..CHECKPOINTS,
            prop::option::of(0..RUNS),
            any::<u8>(),
            expected_strategy(),
            written_strategy(),
        )
            .prop_map(|(checkpoint, run, state, expected, written)| Op::CheckpointWrite {
                checkpoint,
                run,
                state,
                expected,
                written,
            }),
        1 => (0..CHECKPOINTS).prop_map(Op::LoadCheckpoint),
    ]
}

fn effect_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            0..EFFECTS,
            prop::bool::weighted(0.85),
            0..CAPABILITIES,
            prop::option::weighted(0.75, 0..IDEMPOTENCY_KEYS),
            (0u8..5, 0u8..3),
            expected_strategy(),
            written_strategy(),
        )
            .prop_map(
                |(effect, keep_identity, capability, key, status, expected, written)| {
                    Op::EffectWrite(EffectWrite {
                        effect,
                        keep_identity,
                        capability,
                        key,
                        status,
                        expected,
                        written,
                    })
                }
            ),
        1 => (0..EFFECTS).prop_map(Op::LoadEffect),
        1 => (0..CAPABILITIES, 0..IDEMPOTENCY_KEYS)
            .prop_map(|(capability, key)| Op::FindEffect { capability, key }),
    ]
}

fn single_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => journal_op(),
        16 => outbox_op(),
        5 => checkpoint_op(),
        8 => effect_op(),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        39 => single_op(),
        6 => (
            prop::collection::vec(single_op(), 0..5),
            prop::option::weighted(0.5, 0..REQUEST_IDS),
        )
            .prop_map(|(ops, request)| Op::Step { ops, request }),
        2 => Just(Op::Resend),
        2 => (0i64..40, prop_oneof![1 => Just(0u32), 6 => 1u32..4])
            .prop_map(|(age, limit)| Op::Purge { age, limit }),
        1 => Just(Op::Reopen),
    ]
}

// ---------------------------------------------------------------------------------------------
// The model: the documented contracts over plain collections
// ---------------------------------------------------------------------------------------------

const OUTBOX_ROW: &str = "outbox row";
const LIFECYCLE: [&str; 7] = [
    "started",
    "completed",
    "failed",
    "cancelled",
    "paused",
    "resumed",
    "continuedAsNew",
];

fn invalid(field: impl Into<String>) -> Error {
    Error::invalid(field, "")
}

fn conflict(entity: &'static str, id: &str, expected: Option<u64>, actual: Option<u64>) -> Error {
    Error::Conflict {
        entity,
        id: id.to_owned(),
        expected,
        actual,
    }
}

/// The revision a compare-and-swap must write for `expected`; anything else is refused before
/// the stored state is looked at.
fn check_written_revision(revision: u64, expected: Option<u64>) -> Result<()> {
    if expected.map_or(Some(0), |n| n.checked_add(1)) == Some(revision) {
        Ok(())
    } else {
        Err(invalid("revision"))
    }
}

#[derive(Default, Clone)]
struct Model {
    /// Committed request ids: the step's operations and their outcomes.
    requests: BTreeMap<String, (Vec<Operation>, Vec<OperationOutcome>)>,
    journal: BTreeMap<String, Vec<Event>>,
    outbox: BTreeMap<String, OutboxRow>,
    /// The last claim token handed out.
    last_token: u64,
    checkpoints: BTreeMap<String, Checkpoint>,
    effects: BTreeMap<String, EffectRecord>,
}

fn is_live(row: &OutboxRow) -> bool {
    matches!(row.status, OutboxStatus::Pending | OutboxStatus::Claimed)
}

fn check_events(events: &[Event]) -> Result<()> {
    for (i, event) in events.iter().enumerate() {
        let field = |name: &str| format!("events[{i}].{name}");
        match &event.kind {
            EventKind::Started {
                workflow_type,
                run_id,
            } => {
                if workflow_type.is_empty() {
                    return Err(invalid(field("workflowType")));
                }
                if run_id.is_empty() {
                    return Err(invalid(field("runId")));
                }
            }
            EventKind::ContinuedAsNew { next_run_id } if next_run_id.is_empty() => {
                return Err(invalid(field("nextRunId")));
            }
            EventKind::Custom { name } if name.is_empty() || LIFECYCLE.contains(&name.as_str()) => {
                return Err(invalid(field("name")));
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_rows(rows: &[NewOutboxRow]) -> Result<()> {
    for (i, row) in rows.iter().enumerate() {
        for (name, value) in [
            ("dispatchKey", &row.dispatch_key),
            ("workflowId", &row.workflow_id),
            ("activityType", &row.activity_type),
        ] {
            if value.is_empty() {
                return Err(invalid(format!("outbox[{i}].{name}")));
            }
        }
        let max = row.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
        if max == 0 || row.attempt >= max {
            return Err(invalid(format!("outbox[{i}].maxAttempts")));
        }
    }
    Ok(())
}

/// Whether a lifecycle event may follow `status`: a new run only where none is open, pause
/// while running, resume while paused, close while open.
fn fits(status: WorkflowStatus, kind: &EventKind) -> bool {
    use WorkflowStatus as S;
    let open = matches!(status, S::Running | S::Paused);
    match kind {
        EventKind::Started { .. } => !open,
        EventKind::Paused => status == S::Running,
        EventKind::Resumed => status == S::Paused,
        EventKind::Custom { .. } => true,
        _ => open,
    }
}

/// The name a lifecycle conflict gives a status.
fn status_name(status: WorkflowStatus) -> &'static str {
    status.as_str()
}

impl Model {
    fn head(&self, workflow: &str) -> u64 {
        self.journal.get(workflow).map_or(0, |e| e.len() as u64)
    }

    fn history(&self, workflow: &str) -> Vec<StoredEvent> {
        let events = self.journal.get(workflow).cloned().unwrap_or_default();
        (1..)
            .zip(events)
            .map(|(seq, event)| StoredEvent { seq, event })
            .collect()
    }

    fn append_with_outbox(
        &mut self,
        workflow: &str,
        events: &[Event],
        expected: u64,
        rows: &[NewOutboxRow],
    ) -> Result<u64> {
        check_events(events)?;
        check_rows(rows)?;
        let actual = self.head(workflow);
        if actual != expected {
            return Err(Error::SequenceConflict {
                workflow_id: workflow.to_owned(),
                expected,
                actual,
            });
        }
        self.check_lifecycle(workflow, events)?;
        let mut keys = BTreeSet::new();
        for row in rows {
            let key = &row.dispatch_key;
            if self.outbox.contains_key(key) || !keys.insert(key) {
                return Err(conflict(OUTBOX_ROW, key, None, None));
            }
        }
        if !events.is_empty() {
            let stored = self.journal.entry(workflow.to_owned()).or_default();
            stored.extend_from_slice(events);
        }
        self.insert_unchecked(rows);
        Ok(self.head(workflow))
    }

    /// Refuses the first lifecycle event that does not fit the status the events before it
    /// leave.
    fn check_lifecycle(&self, workflow: &str, events: &[Event]) -> Result<()> {
        let mut summary = self.summary(workflow).unwrap_or_else(|_| WorkflowSummary {
            workflow_id: workflow.to_owned(),
            status: WorkflowStatus::Pending,
            head: 0,
            workflow_type: None,
            run_id: None,
            started_at: None,
            closed_at: None,
            updated_at: 0,
        });
        for event in events {
            if !fits(summary.status, &event.kind) {
                let event = LIFECYCLE
                    .into_iter()
                    .find(|name| *name == event.kind.name())
                    .expect("a lifecycle kind");
                return Err(Error::LifecycleConflict {
                    workflow_id: workflow.to_owned(),
                    event,
                    status: status_name(summary.status),
                });
            }
            apply(&mut summary, event);
        }
        Ok(())
    }

    /// The status projection, recomputed from the whole history.
    fn summary(&self, workflow: &str) -> Result<WorkflowSummary> {
        let events = self
            .journal
            .get(workflow)
            .ok_or_else(|| Error::not_found("workflow", workflow))?;
        let mut summary = WorkflowSummary {
            workflow_id: workflow.to_owned(),
            status: WorkflowStatus::Pending,
            head: events.len() as u64,
            workflow_type: None,
            run_id: None,
            started_at: None,
            closed_at: None,
            updated_at: 0,
        };
        for event in events {
            apply(&mut summary, event);
        }
        Ok(summary)
    }

    fn workflow_ids(&self, keep: impl Fn(WorkflowStatus) -> bool) -> Vec<String> {
        self.journal
            .keys()
            .filter(|id| keep(self.summary(id).expect("listed workflow").status))
            .cloned()
            .collect()
    }

    /// A step: every operation on a copy of the model, kept only when all succeed.
    fn commit(&mut self, step: &runstore::Step) -> Result<StepOutcome> {
        if step.operations.is_empty() {
            return Err(invalid("operations"));
        }
        if let Some(id) = &step.request_id {
            if let Some((operations, outcomes)) = self.requests.get(id) {
                if operations != &step.operations {
                    return Err(conflict("request", id, None, None));
                }
                let outcomes = outcomes.clone();
                return Ok(StepOutcome {
                    outcomes,
                    replayed: true,
                    change: None,
                });
            }
        }
        let mut next = self.clone();
        let outcomes = step
            .operations
            .iter()
            .enumerate()
            .map(|(i, operation)| {
                next.apply(operation)
                    .map_err(|e| operation.name_field(e).in_operation(i))
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(id) = &step.request_id {
            let record = (step.operations.clone(), outcomes.clone());
            next.requests.insert(id.clone(), record);
        }
        *self = next;
        let change = Change::of(step.request_id.as_deref(), &step.operations, &outcomes);
        Ok(StepOutcome {
            outcomes,
            replayed: false,
            change,
        })
    }

    fn apply(&mut self, operation: &Operation) -> Result<OperationOutcome> {
        use OperationOutcome as Done;
        Ok(match operation {
            Operation::Append {
                workflow_id,
                events,
                expected_seq,
                outbox,
            } => Done::Append {
                head: self.append_with_outbox(workflow_id, events, *expected_seq, outbox)?,
            },
            Operation::InsertOutbox { rows } => Done::InsertOutbox {
                inserted: self.insert_outbox(rows)?,
            },
            Operation::CompleteOutbox {
                dispatch_key,
                claim_token,
            } => {
                self.transition(dispatch_key, *claim_token, |row| {
                    row.status = OutboxStatus::Done;
                })?;
                Done::CompleteOutbox {}
            }
            Operation::RetryOutbox {
                dispatch_key,
                claim_token,
                next_attempt,
                visible_after,
            } => Done::RetryOutbox {
                status: self.retry(dispatch_key, *claim_token, *next_attempt, *visible_after)?,
            },
            Operation::FailOutbox {
                dispatch_key,
                claim_token,
                reason,
            } => {
                self.transition(dispatch_key, *claim_token, |row| {
                    row.status = OutboxStatus::Failed;
                    row.dead_reason = Some(reason.clone());
                })?;
                Done::FailOutbox {}
            }
            Operation::CancelWorkflowOutbox { workflow_id } => Done::CancelWorkflowOutbox {
                cancelled: self.cancel_workflow(workflow_id),
            },
            Operation::CompareAndSwapCheckpoint {
                checkpoint,
                expected_revision,
            } => {
                self.write_checkpoint(checkpoint, *expected_revision)?;
                Done::CompareAndSwapCheckpoint {
                    revision: checkpoint.revision,
                }
            }
            Operation::CompareAndSwapEffect {
                record,
                expected_revision,
            } => {
                self.write_effect(record, *expected_revision)?;
                Done::CompareAndSwapEffect {
                    revision: record.revision,
                }
            }
            Operation::PurgeWorkflows {
                closed_before,
                limit,
            } => Done::PurgeWorkflows {
                counts: self.purge(*closed_before, *limit)?,
            },
            other => unreachable!("the test makes no {other:?}"),
        })
    }

    /// Deletes up to `limit` workflows closed before `closed_before`, oldest close first, with
    /// their events and outbox rows (this test makes no timers or visibility records).
    fn purge(&mut self, closed_before: Millis, limit: u32) -> Result<PurgeCounts> {
        if limit == 0 || limit > MAX_PAGE_LIMIT {
            return Err(invalid("limit"));
        }
        let mut closed: Vec<(Millis, String)> = self
            .journal
            .keys()
            .filter_map(|id| {
                let summary = self.summary(id).ok()?;
                let closed_at = summary.closed_at?;
                let old = summary.status.is_terminal() && closed_at < closed_before;
                old.then(|| (closed_at, id.clone()))
            })
            .collect();
        closed.sort();
        let mut counts = PurgeCounts {
            more: closed.len() > limit as usize,
            ..PurgeCounts::default()
        };
        for (_, id) in closed.into_iter().take(limit as usize) {
            counts.workflows += 1;
            counts.events += self.journal.remove(&id).map_or(0, |e| e.len() as u64);
            let before = self.outbox.len();
            self.outbox.retain(|_, row| row.workflow_id != id);
            counts.outbox_rows += (before - self.outbox.len()) as u64;
        }
        Ok(counts)
    }

    fn insert_outbox(&mut self, rows: &[NewOutboxRow]) -> Result<u64> {
        check_rows(rows)?;
        Ok(self.insert_unchecked(rows))
    }

    fn insert_unchecked(&mut self, rows: &[NewOutboxRow]) -> u64 {
        let mut inserted = 0;
        for row in rows {
            if self.outbox.contains_key(&row.dispatch_key) {
                continue;
            }
            inserted += 1;
            self.outbox.insert(
                row.dispatch_key.clone(),
                OutboxRow {
                    dispatch_key: row.dispatch_key.clone(),
                    workflow_id: row.workflow_id.clone(),
                    ordinal: row.ordinal,
                    activity_type: row.activity_type.clone(),
                    input: row.input.clone(),
                    status: OutboxStatus::Pending,
                    attempt: row.attempt,
                    visible_after: row.visible_after,
                    claimed_at: None,
                    claim_token: 0,
                    max_attempts: row.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS),
                    dead_reason: None,
                    run_id: row.run_id.clone(),
                    namespace: row.namespace.clone(),
                    task_queue: row.task_queue.clone(),
                    node: row.node.clone(),
                },
            );
        }
        inserted
    }

    fn claim(&mut self, now: Millis, limit: u32, filter: &ClaimFilter) -> Vec<OutboxRow> {
        let scope = filter.scope.clone().unwrap_or_default();
        let mut due: Vec<&OutboxRow> = self
            .outbox
            .values()
            .filter(|r| r.status == OutboxStatus::Pending && r.visible_after <= now)
            .filter(|r| !filter.exclude_workflows.contains(&r.workflow_id))
            .filter(|r| scope.namespace.is_none() || r.namespace == scope.namespace)
            .collect();
        due.sort_by_key(|r| (r.visible_after, r.dispatch_key.clone()));
        let keys: Vec<String> = due
            .into_iter()
            .take(limit as usize)
            .map(|r| r.dispatch_key.clone())
            .collect();
        if !keys.is_empty() {
            self.last_token += 1;
        }
        let token = self.last_token;
        keys.iter()
            .map(|key| {
                let row = self.outbox.get_mut(key).expect("due row");
                row.status = OutboxStatus::Claimed;
                row.claimed_at = Some(now);
                row.claim_token = token;
                row.clone()
            })
            .collect()
    }

    /// The token `spec` names for `key`.
    fn token(&self, key: &str, spec: Token) -> u64 {
        match spec {
            Token::Current => self.outbox.get(key).map_or(0, |r| r.claim_token),
            Token::Fixed(token) => token,
        }
    }

    /// Why a transition of `key` under `token` is refused, `None` when the row is live and
    /// the token is its current one.
    fn refusal(&self, key: &str, token: u64) -> Option<Error> {
        match self.outbox.get(key) {
            None => Some(Error::not_found(OUTBOX_ROW, key)),
            Some(row) if !is_live(row) => Some(conflict(OUTBOX_ROW, key, None, None)),
            Some(row) if row.claim_token != token => Some(conflict(
                OUTBOX_ROW,
                key,
                Some(token),
                Some(row.claim_token),
            )),
            Some(_) => None,
        }
    }

    fn transition(
        &mut self,
        key: &str,
        token: u64,
        change: impl FnOnce(&mut OutboxRow),
    ) -> Result<()> {
        if let Some(error) = self.refusal(key, token) {
            return Err(error);
        }
        change(self.outbox.get_mut(key).expect("live row"));
        Ok(())
    }

    fn complete_batch(&mut self, claims: &[OutboxClaim]) -> Result<()> {
        let mut seen = BTreeSet::new();
        for (i, claim) in claims.iter().enumerate() {
            if !seen.insert(&claim.dispatch_key) {
                return Err(invalid(format!("claims[{i}].dispatchKey")));
            }
        }
        let refused = claims
            .iter()
            .find_map(|c| self.refusal(&c.dispatch_key, c.claim_token));
        if let Some(error) = refused {
            return Err(error);
        }
        for claim in claims {
            let row = self.outbox.get_mut(&claim.dispatch_key).expect("live row");
            row.status = OutboxStatus::Done;
        }
        Ok(())
    }

    fn retry(
        &mut self,
        key: &str,
        token: u64,
        attempt: u32,
        visible_after: Millis,
    ) -> Result<OutboxStatus> {
        self.transition(key, token, |row| {
            row.attempt = attempt;
            if attempt >= row.max_attempts {
                row.status = OutboxStatus::Failed;
                row.dead_reason = Some(format!(
                    "retry to attempt {attempt} reaches the maximum of {}",
                    row.max_attempts
                ));
            } else {
                row.status = OutboxStatus::Pending;
                row.visible_after = visible_after;
                row.claimed_at = None;
            }
        })?;
        Ok(self.outbox[key].status)
    }

    fn rearm(&mut self, older_than: Millis, visible_after: Millis, limit: u32) -> Vec<OutboxRow> {
        let mut stale: Vec<&OutboxRow> = self
            .outbox
            .values()
            .filter(|r| r.status == OutboxStatus::Claimed && r.claimed_at < Some(older_than))
            .collect();
        stale.sort_by_key(|r| (r.claimed_at, r.dispatch_key.clone()));
        let mut keys: Vec<String> = stale
            .into_iter()
            .take(limit as usize)
            .map(|r| r.dispatch_key.clone())
            .collect();
        keys.sort();
        keys.iter()
            .map(|key| {
                let row = self.outbox.get_mut(key).expect("stale row");
                row.attempt += 1;
                if row.attempt >= row.max_attempts {
                    row.status = OutboxStatus::Failed;
                    row.dead_reason = Some(format!(
                        "stale claim re-armed to attempt {} reaches the maximum of {}",
                        row.attempt, row.max_attempts
                    ));
                } else {
                    row.status = OutboxStatus::Pending;
                    row.visible_after = visible_after;
                    row.claimed_at = None;
                }
                row.clone()
            })
            .collect()
    }

    fn cancel_workflow(&mut self, workflow: &str) -> Vec<String> {
        let mut cancelled = Vec::new();
        for row in self.outbox.values_mut() {
            if row.workflow_id == workflow && is_live(row) {
                row.status = OutboxStatus::Cancelled;
                cancelled.push(row.dispatch_key.clone());
            }
        }
        cancelled
    }

    fn row_state(&self, key: &str) -> Option<OutboxRowState> {
        self.outbox.get(key).map(|row| OutboxRowState {
            status: row.status,
            attempt: row.attempt,
            visible_after: row.visible_after,
            claimed_at: row.claimed_at,
            claim_token: row.claim_token,
            max_attempts: row.max_attempts,
            dead_reason: row.dead_reason.clone(),
        })
    }

    fn live_workflows(&self) -> Vec<String> {
        let ids: BTreeSet<String> = self
            .outbox
            .values()
            .filter(|r| is_live(r))
            .map(|r| r.workflow_id.clone())
            .collect();
        ids.into_iter().collect()
    }

    fn load_checkpoint(&self, id: &str) -> Result<Checkpoint> {
        self.checkpoints
            .get(id)
            .cloned()
            .ok_or_else(|| Error::not_found("checkpoint", id))
    }

    fn write_checkpoint(&mut self, checkpoint: &Checkpoint, expected: Option<u64>) -> Result<()> {
        check_written_revision(checkpoint.revision, expected)?;
        let id = &checkpoint.checkpoint_id;
        let actual = self.checkpoints.get(id).map(|c| c.revision);
        if actual != expected {
            return Err(conflict("checkpoint", id, expected, actual));
        }
        self.checkpoints.insert(id.clone(), checkpoint.clone());
        Ok(())
    }

    fn run_checkpoints(&self, run: &str) -> Vec<Checkpoint> {
        self.checkpoints
            .values()
            .filter(|c| c.run_id.as_deref() == Some(run))
            .cloned()
            .collect()
    }

    fn find_effect(&self, capability: &str, key: &str) -> Option<EffectRecord> {
        self.effects
            .values()
            .find(|e| e.capability_id == capability && e.idempotency_key.as_deref() == Some(key))
            .cloned()
    }

    fn write_effect(&mut self, record: &EffectRecord, expected: Option<u64>) -> Result<()> {
        check_written_revision(record.revision, expected)?;
        match expected {
            None => self.check_effect_create(record)?,
            Some(n) => self.check_effect_update(record, n)?,
        }
        self.effects
            .insert(record.effect_id.clone(), record.clone());
        Ok(())
    }

    fn check_effect_create(&self, record: &EffectRecord) -> Result<()> {
        let id = &record.effect_id;
        if let Some(stored) = self.effects.get(id) {
            return Err(conflict("effect", id, None, Some(stored.revision)));
        }
        let Some(key) = &record.idempotency_key else {
            return Ok(());
        };
        match self.find_effect(&record.capability_id, key) {
            Some(owner) => Err(Error::IdempotencyConflict {
                entity: "effect",
                id: id.clone(),
                key: key.clone(),
                owner: owner.effect_id,
            }),
            None => Ok(()),
        }
    }

    fn check_effect_update(&self, record: &EffectRecord, expected: u64) -> Result<()> {
        let id = &record.effect_id;
        let Some(stored) = self.effects.get(id) else {
            return Err(conflict("effect", id, Some(expected), None));
        };
        if stored.revision != expected {
            return Err(conflict(
                "effect",
                id,
                Some(expected),
                Some(stored.revision),
            ));
        }
        if stored.capability_id != record.capability_id {
            return Err(invalid("capabilityId"));
        }
        if stored.idempotency_key != record.idempotency_key {
            return Err(invalid("idempotencyKey"));
        }
        if !stored.status.kind().can_become(record.status.kind()) {
            return Err(conflict("effect", id, Some(expected), Some(expected)));
        }
        Ok(())
    }

    fn unresolved_effects(&self) -> Vec<EffectRecord> {
        let mut unresolved: Vec<EffectRecord> = self
            .effects
            .values()
            .filter(|e| {
                matches!(
                    e.status.kind(),
                    EffectStatusKind::Started | EffectStatusKind::OutcomeUnknown
                )
            })
            .cloned()
            .collect();
        unresolved.sort_by(|a, b| (a.updated_at, &a.effect_id).cmp(&(b.updated_at, &b.effect_id)));
        unresolved
    }
}

/// One event's effect on the projection, as the status docs describe it.
fn apply(summary: &mut WorkflowSummary, event: &Event) {
    let at = event.recorded_at;
    summary.updated_at = at;
    let close = |summary: &mut WorkflowSummary, status| {
        summary.status = status;
        summary.closed_at = Some(at);
    };
    match &event.kind {
        EventKind::Started {
            workflow_type,
            run_id,
        } => {
            summary.status = WorkflowStatus::Running;
            summary.workflow_type = Some(workflow_type.clone());
            summary.run_id = Some(run_id.clone());
            summary.started_at = Some(at);
            summary.closed_at = None;
        }
        EventKind::Completed => close(summary, WorkflowStatus::Completed),
        EventKind::Failed { .. } => close(summary, WorkflowStatus::Failed),
        EventKind::Cancelled => close(summary, WorkflowStatus::Cancelled),
        EventKind::Paused => summary.status = WorkflowStatus::Paused,
        EventKind::Resumed => summary.status = WorkflowStatus::Running,
        EventKind::ContinuedAsNew { .. } => summary.status = WorkflowStatus::ContinuedAsNew,
        EventKind::Custom { .. } => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The harness: runs each operation on both and compares
// ---------------------------------------------------------------------------------------------

/// Drops the reason of an invalid-input error: it is prose, while the field is the contract.
fn normalized<T>(result: Result<T>) -> Result<T> {
    result.map_err(normalized_error)
}

/// An error without its wording, which the model does not reproduce.
fn normalized_error(error: Error) -> Error {
    match error {
        Error::InvalidInput { field, .. } => invalid(field),
        Error::Operation { index, error } => normalized_error(*error).in_operation(index),
        other => other,
    }
}

fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("a typed answer writes out as JSON")
}

fn same<T: PartialEq + Debug>(
    what: &str,
    store: Result<T>,
    model: Result<T>,
) -> std::result::Result<(), TestCaseError> {
    let store = normalized(store);
    let model = normalized(model);
    prop_assert_eq!(store, model, "{}", what);
    Ok(())
}

struct Harness {
    path: PathBuf,
    store: Option<SqliteStore>,
    model: Model,
    /// The last step committed under a request id, for [`Op::Resend`].
    last_step: Option<runstore::Step>,
    /// The number of the newest change read from the store's change feed.
    feed_seen: u64,
    now: Millis,
    _dir: tempfile::TempDir,
}

type Step = std::result::Result<(), TestCaseError>;

fn open(path: &Path) -> SqliteStore {
    // Relaxed durability skips the fsync per commit; a reopening within one process still
    // reads every commit back, which is what the test checks.
    SqliteStore::open_with(path, Durability::Relaxed).expect("open the store")
}

impl Harness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("model.db");
        Harness {
            store: Some(open(&path)),
            path,
            model: Model::default(),
            last_step: None,
            feed_seen: 0,
            now: START,
            _dir: dir,
        }
    }

    fn store(&self) -> &SqliteStore {
        self.store.as_ref().expect("store is open")
    }

    fn reopen(&mut self) -> Step {
        // Close first, so that the reopened store reads the file, not a live connection's WAL.
        self.store = None;
        self.store = Some(open(&self.path));
        self.compare_everything()
    }

    fn step(&mut self, op: &Op) -> Step {
        match op {
            Op::Append { .. }
            | Op::AppendWithOutbox { .. }
            | Op::ReadHistory(_)
            | Op::ReadHead(_)
            | Op::Summary(_) => self.journal_step(op),
            Op::CheckpointWrite { .. } | Op::LoadCheckpoint(_) => self.checkpoint_step(op),
            Op::EffectWrite(write) => self.effect_write(write),
            Op::LoadEffect(effect) => {
                let id = effect_id(*effect);
                let expected = self.model.effects.get(&id).cloned();
                same("load_effect", self.store().load_effect(&id), Ok(expected))
            }
            Op::FindEffect { capability, key } => {
                let (capability, key) = (capability_id(*capability), idempotency_key(*key));
                let expected = self.model.find_effect(&capability, &key);
                same(
                    "find_effect",
                    self.store().find_effect(&capability, &key),
                    Ok(expected),
                )
            }
            Op::Reopen => self.reopen(),
            Op::Step { ops, request } => self.commit(ops, request.map(request_id)),
            Op::Purge { age, limit } => {
                let closed_before = self.now - age;
                let answer = self.store().purge_workflows(closed_before, *limit);
                let expected = self.model.purge(closed_before, *limit);
                same("purge_workflows", answer, expected)
            }
            Op::Resend => match self.last_step.take() {
                Some(step) => self.send(step),
                None => Ok(()),
            },
            _ => self.outbox_step(op),
        }
    }

    fn journal_step(&mut self, op: &Op) -> Step {
        match op {
            Op::Append {
                workflow,
                events,
                head,
            } => self.append(*workflow, events, head, None),
            Op::AppendWithOutbox {
                workflow,
                events,
                head,
                rows,
            } => self.append(*workflow, events, head, Some(rows)),
            Op::ReadHistory(workflow) => {
                let id = workflow_id(*workflow);
                let expected = self.model.history(&id);
                same(
                    "read_history",
                    self.store()
                        .read_history(&id, &PageRequest::default())
                        .map(|page| page.items),
                    Ok(expected),
                )
            }
            Op::ReadHead(workflow) => {
                let id = workflow_id(*workflow);
                same("head", self.store().head(&id), Ok(self.model.head(&id)))
            }
            Op::Summary(workflow) => {
                let id = workflow_id(*workflow);
                let expected = self.model.summary(&id);
                same(
                    "workflow_summary",
                    self.store().workflow_summary(&id),
                    expected,
                )
            }
            _ => unreachable!("not a journal operation"),
        }
    }

    fn append(
        &mut self,
        workflow: usize,
        specs: &[EventSpec],
        head: &Head,
        rows: Option<&[RowSpec]>,
    ) -> Step {
        let id = workflow_id(workflow);
        let events = self.events(specs);
        let expected_seq = match head {
            Head::Current => self.model.head(&id),
            Head::Fixed(seq) => *seq,
        };
        let outbox: Vec<NewOutboxRow> = rows
            .unwrap_or_default()
            .iter()
            .map(|r| r.row(self.now))
            .collect();
        let answer = match rows {
            None => self.store().append(&id, &events, expected_seq),
            Some(_) => self
                .store()
                .append_with_outbox(&id, &events, expected_seq, &outbox),
        };
        let expected = self
            .model
            .append_with_outbox(&id, &events, expected_seq, &outbox);
        same("append", answer, expected)
    }

    fn outbox_step(&mut self, op: &Op) -> Step {
        match op {
            Op::InsertOutbox(specs) => {
                let rows: Vec<NewOutboxRow> = specs.iter().map(|r| r.row(self.now)).collect();
                let answer = self.store().insert_outbox(&rows);
                same("insert_outbox", answer, self.model.insert_outbox(&rows))
            }
            Op::Claim {
                advance,
                limit,
                exclude,
                namespace,
            } => {
                self.now += advance;
                let filter = ClaimFilter {
                    exclude_workflows: exclude.iter().map(|w| workflow_id(*w)).collect(),
                    scope: namespace.map(|n| ClaimScope {
                        namespace: NAMESPACES[n].map(str::to_owned),
                        ..ClaimScope::default()
                    }),
                };
                let answer = self.store().claim_outbox(self.now, *limit, &filter);
                let expected = self.model.claim(self.now, *limit, &filter);
                same("claim_outbox", answer, Ok(expected))
            }
            Op::CompleteBatch(claims) => {
                let claims: Vec<OutboxClaim> = claims
                    .iter()
                    .map(|(key, token)| {
                        let key = dispatch_key(*key);
                        OutboxClaim {
                            claim_token: self.model.token(&key, *token),
                            dispatch_key: key,
                        }
                    })
                    .collect();
                let answer = self.store().complete_outbox_batch(&claims);
                same(
                    "complete_outbox_batch",
                    answer,
                    self.model.complete_batch(&claims),
                )
            }
            Op::Rearm { age, delay, limit } => {
                let (older_than, visible_after) = (self.now - age, self.now + delay);
                let answer = self
                    .store()
                    .rearm_stale_claims(older_than, visible_after, *limit);
                let expected = self.model.rearm(older_than, visible_after, *limit);
                same("rearm_stale_claims", answer, Ok(expected))
            }
            Op::CancelWorkflow(workflow) => {
                let id = workflow_id(*workflow);
                let answer = self.store().cancel_workflow_outbox(&id);
                same(
                    "cancel_workflow_outbox",
                    answer,
                    Ok(self.model.cancel_workflow(&id)),
                )
            }
            Op::RowState(key) => {
                let key = dispatch_key(*key);
                let expected = self.model.row_state(&key);
                same(
                    "outbox_row_state",
                    self.store().outbox_row_state(&key),
                    Ok(expected),
                )
            }
            _ => self.outbox_transition(op),
        }
    }

    fn outbox_transition(&mut self, op: &Op) -> Step {
        match op {
            Op::Complete(key, token) => {
                let key = dispatch_key(*key);
                let token = self.model.token(&key, *token);
                let answer = self.store().complete_outbox(&key, token);
                let expected = self
                    .model
                    .transition(&key, token, |row| row.status = OutboxStatus::Done);
                same("complete_outbox", answer, expected)
            }
            Op::Retry {
                key,
                token,
                attempt,
                delay,
            } => {
                let key = dispatch_key(*key);
                let token = self.model.token(&key, *token);
                let visible_after = self.now + delay;
                let answer = self
                    .store()
                    .retry_outbox(&key, token, *attempt, visible_after);
                let expected = self.model.retry(&key, token, *attempt, visible_after);
                same("retry_outbox", answer, expected)
            }
            Op::Fail(key, token) => {
                let key = dispatch_key(*key);
                let token = self.model.token(&key, *token);
                let answer = self.store().fail_outbox(&key, token, "gave up");
                let expected = self.model.transition(&key, token, |row| {
                    row.status = OutboxStatus::Failed;
                    row.dead_reason = Some("gave up".into());
                });
                same("fail_outbox", answer, expected)
            }
            _ => unreachable!("not an outbox operation"),
        }
    }

    fn checkpoint_step(&mut self, op: &Op) -> Step {
        match op {
            Op::CheckpointWrite { .. } => {
                let (record, expected) = self.checkpoint_write(op);
                let answer = self.store().compare_and_swap_checkpoint(&record, expected);
                let modelled = self.model.write_checkpoint(&record, expected);
                same("compare_and_swap_checkpoint", answer, modelled)
            }
            Op::LoadCheckpoint(checkpoint) => {
                let id = checkpoint_id(*checkpoint);
                let expected = self.model.load_checkpoint(&id);
                same(
                    "load_checkpoint",
                    self.store().load_checkpoint(&id),
                    expected,
                )
            }
            _ => unreachable!("not a checkpoint operation"),
        }
    }

    fn effect_write(&mut self, write: &EffectWrite) -> Step {
        let (record, expected) = self.effect_record(write);
        let answer = self.store().compare_and_swap_effect(&record, expected);
        let modelled = self.model.write_effect(&record, expected);
        same("compare_and_swap_effect", answer, modelled)
    }

    /// The checkpoint a [`Op::CheckpointWrite`] writes and the revision it expects.
    fn checkpoint_write(&self, op: &Op) -> (Checkpoint, Option<u64>) {
        let Op::CheckpointWrite {
            checkpoint,
            run,
            state,
            expected,
            written,
        } = op
        else {
            unreachable!("not a checkpoint write")
        };
        let id = checkpoint_id(*checkpoint);
        let stored = self.model.checkpoints.get(&id).map(|c| c.revision);
        let expected = resolve(expected, stored);
        let record = Checkpoint {
            checkpoint_id: id,
            run_id: run.map(run_id),
            revision: revision(written, expected),
            state: json!({ "state": state }),
            updated_at: self.now,
        };
        (record, expected)
    }

    /// The effect record an [`Op::EffectWrite`] writes and the revision it expects.
    fn effect_record(&self, write: &EffectWrite) -> (EffectRecord, Option<u64>) {
        let id = effect_id(write.effect);
        let stored = self.model.effects.get(&id);
        let (capability, key) = match stored {
            Some(e) if write.keep_identity => (e.capability_id.clone(), e.idempotency_key.clone()),
            _ => (
                capability_id(write.capability),
                write.key.map(idempotency_key),
            ),
        };
        let expected = resolve(&write.expected, stored.map(|e| e.revision));
        let record = EffectRecord {
            effect_id: id,
            capability_id: capability,
            idempotency_key: key,
            revision: revision(&write.written, expected),
            request: json!({ "call": write.effect }),
            status: effect_status(write.status),
            updated_at: self.now,
        };
        (record, expected)
    }

    /// Commits the writes among `ops` as one step, on the store and on the model.
    fn commit(&mut self, ops: &[Op], request_id: Option<String>) -> Step {
        let operations = ops.iter().filter_map(|op| self.operation(op)).collect();
        self.send(runstore::Step {
            request_id,
            operations,
        })
    }

    fn send(&mut self, step: runstore::Step) -> Step {
        let mut answer = self.store().commit(&step);
        let expected = self.model.commit(&step);
        if step.request_id.is_some() {
            self.last_step = Some(step);
        }
        // The feed's number is checked by `follow_feed`; the model knows only the change.
        let numbered = answer
            .as_mut()
            .ok()
            .and_then(|outcome| outcome.change.as_mut());
        let number = numbered.map(|change| change.number.take());
        if let Some(number) = number {
            prop_assert_eq!(number, Some(self.feed_seen + 1), "the step's change number");
        }
        same("commit", answer, expected)
    }

    /// Reads the change feed from the last change seen: every commit since is there, numbered
    /// one after another, and none is missing or told as a reset.
    fn follow_feed(&mut self) -> Step {
        let feed = self.store().changes_since(self.feed_seen, 10_000);
        let feed = feed.map_err(|e| TestCaseError::fail(format!("changes_since: {e}")))?;
        prop_assert!(!feed.reset, "the feed reaches back to {}", self.feed_seen);
        for change in &feed.changes {
            self.feed_seen += 1;
            prop_assert_eq!(change.number, Some(self.feed_seen), "numbered in order");
            prop_assert!(!change.areas.is_empty(), "a change names what it changed");
        }
        prop_assert_eq!(feed.newest, self.feed_seen, "nothing past the newest");
        Ok(())
    }

    /// A write as an operation of a step, built against the state before the step; `None`
    /// for a read (or a claim, whose clock this test moves outside steps).
    fn operation(&self, op: &Op) -> Option<Operation> {
        let token = |key: &str, token: &Token| self.model.token(key, *token);
        Some(match op {
            Op::Append {
                workflow,
                events,
                head,
            } => self.append_operation(*workflow, events, head, &[]),
            Op::AppendWithOutbox {
                workflow,
                events,
                head,
                rows,
            } => self.append_operation(*workflow, events, head, rows),
            Op::InsertOutbox(specs) => Operation::InsertOutbox {
                rows: specs.iter().map(|r| r.row(self.now)).collect(),
            },
            Op::Complete(key, spec) => {
                let key = dispatch_key(*key);
                Operation::CompleteOutbox {
                    claim_token: token(&key, spec),
                    dispatch_key: key,
                }
            }
            Op::Retry {
                key,
                token: spec,
                attempt,
                delay,
            } => {
                let key = dispatch_key(*key);
                Operation::RetryOutbox {
                    claim_token: token(&key, spec),
                    dispatch_key: key,
                    next_attempt: *attempt,
                    visible_after: self.now + delay,
                }
            }
            Op::Fail(key, spec) => {
                let key = dispatch_key(*key);
                Operation::FailOutbox {
                    claim_token: token(&key, spec),
                    dispatch_key: key,
                    reason: "gave up".into(),
                }
            }
            Op::CancelWorkflow(workflow) => Operation::CancelWorkflowOutbox {
                workflow_id: workflow_id(*workflow),
            },
            Op::Purge { age, limit } => Operation::PurgeWorkflows {
                closed_before: self.now - age,
                limit: *limit,
            },
            Op::CheckpointWrite { .. } => {
                let (checkpoint, expected_revision) = self.checkpoint_write(op);
                Operation::CompareAndSwapCheckpoint {
                    checkpoint,
                    expected_revision,
                }
            }
            Op::EffectWrite(write) => {
                let (record, expected_revision) = self.effect_record(write);
                Operation::CompareAndSwapEffect {
                    record,
                    expected_revision,
                }
            }
            _ => return None,
        })
    }

    fn append_operation(
        &self,
        workflow: usize,
        specs: &[EventSpec],
        head: &Head,
        rows: &[RowSpec],
    ) -> Operation {
        let workflow_id = workflow_id(workflow);
        let expected_seq = match head {
            Head::Current => self.model.head(&workflow_id),
            Head::Fixed(seq) => *seq,
        };
        Operation::Append {
            events: self.events(specs),
            expected_seq,
            outbox: rows.iter().map(|r| r.row(self.now)).collect(),
            workflow_id,
        }
    }

    fn events(&self, specs: &[EventSpec]) -> Vec<Event> {
        specs
            .iter()
            .enumerate()
            .map(|(i, spec)| spec.event(self.now, i))
            .collect()
    }

    fn compare_everything(&self) -> Step {
        self.compare_journal()?;
        self.compare_outbox()?;
        self.compare_checkpoints()?;
        self.compare_effects()
    }

    fn compare_journal(&self) -> Step {
        let (store, model) = (self.store(), &self.model);
        for id in (0..WORKFLOWS).map(workflow_id) {
            same(
                "read_history",
                store
                    .read_history(&id, &PageRequest::default())
                    .map(|page| page.items),
                Ok(model.history(&id)),
            )?;
            same("head", store.head(&id), Ok(model.head(&id)))?;
            same("summary", store.workflow_summary(&id), model.summary(&id))?;
        }
        let ids = model.journal.keys().cloned().collect();
        same(
            "list_workflow_ids",
            store
                .list_workflow_ids(&PageRequest::default())
                .map(|page| page.items),
            Ok(ids),
        )?;
        let active = model.workflow_ids(|s| !s.is_terminal());
        same(
            "list_active",
            store
                .list_active(&PageRequest::default())
                .map(|page| page.items),
            Ok(active),
        )?;
        let paused = model.workflow_ids(|s| s == WorkflowStatus::Paused);
        same(
            "list_paused",
            store
                .list_paused(&PageRequest::default())
                .map(|page| page.items),
            Ok(paused),
        )
    }

    fn compare_outbox(&self) -> Step {
        let (store, model) = (self.store(), &self.model);
        for key in (0..DISPATCH_KEYS).map(dispatch_key) {
            same(
                "outbox_row_state",
                store.outbox_row_state(&key),
                Ok(model.row_state(&key)),
            )?;
        }
        let rows = model.outbox.values().cloned().collect();
        same(
            "list_outbox",
            store
                .list_outbox(None, &PageRequest::first(MAX_PAGE_LIMIT))
                .map(|page| page.items),
            Ok(rows),
        )?;
        same(
            "list_unsettled_workflows",
            store
                .list_unsettled_workflows(&PageRequest::default())
                .map(|page| page.items),
            Ok(model.live_workflows()),
        )
    }

    fn compare_checkpoints(&self) -> Step {
        let (store, model) = (self.store(), &self.model);
        // The JSON text answers (what JS gets) are the typed answers written out.
        for id in (0..CHECKPOINTS).map(checkpoint_id) {
            same(
                "load_checkpoint",
                store.load_checkpoint(&id),
                model.load_checkpoint(&id),
            )?;
            same(
                "load_checkpoint_json",
                store.load_checkpoint_json(&id),
                model.load_checkpoint(&id).map(|c| json_text(&c)),
            )?;
        }
        for run in (0..RUNS).map(run_id) {
            same(
                "list_run_checkpoints",
                store
                    .list_run_checkpoints(&run, &PageRequest::default())
                    .map(|page| page.items),
                Ok(model.run_checkpoints(&run)),
            )?;
            let page = PageRequest::first(1);
            let typed = store.list_run_checkpoints(&run, &page);
            same(
                "list_run_checkpoints_json",
                store.list_run_checkpoints_json(&run, &page),
                typed.map(|p| json_text(&p)),
            )?;
        }
        Ok(())
    }

    fn compare_effects(&self) -> Step {
        let (store, model) = (self.store(), &self.model);
        for id in (0..EFFECTS).map(effect_id) {
            same(
                "load_effect",
                store.load_effect(&id),
                Ok(model.effects.get(&id).cloned()),
            )?;
        }
        for capability in (0..CAPABILITIES).map(capability_id) {
            for key in (0..IDEMPOTENCY_KEYS).map(idempotency_key) {
                same(
                    "find_effect",
                    store.find_effect(&capability, &key),
                    Ok(model.find_effect(&capability, &key)),
                )?;
            }
        }
        let all = model.effects.values().cloned().collect();
        same(
            "list_effects",
            store
                .list_effects(None, &PageRequest::first(MAX_PAGE_LIMIT))
                .map(|page| page.items),
            Ok(all),
        )?;
        same(
            "list_unresolved_effects",
            store
                .list_unresolved_effects(&PageRequest::default())
                .map(|page| page.items),
            Ok(model.unresolved_effects()),
        )
    }
}

fn resolve(expected: &Expected, stored: Option<u64>) -> Option<u64> {
    match expected {
        Expected::Current => stored,
        Expected::Create => None,
        Expected::Stale(n) => Some(*n),
    }
}

fn revision(written: &Written, expected: Option<u64>) -> u64 {
    match written {
        Written::Implied => expected.map_or(0, |n| n + 1),
        Written::Other(n) => *n,
    }
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        // Beside this file, since a test under tests/ has no lib.rs for the default to find.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn store_agrees_with_the_model(ops in prop::collection::vec(op_strategy(), 1..=MAX_OPS)) {
        let mut harness = Harness::new();
        for (index, op) in ops.iter().enumerate() {
            harness
                .step(op)
                .and_then(|()| harness.follow_feed())
                .map_err(|e| TestCaseError::fail(format!("operation {index} {op:?}: {e}")))?;
        }
        harness
            .compare_everything()
            .map_err(|e| TestCaseError::fail(format!("final state: {e}")))?;
    }
}
