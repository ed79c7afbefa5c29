//! OpenAI Chat Completions chunks, and every server that speaks them (Azure,
//! Mistral, Groq, DeepSeek, xAI, Qwen, Ollama, vLLM, LM Studio, …).
//!
//! The hot path: one typed, borrowing decode per chunk (only the fields used),
//! then the call routing of Q1 / Q2 / Q20 before the accumulator sees a key.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{text, Index, Str};
use super::state::{usage_map, Fail, Live, Opening, Stream, TextKind, R};
use super::Input;
use crate::accumulate::ThinkingFragment;
use crate::blocks::CUSTOM;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Option<Vec<ChatChoice<'a>>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    /// Groq repeats usage here (Q34); read only when `usage` never comes.
    #[serde(default)]
    x_groq: Option<XGroq>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct XGroq {
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ChatChoice<'a> {
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Str<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
    /// DeepSeek, Qwen, vLLM, xAI.
    #[serde(borrow, default)]
    reasoning_content: Option<Str<'a>>,
    /// OpenRouter, Ollama, newer vLLM (only when `reasoning_content` is absent).
    #[serde(borrow, default)]
    reasoning: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
    /// The legacy single-function delta.
    #[serde(borrow, default)]
    function_call: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
    /// A custom tool's call (Q28): free-form text `input`, not JSON arguments.
    #[serde(borrow, default)]
    custom: Option<Custom<'a>>,
}

#[derive(Deserialize)]
struct Custom<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    input: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
}

pub(crate) fn feed(
    s: &mut Stream,
    event_name: Option<&str>,
    input: Input<'_>,
    live: &mut Live<'_>,
) -> R {
    if event_name == Some("error") {
        // Q35: an SSE `error` event: its data is the error, or wraps it.
        let body: Value = input.parse()?;
        let err = body.get("error").filter(|e| e.is_object()).unwrap_or(&body);
        return Err(provider_error(err));
    }
    let chunk: Chunk<'_> = input.parse()?;
    if let Some(err) = chunk.error.filter(|e| !e.is_null()) {
        return Err(provider_error(&err));
    }
    if chunk.choices.is_none() && chunk.usage.is_none() {
        match chunk.x_groq.and_then(|x| x.usage) {
            Some(u) => {
                if !s.has_usage() {
                    s.merge_usage(u);
                }
            }
            None => s.unknown(event_name.unwrap_or("chunk")),
        }
        return Ok(());
    }
    for (pos, choice) in (0_i64..).zip(chunk.choices.unwrap_or_default()) {
        let c = choice.index.map_or(pos, |i| i.0);
        s.choice(c)?;
        if let Some(delta) = choice.delta {
            let reasoning = delta
                .reasoning_content
                .as_ref()
                .or(delta.reasoning.as_ref());
            if let Some(r) = reasoning {
                let frag = ThinkingFragment {
                    thinking: r,
                    ..ThinkingFragment::default()
                };
                s.thinking(c, None, frag, false, live)?;
            }
            s.text(c, TextKind::Text, None, text(&delta.content), false, live)?;
            s.text(
                c,
                TextKind::Refusal,
                None,
                text(&delta.refusal),
                false,
                live,
            )?;
            for call in delta.tool_calls.unwrap_or_default() {
                let (name, args, kind) = match (&call.function, &call.custom) {
                    (_, Some(cu)) => (text(&cu.name), text(&cu.input), Some(CUSTOM)),
                    (Some(f), None) => (text(&f.name), text(&f.arguments), None),
                    (None, None) => ("", "", None),
                };
                let index = call.index.map(|i| i.0);
                fragment(s, c, index, text(&call.id), (name, args), kind, live)?;
            }
            if let Some(f) = delta.function_call {
                let piece = (text(&f.name), text(&f.arguments));
                fragment(s, c, None, "", piece, None, live)?;
            }
        }
        if let Some(reason) = choice.finish_reason {
            s.set_finish_reason(c, &reason)?;
            s.end(c, live)?;
        }
    }
    match (chunk.usage, chunk.x_groq.and_then(|x| x.usage)) {
        (Some(usage), _) => s.merge_usage(usage),
        (None, Some(groq)) if !s.has_usage() => s.merge_usage(groq),
        _ => {}
    }
    Ok(())
}

/// Routes one tool-call fragment to its call (Q1, Q2, Q20) and adds it.
pub(crate) fn fragment(
    s: &mut Stream,
    c: i64,
    index: Option<i64>,
    id: &str,
    (name, args): (&str, &str),
    kind: Option<&str>,
    live: &mut Live<'_>,
) -> R {
    let ch = s.choice(c)?;
    let existing = match index {
        Some(i) => ch.by_provider_index.get(&i).copied(),
        // Q1: by id; a late id for the newest call that has none yet; else new.
        None if !id.is_empty() => ch.by_id.get(id).copied().or_else(|| {
            ch.latest
                .filter(|&k| ch.tools.get(k).is_some_and(|b| b.id.is_empty()))
        }),
        // Q1: continue the latest call.
        None => ch.latest,
    };
    let target = existing.filter(|&k| {
        let current = ch.tools.get(k).map_or("", |b| b.id.as_str());
        // Q2: a different non-empty id at an occupied index is a new call.
        let new_id = !id.is_empty() && !current.is_empty() && current != id;
        !new_id && !ch.opens_new_value(k, id, name, args)
    });
    match target {
        Some(k) => s.add_to_call(c, k, id, name, args, None, live),
        None => {
            let opening = Opening {
                provider_index: index,
                id,
                name,
                input: args,
                kind,
                ..Opening::default()
            };
            s.new_call(c, opening, live).map(|_| ())
        }
    }
}

/// `{"error": {...}}` chunks (OpenAI-compatible servers, OpenRouter, vLLM,
/// Groq), Anthropic and Responses error events. Q35: the error's type is the
/// most specific one sent: a string `code` (`tool_use_failed`) before the
/// `type` (`invalid_request_error`), a numeric code (an HTTP status) after it.
pub(crate) fn provider_error(err: &Value) -> Fail {
    let field = |k: &str| -> Option<String> {
        err.get(k).and_then(|v| match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let string_code = err
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let message = field("message").unwrap_or_else(|| err.to_string());
    let error_type = string_code
        .or_else(|| field("type"))
        .or_else(|| field("code"))
        .or_else(|| field("status"))
        .unwrap_or_default();
    Fail::Provider {
        error_type,
        message,
        raw: (!err.is_null()).then(|| err.to_string()),
    }
}
