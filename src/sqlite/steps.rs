//! SQL of steps and the request log (table `requests`): a step's operations run through the
//! ordinary store methods inside one transaction (see `SqliteStore::write_tx`), and its request
//! id is recorded with the outcomes before that transaction commits.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::{change_feed, SqliteStore};
use crate::backend::checks::{check_id, to_sql_int};
use crate::backend::requests::{
    check_scope, check_step, decide, decode_outcomes, encode_outcomes, outcome_of, Decision,
};
use crate::error::{Error, Result};
use crate::model::changes::Change;
use crate::model::steps::*;
use crate::*;

/// Marks the store as applying a step for as long as it lives, also when an operation fails.
struct InStep<'a>(&'a Cell<bool>);

impl<'a> InStep<'a> {
    fn enter(flag: &'a Cell<bool>) -> Self {
        flag.set(true);
        InStep(flag)
    }
}

impl Drop for InStep<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// The log deletes what is past its bounds every this many requests of a scope, all at once:
/// deleting the oldest row at every commit wrote three more pages to each one once the log
/// was full. Finding those rows reads all of the scope's rows (the log has no index by slot,
/// see schema_6.sql), so it is done rarely: every 64 requests, that read made a request with
/// a full log cost 42 µs natively in memory against 13 µs every 1,024.
const PRUNE_EVERY: i64 = 1024;

/// How many of the oldest requests a pruning looks at for age: four times as many as were
/// recorded since the last, so that the log sheds expired rows faster than it gains rows.
const AGE_WINDOW: i64 = 4 * PRUNE_EVERY;

/// How many slots each scope's requests have: scope `n` holds slots `n * SCOPE_SLOTS + 1`
/// onwards, one per committed request, in order.
const SCOPE_SLOTS: i64 = 1 << 40;

/// The most scopes the log numbers (so that every slot fits in an `i64`).
const MAX_SCOPES: i64 = (i64::MAX / SCOPE_SLOTS) - 1;

/// The newest request of each scope (by slot) as this connection knows it: its id, looked up
/// again at each use, so that a row changed or deleted since reads as it is now. The log has
/// no index by slot (see schema_6.sql): without this, finding the newest request reads all of
/// its scope's rows.
///
/// Valid while `PRAGMA data_version` reads `version` (it changes when another connection
/// commits) and while every request this connection adds goes through [`record`]: what adds
/// rows otherwise (an import) or may roll back a recorded row ([`SqliteStore::commit_once`]
/// when its commit fails) calls [`Newest::forget`].
#[derive(Debug, Default)]
pub(super) struct Newest {
    version: Cell<Option<i64>>,
    ids: RefCell<HashMap<i64, String>>,
}

impl Newest {
    /// Forgets every newest request it knew: the next use reads them from the log.
    pub(super) fn forget(&self) {
        self.version.set(None);
        self.ids.borrow_mut().clear();
    }

    /// The slot and commit time of the newest request of scope `number`, `None` when the
    /// scope holds none.
    fn of(&self, conn: &Connection, number: i64) -> Result<Option<(i64, i64)>> {
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        if self.version.get() == Some(version) {
            let id = self.ids.borrow().get(&number).cloned();
            if let Some(id) = id {
                let found = conn
                    .prepare_cached(
                        "SELECT slot, committed_at FROM requests
                         WHERE scope_number = ?1 AND request_id = ?2",
                    )?
                    .query_row(params![number, id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?;
                if found.is_some() {
                    return Ok(found);
                }
            }
        } else {
            self.forget();
            self.version.set(Some(version));
        }
        let newest: Option<(String, i64, i64)> = conn
            .prepare_cached(
                "SELECT request_id, slot, committed_at FROM requests
                 WHERE scope_number = ?1 ORDER BY slot DESC LIMIT 1",
            )?
            .query_row([number], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .optional()?;
        Ok(newest.map(|(id, slot, committed_at)| {
            self.ids.borrow_mut().insert(number, id);
            (slot, committed_at)
        }))
    }

    /// Notes `request_id`, just recorded, as the newest request of scope `number`.
    fn set(&self, number: i64, request_id: &str) {
        if self.version.get().is_some() {
            self.ids.borrow_mut().insert(number, request_id.to_owned());
        }
    }
}

/// The number of `scope` in the log, `None` when it never recorded a request of it.
fn scope_number(conn: &Connection, scope: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT scope_number FROM request_scopes WHERE scope = ?1")?
        .query_row([scope], |row| row.get(0))
        .optional()?)
}

/// The number of `scope`, numbering it when the log has none.
fn numbered_scope(conn: &Connection, scope: &str) -> Result<i64> {
    if let Some(number) = scope_number(conn, scope)? {
        return Ok(number);
    }
    let number: i64 = conn
        .prepare_cached(
            "INSERT INTO request_scopes (scope_number, scope)
             VALUES ((SELECT coalesce(max(scope_number), -1) + 1 FROM request_scopes), ?1)
             RETURNING scope_number",
        )?
        .query_row([scope], |row| row.get(0))?;
    if number > MAX_SCOPES {
        return Err(Error::invalid(
            "scope",
            format!("is one scope too many: the request log numbers at most {MAX_SCOPES}"),
        ));
    }
    Ok(number)
}

/// The fingerprint and outcomes recorded for `request_id` of `scope`, while it is within the
/// scope's window: fewer than [`MAX_KEPT_REQUESTS`] requests of the scope and less than
/// [`REQUEST_RETENTION_MS`] behind its newest request. Rows past them are deleted only every
/// [`PRUNE_EVERY`] requests, so the bounds are applied here: a request reads as forgotten from
/// the commit that takes it past them, as when each commit deleted it.
pub(super) fn recorded(
    conn: &Connection,
    newest: &Newest,
    scope: &str,
    request_id: &str,
) -> Result<Option<(String, RequestRecord)>> {
    recorded_at(conn, ScopeHead::of(conn, newest, scope)?, request_id)
}

/// Where a scope stands in the log: its number (`None` before its first request) and its
/// newest request's slot and commit time. A request under an id reads it once, for
/// [`recorded_at`] and then [`record_at`]: nothing between them writes the log.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScopeHead {
    number: Option<i64>,
    newest: Option<(i64, i64)>,
}

impl ScopeHead {
    pub(super) fn of(conn: &Connection, newest: &Newest, scope: &str) -> Result<Self> {
        let Some(number) = scope_number(conn, scope)? else {
            return Ok(ScopeHead {
                number: None,
                newest: None,
            });
        };
        Ok(ScopeHead {
            number: Some(number),
            newest: newest.of(conn, number)?,
        })
    }
}

/// [`recorded`], for a scope whose head was read already.
pub(super) fn recorded_at(
    conn: &Connection,
    head: ScopeHead,
    request_id: &str,
) -> Result<Option<(String, RequestRecord)>> {
    let (Some(number), Some((newest_slot, newest_at))) = (head.number, head.newest) else {
        return Ok(None);
    };
    let row: Option<(String, i64, String)> = conn
        .prepare_cached(
            "SELECT fingerprint, committed_at, outcomes FROM requests
             WHERE scope_number = ?1 AND request_id = ?2
               AND slot > ?3 - ?4 AND committed_at >= ?5 - ?6",
        )?
        .query_row(
            params![
                number,
                request_id,
                newest_slot,
                to_sql_int("kept", MAX_KEPT_REQUESTS)?,
                newest_at,
                REQUEST_RETENTION_MS
            ],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((fingerprint, committed_at, outcomes)) = row else {
        return Ok(None);
    };
    let mut stored = decode_outcomes(request_id, &outcomes)?;
    let inputs = outbox_inputs(conn, &stored.keys())?;
    let record = RequestRecord {
        request_id: request_id.to_owned(),
        committed_at,
        outcomes: stored.with_inputs(inputs)?,
    };
    Ok(Some((fingerprint, record)))
}

/// The inputs of the outbox rows `keys`, which a recorded claim left out of its outcome.
fn outbox_inputs(conn: &Connection, keys: &[String]) -> Result<HashMap<String, Vec<u8>>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let mut stmt = conn.prepare_cached(
        "SELECT dispatch_key, input FROM outbox
         WHERE dispatch_key IN (SELECT value FROM json_each(?1))",
    )?;
    let rows = stmt.query_map([serde_json::to_string(keys)?], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The latest commit time of a request of `scope` the log has forgotten: deleted, or past the
/// window and not deleted yet. `None` when it has forgotten none.
pub(super) fn forgotten_through(
    conn: &Connection,
    newest: &Newest,
    scope: &str,
) -> Result<Option<Millis>> {
    let Some(number) = scope_number(conn, scope)? else {
        return Ok(None);
    };
    let deleted: Option<Millis> = conn
        .prepare_cached("SELECT forgotten_through FROM request_scopes WHERE scope_number = ?1")?
        .query_row([number], |row| row.get(0))?;
    let Some((newest_slot, newest_at)) = newest.of(conn, number)? else {
        return Ok(deleted);
    };
    let past: Option<Millis> = conn
        .prepare_cached(
            "SELECT max(committed_at) FROM requests
             WHERE scope_number = ?1 AND (slot <= ?2 - ?3 OR committed_at < ?4 - ?5)",
        )?
        .query_row(
            params![
                number,
                newest_slot,
                to_sql_int("kept", MAX_KEPT_REQUESTS)?,
                newest_at,
                REQUEST_RETENTION_MS
            ],
            |row| row.get(0),
        )?;
    Ok(deleted.max(past))
}

/// Moves the horizon of forgotten requests of `scope` up to `through` (never down).
pub(super) fn forget_through(conn: &Connection, scope: &str, through: Millis) -> Result<()> {
    forget_numbered_through(conn, numbered_scope(conn, scope)?, through)
}

fn forget_numbered_through(conn: &Connection, number: i64, through: Millis) -> Result<()> {
    conn.prepare_cached(
        "UPDATE request_scopes SET forgotten_through = max(coalesce(forgotten_through, ?2), ?2)
         WHERE scope_number = ?1",
    )?
    .execute(params![number, through])?;
    Ok(())
}

/// Records a request of `scope` with its outcomes (in place of a forgotten row under the same
/// id that was not deleted yet), and every [`PRUNE_EVERY`] requests of the scope deletes the
/// rows past its window.
pub(super) fn record(
    conn: &Connection,
    newest: &Newest,
    scope: &str,
    request_id: &str,
    fingerprint: &str,
    outcomes: &mut [OperationOutcome],
) -> Result<()> {
    let head = ScopeHead::of(conn, newest, scope)?;
    record_at(conn, newest, scope, head, request_id, fingerprint, outcomes)
}

/// [`record`], for a scope whose head was read already in this transaction.
pub(super) fn record_at(
    conn: &Connection,
    newest: &Newest,
    scope: &str,
    head: ScopeHead,
    request_id: &str,
    fingerprint: &str,
    outcomes: &mut [OperationOutcome],
) -> Result<()> {
    let number = match head.number {
        Some(number) => number,
        None => numbered_scope(conn, scope)?,
    };
    let slot = head.newest.map_or(number * SCOPE_SLOTS, |(slot, _)| slot) + 1;
    let committed_at: i64 = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO requests
               (scope_number, request_id, slot, fingerprint, outcomes, committed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, CAST(unixepoch('subsec') * 1000 AS INTEGER))
             RETURNING committed_at",
        )?
        .query_row(
            params![
                number,
                request_id,
                slot,
                fingerprint,
                encode_outcomes(outcomes)?
            ],
            |row| row.get(0),
        )?;
    newest.set(number, request_id);
    if (slot - number * SCOPE_SLOTS) % PRUNE_EVERY == 0 {
        prune(conn, number, slot, committed_at)?;
    }
    Ok(())
}

/// Deletes the requests of scope `number` more than [`MAX_KEPT_REQUESTS`] behind its request
/// in `slot`, and those among its oldest [`AGE_WINDOW`] committed more than
/// [`REQUEST_RETENTION_MS`] before it; the scope's horizon moves up to what was deleted.
/// The newest request is never among them.
fn prune(conn: &Connection, number: i64, slot: i64, committed_at: i64) -> Result<()> {
    let kept = to_sql_int("kept", MAX_KEPT_REQUESTS)?;
    let mut deleted: Vec<i64> = conn
        .prepare_cached(
            "DELETE FROM requests WHERE scope_number = ?1 AND slot <= ?2 - ?3
             RETURNING committed_at",
        )?
        .query_map(params![number, slot, kept], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let expired: Vec<i64> = conn
        .prepare_cached(
            "DELETE FROM requests
             WHERE scope_number = ?1
               AND slot IN (SELECT slot FROM requests WHERE scope_number = ?1
                            ORDER BY slot LIMIT ?2)
               AND committed_at < ?3 - ?4
             RETURNING committed_at",
        )?
        .query_map(
            params![number, AGE_WINDOW, committed_at, REQUEST_RETENTION_MS],
            |row| row.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    deleted.extend(expired);
    if let Some(&through) = deleted.iter().max() {
        forget_numbered_through(conn, number, through)?;
    }
    Ok(())
}

impl SqliteStore {
    /// Applies one operation through the store method of the same name (its INVALID_INPUT
    /// is named from the operation by `Operation::name_field`).
    fn apply(&self, operation: &Operation) -> Result<OperationOutcome> {
        use OperationOutcome as Done;
        Ok(match operation {
            Operation::Append {
                workflow_id,
                events,
                expected_seq,
                outbox,
            } => Done::Append {
                head: self.append_with_outbox(workflow_id, events, *expected_seq, outbox)?,
            },
            Operation::InsertOutbox { rows } => Done::InsertOutbox {
                inserted: self.insert_outbox(rows)?,
            },
            Operation::ClaimOutbox { now, limit, filter } => Done::ClaimOutbox {
                rows: self.claim_outbox(*now, *limit, filter)?,
            },
            Operation::CompleteOutbox {
                dispatch_key,
                claim_token,
            } => {
                self.complete_outbox(dispatch_key, *claim_token)?;
                Done::CompleteOutbox {}
            }
            Operation::CompleteOutboxBatch { claims } => {
                self.complete_outbox_batch(claims)?;
                Done::CompleteOutboxBatch {}
            }
            Operation::RetryOutbox {
                dispatch_key,
                claim_token,
                next_attempt,
                visible_after,
            } => Done::RetryOutbox {
                status: self.retry_outbox(
                    dispatch_key,
                    *claim_token,
                    *next_attempt,
                    *visible_after,
                )?,
            },
            Operation::FailOutbox {
                dispatch_key,
                claim_token,
                reason,
            } => {
                self.fail_outbox(dispatch_key, *claim_token, reason)?;
                Done::FailOutbox {}
            }
            Operation::CancelWorkflowOutbox { workflow_id } => Done::CancelWorkflowOutbox {
                cancelled: self.cancel_workflow_outbox(workflow_id)?,
            },
            Operation::RearmStaleClaims {
                older_than,
                visible_after,
                limit,
            } => Done::RearmStaleClaims {
                rows: self.rearm_stale_claims(*older_than, *visible_after, *limit)?,
            },
            Operation::ScheduleTimer {
                workflow_id,
                timer_id,
                fire_at,
            } => {
                self.schedule_timer(workflow_id, timer_id, *fire_at)?;
                Done::ScheduleTimer {}
            }
            Operation::CancelTimer {
                workflow_id,
                timer_id,
            } => Done::CancelTimer {
                removed: self.cancel_timer(workflow_id, timer_id)?,
            },
            Operation::CompareAndSwapCheckpoint {
                checkpoint,
                expected_revision,
            } => {
                self.compare_and_swap_checkpoint(checkpoint, *expected_revision)?;
                Done::CompareAndSwapCheckpoint {
                    revision: checkpoint.revision,
                }
            }
            Operation::CompareAndSwapEffect {
                record,
                expected_revision,
            } => {
                self.compare_and_swap_effect(record, *expected_revision)?;
                Done::CompareAndSwapEffect {
                    revision: record.revision,
                }
            }
            Operation::UpsertVisibility { record } => {
                self.upsert_visibility(record)?;
                Done::UpsertVisibility {}
            }
            Operation::RecordRunEvent { event } => {
                self.record_run_event(event)?;
                Done::RecordRunEvent {}
            }
            Operation::SaveConversation {
                state,
                expected_revision,
            } => {
                self.save_conversation(state, *expected_revision)?;
                Done::SaveConversation {
                    revision: state.revision,
                }
            }
            Operation::PutArtifact { artifact, now } => Done::PutArtifact {
                artifact: self.put_artifact(artifact, *now)?,
            },
            Operation::DeleteArtifact { scope, artifact_id } => Done::DeleteArtifact {
                deleted: self.delete_artifact(scope, artifact_id)?,
            },
            Operation::PurgeWorkflows {
                closed_before,
                limit,
            } => Done::PurgeWorkflows {
                counts: self.purge_workflows(*closed_before, *limit)?,
            },
            Operation::PurgeExpiredArtifacts { now } => Done::PurgeExpiredArtifacts {
                purged: self.purge_expired_artifacts(*now)?,
            },
            Operation::RegisterNamespace { name, origin, now } => Done::RegisterNamespace {
                outcome: self.register_namespace(name, *origin, *now)?,
            },
            Operation::PutNamespace { record } => Done::PutNamespace {
                outcome: self.put_namespace(record)?,
            },
            Operation::SetNamespacePlacement { name, placement } => {
                self.set_namespace_placement(name, placement)?;
                Done::SetNamespacePlacement {}
            }
            Operation::DeprecateNamespace { name } => Done::DeprecateNamespace {
                deprecated: self.deprecate_namespace(name)?,
            },
            Operation::PutPackage {
                record,
                member_types,
            } => {
                match member_types {
                    Some(types) => self.put_package_for_types(record, types)?,
                    None => self.put_package(record)?,
                }
                Done::PutPackage {}
            }
            Operation::DeletePackage {
                workflow_type,
                content_hash,
            } => Done::DeletePackage {
                dropped_routes: self.delete_package(workflow_type, content_hash)?,
            },
            Operation::SetPackageRoute {
                workflow_type,
                content_hash,
            } => {
                self.set_package_route(workflow_type, content_hash)?;
                Done::SetPackageRoute {}
            }
            Operation::SaveSync {
                target,
                client_id,
                cursor,
                mark,
                heads,
            } => {
                self.save_sync(target, client_id, *cursor, *mark, heads)?;
                Done::SaveSync {}
            }
            Operation::RecordChange {
                feed,
                workflow_id,
                base,
                head,
            } => Done::RecordChange {
                position: self.record_change(feed, workflow_id, *base, *head)?,
            },
            Operation::CheckLease {
                workflow_id,
                holder,
                epoch,
            } => {
                self.check_lease(workflow_id, holder.as_deref(), *epoch)?;
                Done::CheckLease {}
            }
        })
    }
}

impl StepStore for SqliteStore {
    fn commit_request(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
    ) -> Result<StepOutcome> {
        self.commit_named(request, operations, |index, operation, error| {
            operation.name_field(error).in_operation(index)
        })
    }

    fn request_outcome_in(&self, scope: &str, request_id: &str) -> Result<RequestOutcome> {
        check_scope(scope)?;
        check_id("requestId", request_id)?;
        // One snapshot for the record and the horizon, even while another connection writes.
        let _snapshot = self.conn().unchecked_transaction()?;
        let record =
            recorded(self.conn(), &self.newest, scope, request_id)?.map(|(_, record)| record);
        let forgotten = match record {
            Some(_) => None,
            None => forgotten_through(self.conn(), &self.newest, scope)?,
        };
        Ok(outcome_of(request_id, record, forgotten))
    }
}

/// How a step names an operation's error: from its index, the operation and the error.
type Naming = fn(usize, &Operation, Error) -> Error;

impl SqliteStore {
    /// Runs a store method called on its own, not inside a step, as a step of its one
    /// operation, so that what it changed is numbered in the change feed in its transaction,
    /// as a step's change is. Its errors are the method's own, not an operation's.
    // One copy for every method: inlined, the step's commit would be copied into each.
    #[inline(never)]
    pub(super) fn alone(&self, operation: Operation) -> Result<OperationOutcome> {
        let operations = [operation];
        let outcome = self.commit_named(None, &operations, |_, _, error| error)?;
        Ok(outcome.outcomes.into_iter().next().expect("one outcome"))
    }

    /// Whether a step is being applied (see [`SqliteStore::alone`]).
    pub(super) fn in_step(&self) -> bool {
        self.in_step.get()
    }

    fn commit_named(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
        naming: Naming,
    ) -> Result<StepOutcome> {
        if Step::frees_space_of(operations) {
            // A delete under a request id writes a request-log row too: on a full disk both
            // need the room a checkpoint of the WAL gives back.
            self.delete_with_room(|| self.commit_once(request, operations, naming))
        } else {
            self.commit_once(request, operations, naming)
        }
    }

    /// Applies the operations in one transaction with their change numbered in the feed, or
    /// answers what their request id recorded.
    fn commit_once(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
        naming: Naming,
    ) -> Result<StepOutcome> {
        check_step(request.map(|key| key.id.as_str()), operations)?;
        let tx = self.write_tx()?;
        self.release_after_step.set(false);
        let head = match request {
            Some(key) => {
                check_scope(&key.scope)?;
                // Read under the write lock: no other connection can commit this id meanwhile.
                let head = ScopeHead::of(&tx, &self.newest, &key.scope)?;
                let recorded = recorded_at(&tx, head, &key.id)?;
                if let Decision::Replay(outcome) = decide(&key.id, &key.fingerprint, recorded)? {
                    return Ok(outcome);
                }
                Some(head)
            }
            None => None,
        };
        let mut outcomes = {
            let _in_step = InStep::enter(&self.in_step);
            operations
                .iter()
                .enumerate()
                .map(|(index, operation)| {
                    self.apply(operation)
                        .map_err(|error| naming(index, operation, error))
                })
                .collect::<Result<Vec<_>>>()?
        };
        let request_id = request.map(|key| key.id.as_str());
        let mut change = Change::of(request_id, operations, &outcomes);
        if let Some(change) = change.as_mut() {
            change_feed::record(&tx, change)?;
        }
        let committed = match request.zip(head) {
            Some((key, head)) => record_at(
                &tx,
                &self.newest,
                &key.scope,
                head,
                &key.id,
                &key.fingerprint,
                &mut outcomes,
            ),
            None => Ok(()),
        }
        .and_then(|()| tx.commit());
        if let Err(error) = committed {
            // A row recorded in the transaction rolled back with it.
            self.newest.forget();
            return Err(error);
        }
        if self.release_after_step.replace(false) {
            self.release_space();
        }
        Ok(StepOutcome {
            outcomes,
            replayed: false,
            change,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(store: &SqliteStore, operation: Operation) -> (usize, String) {
        match store.commit(&Step::new().with(operation)) {
            Err(Error::Operation { index, error }) => match *error {
                Error::InvalidInput { field, .. } => (index, field),
                other => panic!("not INVALID_INPUT: {other}"),
            },
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn an_operations_invalid_input_names_its_field_from_the_operation() {
        let store = SqliteStore::open_in_memory().expect("store");
        let row: NewOutboxRow = serde_json::from_value(serde_json::json!({
            "dispatchKey": "", "workflowId": "wf", "ordinal": 1, "activityType": "a",
            "input": [1], "visibleAfter": 0,
        }))
        .expect("a row");
        let rows = Operation::InsertOutbox { rows: vec![row] };
        assert_eq!(field_of(&store, rows), (0, "rows[0].dispatchKey".into()));
        let package = Operation::PutPackage {
            record: PackageRecord {
                workflow_type: "t".into(),
                content_hash: "NOT-HEX".into(),
                archive: vec![1],
                deployed_at: 0,
            },
            member_types: Some(vec!["t".into()]),
        };
        assert_eq!(field_of(&store, package), (0, "record.contentHash".into()));
    }
}
