//! An origin-wide Web Lock named after a pool, taken without waiting: the cheap gate that
//! turns a second tab or worker into a prompt BUSY before it touches any OPFS handle.

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::{errors, intrinsics, time};
use crate::error::{Error, Result};

#[wasm_bindgen]
extern "C" {
    /// `navigator.locks`, bound here because web-sys gates its binding behind an unstable cfg.
    type LockManager;

    #[wasm_bindgen(method, catch, js_name = request)]
    fn request(
        this: &LockManager,
        name: &str,
        options: &JsValue,
        callback: &JsValue,
    ) -> std::result::Result<Promise, JsValue>;
}

/// How long the browser may take to say whether the lock is free. With `ifAvailable` it
/// answers at once; the bound only keeps a misbehaving browser from wedging startup.
const DECISION_MS: i32 = 5_000;

/// How long the lock manager may take to act on a release.
const RELEASE_MS: i32 = 5_000;

/// A held Web Lock. The lock lasts until the promise returned to the lock manager settles:
/// [`WebLock::release`] (or dropping the guard) resolves it.
pub(super) struct WebLock {
    resolve: Function,
    /// The request's promise: it settles once the lock manager has let the lock go.
    request: Promise,
}

impl WebLock {
    /// Takes the lock `name` if no one in this origin holds it; `None` when someone does.
    pub(super) async fn try_acquire(name: &str) -> Result<Option<WebLock>> {
        let locks = lock_manager()?;
        let mut decide = None;
        let decided = Promise::new(&mut |resolve, _reject| decide = Some(resolve));
        let decide: Function = decide.expect("a Promise executor runs synchronously");
        // The lock manager calls this once: with null when the lock is taken, else with the
        // lock, which stays held until the promise returned here settles.
        let callback = Closure::once_into_js(move |lock: JsValue| -> JsValue {
            if lock.is_null() {
                let _ = decide.call1(&JsValue::UNDEFINED, &JsValue::NULL);
                return JsValue::UNDEFINED;
            }
            let mut release = None;
            let held = Promise::new(&mut |resolve, _reject| release = Some(resolve));
            let release: Function = release.expect("a Promise executor runs synchronously");
            let _ = decide.call1(&JsValue::UNDEFINED, &release);
            held.into()
        });
        // Parsed, not assigned: a setter named `ifAvailable` on Object.prototype would take
        // the assignment, and the request would wait for the lock.
        let options = intrinsics::from_json(r#"{"ifAvailable":true}"#, None, None)
            .map_err(|e| errors::js("make lock options", &e))?;
        let request = locks
            .request(name, &options, &callback)
            .map_err(|e| errors::js("request a Web Lock", &e))?;
        // A refused request (bad name, opaque origin) rejects `request` without calling back.
        let first = Promise::race(&Array::of2(&decided, &request));
        let outcome = time::within(DECISION_MS, "the Web Lock decision", JsFuture::from(first))
            .await?
            .map_err(|e| errors::js("request a Web Lock", &e))?;
        Ok(outcome
            .dyn_into::<Function>()
            .ok()
            .map(|resolve| WebLock { resolve, request }))
    }

    /// Releases the lock and waits until the lock manager has let it go, so that a request
    /// made right after this returns can get it.
    pub(super) async fn release(self) -> Result<()> {
        let request = self.request.clone();
        drop(self);
        time::within(
            RELEASE_MS,
            "releasing the Web Lock",
            JsFuture::from(request),
        )
        .await?
        .map_err(|e| errors::js("release the Web Lock", &e))?;
        Ok(())
    }

    /// Keeps the lock held until the worker ends, for when the resources it guards cannot be
    /// released (a store of the pool is still open when the pool is dropped).
    pub(super) fn hold_until_worker_ends(self) {
        std::mem::forget(self);
    }
}

impl Drop for WebLock {
    fn drop(&mut self) {
        let _ = self.resolve.call0(&JsValue::UNDEFINED);
    }
}

fn lock_manager() -> Result<LockManager> {
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).unwrap_or_default();
    let locks = Reflect::get(&navigator, &"locks".into()).unwrap_or_default();
    if locks.is_undefined() || locks.is_null() {
        return Err(Error::OpfsUnavailable {
            message: format!(
                "a persistent store needs the Web Locks API (navigator.locks), which keeps a \
                 second tab or worker off it, and {} has none{}",
                super::context::describe(),
                super::context::instead()
            ),
        });
    }
    Ok(locks.unchecked_into())
}
