//! A JS argument as plain Rust data, read once by `walk.rs`, and the serde `Deserializer` that
//! turns it into the store's types.
//!
//! Reading into this tree first means serde never calls into JS: the caller's getters and
//! Proxies run exactly once, during the walk, and a value cannot change between a check and
//! its use.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Unexpected, Visitor};
use serde::forward_to_deserialize_any;

/// Integers up to this magnitude are exact in an `f64`, and read as integers.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// One JS value: `undefined` and `null` kept apart (an `undefined` argument is a missing one),
/// numbers as JS has them, bytes from a `Uint8Array`, object entries in the caller's order.
#[derive(Debug)]
pub(super) enum Value {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Bytes(Vec<u8>),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// A conversion failure: the reason, and for an unknown field its name (which belongs in the
/// field path, not in the message).
#[derive(Debug)]
pub(super) struct DeError {
    pub(super) reason: String,
    pub(super) unknown_key: Option<String>,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        DeError {
            reason: message.to_string(),
            unknown_key: None,
        }
    }
}

impl Value {
    fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Value::Undefined => Unexpected::Other("undefined"),
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Number(n) => Unexpected::Float(*n),
            Value::String(_) => Unexpected::Other("string"),
            Value::Bytes(_) => Unexpected::Other("Uint8Array"),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        }
    }
}

impl<'de> IntoDeserializer<'de, DeError> for Value {
    type Deserializer = Value;

    fn into_deserializer(self) -> Value {
        self
    }
}

fn visit_number<'de, V: Visitor<'de>>(number: f64, visitor: V) -> Result<V::Value, DeError> {
    // Integral numbers are offered as integers, so that `u32` or `i64` fields accept them.
    if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER {
        if number >= 0.0 {
            return visitor.visit_u64(number as u64);
        }
        return visitor.visit_i64(number as i64);
    }
    visitor.visit_f64(number)
}

fn visit_array<'de, V: Visitor<'de>>(items: Vec<Value>, visitor: V) -> Result<V::Value, DeError> {
    let mut seq = SeqDeserializer::new(items.into_iter());
    let value = visitor.visit_seq(&mut seq)?;
    seq.end()?;
    Ok(value)
}

fn visit_object<'de, V: Visitor<'de>>(
    entries: Vec<(String, Value)>,
    visitor: V,
) -> Result<V::Value, DeError> {
    let mut map = MapDeserializer::new(entries.into_iter());
    let value = visitor.visit_map(&mut map)?;
    map.end()?;
    Ok(value)
}

impl<'de> de::Deserializer<'de> for Value {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self {
            Value::Undefined => Err(de::Error::custom("is required")),
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Bytes(b) => visitor.visit_byte_buf(b),
            Value::Array(items) => visit_array(items, visitor),
            Value::Object(entries) => visit_object(entries, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self {
            Value::Undefined | Value::Null => visitor.visit_none(),
            value => visitor.visit_some(value),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self {
            Value::Undefined | Value::Null => visitor.visit_unit(),
            value => value.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    /// Only an object is a struct (serde would otherwise fill one from an array, field by
    /// field), and every key of it must be one of the struct's fields.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self {
            Value::Object(entries) => {
                if let Some((key, _)) = entries.iter().find(|(k, _)| !fields.contains(&k.as_str()))
                {
                    return Err(DeError {
                        reason: "is not a known field".into(),
                        unknown_key: Some(key.clone()),
                    });
                }
                visit_object(entries, visitor)
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &"an object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self {
            Value::String(variant) => visitor.visit_enum(variant.into_deserializer()),
            Value::Object(entries) if entries.len() == 1 => visitor.visit_enum(
                MapAccessDeserializer::new(MapDeserializer::new(entries.into_iter())),
            ),
            other => Err(de::Error::invalid_type(
                other.unexpected(),
                &"a string or an object with one key",
            )),
        }
    }

    /// Bytes come from a `Uint8Array` only: serde_bytes would take a string's UTF-8 too.
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self {
            Value::Bytes(bytes) => visitor.visit_byte_buf(bytes),
            other => Err(de::Error::invalid_type(other.unexpected(), &"a Uint8Array")),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string unit_struct seq
        tuple tuple_struct map identifier
    }
}
