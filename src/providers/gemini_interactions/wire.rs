//! The wire types of the Interactions API's stream events, as the adapter reads them.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::providers::json::{CompactJson, Index, Str, TextOrObject};
use crate::providers::state::usage_map;

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Event<'a> {
    #[serde(borrow, default)]
    pub(super) event_type: Option<Str<'a>>,
    #[serde(default)]
    pub(super) index: Option<Index>,
    #[serde(borrow, default)]
    pub(super) step: Option<Step<'a>>,
    /// The other form's `content.start` carries its block here (Q56).
    #[serde(borrow, default)]
    pub(super) content: Option<Step<'a>>,
    #[serde(borrow, default)]
    pub(super) delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    pub(super) interaction: Option<Interaction<'a>>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Step<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Str<'a>,
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) call_id: Option<Str<'a>>,
    #[serde(default)]
    pub(super) arguments: Option<CompactJson>,
    #[serde(default)]
    pub(super) result: Option<CompactJson>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
    #[serde(borrow, default)]
    pub(super) summary: Option<Vec<Item<'a>>>,
    #[serde(borrow, default)]
    pub(super) content: Option<Vec<Item<'a>>>,
    /// A `text` block's text (the other form's `content.start`, Q56).
    #[serde(borrow, default)]
    pub(super) text: Option<Str<'a>>,
}

/// A content or summary item (`{"type": "text", "text": …}`; images are skipped).
#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Str<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) signature: Option<Str<'a>>,
    /// Text in `arguments_delta`; an object in a built-in call's delta.
    #[serde(borrow, default)]
    pub(super) arguments: Option<TextOrObject<'a>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    /// A whole `function_call` delta's name (the other form, Q56).
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) content: Option<Item<'a>>,
    #[serde(default)]
    pub(super) result: Option<CompactJson>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Interaction<'a> {
    #[serde(borrow, default)]
    pub(super) status: Option<Str<'a>>,
    #[serde(default, deserialize_with = "usage_map")]
    pub(super) usage: Option<Map<String, Value>>,
}
