//! `RunStoreCore`: the store as a JS class, for use inside a dedicated worker (the package's
//! main-thread `RunStore` client drives one over postMessage). Each method converts its
//! arguments, calls the store and converts the answer back: no SQL and no logic here. The
//! write methods run as steps (`facade_steps.rs`, `facade_writes.rs`), most reads through one
//! way in (`facade_reads.rs`); the hot reads keep exports of their own (`facade_workflow.rs`,
//! `facade_agent.rs`).
//!
//! Arguments are plain JS values: strings, safe integers (times in milliseconds since the
//! epoch), plain objects, arrays and `Uint8Array` for bytes. `undefined` or `null` stands for an
//! absent optional argument. Every failure is thrown as an `Error` with `.code`.

use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use super::check_pool_name;
use super::convert::{input, input_or_default, js_error, output, output_json};
use super::persistence::{self, Persistence, Place};
use super::reserve::Reserve;
use super::to_js;
use crate::{Durability, Error, Key, Result, SqliteStore};

#[derive(Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenOptions {
    #[serde(default)]
    persistence: Persistence,
    #[serde(default)]
    durability: Durability,
    /// The file medium's directory (see `persistence::check_directory`).
    #[serde(default)]
    directory: Option<String>,
    /// The store's key: a passphrase or 32 bytes (see `crate::Key`). Never answered back.
    #[serde(default, skip_serializing)]
    key: Option<KeyOption>,
}

/// A key as JS gives it: a string is a passphrase, a `Uint8Array` the key's 32 bytes.
struct KeyOption(Key);

impl<'de> Deserialize<'de> for KeyOption {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl serde::de::Visitor<'_> for KeyVisitor {
    type Value = KeyOption;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a passphrase (a string) or 32 bytes (a Uint8Array)")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<KeyOption, E> {
        Key::passphrase(text).map(KeyOption).map_err(key_error)
    }

    fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<KeyOption, E> {
        Key::from_bytes(&bytes).map(KeyOption).map_err(key_error)
    }
}

/// A refused key's reason, without its field (the path says `options.key`).
fn key_error<E: serde::de::Error>(error: Error) -> E {
    match error {
        Error::InvalidInput { reason, .. } => E::custom(reason),
        other => E::custom(other),
    }
}

/// The arguments of `open`, read and checked: a persistent store's name must be a pool name
/// (`auto` may take OPFS, whose pool is named after it).
fn open_arguments(name: JsValue, options: JsValue) -> Result<(String, OpenOptions), JsValue> {
    let name: String = input("name", name)?;
    let options: OpenOptions = input_or_default("options", options)?;
    if options.persistence != Persistence::Memory {
        check_pool_name(&name).map_err(js_error)?;
    }
    persistence::check_directory(options.persistence, options.directory.as_deref())
        .map_err(js_error)?;
    Ok((name, options))
}

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("../../js/types.d.ts");

/// A runstore database, opened in this worker.
#[wasm_bindgen]
pub struct RunStoreCore {
    store: Option<SqliteStore>,
    place: Option<Place>,
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
        output(self.store().and_then(op).map_err(|e| self.full_if_short(e)))
    }

    /// An I/O error of an OPFS store whose write came up short is STORAGE_FULL: the quota
    /// stopped it (see `errors::last_write_was_short`).
    pub(super) fn full_if_short(&self, error: Error) -> Error {
        match (&error, &self.place) {
            (Error::Backend { message }, Some(Place::Opfs(pool, _)))
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

    /// As [`RunStoreCore::call`] for an operation that answers bytes: JS gets a `Uint8Array`
    /// copied straight out of them.
    pub(super) fn call_bytes(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<Vec<u8>>,
    ) -> Result<JsValue, JsValue> {
        self.store()
            .and_then(op)
            .map_err(|e| self.full_if_short(e))
            .and_then(|bytes| to_js::bytes_to_js(&bytes))
            .map_err(js_error)
    }

    /// As [`RunStoreCore::call`] for an operation that answers JSON text (see
    /// `convert::output_json`).
    pub(super) fn call_json(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<JsValue, JsValue> {
        output_json(self.store().and_then(op).map_err(|e| self.full_if_short(e)))
    }

    /// As [`RunStoreCore::call_json`], the text itself: for the main-thread client's worker,
    /// which hands it to the page as one string to parse there once, where a parsed value
    /// would be structured-cloned object by object.
    pub(super) fn call_text(
        &self,
        op: impl FnOnce(&SqliteStore) -> Result<String>,
    ) -> Result<String, JsValue> {
        self.store()
            .and_then(op)
            .map_err(|e| js_error(self.full_if_short(e)))
    }

    /// As [`RunStoreCore::call`] for a delete (see [`RunStoreCore::freeing`]).
    pub(super) fn call_freeing<T: serde::Serialize>(
        &self,
        op: impl Fn(&SqliteStore) -> Result<T>,
    ) -> Result<JsValue, JsValue> {
        output(self.freeing(op))
    }

    /// Runs a delete on the open store: while it finds no room (STORAGE_FULL), the store's
    /// reserve of OPFS space gives up its room a step at a time and the delete runs once more;
    /// then the freed pages go back to the file system (with the reserve's room if they need
    /// it), and the reserve takes back what room the browser gives it now (see `reserve.rs`).
    pub(super) fn freeing<T>(&self, op: impl Fn(&SqliteStore) -> Result<T>) -> Result<T> {
        let store = self.store()?;
        let op = |s: &SqliteStore| op(s).map_err(|e| self.full_if_short(e));
        let Some(Place::Opfs(_, reserve)) = self.place.as_ref() else {
            return op(store);
        };
        let mut result = op(store);
        while matches!(result, Err(Error::StorageFull { .. })) && reserve.release() {
            result = op(store);
        }
        give_back(store, reserve);
        reserve.top_up();
        result
    }

    /// The open store, for the calls that need it alone (an import replaces its content).
    pub(super) fn store_mut(&mut self) -> Result<&mut SqliteStore> {
        self.store.as_mut().ok_or_else(|| Error::Backend {
            message: "the store is closed".into(),
        })
    }
}

/// Gives the pages freed by deletes back to the file system; while that finds no room, with
/// the room the reserve holds back, a step at a time.
fn give_back(store: &SqliteStore, reserve: &Reserve) {
    while !store.release_space() && reserve.release() {}
}

#[wasm_bindgen]
impl RunStoreCore {
    /// Opens (creating if needed) the store `name`. With `persistence: "opfs"` the store lives
    /// in the OPFS directory `name` (dedicated workers only), with `"indexeddb"` in the
    /// IndexedDB database `runstore:<name>`; either way it holds it alone: another tab or
    /// worker that opens the same name gets BUSY until this one closes. `"memory"` works
    /// anywhere. `"file"` (Node, Bun, Electron's main process) keeps it in the SQLite file
    /// `<directory>/<name>.db`, held by a lock file: another opener, in this process or
    /// another, gets BUSY. `"auto"` (the default) takes a file when a `directory` is given, else
    /// OPFS where it exists, else IndexedDB, else memory; `persistence` tells which it took.
    pub async fn open(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "OpenOptions | undefined")] options: JsValue,
    ) -> Result<RunStoreCore, JsValue> {
        let (name, options) = open_arguments(name, options)?;
        let directory = options.directory.as_deref();
        let key = options.key.as_ref().map(|key| &key.0);
        let (store, place) = persistence::open(
            &name,
            options.persistence,
            directory,
            options.durability,
            key,
        )
        .await
        .map_err(js_error)?;
        if let Place::Opfs(_, reserve) = &place {
            // Pages an earlier delete freed on a full origin but could not give back; the
            // reserve then takes what room that left it.
            give_back(&store, reserve);
            reserve.top_up();
        }
        Ok(RunStoreCore {
            store: Some(store),
            place: Some(place),
        })
    }

    /// Changes the store's key to `key` (a passphrase, or a `Uint8Array` of 32 bytes), in place: it then opens with `key` only. A plain store is encrypted: copied, encrypted, beside its file and back, with `options.onProgress({ done, total })` called as rows are copied (a crash midway loses nothing: the next open finishes or undoes it). On IndexedDB, `flush()` stores the result. INVALID_INPUT for a memory store. After an error once the plain file was closed the store is closed: open it again with the key.
    #[wasm_bindgen(js_name = rekey, unchecked_return_type = "undefined")]
    pub fn rekey(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RekeyOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let KeyOption(key) = input("key", key)?;
        let report = progress_callback(&options).map_err(js_error)?;
        let store = self.store_mut().map_err(js_error)?;
        let result = match report {
            Some(report) if !store.is_encrypted() => store.encrypt(&key, &mut |progress| {
                // A throwing callback does not stop the encryption, which is safer finished.
                let _ = report.call1(&JsValue::NULL, &progress_object(progress));
            }),
            _ => store.rekey(&key),
        };
        if let Err(error) = result {
            // Failed after the plain file was closed: the store is closed, and its next open
            // with the key finishes the encryption.
            if self.store.as_ref().is_some_and(SqliteStore::lost_its_file) {
                self.store = None;
            }
            return Err(js_error(error));
        }
        Ok(JsValue::UNDEFINED)
    }

    /// Where the store keeps its database: `"opfs"`, `"indexeddb"`, `"memory"` or `"file"`
    /// (what `persistence: "auto"` took).
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "\"opfs\" | \"indexeddb\" | \"memory\" | \"file\""
    )]
    pub fn persistence(&self) -> String {
        self.place
            .as_ref()
            .map_or("memory", Place::persistence)
            .to_owned()
    }

    /// Resolves once every write made so far is stored. On IndexedDB that is a write to
    /// IndexedDB, and until it resolves a closed tab or terminated worker loses those writes;
    /// if it rejects (STORAGE_FULL, BACKEND) the writes not stored were undone. On OPFS, a
    /// file and memory a write is where it belongs when it returns, and this resolves at once.
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
    /// it answers a call that leaves one. Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __unflushed, skip_typescript)]
    pub fn unflushed(&self) -> bool {
        matches!(&self.place, Some(Place::IndexedDb(pool)) if pool.has_unflushed_changes())
    }

    /// Checks the arguments of `open` as it checks them (the name, and the pool name a
    /// persistent store takes from it; the options), opening nothing: for the main-thread
    /// client, whose tab may use a store another tab opened. Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __checkOpen, skip_typescript)]
    pub fn check_open(name: JsValue, options: JsValue) -> Result<(), JsValue> {
        open_arguments(name, options).map(|_| ())
    }

    /// Closes the database and releases its files and lock; on IndexedDB after storing what
    /// is not stored yet. Every commit that returned is on disk already on OPFS. Calls after
    /// `close` fail.
    pub fn close(&mut self) -> js_sys::Promise {
        self.store = None;
        let place = self.place.take();
        wasm_bindgen_futures::future_to_promise(async move {
            if let Some(place) = place {
                place.close().await.map_err(js_error)?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// `options.onProgress` of `rekey`: absent, or a function.
fn progress_callback(options: &JsValue) -> Result<Option<js_sys::Function>> {
    if options.is_undefined() || options.is_null() {
        return Ok(None);
    }
    let refuse = |reason: &str| Error::invalid("options.onProgress", reason);
    let value = js_sys::Reflect::get(options, &"onProgress".into())
        .map_err(|_| refuse("could not be read"))?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value
        .dyn_into()
        .map(Some)
        .map_err(|_| refuse("must be a function"))
}

/// `{ done, total }` for an encryption's progress callback.
fn progress_object(progress: crate::EncryptProgress) -> JsValue {
    let object = js_sys::Object::new();
    for (field, value) in [("done", progress.done), ("total", progress.total)] {
        // Row counts stay far below 2^53.
        let _ = js_sys::Reflect::set(&object, &field.into(), &JsValue::from_f64(value as f64));
    }
    object.into()
}
