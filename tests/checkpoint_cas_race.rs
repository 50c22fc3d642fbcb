//! Writers on two connections to one database file race compare-and-swap updates of one
//! checkpoint from several threads: every update that succeeds moves the revision on by
//! exactly one, every other is refused with CONFLICT, and no update is lost.
#![cfg(not(target_family = "wasm"))]

use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use runstore::{Checkpoint, CheckpointStore, Error, SqliteStore};
use serde_json::json;

const CONNECTIONS: usize = 2;
const THREADS_PER_CONNECTION: usize = 3;
const ATTEMPTS_PER_THREAD: usize = 150;

/// What one thread saw: the revisions it wrote and the conflicts it got.
#[derive(Default)]
struct Outcome {
    written: Vec<u64>,
    conflicts: usize,
}

fn checkpoint(revision: u64, writer: usize) -> Checkpoint {
    Checkpoint {
        checkpoint_id: "shared".into(),
        run_id: Some("run".into()),
        revision,
        state: json!({"revision": revision, "writer": writer}),
        updated_at: revision as i64,
    }
}

/// Loads, then writes the next revision; the lock is released in between so that other
/// threads on the same connection can interleave too.
fn race(store: &Mutex<SqliteStore>, writer: usize) -> Outcome {
    let mut outcome = Outcome::default();
    for _ in 0..ATTEMPTS_PER_THREAD {
        let seen = store.lock().unwrap().load_checkpoint("shared").unwrap();
        let result = store.lock().unwrap().compare_and_swap_checkpoint(
            &checkpoint(seen.revision + 1, writer),
            Some(seen.revision),
        );
        match result {
            Ok(()) => outcome.written.push(seen.revision + 1),
            Err(Error::Conflict {
                entity: "checkpoint",
                expected,
                actual,
                ..
            }) => {
                assert_eq!(expected, Some(seen.revision));
                let actual = actual.expect("the checkpoint exists");
                assert!(actual > seen.revision, "lost to an older revision {actual}");
                outcome.conflicts += 1;
            }
            Err(other) => panic!("writer {writer}: unexpected error {other}"),
        }
    }
    outcome
}

#[test]
fn concurrent_cas_updates_each_advance_the_revision_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let stores: Vec<Arc<Mutex<SqliteStore>>> = (0..CONNECTIONS)
        .map(|_| Arc::new(Mutex::new(SqliteStore::open(&path).unwrap())))
        .collect();
    stores[0]
        .lock()
        .unwrap()
        .compare_and_swap_checkpoint(&checkpoint(0, 0), None)
        .unwrap();

    let writers = CONNECTIONS * THREADS_PER_CONNECTION;
    let start = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|writer| {
            let store = Arc::clone(&stores[writer % CONNECTIONS]);
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                race(&store, writer)
            })
        })
        .collect();
    let outcomes: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();

    let mut written: Vec<u64> = outcomes.iter().flat_map(|o| o.written.clone()).collect();
    let conflicts: usize = outcomes.iter().map(|o| o.conflicts).sum();
    assert_eq!(written.len() + conflicts, writers * ATTEMPTS_PER_THREAD);
    assert!(
        conflicts > 0,
        "the writers never overlapped; the race proved nothing"
    );

    // Each revision 1..=n was written by exactly one successful update.
    written.sort_unstable();
    let successes = written.len() as u64;
    assert_eq!(written, (1..=successes).collect::<Vec<_>>());

    for store in &stores {
        let last = store.lock().unwrap().load_checkpoint("shared").unwrap();
        assert_eq!(last.revision, successes);
        assert_eq!(last.state["revision"], successes);
    }
}
