//! SQL of steps and the request log (table `requests`): a step's operations run through the
//! ordinary store methods inside one transaction (see `SqliteStore::write_tx`), and its request
//! id is recorded with the outcomes before that transaction commits.

use std::cell::Cell;

use rusqlite::{params, Connection, OptionalExtension};

use super::{check_id, to_sql_int, SqliteStore};
use crate::backend::requests::{decide, Decision};
use crate::error::{Error, Result};
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

pub(crate) fn check_step(request_id: Option<&str>, operations: &[Operation]) -> Result<()> {
    if let Some(request_id) = request_id {
        check_id("requestId", request_id)?;
    }
    match operations.len() {
        0 => Err(Error::invalid(
            "operations",
            "a step needs at least one operation",
        )),
        n if n > MAX_STEP_OPERATIONS => Err(Error::invalid(
            "operations",
            format!("holds {n} operations; the limit is {MAX_STEP_OPERATIONS}"),
        )),
        _ => Ok(()),
    }
}

/// The log deletes what is past its bounds every this many requests, all at once: deleting
/// the oldest row at every commit wrote three more pages to each one once the log was full.
const PRUNE_EVERY: i64 = 64;

/// How many of the oldest requests a pruning looks at for age: four times as many as were
/// recorded since the last, so that the log sheds expired rows faster than it gains rows.
const AGE_WINDOW: i64 = 4 * PRUNE_EVERY;

/// The fingerprint and outcomes recorded for `request_id`, while it is within the log's bounds:
/// fewer than [`MAX_KEPT_REQUESTS`] requests and less than [`REQUEST_RETENTION_MS`] behind the
/// newest request. Rows past them are deleted only every [`PRUNE_EVERY`] requests, so the
/// bounds are applied here: a request reads as forgotten from the commit that takes it past
/// them, as when each commit deleted it.
pub(super) fn recorded(
    conn: &Connection,
    request_id: &str,
) -> Result<Option<(String, RequestRecord)>> {
    let row: Option<(String, i64, String)> = conn
        .prepare_cached(
            "SELECT r.fingerprint, r.committed_at, r.outcomes
             FROM requests AS r,
                  (SELECT seq, committed_at FROM requests ORDER BY seq DESC LIMIT 1) AS newest
             WHERE r.request_id = ?1
               AND r.seq > newest.seq - ?2
               AND r.committed_at >= newest.committed_at - ?3",
        )?
        .query_row(
            params![
                request_id,
                to_sql_int("kept", MAX_KEPT_REQUESTS)?,
                REQUEST_RETENTION_MS
            ],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((fingerprint, committed_at, outcomes)) = row else {
        return Ok(None);
    };
    let outcomes = serde_json::from_str(&outcomes).map_err(|e| Error::Corrupt {
        message: format!("recorded outcome of request {request_id}: {e}"),
    })?;
    let record = RequestRecord {
        request_id: request_id.to_owned(),
        committed_at,
        outcomes,
    };
    Ok(Some((fingerprint, record)))
}

/// Records a request with its outcomes (in place of a forgotten row under the same id that
/// was not deleted yet), and every [`PRUNE_EVERY`] requests deletes the rows past the log's
/// bounds.
pub(super) fn record(
    conn: &Connection,
    request_id: &str,
    fingerprint: &str,
    outcomes: &[OperationOutcome],
) -> Result<()> {
    let (seq, committed_at): (i64, i64) = conn
        .prepare_cached(
            "INSERT OR REPLACE INTO requests (request_id, fingerprint, outcomes, committed_at)
             VALUES (?1, ?2, ?3, CAST(unixepoch('subsec') * 1000 AS INTEGER))
             RETURNING seq, committed_at",
        )?
        .query_row(
            params![request_id, fingerprint, serde_json::to_string(outcomes)?],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
    if seq % PRUNE_EVERY == 0 {
        prune(conn, seq, committed_at)?;
    }
    Ok(())
}

/// Deletes the requests more than [`MAX_KEPT_REQUESTS`] behind request `seq`, and those
/// among the oldest [`AGE_WINDOW`] committed more than [`REQUEST_RETENTION_MS`] before it.
fn prune(conn: &Connection, seq: i64, committed_at: i64) -> Result<()> {
    let kept = to_sql_int("kept", MAX_KEPT_REQUESTS)?;
    conn.prepare_cached("DELETE FROM requests WHERE seq <= ?1 - ?2")?
        .execute([seq, kept])?;
    conn.prepare_cached(
        "DELETE FROM requests
         WHERE seq IN (SELECT seq FROM requests ORDER BY seq LIMIT ?1)
           AND committed_at < ?2 - ?3",
    )?
    .execute([AGE_WINDOW, committed_at, REQUEST_RETENTION_MS])?;
    Ok(())
}

impl SqliteStore {
    /// Applies one operation through the store method of the same name.
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
        })
    }
}

impl StepStore for SqliteStore {
    fn commit_request(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
    ) -> Result<StepOutcome> {
        check_step(request.map(|key| key.id.as_str()), operations)?;
        let tx = self.write_tx()?;
        self.release_after_step.set(false);
        if let Some(key) = request {
            // Read under the write lock: no other connection can commit this id meanwhile.
            let recorded = recorded(&tx, &key.id)?;
            if let Decision::Replay(outcome) = decide(&key.id, &key.fingerprint, recorded)? {
                return Ok(outcome);
            }
        }
        let outcomes = {
            let _in_step = InStep::enter(&self.in_step);
            operations
                .iter()
                .enumerate()
                .map(|(index, operation)| {
                    self.apply(operation)
                        .map_err(|error| error.in_operation(index))
                })
                .collect::<Result<Vec<_>>>()?
        };
        if let Some(key) = request {
            record(&tx, &key.id, &key.fingerprint, &outcomes)?;
        }
        tx.commit()?;
        if self.release_after_step.replace(false) {
            self.release_space();
        }
        Ok(StepOutcome {
            outcomes,
            replayed: false,
        })
    }

    fn request_outcome(&self, request_id: &str) -> Result<Option<RequestRecord>> {
        check_id("requestId", request_id)?;
        Ok(recorded(self.conn(), request_id)?.map(|(_, record)| record))
    }
}
