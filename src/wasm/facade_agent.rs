//! The agent-run half of `RunStoreCore`: checkpoints, effects, run journal, artifacts and
//! conversation state. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
use crate::model::fields::in_argument;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    // ----- checkpoints -----

    /// The stored checkpoint; NOT_FOUND when absent.
    #[wasm_bindgen(js_name = loadCheckpoint, unchecked_return_type = "Checkpoint")]
    pub fn load_checkpoint(
        &self,
        #[wasm_bindgen(js_name = checkpointId, unchecked_param_type = "string")]
        checkpoint_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let checkpoint_id: String = input("checkpointId", checkpoint_id)?;
        self.call_json(|s| s.load_checkpoint_json(&checkpoint_id))
    }

    /// Creates (expectedRevision null, revision 0) or updates (revision expected + 1) a checkpoint; CONFLICT when the stored revision differs.
    #[wasm_bindgen(js_name = compareAndSwapCheckpoint, unchecked_return_type = "undefined")]
    pub fn compare_and_swap_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Checkpoint")] checkpoint: JsValue,
        #[wasm_bindgen(js_name = expectedRevision, unchecked_optional_param_type = "number | null")]
        expected_revision: JsValue,
    ) -> Result<JsValue, JsValue> {
        let checkpoint: Checkpoint = input("checkpoint", checkpoint)?;
        let expected_revision: Option<u64> = input("expectedRevision", expected_revision)?;
        self.call_unit(|s| {
            s.compare_and_swap_checkpoint(&checkpoint, expected_revision)
                .map_err(in_argument("checkpoint", &["expectedRevision"]))
        })
    }

    /// A page of the checkpoints of a run, by id.
    #[wasm_bindgen(js_name = listRunCheckpoints, unchecked_return_type = "Page<Checkpoint>")]
    pub fn list_run_checkpoints(
        &self,
        #[wasm_bindgen(js_name = runId, unchecked_param_type = "string")] run_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let run_id: String = input("runId", run_id)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_json(|s| s.list_run_checkpoints_json(&run_id, &page))
    }

    /// `loadCheckpoint` as JSON text, for the main-thread client's worker (see
    /// `RunStoreCore::call_text`); not part of the API, hence the name.
    #[wasm_bindgen(js_name = __checkpointText, skip_typescript)]
    pub fn checkpoint_text(&self, checkpoint_id: JsValue) -> Result<String, JsValue> {
        let checkpoint_id: String = input("checkpointId", checkpoint_id)?;
        self.call_text(|s| s.load_checkpoint_json(&checkpoint_id))
    }

    /// `listRunCheckpoints` as JSON text (see [`RunStoreCore::checkpoint_text`]).
    #[wasm_bindgen(js_name = __runCheckpointsText, skip_typescript)]
    pub fn run_checkpoints_text(&self, run_id: JsValue, page: JsValue) -> Result<String, JsValue> {
        let run_id: String = input("runId", run_id)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_text(|s| s.list_run_checkpoints_json(&run_id, &page))
    }

    // ----- effects -----

    /// One effect record, or null.
    #[wasm_bindgen(js_name = loadEffect, unchecked_return_type = "EffectRecord | null")]
    pub fn load_effect(
        &self,
        #[wasm_bindgen(js_name = effectId, unchecked_param_type = "string")] effect_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let effect_id: String = input("effectId", effect_id)?;
        self.call(|s| s.load_effect(&effect_id))
    }

    /// The effect holding an idempotency key of a capability, or null.
    #[wasm_bindgen(js_name = findEffect, unchecked_return_type = "EffectRecord | null")]
    pub fn find_effect(
        &self,
        #[wasm_bindgen(js_name = capabilityId, unchecked_param_type = "string")]
        capability_id: JsValue,
        #[wasm_bindgen(js_name = idempotencyKey, unchecked_param_type = "string")] idempotency_key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let capability_id: String = input("capabilityId", capability_id)?;
        let idempotency_key: String = input("idempotencyKey", idempotency_key)?;
        self.call(|s| s.find_effect(&capability_id, &idempotency_key))
    }

    /// Creates or updates an effect record under a revision check; IDEMPOTENCY_CONFLICT when its key belongs to another effect.
    #[wasm_bindgen(js_name = compareAndSwapEffect, unchecked_return_type = "undefined")]
    pub fn compare_and_swap_effect(
        &self,
        #[wasm_bindgen(unchecked_param_type = "EffectRecord")] record: JsValue,
        #[wasm_bindgen(js_name = expectedRevision, unchecked_optional_param_type = "number | null")]
        expected_revision: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record: EffectRecord = input("record", record)?;
        let expected_revision: Option<u64> = input("expectedRevision", expected_revision)?;
        self.call_unit(|s| {
            s.compare_and_swap_effect(&record, expected_revision)
                .map_err(in_argument("record", &["expectedRevision"]))
        })
    }

    /// A page of the effects left started or outcome-unknown, to reconcile after a crash.
    #[wasm_bindgen(js_name = listUnresolvedEffects, unchecked_return_type = "Page<EffectRecord>")]
    pub fn list_unresolved_effects(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_unresolved_effects(&page))
    }

    /// A page of the effects in a status (all when null), by id.
    #[wasm_bindgen(js_name = listEffects, unchecked_return_type = "Page<EffectRecord>")]
    pub fn list_effects(
        &self,
        #[wasm_bindgen(unchecked_param_type = "EffectStatusKind | null")] status: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let status: Option<EffectStatusKind> = input("status", status)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_effects(status, &page))
    }

    // ----- run journal -----

    /// Records an agent-run event; CONFLICT for a taken id or (run, sequence).
    #[wasm_bindgen(js_name = recordRunEvent, unchecked_return_type = "undefined")]
    pub fn record_run_event(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RunEvent")] event: JsValue,
    ) -> Result<JsValue, JsValue> {
        let event: RunEvent = input("event", event)?;
        self.call_unit(|s| {
            s.record_run_event(&event)
                .map_err(in_argument("event", &[]))
        })
    }

    /// A page of a run's events in sequence order.
    #[wasm_bindgen(js_name = readRunEvents, unchecked_return_type = "Page<RunEvent>")]
    pub fn read_run_events(
        &self,
        #[wasm_bindgen(js_name = runId, unchecked_param_type = "string")] run_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let run_id: String = input("runId", run_id)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.read_run_events(&run_id, &page))
    }

    /// A page of the run ids with events.
    #[wasm_bindgen(js_name = listRunIds, unchecked_return_type = "Page<string>")]
    pub fn list_run_ids(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_run_ids(&page))
    }

    // ----- artifacts -----

    /// Stores bytes; the store computes size and sha256. Putting the same artifact again under its idempotency key returns the stored one; other content under a held key is IDEMPOTENCY_CONFLICT.
    #[wasm_bindgen(js_name = putArtifact, unchecked_return_type = "ArtifactMeta")]
    pub fn put_artifact(
        &self,
        #[wasm_bindgen(unchecked_param_type = "NewArtifact")] artifact: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let artifact: NewArtifact = input("artifact", artifact)?;
        let now: Millis = input("now", now)?;
        self.call(|s| {
            s.put_artifact(&artifact, now)
                .map_err(in_argument("artifact", &["now"]))
        })
    }

    /// An artifact with its bytes, digest verified (CORRUPT on mismatch).
    #[wasm_bindgen(js_name = getArtifact, unchecked_return_type = "Artifact")]
    pub fn get_artifact(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] scope: JsValue,
        #[wasm_bindgen(js_name = artifactId, unchecked_param_type = "string")] artifact_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let scope: String = input("scope", scope)?;
        let artifact_id: String = input("artifactId", artifact_id)?;
        self.call(|s| s.get_artifact(&scope, &artifact_id))
    }

    /// A page of the artifacts of a scope, without bytes.
    #[wasm_bindgen(js_name = listArtifacts, unchecked_return_type = "Page<ArtifactMeta>")]
    pub fn list_artifacts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] scope: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let scope: String = input("scope", scope)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_artifacts(&scope, &page))
    }

    /// Deletes an artifact; returns whether it existed.
    #[wasm_bindgen(js_name = deleteArtifact, unchecked_return_type = "boolean")]
    pub fn delete_artifact(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] scope: JsValue,
        #[wasm_bindgen(js_name = artifactId, unchecked_param_type = "string")] artifact_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let scope: String = input("scope", scope)?;
        let artifact_id: String = input("artifactId", artifact_id)?;
        self.call_freeing(|s| s.delete_artifact(&scope, &artifact_id))
    }

    /// Deletes the artifacts expired at `now`; returns how many.
    #[wasm_bindgen(js_name = purgeExpiredArtifacts, unchecked_return_type = "number")]
    pub fn purge_expired_artifacts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now: Millis = input("now", now)?;
        self.call_freeing(|s| s.purge_expired_artifacts(now))
    }

    // ----- conversation state -----

    /// A conversation's state, or null.
    #[wasm_bindgen(js_name = loadConversation, unchecked_return_type = "ConversationState | null")]
    pub fn load_conversation(
        &self,
        #[wasm_bindgen(js_name = conversationId, unchecked_param_type = "string")] conversation_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conversation_id: String = input("conversationId", conversation_id)?;
        self.call(|s| s.load_conversation(&conversation_id))
    }

    /// Saves a conversation's state under a revision check.
    #[wasm_bindgen(js_name = saveConversation, unchecked_return_type = "undefined")]
    pub fn save_conversation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationState")] state: JsValue,
        #[wasm_bindgen(js_name = expectedRevision, unchecked_optional_param_type = "number | null")]
        expected_revision: JsValue,
    ) -> Result<JsValue, JsValue> {
        let state: ConversationState = input("state", state)?;
        let expected_revision: Option<u64> = input("expectedRevision", expected_revision)?;
        self.call_unit(|s| {
            s.save_conversation(&state, expected_revision)
                .map_err(in_argument("state", &["expectedRevision"]))
        })
    }
}
