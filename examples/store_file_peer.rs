//! The native crate on a store file, for the file medium's test in Node
//! (tests/js/node-file.test.mjs): opens `<db>` with `SqliteStore::open` (creating it when
//! missing), prints the head of `<workflow>` and `PRAGMA integrity_check`'s answer, then appends
//! one event named `<name>` at that head and prints the new head.
//!
//! Usage: `cargo run --example store_file_peer -- <db> <workflow> <name>`

use runstore::{Event, EventJournal, EventKind, SqliteStore};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, workflow, name] = args.as_slice() else {
        return Err("usage: store_file_peer <db> <workflow> <name>".into());
    };
    let store = SqliteStore::open(db)?;
    let head = store.head(workflow)?;
    let event = Event {
        kind: EventKind::Custom { name: name.clone() },
        recorded_at: 1,
        data: serde_json::json!({ "by": "native" }),
    };
    let after = store.append(workflow, &[event], head)?;
    let conn = store.into_connection();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
    println!("head {head} integrity {integrity} appended {after}");
    Ok(())
}
