//! The sync state on `RunStoreCore`, for `store.sync` (js/sync.js). Conversions only; see
//! `facade.rs` and `sqlite/sync_state.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    /// What the store and the sync target `target` (a server's namespace) agree on: the client id, the feed cursor and the change mark up to which a pass handled every local append, and the store's change clock now.
    #[wasm_bindgen(js_name = syncTarget, unchecked_return_type = "SyncTarget")]
    pub fn sync_target(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
    ) -> Result<JsValue, JsValue> {
        let target: String = input("target", target)?;
        self.call(|s| s.sync_target(&target))
    }

    /// A page of the workflows a sync pass has to look at (`{ select: 'all' }`, `{ select: 'changed', after, through }`), or of the target's workflows in one state (`{ select: 'inState', state }`).
    #[wasm_bindgen(js_name = syncWorkflows, unchecked_return_type = "Page<SyncWorkflow>")]
    pub fn sync_workflows(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_param_type = "SyncSelection")] selection: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let target: String = input("target", target)?;
        let selection: SyncSelection = input("selection", selection)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.sync_workflows(&target, selection, &page))
    }

    /// The named workflows (at most 10000, each once) as the target sees them, in the order given.
    #[wasm_bindgen(js_name = syncHeads, unchecked_return_type = "SyncWorkflow[]")]
    pub fn sync_heads(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(js_name = workflowIds, unchecked_param_type = "string[]")]
        workflow_ids: JsValue,
    ) -> Result<JsValue, JsValue> {
        let target: String = input("target", target)?;
        let workflow_ids: Vec<String> = input("workflowIds", workflow_ids)?;
        self.call(|s| s.sync_heads(&target, &workflow_ids))
    }
}
