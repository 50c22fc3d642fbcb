//! The flushes `full` and `relaxed` issue on OPFS, counted in the browser. The sahpool VFS's
//! `xSync` is `FileSystemSyncAccessHandle.flush()` (sqlite-wasm-vfs 0.3, `sahpool.rs`), the one
//! durability primitive OPFS has. This test wraps `flush` on the prototype with a counter and
//! checks that `full` flushes (the WAL) at every commit before it returns, that `relaxed` does
//! not flush at a commit, and that a checkpoint flushes under both (the WAL, then the database).
//!
//! The power-loss behaviour itself is simulated natively on a VFS that follows sahpool's rules
//! (`tests/power_loss.rs`); see docs/durability.md for what this does and does not prove.
#![cfg(target_arch = "wasm32")]

use runstore::wasm::install_pool;
use runstore::{Durability, Event, EventJournal, EventKind, SqliteStore};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const COMMITS: u64 = 20;

/// Wraps `FileSystemSyncAccessHandle.prototype.flush` once with a counter; returns the count.
fn flushes() -> u64 {
    let count = js_sys::Function::new_no_args(
        "const proto = FileSystemSyncAccessHandle.prototype;
         if (!proto.flush.runstoreCounted) {
           const flush = proto.flush;
           const counted = function (...args) { counted.calls++; return flush.apply(this, args); };
           counted.runstoreCounted = true;
           counted.calls = 0;
           proto.flush = counted;
         }
         return proto.flush.calls;",
    )
    .call0(&JsValue::NULL)
    .expect("counting flush");
    count.as_f64().expect("a count") as u64
}

fn event(seq: u64) -> Event {
    Event {
        kind: EventKind::Custom {
            name: "step".into(),
        },
        recorded_at: seq as i64,
        data: serde_json::json!({ "pad": "x".repeat(200) }),
    }
}

/// Flushes per single-event append, then at a WAL checkpoint.
fn count(store: &SqliteStore) -> (Vec<u64>, u64) {
    // No automatic checkpoint inside the counted commits: the checkpoint is counted apart.
    store.raw_execute("PRAGMA wal_autocheckpoint=0").unwrap();
    let per_commit = (0..COMMITS)
        .map(|seq| {
            let before = flushes();
            store.append("wf", &[event(seq)], seq).unwrap();
            flushes() - before
        })
        .collect();
    let before = flushes();
    store
        .raw_execute("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    (per_commit, flushes() - before)
}

#[wasm_bindgen_test]
async fn full_flushes_at_every_commit_and_relaxed_only_at_checkpoints() {
    flushes();
    let pool = install_pool("flush-count").await.unwrap();
    for durability in [Durability::Full, Durability::Relaxed] {
        pool.delete("/flush.db").unwrap();
        let store = pool.open("/flush.db", durability).unwrap();
        let (per_commit, at_checkpoint) = count(&store);
        console_log!(
            "{durability:?}: flushes per commit {per_commit:?}, at a checkpoint {at_checkpoint}"
        );
        match durability {
            Durability::Full => assert!(per_commit.iter().all(|&n| n == 1), "{per_commit:?}"),
            Durability::Relaxed => assert!(per_commit.iter().all(|&n| n == 0), "{per_commit:?}"),
        }
        // The WAL before the database is written, the database before the WAL is reset.
        assert!(at_checkpoint >= 2, "{at_checkpoint}");
        drop(store);
    }
    pool.delete("/flush.db").unwrap();
    pool.close().await.unwrap();
}
