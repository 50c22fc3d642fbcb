//! SQL of the workflow event journal and its status projection (tables `events`,
//! `workflows`) on PostgreSQL.
//!
//! An append locks the workflow's projection row (`FOR UPDATE`) and checks the head under that
//! lock; for a new workflow there is no row to lock, and two first appends both insert event 1:
//! the primary key `(workflow_id, seq)` refuses the second, whose transaction then runs again
//! and finds the winner's head.

use postgres::Row;

use super::session::{Sql, Tx};

use super::outbox::insert_unique;
use super::paging::{col, Key, KeyKind, Listing, Param};
use super::sync_state::next_change_mark;
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::events::{
    check_event, decode, decode_at, encode, Projection, RunChain, LIFECYCLE,
};
use crate::backend::outbox::check_rows;
use crate::error::{Error, Result};
use crate::model::journal::*;
use crate::model::outbox::NewOutboxRow;
use crate::model::{Page, PageRequest};

const SUMMARY_COLUMNS: &str =
    "workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at";

fn summary_from_row(row: &Row) -> Result<WorkflowSummary> {
    let workflow_id: String = col(row, 0)?;
    let status: String = col(row, 2)?;
    Ok(WorkflowSummary {
        head: to_u64("head", col(row, 1)?)?,
        status: WorkflowStatus::parse(&status).ok_or_else(|| Error::Corrupt {
            message: format!("workflow {workflow_id} has unknown status {status}"),
        })?,
        workflow_type: col(row, 3)?,
        run_id: col(row, 4)?,
        started_at: col(row, 5)?,
        closed_at: col(row, 6)?,
        updated_at: col(row, 7)?,
        workflow_id,
    })
}

/// Validates and encodes events before any statement runs.
fn encode_events<'e>(workflow_id: &str, events: &'e [Event]) -> Result<Vec<(Vec<u8>, &'e Event)>> {
    check_id("workflowId", workflow_id)?;
    events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            check_event(i, event)?;
            Ok((encode(i, event)?, event))
        })
        .collect()
}

/// The append with its outbox rows inside the caller's transaction; checks every input
/// first. Returns the new head.
pub(super) fn append_in(
    tx: &mut Tx<'_>,
    workflow_id: &str,
    events: &[Event],
    expected_seq: u64,
    outbox: &[NewOutboxRow],
) -> Result<u64> {
    let encoded = encode_events(workflow_id, events)?;
    check_rows(outbox)?;
    let head = append_encoded(tx, workflow_id, &encoded, expected_seq)?;
    if !outbox.is_empty() {
        insert_unique(tx, outbox)?;
    }
    Ok(head)
}

fn append_encoded(
    tx: &mut Tx<'_>,
    workflow_id: &str,
    encoded: &[(Vec<u8>, &Event)],
    expected_seq: u64,
) -> Result<u64> {
    let stored = tx
        .query_opt(
            &format!("SELECT {SUMMARY_COLUMNS} FROM workflows WHERE workflow_id = $1 FOR UPDATE"),
            &[&workflow_id],
        )?
        .map(|row| summary_from_row(&row))
        .transpose()?;
    let actual = stored.as_ref().map_or(0, |s| s.head);
    if actual != expected_seq {
        return Err(Error::SequenceConflict {
            workflow_id: workflow_id.to_owned(),
            expected: expected_seq,
            actual,
        });
    }
    if encoded.is_empty() {
        return Ok(actual);
    }
    let mut projection = stored.map_or_else(Projection::new, |s| Projection {
        status: s.status,
        workflow_type: s.workflow_type,
        run_id: s.run_id,
        started_at: s.started_at,
        closed_at: s.closed_at,
        updated_at: s.updated_at,
    });
    // One multi-row INSERT: the events travel in one round trip as parallel arrays.
    let mut seqs = Vec::with_capacity(encoded.len());
    let mut kinds = Vec::with_capacity(encoded.len());
    let mut times = Vec::with_capacity(encoded.len());
    let mut blobs: Vec<&[u8]> = Vec::with_capacity(encoded.len());
    let mut seq = actual;
    for (blob, event) in encoded {
        // Checked as the projection advances, so that a batch is judged event by event.
        projection.check(workflow_id, event)?;
        seq += 1;
        seqs.push(to_i64("seq", seq)?);
        kinds.push(event.kind.name());
        times.push(event.recorded_at);
        blobs.push(blob);
        projection.apply(event);
    }
    tx.execute(
        "INSERT INTO events (workflow_id, seq, kind, recorded_at, event)
         SELECT $1, s, k, r, e FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bytea[])
           AS t(s, k, r, e)",
        &[&workflow_id, &seqs, &kinds, &times, &blobs],
    )?;
    // While a sync target exists, the workflow takes the store's next change mark.
    let changed = next_change_mark(tx)?;
    tx.execute(
        "INSERT INTO workflows (workflow_id, head, status, workflow_type, run_id, started_at,
           closed_at, updated_at, changed)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (workflow_id) DO UPDATE SET head = excluded.head, status = excluded.status,
           workflow_type = excluded.workflow_type, run_id = excluded.run_id,
           started_at = excluded.started_at, closed_at = excluded.closed_at,
           updated_at = excluded.updated_at,
           changed = coalesce(excluded.changed, workflows.changed)",
        &[
            &workflow_id,
            &to_i64("seq", seq)?,
            &projection.status.as_str(),
            &projection.workflow_type,
            &projection.run_id,
            &projection.started_at,
            &projection.closed_at,
            &projection.updated_at,
            &changed,
        ],
    )?;
    Ok(seq)
}

/// A workflow's events by seq.
const HISTORY: Listing = Listing {
    name: "history",
    key: "seq",
    kinds: &[KeyKind::Int],
};

/// Workflow ids, whatever the status condition.
const WORKFLOW_IDS: Listing = Listing {
    name: "workflowIds",
    key: "workflow_id",
    kinds: &[KeyKind::Text],
};

/// Summaries newest start first, never-started last, as one ascending key.
const SUMMARIES: Listing = Listing {
    name: "workflowSummaries",
    key: "(CASE WHEN started_at IS NULL THEN 1 ELSE 0 END)::bigint, coalesce(-started_at, 0), \
          workflow_id",
    kinds: &[KeyKind::Int, KeyKind::Int, KeyKind::Text],
};

/// A row of `(seq, event)` as the workflow's stored event.
pub(super) fn decode_row_event(workflow_id: &str, row: &Row) -> Result<StoredEvent> {
    let seq = to_u64("seq", col(row, 0)?)?;
    let blob: &[u8] = col(row, 1)?;
    Ok(StoredEvent {
        seq,
        event: decode_at(workflow_id, seq, blob)?,
    })
}

fn head_of(client: &mut impl Sql, workflow_id: &str) -> Result<u64> {
    let head = client.query_opt(
        "SELECT head FROM workflows WHERE workflow_id = $1",
        &[&workflow_id],
    )?;
    head.map_or(Ok(0), |row| to_u64("head", col(&row, 0)?))
}

impl PgStore {
    fn read_events(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<Page<StoredEvent>> {
        check_id("workflowId", workflow_id)?;
        let from: Param = Box::new(to_i64("fromSeq", from_seq)?);
        self.read(|client| {
            HISTORY.read(
                client,
                "SELECT seq, event FROM events WHERE workflow_id = $1 AND seq >= $2",
                vec![Box::new(workflow_id.to_owned()), from],
                page,
                |row| {
                    let seq = to_u64("seq", col(row, 0)?)?;
                    let blob: &[u8] = col(row, 1)?;
                    Ok(StoredEvent {
                        seq,
                        event: decode_at(workflow_id, seq, blob)?,
                    })
                },
                |event| vec![Key::Int(event.seq as i64)],
            )
        })
    }

    fn ids_where_status(&self, condition: &str, page: &PageRequest) -> Result<Page<String>> {
        self.read(|client| {
            WORKFLOW_IDS.read(
                client,
                &format!("SELECT workflow_id FROM workflows WHERE {condition}"),
                Vec::new(),
                page,
                |row| col(row, 0),
                |id: &String| vec![Key::text(id)],
            )
        })
    }
}

impl EventJournal for PgStore {
    fn append(&self, workflow_id: &str, events: &[Event], expected_seq: u64) -> Result<u64> {
        self.append_with_outbox(workflow_id, events, expected_seq, &[])
    }

    fn append_with_outbox(
        &self,
        workflow_id: &str,
        events: &[Event],
        expected_seq: u64,
        outbox: &[NewOutboxRow],
    ) -> Result<u64> {
        self.write(|tx| append_in(tx, workflow_id, events, expected_seq, outbox))
    }

    fn read_history(&self, workflow_id: &str, page: &PageRequest) -> Result<Page<StoredEvent>> {
        self.read_events(workflow_id, 0, page)
    }

    fn read_history_from(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<Page<StoredEvent>> {
        self.read_events(workflow_id, from_seq, page)
    }

    fn head(&self, workflow_id: &str) -> Result<u64> {
        check_id("workflowId", workflow_id)?;
        self.read(|client| head_of(client, workflow_id))
    }

    fn list_workflow_ids(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("TRUE", page)
    }

    fn list_active(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("status NOT IN ('completed', 'failed', 'cancelled')", page)
    }

    fn list_paused(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("status = 'paused'", page)
    }

    fn workflow_summary(&self, workflow_id: &str) -> Result<WorkflowSummary> {
        check_id("workflowId", workflow_id)?;
        self.read(|client| {
            client
                .query_opt(
                    &format!("SELECT {SUMMARY_COLUMNS} FROM workflows WHERE workflow_id = $1"),
                    &[&workflow_id],
                )?
                .map(|row| summary_from_row(&row))
                .transpose()?
                .ok_or_else(|| Error::not_found("workflow", workflow_id))
        })
    }

    fn query_workflows(
        &self,
        query: &WorkflowQuery,
        page: &PageRequest,
    ) -> Result<Page<WorkflowSummary>> {
        crate::backend::events::check_query(query)?;
        let params: Vec<Param> = vec![
            Box::new(query.status.map(|s| s.as_str().to_owned())),
            Box::new(query.workflow_type.clone()),
            Box::new(query.started_after),
            Box::new(query.started_before),
        ];
        self.read(|client| {
            SUMMARIES.read(
                client,
                &format!(
                    "SELECT {SUMMARY_COLUMNS} FROM workflows
                     WHERE ($1::text IS NULL OR status = $1)
                       AND ($2::text IS NULL OR workflow_type = $2)
                       AND ($3::bigint IS NULL OR started_at >= $3)
                       AND ($4::bigint IS NULL OR started_at < $4)"
                ),
                params,
                page,
                summary_from_row,
                |summary| {
                    let started_at = summary.started_at;
                    vec![
                        Key::Int(i64::from(started_at.is_none())),
                        // The same expression as the key's `coalesce(-started_at, 0)`.
                        Key::Int(started_at.map_or(0, i64::wrapping_neg)),
                        Key::text(&summary.workflow_id),
                    ]
                },
            )
        })
    }

    fn read_run_chain(&self, workflow_id: &str) -> Result<Vec<RunSummary>> {
        check_id("workflowId", workflow_id)?;
        let kinds: Vec<&str> = LIFECYCLE.to_vec();
        // One snapshot for the head and the lifecycle events, even while others append.
        let (head, rows) = self.write(|tx| {
            tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
            let head = head_of(tx, workflow_id)?;
            let rows = tx.query(
                "SELECT seq, event FROM events
                 WHERE workflow_id = $1 AND kind = ANY($2::text[]) ORDER BY seq",
                &[&workflow_id, &kinds],
            )?;
            Ok((head, rows))
        })?;
        let mut chain = RunChain::default();
        for row in &rows {
            let seq = to_u64("seq", col(row, 0)?)?;
            chain.push(seq, head, decode_at(workflow_id, seq, col(row, 1)?)?);
        }
        Ok(chain.runs)
    }

    fn find_undecodable_event(&self) -> Result<Option<UndecodableEvent>> {
        // In pages by (workflow_id, seq), so that a large journal is never held whole. Ids are
        // never empty, so ("", 0) sorts before every event (bytewise, COLLATE "C").
        const BATCH: i64 = 1000;
        let mut after: (String, i64) = (String::new(), 0);
        loop {
            let rows = self.read(|client| {
                client.query(
                    "SELECT workflow_id, seq, event FROM events
                     WHERE (workflow_id, seq) > ($1, $2)
                     ORDER BY workflow_id, seq LIMIT $3",
                    &[&after.0, &after.1, &BATCH],
                )
            })?;
            for row in &rows {
                if let Err(reason) = decode(col(row, 2)?) {
                    return Ok(Some(UndecodableEvent {
                        workflow_id: col(row, 0)?,
                        seq: to_u64("seq", col(row, 1)?)?,
                        reason,
                    }));
                }
            }
            match rows.last() {
                Some(last) if rows.len() as i64 == BATCH => {
                    after = (col(last, 0)?, col(last, 1)?);
                }
                _ => return Ok(None),
            }
        }
    }
}
