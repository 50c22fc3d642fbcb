//! Connections racing to register the same namespace on one file: exactly one creates it, and
//! `last_seen` ends at the latest time any of them saw.
#![cfg(not(target_family = "wasm"))]

use std::sync::Barrier;

use runstore::{NamespaceOrigin, NamespaceStore, RegisterOutcome, SqliteStore};

const RACERS: i64 = 8;
const ROUNDS: i64 = 20;

#[test]
fn exactly_one_racer_creates_and_last_seen_is_the_latest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    drop(SqliteStore::open(&path).unwrap());
    let barrier = Barrier::new(RACERS as usize);
    let created: i64 = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..RACERS)
            .map(|racer| {
                let (path, barrier) = (&path, &barrier);
                scope.spawn(move || {
                    let store = SqliteStore::open(path).unwrap();
                    barrier.wait();
                    let mut created = 0;
                    for round in 0..ROUNDS {
                        let now = 1_000 + round * RACERS + racer;
                        let outcome = store
                            .register_namespace("shared", NamespaceOrigin::Worker, now)
                            .unwrap();
                        created += i64::from(outcome == RegisterOutcome::Created);
                    }
                    created
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).sum()
    });
    assert_eq!(created, 1);
    let store = SqliteStore::open(&path).unwrap();
    let record = store.get_namespace("shared").unwrap().unwrap();
    assert_eq!(record.last_seen, 1_000 + ROUNDS * RACERS - 1);
    assert!(record.created_at <= record.last_seen);
}
