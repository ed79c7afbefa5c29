//! `auto`: the dialect from the first event that identifies itself.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::openai_chat::provider_error;
use super::state::Fail;
use super::{Dialect, Input};

pub(crate) enum Detected {
    Dialect(Dialect),
    /// A generic `{"error": …}` before the dialect was known.
    ProviderError(Fail),
    Unknown,
}

const ANTHROPIC: [&str; 7] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
];

const COHERE: [&str; 12] = [
    "message-start",
    "content-start",
    "content-delta",
    "content-end",
    "tool-plan-delta",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
    "citation-start",
    "citation-end",
    "message-end",
    "debug",
];

pub(crate) const BEDROCK: [&str; 6] = [
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
];

fn by_name(name: &str) -> Option<Dialect> {
    if name.starts_with("response.") {
        Some(Dialect::OpenAiResponses)
    } else if ANTHROPIC.contains(&name) {
        Some(Dialect::Anthropic)
    } else if COHERE.contains(&name) {
        Some(Dialect::Cohere)
    } else if BEDROCK.contains(&name) || name.ends_with("Exception") {
        Some(Dialect::Bedrock)
    } else {
        None
    }
}

/// The dialect of a whole, non-streamed response body (QUIRKS.md Q31), from
/// its top-level shape: OpenAI `chat.completion` (or `choices` that carry a
/// whole `message` and no `delta`), an Anthropic `Message` (`type: "message"`),
/// an OpenAI Responses `response` object, a Bedrock `Converse` output
/// (`output.message`), a Cohere v2 chat response (`message` and
/// `finish_reason`, no `choices`, no `type`). A Gemini response is not
/// among them: it is the same as one streamed chunk. Streamed events never
/// match (they carry an event `type`, a `chat.completion.chunk`, or a
/// `delta`).
pub(crate) fn body_shape(obj: &Map<String, Value>) -> Option<Dialect> {
    let text = |k: &str| obj.get(k).and_then(Value::as_str);
    let (kind, object) = (text("type"), text("object"));
    match (kind, object) {
        (Some("message"), _) => return Some(Dialect::Anthropic),
        (_, Some("chat.completion")) => return Some(Dialect::OpenAiChat),
        (None, Some("response")) => return Some(Dialect::OpenAiResponses),
        (Some(_), _) | (_, Some("chat.completion.chunk")) => return None,
        _ => {}
    }
    if let Some(Value::Array(choices)) = obj.get("choices") {
        let whole =
            |c: &Value| c.get("message").is_some_and(Value::is_object) && c.get("delta").is_none();
        return (!choices.is_empty() && choices.iter().all(whole)).then_some(Dialect::OpenAiChat);
    }
    if obj
        .get("output")
        .and_then(Value::as_object)
        .is_some_and(|o| o.contains_key("message"))
    {
        return Some(Dialect::Bedrock);
    }
    if obj.get("message").is_some_and(Value::is_object) && obj.contains_key("finish_reason") {
        return Some(Dialect::Cohere);
    }
    None
}

pub(crate) fn detect(event_name: Option<&str>, input: Input<'_>) -> Detected {
    if let Some(d) = event_name.and_then(by_name) {
        return Detected::Dialect(d);
    }
    let owned;
    let obj: &Map<String, Value> = match input {
        Input::Value(Value::Object(m)) => m,
        Input::Value(_) => return Detected::Unknown,
        Input::Tree(t) => match Value::deserialize(&mut t.deserializer()) {
            Ok(Value::Object(m)) => {
                owned = m;
                &owned
            }
            _ => return Detected::Unknown,
        },
        Input::Json(b) => match serde_json::from_slice::<Value>(b) {
            Ok(Value::Object(m)) => {
                owned = m;
                &owned
            }
            _ => return Detected::Unknown,
        },
        Input::Text(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => {
                owned = m;
                &owned
            }
            _ => return Detected::Unknown,
        },
    };
    if let Some(d) = body_shape(obj) {
        return Detected::Dialect(d);
    }
    if let Some(t) = obj.get("type").and_then(Value::as_str) {
        if t == "error" {
            // Anthropic nests the error; Responses puts code / message on top.
            return Detected::Dialect(if obj.get("error").is_some_and(Value::is_object) {
                Dialect::Anthropic
            } else {
                Dialect::OpenAiResponses
            });
        }
        if let Some(d) = by_name(t) {
            return Detected::Dialect(d);
        }
    }
    let has = |k: &str| obj.contains_key(k);
    if obj.get("object").and_then(Value::as_str) == Some("chat.completion.chunk") || has("choices")
    {
        return Detected::Dialect(Dialect::OpenAiChat);
    }
    if has("candidates") || has("usageMetadata") || has("promptFeedback") {
        return Detected::Dialect(Dialect::Gemini);
    }
    // Bedrock as boto3 yields it: one key naming the event ({"contentBlockDelta": {…}}).
    let mut keys = obj.keys().filter(|k| k.as_str() != "p");
    if let (Some(k), None) = (keys.next(), keys.next()) {
        if BEDROCK.contains(&k.as_str()) || k.ends_with("Exception") {
            return Detected::Dialect(Dialect::Bedrock);
        }
    }
    // A bare Bedrock payload without its event name.
    if has("contentBlockIndex") || has("stopReason") || (has("p") && (has("role") || has("usage")))
    {
        return Detected::Dialect(Dialect::Bedrock);
    }
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        return Detected::ProviderError(provider_error(err));
    }
    Detected::Unknown
}
