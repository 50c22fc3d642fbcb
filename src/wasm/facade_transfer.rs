//! Export and import of the whole store on `RunStoreCore`. Conversions only; see `facade.rs`
//! and `sqlite/transfer.rs`.

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{input, js_error, output};
use super::facade::RunStoreCore;
use crate::error::Error;

/// The largest file `importDatabase` takes: an import holds about three copies of it in wasm
/// memory, which cannot grow past 4 GiB.
const MAX_IMPORT_BYTES: u32 = 512 << 20;

#[wasm_bindgen]
extern "C" {
    /// `Object.prototype.toString.call(value)`: `"[object Uint8Array]"` for a typed array,
    /// whatever its prototype says; a revoked Proxy throws.
    #[wasm_bindgen(catch, js_namespace = ["Object", "prototype", "toString"], js_name = call)]
    fn type_tag(value: &JsValue) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen]
impl RunStoreCore {
    /// The whole store as the bytes of one SQLite database file (in rollback-journal mode, with the store's page size): a consistent snapshot to download, keep, or load with `importDatabase` here or in any other store, native or in the browser.
    #[wasm_bindgen(js_name = exportDatabase, unchecked_return_type = "Uint8Array")]
    pub fn export_database(&self) -> Result<JsValue, JsValue> {
        self.call(|s| s.export_bytes().map(DatabaseFile))
    }

    /// Replaces everything in the store with the database file `bytes` (from `exportDatabase`), after checking it: a SQLite database whose integrity check passes, with the runstore schema of a known version (an older one is migrated). All of it is imported or nothing is: INVALID_INPUT (field `bytes`) for anything else, SCHEMA_TOO_NEW for a file of a newer version, and the store is left as it was. Under a `requestId` it is applied once (a repeat answers `replayed: true`). At most 512 MiB.
    #[wasm_bindgen(js_name = importDatabase, unchecked_return_type = "ImportOutcome")]
    pub fn import_database(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(js_name = requestId, unchecked_optional_param_type = "string | null")]
        request_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let bytes = database_bytes(&bytes).map_err(js_error)?;
        let request_id: Option<String> = input("requestId", request_id)?;
        let store = self.store_mut().map_err(js_error)?;
        output(store.import_bytes(&bytes, request_id.as_deref()))
    }
}

/// A database file's bytes, handed to JS as a `Uint8Array`.
struct DatabaseFile(Vec<u8>);

impl serde::Serialize for DatabaseFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

/// Copies a `Uint8Array` argument into wasm memory, refusing anything else (an `ArrayBuffer`,
/// a `Blob`, a Proxy) and one over [`MAX_IMPORT_BYTES`] before copying it. Nothing here may
/// throw: `importDatabase` holds the store mutably, and a JS exception passing through wasm
/// would never give it back.
fn database_bytes(value: &JsValue) -> Result<Vec<u8>, Error> {
    let is_bytes = type_tag(value).is_ok_and(|tag| tag == "[object Uint8Array]");
    if !is_bytes {
        return Err(Error::invalid("bytes", "must be a Uint8Array"));
    }
    let bytes: &Uint8Array = value.unchecked_ref();
    let length = bytes.length();
    if length > MAX_IMPORT_BYTES {
        return Err(Error::invalid(
            "bytes",
            format!("is {length} bytes long; the limit is {MAX_IMPORT_BYTES}"),
        ));
    }
    if length == 0 {
        // A detached (or shrunk out of bounds) array has length 0, and copying from it throws
        // in JS, through wasm, while the import holds the store: hand on the empty file.
        return Ok(Vec::new());
    }
    Ok(bytes.to_vec())
}
