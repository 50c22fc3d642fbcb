//! Every path checks identifiers, hashes and names as the write paths do: a read, a lookup or
//! a delete refuses an empty or overlong id, or a malformed hash, with INVALID_INPUT naming
//! the argument, rather than answering "not found", "false" or 0.

use runstore::*;

use super::{expect_code, Backend, Case};

pub const CASES: &[Case] = cases![
    empty_and_overlong_ids_are_refused_on_every_path,
    malformed_hashes_are_refused_on_every_package_path,
    a_refused_delete_deletes_nothing,
    a_query_checks_its_workflow_type_as_a_visibility_filter_does,
];

/// Asserts INVALID_INPUT naming `field`.
#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T>, field: &str) {
    match expect_code(result, "INVALID_INPUT") {
        Error::InvalidInput { field: named, .. } => assert_eq!(named, field),
        other => panic!("{other}"),
    }
}

fn empty_and_overlong_ids_are_refused_on_every_path(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let long = "i".repeat(MAX_ID_BYTES + 1);
    for bad in ["", long.as_str()] {
        refused(store.head(bad), "workflowId");
        refused(
            store.read_history(bad, &PageRequest::default()),
            "workflowId",
        );
        refused(
            store.read_history_from(bad, 1, &PageRequest::default()),
            "workflowId",
        );
        refused(store.workflow_summary(bad), "workflowId");
        refused(store.read_run_chain(bad), "workflowId");
        refused(store.get_visibility(bad), "workflowId");
        refused(store.outbox_row_state(bad), "dispatchKey");
        refused(store.get_namespace(bad), "name");
        refused(store.deprecate_namespace(bad), "name");
        refused(
            store.set_namespace_placement(bad, &serde_json::json!({})),
            "name",
        );
        refused(store.get_package_route(bad), "workflowType");
        refused(store.load_checkpoint(bad), "checkpointId");
        refused(
            store.list_run_checkpoints(bad, &PageRequest::default()),
            "runId",
        );
        refused(store.load_effect(bad), "effectId");
        refused(store.find_effect(bad, "k"), "capabilityId");
        refused(store.find_effect("c", bad), "idempotencyKey");
        refused(store.read_run_events(bad, &PageRequest::default()), "runId");
        refused(store.load_conversation(bad), "conversationId");
        refused(store.list_artifacts(bad, &PageRequest::default()), "scope");
        refused(store.get_artifact(bad, "a"), "scope");
        refused(store.get_artifact("s", bad), "artifactId");
        refused(store.delete_artifact(bad, "a"), "scope");
        refused(store.delete_artifact("s", bad), "artifactId");
    }
}

fn malformed_hashes_are_refused_on_every_package_path(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    for bad in ["NOT-HEX", "0xdeadbeef", "", "abc"] {
        refused(store.get_package("order", bad), "contentHash");
        refused(store.delete_package("order", bad), "contentHash");
        refused(store.set_package_route("order", bad), "contentHash");
    }
    refused(store.get_package("", "abcdef0123"), "workflowType");
    refused(store.delete_package("", "abcdef0123"), "workflowType");
}

fn a_refused_delete_deletes_nothing(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let artifact = NewArtifact {
        scope: "s".into(),
        media_type: "text/plain".into(),
        name: None,
        bytes: b"kept".to_vec(),
        expires_at: None,
        idempotency_key: None,
    };
    let meta = store.put_artifact(&artifact, 1).unwrap();
    refused(store.delete_artifact("", ""), "scope");
    refused(store.delete_artifact("s", ""), "artifactId");
    assert_eq!(
        store.get_artifact("s", &meta.artifact_id).unwrap().bytes,
        b"kept"
    );
    let message = expect_code(store.head(&"w".repeat(2_000_000)), "INVALID_INPUT").to_string();
    assert!(message.len() < 200, "{message}");
}

fn a_query_checks_its_workflow_type_as_a_visibility_filter_does(backend: &dyn Backend) {
    let location = backend.fresh();
    let store = location.open();
    let page = PageRequest::default();
    for bad in [String::new(), "t".repeat(MAX_ID_BYTES + 1)] {
        let query = WorkflowQuery {
            workflow_type: Some(bad.clone()),
            ..WorkflowQuery::default()
        };
        refused(store.query_workflows(&query, &page), "query.workflowType");
        let filter = VisibilityFilter {
            workflow_type: Some(bad),
            ..VisibilityFilter::default()
        };
        refused(
            store.list_visibility(&filter, 10, None),
            "filter.workflowType",
        );
    }
    let longest = WorkflowQuery {
        workflow_type: Some("t".repeat(MAX_ID_BYTES)),
        ..WorkflowQuery::default()
    };
    assert!(store
        .query_workflows(&longest, &page)
        .unwrap()
        .items
        .is_empty());
}
