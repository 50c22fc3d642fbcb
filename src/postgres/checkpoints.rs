//! SQL of agent-run checkpoints (table `checkpoints`) on PostgreSQL, and the compare-and-swap
//! ending shared with conversations.

use postgres::Row;

use super::session::Tx;

use super::paging::{col, Key, KeyKind, Listing};
use super::{to_u64, PgStore};
use crate::backend::checks::{check_id, encode_document};
use crate::backend::revisions::{conflict, next_revision, Target};
use crate::error::{Error, Result};
use crate::model::checkpoints::*;
use crate::model::{Page, PageRequest};

const COLUMNS: &str = "checkpoint_id, run_id, revision, state, updated_at";

fn decode(row: &Row) -> Result<Checkpoint> {
    let state: String = col(row, 3)?;
    Ok(Checkpoint {
        checkpoint_id: col(row, 0)?,
        run_id: col(row, 1)?,
        revision: to_u64("revision", col(row, 2)?)?,
        state: serde_json::from_str(&state)?,
        updated_at: col(row, 4)?,
    })
}

fn target(checkpoint_id: &str) -> Target<'_> {
    Target {
        table: "checkpoints",
        key_column: "checkpoint_id",
        entity: "checkpoint",
        id: checkpoint_id,
    }
}

/// Finishes a single-row compare-and-swap that changed `changed` rows: when it wrote nothing,
/// reports the revision stored now (a statement in the same transaction sees the row that
/// blocked the write, committed).
pub(super) fn written_or_conflict(
    tx: &mut Tx<'_>,
    changed: u64,
    target: &Target<'_>,
    expected: Option<u64>,
) -> Result<()> {
    if changed == 1 {
        return Ok(());
    }
    let row = tx.query_opt(
        &format!(
            "SELECT revision FROM {} WHERE {} = $1",
            target.table, target.key_column
        ),
        &[&target.id],
    )?;
    let actual = row
        .map(|row| to_u64("revision", col(&row, 0)?))
        .transpose()?;
    Err(conflict(target, expected, actual))
}

pub(super) fn compare_and_swap_in(
    tx: &mut Tx<'_>,
    checkpoint: &Checkpoint,
    expected_revision: Option<u64>,
) -> Result<()> {
    let revision = next_revision(checkpoint.revision, expected_revision)?;
    check_id("checkpointId", &checkpoint.checkpoint_id)?;
    if let Some(run_id) = &checkpoint.run_id {
        check_id("runId", run_id)?;
    }
    let state = encode_document("state", &checkpoint.state)?;
    let params: [&(dyn postgres::types::ToSql + Sync); 5] = [
        &checkpoint.checkpoint_id,
        &checkpoint.run_id,
        &revision,
        &state,
        &checkpoint.updated_at,
    ];
    let changed = match expected_revision {
        None => tx.execute(
            &format!(
                "INSERT INTO checkpoints ({COLUMNS}) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT DO NOTHING"
            ),
            &params,
        )?,
        Some(_) => tx.execute(
            "UPDATE checkpoints SET run_id = $2, revision = $3, state = $4, updated_at = $5
             WHERE checkpoint_id = $1 AND revision = $3::bigint - 1",
            &params,
        )?,
    };
    written_or_conflict(
        tx,
        changed,
        &target(&checkpoint.checkpoint_id),
        expected_revision,
    )
}

impl CheckpointStore for PgStore {
    fn load_checkpoint(&self, checkpoint_id: &str) -> Result<Checkpoint> {
        check_id("checkpointId", checkpoint_id)?;
        self.read(|client| {
            client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM checkpoints WHERE checkpoint_id = $1"),
                    &[&checkpoint_id],
                )?
                .map(|row| decode(&row))
                .transpose()?
                .ok_or_else(|| Error::not_found("checkpoint", checkpoint_id))
        })
    }

    fn compare_and_swap_checkpoint(
        &self,
        checkpoint: &Checkpoint,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        next_revision(checkpoint.revision, expected_revision)?;
        self.write(|tx| compare_and_swap_in(tx, checkpoint, expected_revision))
    }

    fn list_run_checkpoints(&self, run_id: &str, page: &PageRequest) -> Result<Page<Checkpoint>> {
        check_id("runId", run_id)?;
        self.read(|client| {
            CHECKPOINTS.read(
                client,
                &format!("SELECT {COLUMNS} FROM checkpoints WHERE run_id = $1"),
                vec![Box::new(run_id.to_owned())],
                page,
                decode,
                |checkpoint| vec![Key::text(&checkpoint.checkpoint_id)],
            )
        })
    }
}

/// A run's checkpoints by id.
const CHECKPOINTS: Listing = Listing {
    name: "runCheckpoints",
    key: "checkpoint_id",
    kinds: &[KeyKind::Text],
};
