//! Power loss, simulated: what `full` and `relaxed` promise, checked the way SQLite checks its
//! own commits, on a VFS that keeps every write not yet covered by a sync in a pending list and,
//! at a power cut, keeps, loses, tears or reorders them (`support/crash_vfs.rs`).
//!
//! Each seed runs a random workload of actions on a new simulated disk: single calls (appends
//! with outbox rows, checkpoint and effect compare-and-swaps, outbox completions, timers,
//! artifact puts), steps of several areas through `commit` (half under a request id), outbox
//! claims, artifact purges, WAL checkpoints, and closing and reopening the store. The power goes
//! at a random mutating file call: anywhere, including inside the schema migration of the new
//! database (one seed in eight), at a sync or just after one (one in four of the others),
//! inside a WAL checkpoint, or inside the close of the store. The store is then reopened from
//! what the platter holds and its whole content (every table, every row) compared with a
//! reference store that replays the commits that returned:
//! - `full`: the content equals the state after every returned commit (or after the commit in
//!   flight at the cut too, which may or may not have committed);
//! - `relaxed`: it equals the state after some prefix of the returned commits (or after all of
//!   them and the one in flight);
//! - always: `PRAGMA integrity_check` is ok, and the store opens.
//!
//! Matching the whole content also proves that no step is there in part.
//!
//! Both media are covered: a native file (WAL with shared memory, the unix VFS's rules) and the
//! OPFS set-up (sahpool's rules: no shared memory, so WAL under exclusive locking exactly as
//! `Medium::Sahpool` opens it, and no powersafe overwrite). Two negative controls show that the
//! check can fail: `synchronous=OFF`, and `relaxed`'s settings held to `full`'s promise.
//!
//! `POWER_LOSS_SEEDS` sets the seeds per setting (default 100), `POWER_LOSS_SEED` replays one
//! seed (printed by a failure), and `scripts/bench-power-loss.sh` runs thousands.
#![cfg(not(target_family = "wasm"))]

#[path = "support/crash_vfs.rs"]
mod crash_vfs;

use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};
use runstore::{
    ArtifactStore, Checkpoint, CheckpointStore, ClaimFilter, Durability, EffectRecord,
    EffectStatus, EffectStatusKind, EffectStore, Event, EventJournal, EventKind, Key, Medium,
    Millis, NewArtifact, NewOutboxRow, Operation, OutboxStore, SqliteStore, Step, StepStore,
    TimerStore,
};
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use crash_vfs::CallKind;

const DEFAULT_SEEDS: u64 = 100;
const DB: &str = "store.db";
const WORKFLOWS: usize = 3;
const CHECKPOINTS: usize = 3;
const EFFECTS: usize = 3;
/// Small, so that WAL checkpoints happen every few steps.
const AUTOCHECKPOINT_PAGES: u32 = 8;

fn rng(seed: u64, stream: u8) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8] = stream;
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

// ---------------------------------------------------------------------------------------------
// Settings under test
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Setting {
    medium: Medium,
    durability: Durability,
    /// The negative control: `synchronous=OFF` after the store configured itself.
    synchronous_off: bool,
    /// The promise checked: the durability's own, except in a negative control.
    promise: Durability,
    /// Encrypted with SQLCipher (a key of bytes): its pages and WAL frames, cut as plain ones.
    encrypted: bool,
}

impl Setting {
    fn open(&self, disk: u64) -> Result<SqliteStore, String> {
        let vfs = match self.medium {
            Medium::Sahpool => crash_vfs::VFS_NO_SHM,
            _ => crash_vfs::VFS_SHM,
        };
        let conn = Connection::open_with_flags_and_vfs(
            crash_vfs::path(disk, DB),
            OpenFlags::default(),
            vfs,
        )
        .map_err(|e| format!("open: {e}"))?;
        let key = self
            .encrypted
            .then(|| Key::from_bytes(&[0x5a; 32]).unwrap());
        let store =
            SqliteStore::from_connection_with_key(conn, self.medium, self.durability, key.as_ref())
                .map_err(|e| format!("open: {e}"))?;
        let mut pragmas = format!("PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES};");
        if self.synchronous_off {
            pragmas.push_str("PRAGMA synchronous=OFF;");
        }
        store
            .raw_execute(&pragmas)
            .map_err(|e| format!("pragmas: {e}"))?;
        Ok(store)
    }
}

// ---------------------------------------------------------------------------------------------
// Workload
// ---------------------------------------------------------------------------------------------

/// One unit of work. Every variant but the last two is one transaction of the store.
#[derive(Debug, Clone)]
enum Action {
    /// One operation through the store method of its name.
    Call(Box<Operation>),
    /// Operations of several areas in one step, through `commit`, often under a request id.
    Commit(Step),
    Claim {
        now: Millis,
        limit: u32,
    },
    Purge {
        now: Millis,
    },
    /// `PRAGMA wal_checkpoint(mode)`: moves the WAL into the database file.
    WalCheckpoint(&'static str),
    /// Closes the store (a checkpoint and the WAL's deletion) and opens it again.
    Reopen,
}

impl Action {
    fn is_commit(&self) -> bool {
        !matches!(self, Action::WalCheckpoint(_) | Action::Reopen)
    }

    /// Applies the action; returns the claims (dispatch key, token) a claim took.
    fn apply(&self, store: &SqliteStore) -> runstore::Result<Vec<(String, u64)>> {
        match self {
            Action::Call(operation) => call(store, operation).map(|()| Vec::new()),
            Action::Commit(step) => store.commit(step).map(|_| Vec::new()),
            Action::Claim { now, limit } => Ok(store
                .claim_outbox(*now, *limit, &ClaimFilter::default())?
                .into_iter()
                .map(|row| (row.dispatch_key, row.claim_token))
                .collect()),
            Action::Purge { now } => store.purge_expired_artifacts(*now).map(|_| Vec::new()),
            Action::WalCheckpoint(mode) => store
                .raw_execute(&format!("PRAGMA wal_checkpoint({mode})"))
                .map(|()| Vec::new()),
            Action::Reopen => unreachable!("the runner reopens the store"),
        }
    }
}

/// The store method of each operation the workload makes.
fn call(store: &SqliteStore, operation: &Operation) -> runstore::Result<()> {
    match operation {
        Operation::Append {
            workflow_id,
            events,
            expected_seq,
            outbox,
        } => store
            .append_with_outbox(workflow_id, events, *expected_seq, outbox)
            .map(|_| ()),
        Operation::CompleteOutbox {
            dispatch_key,
            claim_token,
        } => store.complete_outbox(dispatch_key, *claim_token),
        Operation::ScheduleTimer {
            workflow_id,
            timer_id,
            fire_at,
        } => store.schedule_timer(workflow_id, timer_id, *fire_at),
        Operation::CompareAndSwapCheckpoint {
            checkpoint,
            expected_revision,
        } => store.compare_and_swap_checkpoint(checkpoint, *expected_revision),
        Operation::CompareAndSwapEffect {
            record,
            expected_revision,
        } => store.compare_and_swap_effect(record, *expected_revision),
        Operation::PutArtifact { artifact, now } => store.put_artifact(artifact, *now).map(|_| ()),
        other => unreachable!("the workload makes no {other:?}"),
    }
}

/// What the actions that returned did, as far as the next actions need to know.
#[derive(Clone, Default)]
struct Model {
    heads: [u64; WORKFLOWS],
    checkpoints: [Option<u64>; CHECKPOINTS],
    effects: [Option<(u64, EffectStatusKind)>; EFFECTS],
    claimed: Vec<(String, u64)>,
    next_key: u64,
    next_artifact: u64,
    next_request: u64,
}

/// Generates valid actions from the model, so that every action succeeds unless the power
/// goes. An action is generated on a copy of the model, which replaces it once it returned.
struct Workload {
    rng: TestRng,
    now: Millis,
    model: Model,
    tentative: Model,
}

impl Workload {
    fn new(seed: u64) -> Self {
        Self {
            rng: rng(seed, 1),
            now: 1_000,
            model: Model::default(),
            tentative: Model::default(),
        }
    }

    /// Text of a random length, so that rows span pages and overflow pages now and then.
    fn padding(&mut self, max: usize) -> String {
        let len = self.rng.random_range(0..=max);
        "x".repeat(len)
    }

    fn next(&mut self) -> Action {
        self.now += self.rng.random_range(1..5);
        self.tentative = self.model.clone();
        match self.rng.random_range(0..100u32) {
            0..35 => Action::Call(Box::new(self.operation())),
            35..65 => self.commit(),
            65..75 => Action::Claim {
                now: self.now,
                limit: self.rng.random_range(1..4),
            },
            75..83 => Action::Purge { now: self.now },
            83..93 => {
                let modes = ["PASSIVE", "FULL", "RESTART", "TRUNCATE"];
                Action::WalCheckpoint(modes[self.rng.random_range(0..modes.len())])
            }
            _ => Action::Reopen,
        }
    }

    /// Takes in an action that returned, with the keys it claimed.
    fn returned(&mut self, claimed: Vec<(String, u64)>) {
        self.model = std::mem::take(&mut self.tentative);
        self.model.claimed.extend(claimed);
    }

    fn commit(&mut self) -> Action {
        let count = self.rng.random_range(2..6);
        let mut step = Step::new();
        for _ in 0..count {
            step = step.with(self.operation());
        }
        if self.rng.random_bool(0.5) {
            self.tentative.next_request += 1;
            step = step.request_id(format!("req-{}", self.tentative.next_request));
        }
        Action::Commit(step)
    }

    fn operation(&mut self) -> Operation {
        match self.rng.random_range(0..100u32) {
            0..35 => self.append(),
            35..55 => self.checkpoint(),
            55..70 => self.effect(),
            70..80 if !self.tentative.claimed.is_empty() => {
                let (dispatch_key, claim_token) = self.tentative.claimed.remove(0);
                Operation::CompleteOutbox {
                    dispatch_key,
                    claim_token,
                }
            }
            70..85 => Operation::ScheduleTimer {
                workflow_id: format!("wf-{}", self.rng.random_range(0..WORKFLOWS)),
                timer_id: format!("t-{}", self.rng.random_range(0..4)),
                fire_at: self.now + self.rng.random_range(0..1000),
            },
            _ => self.put_artifact(),
        }
    }

    fn append(&mut self) -> Operation {
        let w = self.rng.random_range(0..WORKFLOWS);
        let workflow_id = format!("wf-{w}");
        let expected_seq = self.tentative.heads[w];
        let count = self.rng.random_range(1..4);
        let events = (0..count)
            .map(|i| Event {
                kind: if expected_seq == 0 && i == 0 {
                    EventKind::Started {
                        workflow_type: "order".into(),
                        run_id: format!("run-{w}"),
                    }
                } else {
                    EventKind::Custom {
                        name: "step".into(),
                    }
                },
                recorded_at: self.now,
                data: json!({ "pad": self.padding(1500) }),
            })
            .collect();
        self.tentative.heads[w] += count;
        let rows = if self.rng.random_bool(0.5) {
            self.rng.random_range(1..3)
        } else {
            0
        };
        let outbox = (0..rows)
            .map(|i| {
                self.tentative.next_key += 1;
                NewOutboxRow {
                    dispatch_key: format!("d-{}", self.tentative.next_key),
                    workflow_id: workflow_id.clone(),
                    ordinal: expected_seq + i,
                    activity_type: "charge".into(),
                    input: self.padding(300).into_bytes(),
                    visible_after: self.now,
                    attempt: 0,
                    max_attempts: None,
                    run_id: Some(format!("run-{w}")),
                    namespace: None,
                    task_queue: None,
                    node: None,
                }
            })
            .collect();
        Operation::Append {
            workflow_id,
            events,
            expected_seq,
            outbox,
        }
    }

    fn checkpoint(&mut self) -> Operation {
        let c = self.rng.random_range(0..CHECKPOINTS);
        let expected_revision = self.tentative.checkpoints[c];
        let revision = expected_revision.map_or(0, |r| r + 1);
        self.tentative.checkpoints[c] = Some(revision);
        Operation::CompareAndSwapCheckpoint {
            checkpoint: Checkpoint {
                checkpoint_id: format!("cp-{c}"),
                run_id: Some("run-0".into()),
                revision,
                state: json!({ "revision": revision, "pad": self.padding(3000) }),
                updated_at: self.now,
            },
            expected_revision,
        }
    }

    fn effect(&mut self) -> Operation {
        let e = self.rng.random_range(0..EFFECTS);
        let (expected_revision, status) = match self.tentative.effects[e] {
            None => (None, EffectStatus::Prepared),
            Some((rev, EffectStatusKind::Prepared | EffectStatusKind::OutcomeUnknown)) => {
                (Some(rev), EffectStatus::Started)
            }
            Some((rev, EffectStatusKind::Started)) if self.rng.random_bool(0.3) => {
                (Some(rev), EffectStatus::OutcomeUnknown)
            }
            Some((rev, EffectStatusKind::Started)) => (
                Some(rev),
                EffectStatus::Completed {
                    output: json!({ "pad": self.padding(800) }),
                },
            ),
            // A completed effect is final: this operation puts an artifact instead.
            Some(_) => return self.put_artifact(),
        };
        let revision = expected_revision.map_or(0, |r| r + 1);
        self.tentative.effects[e] = Some((revision, status.kind()));
        Operation::CompareAndSwapEffect {
            record: EffectRecord {
                effect_id: format!("fx-{e}"),
                capability_id: "mail".into(),
                idempotency_key: None,
                revision,
                request: json!({ "to": e }),
                status,
                updated_at: self.now,
            },
            expected_revision,
        }
    }

    fn put_artifact(&mut self) -> Operation {
        self.tentative.next_artifact += 1;
        let bytes = self.padding(6000).into_bytes();
        Operation::PutArtifact {
            artifact: NewArtifact {
                scope: "run-0".into(),
                media_type: "text/plain".into(),
                name: Some(format!("a-{}", self.tentative.next_artifact)),
                bytes,
                expires_at: Some(self.now + self.rng.random_range(1..40)),
                idempotency_key: None,
            },
            now: self.now,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One seed
// ---------------------------------------------------------------------------------------------

/// What running the workload on the disk left to check.
struct Run {
    /// The commits that returned, in order.
    returned: Vec<Action>,
    /// The commit the power interrupted, if it was one.
    in_flight: Option<Action>,
    /// Mutating file calls made by the first open (schema migration included).
    open_calls: u64,
}

/// Runs `steps` steps of the seed's workload; the power may go at any point (then the run
/// stops), and an error without a power cut is a failure.
fn run_workload(setting: Setting, disk: u64, seed: u64, steps: usize) -> Result<Run, String> {
    let mut run = Run {
        returned: Vec::new(),
        in_flight: None,
        open_calls: 0,
    };
    let cut = || crash_vfs::cut_point(disk).is_some();
    let mut store = match setting.open(disk) {
        Ok(store) => store,
        Err(_) if cut() => return Ok(run),
        Err(e) => return Err(e),
    };
    run.open_calls = crash_vfs::calls(disk);
    let mut workload = Workload::new(seed);
    for i in 0..steps {
        let action = workload.next();
        if let Action::Reopen = action {
            drop(store);
            store = match setting.open(disk) {
                Ok(store) => store,
                Err(_) if cut() => return Ok(run),
                Err(e) => return Err(format!("action {i} (reopen): {e}")),
            };
            continue;
        }
        match action.apply(&store) {
            Ok(claimed) => {
                workload.returned(claimed);
                if action.is_commit() {
                    run.returned.push(action);
                }
            }
            Err(_) if cut() => {
                run.in_flight = action.is_commit().then_some(action);
                return Ok(run);
            }
            Err(e) => return Err(format!("action {i} {action:?}: {e}")),
        }
    }
    Ok(run)
}

/// The whole content of a database: every row of every table, sorted, and the schema version.
fn dump(conn: &Connection) -> Result<Vec<String>, String> {
    let sql_err = |e: rusqlite::Error| e.to_string();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql_err)?;
    let mut out = vec![format!("user_version {version}")];
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name",
        )
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .map_err(sql_err)?;
    for table in tables {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .map_err(sql_err)?;
        // The request log's commit time is the store's clock, which a replay cannot repeat.
        let clock = stmt
            .column_names()
            .position(|name| table == "requests" && name == "committed_at");
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |row| {
                let values = (0..columns)
                    .map(|i| match Some(i) == clock {
                        true => Ok(rusqlite::types::Value::Null),
                        false => row.get::<_, rusqlite::types::Value>(i),
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(format!("{table} {values:?}"))
            })
            .and_then(|rows| rows.collect())
            .map_err(sql_err)?;
        rows.sort();
        out.extend(rows);
    }
    Ok(out)
}

fn dump_store(store: SqliteStore) -> Result<(Vec<String>, SqliteStore), String> {
    let conn = store.into_connection();
    let content = dump(&conn)?;
    let store = SqliteStore::from_connection(conn, Medium::Memory, Durability::Full)
        .map_err(|e| e.to_string())?;
    Ok((content, store))
}

/// How many of the returned commits the reopened store holds, and whether the one in flight
/// landed too; `Err` when its content is no such state.
fn matching_prefix(
    run: &Run,
    content: &[String],
    durability: Durability,
) -> Result<(usize, bool), String> {
    let mut reference = SqliteStore::open_in_memory().map_err(|e| e.to_string())?;
    let n = run.returned.len();
    let first = match durability {
        Durability::Full => n,
        Durability::Relaxed => 0,
    };
    for (k, action) in run.returned.iter().enumerate() {
        if k >= first {
            let (state, store) = dump_store(reference)?;
            if state == content {
                return Ok((k, false));
            }
            reference = store;
        }
        action
            .apply(&reference)
            .map_err(|e| format!("the reference refused commit {k} {action:?}: {e}"))?;
    }
    let (state, store) = dump_store(reference)?;
    if state == content {
        return Ok((n, false));
    }
    if let Some(action) = &run.in_flight {
        if action.apply(&store).is_ok() && dump_store(store)?.0 == content {
            return Ok((n, true));
        }
    }
    let mismatch = content
        .iter()
        .zip(&state)
        .find(|(a, b)| a != b)
        .map(|(a, b)| format!("first difference from all {n}: found {a:.200} expected {b:.200}"))
        .unwrap_or_else(|| format!("{} rows, {} after all {n}", content.len(), state.len()));
    Err(match durability {
        Durability::Full => format!("not every returned commit survived; {mismatch}"),
        Durability::Relaxed => format!("no prefix of the {n} returned commits matches; {mismatch}"),
    })
}

/// What one seed did.
#[derive(Debug, Default, Clone, Copy)]
struct SeedReport {
    returned: u64,
    /// Returned commits a `relaxed` power loss dropped.
    dropped: u64,
    in_flight_landed: bool,
    in_migration: bool,
    in_checkpoint: bool,
    during_sync: bool,
    damage: crash_vfs::CutDamage,
}

fn run_seed(setting: Setting, seed: u64) -> Result<SeedReport, String> {
    let mut plan = rng(seed, 0);
    let steps = plan.random_range(10..40);

    // A dry run, without a cut, counts the file calls to place the cut among them.
    let disk = crash_vfs::new_disk();
    let dry = run_workload(setting, disk, seed, steps);
    let total = crash_vfs::calls(disk);
    let syncs = crash_vfs::sync_calls(disk);
    crash_vfs::remove_disk(disk);
    let open_calls = dry?.open_calls;
    let cut_at = if plan.random_ratio(1, 8) {
        plan.random_range(1..=open_calls)
    } else if !syncs.is_empty() && plan.random_ratio(1, 4) {
        // At a sync (it does not complete) or at the call after it (it did).
        syncs[plan.random_range(0..syncs.len())] + plan.random_range(0..2)
    } else {
        // One past the last call: the power goes after the workload, with the store open.
        plan.random_range(open_calls + 1..=total + 1)
    };
    let keep = [0.0, 0.5, 1.0, plan.random_range(0.0..1.0)][plan.random_range(0..4)];

    let disk = crash_vfs::new_disk();
    crash_vfs::arm_cut(disk, cut_at);
    let result = run_workload(setting, disk, seed, steps)
        .and_then(|run| check(setting, disk, run, &mut plan, keep, open_calls));
    crash_vfs::remove_disk(disk);
    result
}

/// Cuts the power if the workload ended before the cut, restores it, reopens the store and
/// checks what it holds.
fn check(
    setting: Setting,
    disk: u64,
    run: Run,
    plan: &mut TestRng,
    keep: f64,
    open_calls: u64,
) -> Result<SeedReport, String> {
    crash_vfs::cut_now(disk);
    let point = crash_vfs::cut_point(disk).expect("cut");
    let damage = crash_vfs::restore_power(disk, plan, keep);
    let store = setting
        .open(disk)
        .map_err(|e| format!("reopening after the cut at {point:?}: {e}"))?;
    let conn = store.into_connection();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if integrity != "ok" {
        return Err(format!(
            "integrity check after the cut at {point:?}: {integrity}"
        ));
    }
    let content = dump(&conn)?;
    drop(conn);
    // An encrypted store's file, after the cut and its recovery, never holds a plain page 1.
    if setting.encrypted && crash_vfs::contents(disk, DB).starts_with(b"SQLite format 3\0") {
        return Err(format!(
            "after the cut at {point:?} the encrypted store's file is plain"
        ));
    }
    let (kept, landed) = matching_prefix(&run, &content, setting.promise)
        .map_err(|e| format!("after the cut at {point:?} ({damage:?}): {e}"))?;
    let in_migration = point.call != 0 && point.call <= open_calls;
    Ok(SeedReport {
        returned: run.returned.len() as u64,
        dropped: (run.returned.len() - kept) as u64,
        in_flight_landed: landed,
        in_migration,
        in_checkpoint: !in_migration && point.file == DB && point.kind.is_some(),
        during_sync: point.kind == Some(CallKind::Sync),
        damage,
    })
}

// ---------------------------------------------------------------------------------------------
// Many seeds
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Totals {
    seeds: u64,
    returned: u64,
    dropped: u64,
    in_flight_landed: u64,
    in_migration: u64,
    in_checkpoint: u64,
    during_sync: u64,
    lost_or_torn_writes: u64,
    failures: Vec<(u64, String)>,
}

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("POWER_LOSS_SEED") {
        return vec![seed.parse().expect("POWER_LOSS_SEED is a number")];
    }
    let count = std::env::var("POWER_LOSS_SEEDS")
        .map(|n| n.parse().expect("POWER_LOSS_SEEDS is a number"))
        .unwrap_or(DEFAULT_SEEDS);
    (0..count).collect()
}

fn run_seeds(setting: Setting, seeds: &[u64], stop_at_first_failure: bool) -> Totals {
    let mut totals = Totals::default();
    for &seed in seeds {
        totals.seeds += 1;
        match run_seed(setting, seed) {
            Ok(report) => {
                totals.returned += report.returned;
                totals.dropped += report.dropped;
                totals.in_flight_landed += u64::from(report.in_flight_landed);
                totals.in_migration += u64::from(report.in_migration);
                totals.in_checkpoint += u64::from(report.in_checkpoint);
                totals.during_sync += u64::from(report.during_sync);
                totals.lost_or_torn_writes += report.damage.lost + report.damage.torn;
            }
            Err(message) => {
                totals.failures.push((seed, message));
                if stop_at_first_failure {
                    break;
                }
            }
        }
    }
    println!(
        "power loss {:?} {:?}{}{}{}: seeds {}, power cuts {} ({} in the schema migration, {} in a \
         WAL checkpoint, {} during a sync), commits checked {}, returned commits dropped {}, \
         commits in flight that landed {}, unsynced writes lost or torn {}, failures {}",
        setting.medium,
        setting.durability,
        if setting.encrypted { " encrypted" } else { "" },
        if setting.synchronous_off {
            " synchronous=OFF"
        } else {
            ""
        },
        if setting.promise == setting.durability {
            String::new()
        } else {
            format!(" checked as {:?}", setting.promise)
        },
        totals.seeds,
        totals.seeds,
        totals.in_migration,
        totals.in_checkpoint,
        totals.during_sync,
        totals.returned,
        totals.dropped,
        totals.in_flight_landed,
        totals.lost_or_torn_writes,
        totals.failures.len(),
    );
    totals
}

fn assert_holds(setting: Setting) -> Totals {
    let totals = run_seeds(setting, &seeds(), false);
    let failures: Vec<String> = totals
        .failures
        .iter()
        .map(|(seed, message)| format!("seed {seed}: {message}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{setting:?} broke its promise (replay with POWER_LOSS_SEED=<seed>):\n{}",
        failures.join("\n")
    );
    totals
}

fn setting(medium: Medium, durability: Durability) -> Setting {
    Setting {
        medium,
        durability,
        synchronous_off: false,
        promise: durability,
        encrypted: false,
    }
}

#[cfg(feature = "cipher")]
fn encrypted(medium: Medium, durability: Durability) -> Setting {
    Setting {
        encrypted: true,
        ..setting(medium, durability)
    }
}

#[test]
#[cfg(feature = "cipher")]
fn an_encrypted_store_keeps_every_returned_commit_through_power_loss() {
    for medium in [Medium::Sahpool, Medium::NativeFile] {
        let totals = assert_holds(encrypted(medium, Durability::Full));
        assert_eq!(totals.dropped, 0);
    }
}

#[test]
#[cfg(feature = "cipher")]
fn an_encrypted_store_keeps_a_prefix_of_the_returned_commits_when_relaxed() {
    for medium in [Medium::Sahpool, Medium::NativeFile] {
        assert_holds(encrypted(medium, Durability::Relaxed));
    }
}

#[test]
fn full_keeps_every_returned_commit_through_power_loss_on_the_opfs_setup() {
    let totals = assert_holds(setting(Medium::Sahpool, Durability::Full));
    assert_eq!(totals.dropped, 0);
}

#[test]
fn full_keeps_every_returned_commit_through_power_loss_in_a_native_file() {
    let totals = assert_holds(setting(Medium::NativeFile, Durability::Full));
    assert_eq!(totals.dropped, 0);
}

#[test]
fn relaxed_keeps_a_prefix_of_the_returned_commits_on_the_opfs_setup() {
    assert_holds(setting(Medium::Sahpool, Durability::Relaxed));
}

#[test]
fn relaxed_keeps_a_prefix_of_the_returned_commits_in_a_native_file() {
    assert_holds(setting(Medium::NativeFile, Durability::Relaxed));
}

/// Runs seeds until one fails; panics when none of `count` does.
fn first_failure(setting: Setting, count: u64) -> (u64, String) {
    let totals = run_seeds(setting, &(0..count).collect::<Vec<_>>(), true);
    totals
        .failures
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{setting:?} survived {count} power cuts: the check cannot fail"))
}

/// The checker can fail: with `synchronous=OFF` nothing is synced, and some seed must lose a
/// returned commit (or the database).
#[test]
fn negative_control_synchronous_off_loses_returned_commits() {
    let off = Setting {
        synchronous_off: true,
        ..setting(Medium::NativeFile, Durability::Full)
    };
    let (seed, message) = first_failure(off, 200);
    println!("synchronous=OFF fails as expected at seed {seed}: {message:.300}");
}

/// The checker can fail on an encrypted store too.
#[test]
#[cfg(feature = "cipher")]
fn negative_control_an_encrypted_store_with_synchronous_off_loses_returned_commits() {
    let off = Setting {
        synchronous_off: true,
        ..encrypted(Medium::NativeFile, Durability::Full)
    };
    let (seed, message) = first_failure(off, 200);
    println!("encrypted, synchronous=OFF fails as expected at seed {seed}: {message:.300}");
}

/// The checker tells the two levels apart: `relaxed`'s settings do not keep `full`'s promise.
#[test]
fn negative_control_relaxed_settings_break_the_full_promise() {
    let relaxed_as_full = Setting {
        promise: Durability::Full,
        ..setting(Medium::Sahpool, Durability::Relaxed)
    };
    let (seed, message) = first_failure(relaxed_as_full, 200);
    println!("relaxed checked as full fails as expected at seed {seed}: {message:.300}");
}

/// Syncs of `file` on `disk` so far.
fn syncs_of(disk: u64, file: &str) -> u64 {
    crash_vfs::syncs(disk).get(file).copied().unwrap_or(0)
}

/// What each commit syncs on the OPFS set-up, where sahpool's sync is the access handle's
/// `flush()`: `full` syncs the WAL at every commit, before the commit returns; `relaxed` syncs
/// nothing until a checkpoint, which syncs the WAL and then the database file.
#[test]
fn full_syncs_the_wal_at_every_commit_and_relaxed_only_at_checkpoints() {
    let wal = format!("{DB}-wal");
    for durability in [Durability::Full, Durability::Relaxed] {
        let disk = crash_vfs::new_disk();
        let store = setting(Medium::Sahpool, durability).open(disk).unwrap();
        store.raw_execute("PRAGMA wal_autocheckpoint=0").unwrap();
        let db_syncs = syncs_of(disk, DB);
        let mut per_commit = Vec::new();
        for seq in 0..20 {
            let before = syncs_of(disk, &wal);
            let event = Event {
                kind: EventKind::Custom {
                    name: "step".into(),
                },
                recorded_at: seq as Millis,
                data: json!({ "pad": "x".repeat(200) }),
            };
            store.append("wf", &[event], seq).unwrap();
            per_commit.push(syncs_of(disk, &wal) - before);
        }
        assert_eq!(
            syncs_of(disk, DB),
            db_syncs,
            "{durability:?}: a commit synced the database"
        );
        let (wal_before, db_before) = (syncs_of(disk, &wal), syncs_of(disk, DB));
        store
            .raw_execute("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        let at_checkpoint = (
            syncs_of(disk, &wal) - wal_before,
            syncs_of(disk, DB) - db_before,
        );
        println!("{durability:?}: WAL syncs per commit {per_commit:?}; at a checkpoint (WAL, database) {at_checkpoint:?}");
        match durability {
            Durability::Full => assert!(per_commit.iter().all(|&n| n >= 1), "{per_commit:?}"),
            Durability::Relaxed => assert!(per_commit.iter().all(|&n| n == 0), "{per_commit:?}"),
        }
        assert!(
            at_checkpoint.0 >= 1 && at_checkpoint.1 >= 1,
            "{at_checkpoint:?}"
        );
        drop(store);
        crash_vfs::remove_disk(disk);
    }
}
