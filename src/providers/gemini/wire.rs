//! The wire types of a Gemini chunk: only the fields toolstitch reads.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::providers::json::*;
use crate::providers::state::usage_map;

#[derive(Debug, Default, PartialEq, Deserialize)]
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

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default, deserialize_with = "block_reason")]
    pub(super) block_reason: Option<String>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate<'a> {
    #[serde(default)]
    pub(super) index: Option<Index>,
    #[serde(borrow, default)]
    pub(super) content: Option<Content<'a>>,
    #[serde(default, deserialize_with = "finish_reason")]
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
pub(super) struct Content<'a> {
    #[serde(borrow, default)]
    pub(super) parts: Option<Vec<Part<'a>>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
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
    #[serde(default, deserialize_with = "outcome")]
    pub(super) outcome: Option<String>,
    #[serde(default)]
    pub(super) output: Option<String>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
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

#[derive(Debug, Default, PartialEq, Deserialize)]
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

// ------------------------------------------------ enums, in both encodings

/// `Candidate.FinishReason` by its number, as the Gemini API's own definition
/// (`google.ai.generativelanguage.v1beta`) numbers it. Vertex AI numbers the
/// values from 5 on differently; every one of them but `STOP` is an abnormal
/// end in both, so only the name shown can differ, never whether a message
/// ended normally.
const FINISH_REASONS: [&str; 19] = [
    "FINISH_REASON_UNSPECIFIED",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "OTHER",
    "LANGUAGE",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "IMAGE_SAFETY",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_OTHER",
    "NO_IMAGE",
    "IMAGE_RECITATION",
    "MISSING_THOUGHT_SIGNATURE",
];

/// `PromptFeedback.BlockReason` by its number.
const BLOCK_REASONS: [&str; 6] = [
    "BLOCK_REASON_UNSPECIFIED",
    "SAFETY",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "IMAGE_SAFETY",
];

/// `CodeExecutionResult.Outcome` by its number.
const OUTCOMES: [&str; 4] = [
    "OUTCOME_UNSPECIFIED",
    "OUTCOME_OK",
    "OUTCOME_FAILED",
    "OUTCOME_DEADLINE_EXCEEDED",
];

/// An enum as a client that asks for `enum-encoding=int` gets it (Q57): a
/// string is kept as sent; a number is its name in `names`, and a number the
/// table does not hold is kept as its decimal text (which no rule reads as a
/// normal end). Anything else is refused.
fn enum_value<'de, D: serde::Deserializer<'de>>(
    d: D,
    names: &[&str],
) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Name(String),
        Number(i64),
    }
    let raw: Option<Raw> = Option::deserialize(d)?;
    Ok(raw.map(|r| match r {
        Raw::Name(n) => n,
        Raw::Number(n) => usize::try_from(n)
            .ok()
            .and_then(|i| names.get(i))
            .map_or_else(|| n.to_string(), |name| (*name).to_owned()),
    }))
}

fn finish_reason<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    enum_value(d, &FINISH_REASONS)
}

fn block_reason<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    enum_value(d, &BLOCK_REASONS)
}

fn outcome<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    enum_value(d, &OUTCOMES)
}
