//! The baseline of scripts/bench-sync-scale.sh: the reads of a first sync made as plain SQL on
//! the sync server's tables, on one connection, with nothing decoded or checked. Two ways
//! through the same events of one namespace:
//! - `feed`: the namespace's change feed in pages of `PAGE` entries, each with its events
//!   (what a pull with `events=true` reads);
//! - `keyset`: the namespace's events in primary-key order, `PAGE × 20` rows a page.
//!
//! Settings from the environment: `RUNSTORE_PG_URL`, `SCHEMA`, `NAMESPACE`, `PAGE` (default
//! 500). Prints one JSON line per way: `{ way, events, bytes, ms }`.

use std::time::Instant;

use postgres::{Client, NoTls};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("RUNSTORE_PG_URL")?;
    let schema = std::env::var("SCHEMA")?;
    let namespace = std::env::var("NAMESPACE")?;
    let page: i64 = std::env::var("PAGE").map_or(Ok(500), |p| p.parse())?;
    let mut client = Client::connect(&url, NoTls)?;
    client.batch_execute(&format!("SET search_path TO {schema}"))?;

    // The namespace's change feed is named after it.
    let feed = namespace.clone();
    let started = Instant::now();
    let (mut events, mut bytes, mut after) = (0u64, 0u64, 0i64);
    let statement = client.prepare(
        "WITH page AS (
           SELECT position, workflow_id, base, head FROM sync_feed
           WHERE feed = $1 AND position > $2 ORDER BY position LIMIT $3)
         SELECT p.position, e.workflow_id, e.seq, e.event FROM page AS p
         JOIN events AS e ON e.workflow_id = p.workflow_id AND e.seq > p.base AND e.seq <= p.head
         ORDER BY p.position, e.seq",
    )?;
    loop {
        let rows = client.query(&statement, &[&feed, &after, &page])?;
        let Some(last) = rows.last() else { break };
        after = last.get(0);
        for row in &rows {
            let id: &str = row.get(1);
            let event: &[u8] = row.get(3);
            events += 1;
            bytes += (id.len() + event.len()) as u64;
        }
    }
    report("feed", events, bytes, started);

    let started = Instant::now();
    let (mut events, mut bytes) = (0u64, 0u64);
    let (mut id, mut seq) = (format!("{namespace}/w/"), 0i64);
    // Ids of the namespace sort between its prefix and the prefix with its '/' bumped to '0'.
    let end = format!("{namespace}/w0");
    let statement = client.prepare(
        "SELECT workflow_id, seq, event FROM events
         WHERE (workflow_id, seq) > ($1, $2) AND workflow_id < $3
         ORDER BY workflow_id, seq LIMIT $4",
    )?;
    loop {
        let rows = client.query(&statement, &[&id, &seq, &end, &(page * 20)])?;
        let Some(last) = rows.last() else { break };
        (id, seq) = (last.get(0), last.get(1));
        for row in &rows {
            let workflow: &str = row.get(0);
            let event: &[u8] = row.get(2);
            events += 1;
            bytes += (workflow.len() + event.len()) as u64;
        }
    }
    report("keyset", events, bytes, started);
    Ok(())
}

fn report(way: &str, events: u64, bytes: u64, started: Instant) {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    println!(r#"{{"way":"{way}","events":{events},"bytes":{bytes},"ms":{ms:.1}}}"#);
}
