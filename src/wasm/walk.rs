//! Reads a JS argument into a [`Value`] in one walk, reading each JS value exactly once.
//!
//! Every call that can run the caller's code (a getter, a Proxy trap, a revoked Proxy, a
//! detached buffer) goes through an import declared `catch`. A JS exception thrown through an
//! import that does not catch unwinds past the wasm frames without running Rust's cleanup: the
//! store's borrow stays taken and the wasm stack pointer is never restored, so the instance
//! breaks after a few thousand of them. Sizes are checked before anything is copied into wasm
//! memory, so an oversized argument is refused without growing it.

use std::fmt;

use js_sys::{Array, ArrayBuffer, JsString, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::value::Value;
use crate::error::clip;
use crate::{Error, MAX_BLOB_BYTES, MAX_DOCUMENT_BYTES};

/// Nesting deeper than this is refused (it also stops cycles).
pub(super) const MAX_DEPTH: usize = 64;

/// The most data one argument may hold, counting [`NODE_BYTES`] per value besides the
/// characters of its strings and the bytes of its `Uint8Array`s: room for the largest blob
/// and its record, while `new Array(2 ** 32 - 1)` is refused before any element is read.
pub(super) const MAX_ARGUMENT_BYTES: usize = 2 * MAX_BLOB_BYTES;

/// What one value costs in wasm memory once read, about.
pub(super) const NODE_BYTES: usize = 32;

/// The longest string any field can hold: identifiers are shorter, and a string inside a JSON
/// document cannot be longer than the document.
pub(super) const MAX_STRING_CHARS: usize = MAX_DOCUMENT_BYTES;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn is_array(value: &JsValue) -> Result<bool, JsValue>;

    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    fn entries(value: &JsValue) -> Result<Array, JsValue>;

    /// `Object.prototype.toString.call(value)`: `"[object Uint8Array]"` for a typed array,
    /// whatever its prototype says.
    #[wasm_bindgen(catch, js_namespace = ["Object", "prototype", "toString"], js_name = call)]
    fn type_tag(value: &JsValue) -> Result<JsValue, JsValue>;

    /// `Uint8Array.prototype.set.call(target, source)`: copies `source` into `target`.
    #[wasm_bindgen(catch, js_namespace = ["Uint8Array", "prototype", "set"], js_name = call)]
    fn copy_into(target: &Uint8Array, source: &JsValue) -> Result<(), JsValue>;
}

/// Where a value sits inside an argument, rendered only when an error names it.
pub(super) enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, u32),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Key(parent, key) => write!(f, "{parent}.{}", clip(key)),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

fn invalid(path: &Path<'_>, reason: impl Into<String>) -> Error {
    Error::invalid(path.to_string(), reason)
}

fn unreadable(path: &Path<'_>) -> Error {
    invalid(path, "could not be read (a getter or Proxy trap threw)")
}

/// Reads the argument `name`.
///
/// # Errors
/// [`Error::InvalidInput`] naming the path inside the argument for anything but plain data
/// (strings, finite numbers, booleans, `null`, plain objects, arrays, `Uint8Array`), data that
/// throws when read, nesting deeper than [`MAX_DEPTH`] and oversized values.
pub(super) fn read(name: &str, value: &JsValue) -> Result<Value, Error> {
    let mut walk = Walk {
        left: MAX_ARGUMENT_BYTES,
    };
    walk.value(&Path::Root(name), value, 0)
}

struct Walk {
    /// Bytes this argument may still take.
    left: usize,
}

impl Walk {
    fn spend(&mut self, path: &Path<'_>, bytes: usize) -> Result<(), Error> {
        self.left = self.left.checked_sub(bytes).ok_or_else(|| {
            invalid(
                path,
                format!("makes the argument larger than {MAX_ARGUMENT_BYTES} bytes"),
            )
        })?;
        Ok(())
    }

    fn value(&mut self, path: &Path<'_>, value: &JsValue, depth: usize) -> Result<Value, Error> {
        self.spend(path, NODE_BYTES)?;
        if value.is_undefined() {
            return Ok(Value::Undefined);
        }
        if value.is_null() {
            return Ok(Value::Null);
        }
        if let Some(flag) = value.as_bool() {
            return Ok(Value::Bool(flag));
        }
        if let Some(number) = value.as_f64() {
            if !number.is_finite() {
                return Err(invalid(path, format!("{number} is not a finite number")));
            }
            return Ok(Value::Number(number));
        }
        if value.is_string() {
            return self.string(path, value.unchecked_ref()).map(Value::String);
        }
        if !value.is_object() {
            return Err(invalid(
                path,
                format!("is a {}, not plain data", kind(value)),
            ));
        }
        if depth >= MAX_DEPTH {
            return Err(invalid(
                path,
                format!("is nested deeper than {MAX_DEPTH} levels (or is cyclic)"),
            ));
        }
        // Checks an internal slot: runs no code of the caller's and is false for a Proxy.
        if ArrayBuffer::is_view(value) {
            return self.bytes(path, value).map(Value::Bytes);
        }
        if is_array(value).map_err(|_| unreadable(path))? {
            return self.array(path, value, depth);
        }
        self.object(path, value, depth)
    }

    fn string(&mut self, path: &Path<'_>, text: &JsString) -> Result<String, Error> {
        let chars = text.length() as usize;
        if chars > MAX_STRING_CHARS {
            return Err(invalid(
                path,
                format!("is {chars} characters long; the limit is {MAX_STRING_CHARS}"),
            ));
        }
        self.spend(path, chars)?;
        let Some(read) = text.as_string() else {
            return Err(invalid(path, "is not a string"));
        };
        // Reading replaces a lone surrogate with U+FFFD; only then is the slow check needed.
        if read.contains('\u{FFFD}') && !text.is_valid_utf16() {
            return Err(invalid(
                path,
                "contains a lone surrogate (not valid Unicode)",
            ));
        }
        Ok(read)
    }

    fn bytes(&mut self, path: &Path<'_>, value: &JsValue) -> Result<Vec<u8>, Error> {
        let tag = type_tag(value).map_err(|_| unreadable(path))?;
        if tag.as_string().as_deref() != Some("[object Uint8Array]") {
            return Err(invalid(
                path,
                "is a typed array or DataView other than Uint8Array",
            ));
        }
        let read_number = |key: &str| {
            Reflect::get(value, &JsValue::from_str(key))
                .ok()
                .and_then(|v| v.as_f64())
        };
        let length = read_number("byteLength").ok_or_else(|| unreadable(path))? as usize;
        if length > MAX_BLOB_BYTES {
            return Err(invalid(
                path,
                format!("is {length} bytes long; the limit is {MAX_BLOB_BYTES}"),
            ));
        }
        if length == 0 && is_detached(value) {
            return Err(invalid(path, "is detached (its buffer was transferred)"));
        }
        self.spend(path, length)?;
        let mut bytes = vec![0; length];
        // SAFETY: the view covers `bytes` exactly and is dropped before `bytes` is touched
        // again; nothing allocates (and so moves wasm memory) while it lives.
        let view = unsafe { Uint8Array::view_mut_raw(bytes.as_mut_ptr(), length) };
        copy_into(&view, value).map_err(|_| unreadable(path))?;
        Ok(bytes)
    }

    fn array(&mut self, path: &Path<'_>, value: &JsValue, depth: usize) -> Result<Value, Error> {
        let length = Reflect::get(value, &JsValue::from_str("length"))
            .map_err(|_| unreadable(path))?
            .as_f64()
            .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= f64::from(u32::MAX))
            .ok_or_else(|| invalid(path, "has no valid length"))? as usize;
        if length.saturating_mul(NODE_BYTES) > self.left {
            return Err(invalid(
                path,
                format!("has {length} items, more than one argument can hold"),
            ));
        }
        let mut items = Vec::with_capacity(length);
        for index in 0..length as u32 {
            let item_path = Path::Index(path, index);
            let item = Reflect::get_u32(value, index).map_err(|_| unreadable(&item_path))?;
            items.push(self.value(&item_path, &item, depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    /// Accepts plain objects only: a `Map`, `Date` or class instance would be read as `{}`.
    fn object(&mut self, path: &Path<'_>, value: &JsValue, depth: usize) -> Result<Value, Error> {
        let prototype = Reflect::get_prototype_of(value).map_err(|_| unreadable(path))?;
        if !prototype.is_null() {
            let grand = Reflect::get_prototype_of(&prototype).map_err(|_| unreadable(path))?;
            if !grand.is_null() {
                return Err(invalid(
                    path,
                    "is not a plain object (a Map, Date or class instance cannot be stored)",
                ));
            }
        }
        let pairs = entries(value).map_err(|_| unreadable(path))?;
        if (pairs.length() as usize).saturating_mul(NODE_BYTES) > self.left {
            return Err(invalid(path, "has more keys than one argument can hold"));
        }
        let mut fields = Vec::with_capacity(pairs.length() as usize);
        // `Object.entries` made these pairs: plain arrays of a string key and a value.
        for pair in pairs.iter() {
            let pair: Array = pair.unchecked_into();
            let key = pair.get(0);
            let name = self.string(path, key.unchecked_ref())?;
            let item = pair.get(1);
            if item.is_undefined() {
                // An absent optional field.
                continue;
            }
            let item_path = Path::Key(path, &name);
            if name == "__proto__" {
                // It would come back as the object's prototype, not as a field.
                return Err(invalid(&item_path, "__proto__ cannot be a field name"));
            }
            let item = self.value(&item_path, &item, depth + 1)?;
            fields.push((name, item));
        }
        Ok(Value::Object(fields))
    }
}

/// Whether the buffer under `view` was transferred away. Browsers without
/// `ArrayBuffer.prototype.detached` read such a view as empty.
fn is_detached(view: &JsValue) -> bool {
    Reflect::get(view, &JsValue::from_str("buffer"))
        .and_then(|buffer| Reflect::get(&buffer, &JsValue::from_str("detached")))
        .is_ok_and(|detached| detached.as_bool() == Some(true))
}

fn kind(value: &JsValue) -> &'static str {
    if value.is_bigint() {
        "bigint"
    } else if value.is_symbol() {
        "symbol"
    } else if value.is_function() {
        "function"
    } else {
        "value of an unknown kind"
    }
}
