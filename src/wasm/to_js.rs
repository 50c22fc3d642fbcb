//! Answers as JS values, built without running a caller's code.
//!
//! Setting a property by assignment (`object[key] = value`, as serde-wasm-bindgen builds
//! objects) runs a setter of that name on `Object.prototype` or `Array.prototype`: a caller who
//! defined one would get an answer without that field, or an exception thrown through the wasm,
//! which leaves the store unusable (see `intrinsics.rs`). `JSON.parse` makes every property a
//! data property and runs no setter, so an answer travels as JSON text, parsed by the
//! `JSON.parse` taken when the package loaded. Bytes, which JSON cannot hold, are written as
//! `null` and their places noted; JS puts a new `Uint8Array` there.
//!
//! As before, an integer JS cannot hold exactly (beyond ±(2^53 − 1)) is refused, not rounded.

use std::io::{self, Write};

use js_sys::Uint8Array;
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};
use wasm_bindgen::JsValue;

use super::intrinsics::{copy_out, from_json};
use crate::Error;

/// Integers up to this magnitude are exact in a JS number.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `value` as a JS value: objects, arrays, strings, numbers, booleans, `null` for absent values
/// and `Uint8Array`s for bytes.
///
/// # Errors
/// [`Error::Serialization`] for an integer beyond ±(2^53 − 1) or a value JSON cannot express.
pub(super) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, Error> {
    let mut text = Vec::with_capacity(256);
    let mut found = Found::default();
    let formatter = Places {
        found: &mut found,
        stack: Vec::new(),
        key: None,
    };
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut text, formatter,
        ))
        .map_err(|e| serialization(e.to_string()))?;
    let text = String::from_utf8(text).map_err(|e| serialization(e.to_string()))?;
    if found.places.is_empty() {
        if let Some(value) = primitive(&text) {
            return Ok(value);
        }
        return from_json(&text, None, None).map_err(|_| serialization("JSON.parse failed"));
    }
    let places = serde_json::to_string(&found.places).map_err(|e| serialization(e.to_string()))?;
    // SAFETY: nothing allocates in wasm memory (which would move it) while the view lives:
    // `from_json` copies what it needs before it returns.
    let bytes = unsafe { Uint8Array::view(&found.bytes) };
    from_json(&text, Some(places), Some(bytes)).map_err(|_| serialization("JSON.parse failed"))
}

/// A number, boolean or `null` (most writes answer one) made without a call into JS.
fn primitive(text: &str) -> Option<JsValue> {
    match text {
        "null" => Some(JsValue::NULL),
        "true" => Some(JsValue::TRUE),
        "false" => Some(JsValue::FALSE),
        _ if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => {
            text.parse::<f64>().ok().map(JsValue::from_f64)
        }
        _ => None,
    }
}

/// `bytes` as a new `Uint8Array`, copied straight out of wasm memory (a whole database file
/// would otherwise be copied once more on the way).
pub(super) fn bytes_to_js(bytes: &[u8]) -> Result<JsValue, Error> {
    let length = u32::try_from(bytes.len()).map_err(|e| serialization(e.to_string()))?;
    // SAFETY: as in `to_js`.
    let view = unsafe { Uint8Array::view(bytes) };
    copy_out(&view, 0, length).map_err(|_| serialization("copying bytes out failed"))
}

fn serialization(message: impl Into<String>) -> Error {
    Error::Serialization {
        message: message.into(),
    }
}

/// The byte arrays of an answer: their bytes one after another, and where each goes, as
/// `[start, end, key or index, ...]` from the root.
#[derive(Default)]
struct Found {
    bytes: Vec<u8>,
    places: Vec<Vec<serde_json::Value>>,
}

/// One open array or object, and where the writer is inside it.
enum Level {
    Array(usize),
    Object(Option<String>),
}

/// A compact JSON formatter that writes bytes as `null` and notes where they go: it follows
/// the arrays and objects the writer is in and reads each key as it is written.
struct Places<'a> {
    found: &'a mut Found,
    stack: Vec<Level>,
    /// The JSON text of the key being written, while one is.
    key: Option<Vec<u8>>,
}

impl Places<'_> {
    fn place(&self, start: usize, end: usize) -> io::Result<Vec<serde_json::Value>> {
        let mut place = vec![start.into(), end.into()];
        for level in &self.stack {
            place.push(match level {
                Level::Array(index) => (*index).into(),
                Level::Object(Some(key)) => key.as_str().into(),
                Level::Object(None) => {
                    return Err(io::Error::other("bytes under a key that is not a string"))
                }
            });
        }
        Ok(place)
    }

    /// Writes through the compact formatter, and into the key being written if any.
    fn write<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        write: impl Fn(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(key) = &mut self.key {
            write(key)?;
        }
        write(&mut WriterRef(writer))
    }
}

/// A `&mut W` for a `W` that may be unsized, as a `dyn Write`.
struct WriterRef<'a, W: ?Sized>(&'a mut W);

impl<W: ?Sized + Write> Write for WriterRef<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

fn exact(integer: u128, text: impl std::fmt::Display) -> io::Result<()> {
    if integer > u128::from(MAX_SAFE_INTEGER) {
        return Err(io::Error::other(format!(
            "{text} cannot be represented as a JavaScript number"
        )));
    }
    Ok(())
}

/// The writes of integers no JS number misreads, through [`Places::write`] (a map key may be
/// one).
macro_rules! small_integers {
    ($($method:ident: $type:ty),*) => {$(
        fn $method<W: ?Sized + Write>(&mut self, writer: &mut W, value: $type) -> io::Result<()> {
            self.write(writer, |w| CompactFormatter.$method(w, value))
        }
    )*};
}

impl Formatter for Places<'_> {
    small_integers!(write_u8: u8, write_u16: u16, write_u32: u32, write_i8: i8, write_i16: i16, write_i32: i32);

    fn write_u64<W: ?Sized + Write>(&mut self, writer: &mut W, value: u64) -> io::Result<()> {
        exact(u128::from(value), value)?;
        self.write(writer, |w| CompactFormatter.write_u64(w, value))
    }

    fn write_i64<W: ?Sized + Write>(&mut self, writer: &mut W, value: i64) -> io::Result<()> {
        exact(u128::from(value.unsigned_abs()), value)?;
        self.write(writer, |w| CompactFormatter.write_i64(w, value))
    }

    fn write_u128<W: ?Sized + Write>(&mut self, writer: &mut W, value: u128) -> io::Result<()> {
        exact(value, value)?;
        self.write(writer, |w| CompactFormatter.write_u128(w, value))
    }

    fn write_i128<W: ?Sized + Write>(&mut self, writer: &mut W, value: i128) -> io::Result<()> {
        exact(value.unsigned_abs(), value)?;
        self.write(writer, |w| CompactFormatter.write_i128(w, value))
    }

    fn begin_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.write(writer, |w| CompactFormatter.begin_string(w))
    }

    fn end_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.write(writer, |w| CompactFormatter.end_string(w))
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.write(writer, |w| {
            CompactFormatter.write_string_fragment(w, fragment)
        })
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        let escape = &escape;
        self.write(writer, |w| {
            CompactFormatter.write_char_escape(w, copy_escape(escape))
        })
    }

    fn write_byte_array<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        value: &[u8],
    ) -> io::Result<()> {
        let start = self.found.bytes.len();
        self.found.bytes.extend_from_slice(value);
        let place = self.place(start, self.found.bytes.len())?;
        self.found.places.push(place);
        writer.write_all(b"null")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.stack.push(Level::Array(0));
        writer.write_all(b"[")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if let Some(Level::Array(index)) = self.stack.last_mut() {
            if !first {
                *index += 1;
            }
        }
        CompactFormatter.begin_array_value(writer, first)
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.stack.pop();
        writer.write_all(b"]")
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.stack.push(Level::Object(None));
        writer.write_all(b"{")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.key = Some(Vec::new());
        CompactFormatter.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        let text = self.key.take().unwrap_or_default();
        // A key is a JSON string; one written otherwise (a number) is not followed.
        let key = serde_json::from_slice::<String>(&text).ok();
        if let Some(Level::Object(current)) = self.stack.last_mut() {
            *current = key;
        }
        Ok(())
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.stack.pop();
        writer.write_all(b"}")
    }
}

/// `CharEscape` is not `Clone`.
fn copy_escape(escape: &CharEscape) -> CharEscape {
    match escape {
        CharEscape::Quote => CharEscape::Quote,
        CharEscape::ReverseSolidus => CharEscape::ReverseSolidus,
        CharEscape::Solidus => CharEscape::Solidus,
        CharEscape::Backspace => CharEscape::Backspace,
        CharEscape::FormFeed => CharEscape::FormFeed,
        CharEscape::LineFeed => CharEscape::LineFeed,
        CharEscape::CarriageReturn => CharEscape::CarriageReturn,
        CharEscape::Tab => CharEscape::Tab,
        CharEscape::AsciiControl(byte) => CharEscape::AsciiControl(*byte),
    }
}
