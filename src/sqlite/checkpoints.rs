//! SQL of agent-run checkpoints (table `checkpoints`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::{params, OptionalExtension, Row};

use super::paging::{self, Listing};
use super::revisions::commit_if_written;
use super::SqliteStore;
use std::fmt::Write;

use crate::backend::checks::{check_id, encode_document, from_sql_int};
use crate::backend::revisions::{next_revision, Target};
use crate::error::{Error, Result};
use crate::model::checkpoints::*;
use crate::model::journal::{check_exact_integer, check_exact_json};
use crate::model::{Page, PageRequest};

/// The columns every query reads and writes, in [`raw_from_row`]'s order.
macro_rules! columns {
    () => {
        "checkpoint_id, run_id, revision, state, updated_at"
    };
}

/// A checkpoint row with its state still encoded, decoded outside the row callback so that a
/// decoding failure keeps its own error.
struct RawCheckpoint {
    checkpoint_id: String,
    run_id: Option<String>,
    revision: i64,
    state: String,
    updated_at: i64,
}

fn raw_from_row(row: &Row<'_>) -> rusqlite::Result<RawCheckpoint> {
    Ok(RawCheckpoint {
        checkpoint_id: row.get(0)?,
        run_id: row.get(1)?,
        revision: row.get(2)?,
        state: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

fn decode(raw: RawCheckpoint) -> Result<Checkpoint> {
    Ok(Checkpoint {
        revision: from_sql_int("revision", raw.revision)?,
        state: serde_json::from_str(&raw.state)?,
        checkpoint_id: raw.checkpoint_id,
        run_id: raw.run_id,
        updated_at: raw.updated_at,
    })
}

/// Appends the JSON of the checkpoint `raw` to `out`: its stored state copied in once it is
/// checked as JSON whose numbers JS reads exactly, so that the state is never built as a value.
fn push_checkpoint_json(out: &mut String, raw: &RawCheckpoint) -> Result<()> {
    let revision = from_sql_int("revision", raw.revision)?;
    let checked = check_exact_json(raw.state.as_bytes())
        .and_then(|()| check_exact_integer(raw.revision))
        .and_then(|()| check_exact_integer(raw.updated_at));
    checked.map_err(|reason| Error::Serialization {
        message: format!("checkpoint {}: {reason}", raw.checkpoint_id),
    })?;
    out.push_str("{\"checkpointId\":");
    out.push_str(&serde_json::to_string(&raw.checkpoint_id)?);
    out.push_str(",\"runId\":");
    out.push_str(&serde_json::to_string(&raw.run_id)?);
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        ",\"revision\":{revision},\"state\":{},\"updatedAt\":{}}}",
        raw.state, raw.updated_at
    );
    Ok(())
}

/// The compare-and-swap update of a checkpoint whose run stays `?2`.
const SAME_RUN_UPDATE: &str = "UPDATE checkpoints SET revision = ?3, state = ?4, updated_at = ?5
     WHERE checkpoint_id = ?1 AND revision = ?3 - 1 AND run_id IS ?2";

/// The compare-and-swap update that may move a checkpoint to another run.
const UPDATE: &str =
    "UPDATE checkpoints SET run_id = ?2, revision = ?3, state = ?4, updated_at = ?5
     WHERE checkpoint_id = ?1 AND revision = ?3 - 1";

fn target(checkpoint_id: &str) -> Target<'_> {
    Target {
        table: "checkpoints",
        key_column: "checkpoint_id",
        entity: "checkpoint",
        id: checkpoint_id,
    }
}

/// Checks the ids and encodes the state, before any lock is taken.
fn encode_state(checkpoint: &Checkpoint) -> Result<String> {
    check_id("checkpointId", &checkpoint.checkpoint_id)?;
    if let Some(run_id) = &checkpoint.run_id {
        check_id("runId", run_id)?;
    }
    encode_document("state", &checkpoint.state)
}

impl CheckpointStore for SqliteStore {
    fn load_checkpoint(&self, checkpoint_id: &str) -> Result<Checkpoint> {
        self.load_raw_checkpoint(checkpoint_id)?
            .map(decode)
            .transpose()?
            .ok_or_else(|| Error::not_found("checkpoint", checkpoint_id))
    }

    fn compare_and_swap_checkpoint(
        &self,
        checkpoint: &Checkpoint,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        alone!(self, Operation::CompareAndSwapCheckpoint { checkpoint: checkpoint.clone(), expected_revision }, Done::CompareAndSwapCheckpoint { .. } => ());
        let revision = next_revision(checkpoint.revision, expected_revision)?;
        let state = encode_state(checkpoint)?;
        let tx = self.write_tx()?;
        let changed = match expected_revision {
            None => tx.prepare_cached(INSERT)?.execute(params![
                checkpoint.checkpoint_id,
                checkpoint.run_id,
                revision,
                state,
                checkpoint.updated_at
            ])?,
            // The expected revision is revision - 1, checked by next_revision.
            Some(_) => {
                let params = params![
                    checkpoint.checkpoint_id,
                    checkpoint.run_id,
                    revision,
                    state,
                    checkpoint.updated_at
                ];
                // Most updates keep the run: an UPDATE that does not name `run_id` leaves the
                // `checkpoints_run` index alone, so the commit writes one page, not two.
                match tx.prepare_cached(SAME_RUN_UPDATE)?.execute(params)? {
                    0 => tx.prepare_cached(UPDATE)?.execute(params)?,
                    changed => changed,
                }
            }
        };
        commit_if_written(
            tx,
            changed,
            &target(&checkpoint.checkpoint_id),
            expected_revision,
        )
    }

    fn list_run_checkpoints(&self, run_id: &str, page: &PageRequest) -> Result<Page<Checkpoint>> {
        let listed = self.list_raw_checkpoints(run_id, page)?;
        Ok(Page {
            items: listed
                .items
                .into_iter()
                .map(decode)
                .collect::<Result<_>>()?,
            next_cursor: listed.next_cursor,
        })
    }

    /// As [`CheckpointStore::load_checkpoint`], as JSON text: the stored state is checked and
    /// copied into it, not decoded.
    ///
    /// # Errors
    /// As [`CheckpointStore::load_checkpoint`]; [`Error::Serialization`] for a stored state
    /// that does not decode, or that holds an integer beyond ±(2^53 − 1).
    fn load_checkpoint_json(&self, checkpoint_id: &str) -> Result<String> {
        let raw = self
            .load_raw_checkpoint(checkpoint_id)?
            .ok_or_else(|| Error::not_found("checkpoint", checkpoint_id))?;
        let mut out = String::with_capacity(raw.state.len() + 128);
        push_checkpoint_json(&mut out, &raw)?;
        Ok(out)
    }

    /// As [`CheckpointStore::list_run_checkpoints`], as JSON text (see
    /// [`SqliteStore::load_checkpoint_json`]).
    ///
    /// # Errors
    /// As [`SqliteStore::load_checkpoint_json`].
    fn list_run_checkpoints_json(&self, run_id: &str, page: &PageRequest) -> Result<String> {
        let listed = self.list_raw_checkpoints(run_id, page)?;
        let mut out = String::from("{\"items\":[");
        for (i, raw) in listed.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_checkpoint_json(&mut out, raw)?;
        }
        out.push_str("],\"nextCursor\":");
        out.push_str(&serde_json::to_string(&listed.next_cursor)?);
        out.push('}');
        Ok(out)
    }
}

impl SqliteStore {
    fn load_raw_checkpoint(&self, checkpoint_id: &str) -> Result<Option<RawCheckpoint>> {
        check_id("checkpointId", checkpoint_id)?;
        Ok(self
            .conn()
            .prepare_cached(LOAD)?
            .query_row([checkpoint_id], raw_from_row)
            .optional()?)
    }

    fn list_raw_checkpoints(
        &self,
        run_id: &str,
        page: &PageRequest,
    ) -> Result<Page<RawCheckpoint>> {
        check_id("runId", run_id)?;
        CHECKPOINTS.read(
            self.conn(),
            LIST,
            vec![paging::text(run_id)],
            page,
            |row| Ok(raw_from_row(row)?),
            |raw| vec![paging::text(&raw.checkpoint_id)],
        )
    }
}

const INSERT: &str = concat!(
    "INSERT INTO checkpoints (",
    columns!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING"
);

const LOAD: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM checkpoints WHERE checkpoint_id = ?1"
);

const LIST: &str = concat!("SELECT ", columns!(), " FROM checkpoints WHERE run_id = ?");

/// A run's checkpoints by id.
const CHECKPOINTS: Listing = Listing {
    name: "runCheckpoints",
    key: "checkpoint_id",
    key_len: 1,
};
