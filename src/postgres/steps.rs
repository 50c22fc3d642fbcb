//! SQL of steps and the request log (table `requests`) on PostgreSQL: a step's operations run
//! in one transaction through each area's `*_in` function, and its request id is recorded with
//! the outcomes before that transaction commits.
//!
//! A step reserves its request id (inserts the id's row) before its operations run. A second
//! step under the same id on another connection waits on that row's unique key until the
//! first ends: when the first committed, the second returns the recorded outcomes
//! (`replayed`) without applying anything; when it rolled back, the second runs. Exactly once,
//! decided by the database, as SQLite's write lock decides it.

use super::session::{Sql, Tx};

use super::paging::col;
use super::*;
use crate::backend::requests::{decide, Decision};
use crate::error::{Error, Result};
use crate::model::steps::*;
use crate::sqlite::check_id;
use crate::sqlite::steps::check_step;

/// The fingerprint and outcomes recorded for `request_id`.
fn recorded(client: &mut impl Sql, request_id: &str) -> Result<Option<(String, RequestRecord)>> {
    let Some(row) = client.query_opt(
        "SELECT fingerprint, committed_at, outcomes FROM requests WHERE request_id = $1",
        &[&request_id],
    )?
    else {
        return Ok(None);
    };
    let outcomes: String = col(&row, 2)?;
    let outcomes = serde_json::from_str(&outcomes).map_err(|e| Error::Corrupt {
        message: format!("recorded outcome of request {request_id}: {e}"),
    })?;
    let record = RequestRecord {
        request_id: request_id.to_owned(),
        committed_at: col(&row, 1)?,
        outcomes,
    };
    Ok(Some((col(&row, 0)?, record)))
}

/// Reserves `request_id` before the step's operations run: inserts its row (outcomes still
/// empty), or, when a concurrent step holds the id uncommitted, waits for that step to end.
/// Returns the row's seq, or `None` when the other step committed the id meanwhile.
fn reserve(tx: &mut Tx<'_>, request_id: &str, fingerprint: &str) -> Result<Option<i64>> {
    let row = tx.query_opt(
        "INSERT INTO requests (request_id, fingerprint, outcomes, committed_at)
         VALUES ($1, $2, '[]', 0)
         ON CONFLICT (request_id) DO NOTHING
         RETURNING seq",
        &[&request_id, &fingerprint],
    )?;
    row.map(|row| col(&row, 0)).transpose()
}

/// Writes the outcomes into the reserved row, then forgets the requests past the log's bounds.
fn record(tx: &mut Tx<'_>, seq: i64, outcomes: &[OperationOutcome]) -> Result<()> {
    let row = tx.query_one(
        "UPDATE requests SET outcomes = $2,
           committed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
         WHERE seq = $1
         RETURNING committed_at",
        &[&seq, &serde_json::to_string(outcomes)?],
    )?;
    let committed_at: i64 = col(&row, 0)?;
    let kept = to_i64("kept", MAX_KEPT_REQUESTS)?;
    tx.execute("DELETE FROM requests WHERE seq <= $1", &[&(seq - kept)])?;
    tx.execute(
        "DELETE FROM requests WHERE committed_at < $1",
        &[&(committed_at - REQUEST_RETENTION_MS)],
    )?;
    Ok(())
}

/// Applies one operation through the area function of the same name.
fn apply(tx: &mut Tx<'_>, operation: &Operation) -> Result<OperationOutcome> {
    use OperationOutcome as Done;
    Ok(match operation {
        Operation::Append {
            workflow_id,
            events,
            expected_seq,
            outbox,
        } => Done::Append {
            head: journal::append_in(tx, workflow_id, events, *expected_seq, outbox)?,
        },
        Operation::InsertOutbox { rows } => Done::InsertOutbox {
            inserted: outbox::insert_in(tx, rows)?,
        },
        Operation::ClaimOutbox { now, limit, filter } => Done::ClaimOutbox {
            rows: outbox::claim_in(tx, *now, *limit, filter)?,
        },
        Operation::CompleteOutbox {
            dispatch_key,
            claim_token,
        } => {
            outbox::complete_in(tx, dispatch_key, *claim_token)?;
            Done::CompleteOutbox {}
        }
        Operation::CompleteOutboxBatch { claims } => {
            outbox::complete_batch_in(tx, claims)?;
            Done::CompleteOutboxBatch {}
        }
        Operation::RetryOutbox {
            dispatch_key,
            claim_token,
            next_attempt,
            visible_after,
        } => Done::RetryOutbox {
            status: outbox::retry_in(
                tx,
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
            outbox::fail_in(tx, dispatch_key, *claim_token, reason)?;
            Done::FailOutbox {}
        }
        Operation::CancelWorkflowOutbox { workflow_id } => Done::CancelWorkflowOutbox {
            cancelled: outbox::cancel_workflow_in(tx, workflow_id)?,
        },
        Operation::RearmStaleClaims {
            older_than,
            visible_after,
            limit,
        } => Done::RearmStaleClaims {
            rows: outbox::rearm_in(tx, *older_than, *visible_after, *limit)?,
        },
        Operation::ScheduleTimer {
            workflow_id,
            timer_id,
            fire_at,
        } => {
            timers::schedule_in(tx, workflow_id, timer_id, *fire_at)?;
            Done::ScheduleTimer {}
        }
        Operation::CancelTimer {
            workflow_id,
            timer_id,
        } => Done::CancelTimer {
            removed: timers::cancel_in(tx, workflow_id, timer_id)?,
        },
        Operation::CompareAndSwapCheckpoint {
            checkpoint,
            expected_revision,
        } => {
            checkpoints::compare_and_swap_in(tx, checkpoint, *expected_revision)?;
            Done::CompareAndSwapCheckpoint {
                revision: checkpoint.revision,
            }
        }
        Operation::CompareAndSwapEffect {
            record,
            expected_revision,
        } => {
            effects::compare_and_swap_in(tx, record, *expected_revision)?;
            Done::CompareAndSwapEffect {
                revision: record.revision,
            }
        }
        Operation::UpsertVisibility { record } => {
            visibility::upsert_in(tx, record)?;
            Done::UpsertVisibility {}
        }
        Operation::RecordRunEvent { event } => {
            run_journal::record_in(tx, event)?;
            Done::RecordRunEvent {}
        }
        Operation::SaveConversation {
            state,
            expected_revision,
        } => {
            conversations::save_in(tx, state, *expected_revision)?;
            Done::SaveConversation {
                revision: state.revision,
            }
        }
        Operation::PutArtifact { artifact, now } => Done::PutArtifact {
            artifact: artifacts::put_in(tx, artifact, *now)?,
        },
        Operation::DeleteArtifact { scope, artifact_id } => Done::DeleteArtifact {
            deleted: artifacts::delete_in(tx, scope, artifact_id)?,
        },
        Operation::PurgeWorkflows {
            closed_before,
            limit,
        } => Done::PurgeWorkflows {
            counts: retention::purge_in(tx, *closed_before, *limit)?,
        },
        Operation::PurgeExpiredArtifacts { now } => Done::PurgeExpiredArtifacts {
            purged: artifacts::purge_expired_in(tx, *now)?,
        },
        Operation::RegisterNamespace { name, origin, now } => Done::RegisterNamespace {
            outcome: namespaces::register_in(tx, name, *origin, *now)?,
        },
        Operation::PutNamespace { record } => Done::PutNamespace {
            outcome: namespaces::put_in(tx, record)?,
        },
        Operation::SetNamespacePlacement { name, placement } => {
            namespaces::set_placement_in(tx, name, placement)?;
            Done::SetNamespacePlacement {}
        }
        Operation::DeprecateNamespace { name } => Done::DeprecateNamespace {
            deprecated: namespaces::deprecate_in(tx, name)?,
        },
        Operation::PutPackage {
            record,
            member_types,
        } => {
            packages::put_in(tx, record, member_types.as_deref().unwrap_or_default())?;
            Done::PutPackage {}
        }
        Operation::DeletePackage {
            workflow_type,
            content_hash,
        } => Done::DeletePackage {
            dropped_routes: packages::delete_in(tx, workflow_type, content_hash)?,
        },
        Operation::SetPackageRoute {
            workflow_type,
            content_hash,
        } => {
            packages::set_route_in(tx, workflow_type, content_hash)?;
            Done::SetPackageRoute {}
        }
    })
}

/// Reserves the request's id, or decides it from the log: `None` when the request must be
/// applied (the row's seq in `reserved`), the replay otherwise.
fn reserve_or_replay(
    tx: &mut Tx<'_>,
    key: &RequestKey,
    reserved: &mut Option<i64>,
) -> Result<Option<StepOutcome>> {
    if let Some(found) = recorded(tx, &key.id)? {
        return replayed(decide(&key.id, &key.fingerprint, Some(found))?);
    }
    match reserve(tx, &key.id, &key.fingerprint)? {
        Some(seq) => {
            *reserved = Some(seq);
            Ok(None)
        }
        None => {
            let found = recorded(tx, &key.id)?.ok_or_else(|| Error::Backend {
                message: format!("request {} was reserved, yet it is not recorded", key.id),
            })?;
            replayed(decide(&key.id, &key.fingerprint, Some(found))?)
        }
    }
}

fn replayed(decision: Decision) -> Result<Option<StepOutcome>> {
    match decision {
        Decision::Replay(outcome) => Ok(Some(outcome)),
        Decision::Apply => Ok(None),
    }
}

fn commit_in(
    tx: &mut Tx<'_>,
    request: Option<&RequestKey>,
    operations: &[Operation],
) -> Result<StepOutcome> {
    let mut reserved = None;
    if let Some(key) = request {
        if let Some(outcome) = reserve_or_replay(tx, key, &mut reserved)? {
            return Ok(outcome);
        }
    }
    let outcomes = operations
        .iter()
        .enumerate()
        .map(|(index, operation)| apply(tx, operation).map_err(|error| error.in_operation(index)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(seq) = reserved {
        record(tx, seq, &outcomes)?;
    }
    Ok(StepOutcome {
        outcomes,
        replayed: false,
    })
}

impl StepStore for PgStore {
    fn commit_request(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
    ) -> Result<StepOutcome> {
        check_step(request.map(|key| key.id.as_str()), operations)?;
        self.write(|tx| commit_in(tx, request, operations))
    }

    fn request_outcome(&self, request_id: &str) -> Result<Option<RequestRecord>> {
        check_id("requestId", request_id)?;
        self.read(|client| Ok(recorded(client, request_id)?.map(|(_, record)| record)))
    }
}
