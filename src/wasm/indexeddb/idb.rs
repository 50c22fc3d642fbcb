//! The IndexedDB database behind a pool: `runstore:<pool>`, version 1, with two object stores
//! of out-of-line keys. `files` maps a file name to its size in bytes; `blocks` maps
//! `[name, index]` to the block's bytes (a `Uint8Array` of [`BLOCK`] bytes). One write is one
//! `readwrite` transaction over both, so IndexedDB holds each file as of one write or the next,
//! never a mix.

use std::collections::HashMap;

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbFactory, IdbKeyRange, IdbOpenDbRequest, IdbRequest, IdbTransaction};

use super::blocks::{BlockFile, BLOCK};
use super::vfs::Batch;
use crate::error::{Error, Result};
use crate::wasm::{context, errors, time};
use crate::Durability;

#[wasm_bindgen]
extern "C" {
    /// An `IDBDatabase`, for `transaction(stores, mode, { durability })`: web-sys has the
    /// options only behind its unstable APIs.
    type DurableTransactions;

    #[wasm_bindgen(method, catch, js_name = transaction)]
    fn transaction(
        this: &DurableTransactions,
        stores: &Array,
        mode: &str,
        options: &Object,
    ) -> std::result::Result<IdbTransaction, JsValue>;
}

/// A block's index in its file and its bytes.
type Block = (u32, Box<[u8]>);

const FILES: &str = "files";
const BLOCKS: &str = "blocks";

/// How long opening the database may take: it waits only when another context is upgrading
/// or deleting it.
const OPEN_MS: i32 = 10_000;

/// An open IndexedDB database of a pool.
pub(super) struct Database {
    db: IdbDatabase,
}

/// The IndexedDB database name of pool `pool`.
pub(super) fn database_name(pool: &str) -> String {
    format!("runstore:{pool}")
}

/// `indexedDB` of this context, or OPFS_UNAVAILABLE (the store's code for "the persistent
/// storage asked for does not exist here").
fn factory() -> Result<IdbFactory> {
    let value = Reflect::get(&js_sys::global(), &"indexedDB".into()).unwrap_or_default();
    value
        .dyn_into::<IdbFactory>()
        .map_err(|_| Error::OpfsUnavailable {
            message: format!(
                "persistence 'indexeddb' needs IndexedDB (indexedDB), which {} does not have{}",
                context::describe(),
                context::instead()
            ),
        })
}

/// OPFS_UNAVAILABLE where this context has no IndexedDB: checked first, so that the error
/// names what was asked for rather than the Web Locks the store also needs.
pub(super) fn check_available() -> Result<()> {
    factory().map(drop)
}

/// A failure of IndexedDB while `operation` ran, classified by the exception's name.
fn failure(operation: &str, value: &JsValue) -> Error {
    errors::js(operation, value)
}

/// A failure to open the database: storage blocked (some browsers' private windows, a
/// browser's settings) means there is nothing persistent here.
fn open_failure(value: &JsValue) -> Error {
    let error = errors::js("open IndexedDB", value);
    match errors::js_name(value).as_deref() {
        Some("InvalidStateError" | "SecurityError" | "InvalidAccessError") => {
            Error::OpfsUnavailable {
                message: error.to_string(),
            }
        }
        _ => error,
    }
}

/// Settles when `request` does: with its result, or with its error.
fn settled(request: &IdbRequest) -> JsFuture {
    let promise = Promise::new(&mut |resolve, reject| {
        let source = request.clone();
        let succeeded = Closure::once_into_js(move || {
            let result = source.result().unwrap_or_default();
            let _ = resolve.call1(&JsValue::UNDEFINED, &result);
        });
        let source = request.clone();
        let failed = Closure::once_into_js(move |event: web_sys::Event| {
            // Handled here: the transaction is aborted by the error all the same.
            event.prevent_default();
            let error: JsValue = source
                .error()
                .ok()
                .flatten()
                .map(Into::into)
                .unwrap_or_default();
            let _ = reject.call1(&JsValue::UNDEFINED, &error);
        });
        request.set_onsuccess(Some(succeeded.unchecked_ref()));
        request.set_onerror(Some(failed.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// Settles when `transaction` has committed (durably as it was asked to), or failed.
fn committed(transaction: &IdbTransaction) -> JsFuture {
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let complete = Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        });
        let source = transaction.clone();
        let aborted = Closure::once_into_js(move || {
            let error: JsValue = source.error().map(Into::into).unwrap_or_else(|| {
                js_sys::Error::new("the IndexedDB transaction was aborted").into()
            });
            let _ = reject.call1(&JsValue::UNDEFINED, &error);
        });
        transaction.set_oncomplete(Some(complete.unchecked_ref()));
        transaction.set_onabort(Some(aborted.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// Opens (creating if needed) the pool's database.
pub(super) async fn open(pool: &str) -> Result<Database> {
    let request: IdbOpenDbRequest = factory()?
        .open_with_u32(&database_name(pool), 1)
        .map_err(|e| open_failure(&e))?;
    let source = request.clone();
    let upgrade = Closure::once_into_js(move || {
        // Version 1 from nothing: the only upgrade there is.
        if let Ok(db) = source.result().and_then(|db| db.dyn_into::<IdbDatabase>()) {
            let _ = db.create_object_store(FILES);
            let _ = db.create_object_store(BLOCKS);
        }
    });
    request.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
    let db = time::within(OPEN_MS, "opening IndexedDB", settled(&request))
        .await?
        .map_err(|e| open_failure(&e))?;
    let db: IdbDatabase = db.unchecked_into();
    let names = db.object_store_names();
    if !names.contains(FILES) || !names.contains(BLOCKS) {
        db.close();
        return Err(Error::Corrupt {
            message: format!(
                "IndexedDB database {} lacks its object stores",
                database_name(pool)
            ),
        });
    }
    Ok(Database { db })
}

fn stores() -> Array {
    Array::of2(&FILES.into(), &BLOCKS.into())
}

fn block_key(name: &str, index: u32) -> JsValue {
    Array::of2(&name.into(), &index.into()).into()
}

/// Every block key of file `name`.
fn file_blocks(name: &str) -> std::result::Result<JsValue, JsValue> {
    let lower = block_key(name, 0);
    let upper: JsValue = Array::of2(&name.into(), &f64::INFINITY.into()).into();
    IdbKeyRange::bound(&lower, &upper).map(Into::into)
}

impl Database {
    /// Every file the database holds, read in one transaction.
    pub(super) async fn load(&self) -> Result<Vec<(String, BlockFile)>> {
        let operation = "read IndexedDB";
        let fail = |e: JsValue| failure(operation, &e);
        let transaction = self
            .db
            .transaction_with_str_sequence(&stores())
            .map_err(fail)?;
        let files = transaction.object_store(FILES).map_err(fail)?;
        let blocks = transaction.object_store(BLOCKS).map_err(fail)?;
        let requests = [
            files.get_all_keys().map_err(fail)?,
            files.get_all().map_err(fail)?,
            blocks.get_all_keys().map_err(fail)?,
            blocks.get_all().map_err(fail)?,
        ];
        let mut results = Vec::with_capacity(requests.len());
        for request in &requests {
            results.push(Array::from(&settled(request).await.map_err(fail)?));
        }
        let [names, sizes, keys, values] = <[Array; 4]>::try_from(results).expect("four reads");
        let mut blocks_of: HashMap<String, Vec<Block>> = HashMap::new();
        for (key, value) in keys.iter().zip(values.iter()) {
            let key = Array::from(&key);
            let (Some(name), Some(index)) = (key.get(0).as_string(), key.get(1).as_f64()) else {
                return Err(corrupt("a block key is not [name, index]"));
            };
            match value.dyn_into::<Uint8Array>() {
                Ok(bytes) if index >= 0.0 && bytes.length() as usize == BLOCK => {
                    let bytes = bytes.to_vec().into_boxed_slice();
                    blocks_of
                        .entry(name)
                        .or_default()
                        .push((index as u32, bytes));
                }
                _ => return Err(corrupt(&format!("block {index} of {name} is damaged"))),
            }
        }
        let mut loaded = Vec::new();
        for (name, size) in names.iter().zip(sizes.iter()) {
            let (Some(name), Some(size)) = (name.as_string(), size.as_f64()) else {
                return Err(corrupt("a file entry is not a name and a size"));
            };
            let blocks = blocks_of.remove(&name).unwrap_or_default();
            loaded.push((name, BlockFile::loaded(blocks, size.max(0.0) as u64)));
        }
        Ok(loaded)
    }

    /// Stores `batch` in one transaction and resolves once IndexedDB has committed it, with
    /// the durability hint `durability` names (`strict` for full, `relaxed` for relaxed).
    pub(super) async fn write(&self, batch: &Batch) -> Result<()> {
        let operation = "write to IndexedDB";
        let fail = |e: JsValue| failure(operation, &e);
        let options = Object::new();
        let hint = match batch.durability {
            Durability::Full => "strict",
            Durability::Relaxed => "relaxed",
        };
        Reflect::set(&options, &"durability".into(), &hint.into()).map_err(fail)?;
        let transaction = self
            .db
            .unchecked_ref::<DurableTransactions>()
            .transaction(&stores(), "readwrite", &options)
            .map_err(fail)?;
        let done = committed(&transaction);
        if let Err(error) = self.put_batch(&transaction, batch) {
            let _ = transaction.abort();
            let _ = done.await;
            return Err(fail(error));
        }
        done.await.map(|_| ()).map_err(fail)
    }

    /// Issues the batch's requests, in order: deleted files first (a file deleted and made
    /// again under its name is both), then each changed file's blocks and size.
    fn put_batch(
        &self,
        transaction: &IdbTransaction,
        batch: &Batch,
    ) -> std::result::Result<(), JsValue> {
        let files = transaction.object_store(FILES)?;
        let blocks = transaction.object_store(BLOCKS)?;
        for name in &batch.deleted {
            files.delete(&name.into())?;
            blocks.delete(&file_blocks(name)?)?;
        }
        for (name, changes) in &batch.changed {
            for index in &changes.deletes {
                blocks.delete(&block_key(name, *index))?;
            }
            for (index, bytes) in &changes.puts {
                blocks.put_with_key(&Uint8Array::from(&bytes[..]), &block_key(name, *index))?;
            }
            files.put_with_key(&(changes.size as f64).into(), &name.into())?;
        }
        Ok(())
    }

    /// Closes the connection: the browser finishes any write under way first.
    pub(super) fn close(&self) {
        self.db.close();
    }
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt {
        message: format!("the store's IndexedDB data: {what}"),
    }
}
