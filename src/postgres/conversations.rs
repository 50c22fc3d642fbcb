//! SQL of conversation state (table `conversations`) on PostgreSQL.

use super::session::Tx;

use super::checkpoints::written_or_conflict;
use super::paging::col;
use super::{to_u64, PgStore};
use crate::backend::checks::{check_id, check_size, MAX_BLOB_BYTES};
use crate::backend::revisions::{next_revision, Target};
use crate::error::{Error, Result};
use crate::model::conversations::*;

fn target(conversation_id: &str) -> Target<'_> {
    Target {
        table: "conversations",
        key_column: "conversation_id",
        entity: "conversation",
        id: conversation_id,
    }
}

pub(super) fn save_in(
    tx: &mut Tx<'_>,
    state: &ConversationState,
    expected_revision: Option<u64>,
) -> Result<()> {
    let revision = next_revision(state.revision, expected_revision)?;
    check_id("conversationId", &state.conversation_id)?;
    check_size("state", state.state.len(), MAX_BLOB_BYTES)?;
    let format_version = i64::from(state.format_version);
    let params: [&(dyn postgres::types::ToSql + Sync); 5] = [
        &state.conversation_id,
        &revision,
        &format_version,
        &state.updated_at,
        &state.state,
    ];
    let changed = match expected_revision {
        None => tx.execute(
            "INSERT INTO conversations (conversation_id, revision, format_version, updated_at, state)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &params,
        )?,
        Some(_) => tx.execute(
            "UPDATE conversations SET revision = $2, format_version = $3, updated_at = $4, state = $5
             WHERE conversation_id = $1 AND revision = $2::bigint - 1",
            &params,
        )?,
    };
    written_or_conflict(
        tx,
        changed,
        &target(&state.conversation_id),
        expected_revision,
    )
}

impl ConversationStore for PgStore {
    fn load_conversation(&self, conversation_id: &str) -> Result<Option<ConversationState>> {
        check_id("conversationId", conversation_id)?;
        let row = self.read(|client| {
            client.query_opt(
                "SELECT revision, format_version, updated_at, state FROM conversations
                 WHERE conversation_id = $1",
                &[&conversation_id],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let format_version: i64 = col(&row, 1)?;
        Ok(Some(ConversationState {
            conversation_id: conversation_id.to_owned(),
            revision: to_u64("revision", col(&row, 0)?)?,
            format_version: u32::try_from(format_version).map_err(|_| Error::Corrupt {
                message: format!(
                    "column format_version holds {format_version}, outside 0..=2^32-1"
                ),
            })?,
            updated_at: col(&row, 2)?,
            state: col(&row, 3)?,
        }))
    }

    fn save_conversation(
        &self,
        state: &ConversationState,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        next_revision(state.revision, expected_revision)?;
        self.write(|tx| save_in(tx, state, expected_revision))
    }
}
