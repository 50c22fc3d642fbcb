//! A JS argument as plain Rust data, read once by `walk.rs`, and the serde `Deserializer` that
//! turns it into the store's types.
//!
//! Reading into this tree first means serde never calls into JS: the caller's getters and
//! Proxies run exactly once, during the walk, and a value cannot change between a check and
//! its use. The deserializer keeps the path of each value it hands out and writes it into the
//! first error that passes it, so an error names the field inside the argument without a
//! tracking wrapper around every visitor (which would double the code serde generates for
//! each input type).

use std::fmt;

use serde::de::value::{StrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, Unexpected, VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;

use super::walk::Path;

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

/// A conversion failure: the reason, the path of the value it happened at (`events[0].data`,
/// written by the deserializer), and for an unknown field its name (which belongs in the field
/// path, not in the message).
#[derive(Debug)]
pub(super) struct DeError {
    pub(super) reason: String,
    pub(super) path: Option<String>,
    pub(super) unknown_key: Option<String>,
}

impl DeError {
    /// Names the innermost value the error passed: the first path written stays.
    fn at(mut self, at: &Path<'_>) -> Self {
        if self.path.is_none() {
            self.path = Some(at.to_string());
        }
        self
    }
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
            path: None,
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

/// Converts the argument `name`, read into `value`, to `T`; a failure names the path inside
/// the argument.
pub(super) fn deserialize<'de, T: de::Deserialize<'de>>(
    name: &str,
    value: Value,
) -> Result<T, DeError> {
    node(value, &Path::Root(name), std::marker::PhantomData)
}

/// Deserializes one value at `at`: every value handed to serde passes through here, so every
/// error leaves it with the path of the innermost value it came from.
fn node<'de, S: DeserializeSeed<'de>>(
    value: Value,
    at: &Path<'_>,
    seed: S,
) -> Result<S::Value, DeError> {
    seed.deserialize(Node { value, at }).map_err(|e| e.at(at))
}

/// A value and its place in the argument, as a serde `Deserializer`.
struct Node<'a> {
    value: Value,
    at: &'a Path<'a>,
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

/// The error serde's own sequence and map deserializers give for items left unread.
fn too_long(read: usize, left: usize, what: &str) -> DeError {
    de::Error::custom(format_args!(
        "invalid length {}, expected {read} element{} in {what}",
        read + left,
        if read == 1 { "" } else { "s" }
    ))
}

fn visit_array<'de, V: Visitor<'de>>(
    items: Vec<Value>,
    at: &Path<'_>,
    visitor: V,
) -> Result<V::Value, DeError> {
    let mut seq = Seq {
        items: items.into_iter(),
        index: 0,
        at,
    };
    let value = visitor.visit_seq(&mut seq)?;
    match seq.items.len() {
        0 => Ok(value),
        left => Err(too_long(seq.index, left, "sequence")),
    }
}

fn visit_object<'de, V: Visitor<'de>>(
    entries: Vec<(String, Value)>,
    at: &Path<'_>,
    visitor: V,
) -> Result<V::Value, DeError> {
    let mut map = Map {
        entries: entries.into_iter(),
        next: None,
        read: 0,
        at,
    };
    let value = visitor.visit_map(&mut map)?;
    match map.entries.len() {
        0 => Ok(value),
        left => Err(too_long(map.read, left, "map")),
    }
}

struct Seq<'a> {
    items: std::vec::IntoIter<Value>,
    index: usize,
    at: &'a Path<'a>,
}

impl<'de> SeqAccess<'de> for Seq<'_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let at = Path::Index(self.at, u32::try_from(self.index).unwrap_or(u32::MAX));
        self.index += 1;
        node(value, &at, seed).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Map<'a> {
    entries: std::vec::IntoIter<(String, Value)>,
    /// The entry whose key was read and whose value is next.
    next: Option<(String, Value)>,
    read: usize,
    at: &'a Path<'a>,
}

impl<'de> MapAccess<'de> for Map<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.read += 1;
        let read = seed.deserialize(StrDeserializer::new(&key))?;
        self.next = Some((key, value));
        Ok(Some(read))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (key, value) = self
            .next
            .take()
            .ok_or_else(|| de::Error::custom("a map value was read before its key"))?;
        node(value, &Path::Key(self.at, &key), seed)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The name that marks an enum as internally tagged for this deserializer, followed by the tag:
/// `$runstore::tagged_by::op` reads `{ op: "append", workflowId, ... }` as variant `append`
/// with the object's other fields. serde's own internally tagged enums first buffer every value
/// of the object, and a buffered value lets a `Uint8Array` pass for a string and an array for an
/// object, field by position; reading the variant's fields straight from the tree keeps every
/// check, and every error's path.
pub(super) const TAGGED_BY: &str = "$runstore::tagged_by::";

/// An internally tagged enum: the tag's value names the variant, the object's other fields are
/// its content.
fn visit_tagged<'de, V: Visitor<'de>>(
    value: Value,
    tag: &'static str,
    at: &Path<'_>,
    visitor: V,
) -> Result<V::Value, DeError> {
    let mut entries = match value {
        Value::Object(entries) => entries,
        other => return Err(de::Error::invalid_type(other.unexpected(), &"an object")),
    };
    let tag_at = Path::Key(at, tag);
    let Some(position) = entries.iter().position(|(key, _)| key == tag) else {
        let error: DeError = de::Error::custom("is required");
        return Err(error.at(&tag_at));
    };
    let name = match entries.remove(position).1 {
        Value::String(name) => name,
        other => {
            let error: DeError = de::Error::invalid_type(other.unexpected(), &"a string");
            return Err(error.at(&tag_at));
        }
    };
    visitor.visit_enum(Variant {
        name,
        content: Value::Object(entries),
        at,
        tag: Some(tag),
    })
}

/// An enum's variant and its content: written as an object with one key (the variant, and its
/// content), or with the variant as the value of `tag` beside the content's own fields.
struct Variant<'a> {
    name: String,
    content: Value,
    at: &'a Path<'a>,
    tag: Option<&'static str>,
}

impl Variant<'_> {
    /// Runs `read` on the content at its place: beside the tag, or under the variant's key.
    fn read_content<T>(
        self,
        read: impl FnOnce(Value, &Path<'_>) -> Result<T, DeError>,
    ) -> Result<T, DeError> {
        match self.tag {
            Some(_) => read(self.content, self.at).map_err(|e| e.at(self.at)),
            None => {
                let at = Path::Key(self.at, &self.name);
                read(self.content, &at).map_err(|e| e.at(&at))
            }
        }
    }
}

impl<'de, 'a> EnumAccess<'de> for Variant<'a> {
    type Error = DeError;
    type Variant = Variant<'a>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), DeError> {
        let variant = seed.deserialize(StrDeserializer::<DeError>::new(&self.name));
        match (variant, self.tag) {
            (Ok(variant), _) => Ok((variant, self)),
            (Err(error), Some(tag)) => Err(error.at(&Path::Key(self.at, tag))),
            (Err(error), None) => Err(error),
        }
    }
}

impl<'de> VariantAccess<'de> for Variant<'_> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        self.read_content(|content, at| node(content, at, std::marker::PhantomData))
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, DeError> {
        self.read_content(|content, at| node(content, at, seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, DeError> {
        self.read_content(|value, at| {
            de::Deserializer::deserialize_tuple(Node { value, at }, len, visitor)
        })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.read_content(|value, at| {
            de::Deserializer::deserialize_struct(Node { value, at }, "", fields, visitor)
        })
    }
}

impl<'de> de::Deserializer<'de> for Node<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Undefined => Err(de::Error::custom("is required")),
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Bytes(b) => visitor.visit_byte_buf(b),
            Value::Array(items) => visit_array(items, self.at, visitor),
            Value::Object(entries) => visit_object(entries, self.at, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Undefined | Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Undefined | Value::Null => visitor.visit_unit(),
            _ => self.deserialize_any(visitor),
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
        match self.value {
            Value::Object(entries) => {
                if let Some((key, _)) = entries.iter().find(|(k, _)| !fields.contains(&k.as_str()))
                {
                    return Err(DeError {
                        reason: "is not a known field".into(),
                        path: None,
                        unknown_key: Some(key.clone()),
                    });
                }
                visit_object(entries, self.at, visitor)
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &"an object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if let Some(tag) = name.strip_prefix(TAGGED_BY) {
            return visit_tagged(self.value, tag, self.at, visitor);
        }
        match self.value {
            Value::String(variant) => visitor.visit_enum(StringDeserializer::new(variant)),
            Value::Object(mut entries) if entries.len() == 1 => {
                let (name, content) = entries.remove(0);
                visitor.visit_enum(Variant {
                    name,
                    content,
                    at: self.at,
                    tag: None,
                })
            }
            other => Err(de::Error::invalid_type(
                other.unexpected(),
                &"a string or an object with one key",
            )),
        }
    }

    /// Bytes come from a `Uint8Array` only: serde_bytes would take a string's UTF-8 too.
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
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

    /// A string comes from a string only: serde's own string visitor would take a
    /// `Uint8Array`'s bytes as UTF-8.
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.value {
            Value::Bytes(_) => Err(de::Error::invalid_type(
                Unexpected::Other("Uint8Array"),
                &visitor,
            )),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 unit_struct seq tuple tuple_struct
        map
    }
}
