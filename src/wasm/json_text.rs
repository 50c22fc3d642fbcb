//! Reads an argument sent as JSON text into the [`Value`] tree that `walk.rs` reads a JS value
//! into, under the same limits, so that it meets the same conversions and checks after.
//!
//! The main-thread client sends most writes this way (js/wire.js): one string to post instead
//! of objects to clone, parsed here at a fraction of the cost of reading the same objects
//! through calls into JS. The client encodes only what reads back as exactly the value it
//! holds; text this reader refuses is sent again as the value itself, whose walk then names
//! the field, so the reasons here need not.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::value::Value;
use super::walk::{MAX_ARGUMENT_BYTES, MAX_DEPTH, MAX_STRING_CHARS, NODE_BYTES};
use crate::Error;

/// Reads the argument `name` from its JSON text.
///
/// # Errors
/// [`Error::InvalidInput`] for text that is not one JSON value, nesting deeper than
/// [`MAX_DEPTH`], a `__proto__` key, and oversized values, counted as `walk.rs` counts them.
pub(super) fn read(name: &str, text: &str) -> Result<Value, Error> {
    let mut left = MAX_ARGUMENT_BYTES;
    let mut json = serde_json::Deserializer::from_str(text);
    let root = Node {
        depth: 0,
        left: &mut left,
    };
    root.deserialize(&mut json)
        .and_then(|value| json.end().map(|()| value))
        .map_err(|error| Error::invalid(name, error.to_string()))
}

/// One value of the text at `depth`, drawing on the bytes the argument may still take.
struct Node<'a> {
    depth: usize,
    left: &'a mut usize,
}

impl Node<'_> {
    fn spend<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        *self.left = self.left.checked_sub(bytes).ok_or_else(|| {
            E::custom(format_args!(
                "makes the argument larger than {MAX_ARGUMENT_BYTES} bytes"
            ))
        })?;
        Ok(())
    }

    /// A string as the walk takes one (its UTF-8 length stands for its UTF-16 length, which
    /// is never longer).
    fn string<E: de::Error>(&mut self, text: String) -> Result<String, E> {
        if text.len() > MAX_STRING_CHARS {
            return Err(E::custom(format_args!(
                "a string is longer than {MAX_STRING_CHARS} characters"
            )));
        }
        self.spend(text.len())?;
        Ok(text)
    }

    fn child(&mut self) -> Node<'_> {
        Node {
            depth: self.depth + 1,
            left: &mut *self.left,
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

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
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
