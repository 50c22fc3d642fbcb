//! SQL of the workflow event journal and its status projection (tables `events`, `workflows`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::paging::{self, Listing};
use super::sync_state::next_change_mark;
use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::events::{
    check_event, check_query, decode, decode_at, encode, push_event_json, Projection, RunChain,
    LIFECYCLE,
};
use crate::backend::outbox::check_rows as check_outbox_rows;
use crate::error::{Error, Result};
use crate::model::journal::*;
use crate::model::outbox::NewOutboxRow;
use crate::model::{Page, PageRequest};

/// The projection row's columns, in the order [`summary_from_row`] reads them.
macro_rules! summary_columns {
    () => {
        "workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at"
    };
}
const SUMMARY_COLUMNS: &str = summary_columns!();

/// One workflow's projection row; a literal, so that the append's hot path builds no SQL text.
const SELECT_SUMMARY: &str = concat!(
    "SELECT ",
    summary_columns!(),
    " FROM workflows WHERE workflow_id = ?1"
);

/// A summary row as read, with the columns [`finish_summary`] still has to check.
type RawSummary = (WorkflowSummary, String, i64);

fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<RawSummary> {
    let status: String = row.get(2)?;
    let head: i64 = row.get(1)?;
    Ok((
        WorkflowSummary {
            workflow_id: row.get(0)?,
            head: 0,
            status: WorkflowStatus::Pending,
            workflow_type: row.get(3)?,
            run_id: row.get(4)?,
            started_at: row.get(5)?,
            closed_at: row.get(6)?,
            updated_at: row.get(7)?,
        },
        status,
        head,
    ))
}

fn finish_summary((mut summary, status, head): RawSummary) -> Result<WorkflowSummary> {
    summary.head = from_sql_int("head", head)?;
    summary.status = WorkflowStatus::parse(&status).ok_or_else(|| Error::Corrupt {
        message: format!(
            "workflow {} has unknown status {status}",
            summary.workflow_id
        ),
    })?;
    Ok(summary)
}

impl SqliteStore {
    /// The append inside a caller's transaction: checks the head, writes the events and
    /// advances the projection. Returns the new head.
    fn append_in(
        tx: &Connection,
        workflow_id: &str,
        encoded: &[(Vec<u8>, &Event)],
        expected_seq: u64,
    ) -> Result<u64> {
        let stored = tx
            .prepare_cached(SELECT_SUMMARY)?
            .query_row([workflow_id], summary_from_row)
            .optional()?
            .map(finish_summary)
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
        let before = stored.map(|s| Projection {
            status: s.status,
            workflow_type: s.workflow_type,
            run_id: s.run_id,
            started_at: s.started_at,
            closed_at: s.closed_at,
            updated_at: s.updated_at,
        });
        let mut projection = before.clone().unwrap_or_else(Projection::new);
        let mut insert = tx.prepare_cached(
            "INSERT INTO events (workflow_id, seq, kind, recorded_at, event) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut seq = actual;
        for (blob, event) in encoded {
            // Checked as the projection advances, so that a batch is judged event by event.
            projection.check(workflow_id, event)?;
            seq += 1;
            insert.execute(params![
                workflow_id,
                to_sql_int("seq", seq)?,
                event.kind.name(),
                event.recorded_at,
                blob
            ])?;
            projection.apply(event);
        }
        let head = to_sql_int("seq", seq)?;
        // While a sync target exists, the workflow takes the store's next change mark.
        let changed = next_change_mark(tx)?;
        if let Some(before) = before {
            if before.same_run_as(&projection) {
                // Only the head and the time move: an UPDATE that names no indexed column
                // leaves the status, type and close-time indexes untouched, so the commit
                // writes two pages fewer.
                match changed {
                    None => tx.prepare_cached(
                        "UPDATE workflows SET head = ?2, updated_at = ?3 WHERE workflow_id = ?1",
                    )?
                    .execute(params![workflow_id, head, projection.updated_at])?,
                    Some(mark) => tx.prepare_cached(
                        "UPDATE workflows SET head = ?2, updated_at = ?3, changed = ?4
                         WHERE workflow_id = ?1",
                    )?
                    .execute(params![workflow_id, head, projection.updated_at, mark])?,
                };
                return Ok(seq);
            }
        }
        tx.prepare_cached(
            "INSERT INTO workflows (workflow_id, head, status, workflow_type, run_id, started_at, closed_at, updated_at, changed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (workflow_id) DO UPDATE SET head = excluded.head, status = excluded.status,
               workflow_type = excluded.workflow_type, run_id = excluded.run_id,
               started_at = excluded.started_at, closed_at = excluded.closed_at,
               updated_at = excluded.updated_at,
               changed = coalesce(excluded.changed, workflows.changed)",
        )?
        .execute(params![
            workflow_id,
            head,
            projection.status.as_str(),
            projection.workflow_type,
            projection.run_id,
            projection.started_at,
            projection.closed_at,
            projection.updated_at,
            changed
        ])?;
        Ok(seq)
    }

    /// Validates and encodes events before any lock is taken.
    fn encode_events<'e>(
        workflow_id: &str,
        events: &'e [Event],
    ) -> Result<Vec<(Vec<u8>, &'e Event)>> {
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

    /// A page of the workflow's events from `from_seq` on, each row (its seq and stored blob)
    /// turned into a `T` by `item`; `seq_of` gives the seq of a `T`, where the next page starts.
    fn read_event_rows<T>(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
        mut item: impl FnMut(u64, &[u8]) -> Result<T>,
        seq_of: impl Fn(&T) -> u64,
    ) -> Result<Page<T>> {
        check_id("workflowId", workflow_id)?;
        HISTORY.read(
            self.conn(),
            "SELECT seq, event FROM events WHERE workflow_id = ? AND seq >= ?",
            vec![
                paging::text(workflow_id),
                SqlValue::Integer(to_sql_int("fromSeq", from_seq)?),
            ],
            page,
            |row| {
                item(
                    from_sql_int("seq", row.get(0)?)?,
                    row.get_ref(1)?.as_blob()?,
                )
            },
            |t| vec![SqlValue::Integer(seq_of(t) as i64)],
        )
    }

    fn read_events(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<Page<StoredEvent>> {
        self.read_event_rows(
            workflow_id,
            from_seq,
            page,
            |seq, blob| {
                Ok(StoredEvent {
                    seq,
                    event: decode_at(workflow_id, seq, blob)?,
                })
            },
            |event| event.seq,
        )
    }

    fn ids_where_status(&self, sql_condition: &str, page: &PageRequest) -> Result<Page<String>> {
        WORKFLOW_IDS.read(
            self.conn(),
            &format!("SELECT workflow_id FROM workflows WHERE {sql_condition}"),
            Vec::new(),
            page,
            |row| Ok(row.get(0)?),
            |id: &String| vec![paging::text(id)],
        )
    }
}

/// A workflow's events by seq.
const HISTORY: Listing = Listing {
    name: "history",
    key: "seq",
    key_len: 1,
};

/// Workflow ids, whatever the status condition.
const WORKFLOW_IDS: Listing = Listing {
    name: "workflowIds",
    key: "workflow_id",
    key_len: 1,
};

/// Summaries newest start first, never-started last, as one ascending key.
const SUMMARIES: Listing = Listing {
    name: "workflowSummaries",
    key: "started_at IS NULL, coalesce(-started_at, 0), workflow_id",
    key_len: 3,
};

impl EventJournal for SqliteStore {
    /// As [`EventJournal::read_history_from`], as the JSON text of the [`Page`] of
    /// [`StoredEvent`]s (`{"items":[...],"nextCursor":...}`), for a caller that parses JSON
    /// anyway, such as JS: each event's stored text is checked, not decoded into values, and
    /// copied behind its seq. Keys keep their order, and every number reads back exactly as a
    /// JS number.
    ///
    /// # Errors
    /// As [`EventJournal::read_history_from`]; [`Error::Serialization`] for a stored event that
    /// does not decode, or that holds an integer beyond ±(2^53 − 1).
    fn read_history_json(
        &self,
        workflow_id: &str,
        from_seq: u64,
        page: &PageRequest,
    ) -> Result<String> {
        let mut out = String::from("{\"items\":[");
        let listed = self.read_event_rows(
            workflow_id,
            from_seq,
            page,
            |seq, blob| {
                if !out.ends_with('[') {
                    out.push(',');
                }
                push_event_json(&mut out, workflow_id, seq, blob)?;
                Ok((seq, out.len()))
            },
            |&(seq, _)| seq,
        )?;
        // The listing read one row past the page to learn whether another follows.
        if let Some(&(_, end)) = listed.items.last() {
            out.truncate(end);
        }
        out.push_str("],\"nextCursor\":");
        out.push_str(&serde_json::to_string(&listed.next_cursor)?);
        out.push('}');
        Ok(out)
    }

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
        alone!(self, Operation::Append { workflow_id: workflow_id.to_owned(), events: events.to_vec(), expected_seq, outbox: outbox.to_vec() }, Done::Append { head } => head);
        let encoded = Self::encode_events(workflow_id, events)?;
        check_outbox_rows(outbox)?;
        let tx = self.write_tx()?;
        let head = Self::append_in(&tx, workflow_id, &encoded, expected_seq)?;
        if !outbox.is_empty() {
            Self::insert_unique_in(&tx, outbox)?;
        }
        tx.commit()?;
        Ok(head)
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
        let head: Option<i64> = self
            .conn()
            .prepare_cached("SELECT head FROM workflows WHERE workflow_id = ?1")?
            .query_row([workflow_id], |row| row.get(0))
            .optional()?;
        head.map_or(Ok(0), |h| from_sql_int("head", h))
    }

    fn list_workflow_ids(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("1", page)
    }

    fn list_active(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("status NOT IN ('completed', 'failed', 'cancelled')", page)
    }

    fn list_paused(&self, page: &PageRequest) -> Result<Page<String>> {
        self.ids_where_status("status = 'paused'", page)
    }

    fn workflow_summary(&self, workflow_id: &str) -> Result<WorkflowSummary> {
        check_id("workflowId", workflow_id)?;
        self.conn()
            .prepare_cached(SELECT_SUMMARY)?
            .query_row([workflow_id], summary_from_row)
            .optional()?
            .map(finish_summary)
            .transpose()?
            .ok_or_else(|| Error::not_found("workflow", workflow_id))
    }

    fn query_workflows(
        &self,
        query: &WorkflowQuery,
        page: &PageRequest,
    ) -> Result<Page<WorkflowSummary>> {
        check_query(query)?;
        let optional = |value: Option<SqlValue>| value.unwrap_or(SqlValue::Null);
        let page = SUMMARIES.read(
            self.conn(),
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM workflows
                 WHERE (?1 IS NULL OR status = ?1)
                   AND (?2 IS NULL OR workflow_type = ?2)
                   AND (?3 IS NULL OR started_at >= ?3)
                   AND (?4 IS NULL OR started_at < ?4)"
            ),
            vec![
                optional(query.status.map(|s| paging::text(s.as_str()))),
                optional(query.workflow_type.as_deref().map(paging::text)),
                optional(query.started_after.map(SqlValue::Integer)),
                optional(query.started_before.map(SqlValue::Integer)),
            ],
            page,
            |row| Ok(summary_from_row(row)?),
            |(summary, _, _)| {
                let started_at = summary.started_at;
                vec![
                    SqlValue::Integer(i64::from(started_at.is_none())),
                    // The same expression as the key's `coalesce(-started_at, 0)`.
                    SqlValue::Integer(started_at.map_or(0, i64::wrapping_neg)),
                    paging::text(&summary.workflow_id),
                ]
            },
        )?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(finish_summary)
                .collect::<Result<_>>()?,
            next_cursor: page.next_cursor,
        })
    }

    fn read_run_chain(&self, workflow_id: &str) -> Result<Vec<RunSummary>> {
        check_id("workflowId", workflow_id)?;
        // One read transaction: the head and the lifecycle events from one snapshot, even
        // while another connection appends. Dropped at the end, it only ends the read.
        let _snapshot = self.conn().unchecked_transaction()?;
        let head = self.head(workflow_id)?;
        let mut stmt = self.conn().prepare_cached(
            "SELECT seq, event FROM events
             WHERE workflow_id = ?1 AND kind IN (?2, ?3, ?4, ?5, ?6, ?7, ?8) ORDER BY seq",
        )?;
        let mut rows = stmt.query(params![
            workflow_id,
            LIFECYCLE[0],
            LIFECYCLE[1],
            LIFECYCLE[2],
            LIFECYCLE[3],
            LIFECYCLE[4],
            LIFECYCLE[5],
            LIFECYCLE[6]
        ])?;
        let mut chain = RunChain::default();
        while let Some(row) = rows.next()? {
            let seq = from_sql_int("seq", row.get(0)?)?;
            chain.push(
                seq,
                head,
                decode_at(workflow_id, seq, row.get_ref(1)?.as_blob()?)?,
            );
        }
        Ok(chain.runs)
    }

    fn find_undecodable_event(&self) -> Result<Option<UndecodableEvent>> {
        let mut stmt = self
            .conn()
            .prepare("SELECT workflow_id, seq, event FROM events ORDER BY workflow_id, seq")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            if let Err(reason) = decode(row.get_ref(2)?.as_blob()?) {
                return Ok(Some(UndecodableEvent {
                    workflow_id: row.get(0)?,
                    seq: from_sql_int("seq", row.get(1)?)?,
                    reason,
                }));
            }
        }
        Ok(None)
    }
}
