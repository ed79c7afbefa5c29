//! The wire types of a Responses event: only the fields toolstitch reads.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::providers::json::*;
use crate::providers::state::usage_map;

use super::restated::Restated;

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(default)]
    pub(super) sequence_number: Option<u64>,
    #[serde(default)]
    pub(super) output_index: Option<Index>,
    #[serde(default)]
    pub(super) content_index: Option<Index>,
    #[serde(default)]
    pub(super) summary_index: Option<Index>,
    #[serde(borrow, default)]
    pub(super) item_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) delta: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) input: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) item: Option<Item<'a>>,
    #[serde(default)]
    pub(super) response: Option<Response>,
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<Value>,
    /// OpenAI's per-event nonce: a second event with the same one is a replay (Q61).
    /// Read loosely: a nonce that is not a string is no nonce.
    #[serde(borrow, default)]
    pub(super) obfuscation: Option<Loose<'a>>,
    /// The member a `.done` event restates (`arguments`, or `input` for a
    /// custom call) when the fast path found it to be the call's input
    /// (then that member is absent); never from the typed decode.
    #[serde(skip)]
    pub(super) restated: Option<Restated<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    /// A string for function calls; an object in `tool_search_call` (Q27).
    #[serde(borrow, default)]
    pub(super) arguments: Option<Loose<'a>>,
    /// The free-form input of a `custom_tool_call` (Q28).
    #[serde(borrow, default)]
    pub(super) input: Option<Loose<'a>>,
    #[serde(borrow, default)]
    pub(super) encrypted_content: Option<Str<'a>>,
    /// The member a done call's item restates, as in [`Event`].
    #[serde(skip)]
    pub(super) restated: Option<Restated<'a>>,
}

/// An output item as a map, for the item kinds kept whole (cold path).
#[derive(Deserialize)]
pub(super) struct RawItem {
    #[serde(default)]
    pub(super) item: Option<Map<String, Value>>,
}

#[derive(Debug, PartialEq, Deserialize)]
pub(super) struct Response {
    /// The response's id: a second one in one stream is a second response (Q54).
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    /// Which model answers (xAI's server tools are told by it, Q47).
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default, deserialize_with = "usage_map")]
    pub(super) usage: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) incomplete_details: Option<Incomplete>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct Incomplete {
    #[serde(default)]
    pub(super) reason: Option<String>,
}
