//! Reads a JS argument into a [`Value`] in one walk, reading each JS value exactly once.
//!
//! Every call that can run the caller's code (a getter, a Proxy trap, a revoked Proxy, a
//! detached buffer) goes to a built-in taken at load (`intrinsics.rs`), imported with `catch`.
//! Only own properties and internal slots are read: a hole in an array is `undefined`, never a
//! prototype's item, and a typed array's type and length come from its slots, whatever getters
//! its prototype or the array itself define. Sizes are checked before anything is copied into
//! wasm memory, so an oversized argument is refused without growing it.

use std::fmt;

use js_sys::{Array, JsString, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::intrinsics::{
    byte_length, copy_bytes, is_array, is_detached, is_view, is_well_formed, length_of,
    own_entries, own_item, prototype_of, typed_array_name,
};
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
        if is_view(value).map_err(|_| unreadable(path))? {
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
        // U+FFFD is EF BF BD in UTF-8: a scan for its first byte passes most strings at once.
        if read.as_bytes().contains(&0xEF)
            && read.contains('\u{FFFD}')
            && !is_well_formed(text).unwrap_or(false)
        {
            return Err(invalid(
                path,
                "contains a lone surrogate (not valid Unicode)",
            ));
        }
        Ok(read)
    }

    fn bytes(&mut self, path: &Path<'_>, value: &JsValue) -> Result<Vec<u8>, Error> {
        let length = uint8_array_length(path, value, MAX_BLOB_BYTES)?;
        self.spend(path, length)?;
        copy_in(path, value, length)
    }

    fn array(&mut self, path: &Path<'_>, value: &JsValue, depth: usize) -> Result<Value, Error> {
        let length = length_of(value)
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
            let item = own_item(value, index).map_err(|_| unreadable(&item_path))?;
            items.push(self.value(&item_path, &item, depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    /// Accepts plain objects only: a `Map`, `Date` or class instance would be read as `{}`.
    fn object(&mut self, path: &Path<'_>, value: &JsValue, depth: usize) -> Result<Value, Error> {
        let prototype = prototype_of(value).map_err(|_| unreadable(path))?;
        if !prototype.is_null() {
            let grand = prototype_of(&prototype).map_err(|_| unreadable(path))?;
            if !grand.is_null() {
                return Err(invalid(
                    path,
                    "is not a plain object (a Map, Date or class instance cannot be stored)",
                ));
            }
        }
        let pairs = own_entries(value).map_err(|_| unreadable(path))?;
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

/// Reads the `Uint8Array` argument `name` of at most `limit` bytes, as [`read`] reads one
/// inside an argument.
///
/// # Errors
/// [`Error::InvalidInput`] naming `name` for anything else, an oversized or detached array,
/// and one that throws when read.
pub(super) fn read_bytes(name: &str, value: &JsValue, limit: usize) -> Result<Vec<u8>, Error> {
    let path = Path::Root(name);
    if !is_view(value).map_err(|_| unreadable(&path))? {
        return Err(invalid(&path, "must be a Uint8Array"));
    }
    let length = uint8_array_length(&path, value, limit)?;
    copy_in(&path, value, length)
}

/// The length of the typed array `value`, which must be a `Uint8Array` of at most `limit`
/// bytes and not detached; read from its internal slots.
fn uint8_array_length(path: &Path<'_>, value: &JsValue, limit: usize) -> Result<usize, Error> {
    let name = typed_array_name(value).map_err(|_| unreadable(path))?;
    if name.as_string().as_deref() != Some("Uint8Array") {
        return Err(invalid(
            path,
            "is a typed array or DataView other than Uint8Array",
        ));
    }
    let length = byte_length(value).map_err(|_| unreadable(path))? as usize;
    if length > limit {
        return Err(invalid(
            path,
            format!("is {length} bytes long; the limit is {limit}"),
        ));
    }
    if length == 0 && is_detached(value).unwrap_or(false) {
        return Err(invalid(path, "is detached (its buffer was transferred)"));
    }
    Ok(length)
}

/// Copies the `length` bytes of the `Uint8Array` `value` into wasm memory.
fn copy_in(path: &Path<'_>, value: &JsValue, length: usize) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![0; length];
    // SAFETY: the view covers `bytes` exactly and is dropped before `bytes` is touched
    // again; nothing allocates (and so moves wasm memory) while it lives.
    let view = unsafe { Uint8Array::view_mut_raw(bytes.as_mut_ptr(), length) };
    copy_bytes(&view, value).map_err(|_| unreadable(path))?;
    Ok(bytes)
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
