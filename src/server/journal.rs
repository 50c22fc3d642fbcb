//! Journal sync: pushes of journal segments under the expected head, and pulls of the
//! namespace's changes and of one workflow's events.
//!
//! A push is one step of the store under its request id: the segment's append, and an entry
//! in the namespace's change feed ([`crate::SyncFeed`]) saying which workflow went from which
//! head to which. Both commit or neither, so a pull never misses a segment, and a re-sent push
//! is answered from the request log instead of applied again. Every answer is bounded by bytes
//! (the server's `max_answer_bytes`) as well as by count.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::request::query;
use super::scope::Scope;
use super::shared_reads::{ReadAnswer, ReadKey};
use super::{Shared, StoreAccess, MAX_WAIT};
use crate::backend::leases::check_holder;
use crate::error::{Error, Result};
use crate::{
    request_fingerprint, Event, EventJournal, EventsPage, FeedEntry, NewOutboxRow, Operation,
    OperationOutcome, PageBound, RequestKey, StepStore, StoredEvent, SyncFeed,
};

/// Most changes or events one pull answers with.
pub const MAX_PULL: u32 = 1000;

/// A journal segment to append under the expected head.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushRequest {
    pub request_id: String,
    pub workflow_id: String,
    pub expected_head: u64,
    pub events: Vec<Event>,
    /// Rows for the namespace's outbox, inserted with the events (see
    /// [`crate::EventJournal::append_with_outbox`]).
    #[serde(default)]
    pub outbox: Vec<NewOutboxRow>,
    /// The lease the push is made under; the push is fenced when it is not the workflow's (a
    /// workflow never leased takes pushes without one).
    #[serde(default)]
    pub lease: Option<PushLease>,
}

/// The holder and epoch of the lease a push is made under.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushLease {
    pub holder: String,
    pub epoch: u64,
}

/// What a push did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAnswer {
    pub head: u64,
    /// The request id had committed before: nothing was applied now.
    pub replayed: bool,
}

/// The outcome of a push inside the store: the workflow's new head and the feed entry's
/// position (none for a push of no events), or the conflict with the server's events after the
/// expected head.
enum Pushed {
    Applied {
        head: u64,
        position: Option<u64>,
        replayed: bool,
    },
    Conflict {
        error: Error,
        events: EventsPage,
    },
}

pub(crate) async fn push<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PushAnswer>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request: PushRequest = shared.body(body)?;
    let task_scope = scope.clone();
    let bound = shared.page_bound(MAX_PULL);
    let pushed = shared
        .call(move |store| apply_push(store, &task_scope, request, bound))
        .await
        .map_err(|e| ApiError::new(scope.unscope_error(e)))?;
    match pushed {
        Pushed::Applied {
            head,
            position,
            replayed,
        } => {
            if let Some(position) = position {
                shared.feeds.notify(scope.namespace(), position);
            }
            Ok(Json(PushAnswer { head, replayed }))
        }
        Pushed::Conflict { error, events } => Err(ApiError::new(scope.unscope_error(error))
            .field("events", json!(events.events))
            .field("eventsComplete", json!(events.complete))),
    }
}

/// What a push's request id stands for: the push as the client sent it, request id aside. A
/// client that lost its state and pushes other events under an id it used before is told
/// `CONFLICT`, never answered as the first push.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PushContent<'a> {
    workflow_id: &'a str,
    expected_head: u64,
    events: &'a [Event],
    outbox: &'a [NewOutboxRow],
}

impl PushRequest {
    fn key(&self, scope: &Scope) -> Result<RequestKey> {
        let content = PushContent {
            workflow_id: &self.workflow_id,
            expected_head: self.expected_head,
            events: &self.events,
            outbox: &self.outbox,
        };
        scope.request_key(&self.request_id, request_fingerprint("push", &content)?)
    }
}

fn apply_push<S: EventJournal + StepStore + SyncFeed>(
    store: &S,
    scope: &Scope,
    request: PushRequest,
    bound: PageBound,
) -> Result<Pushed> {
    let key = request.key(scope)?;
    let workflow = scope.workflow("workflowId", &request.workflow_id)?;
    let outbox = request
        .outbox
        .into_iter()
        .enumerate()
        .map(|(i, row)| scope.outbox_row(i, row))
        .collect::<Result<Vec<_>>>()?;
    let base = request.expected_head;
    let head = base + request.events.len() as u64;
    if let Some(lease) = &request.lease {
        check_holder("lease.holder", &lease.holder, lease.epoch, "lease.epoch")?;
    }
    let (holder, epoch) = request.lease.map(|l| (l.holder, l.epoch)).unzip();
    let mut operations = vec![
        // First, and in the push's transaction: a fenced push is FENCED (not told the events
        // it missed), and no take-over lands between the check and the append.
        Operation::CheckLease {
            workflow_id: workflow.clone(),
            holder,
            epoch,
        },
        Operation::Append {
            workflow_id: workflow.clone(),
            events: request.events,
            expected_seq: base,
            outbox,
        },
    ];
    if head > base {
        operations.push(Operation::RecordChange {
            feed: scope.namespace().to_owned(),
            workflow_id: workflow.clone(),
            base,
            head,
        });
    }
    match store.commit_request(Some(&key), &operations) {
        Ok(outcome) => applied(&outcome.outcomes, outcome.replayed),
        Err(Error::Operation { index: 1, error }) if is_sequence_conflict(&error) => {
            Ok(Pushed::Conflict {
                error: *error,
                events: store.read_events_after(&workflow, base, bound)?,
            })
        }
        Err(other) => Err(other),
    }
}

fn is_sequence_conflict(error: &Error) -> bool {
    matches!(error, Error::SequenceConflict { .. })
}

/// What a push's outcomes say: its append's head and its change's position. A push recorded
/// before pushes were fenced has no `CheckLease` outcome, and is replayed the same.
fn applied(outcomes: &[OperationOutcome], replayed: bool) -> Result<Pushed> {
    let outcomes = match outcomes {
        [OperationOutcome::CheckLease {}, rest @ ..] => rest,
        all => all,
    };
    let (head, position) =
        match outcomes {
            [OperationOutcome::Append { head }] => (*head, None),
            [OperationOutcome::Append { head }, OperationOutcome::RecordChange { position }] => {
                (*head, Some(*position))
            }
            _ => return Err(Error::Corrupt {
                message:
                    "a recorded push has other outcomes than its fence, its append and its change"
                        .into(),
            }),
        };
    Ok(Pushed::Applied {
        head,
        position,
        replayed,
    })
}

/// `?after=&limit=&waitMs=&events=` of a changes request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ChangesQuery {
    #[serde(default)]
    after: u64,
    limit: Option<u32>,
    #[serde(default)]
    wait_ms: u64,
    /// Answer with each push's segment of events (`segments`) instead of the workflows'
    /// latest heads (`changes`).
    #[serde(default)]
    events: bool,
}

/// One workflow that changed: its head as of the change.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub workflow_id: String,
    pub head: u64,
}

/// One push as the feed recorded it: the workflow went from `base` to `head` with `events`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub workflow_id: String,
    pub base: u64,
    pub head: u64,
    pub events: Vec<StoredEvent>,
}

/// A page of the namespace's changes after a cursor.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesAnswer {
    /// In the order they were pushed; a workflow pushed several times appears once, with its
    /// latest head in this page. Absent when `segments` are asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<Change>>,
    /// Every push of the page, in the order they committed, with its events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<Segment>>,
    /// Where the next pull starts (`after`).
    pub cursor: u64,
    /// More changes follow this page.
    pub more: bool,
}

pub(crate) async fn changes<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    request: Result<Query<ChangesQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request = query(request)?;
    let bound = shared.page_bound(pull_limit(request.limit)?);
    let wait = Duration::from_millis(request.wait_ms).min(MAX_WAIT);
    // Subscribed before reading, so a push between the read and the wait still wakes it.
    let mut woken = shared.feeds.subscribe(scope.namespace());
    let deadline = tokio::time::Instant::now() + wait;
    let (after, with_events) = (request.after, request.events);
    let key = ReadKey::new(scope.namespace(), after, bound, with_events);
    loop {
        let read = || {
            let (shared, scope) = (Arc::clone(&shared), scope.clone());
            async move {
                shared
                    .call(move |store| {
                        let answer = read_changes(store, &scope, after, bound, with_events)?;
                        Ok(ReadAnswer {
                            cursor: answer.cursor,
                            body: Bytes::from(serde_json::to_vec(&answer)?),
                        })
                    })
                    .await
            }
        };
        let told_now = shared.feeds.told(scope.namespace());
        let answer = shared
            .reads
            .read(key.clone(), woken.seen(), told_now, read)
            .await?;
        if answer.cursor > after || tokio::time::Instant::now() >= deadline {
            let json = [(header::CONTENT_TYPE, "application/json")];
            return Ok((json, answer.body.clone()).into_response());
        }
        let _ = tokio::time::timeout_at(deadline, woken.changed()).await;
    }
}

fn read_changes<S: SyncFeed>(
    store: &S,
    scope: &Scope,
    after: u64,
    bound: PageBound,
    with_events: bool,
) -> Result<ChangesAnswer> {
    let page = store.read_feed(scope.namespace(), after, bound, with_events)?;
    let cursor = page.entries.last().map_or(after, |entry| entry.position);
    let (changes, segments) = if with_events {
        let segments = page
            .entries
            .into_iter()
            .map(|entry| segment(scope, entry))
            .collect();
        (None, Some(segments))
    } else {
        (Some(latest_heads(scope, page.entries)), None)
    };
    Ok(ChangesAnswer {
        changes,
        segments,
        cursor,
        more: page.more,
    })
}

/// Each workflow of `entries` once, at its latest head, in the order of its latest push.
fn latest_heads(scope: &Scope, entries: Vec<FeedEntry>) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::with_capacity(entries.len());
    for entry in entries {
        let workflow_id = scope.client_workflow(entry.workflow_id);
        changes.retain(|c| c.workflow_id != workflow_id);
        changes.push(Change {
            workflow_id,
            head: entry.head,
        });
    }
    changes
}

fn segment(scope: &Scope, entry: FeedEntry) -> Segment {
    Segment {
        workflow_id: scope.client_workflow(entry.workflow_id),
        base: entry.base,
        head: entry.head,
        events: entry.events.unwrap_or_default(),
    }
}

fn pull_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    match limit {
        None => Ok(MAX_PULL),
        Some(n) if (1..=MAX_PULL).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::new(Error::invalid(
            "limit",
            format!("{n} is not between 1 and {MAX_PULL}"),
        ))),
    }
}

/// `?after=&limit=` of an events request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EventsQuery {
    #[serde(default)]
    after: u64,
    limit: Option<u32>,
}

pub(crate) async fn events<A: StoreAccess>(
    State(shared): State<Arc<Shared<A>>>,
    Path((namespace, workflow_id)): Path<(String, String)>,
    headers: HeaderMap,
    request: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request = query(request)?;
    let bound = shared.page_bound(pull_limit(request.limit)?);
    let workflow = scope.workflow("workflowId", &workflow_id)?;
    let (page, head) = shared
        .call(move |store| {
            let page = store.read_events_after(&workflow, request.after, bound)?;
            Ok((page, store.head(&workflow)?))
        })
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(Json(
        json!({ "events": page.events, "head": head, "complete": page.complete }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(outcomes: &[OperationOutcome]) -> (u64, Option<u64>) {
        match applied(outcomes, true).unwrap() {
            Pushed::Applied { head, position, .. } => (head, position),
            Pushed::Conflict { .. } => unreachable!(),
        }
    }

    #[test]
    fn a_push_recorded_with_or_without_its_fence_is_replayed_alike() {
        let append = OperationOutcome::Append { head: 4 };
        let change = OperationOutcome::RecordChange { position: 9 };
        let fence = OperationOutcome::CheckLease {};
        // Recorded before pushes were fenced, and after.
        assert_eq!(answered(&[append.clone(), change.clone()]), (4, Some(9)));
        assert_eq!(answered(std::slice::from_ref(&append)), (4, None));
        assert_eq!(
            answered(&[fence.clone(), append.clone(), change]),
            (4, Some(9))
        );
        assert_eq!(answered(&[fence.clone(), append]), (4, None));
        assert!(applied(&[fence], true).is_err());
    }
}
