//! The steps the writer commits and the checker expects: step `k` depends only on `k` and the
//! seed, so a checker that knows how many steps committed knows the whole store.

use runstore::*;
use serde_json::json;

/// Workflows the appends go round.
pub const WORKFLOWS: u64 = 4;
/// Most events one step appends.
const MAX_EVENTS: u64 = 50;
/// Step `k` completes the outbox row of step `k - SETTLE_LAG`.
pub const SETTLE_LAG: u64 = 3;
/// Step `k` cancels the timer of step `k - TIMER_LAG`.
pub const TIMER_LAG: u64 = 2;
/// The checkpoint whose revision counts the steps: `revision = steps committed - 1`.
pub const CHECKPOINT: &str = "cp";
/// The effect even steps move on, and the visibility record odd steps replace.
pub const EFFECT: &str = "fx";
pub const VISIBILITY: &str = "vis";

/// A tiny xorshift generator: deterministic per seed, enough for kill points.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(mix(seed) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// splitmix64's finaliser: spreads neighbouring inputs over the whole range.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub fn workflow(k: u64) -> String {
    format!("wf-{}", k % WORKFLOWS)
}

pub fn outbox_key(k: u64) -> String {
    format!("step-{k}")
}

pub fn timer_id(k: u64) -> String {
    format!("t-{k}")
}

/// Steps at `k % 3 == 2` go without a request id; the others are exactly-once.
pub fn request_id(k: u64) -> Option<String> {
    (k % 3 != 2).then(|| format!("req-{k}"))
}

/// How many of steps `0..m` go under a request id.
pub fn request_ids_below(m: u64) -> u64 {
    m - m / 3
}

pub fn checkpoint(k: u64) -> Checkpoint {
    Checkpoint {
        checkpoint_id: CHECKPOINT.into(),
        run_id: None,
        revision: k,
        state: json!({ "step": k }),
        updated_at: k as Millis,
    }
}

/// The effect as even step `k` leaves it (revision `k / 2`).
pub fn effect(k: u64) -> EffectRecord {
    EffectRecord {
        effect_id: EFFECT.into(),
        capability_id: "crash".into(),
        idempotency_key: None,
        revision: k / 2,
        request: json!({ "step": k }),
        status: EffectStatus::Started,
        updated_at: k as Millis,
    }
}

/// The visibility record as odd step `k` leaves it.
pub fn visibility(k: u64) -> VisibilityRecord {
    VisibilityRecord {
        workflow_id: VISIBILITY.into(),
        run_id: format!("r{k}"),
        workflow_type: "crash".into(),
        status: "running".into(),
        start_time: k as Millis,
        close_time: None,
        failed_step: None,
        failure_reason: None,
        search_attributes: json!({ "step": k }),
        head: None,
    }
}

fn outbox_row(k: u64) -> NewOutboxRow {
    NewOutboxRow {
        dispatch_key: outbox_key(k),
        workflow_id: workflow(k),
        ordinal: k,
        activity_type: "act".into(),
        input: k.to_le_bytes().to_vec(),
        visible_after: 0,
        attempt: 0,
        run_id: None,
        namespace: None,
        task_queue: None,
        node: None,
        max_attempts: None,
    }
}

/// The step sizes of one seed, with the journal heads they lead to.
pub struct Plan {
    seed: u64,
    /// `ends[k]`: the head of step `k`'s workflow once step `k` committed.
    ends: Vec<u64>,
}

impl Plan {
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            ends: Vec::new(),
        }
    }

    /// How many events step `k` appends: 1 to [`MAX_EVENTS`], so that kills land inside
    /// commits of different lengths.
    pub fn size(&self, k: u64) -> u64 {
        1 + mix(self.seed ^ mix(k)) % MAX_EVENTS
    }

    /// The head of step `k`'s workflow before step `k`.
    pub fn head_before(&mut self, k: u64) -> u64 {
        if k < WORKFLOWS {
            return 0;
        }
        while self.ends.len() as u64 <= k - WORKFLOWS {
            let j = self.ends.len() as u64;
            let end = self.head_before(j) + self.size(j);
            self.ends.push(end);
        }
        self.ends[(k - WORKFLOWS) as usize]
    }

    /// The head of workflow `w` once steps `0..n` committed.
    pub fn head_after(&mut self, n: u64, w: u64) -> u64 {
        match (0..n).rev().find(|j| j % WORKFLOWS == w) {
            Some(last) => self.head_before(last) + self.size(last),
            None => 0,
        }
    }

    pub fn events(&self, k: u64) -> Vec<Event> {
        (0..self.size(k))
            .map(|i| Event {
                kind: EventKind::Custom {
                    name: format!("s{k}"),
                },
                recorded_at: k as Millis,
                data: json!({ "step": k, "i": i }),
            })
            .collect()
    }

    /// Step `k`: an append with its outbox row, the checkpoint swap to revision `k`, a timer,
    /// the settlement of an earlier row, the cancellation of an earlier timer, and an effect
    /// swap (even `k`) or a visibility upsert (odd `k`).
    pub fn step(&mut self, k: u64) -> Step {
        let mut operations = vec![
            Operation::Append {
                workflow_id: workflow(k),
                events: self.events(k),
                expected_seq: self.head_before(k),
                outbox: vec![outbox_row(k)],
            },
            Operation::CompareAndSwapCheckpoint {
                checkpoint: checkpoint(k),
                expected_revision: k.checked_sub(1),
            },
            Operation::ScheduleTimer {
                workflow_id: workflow(k),
                timer_id: timer_id(k),
                fire_at: k as Millis,
            },
        ];
        if let Some(earlier) = k.checked_sub(TIMER_LAG) {
            operations.push(Operation::CancelTimer {
                workflow_id: workflow(earlier),
                timer_id: timer_id(earlier),
            });
        }
        if let Some(earlier) = k.checked_sub(SETTLE_LAG) {
            // Never claimed: the row's token is still 0.
            operations.push(Operation::CompleteOutbox {
                dispatch_key: outbox_key(earlier),
                claim_token: 0,
            });
        }
        operations.push(if k.is_multiple_of(2) {
            Operation::CompareAndSwapEffect {
                record: effect(k),
                expected_revision: (k / 2).checked_sub(1),
            }
        } else {
            Operation::UpsertVisibility {
                record: visibility(k),
            }
        });
        Step {
            request_id: request_id(k),
            operations,
        }
    }

    /// What committing step `k` reports.
    pub fn outcomes(&mut self, k: u64) -> Vec<OperationOutcome> {
        let mut outcomes = vec![
            OperationOutcome::Append {
                head: self.head_before(k) + self.size(k),
            },
            OperationOutcome::CompareAndSwapCheckpoint { revision: k },
            OperationOutcome::ScheduleTimer {},
        ];
        if k >= TIMER_LAG {
            outcomes.push(OperationOutcome::CancelTimer { removed: true });
        }
        if k >= SETTLE_LAG {
            outcomes.push(OperationOutcome::CompleteOutbox {});
        }
        outcomes.push(if k.is_multiple_of(2) {
            OperationOutcome::CompareAndSwapEffect { revision: k / 2 }
        } else {
            OperationOutcome::UpsertVisibility {}
        });
        outcomes
    }
}
