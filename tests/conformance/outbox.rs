//! The transactional outbox: insert ignoring duplicates, claims (fence, order, exclusion,
//! scope), the transitions of live rows and their refusals, re-arming, the inspection reads
//! and reopening.

use std::collections::BTreeMap;

use runstore::*;

use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    insert_counts_new_rows_and_ignores_duplicate_keys,
    invalid_rows_are_refused_and_nothing_is_inserted,
    claim_takes_due_rows_oldest_visible_after_first,
    claim_leaves_excluded_workflows_alone,
    claim_within_a_scope_takes_only_matching_rows,
    claim_refuses_an_invalid_filter_and_claims_nothing,
    complete_settles_claimed_and_pending_rows,
    settled_and_unknown_rows_refuse_every_transition,
    complete_batch_is_all_or_nothing,
    retry_returns_the_row_to_pending_behind_its_fence,
    fail_dead_letters_the_row,
    cancel_settles_every_live_row_of_the_workflow,
    rearm_returns_the_oldest_stale_claims_to_pending,
    a_stale_claim_token_settles_nothing,
    rearm_counts_attempts_and_dead_letters_at_the_maximum,
    a_retry_to_the_maximum_dead_letters_the_row,
    stale_claims_are_listed_without_change,
    unsettled_workflows_are_those_with_live_rows,
    namespace_loads_count_several_namespaces_in_one_call,
    claimable_routes_ignore_rows_not_yet_visible_or_not_pending,
    list_outbox_filters_by_status_and_pages_by_key,
    outbox_survives_reopen,
];

pub fn row(key: &str, workflow_id: &str, visible_after: Millis) -> NewOutboxRow {
    NewOutboxRow {
        dispatch_key: key.into(),
        workflow_id: workflow_id.into(),
        ordinal: 1,
        activity_type: "send".into(),
        input: key.as_bytes().to_vec(),
        visible_after,
        attempt: 0,
        run_id: None,
        namespace: None,
        task_queue: None,
        node: None,
        max_attempts: None,
    }
}

/// A due row of its own workflow (named like the key) on the given route.
fn routed(key: &str, visible_after: Millis, route: [Option<&str>; 3]) -> NewOutboxRow {
    let [namespace, task_queue, node] = route.map(|f| f.map(String::from));
    NewOutboxRow {
        namespace,
        task_queue,
        node,
        ..row(key, key, visible_after)
    }
}

fn scope(namespace: Option<&str>, task_queue: Option<&str>, node: Option<&str>) -> ClaimScope {
    ClaimScope {
        namespace: namespace.map(String::from),
        task_queue: task_queue.map(String::from),
        node: node.map(String::from),
    }
}

fn within(scope: ClaimScope) -> ClaimFilter {
    ClaimFilter {
        scope: Some(scope),
        ..ClaimFilter::default()
    }
}

fn excluding(workflows: &[&str]) -> ClaimFilter {
    ClaimFilter {
        exclude_workflows: workflows.iter().map(|w| w.to_string()).collect(),
        scope: None,
    }
}

fn keys(rows: &[OutboxRow]) -> Vec<&str> {
    rows.iter().map(|r| r.dispatch_key.as_str()).collect()
}

fn claim(store: &Store, now: Millis, limit: u32) -> Vec<String> {
    claim_with(store, now, limit, &ClaimFilter::default())
}

fn claim_with(store: &Store, now: Millis, limit: u32, filter: &ClaimFilter) -> Vec<String> {
    let rows = store.claim_outbox(now, limit, filter).unwrap();
    rows.into_iter().map(|r| r.dispatch_key).collect()
}

fn state(store: &Store, key: &str) -> OutboxRowState {
    store
        .outbox_row_state(key)
        .unwrap()
        .unwrap_or_else(|| panic!("row {key} exists"))
}

fn status(store: &Store, key: &str) -> OutboxStatus {
    state(store, key).status
}

/// The row's current claim token, as its holder knows it (0 for an unknown row, or a key
/// the store refuses).
fn token(store: &Store, key: &str) -> u64 {
    store
        .outbox_row_state(key)
        .ok()
        .flatten()
        .map_or(0, |s| s.claim_token)
}

/// Completes a row as the holder of its current claim.
fn complete(store: &Store, key: &str) {
    store.complete_outbox(key, token(store, key)).unwrap();
}

/// Fails a row as the holder of its current claim.
fn fail(store: &Store, key: &str) {
    store
        .fail_outbox(key, token(store, key), "gave up")
        .unwrap();
}

/// The state of a live row of attempt 0 with the default maximum and no dead reason.
fn live(
    status: OutboxStatus,
    visible_after: Millis,
    claimed_at: Option<Millis>,
    claim_token: u64,
) -> OutboxRowState {
    OutboxRowState {
        status,
        attempt: 0,
        visible_after,
        claimed_at,
        claim_token,
        max_attempts: DEFAULT_MAX_ATTEMPTS,
        dead_reason: None,
    }
}

fn insert_counts_new_rows_and_ignores_duplicate_keys(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.insert_outbox(&[]).unwrap(), 0);
    let original = NewOutboxRow {
        ordinal: 7,
        attempt: 2,
        run_id: Some("r1".into()),
        namespace: Some("shop".into()),
        task_queue: Some("mail".into()),
        node: Some("n1".into()),
        ..row("wf:1", "wf", 10)
    };
    assert_eq!(
        store
            .insert_outbox(&[original.clone(), row("wf:2", "wf", 20)])
            .unwrap(),
        2
    );
    let rival = NewOutboxRow {
        ordinal: 9,
        activity_type: "other".into(),
        input: vec![9, 9],
        visible_after: 0,
        ..row("wf:1", "someone-else", 0)
    };
    // The stored wf:1 wins over the rival; within one batch the first wf:3 wins.
    let batch = [rival, row("wf:3", "wf", 30), row("wf:3", "wf", 99)];
    assert_eq!(store.insert_outbox(&batch).unwrap(), 1);
    let stored = store
        .list_outbox(None, &PageRequest::first(10))
        .unwrap()
        .items;
    assert_eq!(keys(&stored), ["wf:1", "wf:2", "wf:3"]);
    assert_eq!(
        stored[0],
        OutboxRow {
            dispatch_key: "wf:1".into(),
            workflow_id: "wf".into(),
            ordinal: 7,
            activity_type: "send".into(),
            input: b"wf:1".to_vec(),
            status: OutboxStatus::Pending,
            attempt: 2,
            visible_after: 10,
            claimed_at: None,
            claim_token: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            dead_reason: None,
            run_id: Some("r1".into()),
            namespace: Some("shop".into()),
            task_queue: Some("mail".into()),
            node: Some("n1".into()),
        }
    );
    assert_eq!(stored[2].visible_after, 30);
    // A duplicate leaves a row that moved on as it is: it does not become pending again.
    assert_eq!(claim(&store, 10, 1), ["wf:1"]);
    assert_eq!(store.insert_outbox(&[original]).unwrap(), 0);
    assert_eq!(
        state(&store, "wf:1"),
        OutboxRowState {
            attempt: 2,
            ..live(OutboxStatus::Claimed, 10, Some(10), 1)
        }
    );
    // A row's own maximum is stored with it.
    let patient = NewOutboxRow {
        max_attempts: Some(50),
        ..row("wf:4", "wf", 0)
    };
    store.insert_outbox(&[patient]).unwrap();
    assert_eq!(state(&store, "wf:4").max_attempts, 50);
}

fn invalid_rows_are_refused_and_nothing_is_inserted(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let long = "k".repeat(MAX_ID_BYTES + 1);
    let base = || row("bad", "wf", 0);
    let cases = [
        (
            NewOutboxRow {
                max_attempts: Some(0),
                ..base()
            },
            "maxAttempts",
        ),
        (
            NewOutboxRow {
                attempt: 3,
                max_attempts: Some(3),
                ..base()
            },
            "maxAttempts",
        ),
        (
            NewOutboxRow {
                attempt: DEFAULT_MAX_ATTEMPTS,
                ..base()
            },
            "maxAttempts",
        ),
        (
            NewOutboxRow {
                dispatch_key: String::new(),
                ..base()
            },
            "dispatchKey",
        ),
        (
            NewOutboxRow {
                dispatch_key: long.clone(),
                ..base()
            },
            "dispatchKey",
        ),
        (
            NewOutboxRow {
                workflow_id: String::new(),
                ..base()
            },
            "workflowId",
        ),
        (
            NewOutboxRow {
                activity_type: String::new(),
                ..base()
            },
            "activityType",
        ),
        (
            NewOutboxRow {
                ordinal: u64::MAX,
                ..base()
            },
            "ordinal",
        ),
        (
            NewOutboxRow {
                run_id: Some(String::new()),
                ..base()
            },
            "runId",
        ),
        (
            NewOutboxRow {
                namespace: Some(String::new()),
                ..base()
            },
            "namespace",
        ),
        (
            NewOutboxRow {
                task_queue: Some(String::new()),
                ..base()
            },
            "taskQueue",
        ),
        (
            NewOutboxRow {
                node: Some(long.clone()),
                ..base()
            },
            "node",
        ),
    ];
    for (bad, name) in cases {
        let error = expect_code(
            store.insert_outbox(&[row("good", "wf", 0), bad]),
            "INVALID_INPUT",
        );
        let expected = format!("outbox[1].{name}");
        assert!(
            matches!(&error, Error::InvalidInput { field, .. } if *field == expected),
            "{error:?} should name {expected}"
        );
    }
    assert!(store
        .list_outbox(None, &PageRequest::first(10))
        .unwrap()
        .items
        .is_empty());
    assert_eq!(store.outbox_row_state("good").unwrap(), None);
}

fn claim_takes_due_rows_oldest_visible_after_first(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            row("c", "wf", 30),
            row("b", "wf", 10),
            row("a", "wf", 10),
            row("d", "wf", 20),
            row("e", "wf", 5),
            row("late", "wf", 100),
        ])
        .unwrap();
    // Fire order, not key order: the oldest fence first, keys only break ties.
    let first = store.claim_outbox(50, 3, &ClaimFilter::default()).unwrap();
    assert_eq!(keys(&first), ["e", "a", "b"]);
    for claimed in &first {
        assert_eq!(
            (claimed.status, claimed.claimed_at),
            (OutboxStatus::Claimed, Some(50))
        );
        assert_eq!(status(&store, &claimed.dispatch_key), OutboxStatus::Claimed);
    }
    assert_eq!(first[1].input, b"a");
    assert!(claim(&store, 50, 0).is_empty());
    assert_eq!(status(&store, "c"), OutboxStatus::Pending);
    assert_eq!(claim(&store, 50, 10), ["d", "c"]);
    // The visible-after fence: not a millisecond early, and exactly on time.
    assert!(claim(&store, 99, 10).is_empty());
    assert_eq!(status(&store, "late"), OutboxStatus::Pending);
    assert_eq!(claim(&store, 100, 10), ["late"]);
    assert_eq!(state(&store, "late").claimed_at, Some(100));
    // Claimed rows are never claimed again.
    assert!(claim(&store, Millis::MAX, 10).is_empty());
}

fn claim_leaves_excluded_workflows_alone(backend: &dyn Backend) {
    let store = backend.fresh().open();
    // Ids with quotes and SQL syntax prove the set is bound as a value.
    let tricky = "it's \"held\"') OR 1=1 --";
    store
        .insert_outbox(&[
            row("held:1", "held", 1),
            row("free:1", "free", 2),
            row("tricky:1", tricky, 3),
            row("free:2", "free", 4),
        ])
        .unwrap();
    assert_eq!(
        claim_with(&store, 10, 10, &excluding(&["held", tricky, "absent"])),
        ["free:1", "free:2"]
    );
    assert_eq!(status(&store, "held:1"), OutboxStatus::Pending);
    assert_eq!(
        claim_with(&store, 10, 10, &excluding(&["held"])),
        ["tricky:1"]
    );
    assert_eq!(claim_with(&store, 10, 10, &excluding(&[])), ["held:1"]);
}

fn claim_within_a_scope_takes_only_matching_rows(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            routed("r1", 1, [Some("a"), Some("x"), Some("n1")]),
            routed("r2", 2, [Some("a"), Some("y"), None]),
            routed("r3", 3, [Some("b"), Some("x"), Some("n1")]),
            routed("r4", 4, [None, None, None]),
            routed("r5", 5, [Some("a"), Some("x"), Some("n2")]),
            routed("r6", 6, [Some("ab"), Some("x"), Some("n1")]),
        ])
        .unwrap();
    let queue_x_of_a = within(scope(Some("a"), Some("x"), None));
    assert_eq!(claim_with(&store, 10, 10, &queue_x_of_a), ["r1", "r5"]);
    assert_eq!(
        claim_with(&store, 10, 10, &within(scope(None, None, Some("n1")))),
        ["r3", "r6"]
    );
    // Scope and exclusion together.
    let a_but_r2 = ClaimFilter {
        exclude_workflows: vec!["r2".into()],
        scope: Some(scope(Some("a"), None, None)),
    };
    assert!(claim_with(&store, 10, 10, &a_but_r2).is_empty());
    assert_eq!(status(&store, "r2"), OutboxStatus::Pending);
    assert!(claim_with(&store, 10, 10, &within(scope(Some("zzz"), None, None))).is_empty());
    // An all-`None` scope matches any route.
    assert_eq!(
        claim_with(&store, 10, 10, &within(ClaimScope::default())),
        ["r2", "r4"]
    );
}

fn claim_refuses_an_invalid_filter_and_claims_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store.insert_outbox(&[row("a", "wf", 0)]).unwrap();
    let bad_scope = within(scope(Some(""), None, None));
    let error = expect_code(store.claim_outbox(5, 10, &bad_scope), "INVALID_INPUT");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "filter.scope.namespace"),
        "{error:?}"
    );
    let long = "q".repeat(MAX_ID_BYTES + 1);
    let bad_queue = within(scope(None, Some(&long), None));
    expect_code(store.claim_outbox(5, 10, &bad_queue), "INVALID_INPUT");
    let bad_exclusion = excluding(&["other", ""]);
    let error = expect_code(store.claim_outbox(5, 10, &bad_exclusion), "INVALID_INPUT");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "filter.excludeWorkflows[1]"),
        "{error:?}"
    );
    assert_eq!(state(&store, "a"), live(OutboxStatus::Pending, 0, None, 0));
}

fn complete_settles_claimed_and_pending_rows(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(store.outbox_row_state("a").unwrap(), None);
    store
        .insert_outbox(&[row("a", "wf", 0), row("b", "wf", 1)])
        .unwrap();
    let claimed = store.claim_outbox(5, 1, &ClaimFilter::default()).unwrap();
    assert_eq!((keys(&claimed), claimed[0].claim_token), (vec!["a"], 1));
    store.complete_outbox("a", 1).unwrap();
    // A settled row keeps the time and the token of its last claim.
    assert_eq!(state(&store, "a"), live(OutboxStatus::Done, 0, Some(5), 1));
    // Completing a pending row is allowed with its current token (0: never claimed).
    let error = expect_code(store.complete_outbox("b", 1), "CONFLICT");
    assert_eq!(
        error,
        Error::Conflict {
            entity: "outbox row",
            id: "b".into(),
            expected: Some(1),
            actual: Some(0)
        }
    );
    assert_eq!(status(&store, "b"), OutboxStatus::Pending);
    store.complete_outbox("b", 0).unwrap();
    assert_eq!(
        (status(&store, "b"), state(&store, "b").claimed_at),
        (OutboxStatus::Done, None)
    );
    assert!(claim(&store, Millis::MAX, 10).is_empty());
}

fn settled_and_unknown_rows_refuse_every_transition(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            row("done", "a", 0),
            row("failed", "b", 0),
            row("cancelled", "c", 0),
        ])
        .unwrap();
    assert_eq!(claim(&store, 5, 3).len(), 3);
    complete(&store, "done");
    fail(&store, "failed");
    assert_eq!(store.cancel_workflow_outbox("c").unwrap(), ["cancelled"]);

    type Transition = fn(&Store, &str, u64) -> Result<()>;
    let transitions: [(&str, Transition); 4] = [
        ("complete", |s, k, t| s.complete_outbox(k, t)),
        ("completeBatch", |s, k, t| {
            s.complete_outbox_batch(&[OutboxClaim {
                dispatch_key: k.to_owned(),
                claim_token: t,
            }])
        }),
        ("retry", |s, k, t| s.retry_outbox(k, t, 1, 100).map(|_| ())),
        ("fail", |s, k, t| s.fail_outbox(k, t, "again")),
    ];
    for (name, transition) in transitions {
        for key in ["done", "failed", "cancelled"] {
            let before = state(&store, key);
            // The holder's own token: refused because the row is settled.
            let error = expect_code(transition(&store, key, before.claim_token), "CONFLICT");
            assert_eq!(
                error,
                Error::Conflict {
                    entity: "outbox row",
                    id: key.into(),
                    expected: None,
                    actual: None
                },
                "{name} of {key}"
            );
            assert!(error.to_string().contains(key), "{error}");
            assert_eq!(state(&store, key), before, "{name} changed {key}");
        }
        let error = expect_code(transition(&store, "nope", 0), "NOT_FOUND");
        assert_eq!(
            error,
            Error::NotFound {
                entity: "outbox row",
                id: "nope".into()
            },
            "{name}"
        );
        expect_code(transition(&store, "", 0), "INVALID_INPUT");
        expect_code(transition(&store, "done", u64::MAX), "INVALID_INPUT");
        assert_eq!(store.outbox_row_state("nope").unwrap(), None);
    }
}

fn complete_batch_is_all_or_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let rows: Vec<_> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|k| row(k, "wf", 0))
        .collect();
    store.insert_outbox(&rows).unwrap();
    assert_eq!(claim(&store, 5, 4), ["a", "b", "c", "d"]);
    // Each key with its current token, as its holder has it.
    let batch = |keys: &[&str]| -> Vec<OutboxClaim> {
        keys.iter()
            .map(|k| OutboxClaim {
                dispatch_key: k.to_string(),
                claim_token: token(&store, k),
            })
            .collect()
    };

    store.complete_outbox_batch(&batch(&["b", "a"])).unwrap();
    assert_eq!(status(&store, "a"), OutboxStatus::Done);
    assert_eq!(status(&store, "b"), OutboxStatus::Done);

    let error = expect_code(
        store.complete_outbox_batch(&batch(&["c", "missing"])),
        "NOT_FOUND",
    );
    assert!(
        matches!(&error, Error::NotFound { id, .. } if id == "missing"),
        "{error:?}"
    );
    assert_eq!(status(&store, "c"), OutboxStatus::Claimed);

    let error = expect_code(store.complete_outbox_batch(&batch(&["d", "a"])), "CONFLICT");
    assert!(
        matches!(&error, Error::Conflict { id, .. } if id == "a"),
        "{error:?}"
    );
    assert_eq!(status(&store, "d"), OutboxStatus::Claimed);

    let error = expect_code(
        store.complete_outbox_batch(&batch(&["c", "d", "c"])),
        "INVALID_INPUT",
    );
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "claims[2].dispatchKey"),
        "{error:?}"
    );
    expect_code(
        store.complete_outbox_batch(&batch(&["c", ""])),
        "INVALID_INPUT",
    );
    assert_eq!(status(&store, "c"), OutboxStatus::Claimed);
    // A stale token anywhere in the batch: nothing is completed.
    let mut stale = batch(&["c", "d"]);
    stale[1].claim_token += 1;
    let error = expect_code(store.complete_outbox_batch(&stale), "CONFLICT");
    assert_eq!(
        error,
        Error::Conflict {
            entity: "outbox row",
            id: "d".into(),
            expected: Some(stale[1].claim_token),
            actual: Some(stale[0].claim_token)
        }
    );
    assert_eq!(status(&store, "c"), OutboxStatus::Claimed);

    store.complete_outbox_batch(&[]).unwrap();
    // Claimed and pending rows together.
    store
        .complete_outbox_batch(&batch(&["c", "d", "e"]))
        .unwrap();
    let done = store
        .list_outbox(Some(OutboxStatus::Done), &PageRequest::first(10))
        .unwrap()
        .items;
    assert_eq!(keys(&done), ["a", "b", "c", "d", "e"]);
}

fn retry_returns_the_row_to_pending_behind_its_fence(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[row("a", "wf", 0), row("b", "wf", 500)])
        .unwrap();
    let claimed = store.claim_outbox(10, 1, &ClaimFilter::default()).unwrap();
    assert_eq!((claimed[0].attempt, claimed[0].claimed_at), (0, Some(10)));
    assert_eq!(
        store.retry_outbox("a", 1, 1, 100).unwrap(),
        OutboxStatus::Pending
    );
    // The token stays until the row is claimed again.
    assert_eq!(
        state(&store, "a"),
        OutboxRowState {
            attempt: 1,
            ..live(OutboxStatus::Pending, 100, None, 1)
        }
    );
    assert!(claim(&store, 99, 10).is_empty());
    let again = store
        .claim_outbox(100, 10, &ClaimFilter::default())
        .unwrap();
    assert_eq!(keys(&again), ["a"]);
    assert_eq!(
        (again[0].attempt, again[0].claimed_at, again[0].claim_token),
        (1, Some(100), 2)
    );
    // A pending row can be re-fenced too, earlier as well as later.
    store.retry_outbox("b", 0, 3, 50).unwrap();
    assert_eq!(
        (state(&store, "b").attempt, state(&store, "b").visible_after),
        (3, 50)
    );
    assert_eq!(claim(&store, 50, 10), ["b"]);
}

fn fail_dead_letters_the_row(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[row("a", "wf", 0), row("b", "wf", 0), row("c", "wf", 0)])
        .unwrap();
    assert_eq!(claim(&store, 5, 1), ["a"]);
    store.fail_outbox("a", 1, "card declined").unwrap();
    store.fail_outbox("b", 0, "").unwrap();
    assert_eq!(
        state(&store, "a"),
        OutboxRowState {
            dead_reason: Some("card declined".into()),
            ..live(OutboxStatus::Failed, 0, Some(5), 1)
        }
    );
    assert_eq!(state(&store, "b").dead_reason.as_deref(), Some(""));
    let long = "r".repeat(MAX_DOCUMENT_BYTES + 1);
    let error = expect_code(store.fail_outbox("c", 0, &long), "INVALID_INPUT");
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "reason"),
        "{error:?}"
    );
    let dead = store
        .list_outbox(Some(OutboxStatus::Failed), &PageRequest::first(10))
        .unwrap()
        .items;
    assert_eq!(keys(&dead), ["a", "b"]);
    assert_eq!(claim(&store, Millis::MAX, 10), ["c"]);
}

fn cancel_settles_every_live_row_of_the_workflow(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            row("wf:4", "wf", 0),
            row("wf:3", "wf", 0),
            row("wf:2", "wf", 0),
            row("wf:1", "wf", 900),
            row("other:1", "other", 0),
        ])
        .unwrap();
    assert_eq!(
        claim_with(&store, 5, 3, &excluding(&["other"])),
        ["wf:2", "wf:3", "wf:4"]
    );
    complete(&store, "wf:3");
    fail(&store, "wf:4");
    // wf:1 is pending (not yet visible), wf:2 claimed: both live, keys in order.
    assert_eq!(
        store.cancel_workflow_outbox("wf").unwrap(),
        ["wf:1", "wf:2"]
    );
    assert_eq!(status(&store, "wf:1"), OutboxStatus::Cancelled);
    assert_eq!(
        state(&store, "wf:2"),
        live(OutboxStatus::Cancelled, 0, Some(5), 1)
    );
    assert_eq!(status(&store, "wf:3"), OutboxStatus::Done);
    assert_eq!(status(&store, "wf:4"), OutboxStatus::Failed);
    assert_eq!(status(&store, "other:1"), OutboxStatus::Pending);
    assert!(store.cancel_workflow_outbox("wf").unwrap().is_empty());
    assert!(store.cancel_workflow_outbox("nobody").unwrap().is_empty());
    expect_code(store.cancel_workflow_outbox(""), "INVALID_INPUT");
    assert_eq!(claim(&store, Millis::MAX, 10), ["other:1"]);
}

fn rearm_returns_the_oldest_stale_claims_to_pending(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            row("z", "wf", 0),
            row("y", "wf", 1),
            row("x", "wf", 2),
            row("w", "wf", 3),
        ])
        .unwrap();
    assert_eq!(claim(&store, 10, 1), ["z"]);
    assert_eq!(claim(&store, 20, 1), ["y"]);
    assert_eq!(claim(&store, 30, 1), ["x"]);
    assert_eq!(claim(&store, 40, 1), ["w"]);
    assert!(store.rearm_stale_claims(35, 100, 0).unwrap().is_empty());
    // The limit takes the oldest claims first (not x, claimed later); the result is in key
    // order. Each re-arm counts an attempt.
    let first = store.rearm_stale_claims(35, 100, 2).unwrap();
    assert_eq!(keys(&first), ["y", "z"]);
    for rearmed in &first {
        assert_eq!(
            (
                rearmed.status,
                rearmed.visible_after,
                rearmed.claimed_at,
                rearmed.attempt
            ),
            (OutboxStatus::Pending, 100, None, 1)
        );
    }
    assert_eq!(
        state(&store, "z"),
        OutboxRowState {
            attempt: 1,
            ..live(OutboxStatus::Pending, 100, None, 1)
        }
    );
    // Claimed at exactly `older_than` is not stale yet.
    assert!(store.rearm_stale_claims(30, 200, 10).unwrap().is_empty());
    assert_eq!(keys(&store.rearm_stale_claims(31, 200, 10).unwrap()), ["x"]);
    assert_eq!(status(&store, "w"), OutboxStatus::Claimed);
    // Re-armed rows are claimable again once their new fence has passed.
    assert!(claim(&store, 99, 10).is_empty());
    assert_eq!(claim(&store, 100, 10), ["y", "z"]);
    assert_eq!(claim(&store, 200, 10), ["x"]);
}

fn stale_claims_are_listed_without_change(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[
            row("z", "wf", 0),
            row("y", "wf", 0),
            row("x", "wf", 5),
            row("w", "wf", 5),
            row("v", "wf", 5),
        ])
        .unwrap();
    assert_eq!(claim(&store, 10, 2), ["y", "z"]);
    assert_eq!(claim(&store, 20, 1), ["v"]);
    assert_eq!(claim(&store, 30, 1), ["w"]);
    complete(&store, "z");
    let stale = store
        .list_stale_claims(25, &PageRequest::first(10))
        .unwrap()
        .items;
    assert_eq!(keys(&stale), ["y", "v"]);
    assert_eq!(stale[0].claimed_at, Some(10));
    assert_eq!(
        keys(
            &store
                .list_stale_claims(31, &PageRequest::first(2))
                .unwrap()
                .items
        ),
        ["y", "v"]
    );
    assert_eq!(
        keys(
            &store
                .list_stale_claims(31, &PageRequest::first(10))
                .unwrap()
                .items
        ),
        ["y", "v", "w"]
    );
    assert!(store
        .list_stale_claims(10, &PageRequest::first(10))
        .unwrap()
        .items
        .is_empty());
    assert_eq!(
        store
            .list_stale_claims(25, &PageRequest::first(10))
            .unwrap()
            .items,
        stale
    );
    assert_eq!(status(&store, "y"), OutboxStatus::Claimed);
    assert_eq!(status(&store, "x"), OutboxStatus::Pending);
}

fn unsettled_workflows_are_those_with_live_rows(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert!(store
        .list_unsettled_workflows(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    store
        .insert_outbox(&[
            row("b:1", "b", 0),
            row("a:1", "a", 0),
            row("c:1", "c", 0),
            row("d:1", "d", 0),
            row("e:1", "e", 0),
            row("e:2", "e", 800),
        ])
        .unwrap();
    assert_eq!(claim_with(&store, 5, 10, &excluding(&["b", "e"])).len(), 3);
    complete(&store, "c:1");
    store.cancel_workflow_outbox("d").unwrap();
    fail(&store, "e:1");
    // a: claimed; b: pending; e: one failed and one pending not yet visible.
    assert_eq!(
        store
            .list_unsettled_workflows(&PageRequest::default())
            .unwrap()
            .items,
        ["a", "b", "e"]
    );
    complete(&store, "a:1");
    store.cancel_workflow_outbox("e").unwrap();
    assert_eq!(
        store
            .list_unsettled_workflows(&PageRequest::default())
            .unwrap()
            .items,
        ["b"]
    );
}

fn namespace_loads_count_several_namespaces_in_one_call(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let in_ns = |key: &str, namespace: Option<&str>, visible_after: Millis| NewOutboxRow {
        namespace: namespace.map(String::from),
        ..row(key, key, visible_after)
    };
    store
        .insert_outbox(&[
            in_ns("a1", Some("a"), 0),
            in_ns("a2", Some("a"), 0),
            in_ns("a3", Some("a"), 0),
            in_ns("a4", Some("a"), 0),
            in_ns("a5", Some("a"), 0),
            in_ns("a6", Some("a"), 999),
            in_ns("b1", Some("b"), 0),
            in_ns("ab1", Some("ab"), 0),
            in_ns("none1", None, 0),
        ])
        .unwrap();
    claim_with(&store, 5, 10, &excluding(&["a6", "a1"]));
    // a: a1 pending, a6 pending (not yet visible), a2 claimed, a3 done, a4 failed, a5 cancelled.
    complete(&store, "a3");
    fail(&store, "a4");
    store.cancel_workflow_outbox("a5").unwrap();
    let names = ["a", "b", "c", "a"].map(String::from);
    let loads = store.namespace_loads(&names).unwrap();
    let expected: BTreeMap<String, NamespaceLoad> = [("a", 3, 1), ("b", 1, 1), ("c", 0, 0)]
        .into_iter()
        .map(|(name, in_flight, claimed)| (name.to_owned(), NamespaceLoad { in_flight, claimed }))
        .collect();
    assert_eq!(loads, expected);
    assert!(store.namespace_loads(&[]).unwrap().is_empty());
    let error = expect_code(
        store.namespace_loads(&["a".into(), String::new()]),
        "INVALID_INPUT",
    );
    assert!(
        matches!(&error, Error::InvalidInput { field, .. } if field == "namespaces[1]"),
        "{error:?}"
    );
}

fn claimable_routes_ignore_rows_not_yet_visible_or_not_pending(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert!(store.claimable_routes(0).unwrap().is_empty());
    store
        .insert_outbox(&[
            routed("r1", 0, [Some("a"), Some("x"), Some("n1")]),
            routed("r2", 0, [Some("a"), Some("x"), Some("n1")]),
            routed("r3", 0, [Some("a"), Some("y"), None]),
            routed("r4", 100, [Some("b"), None, None]),
            routed("r5", 0, [None, None, None]),
            routed("r6", 0, [Some("c"), Some("x"), None]),
            routed("r7", 0, [Some("d"), None, None]),
        ])
        .unwrap();
    claim_with(&store, 5, 1, &within(scope(Some("c"), None, None)));
    fail(&store, "r7");
    let route_of = |[n, q, d]: [Option<&str>; 3]| scope(n, q, d);
    assert_eq!(
        store.claimable_routes(99).unwrap(),
        [
            route_of([None, None, None]),
            route_of([Some("a"), Some("x"), Some("n1")]),
            route_of([Some("a"), Some("y"), None]),
        ]
    );
    assert_eq!(
        store.claimable_routes(100).unwrap()[3],
        route_of([Some("b"), None, None])
    );
    assert_eq!(store.claimable_routes(100).unwrap().len(), 4);
}

fn list_outbox_filters_by_status_and_pages_by_key(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let rows: Vec<_> = ["k1", "k2", "k3", "k4", "k5"]
        .iter()
        .enumerate()
        .map(|(i, k)| row(k, "wf", i as Millis))
        .collect();
    store.insert_outbox(&rows).unwrap();
    assert_eq!(claim(&store, 10, 2), ["k1", "k2"]);
    complete(&store, "k1");
    let list = |status: Option<OutboxStatus>, page: PageRequest| {
        let page = store.list_outbox(status, &page).unwrap();
        let keys = page.items.into_iter().map(|r| r.dispatch_key);
        (keys.collect::<Vec<_>>(), page.next_cursor)
    };
    let keys = |status: Option<OutboxStatus>| list(status, PageRequest::first(10)).0;
    assert_eq!(keys(None), ["k1", "k2", "k3", "k4", "k5"]);
    assert_eq!(keys(Some(OutboxStatus::Pending)), ["k3", "k4", "k5"]);
    assert_eq!(keys(Some(OutboxStatus::Claimed)), ["k2"]);
    assert_eq!(keys(Some(OutboxStatus::Done)), ["k1"]);
    assert!(keys(Some(OutboxStatus::Cancelled)).is_empty());
    let (first, cursor) = list(None, PageRequest::first(2));
    assert_eq!(first, ["k1", "k2"]);
    let (second, cursor) = list(None, PageRequest::after(2, cursor.unwrap()));
    assert_eq!(second, ["k3", "k4"]);
    let (third, cursor) = list(None, PageRequest::after(2, cursor.unwrap()));
    assert_eq!((third, cursor), (vec!["k5".to_owned()], None));
    let (pending, cursor) = list(Some(OutboxStatus::Pending), PageRequest::first(1));
    assert_eq!(pending, ["k3"]);
    let next = PageRequest::after(1, cursor.unwrap());
    assert_eq!(list(Some(OutboxStatus::Pending), next).0, ["k4"]);
    expect_code(
        store.list_outbox(None, &PageRequest::first(0)),
        "INVALID_INPUT",
    );
}

fn outbox_survives_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store
        .insert_outbox(&[
            row("a", "wf", 0),
            NewOutboxRow {
                namespace: Some("ns".into()),
                ..row("b", "wf", 1)
            },
            row("c", "later", 500),
        ])
        .unwrap();
    assert_eq!(claim(&store, 10, 1), ["a"]);
    let before = store
        .list_outbox(None, &PageRequest::first(10))
        .unwrap()
        .items;
    after_reopen(location.as_ref(), store, |store| {
        assert_eq!(
            store
                .list_outbox(None, &PageRequest::first(10))
                .unwrap()
                .items,
            before
        );
        assert_eq!(
            keys(
                &store
                    .list_stale_claims(11, &PageRequest::first(10))
                    .unwrap()
                    .items
            ),
            ["a"]
        );
        assert_eq!(
            store
                .list_unsettled_workflows(&PageRequest::default())
                .unwrap()
                .items,
            ["later", "wf"]
        );
        assert_eq!(
            store.namespace_loads(&["ns".into()]).unwrap()["ns"],
            NamespaceLoad {
                in_flight: 1,
                claimed: 0
            }
        );
        // The token counter survives: a claim after reopening gets a new token.
        assert_eq!(claim(store, 20, 10), ["b"]);
        assert_eq!((token(store, "a"), token(store, "b")), (1, 2));
        store.complete_outbox("a", 1).unwrap();
        assert_eq!(
            store.claimable_routes(500).unwrap(),
            [ClaimScope::default()]
        );
        expect_code(store.complete_outbox("a", 1), "CONFLICT");
    });
}

fn a_stale_claim_token_settles_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .insert_outbox(&[row("a", "wf", 0), row("b", "wf", 0), row("c", "wf", 0)])
        .unwrap();
    // An empty claim hands out no token; one claim hands out one token for all its rows.
    assert!(claim(&store, 5, 0).is_empty());
    let first = store.claim_outbox(5, 2, &ClaimFilter::default()).unwrap();
    let tokens: Vec<u64> = first.iter().map(|r| r.claim_token).collect();
    assert_eq!((keys(&first), tokens), (vec!["a", "b"], vec![1, 1]));
    assert_eq!(claim(&store, 6, 1), ["c"]);
    assert_eq!(token(&store, "c"), 2);
    // Every claim goes stale and is re-armed; b and c are claimed again by someone else.
    assert_eq!(store.rearm_stale_claims(100, 0, 10).unwrap().len(), 3);
    assert_eq!(
        claim_with(&store, 200, 10, &excluding(&[])),
        ["a", "b", "c"]
    );
    store.retry_outbox("a", 3, 1, 0).unwrap();
    // a was handed back by its new holder and not claimed since: its last claim settles it.
    assert_eq!(token(&store, "a"), 3);
    let stale = |key: &str, given: u64| Error::Conflict {
        entity: "outbox row",
        id: key.into(),
        expected: Some(given),
        actual: Some(3),
    };
    // The first holder of b cannot settle the live claim of its second holder in any way.
    let before = state(&store, "b");
    assert_eq!(
        expect_code(store.complete_outbox("b", 1), "CONFLICT"),
        stale("b", 1)
    );
    assert_eq!(
        expect_code(store.retry_outbox("b", 1, 2, 0), "CONFLICT"),
        stale("b", 1)
    );
    let error = expect_code(store.fail_outbox("b", 1, "late"), "CONFLICT");
    assert_eq!(error, stale("b", 1));
    assert!(
        error.to_string().contains("expected revision 1, found 3"),
        "{error}"
    );
    expect_code(store.complete_outbox("b", 4), "CONFLICT");
    assert_eq!(state(&store, "b"), before);
    assert_eq!(
        expect_code(store.retry_outbox("c", 2, 2, 0), "CONFLICT"),
        stale("c", 2)
    );
    // The current holders settle their rows.
    store.complete_outbox("b", 3).unwrap();
    assert_eq!(
        store.retry_outbox("c", 3, 2, 0).unwrap(),
        OutboxStatus::Pending
    );
    store.complete_outbox("a", 3).unwrap();
    assert_eq!(status(&store, "a"), OutboxStatus::Done);
    // The rows listed carry their tokens.
    let listed = store
        .list_outbox(None, &PageRequest::first(10))
        .unwrap()
        .items;
    assert!(listed.iter().all(|r| r.claim_token == 3), "{listed:?}");
}

fn rearm_counts_attempts_and_dead_letters_at_the_maximum(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let poison = NewOutboxRow {
        max_attempts: Some(2),
        ..row("p", "wf", 0)
    };
    store.insert_outbox(&[poison, row("q", "wf", 0)]).unwrap();
    assert_eq!(claim(&store, 10, 10), ["p", "q"]);
    let rearmed = store.rearm_stale_claims(11, 20, 10).unwrap();
    let attempts: Vec<_> = rearmed.iter().map(|r| (r.status, r.attempt)).collect();
    assert_eq!(attempts, [(OutboxStatus::Pending, 1); 2]);
    assert_eq!(claim(&store, 20, 10), ["p", "q"]);
    // p's second stale claim reaches its maximum: a dead letter, not pending again.
    let rearmed = store.rearm_stale_claims(21, 30, 10).unwrap();
    assert_eq!(keys(&rearmed), ["p", "q"]);
    let reason = "stale claim re-armed to attempt 2 reaches the maximum of 2";
    assert_eq!(
        (
            rearmed[0].status,
            rearmed[0].attempt,
            rearmed[0].dead_reason.as_deref()
        ),
        (OutboxStatus::Failed, 2, Some(reason))
    );
    // A dead letter keeps its fence and the time and token of its last claim.
    assert_eq!(
        state(&store, "p"),
        OutboxRowState {
            status: OutboxStatus::Failed,
            attempt: 2,
            visible_after: 20,
            claimed_at: Some(20),
            claim_token: 2,
            max_attempts: 2,
            dead_reason: Some(reason.into()),
        }
    );
    assert_eq!(
        (rearmed[1].status, rearmed[1].attempt),
        (OutboxStatus::Pending, 2)
    );
    // Never delivered again, not even by its last holder.
    assert_eq!(claim(&store, 40, 10), ["q"]);
    let error = expect_code(store.complete_outbox("p", 2), "CONFLICT");
    assert!(
        matches!(
            error,
            Error::Conflict {
                expected: None,
                actual: None,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        keys(
            &store
                .list_outbox(Some(OutboxStatus::Failed), &PageRequest::first(10))
                .unwrap()
                .items
        ),
        ["p"]
    );
    // q has the default maximum: it dies on the re-arm that brings it to attempt 10.
    let mut now = 100;
    for attempt in 3..DEFAULT_MAX_ATTEMPTS {
        let rearmed = store.rearm_stale_claims(now, now, 10).unwrap();
        assert_eq!(
            (rearmed[0].status, rearmed[0].attempt),
            (OutboxStatus::Pending, attempt)
        );
        assert_eq!(claim(&store, now + 1, 10), ["q"]);
        now += 10;
    }
    let last = store.rearm_stale_claims(now, now, 10).unwrap();
    assert_eq!(
        (last[0].status, last[0].attempt),
        (OutboxStatus::Failed, DEFAULT_MAX_ATTEMPTS)
    );
    assert!(store
        .list_unsettled_workflows(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    assert!(claim(&store, Millis::MAX, 10).is_empty());
}

fn a_retry_to_the_maximum_dead_letters_the_row(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let row = NewOutboxRow {
        max_attempts: Some(3),
        ..row("r", "wf", 0)
    };
    store.insert_outbox(&[row]).unwrap();
    assert_eq!(claim(&store, 10, 1), ["r"]);
    assert_eq!(
        store.retry_outbox("r", 1, 2, 50).unwrap(),
        OutboxStatus::Pending
    );
    assert_eq!(claim(&store, 50, 1), ["r"]);
    assert_eq!(
        store.retry_outbox("r", 2, 3, 90).unwrap(),
        OutboxStatus::Failed
    );
    assert_eq!(
        state(&store, "r"),
        OutboxRowState {
            status: OutboxStatus::Failed,
            attempt: 3,
            visible_after: 50,
            claimed_at: Some(50),
            claim_token: 2,
            max_attempts: 3,
            dead_reason: Some("retry to attempt 3 reaches the maximum of 3".into()),
        }
    );
    assert!(claim(&store, Millis::MAX, 10).is_empty());
    expect_code(store.retry_outbox("r", 2, 1, 0), "CONFLICT");
}
