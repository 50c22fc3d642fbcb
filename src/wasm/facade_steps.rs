//! Steps and the request log in `RunStoreCore`. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_text};
use super::facade::RunStoreCore;
use crate::*;

/// Names an INVALID_INPUT by its path from the `step` argument: `step.requestId`, or
/// `step.operations[2].workflowId` for a field of the operation that failed.
fn within_step(error: Error) -> Error {
    match error {
        Error::InvalidInput { field, reason } => Error::InvalidInput {
            field: format!("step.{field}"),
            reason,
        },
        Error::Operation { index, error } => match *error {
            Error::InvalidInput { field, reason } => Error::InvalidInput {
                field: format!("step.operations[{index}].{field}"),
                reason,
            },
            other => other,
        }
        .in_operation(index),
        other => other,
    }
}

#[wasm_bindgen]
impl RunStoreCore {
    /// Applies every operation of the step in one transaction: all commit or none. A failing operation rejects with its own code and `operation`, its index; nothing is written. Under a `requestId` that committed before, nothing is applied and the recorded outcomes come back with `replayed: true`.
    #[wasm_bindgen(js_name = commit, unchecked_return_type = "StepOutcome")]
    pub fn commit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Step")] step: JsValue,
    ) -> Result<JsValue, JsValue> {
        let step: Step = input("step", step)?;
        self.call(|s| s.commit(&step).map_err(within_step))
    }

    /// `commit` with the step as JSON text, for the main-thread client's worker (js/wire.js):
    /// it meets the checks the same step meets as a JS value. Not part of the API, hence the
    /// name.
    #[wasm_bindgen(js_name = __commitText, skip_typescript)]
    pub fn commit_text(&self, step: String) -> Result<JsValue, JsValue> {
        let step: Step = input_text("step", &step)?;
        self.call(|s| s.commit(&step).map_err(within_step))
    }

    /// What the request log says of `requestId`: `committed` (with its outcomes), `notCommitted`, or `unknown` when the log does not hold it but has forgotten requests committed up to `forgottenThrough` (a request sent after that time did not commit).
    #[wasm_bindgen(js_name = requestOutcome, unchecked_return_type = "RequestOutcome")]
    pub fn request_outcome(
        &self,
        #[wasm_bindgen(js_name = requestId, unchecked_param_type = "string")] request_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let request_id: String = input("requestId", request_id)?;
        self.call(|s| s.request_outcome(&request_id))
    }
}
