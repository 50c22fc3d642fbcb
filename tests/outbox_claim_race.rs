//! Claims racing over one database file from several connections and threads: every row is
//! claimed exactly once, and every row is claimed.
#![cfg(not(target_family = "wasm"))]

use std::path::Path;
use std::sync::{Barrier, Mutex};
use std::thread;

use runstore::{
    ClaimFilter, ClaimScope, NewOutboxRow, OutboxClaim, OutboxStatus, OutboxStore, PageRequest,
    SqliteStore, MAX_PAGE_LIMIT,
};

const ROWS: usize = 2_000;
const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const NOW: i64 = 1_000_000;

/// Fills a new file with `ROWS` due rows spread over namespaces, fences and workflows.
fn seed(path: &Path) -> Vec<String> {
    let store = SqliteStore::open(path).expect("open");
    let rows: Vec<NewOutboxRow> = (0..ROWS)
        .map(|i| NewOutboxRow {
            dispatch_key: format!("wf-{}:{i:05}", i % 37),
            workflow_id: format!("wf-{}", i % 37),
            ordinal: i as u64,
            activity_type: "send".into(),
            input: vec![(i % 251) as u8; 16],
            visible_after: (i % 97) as i64,
            attempt: 0,
            run_id: None,
            namespace: Some(NAMESPACES[i % NAMESPACES.len()].into()),
            task_queue: None,
            node: None,
            max_attempts: None,
        })
        .collect();
    for batch in rows.chunks(100) {
        store.insert_outbox(batch).expect("insert");
    }
    let mut keys: Vec<String> = rows.into_iter().map(|r| r.dispatch_key).collect();
    keys.sort();
    keys
}

/// Claimer `n`'s filter: some claim within one namespace, the others take any row, so
/// scoped and unscoped claims overlap.
fn filter_of(n: usize) -> ClaimFilter {
    let scope = n.is_multiple_of(2).then(|| ClaimScope {
        namespace: Some(NAMESPACES[(n / 2) % NAMESPACES.len()].into()),
        ..ClaimScope::default()
    });
    ClaimFilter {
        exclude_workflows: Vec::new(),
        scope,
    }
}

/// Claims with `claim_once` until a claim comes back empty; completes every other batch so
/// writes other than claims contend too. Returns the keys it claimed.
fn drain(n: usize, claim_once: impl Fn(u32, &ClaimFilter) -> Vec<String>) -> Vec<String> {
    let limit = 1 + (n % 7) as u32;
    let filter = filter_of(n);
    let mut mine = Vec::new();
    loop {
        let mut claimed = claim_once(limit, &filter);
        // An empty scoped claim only means its namespace is drained: go on unscoped.
        if claimed.is_empty() && filter.scope.is_some() {
            claimed = claim_once(limit, &ClaimFilter::default());
        }
        if claimed.is_empty() {
            return mine;
        }
        mine.extend(claimed);
    }
}

/// Runs `op` again while it reports BUSY, as a dispatcher does: eight connections hammering one
/// file on a loaded machine can starve one past SQLite's busy timeout. Any other error fails.
fn retry_busy<T>(what: &str, op: impl Fn() -> runstore::Result<T>) -> T {
    loop {
        match op() {
            Err(error) if error.code() == "BUSY" => thread::yield_now(),
            other => return other.unwrap_or_else(|e| panic!("{what}: {e}")),
        }
    }
}

fn claim_and_maybe_complete(store: &SqliteStore, limit: u32, filter: &ClaimFilter) -> Vec<String> {
    let rows = retry_busy("claim", || store.claim_outbox(NOW, limit, filter));
    let claims: Vec<OutboxClaim> = rows
        .into_iter()
        .map(|r| OutboxClaim {
            dispatch_key: r.dispatch_key,
            claim_token: r.claim_token,
        })
        .collect();
    if claims
        .first()
        .is_some_and(|c| c.dispatch_key.ends_with(['0', '2', '4', '6', '8']))
    {
        // Settling with the claim's own tokens succeeds: no other claimer took these rows.
        retry_busy("complete", || store.complete_outbox_batch(&claims));
    }
    claims.into_iter().map(|c| c.dispatch_key).collect()
}

/// Checks the claims of every claimer against the seeded keys and the stored states.
fn assert_claimed_exactly_once(path: &Path, expected: &[String], claims: Vec<Vec<String>>) {
    let mut all: Vec<String> = claims.into_iter().flatten().collect();
    all.sort();
    let duplicated: Vec<_> = all.windows(2).filter(|w| w[0] == w[1]).collect();
    assert!(duplicated.is_empty(), "claimed twice: {duplicated:?}");
    assert_eq!(all.len(), expected.len(), "some rows were never claimed");
    assert_eq!(all, expected);
    let store = SqliteStore::open(path).expect("reopen");
    let pending = store
        .list_outbox(Some(OutboxStatus::Pending), &PageRequest::first(10))
        .unwrap()
        .items;
    assert!(pending.is_empty(), "left pending: {pending:?}");
    let claimed = store
        .list_outbox(
            Some(OutboxStatus::Claimed),
            &PageRequest::first(MAX_PAGE_LIMIT),
        )
        .unwrap()
        .items;
    let done = store
        .list_outbox(
            Some(OutboxStatus::Done),
            &PageRequest::first(MAX_PAGE_LIMIT),
        )
        .unwrap()
        .items;
    assert_eq!(claimed.len() + done.len(), expected.len());
    assert!(claimed.iter().all(|r| r.claimed_at == Some(NOW)));
    // Each claim hands out its own token: no token covers more rows than one claim takes.
    let mut rows_per_token = std::collections::BTreeMap::new();
    for row in claimed.iter().chain(&done) {
        *rows_per_token.entry(row.claim_token).or_insert(0) += 1;
    }
    assert!(
        !rows_per_token.contains_key(&0),
        "a claimed row without a token"
    );
    let most = rows_per_token.values().max().copied().unwrap_or(0);
    assert!(most <= 7, "one token covers {most} rows");
}

#[test]
fn two_connections_with_several_threads_each_claim_every_row_once() {
    const THREADS_PER_CONNECTION: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let expected = seed(&path);
    let connections = [
        Mutex::new(SqliteStore::open(&path).unwrap()),
        Mutex::new(SqliteStore::open(&path).unwrap()),
    ];
    let start = Barrier::new(connections.len() * THREADS_PER_CONNECTION);
    let claims: Vec<Vec<String>> = thread::scope(|s| {
        let handles: Vec<_> = (0..connections.len() * THREADS_PER_CONNECTION)
            .map(|n| {
                let (connection, start) = (&connections[n % connections.len()], &start);
                s.spawn(move || {
                    start.wait();
                    drain(n, |limit, filter| {
                        let store = connection.lock().unwrap();
                        claim_and_maybe_complete(&store, limit, filter)
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    drop(connections);
    assert_claimed_exactly_once(&path, &expected, claims);
}

#[test]
fn a_connection_per_thread_claims_every_row_once() {
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let expected = seed(&path);
    let start = Barrier::new(THREADS);
    let claims: Vec<Vec<String>> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|n| {
                let (path, start) = (&path, &start);
                s.spawn(move || {
                    let store = SqliteStore::open(path).unwrap();
                    start.wait();
                    drain(n, |limit, filter| {
                        claim_and_maybe_complete(&store, limit, filter)
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_claimed_exactly_once(&path, &expected, claims);
}
