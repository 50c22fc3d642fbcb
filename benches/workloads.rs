//! SPEC section 5 workloads natively: each through the store and, in the same run, as the
//! same SQL through plain rusqlite. Prints ops/s and the ratio store / plain SQL.
//!
//! Run: `cargo bench --bench workloads` (add `-- memory` or `-- file` for one medium).

#[path = "support/workloads.rs"]
mod workloads;

use std::path::Path;
use std::time::Instant;

use runstore::{Durability, SqliteStore};
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
            wal_per_append(dir.path());
        }
    }
}

/// Prints what one single-event append adds to the WAL, by page size and by how the
/// `workflows` row is kept: 100 workflows, then 10 appends to each with checkpoints off.
fn wal_per_append(dir: &Path) {
    const WORKFLOWS: usize = 100;
    const APPENDS: usize = 10;
    println!("\nnative, file: WAL bytes per single-event append\n");
    println!("| page size | workflows row | WAL bytes per append | pages per append |");
    println!("|---:|---|---:|---:|");
    for page_size in [8192, 4096] {
        for (name, projection) in [
            ("whole row rewritten", Projection::WholeRow),
            ("head and time only", Projection::HeadOnly),
        ] {
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
            let raw = RawJournal {
                conn: &conn,
                projection,
            };
            for w in 0..WORKFLOWS {
                raw.append(&wf(w), &[encoded_payload(w, 0)], 0);
            }
            conn.execute_batch("PRAGMA wal_autocheckpoint = 0; PRAGMA wal_checkpoint(TRUNCATE);")
                .unwrap();
            for n in 1..=APPENDS {
                for w in 0..WORKFLOWS {
                    raw.append(&wf(w), &[encoded_payload(w, n)], n as i64);
                }
            }
            let wal = std::fs::metadata(format!("{}-wal", path.display()))
                .unwrap()
                .len();
            let per_append = wal as f64 / (WORKFLOWS * APPENDS) as f64;
            println!(
                "| {page_size} | {name} | {per_append:.0} | {:.2} |",
                per_append / (page_size + 24) as f64
            );
        }
    }
}
