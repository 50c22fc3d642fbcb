//! Checkpoint reads, which keep exports of their own for speed: a checkpoint and a run's
//! checkpoints, as JSON text parsed once. The other reads are in `facade_reads.rs`.
//! Conversions only; see `facade.rs`.

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
}
