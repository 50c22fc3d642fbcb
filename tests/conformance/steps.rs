//! Steps: operations of several areas in one transaction, the failing operation named by
//! index with nothing written, and request ids that make a step exactly-once.

use runstore::*;
use serde_json::json;

use super::journal::{custom, event, started};
use super::outbox::row;
use super::{after_reopen, expect_code, Backend, Case, Store};

pub const CASES: &[Case] = cases![
    a_step_across_areas_commits_every_operation_and_reports_each_outcome,
    a_failing_operation_fails_the_step_by_index_and_writes_nothing,
    a_failure_in_the_last_operation_undoes_the_earlier_ones,
    a_request_id_applies_the_step_once_and_replays_its_outcome,
    a_request_id_reused_for_another_step_is_a_conflict,
    a_failed_step_records_no_request_id,
    empty_oversized_and_badly_named_steps_are_refused,
    old_request_ids_expire,
    steps_and_their_request_ids_survive_reopen,
    a_step_crosses_as_tagged_operations,
    claims_namespaces_packages_and_purges_are_operations_too,
    a_purge_in_a_step_is_undone_with_the_step,
    a_failing_operation_names_the_field_by_its_path_in_the_operation,
];

fn checkpoint(revision: u64) -> Checkpoint {
    Checkpoint {
        checkpoint_id: "wf-cp".into(),
        run_id: Some("r1".into()),
        revision,
        state: json!({"step": revision}),
        updated_at: 10 + revision as i64,
    }
}

fn effect() -> EffectRecord {
    EffectRecord {
        effect_id: "charge-1".into(),
        capability_id: "payments".into(),
        idempotency_key: Some("order-1".into()),
        revision: 0,
        request: json!({"amount": 5}),
        status: EffectStatus::Started,
        updated_at: 11,
    }
}

fn visibility() -> VisibilityRecord {
    VisibilityRecord {
        workflow_id: "wf".into(),
        run_id: "r1".into(),
        workflow_type: "order".into(),
        status: "running".into(),
        start_time: 1,
        close_time: None,
        failed_step: None,
        failure_reason: None,
        search_attributes: json!({"customer": "c1"}),
        head: Some(2),
    }
}

/// Claims the due rows and returns the claim token of `dispatch_key`.
fn claim(store: &Store, dispatch_key: &str) -> u64 {
    let rows = store.claim_outbox(10, 10, &ClaimFilter::default()).unwrap();
    let row = rows.iter().find(|row| row.dispatch_key == dispatch_key);
    row.expect("the row was claimed").claim_token
}

fn append(workflow_id: &str, events: Vec<Event>, expected_seq: u64) -> Operation {
    Operation::Append {
        workflow_id: workflow_id.into(),
        events,
        expected_seq,
        outbox: Vec::new(),
    }
}

/// An engine's first step of workflow `wf`: events, an activity, a timer, a checkpoint, an
/// effect and the visibility record.
fn first_step() -> Step {
    Step::new()
        .with(Operation::Append {
            workflow_id: "wf".into(),
            events: vec![started("order", "r1", 1), custom("charge-scheduled", 2)],
            expected_seq: 0,
            outbox: vec![row("wf/charge", "wf", 0)],
        })
        .with(Operation::InsertOutbox {
            rows: vec![row("wf/email", "wf", 0), row("wf/charge", "wf", 0)],
        })
        .with(Operation::ScheduleTimer {
            workflow_id: "wf".into(),
            timer_id: "reminder".into(),
            fire_at: 500,
        })
        .with(Operation::CompareAndSwapCheckpoint {
            checkpoint: checkpoint(0),
            expected_revision: None,
        })
        .with(Operation::CompareAndSwapEffect {
            record: effect(),
            expected_revision: None,
        })
        .with(Operation::UpsertVisibility {
            record: visibility(),
        })
}

/// Asserts that nothing of [`first_step`] is stored.
fn assert_nothing_of_first_step(store: &Store) {
    assert_eq!(store.head("wf").unwrap(), 0);
    assert_eq!(store.outbox_row_state("wf/charge").unwrap(), None);
    assert_eq!(store.outbox_row_state("wf/email").unwrap(), None);
    assert!(store
        .list_timers(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    expect_code(store.load_checkpoint("wf-cp"), "NOT_FOUND");
    assert_eq!(store.load_effect("charge-1").unwrap(), None);
    assert_eq!(store.get_visibility("wf").unwrap(), None);
}

fn a_step_across_areas_commits_every_operation_and_reports_each_outcome(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let outcome = store.commit(&first_step()).unwrap();
    assert!(!outcome.replayed);
    assert_eq!(
        outcome.outcomes,
        vec![
            OperationOutcome::Append { head: 2 },
            // wf/charge came with the append; only wf/email is new.
            OperationOutcome::InsertOutbox { inserted: 1 },
            OperationOutcome::ScheduleTimer {},
            OperationOutcome::CompareAndSwapCheckpoint { revision: 0 },
            OperationOutcome::CompareAndSwapEffect { revision: 0 },
            OperationOutcome::UpsertVisibility {},
        ]
    );
    assert_eq!(store.head("wf").unwrap(), 2);
    assert!(store.outbox_row_state("wf/email").unwrap().is_some());
    assert_eq!(
        store
            .list_timers(&PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.load_checkpoint("wf-cp").unwrap(), checkpoint(0));
    assert_eq!(store.load_effect("charge-1").unwrap(), Some(effect()));
    assert_eq!(store.get_visibility("wf").unwrap(), Some(visibility()));

    // The next step settles the activity, swaps the checkpoint and stores the agent's side.
    let claim_token = claim(&store, "wf/charge");
    let next = Step::new()
        .with(append("wf", vec![custom("charged", 3)], 2))
        .with(Operation::CompleteOutbox {
            dispatch_key: "wf/charge".into(),
            claim_token,
        })
        .with(Operation::CancelTimer {
            workflow_id: "wf".into(),
            timer_id: "reminder".into(),
        })
        .with(Operation::CompareAndSwapCheckpoint {
            checkpoint: checkpoint(1),
            expected_revision: Some(0),
        })
        .with(Operation::RecordRunEvent {
            event: RunEvent {
                event_id: "e1".into(),
                run_id: "r1".into(),
                sequence: 0,
                recorded_at: 3,
                data: json!({"tool": "charge"}),
            },
        })
        .with(Operation::SaveConversation {
            state: ConversationState {
                conversation_id: "c1".into(),
                revision: 0,
                format_version: 1,
                state: vec![1, 2, 3],
                updated_at: 3,
            },
            expected_revision: None,
        })
        .with(Operation::PutArtifact {
            artifact: NewArtifact {
                scope: "r1".into(),
                media_type: "text/plain".into(),
                name: Some("receipt.txt".into()),
                bytes: b"paid".to_vec(),
                expires_at: None,
                idempotency_key: None,
            },
            now: 3,
        });
    let outcome = store.commit(&next).unwrap();
    assert_eq!(outcome.outcomes[0], OperationOutcome::Append { head: 3 });
    assert_eq!(
        outcome.outcomes[2],
        OperationOutcome::CancelTimer { removed: true }
    );
    assert_eq!(
        outcome.outcomes[3],
        OperationOutcome::CompareAndSwapCheckpoint { revision: 1 }
    );
    let OperationOutcome::PutArtifact { artifact } = &outcome.outcomes[6] else {
        panic!("unexpected outcome {:?}", outcome.outcomes[6]);
    };
    assert_eq!(artifact.size_bytes, 4);
    assert_eq!(
        store.outbox_row_state("wf/charge").unwrap().unwrap().status,
        OutboxStatus::Done
    );
    assert_eq!(
        store
            .read_run_events("r1", &PageRequest::default())
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(store.load_conversation("c1").unwrap().unwrap().revision, 0);
    assert_eq!(
        store
            .get_artifact("r1", &artifact.artifact_id)
            .unwrap()
            .bytes,
        b"paid"
    );
}

fn a_failing_operation_fails_the_step_by_index_and_writes_nothing(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let step = first_step().with(append("other", vec![custom("x", 1)], 4));
    let error = expect_code(store.commit(&step), "SEQUENCE_CONFLICT");
    let Error::Operation { index, error } = error else {
        panic!("expected the failing operation's index, got {error:?}");
    };
    assert_eq!(index, 6);
    assert_eq!(
        *error,
        Error::SequenceConflict {
            workflow_id: "other".into(),
            expected: 4,
            actual: 0
        }
    );
    assert_nothing_of_first_step(&store);

    // Invalid input inside a step is named by index too.
    let step = first_step().with(Operation::ScheduleTimer {
        workflow_id: String::new(),
        timer_id: "t".into(),
        fire_at: 1,
    });
    let error = expect_code(store.commit(&step), "INVALID_INPUT");
    assert!(
        matches!(error, Error::Operation { index: 6, .. }),
        "{error:?}"
    );
    assert_nothing_of_first_step(&store);
}

fn a_failure_in_the_last_operation_undoes_the_earlier_ones(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    store.commit(&first_step()).unwrap();
    let claim_token = claim(&store, "wf/charge");
    // The checkpoint swap at the end expects a stale revision.
    let step = Step::new()
        .with(append("wf", vec![custom("charged", 3)], 2))
        .with(Operation::CompleteOutbox {
            dispatch_key: "wf/charge".into(),
            claim_token,
        })
        .with(Operation::CompareAndSwapCheckpoint {
            checkpoint: checkpoint(5),
            expected_revision: Some(4),
        });
    let error = expect_code(store.commit(&step), "CONFLICT");
    assert!(
        matches!(error, Error::Operation { index: 2, .. }),
        "{error:?}"
    );
    after_reopen(&*location, store, |store| {
        assert_eq!(store.head("wf").unwrap(), 2);
        assert_eq!(
            store.outbox_row_state("wf/charge").unwrap().unwrap().status,
            OutboxStatus::Claimed
        );
        assert_eq!(store.load_checkpoint("wf-cp").unwrap().revision, 0);
    });
}

fn a_request_id_applies_the_step_once_and_replays_its_outcome(backend: &dyn Backend) {
    let store = backend.fresh().open();
    assert_eq!(
        store.request_outcome("req-1").unwrap(),
        RequestOutcome::NotCommitted {
            request_id: "req-1".into()
        }
    );
    let step = first_step().request_id("req-1");
    let first = store.commit(&step).unwrap();
    let again = store.commit(&step).unwrap();
    assert!(again.replayed);
    assert_eq!(again.outcomes, first.outcomes);
    // Applied once: the journal did not move, no second row, timer or revision.
    assert_eq!(store.head("wf").unwrap(), 2);
    assert_eq!(store.load_checkpoint("wf-cp").unwrap().revision, 0);
    let record = store.request_outcome("req-1").unwrap().committed().unwrap();
    assert_eq!(record.request_id, "req-1");
    assert_eq!(record.outcomes, first.outcomes);
    assert!(record.committed_at > 1_600_000_000_000, "{record:?}");
    // Another id is another request.
    let next = Step::new()
        .request_id("req-2")
        .with(append("wf", vec![custom("more", 4)], 2));
    assert_eq!(
        store.commit(&next).unwrap().outcomes,
        vec![OperationOutcome::Append { head: 3 }]
    );
}

fn a_request_id_reused_for_another_step_is_a_conflict(backend: &dyn Backend) {
    let store = backend.fresh().open();
    store
        .commit(
            &Step::new()
                .request_id("req")
                .with(append("a", vec![custom("x", 1)], 0)),
        )
        .unwrap();
    let other = Step::new()
        .request_id("req")
        .with(append("b", vec![custom("x", 1)], 0));
    let error = expect_code(store.commit(&other), "CONFLICT");
    assert!(
        matches!(&error, Error::Conflict { entity: "request", id, .. } if id == "req"),
        "{error:?}"
    );
    assert_eq!(store.head("b").unwrap(), 0);
}

fn a_failed_step_records_no_request_id(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let failing = Step::new()
        .request_id("req")
        .with(append("wf", vec![custom("x", 1)], 9));
    expect_code(store.commit(&failing), "SEQUENCE_CONFLICT");
    assert_eq!(
        store.request_outcome("req").unwrap(),
        RequestOutcome::NotCommitted {
            request_id: "req".into()
        }
    );
    // The id is free: the corrected step goes through under it.
    let fixed = Step::new()
        .request_id("req")
        .with(append("wf", vec![custom("x", 1)], 0));
    assert!(!store.commit(&fixed).unwrap().replayed);
    assert_eq!(store.head("wf").unwrap(), 1);
}

fn empty_oversized_and_badly_named_steps_are_refused(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let error = expect_code(store.commit(&Step::new()), "INVALID_INPUT");
    assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "operations"));
    let many = (0..=MAX_STEP_OPERATIONS).fold(Step::new(), |step, i| {
        step.with(Operation::ScheduleTimer {
            workflow_id: "wf".into(),
            timer_id: format!("t{i}"),
            fire_at: 1,
        })
    });
    expect_code(store.commit(&many), "INVALID_INPUT");
    assert!(store
        .list_timers(&PageRequest::default())
        .unwrap()
        .items
        .is_empty());
    for bad in [String::new(), "r".repeat(MAX_ID_BYTES + 1)] {
        let step = Step::new()
            .request_id(bad.clone())
            .with(append("wf", vec![custom("x", 1)], 0));
        let error = expect_code(store.commit(&step), "INVALID_INPUT");
        assert!(matches!(&error, Error::InvalidInput { field, .. } if field == "requestId"));
        expect_code(store.request_outcome(&bad), "INVALID_INPUT");
    }
    assert_eq!(store.head("wf").unwrap(), 0);
}

fn old_request_ids_expire(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let step = |id: &str, seq: u64| {
        Step::new()
            .request_id(id)
            .with(append("wf", vec![custom("x", 1)], seq))
    };
    store.commit(&step("old", 0)).unwrap();
    // Age the record past the retention period; the next recorded request drops it.
    store
        .raw_execute(&format!(
            "UPDATE requests SET committed_at = committed_at - {}",
            REQUEST_RETENTION_MS + 1
        ))
        .unwrap();
    let old = store.request_outcome("old").unwrap().committed().unwrap();
    store.commit(&step("new", 1)).unwrap();
    // Forgotten, and known to be: never answered as a request that did not commit.
    match store.request_outcome("old").unwrap() {
        RequestOutcome::Unknown {
            forgotten_through, ..
        } => assert_eq!(forgotten_through, old.committed_at),
        other => panic!("{other:?}"),
    }
    match store.request_outcome("never-sent").unwrap() {
        RequestOutcome::Unknown {
            forgotten_through, ..
        } => assert_eq!(forgotten_through, old.committed_at),
        other => panic!("{other:?}"),
    }
    assert!(store.request_outcome("new").unwrap().committed().is_some());
}

fn steps_and_their_request_ids_survive_reopen(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let step = first_step().request_id("req-1");
    let outcome = store.commit(&step).unwrap();
    after_reopen(&*location, store, |store| {
        assert_eq!(store.head("wf").unwrap(), 2);
        let replay = store.commit(&step).unwrap();
        assert!(replay.replayed);
        assert_eq!(replay.outcomes, outcome.outcomes);
    });
}

fn a_step_crosses_as_tagged_operations(_backend: &dyn Backend) {
    let step = Step::new().request_id("r").with(Operation::ScheduleTimer {
        workflow_id: "wf".into(),
        timer_id: "t".into(),
        fire_at: 5,
    });
    let wire = json!({
        "requestId": "r",
        "operations": [{"op": "scheduleTimer", "workflowId": "wf", "timerId": "t", "fireAt": 5}]
    });
    assert_eq!(serde_json::to_value(&step).unwrap(), wire);
    assert_eq!(serde_json::from_value::<Step>(wire).unwrap(), step);
    let unknown = json!({"operations": [{"op": "dropTable", "table": "events"}]});
    assert!(serde_json::from_value::<Step>(unknown).is_err());
    let outcome = OperationOutcome::Append { head: 3 };
    assert_eq!(
        serde_json::to_value(outcome).unwrap(),
        json!({"op": "append", "head": 3})
    );
}

fn claims_namespaces_packages_and_purges_are_operations_too(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let package = PackageRecord {
        workflow_type: "order".into(),
        content_hash: "ab".repeat(32),
        archive: vec![1, 2, 3],
        deployed_at: 5,
    };
    let first = Step::new()
        .with(Operation::InsertOutbox {
            rows: vec![row("a", "wf", 0), row("b", "wf", 0)],
        })
        .with(Operation::ClaimOutbox {
            now: 10,
            limit: 10,
            filter: ClaimFilter::default(),
        })
        .with(Operation::RegisterNamespace {
            name: "shop".into(),
            origin: NamespaceOrigin::Explicit,
            now: 5,
        })
        .with(Operation::PutPackage {
            record: package.clone(),
            member_types: Some(vec!["order".into(), "refund".into()]),
        });
    let outcome = store.commit(&first).unwrap();
    let OperationOutcome::ClaimOutbox { rows } = &outcome.outcomes[1] else {
        panic!("unexpected outcome {:?}", outcome.outcomes[1]);
    };
    assert_eq!(rows.len(), 2);
    assert_eq!(
        outcome.outcomes[2],
        OperationOutcome::RegisterNamespace {
            outcome: RegisterOutcome::Created
        }
    );
    assert_eq!(
        store.get_package_route("refund").unwrap(),
        Some(package.content_hash.clone())
    );

    let claims: Vec<OutboxClaim> = rows
        .iter()
        .filter(|row| row.dispatch_key == "a")
        .map(|row| OutboxClaim {
            dispatch_key: row.dispatch_key.clone(),
            claim_token: row.claim_token,
        })
        .collect();
    let second = Step::new()
        .with(Operation::CompleteOutboxBatch { claims })
        .with(Operation::RearmStaleClaims {
            older_than: 11,
            visible_after: 20,
            limit: 10,
        })
        .with(Operation::SetNamespacePlacement {
            name: "shop".into(),
            placement: json!({"node": "n1"}),
        })
        .with(Operation::DeprecateNamespace {
            name: "shop".into(),
        })
        .with(Operation::PurgeExpiredArtifacts { now: 100 })
        .with(Operation::DeletePackage {
            workflow_type: "order".into(),
            content_hash: package.content_hash.clone(),
        });
    let outcome = store.commit(&second).unwrap();
    let OperationOutcome::RearmStaleClaims { rows } = &outcome.outcomes[1] else {
        panic!("unexpected outcome {:?}", outcome.outcomes[1]);
    };
    let rearmed: Vec<&str> = rows.iter().map(|row| row.dispatch_key.as_str()).collect();
    assert_eq!(rearmed, ["b"]);
    assert_eq!(
        outcome.outcomes[3],
        OperationOutcome::DeprecateNamespace { deprecated: true }
    );
    assert_eq!(
        outcome.outcomes[4],
        OperationOutcome::PurgeExpiredArtifacts { purged: 0 }
    );
    let done = store.outbox_row_state("a").unwrap().unwrap();
    assert_eq!(done.status, OutboxStatus::Done);
    let namespace = store.get_namespace("shop").unwrap().unwrap();
    assert_eq!(namespace.placement, Some(json!({"node": "n1"})));
    assert_eq!(
        store.get_package("order", &package.content_hash).unwrap(),
        None
    );
}

fn a_purge_in_a_step_is_undone_with_the_step(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let done = event(EventKind::Completed, 2);
    store
        .append("old", &[started("order", "r1", 1), done], 0)
        .unwrap();
    let purge = Operation::PurgeWorkflows {
        closed_before: 100,
        limit: 10,
    };
    // The append after the purge conflicts: the purge is rolled back with it.
    let failing = Step::new()
        .with(purge.clone())
        .with(append("new", vec![custom("x", 3)], 5));
    expect_code(store.commit(&failing), "SEQUENCE_CONFLICT");
    assert_eq!(store.head("old").unwrap(), 2);

    let step = Step::new()
        .with(purge)
        .with(append("new", vec![custom("x", 3)], 0));
    let outcome = store.commit(&step).unwrap();
    let OperationOutcome::PurgeWorkflows { counts } = &outcome.outcomes[0] else {
        panic!("unexpected outcome {:?}", outcome.outcomes[0]);
    };
    assert_eq!((counts.workflows, counts.events), (1, 2));
    assert_eq!(store.head("old").unwrap(), 0);
    assert_eq!(store.head("new").unwrap(), 1);
}

/// The operation's field `field` of the error of operation `index`, which must be INVALID_INPUT.
#[track_caller]
fn invalid_field(result: Result<StepOutcome>, index: usize) -> String {
    match expect_code(result, "INVALID_INPUT") {
        Error::Operation { index: at, error } => {
            assert_eq!(at, index);
            match *error {
                Error::InvalidInput { field, .. } => field,
                other => panic!("{other}"),
            }
        }
        other => panic!("not an operation's error: {other}"),
    }
}

fn a_failing_operation_names_the_field_by_its_path_in_the_operation(backend: &dyn Backend) {
    let store = backend.fresh().open();
    let one = |operation: Operation| {
        Step::new()
            .with(append("wf", vec![custom("x", 1)], 0))
            .with(operation)
    };
    let mut bad_row = row("k", "wf", 0);
    bad_row.dispatch_key.clear();
    let rows = Operation::InsertOutbox {
        rows: vec![row("k0", "wf", 0), bad_row],
    };
    assert_eq!(
        invalid_field(store.commit(&one(rows)), 1),
        "rows[1].dispatchKey"
    );
    let mut bad_checkpoint = checkpoint(0);
    bad_checkpoint.checkpoint_id.clear();
    let cas = Operation::CompareAndSwapCheckpoint {
        checkpoint: bad_checkpoint,
        expected_revision: None,
    };
    assert_eq!(
        invalid_field(store.commit(&one(cas)), 1),
        "checkpoint.checkpointId"
    );
    let artifact = Operation::PutArtifact {
        artifact: NewArtifact {
            scope: String::new(),
            media_type: "text/plain".into(),
            name: None,
            bytes: b"x".to_vec(),
            expires_at: None,
            idempotency_key: None,
        },
        now: 1,
    };
    assert_eq!(
        invalid_field(store.commit(&one(artifact)), 1),
        "artifact.scope"
    );
    // The other fields of an operation keep their names.
    let timer = Operation::ScheduleTimer {
        workflow_id: String::new(),
        timer_id: "t".into(),
        fire_at: 1,
    };
    assert_eq!(invalid_field(store.commit(&one(timer)), 1), "workflowId");
    assert_eq!(store.head("wf").unwrap(), 0, "a refused step wrote nothing");
}
