//! The OpenAI `chat.completion` body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::state::Fail;
use crate::providers::Input;

#[derive(Deserialize)]
struct ChatBody<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    created: Option<Value>,
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    system_fingerprint: Option<Value>,
    #[serde(default, borrow)]
    choices: Option<Vec<ChatChoice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct ChatChoice<'a> {
    #[serde(default)]
    index: Option<Value>,
    /// Every field as the body has it: a call's arguments reach the stream's
    /// adapter as sent (numbers, key order: Q42), through the same rules.
    #[serde(default, borrow)]
    message: Option<BTreeMap<String, &'a RawValue>>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

/// Whether a call holds an `index` of its own (any value, as the stream's would).
#[derive(Deserialize)]
struct Indexed {
    #[serde(default)]
    index: Option<IgnoredAny>,
}

/// Neither absent, `null` nor `""` (what a stream would not send as a delta).
fn present(raw: &RawValue) -> bool {
    !matches!(raw.get().trim(), "null" | "\"\"")
}

fn chat(body: ChatBody<'_>) -> Result<Vec<Made>, Fail> {
    let mut head = Map::new();
    head.insert("object".to_owned(), json!("chat.completion.chunk"));
    for (k, v) in [
        ("id", body.id),
        ("created", body.created),
        ("model", body.model),
        ("system_fingerprint", body.system_fingerprint),
    ] {
        if let Some(v) = v {
            head.insert(k.to_owned(), v);
        }
    }
    // A chunk of the choice with `delta` (JSON text of its members) as its
    // delta; its `finish_reason` is `""` when the body's is (Q63), else `null`.
    let chunk = |index: &Value, delta: &str, finish: &str| {
        let mut text = Value::Object(head.clone()).to_string();
        text.pop();
        text.push_str(&format!(
            r#","choices":[{{"index":{index},"delta":{{{delta}}},"finish_reason":{finish}}}]}}"#
        ));
        Made::Text(text)
    };
    let mut out = Vec::new();
    for (pos, choice) in body.choices.unwrap_or_default().into_iter().enumerate() {
        let index = choice.index.filter(|i| !i.is_null()).unwrap_or(json!(pos));
        let message = choice.message.unwrap_or_default();
        let mut deltas: Vec<String> = Vec::new();
        let member = |k: &str, v: &str| format!("{}:{v}", Value::String(k.to_owned()));
        for k in ["reasoning_content", "reasoning", "content", "refusal"] {
            if let Some(v) = message.get(k).filter(|v| present(v)) {
                deltas.push(member(k, v.get()));
            }
        }
        if let Some(calls) = message.get("tool_calls") {
            let calls: Option<Vec<&RawValue>> = serde_json::from_str(calls.get()).ok();
            for (i, call) in calls.unwrap_or_default().into_iter().enumerate() {
                let text = call.get().trim();
                let indexed = serde_json::from_str::<Indexed>(text).map(|c| c.index.is_some());
                let call = match (indexed, text.strip_prefix('{')) {
                    (Ok(false), Some(rest)) if rest.trim_start().starts_with('}') => {
                        format!(r#"{{"index":{i}}}"#)
                    }
                    (Ok(false), Some(rest)) => format!(r#"{{"index":{i},{rest}"#),
                    _ => text.to_owned(),
                };
                deltas.push(member("tool_calls", &format!("[{call}]")));
            }
        }
        if let Some(f) = message.get("function_call").filter(|v| present(v)) {
            deltas.push(member("function_call", f.get()));
        }
        if deltas.is_empty() {
            deltas.push(String::new());
        }
        let role = message.get("role").map_or(r#""assistant""#, |r| r.get());
        let finish = if choice.finish_reason.as_ref().and_then(Value::as_str) == Some("") {
            "\"\""
        } else {
            "null"
        };
        for (i, delta) in deltas.into_iter().enumerate() {
            let delta = match (i, delta.is_empty()) {
                (0, true) => member("role", role),
                (0, false) => format!("{},{delta}", member("role", role)),
                _ => delta,
            };
            out.push(chunk(&index, &delta, finish));
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_null() && r != "") {
            let mut m = head.clone();
            m.insert(
                "choices".to_owned(),
                json!([{"index": index, "delta": {}, "finish_reason": reason}]),
            );
            out.push(Made::Value(Value::Object(m)));
        }
    }
    if let Some(usage) = body.usage.filter(|u| !u.is_null()) {
        let mut m = head.clone();
        m.insert("choices".to_owned(), json!([]));
        m.insert("usage".to_owned(), usage);
        out.push(Made::Value(Value::Object(m)));
    }
    Ok(out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    chat(Input::Json(body).parse()?)
}
