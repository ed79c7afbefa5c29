//! The wire types of a Gemini chunk: only the fields toolstitch reads.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::providers::json::*;
use crate::providers::state::usage_map;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response<'a> {
    #[serde(borrow, default)]
    pub(super) candidates: Option<Vec<Candidate<'a>>>,
    #[serde(default, deserialize_with = "usage_map")]
    pub(super) usage_metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(super) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub(super) block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate<'a> {
    #[serde(default)]
    pub(super) index: Option<Index>,
    #[serde(borrow, default)]
    pub(super) content: Option<Content<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Content<'a> {
    #[serde(borrow, default)]
    pub(super) parts: Option<Vec<Part<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Part<'a> {
    #[serde(borrow, default)]
    pub(super) text: Option<Str<'a>>,
    #[serde(default)]
    pub(super) thought: Option<bool>,
    #[serde(borrow, default)]
    pub(super) thought_signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) function_call: Option<FunctionCall<'a>>,
    /// Code the model ran on the provider's side (Q27).
    #[serde(default)]
    pub(super) executable_code: Option<CompactJson>,
    /// The output of that code.
    #[serde(default)]
    pub(super) code_execution_result: Option<CompactJson>,
}

#[derive(Deserialize)]
pub(super) struct CodeResult {
    #[serde(default)]
    pub(super) outcome: Option<String>,
    #[serde(default)]
    pub(super) output: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionCall<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Str<'a>>,
    #[serde(default)]
    pub(super) args: Option<CompactJson>,
    #[serde(borrow, default)]
    pub(super) partial_args: Option<Vec<PartialArg<'a>>>,
    #[serde(default)]
    pub(super) will_continue: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartialArg<'a> {
    #[serde(borrow, default)]
    pub(super) json_path: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(super) string_value: Option<Str<'a>>,
    #[serde(default)]
    pub(super) number_value: Option<CompactJson>,
    #[serde(default)]
    pub(super) bool_value: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    pub(super) null_value: bool,
}
