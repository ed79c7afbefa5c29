//! `delta.content` of a chat chunk: a string, or an array of typed parts.

use std::fmt;

use serde::de::{self, value::SeqAccessDeserializer, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::providers::json::Str;

/// `delta.content`: text, or (Mistral's reasoning models, Q49) an array of
/// typed parts.
#[derive(Debug, PartialEq)]
pub(super) enum Content<'a> {
    Text(Str<'a>),
    Parts(Vec<Part<'a>>),
}

/// One typed part of an array `content`: `{"type": "text", "text": …}` or
/// `{"type": "thinking", "thinking": [parts]}`.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Part<'a> {
    #[serde(borrow, default, rename = "type")]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) thinking: Option<Vec<Part<'a>>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(v.into())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(v.to_owned().into())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(v.into())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(Content::Parts)
            }
        }
        d.deserialize_any(V)
    }
}
