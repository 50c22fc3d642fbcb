//! The JS built-ins the store calls on arguments and answers, as `intrinsics.js` took them when
//! the package loaded (see there why).
//!
//! Every one is imported with `catch`. A JS exception thrown through an import that does not
//! catch unwinds past the wasm frames without running Rust's cleanup: the `RunStoreCore`'s
//! borrow stays taken (every later call, `close()` too, then fails) and the wasm stack pointer
//! is never restored. A caller's Proxy, getter or tampered built-in can throw from any of these.

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/intrinsics.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    pub(super) fn is_array(value: &JsValue) -> Result<bool, JsValue>;

    /// Whether `value` is a typed array or a DataView (an internal slot: false for a Proxy).
    #[wasm_bindgen(catch)]
    pub(super) fn is_view(value: &JsValue) -> Result<bool, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn prototype_of(value: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn is_well_formed(text: &JsValue) -> Result<bool, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn own_entries(value: &JsValue) -> Result<Array, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn length_of(array: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn own_item(array: &JsValue, index: u32) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn typed_array_name(value: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn byte_length(view: &JsValue) -> Result<f64, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn is_detached(view: &JsValue) -> Result<bool, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn copy_bytes(target: &Uint8Array, source: &JsValue) -> Result<(), JsValue>;

    /// The JSON `text` parsed, with the byte arrays `places` names copied out of `bytes`.
    #[wasm_bindgen(catch)]
    pub(super) fn from_json(
        text: &str,
        places: Option<String>,
        bytes: Option<Uint8Array>,
    ) -> Result<JsValue, JsValue>;

    /// A new `Uint8Array` with `bytes[start..end]`.
    #[wasm_bindgen(catch)]
    pub(super) fn copy_out(bytes: &Uint8Array, start: u32, end: u32) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(catch)]
    pub(super) fn make_error(message: &str, fields: &str) -> Result<JsValue, JsValue>;
}
