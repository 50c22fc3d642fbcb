//! What must hold after a crash, given how many steps committed: every step before that in
//! full, nothing of any later step, and a database that passes `PRAGMA integrity_check`.

use runstore::*;

use super::plan::{self, Plan, SETTLE_LAG, TIMER_LAG, WORKFLOWS};

/// How many steps committed, read from the checkpoint whose revision each step sets.
pub fn committed_steps(store: &SqliteStore) -> u64 {
    match store.load_checkpoint(plan::CHECKPOINT) {
        Ok(checkpoint) => {
            assert_eq!(checkpoint, plan::checkpoint(checkpoint.revision));
            checkpoint.revision + 1
        }
        Err(Error::NotFound { .. }) => 0,
        Err(other) => panic!("loading the step counter: {other}"),
    }
}

/// Checks the store at `path` and returns how many steps committed (`n`): the steps from
/// `from` to `n` one by one, the state all steps leave behind as a whole, nothing of the steps
/// after `n`, and the file's integrity.
pub fn check_store(store: SqliteStore, plan: &mut Plan, from: u64) -> u64 {
    let n = committed_steps(&store);
    for w in 0..WORKFLOWS {
        check_journal(&store, plan, w, from, n);
    }
    for k in from..n {
        check_step(&store, plan, k, n);
    }
    for k in n..n + 2 {
        assert_eq!(store.outbox_row_state(&plan::outbox_key(k)).unwrap(), None);
        if let Some(id) = plan::request_id(k) {
            assert!(
                store.request_outcome(&id).unwrap().committed().is_none(),
                "step {k}"
            );
        }
    }
    check_latest(&store, n);
    check_integrity(store);
    n
}

/// Workflow `w`'s events from its first step at or after `from`: each step's events at the
/// seqs after its expected head, no gap, and nothing after the last committed step.
fn check_journal(store: &SqliteStore, plan: &mut Plan, w: u64, from: u64, n: u64) {
    let workflow = format!("wf-{w}");
    let steps: Vec<u64> = (from..n).filter(|k| k % WORKFLOWS == w).collect();
    let start = match steps.first() {
        Some(&first) => plan.head_before(first),
        None => plan.head_after(n, w),
    };
    assert_eq!(store.head(&workflow).unwrap(), plan.head_after(n, w));
    let stored = read_all_from(store, &workflow, start + 1);
    let expected: Vec<Event> = steps.iter().flat_map(|&k| plan.events(k)).collect();
    assert_eq!(stored.len(), expected.len(), "{workflow} from seq {start}");
    for (i, (stored, expected)) in stored.iter().zip(&expected).enumerate() {
        assert_eq!(stored.seq, start + 1 + i as u64, "{workflow}: a gap");
        assert_eq!(&stored.event, expected, "{workflow} seq {}", stored.seq);
    }
}

/// Step `k < n`: its outbox row (settled once step `k + SETTLE_LAG` committed) and, under a
/// request id, the outcome recorded for it (while the request log keeps it).
fn check_step(store: &SqliteStore, plan: &mut Plan, k: u64, n: u64) {
    let row = store
        .outbox_row_state(&plan::outbox_key(k))
        .unwrap()
        .unwrap_or_else(|| panic!("step {k}: outbox row missing"));
    let settled = k + SETTLE_LAG < n;
    let status = if settled {
        OutboxStatus::Done
    } else {
        OutboxStatus::Pending
    };
    assert_eq!(row.status, status, "step {k}");
    let Some(id) = plan::request_id(k) else {
        return;
    };
    let outcome = store.request_outcome(&id).unwrap();
    // The log keeps the newest MAX_KEPT_REQUESTS ids: a long run outgrows it, and then knows
    // it forgot them (never that they did not commit).
    let newer = plan::request_ids_below(n) - plan::request_ids_below(k + 1);
    if newer < MAX_KEPT_REQUESTS {
        let record = outcome
            .committed()
            .unwrap_or_else(|| panic!("step {k}: request {id} not recorded"));
        assert_eq!(record.outcomes, plan.outcomes(k), "step {k}");
    } else {
        assert!(
            matches!(outcome, RequestOutcome::Unknown { .. }),
            "step {k}: request {id} past the log's bound reads {outcome:?}"
        );
    }
}

/// What the steps leave as a whole: the live timers and pending rows of the last steps only,
/// the effect and visibility record of the last step that wrote them.
fn check_latest(store: &SqliteStore, n: u64) {
    let live = n.saturating_sub(TIMER_LAG)..n;
    let mut timers: Vec<String> = store
        .list_timers(&PageRequest::first(MAX_PAGE_LIMIT))
        .unwrap()
        .items
        .into_iter()
        .map(|t| t.timer_id)
        .collect();
    timers.sort();
    let mut expected: Vec<String> = live.map(plan::timer_id).collect();
    expected.sort();
    assert_eq!(timers, expected, "live timers after {n} steps");

    let mut pending: Vec<String> = store
        .list_outbox(Some(OutboxStatus::Pending), &PageRequest::first(100))
        .unwrap()
        .items
        .into_iter()
        .map(|row| row.dispatch_key)
        .collect();
    pending.sort();
    let mut expected: Vec<String> = (n.saturating_sub(SETTLE_LAG)..n)
        .map(plan::outbox_key)
        .collect();
    expected.sort();
    assert_eq!(pending, expected, "pending rows after {n} steps");

    let last_even = (0..n).rev().find(|k| k.is_multiple_of(2));
    assert_eq!(
        store.load_effect(plan::EFFECT).unwrap(),
        last_even.map(plan::effect)
    );
    let last_odd = (0..n).rev().find(|k| k % 2 == 1);
    assert_eq!(
        store.get_visibility(plan::VISIBILITY).unwrap(),
        last_odd.map(plan::visibility)
    );
}

fn check_integrity(store: SqliteStore) {
    let conn = store.into_connection();
    let mut statement = conn.prepare("PRAGMA integrity_check").unwrap();
    let report: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(report, ["ok"]);
}

/// Every event of `workflow` from `from_seq` on, page after page.
fn read_all_from(store: &SqliteStore, workflow: &str, from_seq: u64) -> Vec<StoredEvent> {
    let mut events = Vec::new();
    let mut page = PageRequest::first(MAX_PAGE_LIMIT);
    loop {
        let read = store.read_history_from(workflow, from_seq, &page).unwrap();
        events.extend(read.items);
        match read.next_cursor {
            Some(cursor) => page.cursor = Some(cursor),
            None => return events,
        }
    }
}
