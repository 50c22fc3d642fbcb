//! The agent-run half of `RunStoreCore`: checkpoints, effects, run journal, artifacts and
//! conversation state. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
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
}
