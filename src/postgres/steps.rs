//! SQL of steps and the request log (table `requests`) on PostgreSQL: a step's operations run
//! in one transaction through each area's `*_in` function, and its request id is recorded with
//! the outcomes before that transaction commits.
//!
//! A step reserves its request id (inserts the id's row) before its operations run. A second
//! step under the same id on another connection waits on that row's unique key until the
//! first ends: when the first committed, the second returns the recorded outcomes
//! (`replayed`) without applying anything; when it rolled back, the second runs. Exactly once,
//! decided by the database, as SQLite's write lock decides it.

use std::collections::HashMap;

use super::session::{Sql, Tx};

use super::paging::col;
use super::*;
use crate::backend::checks::check_id;
use crate::backend::requests::check_step;
use crate::backend::requests::{
    check_scope, decide, decode_outcomes, encode_outcomes, outcome_of, Decision,
};
use crate::error::{Error, Result};
use crate::model::steps::*;
use crate::model::Millis;

/// The log deletes what is past a scope's bounds about every this many requests (when a
/// request's `seq` is a multiple of it): the deletes' cost is spread, and a lookup applies the
/// bounds itself, so the rows kept meanwhile read as forgotten.
const PRUNE_EVERY: i64 = 64;

/// How many of a scope's oldest requests a pruning looks at for age.
const AGE_WINDOW: i64 = 4 * PRUNE_EVERY;

/// The fingerprint and outcomes recorded for `request_id` of `scope`, while it is within the
/// scope's window: fewer than [`MAX_KEPT_REQUESTS`] committed requests of the scope after it
/// (counted, not read off `seq`, whose values rolled-back transactions use up too) and less
/// than [`REQUEST_RETENTION_MS`] behind the scope's newest request.
fn recorded(
    client: &mut impl Sql,
    scope: &str,
    request_id: &str,
) -> Result<Option<(String, RequestRecord)>> {
    let kept = to_i64("kept", MAX_KEPT_REQUESTS)?;
    let Some(row) = client.query_opt(
        "SELECT r.fingerprint, r.committed_at, r.outcomes
         FROM requests AS r,
              (SELECT committed_at FROM requests WHERE scope = $1
               ORDER BY seq DESC LIMIT 1) AS newest
         WHERE r.scope = $1 AND r.request_id = $2
           AND r.committed_at >= newest.committed_at - $4
           AND (SELECT count(*) FROM (SELECT 1 FROM requests AS later
                                      WHERE later.scope = $1 AND later.seq > r.seq
                                      LIMIT $3) AS kept) < $3",
        &[&scope, &request_id, &kept, &REQUEST_RETENTION_MS],
    )?
    else {
        return Ok(None);
    };
    let outcomes: String = col(&row, 2)?;
    let mut stored = decode_outcomes(request_id, &outcomes)?;
    let keys = stored.keys();
    let inputs = if keys.is_empty() {
        HashMap::new()
    } else {
        let rows = client.query(
            "SELECT dispatch_key, input FROM outbox WHERE dispatch_key = ANY($1::text[])",
            &[&keys],
        )?;
        rows.iter()
            .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
            .collect::<Result<_>>()?
    };
    let record = RequestRecord {
        request_id: request_id.to_owned(),
        committed_at: col(&row, 1)?,
        outcomes: stored.with_inputs(inputs)?,
    };
    Ok(Some((col(&row, 0)?, record)))
}

/// The latest commit time of a request of `scope` the log has forgotten: deleted, or past the
/// window and not deleted yet. `None` when it has forgotten none.
fn forgotten_through(client: &mut impl Sql, scope: &str) -> Result<Option<Millis>> {
    let kept = to_i64("kept", MAX_KEPT_REQUESTS)?;
    let row = client.query_opt(
        "SELECT greatest(
           (SELECT forgotten_through FROM request_scopes WHERE scope = $1),
           (SELECT max(committed_at) FROM requests WHERE scope = $1 AND seq <= (
              SELECT seq FROM requests WHERE scope = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)),
           (SELECT max(committed_at) FROM requests WHERE scope = $1 AND committed_at < (
              SELECT committed_at FROM requests WHERE scope = $1 ORDER BY seq DESC LIMIT 1) - $3))",
        &[&scope, &kept, &REQUEST_RETENTION_MS],
    )?;
    row.map_or(Ok(None), |row| col(&row, 0))
}

/// Reserves `request_id` of `scope` before the step's operations run: inserts its row
/// (outcomes still empty), or, when a concurrent step holds the id uncommitted, waits for that
/// step to end. Returns the row's seq, or `None` when the id is taken by a committed request
/// (the other step's, or a forgotten one not deleted yet).
fn reserve(tx: &mut Tx<'_>, key: &RequestKey) -> Result<Option<i64>> {
    let row = tx.query_opt(
        "INSERT INTO requests (scope, request_id, fingerprint, outcomes, committed_at)
         VALUES ($1, $2, $3, '[]', 0)
         ON CONFLICT (scope, request_id) DO NOTHING
         RETURNING seq",
        &[&key.scope, &key.id, &key.fingerprint],
    )?;
    row.map(|row| col(&row, 0)).transpose()
}

/// Moves the scope's horizon of forgotten requests up to `through` (never down).
fn forget_through(tx: &mut Tx<'_>, scope: &str, through: Millis) -> Result<()> {
    tx.execute(
        "INSERT INTO request_scopes (scope, forgotten_through) VALUES ($1, $2)
         ON CONFLICT (scope) DO UPDATE
         SET forgotten_through = greatest(request_scopes.forgotten_through,
                                          excluded.forgotten_through)",
        &[&scope, &through],
    )?;
    Ok(())
}

/// Writes the outcomes into the reserved row; returns its commit time.
fn record(tx: &mut Tx<'_>, seq: i64, outcomes: &mut [OperationOutcome]) -> Result<Millis> {
    let row = tx.query_one(
        "UPDATE requests SET outcomes = $2,
           committed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
         WHERE seq = $1
         RETURNING committed_at",
        &[&seq, &encode_outcomes(outcomes)?],
    )?;
    col(&row, 0)
}

/// Runs the step's last operation, a feed entry, together with the record of its request, in
/// one statement ([`sync_feed::record_change_and_request_in`]): the feed is held from that
/// statement to the commit, one round trip shorter than with the record after it. The
/// outcomes are encoded with a placeholder position, the last thing in their text, and the
/// statement writes the text before it, the position and the text after it. Returns the
/// record's commit time.
fn record_with_change(
    tx: &mut Tx<'_>,
    seq: i64,
    outcomes: &mut Vec<OperationOutcome>,
    change: (&str, &str, u64, u64),
) -> Result<Millis> {
    const PLACEHOLDER: u64 = u64::MAX;
    const AFTER: &str = "}]}";
    outcomes.push(OperationOutcome::RecordChange {
        position: PLACEHOLDER,
    });
    let text = encode_outcomes(outcomes)?;
    let before = text
        .strip_suffix(&format!("{PLACEHOLDER}{AFTER}"))
        .ok_or_else(|| Error::Corrupt {
            message: "a step's outcomes do not end with its feed entry's position".into(),
        })?;
    let (position, committed_at) =
        sync_feed::record_change_and_request_in(tx, change, seq, (before, AFTER))?;
    if let Some(OperationOutcome::RecordChange { position: last }) = outcomes.last_mut() {
        *last = position;
    }
    Ok(committed_at)
}

/// Deletes the requests of `scope` past its [`MAX_KEPT_REQUESTS`] newest, and those among its
/// oldest [`AGE_WINDOW`] committed more than [`REQUEST_RETENTION_MS`] before `committed_at`;
/// the scope's horizon moves up to what was deleted.
fn prune(tx: &mut Tx<'_>, scope: &str, committed_at: Millis) -> Result<()> {
    let kept = to_i64("kept", MAX_KEPT_REQUESTS)?;
    let mut deleted = tx.query(
        "DELETE FROM requests WHERE scope = $1 AND seq <= (
           SELECT seq FROM requests WHERE scope = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)
         RETURNING committed_at",
        &[&scope, &kept],
    )?;
    deleted.extend(tx.query(
        "DELETE FROM requests
         WHERE scope = $1
           AND seq IN (SELECT seq FROM requests WHERE scope = $1 ORDER BY seq LIMIT $2)
           AND committed_at < $3
         RETURNING committed_at",
        &[&scope, &AGE_WINDOW, &(committed_at - REQUEST_RETENTION_MS)],
    )?);
    let mut latest = None;
    for row in &deleted {
        latest = latest.max(Some(col::<i64>(row, 0)?));
    }
    if let Some(through) = latest {
        forget_through(tx, scope, through)?;
    }
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
        Operation::SaveSync {
            target,
            client_id,
            cursor,
            mark,
            heads,
        } => {
            sync_state::save_in(tx, target, client_id, *cursor, *mark, heads)?;
            Done::SaveSync {}
        }
        Operation::RecordChange {
            feed,
            workflow_id,
            base,
            head,
        } => Done::RecordChange {
            position: sync_feed::record_change_in(tx, feed, workflow_id, *base, *head)?,
        },
        Operation::CheckLease {
            workflow_id,
            holder,
            epoch,
        } => {
            leases::check_in(tx, workflow_id, holder.as_deref(), *epoch)?;
            Done::CheckLease {}
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
    if let Some(found) = recorded(tx, &key.scope, &key.id)? {
        return replayed(decide(&key.id, &key.fingerprint, Some(found))?);
    }
    if let Some(seq) = reserve(tx, key)? {
        *reserved = Some(seq);
        return Ok(None);
    }
    // Taken: by a step that committed the id meanwhile, or by a forgotten row not deleted
    // yet, which the id is free to replace.
    if let Some(found) = recorded(tx, &key.scope, &key.id)? {
        return replayed(decide(&key.id, &key.fingerprint, Some(found))?);
    }
    tx.execute(
        "DELETE FROM requests WHERE scope = $1 AND request_id = $2",
        &[&key.scope, &key.id],
    )?;
    *reserved = Some(reserve(tx, key)?.ok_or_else(|| Error::Busy {
        message: format!("request {} was taken again while it was replaced", key.id),
    })?);
    Ok(None)
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
    // A step recorded under its id whose last operation is a feed entry (a push) runs that
    // entry with its record (see `record_with_change`).
    let folded = match (reserved, operations.last()) {
        (Some(_), Some(Operation::RecordChange { .. })) => 1,
        _ => 0,
    };
    let (applied, last) = operations.split_at(operations.len() - folded);
    let mut outcomes = applied
        .iter()
        .enumerate()
        .map(|(index, operation)| {
            apply(tx, operation).map_err(|error| operation.name_field(error).in_operation(index))
        })
        .collect::<Result<Vec<_>>>()?;
    if let (Some(seq), Some(key)) = (reserved, request) {
        let committed_at = match last {
            [Operation::RecordChange {
                feed,
                workflow_id,
                base,
                head,
            }] => record_with_change(tx, seq, &mut outcomes, (feed, workflow_id, *base, *head))
                .map_err(|error| error.in_operation(applied.len()))?,
            _ => record(tx, seq, &mut outcomes)?,
        };
        // About every PRUNE_EVERY requests, the scope's rows past its bounds are deleted.
        if seq % PRUNE_EVERY == 0 {
            prune(tx, &key.scope, committed_at)?;
        }
    }
    Ok(StepOutcome {
        outcomes,
        replayed: false,
        change: None,
    })
}

impl StepStore for PgStore {
    fn commit_request(
        &self,
        request: Option<&RequestKey>,
        operations: &[Operation],
    ) -> Result<StepOutcome> {
        check_step(request.map(|key| key.id.as_str()), operations)?;
        if let Some(key) = request {
            check_scope(&key.scope)?;
        }
        self.write(|tx| commit_in(tx, request, operations))
    }

    fn request_outcome_in(&self, scope: &str, request_id: &str) -> Result<RequestOutcome> {
        check_scope(scope)?;
        check_id("requestId", request_id)?;
        // One transaction: the record and the horizon from one snapshot.
        self.write(|tx| {
            tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
            let record = recorded(tx, scope, request_id)?.map(|(_, record)| record);
            let forgotten = match record {
                Some(_) => None,
                None => forgotten_through(tx, scope)?,
            };
            Ok(outcome_of(request_id, record, forgotten))
        })
    }
}
