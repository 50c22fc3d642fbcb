//! Reads arguments sent as JSON text into the [`Value`] trees that `walk.rs` reads JS values
//! into, under the same limits, so that they meet the same conversions and checks after.
//!
//! The main-thread client sends every write this way (js/wire.js): its arguments, captured
//! when the call is made, as one string to post instead of objects to clone, parsed here at a
//! fraction of the cost of reading the same objects through calls into JS. JSON has no bytes:
//! the client writes `null` where a `Uint8Array` stood and sends a copy of the bytes beside the
//! text, with the ordinal of that `null` among the text's nulls (a "hole"); the reader puts the
//! bytes back there. The client encodes only what reads back as exactly the value it holds,
//! within the limits below (anything else goes as the values themselves, whose walk names the
//! field), so the reasons here need not name one.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::value::Value;
use super::walk::{MAX_ARGUMENT_BYTES, MAX_DEPTH, MAX_STRING_CHARS, NODE_BYTES};
use crate::{Error, MAX_BLOB_BYTES};

/// The byte arrays that stand in a text's nulls: `(ordinal of the null, bytes)`, in order.
pub(super) type Holes = Vec<(u64, Vec<u8>)>;

/// Reads the arguments of a call from their JSON text, an array: one tree per argument, each
/// read as `walk.rs` reads an argument (from depth 0, within its own size limit), with the
/// byte arrays of `holes` in their nulls.
///
/// # Errors
/// [`Error::InvalidInput`] (field `arguments`) for text that is not one JSON array, nesting
/// deeper than [`MAX_DEPTH`], a `__proto__` key, oversized values (counted as `walk.rs`
/// counts them), and holes that are not nulls of the text.
pub(super) fn read_arguments(text: &str, holes: Holes) -> Result<Vec<Value>, Error> {
    let mut reader = Reader::new(holes);
    let mut json = serde_json::Deserializer::from_str(text);
    let arguments = Arguments(&mut reader)
        .deserialize(&mut json)
        .and_then(|values| json.end().map(|()| values));
    let arguments = arguments.map_err(|error| Error::invalid("arguments", error.to_string()))?;
    if !reader.holes.is_empty() {
        return Err(Error::invalid(
            "arguments",
            "a byte array stands in no null",
        ));
    }
    Ok(arguments)
}

/// What reading one text keeps track of: the bytes the argument being read may still take,
/// the nulls read so far, and the byte arrays still to place.
struct Reader {
    left: usize,
    nulls: u64,
    holes: std::collections::VecDeque<(u64, Vec<u8>)>,
}

impl Reader {
    fn new(holes: Holes) -> Self {
        Reader {
            left: MAX_ARGUMENT_BYTES,
            nulls: 0,
            holes: holes.into(),
        }
    }
}

/// The text's root: the array of arguments.
struct Arguments<'a>(&'a mut Reader);

impl<'de> DeserializeSeed<'de> for Arguments<'_> {
    type Value = Vec<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, json: D) -> Result<Vec<Value>, D::Error> {
        json.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Arguments<'_> {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of arguments")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let mut arguments = Vec::new();
        loop {
            // Each argument may take as much as the walk lets one take.
            self.0.left = MAX_ARGUMENT_BYTES;
            let node = Node {
                depth: 0,
                reader: &mut *self.0,
            };
            match seq.next_element_seed(node)? {
                Some(argument) => arguments.push(argument),
                None => return Ok(arguments),
            }
        }
    }
}

/// One value of the text at `depth`.
struct Node<'a> {
    depth: usize,
    reader: &'a mut Reader,
}

impl Node<'_> {
    fn spend<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        let reader = &mut *self.reader;
        reader.left = reader.left.checked_sub(bytes).ok_or_else(|| {
            E::custom(format_args!(
                "makes the argument larger than {MAX_ARGUMENT_BYTES} bytes"
            ))
        })?;
        Ok(())
    }

    /// A string as the walk takes one: limited and counted by its length in UTF-16 units,
    /// which its UTF-8 length bounds (and is counted only when that bound is not enough).
    fn string<E: de::Error>(&mut self, text: String) -> Result<String, E> {
        let mut units = text.len();
        if units > MAX_STRING_CHARS || units > self.reader.left {
            units = text.encode_utf16().count();
        }
        if units > MAX_STRING_CHARS {
            return Err(E::custom(format_args!(
                "a string is longer than {MAX_STRING_CHARS} characters"
            )));
        }
        self.spend(units)?;
        Ok(text)
    }

    /// A null, or the byte array that stands in it.
    fn null<E: de::Error>(&mut self) -> Result<Value, E> {
        let ordinal = self.reader.nulls;
        self.reader.nulls += 1;
        if self.reader.holes.front().map(|(at, _)| *at) != Some(ordinal) {
            return Ok(Value::Null);
        }
        let (_, bytes) = self.reader.holes.pop_front().unwrap_or_default();
        if bytes.len() > MAX_BLOB_BYTES {
            return Err(E::custom(format_args!(
                "a byte array is longer than {MAX_BLOB_BYTES} bytes"
            )));
        }
        self.spend(bytes.len())?;
        Ok(Value::Bytes(bytes))
    }

    fn child(&mut self) -> Node<'_> {
        Node {
            depth: self.depth + 1,
            reader: &mut *self.reader,
        }
    }

    fn nest<E: de::Error>(&self) -> Result<(), E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "is nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(mut self, json: D) -> Result<Value, D::Error> {
        self.spend(NODE_BYTES)?;
        json.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<Value, E> {
        self.null()
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Value, E> {
        Ok(Value::Bool(flag))
    }

    // JS holds every number as an f64: so does the tree.
    fn visit_u64<E>(self, number: u64) -> Result<Value, E> {
        Ok(Value::Number(number as f64))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Value, E> {
        Ok(Value::Number(number as f64))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Value, E> {
        Ok(Value::Number(number))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Value, E> {
        self.visit_string(text.to_owned())
    }

    fn visit_string<E: de::Error>(mut self, text: String) -> Result<Value, E> {
        self.string(text).map(Value::String)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.nest()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child())? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        self.nest()?;
        let mut fields = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let key = self.string(key)?;
            if key == "__proto__" {
                return Err(de::Error::custom("__proto__ cannot be a field name"));
            }
            let value = map.next_value_seed(self.child())?;
            fields.push((key, value));
        }
        Ok(Value::Object(fields))
    }
}
