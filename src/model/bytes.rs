//! Byte fields in serde: written as bytes, read only from bytes (a `Uint8Array` in JS) or a
//! sequence of integers. `serde_bytes` also reads a string as its UTF-8 bytes once serde has
//! buffered the value, as it does for an operation inside a step (an internally tagged enum):
//! a string given where bytes belong would be stored instead of refused as INVALID_INPUT.

use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(bytes)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    deserializer.deserialize_byte_buf(BytesVisitor)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bytes (a Uint8Array)")
    }

    fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        while let Some(byte) = seq.next_element::<u8>()? {
            out.push(byte);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::steps::Step;

    #[test]
    fn a_string_is_not_bytes_inside_a_step() {
        let row = |input: serde_json::Value| {
            serde_json::json!({ "operations": [{ "op": "insertOutbox", "rows": [{
                "dispatchKey": "k", "workflowId": "w", "ordinal": 1, "activityType": "a",
                "input": input, "visibleAfter": 0 }] }] })
        };
        assert!(serde_json::from_value::<Step>(row(serde_json::json!("bytes"))).is_err());
        assert!(serde_json::from_value::<Step>(row(serde_json::json!([1, 2, 3]))).is_ok());
    }
}
