//! Conversions from browser and sahpool failures to the store's error codes.

use js_sys::Reflect;
use sqlite_wasm_vfs::sahpool::OpfsSAHError;
use wasm_bindgen::JsValue;

use crate::error::Error;

/// The `name` of a JS exception (`"NoModificationAllowedError"`, ...), if it has one.
pub(super) fn js_name(value: &JsValue) -> Option<String> {
    Reflect::get(value, &"name".into()).ok()?.as_string()
}

fn js_message(value: &JsValue) -> String {
    let message = Reflect::get(value, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"));
    match js_name(value) {
        Some(name) => format!("{name}: {message}"),
        None => message,
    }
}

/// A JS exception thrown by `operation`, classified by its name.
pub(super) fn js(operation: &str, value: &JsValue) -> Error {
    classify(
        js_name(value).as_deref(),
        format!("{operation}: {}", js_message(value)),
    )
}

fn classify(name: Option<&str>, message: String) -> Error {
    match name {
        // Another context holds a sync access handle on one of the pool's files.
        Some("NoModificationAllowedError") => Error::Busy { message },
        Some("QuotaExceededError") => Error::StorageFull { message },
        // Private browsing, blocked storage, an insecure or opaque origin, or (WebKitGTK) an
        // OPFS without sync access handles.
        Some("SecurityError" | "NotAllowedError" | "NotSupportedError") => {
            Error::OpfsUnavailable { message }
        }
        _ => Error::Backend { message },
    }
}

/// A failure of the sahpool VFS's management API.
pub(super) fn pool(error: OpfsSAHError) -> Error {
    let message = error.to_string();
    match error {
        OpfsSAHError::NotSupported => Error::OpfsUnavailable { message },
        OpfsSAHError::Opfs {
            operation: "get OPFS root",
            ..
        } => Error::OpfsUnavailable { message },
        OpfsSAHError::Opfs { value, .. } => classify(js_name(&value).as_deref(), message),
        OpfsSAHError::FileInUse(_) | OpfsSAHError::FilesInUse | OpfsSAHError::Busy => {
            Error::Busy { message }
        }
        OpfsSAHError::NoCapacity => Error::StorageFull {
            message: format!("{message} (OpfsPool::reserve adds slots)"),
        },
        OpfsSAHError::InvalidHeader { .. } | OpfsSAHError::DuplicateFilename(_) => {
            Error::Corrupt { message }
        }
        OpfsSAHError::InvalidFilename(reason) => Error::invalid("database", reason),
        OpfsSAHError::Cleanup { error, .. } => pool(*error),
        _ => Error::Backend { message },
    }
}

/// Whether `error` means another context holds one of the pool's handles.
pub(super) fn is_handle_held(error: &OpfsSAHError) -> bool {
    match error {
        OpfsSAHError::Opfs { value, .. } => {
            js_name(value).as_deref() == Some("NoModificationAllowedError")
        }
        OpfsSAHError::Cleanup { error, .. } => is_handle_held(error),
        _ => false,
    }
}
