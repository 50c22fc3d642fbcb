//! Steps survive a process killed at any point, whole or not at all.
//!
//! The test binary runs itself as a writer (the same test, with the database path in the
//! environment): it opens the store with full durability, resumes from the steps already
//! committed, and commits multi-area steps in a loop, printing an ack line after each `commit`
//! returns. The test kills it with SIGKILL after a random number of acks plus a random short
//! delay (deterministic per seed), then checks the database: every acknowledged step is there
//! in full, no part of any later step is, at most one step committed without its ack, and
//! `PRAGMA integrity_check` says ok. The next writer continues on the same database and first
//! re-sends the first unacknowledged step under its request id: it must be applied once.
//!
//! `CRASH_CYCLES` (default 200) and `CRASH_SEED` change the run; `scripts/bench-crash.sh`
//! runs thousands of cycles in release. The same runs on a store encrypted with a passphrase
//! (`CRASH_CYCLES_ENCRYPTED`, default 60): SQLCipher's pages, WAL frames included, must
//! recover as SQLite's do.
#![cfg(not(target_family = "wasm"))]

#[path = "crash_consistency/check.rs"]
mod check;
#[path = "crash_consistency/plan.rs"]
mod plan;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use plan::{Plan, XorShift, SETTLE_LAG};
use runstore::{Durability, Key, SqliteStore, StepStore};

const TEST_NAME: &str = "acknowledged_steps_survive_sigkill_whole_and_nothing_else_does";
/// Set for the writer of an encrypted store: its passphrase.
const KEY_ENV: &str = "RUNSTORE_CRASH_KEY";
/// The passphrase of the encrypted store's runs.
#[cfg(feature = "cipher")]
const PASSPHRASE: &str = "crash-test passphrase";
/// Set for the writer: the database it commits to.
const DB_ENV: &str = "RUNSTORE_CRASH_DB";
const SEED_ENV: &str = "RUNSTORE_CRASH_SEED";
/// Set for the writer when some step was acknowledged: the last one.
const ACKED_ENV: &str = "RUNSTORE_CRASH_ACKED";
/// Every this many cycles (and after the last) every step is checked, not only the latest.
const FULL_CHECK_EVERY: u64 = 50;
/// Most acks before a kill, and most microseconds of delay after them.
const MAX_ACKS: u64 = 8;
const MAX_DELAY_US: u64 = 4000;
/// What starts the writer's line after each commit returned: `<ACK> <step> <How>`.
const ACK: &str = "step-ack";
/// SIGKILL's number, the same on every Unix.
const SIGKILL: i32 = 9;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {value:?}"))
    })
}

#[test]
fn acknowledged_steps_survive_sigkill_whole_and_nothing_else_does() {
    match std::env::var(DB_ENV) {
        Ok(path) => write_steps(Path::new(&path), std::env::var(KEY_ENV).ok().as_deref()),
        Err(_) => crash_cycles(
            env_u64("CRASH_CYCLES", 200),
            env_u64("CRASH_SEED", 0x5eed),
            None,
        ),
    }
}

#[test]
#[cfg(feature = "cipher")]
fn acknowledged_steps_of_an_encrypted_store_survive_sigkill_whole() {
    // The writer is the test above, run with the key in its environment.
    let cycles = env_u64("CRASH_CYCLES_ENCRYPTED", 60);
    crash_cycles(
        cycles,
        env_u64("CRASH_SEED", 0x5eed) ^ 0xc1,
        Some(PASSPHRASE),
    );
}

/// Opens the store at `path`, encrypted with `passphrase` when there is one.
fn open_store(path: &Path, passphrase: Option<&str>) -> SqliteStore {
    match passphrase {
        Some(text) => {
            let key = Key::passphrase(text).unwrap();
            SqliteStore::open_encrypted(path, &key, Durability::Full).unwrap()
        }
        None => SqliteStore::open(path).unwrap(),
    }
}

/// How an acknowledged step was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Applied now.
    New,
    /// The first unacknowledged step, re-sent under its request id and applied now.
    Resent,
    /// The first unacknowledged step, re-sent under its request id: it had committed, so it
    /// was replayed and nothing was applied again.
    Replayed,
}

/// The writer: commits step after step until it is killed.
fn write_steps(path: &Path, passphrase: Option<&str>) {
    let seed = env_u64(SEED_ENV, 0);
    let first_unacked = std::env::var(ACKED_ENV).map_or(0, |a| a.parse::<u64>().unwrap() + 1);
    let store = open_store(path, passphrase);
    let mut plan = Plan::new(seed);
    let n = check::committed_steps(&store);
    let mut out = std::io::stdout().lock();
    let mut ack = |k: u64, how: How| {
        writeln!(out, "{ACK} {k} {how:?}").unwrap();
        out.flush().unwrap();
    };
    if first_unacked < n && plan::request_id(first_unacked).is_some() {
        let outcome = store.commit(&plan.step(first_unacked)).unwrap();
        assert!(outcome.replayed, "step {first_unacked} applied twice");
        assert_eq!(outcome.outcomes, plan.outcomes(first_unacked));
        ack(first_unacked, How::Replayed);
    }
    for k in n.. {
        let outcome = store.commit(&plan.step(k)).unwrap();
        assert!(!outcome.replayed, "step {k} had not committed");
        assert_eq!(outcome.outcomes, plan.outcomes(k));
        let resent = k == first_unacked && plan::request_id(k).is_some();
        ack(k, if resent { How::Resent } else { How::New });
    }
}

/// Reads an ack line. The test harness prints `test <name> ... ` before the first one, on the
/// same line.
fn parse_ack(line: &str) -> Option<(u64, How)> {
    let (_, ack) = line.split_once(ACK)?;
    let mut words = ack.split_whitespace();
    let k = words.next()?.parse().ok()?;
    let how = match words.next()? {
        "New" => How::New,
        "Resent" => How::Resent,
        "Replayed" => How::Replayed,
        other => panic!("unknown ack {other:?}"),
    };
    Some((k, how))
}

/// A writer process, killed if the test fails while it runs.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs one writer, kills it after `acks` acks plus `delay`, and returns the acks it printed.
fn run_writer(
    path: &Path,
    passphrase: Option<&str>,
    seed: u64,
    acked: Option<u64>,
    acks: u64,
    delay: Duration,
) -> Vec<(u64, How)> {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(DB_ENV, path)
        .env(SEED_ENV, seed.to_string())
        .env_remove(ACKED_ENV)
        .env_remove(KEY_ENV)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(acked) = acked {
        command.env(ACKED_ENV, acked.to_string());
    }
    if let Some(passphrase) = passphrase {
        command.env(KEY_ENV, passphrase);
    }
    let mut writer = Writer(command.spawn().unwrap());
    let stdout = writer.0.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines().map(Result::unwrap);
    let mut seen = Vec::new();
    while (seen.len() as u64) < acks {
        match lines.next() {
            Some(line) => seen.extend(parse_ack(&line)),
            None => break, // the writer ended by itself: reported below
        }
    }
    std::thread::sleep(delay);
    writer.0.kill().unwrap();
    let status = writer.0.wait().unwrap();
    seen.extend(lines.filter_map(|line| parse_ack(&line)));
    if status.signal() != Some(SIGKILL) {
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut writer.0.stderr.take().unwrap(), &mut stderr).unwrap();
        panic!("the writer ended by itself ({status}):\n{stderr}");
    }
    seen
}

/// Figures of a run.
#[derive(Debug, Default)]
struct Tally {
    acknowledged: u64,
    resent_applied: u64,
    resent_replayed: u64,
    committed_unacknowledged: u64,
}

impl Tally {
    /// Counts a writer's acks, checking that they follow the last one (`acked`) in order: the
    /// first unacknowledged step again, or a later step.
    fn count_acks(&mut self, seen: &[(u64, How)], acked: &mut Option<u64>) {
        for &(k, how) in seen {
            let expected = acked.map_or(0, |a| a + 1);
            assert!(
                k == expected || (k > expected && how == How::New),
                "ack {k} after {acked:?}"
            );
            match how {
                How::New => self.acknowledged += 1,
                How::Resent => {
                    self.acknowledged += 1;
                    self.resent_applied += 1;
                }
                How::Replayed => self.resent_replayed += 1,
            }
            *acked = Some(k);
        }
    }

    /// Checks `n`, the steps committed after a kill, against the `before` committed at the
    /// previous check and the `acknowledged` ones: none lost, every ack backed, and at most
    /// one step committed without its ack (killed between its commit and its ack).
    fn count_committed(&mut self, cycle: u64, before: u64, acknowledged: u64, n: u64) {
        assert!(
            n >= before,
            "cycle {cycle}: {before} steps had committed, {n} are left"
        );
        assert!(
            n >= acknowledged,
            "cycle {cycle}: {acknowledged} steps acknowledged, {n} committed"
        );
        let known = before.max(acknowledged);
        assert!(
            n <= known + 1,
            "cycle {cycle}: {n} steps committed, {acknowledged} acknowledged"
        );
        self.committed_unacknowledged += n - known;
    }
}

fn crash_cycles(cycles: u64, seed: u64, passphrase: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let mut plan = Plan::new(seed);
    let mut rng = XorShift::new(seed);
    let mut tally = Tally::default();
    let mut acked: Option<u64> = None;
    let mut n: u64 = 0;
    let started = Instant::now();
    for cycle in 1..=cycles {
        let (acks, delay) = (rng.below(MAX_ACKS + 1), rng.below(MAX_DELAY_US));
        let delay = Duration::from_micros(delay);
        let seen = run_writer(&path, passphrase, seed, acked, acks, delay);
        tally.count_acks(&seen, &mut acked);
        let full = cycle.is_multiple_of(FULL_CHECK_EVERY) || cycle == cycles;
        // Rows of the last steps before this cycle were settled in this one.
        let from = if full {
            0
        } else {
            n.saturating_sub(SETTLE_LAG + 1)
        };
        let before = n;
        n = check::check_store(open_store(&path, passphrase), &mut plan, from);
        tally.count_committed(cycle, before, acked.map_or(0, |a| a + 1), n);
    }
    if passphrase.is_some() {
        let file = std::fs::read(&path).unwrap();
        assert!(
            !file.starts_with(b"SQLite format 3"),
            "the store is encrypted"
        );
    }
    println!(
        "crash cycles{label}: {cycles}, acknowledged steps: {}, steps found: {n} \
         (seed {seed}, {:.1} s; re-sent steps applied: {}, replayed: {}; \
         steps committed with their ack lost: {})",
        tally.acknowledged,
        started.elapsed().as_secs_f64(),
        tally.resent_applied,
        tally.resent_replayed,
        tally.committed_unacknowledged,
        label = if passphrase.is_some() {
            " (encrypted)"
        } else {
            ""
        },
    );
}
