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

/// Whether the last failure the VFS `vfs_name` reported (its `xGetLastError`) was a write that
/// wrote fewer bytes than asked. That is how Firefox answers a write past the origin's quota
/// (`write()` returns 0, where Chromium throws QuotaExceededError), and how some Chrome
/// versions do (wa-sqlite#336); sqlite-wasm-vfs turns it into SQLite's generic I/O error.
pub(super) fn last_write_was_short(vfs_name: &str) -> bool {
    use sqlite_wasm_rs::vfs::ffi::sqlite3_vfs_find;
    let Ok(name) = std::ffi::CString::new(vfs_name) else {
        return false;
    };
    let mut message = [0u8; 512];
    // SAFETY: the VFS, found by name, stays registered while its pool is open (the caller
    // holds the pool); xGetLastError writes at most `len` bytes, NUL-terminated.
    let written = unsafe {
        let vfs = sqlite3_vfs_find(name.as_ptr());
        match vfs.as_ref().and_then(|vfs| vfs.xGetLastError) {
            Some(last_error) => {
                last_error(vfs, message.len() as i32, message.as_mut_ptr().cast());
                true
            }
            None => false,
        }
    };
    let text = std::ffi::CStr::from_bytes_until_nul(&message)
        .map(|text| text.to_string_lossy())
        .unwrap_or_default();
    // sqlite-wasm-vfs 0.3's `ShortIo`: "write file: expected {n} bytes, got {m}".
    written && text.starts_with("write file: expected ")
}
