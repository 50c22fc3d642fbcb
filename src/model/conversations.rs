//! Conversation state: one versioned blob per conversation, saved under a revision check.

use serde::{Deserialize, Serialize};

use super::Millis;
use crate::error::Result;

/// The state of one conversation as saved and loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationState {
    pub conversation_id: String,
    /// 0 when created; each successful save writes the stored revision + 1.
    pub revision: u64,
    /// The version of the caller's encoding of `state`, stored as given so a reader can
    /// migrate old blobs.
    pub format_version: u32,
    #[serde(with = "crate::model::bytes")]
    pub state: Vec<u8>,
    pub updated_at: Millis,
}

/// Conversation state.
pub trait ConversationStore {
    /// The saved state, `None` when the conversation has none yet (a new conversation is an
    /// ordinary case, not an error).
    fn load_conversation(&self, conversation_id: &str) -> Result<Option<ConversationState>>;

    /// Saves `state` when the stored revision is `expected_revision`, atomically:
    /// `None` creates the conversation's state at revision 0; `Some(n)` replaces a state
    /// stored at revision `n` with one at revision `n + 1`.
    ///
    /// # Errors
    /// - [`crate::Error::Conflict`] (entity `"conversation"`) when the stored revision is not
    ///   the expected one, with `expected` and `actual` (`None`: no state stored).
    /// - [`crate::Error::InvalidInput`] when `state.revision` is not 0 (create) or
    ///   `expected_revision + 1` (update), for an empty or oversized id, or for a blob over
    ///   [`crate::MAX_BLOB_BYTES`].
    ///
    /// Nothing is written on any error.
    fn save_conversation(
        &self,
        state: &ConversationState,
        expected_revision: Option<u64>,
    ) -> Result<()>;
}
