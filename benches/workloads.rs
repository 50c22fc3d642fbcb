//! SPEC section 5 workloads natively: each through the store and, in the same run, as the
//! same SQL through plain rusqlite. Prints ops/s and the ratio store / plain SQL.
//!
//! Run: `cargo bench --bench workloads` (add `-- memory` or `-- file` for one medium).

#[path = "support/workloads.rs"]
mod workloads;

use std::time::Instant;

use runstore::{Durability, SqliteStore};

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
    }
}
