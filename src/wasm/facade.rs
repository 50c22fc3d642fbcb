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

use super::convert::{input, js_error, output, output_json};
use super::reserve::Reserve;
use super::to_js;
use super::{check_pool_name, install_pool, open_in_memory, OpfsPool};
use crate::{Durability, Error, Result, SqliteStore};

/// Where `RunStoreCore.open` keeps the database.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
enum Persistence {
    /// OPFS (dedicated workers only): survives reloads, crashes and browser restarts.
    Opfs,
    /// A private in-memory database, gone when the store closes.
    Memory,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenOptions {
    persistence: Persistence,
    #[serde(default)]
    durability: Durability,
}

/// The arguments of `open`, read and checked: an OPFS store's name must be a pool name.
fn open_arguments(name: JsValue, options: JsValue) -> Result<(String, OpenOptions), JsValue> {
    let name: String = input("name", name)?;
    let options: OpenOptions = input("options", options)?;
    if let Persistence::Opfs = options.persistence {
        check_pool_name(&name).map_err(js_error)?;
    }
    Ok((name, options))
}

/// The database file inside a store's pool.
const DATABASE_FILE: &str = "/runstore.db";

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("../../js/types.d.ts");

/// A runstore database, opened in this worker.
#[wasm_bindgen]
pub struct RunStoreCore {
    store: Option<SqliteStore>,
    pool: Option<OpfsPool>,
    /// OPFS space held back for deletes on a full origin (see `reserve.rs`).
    reserve: Option<Rc<Reserve>>,
}

impl RunStoreCore {
    /// The open store; BACKEND once closed.
    pub(super) fn store(&self) -> Result<&SqliteStore> {
        self.store.as_ref().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        })
    }

    /// Runs `op` on the open store and converts its answer.
    pub(super) fn call<T: serde::Serialize>(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<T>,
    ) -> Result<JsValue, JsValue> {
        output(self.store().and_then(op))
    }

    /// As [`RunStoreCore::call`] for an operation that answers bytes: JS gets a `Uint8Array`
    /// copied straight out of them.
    pub(super) fn call_bytes(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<Vec<u8>>,
    ) -> Result<JsValue, JsValue> {
        self.store()
            .and_then(op)
            .and_then(|bytes| to_js::bytes_to_js(&bytes))
            .map_err(js_error)
    }

    /// As [`RunStoreCore::call`] for an operation that answers JSON text (see
    /// `convert::output_json`).
    pub(super) fn call_json(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<JsValue, JsValue> {
        output_json(self.store().and_then(op))
    }

    /// As [`RunStoreCore::call_json`], the text itself: for the main-thread client's worker,
    /// which hands it to the page as one string to parse there once, where a parsed value
    /// would be structured-cloned object by object.
    pub(super) fn call_text(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<String, JsValue> {
        self.store().and_then(op).map_err(js_error)
    }

    /// As [`RunStoreCore::call`] for a delete (see [`RunStoreCore::freeing`]).
    pub(super) fn call_freeing<T: serde::Serialize>(
        &self,
        op: impl Fn(&SqliteStore) -> Result<T>,
    ) -> Result<JsValue, JsValue> {
        output(self.freeing(op))
    }

    /// Runs a delete on the open store: when it finds no room (STORAGE_FULL), or its freed
    /// pages could not all go back to the file system, the store's reserve of OPFS space is
    /// given up and the delete (or the giving back) runs once more (see `reserve.rs`).
    pub(super) fn freeing<T>(&self, op: impl Fn(&SqliteStore) -> Result<T>) -> Result<T> {
        let store = self.store()?;
        let Some(reserve) = self.reserve.as_ref() else {
            return op(store);
        };
        match op(store) {
            Err(Error::StorageFull { .. }) if reserve.release() => op(store),
            result => {
                give_back(store, reserve);
                result
            }
        }
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

/// Gives the pages freed by deletes back to the file system; when that found no room, with
/// the room the reserve held back.
fn give_back(store: &SqliteStore, reserve: &Reserve) {
    if !store.release_space() && reserve.release() {
        store.release_space();
    }
}

#[wasm_bindgen]
impl RunStoreCore {
    /// Opens (creating if needed) the store `name`. With `persistence: "opfs"` the store lives
    /// in the OPFS directory `name` and holds it alone: another tab or worker that opens the
    /// same name gets BUSY until this one closes. `persistence: "memory"` works anywhere.
    pub async fn open(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "OpenOptions")] options: JsValue,
    ) -> Result<RunStoreCore, JsValue> {
        let (name, options) = open_arguments(name, options)?;
        let (store, pool) = match options.persistence {
            Persistence::Memory => (open_in_memory().map_err(js_error)?, None),
            Persistence::Opfs => {
                let pool = install_pool(&name).await.map_err(js_error)?;
                match pool.open(DATABASE_FILE, options.durability) {
                    Ok(store) => (store, Some(pool)),
                    Err(error) => {
                        // The open's error is the one worth reporting.
                        let _ = pool.close().await;
                        return Err(js_error(error));
                    }
                }
            }
        };
        let reserve = match &pool {
            Some(pool) => Some(Reserve::acquire(pool.name()).await),
            None => None,
        };
        if let Some(reserve) = &reserve {
            // Pages an earlier delete freed on a full origin but could not give back.
            give_back(&store, reserve);
        }
        Ok(RunStoreCore {
            store: Some(store),
            pool,
            reserve,
        })
    }

    /// Checks the arguments of `open` as it checks them (the name, and the pool name an OPFS
    /// store takes from it; the options), opening nothing: for the main-thread client, whose
    /// tab may use a store another tab opened. Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __checkOpen, skip_typescript)]
    pub fn check_open(name: JsValue, options: JsValue) -> Result<(), JsValue> {
        open_arguments(name, options).map(|_| ())
    }

    /// Closes the database and releases its OPFS files and lock. Every commit that returned
    /// is on disk already. Calls after `close` fail.
    pub fn close(&mut self) -> js_sys::Promise {
        self.store = None;
        let reserve = self.reserve.take();
        let pool = self.pool.take();
        wasm_bindgen_futures::future_to_promise(async move {
            if let Some(pool) = pool {
                // The files closed, the origin has back the room they no longer hold: the
                // reserve takes its share before the next opener (which waits for the pool's
                // lock) can.
                pool.close_files().map_err(js_error)?;
                if let Some(reserve) = reserve {
                    reserve.fill().await;
                }
                pool.close().await.map_err(js_error)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}
