//! `RunStoreCore`: the store as a JS class, for use inside a dedicated worker (the package's
//! main-thread `RunStore` client drives one over postMessage). Each method converts its
//! arguments, calls the store and converts the answer back: no SQL and no logic here. The
//! methods of each area are in `facade_workflow.rs` and `facade_agent.rs`.
//!
//! Arguments are plain JS values: strings, safe integers (times in milliseconds since the
//! epoch), plain objects, arrays and `Uint8Array` for bytes. `undefined` or `null` stands for an
//! absent optional argument. Every failure is thrown as an `Error` with `.code`.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default, js_error, output, output_json};
use super::persistence::{self, Persistence, Place};
use super::reserve::Reserve;
use crate::{Durability, Error, Result, SqliteStore};

#[derive(Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenOptions {
    #[serde(default)]
    persistence: Persistence,
    #[serde(default)]
    durability: Durability,
}

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("../../js/types.d.ts");

/// A runstore database, opened in this worker.
#[wasm_bindgen]
pub struct RunStoreCore {
    store: Option<SqliteStore>,
    place: Option<Place>,
    /// OPFS space held back for deletes on a full origin (see `reserve.rs`).
    reserve: Option<Rc<Reserve>>,
}

impl RunStoreCore {
    /// Runs `op` on the open store and converts its answer.
    pub(super) fn call<T: serde::Serialize>(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<T>,
    ) -> Result<JsValue, JsValue> {
        let store = self.store.as_ref().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        });
        output(store.and_then(op).map_err(|e| self.full_if_short(e)))
    }

    /// An I/O error of an OPFS store whose write came up short is STORAGE_FULL: the quota
    /// stopped it (see `errors::last_write_was_short`).
    fn full_if_short(&self, error: Error) -> Error {
        match (&error, &self.place) {
            (Error::Backend { message }, Some(Place::Opfs(pool)))
                if message.contains("disk I/O error")
                    && super::errors::last_write_was_short(pool.name()) =>
            {
                Error::StorageFull {
                    message: format!("{message}: a write came up short, the quota is used up"),
                }
            }
            _ => error,
        }
    }

    /// As [`RunStoreCore::call`] for an operation that answers JSON text (see
    /// `convert::output_json`).
    pub(super) fn call_json(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<JsValue, JsValue> {
        let store = self.store.as_ref().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        });
        output_json(store.and_then(op).map_err(|e| self.full_if_short(e)))
    }

    /// As [`RunStoreCore::call_json`], the text itself: for the main-thread client's worker,
    /// which hands it to the page as one string to parse there once, where a parsed value
    /// would be structured-cloned object by object.
    pub(super) fn call_text(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<String, JsValue> {
        let store = self.store.as_ref().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        });
        store
            .and_then(op)
            .map_err(|e| js_error(self.full_if_short(e)))
    }

    /// As [`RunStoreCore::call`] for a delete: when it finds no room (STORAGE_FULL), the
    /// store's reserve of OPFS space is given up and the delete runs once more; once a delete
    /// went through, the reserve is set up again in the background.
    pub(super) fn call_freeing<T: serde::Serialize>(
        &self,
        op: impl Fn(&SqliteStore) -> Result<T>,
    ) -> Result<JsValue, JsValue> {
        let Some(store) = self.store.as_ref() else {
            return self.call(op);
        };
        let result = match (op(store).map_err(|e| self.full_if_short(e)), &self.reserve) {
            (Err(Error::StorageFull { .. }), Some(reserve)) if reserve.release() => {
                op(store).map_err(|e| self.full_if_short(e))
            }
            (result, _) => result,
        };
        if let (Ok(_), Some(reserve)) = (&result, &self.reserve) {
            reserve.refill();
        }
        output(result)
    }

    /// The open store, for the calls that need it alone (an import replaces its content).
    pub(super) fn store_mut(&mut self) -> Result<&mut SqliteStore> {
        self.store.as_mut().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        })
    }

    /// As [`RunStoreCore::call`] for an operation that answers nothing: JS gets `undefined`.
    pub(super) fn call_unit(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<()>,
    ) -> Result<JsValue, JsValue> {
        self.call(op).map(|_| JsValue::UNDEFINED)
    }
}

/// Whether `field` is `name` or a path inside it (`name.x`, `name[0]`).
fn is_within(field: &str, name: &str) -> bool {
    field
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// For a method whose argument `record` the store checks field by field: names an
/// INVALID_INPUT about one of the record's fields (`contentHash`, as the native API does) by
/// its path from the argument (`record.contentHash`). Fields under `others`, the method's
/// other parameters, stay as they are.
pub(super) fn in_argument<'a>(
    record: &'a str,
    others: &'a [&'a str],
) -> impl FnOnce(Error) -> Error + 'a {
    move |error| match error {
        Error::InvalidInput { field, reason }
            if !others.iter().any(|other| is_within(&field, other))
                && !field.starts_with(&format!("{record}.")) =>
        {
            Error::InvalidInput {
                field: format!("{record}.{field}"),
                reason,
            }
        }
        other => other,
    }
}

/// Names an INVALID_INPUT the store reports under `from` (`outbox[3].dispatchKey`) by the
/// argument `to` it came from (`rows[3].dispatchKey`).
pub(super) fn renamed<'a>(from: &'a str, to: &'a str) -> impl FnOnce(Error) -> Error + 'a {
    move |error| match error {
        Error::InvalidInput { field, reason } if is_within(&field, from) => Error::InvalidInput {
            field: format!("{to}{}", &field[from.len()..]),
            reason,
        },
        other => other,
    }
}

#[wasm_bindgen]
impl RunStoreCore {
    /// Opens (creating if needed) the store `name`. With `persistence: "opfs"` the store lives
    /// in the OPFS directory `name` (dedicated workers only), with `"indexeddb"` in the
    /// IndexedDB database `runstore:<name>`; either way it holds it alone: another tab or
    /// worker that opens the same name gets BUSY until this one closes. `"memory"` works
    /// anywhere. `"auto"` (the default) takes OPFS where it exists, else IndexedDB, else
    /// memory; `persistence` tells which it took.
    pub async fn open(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "OpenOptions | undefined")] options: JsValue,
    ) -> Result<RunStoreCore, JsValue> {
        let name: String = input("name", name)?;
        let options: OpenOptions = input_or_default("options", options)?;
        let (store, place) = persistence::open(&name, options.persistence, options.durability)
            .await
            .map_err(js_error)?;
        let reserve = match &place {
            Place::Opfs(pool) => Some(Reserve::acquire(pool.name()).await),
            _ => None,
        };
        Ok(RunStoreCore {
            store: Some(store),
            place: Some(place),
            reserve,
        })
    }

    /// Where the store keeps its database: `"opfs"`, `"indexeddb"` or `"memory"` (what
    /// `persistence: "auto"` took).
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "\"opfs\" | \"indexeddb\" | \"memory\""
    )]
    pub fn persistence(&self) -> String {
        self.place
            .as_ref()
            .map_or("memory", Place::persistence)
            .to_owned()
    }

    /// Resolves once every write made so far is stored. On IndexedDB that is a write to
    /// IndexedDB, and until it resolves a closed tab or terminated worker loses those writes;
    /// if it rejects (STORAGE_FULL, BACKEND) the writes not stored were undone. On OPFS and
    /// memory a write is where it belongs when it returns, and this resolves at once.
    pub fn flush(&self) -> js_sys::Promise {
        let pool = match &self.place {
            Some(Place::IndexedDb(pool)) => Some(pool.clone()),
            _ => None,
        };
        wasm_bindgen_futures::future_to_promise(async move {
            if let Some(pool) = pool {
                pool.flush().await.map_err(js_error)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Whether a write is not stored yet (IndexedDB only): the client's worker flushes before
    /// it answers a call that leaves one.
    #[wasm_bindgen(js_name = __unflushed)]
    pub fn unflushed(&self) -> bool {
        matches!(&self.place, Some(Place::IndexedDb(pool)) if pool.has_unflushed_changes())
    }

    /// Closes the database and releases its files and lock; on IndexedDB after storing what
    /// is not stored yet. Every commit that returned is on disk already on OPFS. Calls after
    /// `close` fail.
    pub fn close(&mut self) -> js_sys::Promise {
        self.store = None;
        self.reserve = None;
        let place = self.place.take();
        wasm_bindgen_futures::future_to_promise(async move {
            if let Some(place) = place {
                place.close().await.map_err(js_error)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}
