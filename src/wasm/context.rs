//! The JS context the store runs in, as an error names it when a medium asked for is missing
//! here (OPFS_UNAVAILABLE): what was asked, and what this context is and has instead.

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};

fn property(object: &JsValue, key: &str) -> JsValue {
    if object.is_undefined() || object.is_null() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(object, &key.into()).unwrap_or_default()
}

/// The version string at `path` from the global object (`["process", "versions", "node"]`).
fn version(path: &[&str]) -> Option<String> {
    let value = path.iter().fold(js_sys::global().into(), |object, key| {
        property(&object, key)
    });
    value.as_string()
}

/// A server runtime, named with its version (`Node.js v20.19.0`), or None in a browser.
fn server_runtime() -> Option<String> {
    if let Some(deno) = version(&["Deno", "version", "deno"]) {
        return Some(format!("Deno {deno}"));
    }
    if let Some(bun) = version(&["process", "versions", "bun"]) {
        return Some(format!("Bun {bun}"));
    }
    version(&["process", "versions", "node"]).map(|node| format!("Node.js v{node}"))
}

/// Where the store runs, for a message: `Node.js v20.19.0`, `a browser's dedicated worker`,
/// `a page's main thread`, ...
pub(super) fn describe() -> String {
    if let Some(runtime) = server_runtime() {
        return runtime;
    }
    let global = js_sys::global();
    if global
        .dyn_ref::<web_sys::DedicatedWorkerGlobalScope>()
        .is_some()
    {
        "a browser's dedicated worker".into()
    } else if global.dyn_ref::<web_sys::WorkerGlobalScope>().is_some() {
        "a shared or service worker".into()
    } else if !property(global.as_ref(), "document").is_undefined() {
        "a page's main thread".into()
    } else {
        "this JavaScript runtime".into()
    }
}

/// What to do instead, after a medium found missing: where a server runtime keeps a store.
pub(super) fn instead() -> &'static str {
    if server_runtime().is_some() {
        "; a store there lives in a file (persistence 'file' with a directory) or in memory \
         (persistence 'memory', or 'auto' without a directory, which takes memory where there \
         is no other medium)"
    } else {
        ""
    }
}
