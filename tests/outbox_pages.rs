//! What the outbox's writes cost the WAL, beside the same jobs on the table a developer would
//! write by hand (one status index, no fencing, no attempts), in the same run: SPEC §5's W4
//! shape (rows of 100 workflows, 100 per insert), claims of 100 settled as one batch or one
//! completion at a time. On OPFS every page a commit changes is a write; these counts are what
//! the browser benchmark's outbox figures follow.
#![cfg(not(target_family = "wasm"))]

use std::path::Path;

use runstore::{ClaimFilter, NewOutboxRow, OutboxClaim, OutboxStore, SqliteStore};
use rusqlite::{params, Connection};

const ROWS: usize = 4000;
const BATCH: usize = 100;
const INPUT: &[u8] =
    br#"{"amount":1999,"currency":"EUR","card":"tok_visa_4242","customer":"cus_9s8d7f"}"#;
const PAGE: f64 = 4096.0 + 24.0;

fn workflow(i: usize) -> String {
    format!("workflow-{:04}", i % 100)
}

fn key(i: usize) -> String {
    format!("{}:{i:05}", workflow(i))
}

/// Pages per commit of each phase: inserts of 100, claims of 100, completions of 100 in one
/// commit, single completions.
#[derive(Debug, Default)]
struct Pages {
    insert: f64,
    claim: f64,
    complete_batch: f64,
    complete_one: f64,
}

/// The outbox work both sides do, each write its own commit; `wal()` is the WAL's size.
trait Outbox {
    fn insert(&self, first: usize);
    /// Claims up to 100 rows: their keys and claim tokens.
    fn claim(&self) -> Vec<(String, u64)>;
    fn complete_batch(&self, claims: &[(String, u64)]);
    fn complete_one(&self, key: &str, token: u64);
}

fn measure(outbox: &dyn Outbox, wal: &dyn Fn() -> f64) -> Pages {
    let mut pages = Pages::default();
    let timed = |f: &mut dyn FnMut()| {
        let before = wal();
        f();
        (wal() - before) / PAGE
    };
    for first in (0..ROWS).step_by(BATCH) {
        pages.insert += timed(&mut || outbox.insert(first));
    }
    let rounds = ROWS / BATCH;
    let mut singles = 0;
    for round in 0..rounds {
        let mut claims = Vec::new();
        pages.claim += timed(&mut || claims = outbox.claim());
        assert_eq!(claims.len(), BATCH);
        if round % 2 == 0 {
            pages.complete_batch += timed(&mut || outbox.complete_batch(&claims));
        } else {
            for (key, token) in &claims {
                pages.complete_one += timed(&mut || outbox.complete_one(key, *token));
                singles += 1;
            }
        }
    }
    assert!(outbox.claim().is_empty());
    Pages {
        insert: pages.insert / rounds as f64,
        claim: pages.claim / rounds as f64,
        complete_batch: pages.complete_batch / (rounds / 2) as f64,
        complete_one: pages.complete_one / singles as f64,
    }
}

impl Outbox for SqliteStore {
    fn insert(&self, first: usize) {
        let rows: Vec<NewOutboxRow> = (first..first + BATCH)
            .map(|i| NewOutboxRow {
                dispatch_key: key(i),
                workflow_id: workflow(i),
                ordinal: i as u64,
                activity_type: "charge-card".into(),
                input: INPUT.to_vec(),
                visible_after: (i % 1000) as i64,
                attempt: 0,
                run_id: Some("run-1".into()),
                namespace: Some("default".into()),
                task_queue: None,
                node: None,
                max_attempts: None,
            })
            .collect();
        assert_eq!(self.insert_outbox(&rows).unwrap(), BATCH as u64);
    }

    fn claim(&self) -> Vec<(String, u64)> {
        let rows = self
            .claim_outbox(1_000_000, BATCH as u32, &ClaimFilter::default())
            .unwrap();
        rows.into_iter()
            .map(|row| (row.dispatch_key, row.claim_token))
            .collect()
    }

    fn complete_batch(&self, claims: &[(String, u64)]) {
        let claims: Vec<OutboxClaim> = claims
            .iter()
            .map(|(dispatch_key, claim_token)| OutboxClaim {
                dispatch_key: dispatch_key.clone(),
                claim_token: *claim_token,
            })
            .collect();
        self.complete_outbox_batch(&claims).unwrap();
    }

    fn complete_one(&self, key: &str, token: u64) {
        self.complete_outbox(key, token).unwrap();
    }
}

/// The hand-written table: its key, one index for the claim's query.
struct Plain(Connection);

impl Plain {
    fn open(path: &Path) -> Plain {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             PRAGMA journal_mode = WAL;
             PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE outbox (
               dispatch_key TEXT PRIMARY KEY, workflow_id TEXT NOT NULL,
               activity_type TEXT NOT NULL, input BLOB NOT NULL, status TEXT NOT NULL,
               visible_after INTEGER NOT NULL, claimed_at INTEGER);
             CREATE INDEX outbox_due ON outbox (status, visible_after);",
        )
        .unwrap();
        Plain(conn)
    }

    fn in_tx(&self, f: impl FnOnce(&Connection)) {
        self.0.execute_batch("BEGIN IMMEDIATE").unwrap();
        f(&self.0);
        self.0.execute_batch("COMMIT").unwrap();
    }

    fn complete_in(conn: &Connection, key: &str) {
        let changed = conn
            .prepare_cached(
                "UPDATE outbox SET status = 'done' WHERE dispatch_key = ?1 AND status = 'claimed'",
            )
            .unwrap()
            .execute([key])
            .unwrap();
        assert_eq!(changed, 1);
    }
}

impl Outbox for Plain {
    fn insert(&self, first: usize) {
        self.in_tx(|conn| {
            let mut insert = conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO outbox (dispatch_key, workflow_id, activity_type,
                       input, status, visible_after) VALUES (?1, ?2, ?3, ?4, 'pending', ?5)",
                )
                .unwrap();
            for i in first..first + BATCH {
                let visible_after = (i % 1000) as i64;
                insert
                    .execute(params![
                        key(i),
                        workflow(i),
                        "charge-card",
                        INPUT,
                        visible_after
                    ])
                    .unwrap();
            }
        });
    }

    fn claim(&self) -> Vec<(String, u64)> {
        let mut claimed = Vec::new();
        self.in_tx(|conn| {
            let mut claim = conn
                .prepare_cached(
                    "UPDATE outbox SET status = 'claimed', claimed_at = ?1
                     WHERE dispatch_key IN (
                       SELECT dispatch_key FROM outbox
                       WHERE status = 'pending' AND visible_after <= ?1
                       ORDER BY visible_after LIMIT ?2)
                     RETURNING dispatch_key",
                )
                .unwrap();
            let keys = claim
                .query_map(params![1_000_000, BATCH as i64], |row| row.get(0))
                .unwrap();
            claimed = keys.map(|key| (key.unwrap(), 0)).collect();
        });
        claimed
    }

    fn complete_batch(&self, claims: &[(String, u64)]) {
        self.in_tx(|conn| {
            for (key, _) in claims {
                Plain::complete_in(conn, key);
            }
        });
    }

    fn complete_one(&self, key: &str, _token: u64) {
        self.in_tx(|conn| Plain::complete_in(conn, key));
    }
}

fn wal_size(path: &Path) -> impl Fn() -> f64 + '_ {
    move || {
        let wal = format!("{}-wal", path.display());
        std::fs::metadata(wal).map_or(0.0, |m| m.len() as f64)
    }
}

/// Claims and completions change the pages the hand-written table's do, give or take the
/// claim-token counter and the index of claimed rows (which finds stale claims): no index
/// the store keeps for workflows or namespaces follows a row's status.
#[test]
fn claims_and_completions_write_about_the_pages_of_a_hand_written_outbox() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("store.db");
    let store = SqliteStore::open(&store_path).unwrap();
    store.raw_execute("PRAGMA wal_autocheckpoint = 0").unwrap();
    let store_pages = measure(&store, &wal_size(&store_path));

    let plain_path = dir.path().join("plain.db");
    let plain = Plain::open(&plain_path);
    let plain_pages = measure(&plain, &wal_size(&plain_path));

    println!("pages per commit: store {store_pages:?}, hand-written {plain_pages:?}");
    // Every commit that changes something also writes its change to the store's change feed,
    // which the hand-written table has not: the feed's newest page, one per commit.
    let feed = 1.0;
    // The counter row and the claimed rows' index, a few pages on top of a claim of 100.
    assert!(
        store_pages.claim <= plain_pages.claim + 8.0 + feed,
        "{store_pages:?} {plain_pages:?}"
    );
    assert!(
        store_pages.complete_batch <= plain_pages.complete_batch * 1.25 + feed,
        "{store_pages:?} {plain_pages:?}"
    );
    assert!(
        store_pages.complete_one <= plain_pages.complete_one + feed,
        "{store_pages:?} {plain_pages:?}"
    );
    // Inserting keeps one more index than the hand-written table (rows by workflow, which
    // cancelling and purging a workflow need), on pages spread like the key's.
    assert!(
        store_pages.insert <= plain_pages.insert * 2.0,
        "{store_pages:?} {plain_pages:?}"
    );
}
