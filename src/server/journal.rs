//! Journal sync: pushes of journal segments under the expected head, and pulls of the
//! namespace's changes and of one workflow's events.
//!
//! A push is one step of the store: the segment's append, and an entry in the namespace's
//! change feed (a workflow of its own, whose events say which workflow reached which head).
//! Both commit or neither, under the push's request id, so a pull never misses a segment and
//! a re-sent push is answered from the request log instead of applied again.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::api_error::ApiError;
use super::request::query;
use super::scope::Scope;
use super::{now_millis, Shared, StoreAccess, MAX_WAIT};
use crate::error::{Error, Result};
use crate::{
    request_fingerprint, Event, EventJournal, EventKind, NewOutboxRow, Operation, OperationOutcome,
    PageRequest, RequestKey, StepStore, StoredEvent,
};

/// Most changes or events one pull answers with.
pub const MAX_PULL: u32 = 1000;

/// How often a push retries when other pushes to the namespace took the feed's next place.
const FEED_RETRIES: usize = 200;

/// The name of the feed's events.
const FEED_EVENT: &str = "pushed";

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
}

/// What a push did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAnswer {
    pub head: u64,
    /// The request id had committed before: nothing was applied now.
    pub replayed: bool,
}

/// The outcome of a push inside the store: the workflow's and the feed's new heads, or the
/// conflict with the server's events after the expected head.
enum Pushed {
    Applied {
        head: u64,
        feed: u64,
        replayed: bool,
    },
    Conflict {
        error: Error,
        events: Vec<StoredEvent>,
        complete: bool,
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
    let pushed = shared
        .call(move |store| apply_push(store, &task_scope, request))
        .await
        .map_err(|e| ApiError::new(scope.unscope_error(e)))?;
    match pushed {
        Pushed::Applied {
            head,
            feed,
            replayed,
        } => {
            shared.feeds.notify(scope.namespace(), feed);
            Ok(Json(PushAnswer { head, replayed }))
        }
        Pushed::Conflict {
            error,
            events,
            complete,
        } => Err(ApiError::new(scope.unscope_error(error))
            .field("events", json!(events))
            .field("eventsComplete", json!(complete))),
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

fn apply_push<S: EventJournal + StepStore>(
    store: &S,
    scope: &Scope,
    request: PushRequest,
) -> Result<Pushed> {
    let key = request.key(scope)?;
    let workflow = scope.workflow("workflowId", &request.workflow_id)?;
    let outbox = request
        .outbox
        .into_iter()
        .enumerate()
        .map(|(i, row)| scope.outbox_row(i, row))
        .collect::<Result<Vec<_>>>()?;
    let feed = scope.feed();
    let append = Operation::Append {
        workflow_id: workflow.clone(),
        events: request.events,
        expected_seq: request.expected_head,
        outbox,
    };
    for _ in 0..FEED_RETRIES {
        let feed_head = store.head(&feed)?;
        let operations = [
            append.clone(),
            feed_entry(&feed, feed_head, &request.workflow_id, &append),
        ];
        match store.commit_request(Some(&key), &operations) {
            Ok(outcome) => return applied(&outcome.outcomes, outcome.replayed),
            Err(Error::Operation { index: 0, error }) if is_sequence_conflict(&error) => {
                let (events, complete) = events_after(store, &workflow, request.expected_head)?;
                return Ok(Pushed::Conflict {
                    error: *error,
                    events,
                    complete,
                });
            }
            // Another push took the feed's next place: look again (a push that committed this
            // request id meanwhile is then a replay).
            Err(Error::Operation { index: 1, error }) if is_sequence_conflict(&error) => {}
            Err(other) => return Err(other),
        }
    }
    Err(Error::Busy {
        message: format!("the namespace's feed kept moving for {FEED_RETRIES} tries"),
    })
}

fn is_sequence_conflict(error: &Error) -> bool {
    matches!(error, Error::SequenceConflict { .. })
}

/// The feed's entry for a push: which workflow reached which head.
fn feed_entry(feed: &str, feed_head: u64, workflow_id: &str, append: &Operation) -> Operation {
    let Operation::Append {
        events,
        expected_seq,
        ..
    } = append
    else {
        unreachable!("a push is an append")
    };
    let head = expected_seq + events.len() as u64;
    Operation::Append {
        workflow_id: feed.to_owned(),
        events: vec![Event {
            kind: EventKind::Custom {
                name: FEED_EVENT.to_owned(),
            },
            recorded_at: now_millis(),
            data: json!({ "workflowId": workflow_id, "head": head }),
        }],
        expected_seq: feed_head,
        outbox: Vec::new(),
    }
}

fn applied(outcomes: &[OperationOutcome], replayed: bool) -> Result<Pushed> {
    match outcomes {
        [OperationOutcome::Append { head }, OperationOutcome::Append { head: feed }] => {
            Ok(Pushed::Applied {
                head: *head,
                feed: *feed,
                replayed,
            })
        }
        _ => Err(Error::Corrupt {
            message: "a recorded push has other outcomes than two appends".into(),
        }),
    }
}

/// Up to [`MAX_PULL`] of the workflow's events after `after`, and whether they are all.
fn events_after<S: EventJournal>(
    store: &S,
    workflow: &str,
    after: u64,
) -> Result<(Vec<StoredEvent>, bool)> {
    let page = store.read_history_from(
        workflow,
        after.saturating_add(1),
        &PageRequest::first(MAX_PULL),
    )?;
    Ok((page.items, page.next_cursor.is_none()))
}

/// `?after=&limit=&waitMs=` of a changes request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ChangesQuery {
    #[serde(default)]
    after: u64,
    limit: Option<u32>,
    #[serde(default)]
    wait_ms: u64,
}

/// One workflow that changed: its head as of the change.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub workflow_id: String,
    pub head: u64,
}

/// A page of the namespace's changes after a cursor.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesAnswer {
    /// In the order they were pushed; a workflow pushed several times appears once, with its
    /// latest head in this page.
    pub changes: Vec<Change>,
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
) -> Result<Json<ChangesAnswer>, ApiError> {
    let scope = shared.admit(&headers, &namespace)?;
    let request = query(request)?;
    let limit = pull_limit(request.limit)?;
    let wait = Duration::from_millis(request.wait_ms).min(MAX_WAIT);
    // Subscribed before reading, so a push between the read and the wait still wakes it.
    let mut woken = shared.feeds.subscribe(scope.namespace());
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let feed = scope.feed();
        let after = request.after;
        let answer = shared
            .call(move |store| read_changes(store, &feed, after, limit))
            .await?;
        if !answer.changes.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(Json(answer));
        }
        // Woken by a push here, or re-read once a second for pushes through other servers.
        let nap = tokio::time::Instant::now() + Duration::from_secs(1);
        let _ = tokio::time::timeout_at(deadline.min(nap), woken.changed()).await;
    }
}

fn read_changes<S: EventJournal>(
    store: &S,
    feed: &str,
    after: u64,
    limit: u32,
) -> Result<ChangesAnswer> {
    let page =
        store.read_history_from(feed, after.saturating_add(1), &PageRequest::first(limit))?;
    let mut changes: Vec<Change> = Vec::new();
    let mut cursor = after;
    for entry in &page.items {
        cursor = entry.seq;
        let workflow_id = entry.event.data["workflowId"].as_str();
        let head = entry.event.data["head"].as_u64();
        let (Some(workflow_id), Some(head)) = (workflow_id, head) else {
            return Err(Error::Corrupt {
                message: format!("feed entry {} names no workflow and head", entry.seq),
            });
        };
        changes.retain(|c| c.workflow_id != workflow_id);
        changes.push(Change {
            workflow_id: workflow_id.to_owned(),
            head,
        });
    }
    Ok(ChangesAnswer {
        changes,
        cursor,
        more: page.next_cursor.is_some(),
    })
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
    let limit = pull_limit(request.limit)?;
    let workflow = scope.workflow("workflowId", &workflow_id)?;
    let (events, head) = shared
        .call(move |store| {
            let page = store.read_history_from(
                &workflow,
                request.after.saturating_add(1),
                &PageRequest::first(limit),
            )?;
            Ok((page.items, store.head(&workflow)?))
        })
        .await
        .map_err(|e| scope.unscope_error(e))?;
    Ok(Json(json!({ "events": events, "head": head })))
}
