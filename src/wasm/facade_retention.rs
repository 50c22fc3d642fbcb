//! Retention and space on `RunStoreCore`. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::facade::RunStoreCore;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    /// The database's size in pages: `pageSize * pageCount` bytes, `freelistCount` of them free.
    #[wasm_bindgen(js_name = storageStats, unchecked_return_type = "StorageStats")]
    pub fn storage_stats(&self) -> Result<JsValue, JsValue> {
        self.call(|s| s.storage_stats())
    }

    /// Rewrites the database compactly (and switches a database created before schema version 2 to incremental auto-vacuum), which needs room for a second copy while it runs; on a full origin it gives the free pages back in small steps instead.
    #[wasm_bindgen(js_name = vacuum, unchecked_return_type = "undefined")]
    pub fn vacuum(&self) -> Result<JsValue, JsValue> {
        // On a full origin the reserve's room may let it give the free pages back. Firefox
        // answers a write past the quota with a short write, which SQLite reports as an I/O
        // error and only `full_if_short` tells apart: the store's own fallback for a full disk
        // then runs from here.
        self.call_freeing(|s| match s.vacuum().map_err(|e| self.full_if_short(e)) {
            Err(full @ Error::StorageFull { .. }) => {
                if s.compact_in_place() {
                    Ok(())
                } else {
                    Err(full)
                }
            }
            other => other,
        })
        .map(|_| JsValue::UNDEFINED)
    }
}
