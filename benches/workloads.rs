//! SPEC section 5 workloads natively: each through the store and, in the same run, as the
//! same SQL through plain rusqlite. Prints ops/s and the ratio store / plain SQL.
//!
//! Run: `cargo bench --bench workloads` (add `-- memory` or `-- file` for one medium).

#[path = "support/workloads.rs"]
mod workloads;

use std::path::Path;
use std::time::Instant;

use runstore::{Durability, SqliteStore};
use rusqlite::Connection;
use workloads::{encoded_payload, wf, Projection, RawJournal};

fn main() {
    let media: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a == "file" || a == "memory" || a == "file-relaxed")
        .collect();
    let media = if media.is_empty() {
        vec![
            "memory".to_owned(),
            "file".to_owned(),
            "file-relaxed".to_owned(),
        ]
    } else {
        media
    };
    let epoch = Instant::now();
    let clock = move || epoch.elapsed().as_secs_f64() * 1000.0;
    for medium in media {
        let dir = tempfile::tempdir().expect("temporary directory");
        let open = |name: &str| match medium.as_str() {
            "memory" => SqliteStore::open_in_memory().unwrap(),
            "file" => SqliteStore::open(dir.path().join(format!("{name}.db"))).unwrap(),
            _ => SqliteStore::open_with(dir.path().join(format!("{name}.db")), Durability::Relaxed)
                .unwrap(),
        };
        let figures = workloads::run_all(&open, &clock);
        println!(
            "{}",
            workloads::table(&format!("native, {medium}"), &figures)
        );
        if medium == "file" {
            wal_per_commit(dir.path());
        }
    }
}

/// Prints what one commit adds to the WAL, by page size and by the SQL of the write: a
/// single-event append to one of 100 workflows (the `workflows` row rewritten whole, or only
/// its head and time), and a compare-and-swap of one of 100 checkpoints (naming `run_id`, or
/// not). 1000 commits each, checkpoints off.
fn wal_per_commit(dir: &Path) {
    println!("\nnative, file: WAL bytes per commit\n");
    println!("| page size | commit | WAL bytes per commit | pages per commit |");
    println!("|---:|---|---:|---:|");
    for page_size in [8192, 4096] {
        for (name, write) in WAL_WRITES {
            let path = dir.join(format!("wal-{page_size}-{}.db", name.len()));
            // A file that has a page keeps its page size; the store sets its own on empty
            // files only.
            rusqlite::Connection::open(&path)
                .unwrap()
                .execute_batch(&format!(
                    "PRAGMA page_size = {page_size}; PRAGMA user_version = 0;"
                ))
                .unwrap();
            let conn = SqliteStore::open(&path).unwrap().into_connection();
            let size: i64 = conn
                .pragma_query_value(None, "page_size", |row| row.get(0))
                .unwrap();
            assert_eq!(size, page_size);
            let commits = write(&conn, &|| {
                conn.execute_batch(
                    "PRAGMA wal_autocheckpoint = 0; PRAGMA wal_checkpoint(TRUNCATE);",
                )
                .unwrap()
            });
            let wal = std::fs::metadata(format!("{}-wal", path.display()))
                .unwrap()
                .len();
            let per_commit = wal as f64 / commits as f64;
            println!(
                "| {page_size} | {name} | {per_commit:.0} | {:.2} |",
                per_commit / (page_size + 24) as f64
            );
        }
    }
}

/// A write measured by [`wal_per_commit`]: sets its rows up, calls `start`, commits; returns
/// how many commits followed `start`.
type WalWrite = fn(&Connection, &dyn Fn()) -> usize;

const WAL_WRITES: [(&str, WalWrite); 4] = [
    ("append, workflows row rewritten whole", |conn, start| {
        appends(conn, start, Projection::WholeRow)
    }),
    ("append, head and time only", |conn, start| {
        appends(conn, start, Projection::HeadOnly)
    }),
    ("checkpoint CAS naming run_id", |conn, start| {
        checkpoint_updates(conn, start, true)
    }),
    ("checkpoint CAS keeping its run", |conn, start| {
        checkpoint_updates(conn, start, false)
    }),
];

fn appends(conn: &Connection, start: &dyn Fn(), projection: Projection) -> usize {
    let raw = RawJournal { conn, projection };
    for w in 0..100 {
        raw.append(&wf(w), &[encoded_payload(w, 0)], 0);
    }
    start();
    for n in 1..=10 {
        for w in 0..100 {
            raw.append(&wf(w), &[encoded_payload(w, n)], n as i64);
        }
    }
    1000
}

fn checkpoint_updates(conn: &Connection, start: &dyn Fn(), naming_run: bool) -> usize {
    let state = |n: i64| format!(r#"{{"step":{n},"messages":12,"cursor":"msg_01HZX3K9Q7"}}"#);
    for i in 0..100 {
        conn.execute(
            "INSERT INTO checkpoints (checkpoint_id, run_id, revision, state, updated_at)
             VALUES (?1, 'run-1', 0, ?2, 0)",
            rusqlite::params![format!("cp-{i}"), state(0)],
        )
        .unwrap();
    }
    start();
    let sql = if naming_run {
        "UPDATE checkpoints SET run_id = ?2, revision = ?3, state = ?4, updated_at = ?5
         WHERE checkpoint_id = ?1 AND revision = ?3 - 1"
    } else {
        "UPDATE checkpoints SET revision = ?3, state = ?4, updated_at = ?5
         WHERE checkpoint_id = ?1 AND revision = ?3 - 1 AND run_id IS ?2"
    };
    for n in 0..1000_i64 {
        let changed = conn
            .execute(
                sql,
                rusqlite::params![format!("cp-{}", n % 100), "run-1", n / 100 + 1, state(n), n],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    1000
}
