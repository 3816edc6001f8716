//! Reading JSON documents: [`serde_json`] with `arbitrary_precision` (ints keep every digit, floats their text) and
//! `preserve_order`, plus a check that no object repeats a key (Python's spec loader refuses that too; serde_json
//! alone would keep the last).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The deepest nesting a document may have (a document deeper than this is refused, not recursed into).
pub const MAX_DEPTH: usize = 64;

struct Check(usize);

impl<'de> de::DeserializeSeed<'de> for Check {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.0 >= MAX_DEPTH {
            return Err(de::Error::custom(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        while seq.next_element_seed(Check(self.0 + 1))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.0 >= MAX_DEPTH {
            return Err(de::Error::custom(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.next_value_seed(Check(self.0 + 1))?;
        }
        Ok(())
    }
}

/// Parses `text` as one JSON document whose objects have distinct keys and whose nesting is at most
/// [`MAX_DEPTH`]; the error is a one-line message.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    // serde_json's own recursion limit (128) stays on; ours is tighter.
    de::DeserializeSeed::deserialize(Check(0), &mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}
