//! The workflow journal's reads that keep exports of their own, for speed: a workflow's
//! history (as JSON text parsed once) and its head. The other reads are in
//! `facade_reads.rs`. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    // ----- workflow event journal -----

    /// A page of the workflow's events in seq order (`page`: `{ limit?, cursor? }`; default 1000 items, at most 10000).
    #[wasm_bindgen(js_name = readHistory, unchecked_return_type = "Page<StoredEvent>")]
    pub fn read_history(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_json(|s| s.read_history_json(&workflow_id, 0, &page))
    }

    /// A page of the events with seq >= `fromSeq`.
    #[wasm_bindgen(js_name = readHistoryFrom, unchecked_return_type = "Page<StoredEvent>")]
    pub fn read_history_from(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(js_name = fromSeq, unchecked_param_type = "number")] from_seq: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let from_seq: u64 = input("fromSeq", from_seq)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_json(|s| s.read_history_json(&workflow_id, from_seq, &page))
    }

    /// `readHistoryFrom` as JSON text, for the main-thread client's worker (see
    /// `RunStoreCore::call_text`); not part of the API, hence the name.
    #[wasm_bindgen(js_name = __historyText, skip_typescript)]
    pub fn history_text(
        &self,
        workflow_id: JsValue,
        from_seq: JsValue,
        page: JsValue,
    ) -> Result<String, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let from_seq: u64 = input("fromSeq", from_seq)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_text(|s| s.read_history_json(&workflow_id, from_seq, &page))
    }

    /// The seq of the workflow's last event; 0 when it has none.
    #[wasm_bindgen(js_name = head, unchecked_return_type = "number")]
    pub fn head(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.head(&workflow_id))
    }
}
