//! SQL of conversation state (table `conversations`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::{params, OptionalExtension};

use super::revisions::commit_if_written;
use super::SqliteStore;
use crate::backend::checks::{check_id, check_size, from_sql_int, MAX_BLOB_BYTES};
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

fn format_version_from(value: i64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::Corrupt {
        message: format!("column format_version holds {value}, outside 0..=2^32-1"),
    })
}

impl ConversationStore for SqliteStore {
    fn load_conversation(&self, conversation_id: &str) -> Result<Option<ConversationState>> {
        check_id("conversationId", conversation_id)?;
        let row = self
            .conn()
            .prepare_cached(
                "SELECT revision, format_version, updated_at, state FROM conversations
                 WHERE conversation_id = ?1",
            )?
            .query_row([conversation_id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get(2)?,
                    row.get(3)?,
                ))
            })
            .optional()?;
        let Some((revision, format_version, updated_at, state)) = row else {
            return Ok(None);
        };
        Ok(Some(ConversationState {
            conversation_id: conversation_id.to_owned(),
            revision: from_sql_int("revision", revision)?,
            format_version: format_version_from(format_version)?,
            state,
            updated_at,
        }))
    }

    fn save_conversation(
        &self,
        state: &ConversationState,
        expected_revision: Option<u64>,
    ) -> Result<()> {
        alone!(self, Operation::SaveConversation { state: state.clone(), expected_revision }, Done::SaveConversation { .. } => ());
        let revision = next_revision(state.revision, expected_revision)?;
        check_id("conversationId", &state.conversation_id)?;
        check_size("state", state.state.len(), MAX_BLOB_BYTES)?;
        let values = params![
            state.conversation_id,
            revision,
            state.format_version,
            state.updated_at,
            state.state
        ];
        let tx = self.write_tx()?;
        let changed = match expected_revision {
            None => tx
                .prepare_cached(
                    "INSERT INTO conversations
                       (conversation_id, revision, format_version, updated_at, state)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                )?
                .execute(values)?,
            // The expected revision is revision - 1, checked by next_revision.
            Some(_) => tx
                .prepare_cached(
                    "UPDATE conversations
                     SET revision = ?2, format_version = ?3, updated_at = ?4, state = ?5
                     WHERE conversation_id = ?1 AND revision = ?2 - 1",
                )?
                .execute(values)?,
        };
        commit_if_written(
            tx,
            changed,
            &target(&state.conversation_id),
            expected_revision,
        )
    }
}
