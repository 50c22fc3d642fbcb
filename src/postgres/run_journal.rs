//! SQL of the agent-run journal (table `run_events`) on PostgreSQL.

use super::session::Tx;

use super::paging::{col, Key, KeyKind, Listing};
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::{check_id, encode_document};
use crate::error::{Error, Result};
use crate::model::run_journal::*;
use crate::model::{Page, PageRequest};

pub(super) fn record_in(tx: &mut Tx<'_>, event: &RunEvent) -> Result<()> {
    check_id("eventId", &event.event_id)?;
    check_id("runId", &event.run_id)?;
    let sequence = to_i64("sequence", event.sequence)?;
    let data = encode_document("data", &event.data)?;
    let inserted = tx.execute(
        "INSERT INTO run_events (event_id, run_id, sequence, recorded_at, data)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        &[
            &event.event_id,
            &event.run_id,
            &sequence,
            &event.recorded_at,
            &data,
        ],
    )?;
    if inserted == 1 {
        return Ok(());
    }
    // Stored events never change, so the row that blocked the insert is there to be named.
    let id_taken = tx
        .query_opt(
            "SELECT 1 FROM run_events WHERE event_id = $1",
            &[&event.event_id],
        )?
        .is_some();
    let (entity, id) = if id_taken {
        ("run event", event.event_id.clone())
    } else {
        (
            "run event sequence",
            format!("{}:{}", event.run_id, event.sequence),
        )
    };
    Err(Error::Conflict {
        entity,
        id,
        expected: None,
        actual: Some(0),
    })
}

impl RunJournal for PgStore {
    fn record_run_event(&self, event: &RunEvent) -> Result<()> {
        check_id("eventId", &event.event_id)?;
        self.write(|tx| record_in(tx, event))
    }

    fn read_run_events(&self, run_id: &str, page: &PageRequest) -> Result<Page<RunEvent>> {
        check_id("runId", run_id)?;
        self.read(|client| {
            RUN_EVENTS.read(
                client,
                "SELECT event_id, sequence, recorded_at, data FROM run_events WHERE run_id = $1",
                vec![Box::new(run_id.to_owned())],
                page,
                |row| {
                    let data: String = col(row, 3)?;
                    Ok(RunEvent {
                        event_id: col(row, 0)?,
                        run_id: run_id.to_owned(),
                        sequence: to_u64("sequence", col(row, 1)?)?,
                        recorded_at: col(row, 2)?,
                        data: serde_json::from_str(&data)?,
                    })
                },
                // Stored sequences fit in i64: they were checked on the way in.
                |event| vec![Key::Int(event.sequence as i64)],
            )
        })
    }

    fn list_run_ids(&self, page: &PageRequest) -> Result<Page<String>> {
        self.read(|client| {
            RUN_IDS.read(
                client,
                "SELECT DISTINCT run_id FROM run_events WHERE TRUE",
                Vec::new(),
                page,
                |row| col(row, 0),
                |id: &String| vec![Key::text(id)],
            )
        })
    }
}

/// A run's events by sequence.
const RUN_EVENTS: Listing = Listing {
    name: "runEvents",
    key: "sequence",
    kinds: &[KeyKind::Int],
};

/// Run ids.
const RUN_IDS: Listing = Listing {
    name: "runIds",
    key: "run_id",
    kinds: &[KeyKind::Text],
};
