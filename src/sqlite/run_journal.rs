//! SQL of the agent-run journal (table `run_events`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, OptionalExtension};

use super::paging::{self, Listing};

use super::SqliteStore;
use crate::backend::checks::{check_id, encode_document, from_sql_int, to_sql_int};
use crate::error::{Error, Result};
use crate::model::run_journal::*;
use crate::model::{Page, PageRequest};

/// The conflict of an event whose id or (run, sequence) is taken. Stored events are never
/// changed or deleted, so the row that blocked the insert is still there to be named.
fn duplicate(conn: &rusqlite::Connection, event: &RunEvent) -> Result<Error> {
    let id_taken = conn
        .prepare_cached("SELECT 1 FROM run_events WHERE event_id = ?1")?
        .query_row([&event.event_id], |_| Ok(()))
        .optional()?
        .is_some();
    let (entity, id) = if id_taken {
        ("run event", event.event_id.clone())
    } else {
        (
            "run event sequence",
            format!("{}:{}", event.run_id, event.sequence),
        )
    };
    Ok(Error::Conflict {
        entity,
        id,
        expected: None,
        actual: Some(0),
    })
}

impl RunJournal for SqliteStore {
    fn record_run_event(&self, event: &RunEvent) -> Result<()> {
        alone!(self, Operation::RecordRunEvent { event: event.clone() }, Done::RecordRunEvent {} => ());
        check_id("eventId", &event.event_id)?;
        check_id("runId", &event.run_id)?;
        let sequence = to_sql_int("sequence", event.sequence)?;
        let data = encode_document("data", &event.data)?;
        // One statement: atomic without an explicit transaction.
        let inserted = self
            .conn()
            .prepare_cached(
                "INSERT INTO run_events (event_id, run_id, sequence, recorded_at, data)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                event.event_id,
                event.run_id,
                sequence,
                event.recorded_at,
                data
            ])?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(duplicate(self.conn(), event)?)
        }
    }

    fn read_run_events(&self, run_id: &str, page: &PageRequest) -> Result<Page<RunEvent>> {
        check_id("runId", run_id)?;
        RUN_EVENTS.read(
            self.conn(),
            "SELECT event_id, sequence, recorded_at, data FROM run_events WHERE run_id = ?",
            vec![paging::text(run_id)],
            page,
            |row| {
                let data: String = row.get(3)?;
                Ok(RunEvent {
                    event_id: row.get(0)?,
                    run_id: run_id.to_owned(),
                    sequence: from_sql_int("sequence", row.get(1)?)?,
                    recorded_at: row.get(2)?,
                    data: serde_json::from_str(&data)?,
                })
            },
            // Stored sequences fit in i64: they were checked on the way in.
            |event| vec![SqlValue::Integer(event.sequence as i64)],
        )
    }

    fn list_run_ids(&self, page: &PageRequest) -> Result<Page<String>> {
        RUN_IDS.read(
            self.conn(),
            "SELECT DISTINCT run_id FROM run_events WHERE 1",
            Vec::new(),
            page,
            |row| Ok(row.get(0)?),
            |id: &String| vec![paging::text(id)],
        )
    }
}

/// A run's events by sequence.
const RUN_EVENTS: Listing = Listing {
    name: "runEvents",
    key: "sequence",
    key_len: 1,
};

/// Run ids.
const RUN_IDS: Listing = Listing {
    name: "runIds",
    key: "run_id",
    key_len: 1,
};
