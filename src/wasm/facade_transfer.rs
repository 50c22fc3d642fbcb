//! Export and import of the whole store on `RunStoreCore`. Conversions only; see `facade.rs`
//! and `sqlite/transfer.rs`.

use wasm_bindgen::prelude::*;

use serde::Deserialize;

use super::convert::{input, input_or_default, js_error, output};
use super::facade::RunStoreCore;
use super::walk;

/// How `exportDatabase` writes the file.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExportOptions {
    /// An encrypted store's content as a plain file.
    #[serde(default)]
    plain: bool,
}

/// The largest file `importDatabase` takes: an import holds about three copies of it in wasm
/// memory, which cannot grow past 4 GiB.
const MAX_IMPORT_BYTES: usize = 512 << 20;

#[wasm_bindgen]
impl RunStoreCore {
    /// The whole store as the bytes of one SQLite database file (in rollback-journal mode, with the store's page size; an encrypted store's, with SQLite's default page size): a consistent snapshot to download, keep, or load with `importDatabase` here or in any other store, native or in the browser. An encrypted store's export is encrypted with its key (only a store opened with that key imports it) unless `options.plain` is true.
    #[wasm_bindgen(js_name = exportDatabase, unchecked_return_type = "StoredBytes")]
    pub fn export_database(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ExportOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let options: ExportOptions = input_or_default("options", options)?;
        if options.plain {
            self.call_bytes(|s| s.export_plain_bytes())
        } else {
            self.call_bytes(|s| s.export_bytes())
        }
    }

    /// Replaces everything in the store with the database file `bytes` (from `exportDatabase`), after checking it: a SQLite database whose integrity check passes, with the runstore schema of a known version (an older one is migrated). All of it is imported or nothing is: INVALID_INPUT (field `bytes`) for anything else, SCHEMA_TOO_NEW for a file of a newer version, and the store is left as it was. Under a `requestId` it is applied once (a repeat answers `replayed: true`). At most 512 MiB.
    #[wasm_bindgen(js_name = importDatabase, unchecked_return_type = "ImportOutcome")]
    pub fn import_database(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(js_name = requestId, unchecked_optional_param_type = "string | null")]
        request_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        // Read like any argument (own slots only, every call caught): the import holds the
        // store mutably, and a JS exception passing through wasm would never give it back.
        let bytes = walk::read_bytes("bytes", &bytes, MAX_IMPORT_BYTES).map_err(js_error)?;
        let request_id: Option<String> = input("requestId", request_id)?;
        let store = self.store_mut().map_err(js_error)?;
        output(store.import_bytes(&bytes, request_id.as_deref()))
    }
}
