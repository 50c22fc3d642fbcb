//! What an imported file must hold beyond the schema: the invariants the store keeps on its
//! own writes. A file that breaks one (edited by hand, written by other code, or damaged in a
//! way SQLite's integrity check cannot see) is refused with [`Error::Corrupt`] naming the rule,
//! before anything of it reaches the store: once imported, the store would build on it (the
//! next append after a head of 5 with no events gets seq 6).

use rusqlite::{Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::backend::events::{decode, Projection};
use crate::backend::hex;
use crate::backend::requests::decode_outcomes;
use crate::error::{clip, Error, Result};
use crate::model::journal::WorkflowStatus;

/// A rule checked by one query, which returns a description of the first row that breaks it.
struct SqlRule {
    name: &'static str,
    first_breach: &'static str,
}

const SQL_RULES: &[SqlRule] = &[
    SqlRule {
        name: "a workflow's head is its number of events, numbered from 1",
        first_breach: "SELECT 'workflow ' || w.workflow_id || ' has head ' || w.head
                         || ' and ' || coalesce(e.n, 0) || ' events up to seq ' || coalesce(e.last, 0)
                       FROM workflows AS w
                       LEFT JOIN (SELECT workflow_id, count(*) AS n, max(seq) AS last
                                  FROM events GROUP BY workflow_id) AS e USING (workflow_id)
                       WHERE w.head != coalesce(e.n, 0) OR w.head != coalesce(e.last, 0)
                       LIMIT 1",
    },
    SqlRule {
        name: "a workflow's head is its number of events: every event belongs to a workflow",
        first_breach: "SELECT 'event ' || seq || ' of workflow ' || workflow_id
                         || ' belongs to no workflow'
                       FROM events WHERE workflow_id NOT IN (SELECT workflow_id FROM workflows)
                       LIMIT 1",
    },
    SqlRule {
        name: "a claimed outbox row holds a claim (a claim time and a token)",
        first_breach: "SELECT 'outbox row ' || dispatch_key || ' is claimed without a claim'
                       FROM outbox
                       WHERE status = 'claimed' AND (claimed_at IS NULL OR claim_token = 0)
                       LIMIT 1",
    },
    SqlRule {
        name: "every claim token came from the store's claim token counter",
        first_breach: "SELECT 'outbox row ' || o.dispatch_key || ' holds claim token '
                         || o.claim_token || ', past the counter''s ' || c.last_token
                       FROM outbox AS o, outbox_claim_counter AS c
                       WHERE o.claim_token > c.last_token
                       LIMIT 1",
    },
    SqlRule {
        name: "a dead letter, and only a dead letter, says why (dead reason)",
        first_breach: "SELECT 'outbox row ' || dispatch_key || ' is ' || status
                         || iif(dead_reason IS NULL, ' without', ' with') || ' a dead reason'
                       FROM outbox
                       WHERE (status = 'failed') != (dead_reason IS NOT NULL)
                       LIMIT 1",
    },
    SqlRule {
        name: "a live outbox row's attempt is below its maximum attempts",
        first_breach: "SELECT 'outbox row ' || dispatch_key || ' is ' || status || ' at attempt '
                         || attempt || ' of at most ' || max_attempts
                       FROM outbox
                       WHERE status IN ('pending', 'claimed') AND attempt >= max_attempts
                       LIMIT 1",
    },
    SqlRule {
        name: "a package route names a stored package",
        first_breach: "SELECT 'the route of ' || workflow_type || ' names package '
                         || content_hash || ', which no package has'
                       FROM package_routes
                       WHERE content_hash NOT IN (SELECT content_hash FROM packages)
                       LIMIT 1",
    },
    SqlRule {
        name: "an artifact's size is its bytes'",
        first_breach: "SELECT 'artifact ' || artifact_id || ' of scope ' || scope || ' says '
                         || size_bytes || ' bytes and holds ' || length(bytes)
                       FROM artifacts WHERE size_bytes != length(bytes)
                       LIMIT 1",
    },
    SqlRule {
        name: "a feed's entries are below its head position",
        first_breach: "SELECT 'entry ' || f.position || ' of feed ' || f.feed || ' is past its head '
                         || coalesce(h.position, 0)
                       FROM sync_feed AS f LEFT JOIN sync_feed_heads AS h USING (feed)
                       WHERE f.position > coalesce(h.position, 0)
                       LIMIT 1",
    },
    SqlRule {
        name: "a synced workflow's agreed head is at most its local head",
        first_breach: "SELECT 'workflow ' || s.workflow_id || ' agrees on head ' || s.head
                         || ' with ' || s.target || ' and has head ' || coalesce(w.head, 0)
                       FROM sync_heads AS s LEFT JOIN workflows AS w USING (workflow_id)
                       WHERE s.state != 'purged' AND s.head > coalesce(w.head, 0)
                       LIMIT 1",
    },
    SqlRule {
        name: "a sync target's mark is not past the store's change clock",
        first_breach: "SELECT 'target ' || t.target || ' has mark ' || t.mark
                         || ', past the clock ' || coalesce(c.clock, 'that does not run')
                       FROM sync_targets AS t
                       LEFT JOIN (SELECT max(floor, coalesce(
                                     (SELECT max(changed) FROM workflows), 0)) AS clock
                                  FROM sync_clock) AS c ON 1
                       WHERE c.clock IS NULL OR t.mark > c.clock
                       LIMIT 1",
    },
    SqlRule {
        name: "the request log's requests belong to its numbered scopes",
        first_breach: "SELECT 'request ' || request_id || ' is in slot ' || slot
                         || ' of scope number ' || scope_number
                       FROM requests
                       WHERE scope_number NOT IN (SELECT scope_number FROM request_scopes)
                          OR slot <= scope_number * (1 << 40)
                          OR slot >= (scope_number + 1) * (1 << 40)
                       LIMIT 1",
    },
];

/// Checks every rule on the database `conn` (the file being imported, migrated).
///
/// # Errors
/// [`Error::Corrupt`] naming the first rule broken and where.
pub(super) fn check_rules(conn: &Connection) -> Result<()> {
    for rule in SQL_RULES {
        let breach: Option<String> = conn
            .query_row(rule.first_breach, [], |row| row.get(0))
            .optional()?;
        if let Some(breach) = breach {
            return Err(broken(rule.name, &breach));
        }
    }
    check_lifecycles(conn)?;
    check_artifact_digests(conn)?;
    check_request_outcomes(conn)
}

fn broken(rule: &str, breach: &str) -> Error {
    Error::Corrupt {
        message: format!(
            "the file breaks the store's rule \"{rule}\": {}",
            clip(breach)
        ),
    }
}

const LIFECYCLE_RULE: &str =
    "events decode and follow their workflow's lifecycle, which its projection row shows";

/// Replays every workflow's events as an append checks them, and compares where they lead
/// with the workflow's projection row.
fn check_lifecycles(conn: &Connection) -> Result<()> {
    let mut events =
        conn.prepare("SELECT workflow_id, seq, event FROM events ORDER BY workflow_id, seq")?;
    let mut rows = events.query([])?;
    let mut current: Option<(String, Projection)> = None;
    while let Some(row) = rows.next()? {
        let workflow_id: String = row.get(0)?;
        let seq: i64 = row.get(1)?;
        if current.as_ref().is_none_or(|(id, _)| *id != workflow_id) {
            if let Some((id, projection)) = current.take() {
                check_projection(conn, &id, &projection)?;
            }
            current = Some((workflow_id.clone(), Projection::new()));
        }
        let Some((_, projection)) = current.as_mut() else {
            continue;
        };
        let blob = row.get_ref(2)?.as_blob().map_err(|_| {
            broken(
                LIFECYCLE_RULE,
                &format!("event {seq} of workflow {workflow_id} is not bytes"),
            )
        })?;
        let event = decode(blob).map_err(|reason| {
            broken(
                LIFECYCLE_RULE,
                &format!("event {seq} of workflow {workflow_id} does not decode: {reason}"),
            )
        })?;
        projection
            .check(&workflow_id, &event)
            .map_err(|error| broken(LIFECYCLE_RULE, &format!("event {seq}: {error}")))?;
        projection.apply(&event);
    }
    if let Some((id, projection)) = current {
        check_projection(conn, &id, &projection)?;
    }
    Ok(())
}

/// Compares a workflow's projection row with where its events lead.
fn check_projection(conn: &Connection, workflow_id: &str, replayed: &Projection) -> Result<()> {
    let stored: Option<(String, Projection)> = conn
        .prepare_cached(
            "SELECT status, workflow_type, run_id, started_at, closed_at, updated_at
             FROM workflows WHERE workflow_id = ?1",
        )?
        .query_row([workflow_id], |row| {
            let projection = Projection {
                workflow_type: row.get(1)?,
                run_id: row.get(2)?,
                started_at: row.get(3)?,
                closed_at: row.get(4)?,
                updated_at: row.get(5)?,
                ..Projection::new()
            };
            Ok((row.get(0)?, projection))
        })
        .optional()?;
    let Some((status, mut stored)) = stored else {
        // The head rule reports events without a workflow.
        return Ok(());
    };
    stored.status = WorkflowStatus::parse(&status).ok_or_else(|| {
        broken(
            LIFECYCLE_RULE,
            &format!("workflow {workflow_id} has status {status}"),
        )
    })?;
    if stored != *replayed {
        return Err(broken(
            LIFECYCLE_RULE,
            &format!(
                "workflow {workflow_id} is {} in its projection row, {} by its events",
                stored.status.as_str(),
                replayed.status.as_str()
            ),
        ));
    }
    Ok(())
}

/// An artifact's digest is the store's SHA-256 of its bytes.
fn check_artifact_digests(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare("SELECT scope, artifact_id, sha256, bytes FROM artifacts")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let digest: String = row.get(2)?;
        if hex(&Sha256::digest(row.get_ref(3)?.as_blob()?)) != digest {
            let id: String = row.get(1)?;
            let scope: String = row.get(0)?;
            return Err(broken(
                "an artifact's digest is the SHA-256 of its bytes",
                &format!("artifact {id} of scope {scope} does not match its digest"),
            ));
        }
    }
    Ok(())
}

/// Every recorded outcome reads back.
fn check_request_outcomes(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare("SELECT request_id, outcomes FROM requests")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let request_id: String = row.get(0)?;
        decode_outcomes(&request_id, row.get_ref(1)?.as_str()?)
            .map_err(|error| broken("the request log reads back", &error.to_string()))?;
    }
    Ok(())
}
