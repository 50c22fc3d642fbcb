//! Optimistic concurrency of the journal across connections: writers racing to append to one
//! workflow through separate connections to one file leave no gap and no duplicate, and every
//! loser is told so with SEQUENCE_CONFLICT.
#![cfg(not(target_family = "wasm"))]

use std::sync::{Arc, Barrier};
use std::thread;

use runstore::{Event, EventJournal, EventKind, PageRequest, SqliteStore};

const WRITERS: usize = 4;
const APPENDS_PER_WRITER: usize = 40;

fn event(writer: usize, n: usize) -> Event {
    Event {
        kind: EventKind::Custom {
            name: format!("w{writer}"),
        },
        recorded_at: n as i64,
        data: serde_json::json!({ "writer": writer, "n": n }),
    }
}

#[test]
fn racing_writers_leave_no_gap_and_losers_get_sequence_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    SqliteStore::open(&path).unwrap();
    let barrier = Arc::new(Barrier::new(WRITERS));

    let handles: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let store = SqliteStore::open(&path).unwrap();
                barrier.wait();
                let (mut won, mut lost) = (Vec::new(), 0);
                while won.len() < APPENDS_PER_WRITER {
                    let head = store.head("wf").unwrap();
                    match store.append("wf", &[event(writer, won.len())], head) {
                        Ok(new_head) => {
                            assert_eq!(new_head, head + 1);
                            won.push(new_head);
                        }
                        Err(error) => {
                            assert_eq!(error.code(), "SEQUENCE_CONFLICT", "{error}");
                            lost += 1;
                        }
                    }
                }
                (won, lost)
            })
        })
        .collect();

    let mut claimed_seqs = Vec::new();
    for handle in handles {
        let (won, _lost) = handle.join().unwrap();
        claimed_seqs.extend(won);
    }
    claimed_seqs.sort_unstable();
    let total = (WRITERS * APPENDS_PER_WRITER) as u64;
    assert_eq!(
        claimed_seqs,
        (1..=total).collect::<Vec<_>>(),
        "each seq won once"
    );

    let store = SqliteStore::open(&path).unwrap();
    let history = store
        .read_history("wf", &PageRequest::default())
        .unwrap()
        .items;
    let seqs: Vec<u64> = history.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=total).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    // Every writer's own events are in its own order.
    for writer in 0..WRITERS {
        let mine: Vec<i64> = history
            .iter()
            .filter(|e| e.event.data["writer"] == writer)
            .map(|e| e.event.recorded_at)
            .collect();
        assert_eq!(mine, (0..APPENDS_PER_WRITER as i64).collect::<Vec<_>>());
    }
}

#[test]
fn a_stale_writer_on_another_connection_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.db");
    let first = SqliteStore::open(&path).unwrap();
    let second = SqliteStore::open(&path).unwrap();
    let head = second.head("wf").unwrap();
    first.append("wf", &[event(0, 0)], 0).unwrap();
    let error = second.append("wf", &[event(1, 0)], head).unwrap_err();
    assert_eq!(error.code(), "SEQUENCE_CONFLICT");
    assert_eq!(
        second
            .read_history("wf", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
}
