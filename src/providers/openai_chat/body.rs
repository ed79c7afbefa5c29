//! The OpenAI `chat.completion` body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::state::Fail;
use crate::providers::Input;

#[derive(Deserialize)]
struct ChatBody {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    created: Option<Value>,
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    system_fingerprint: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<ChatChoice>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct ChatChoice {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default)]
    message: Option<Map<String, Value>>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

fn chat(body: ChatBody) -> Result<Vec<Made>, Fail> {
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
    let chunk = |choices: Value| {
        let mut m = head.clone();
        m.insert("choices".to_owned(), choices);
        Made::Value(Value::Object(m))
    };
    let mut out = Vec::new();
    for (pos, choice) in body.choices.unwrap_or_default().into_iter().enumerate() {
        let index = choice.index.filter(|i| !i.is_null()).unwrap_or(json!(pos));
        let message = choice.message.unwrap_or_default();
        let mut deltas: Vec<Map<String, Value>> = Vec::new();
        let mut part = |k: &str, v: Value| {
            let mut delta = Map::new();
            delta.insert(k.to_owned(), v);
            deltas.push(delta);
        };
        for k in ["reasoning_content", "reasoning", "content", "refusal"] {
            if let Some(v) = non_empty(message.get(k)) {
                part(k, v.clone());
            }
        }
        if let Some(Value::Array(calls)) = message.get("tool_calls") {
            for (i, call) in calls.iter().enumerate() {
                let mut call = call.clone();
                if let Value::Object(c) = &mut call {
                    c.entry("index").or_insert(json!(i));
                }
                part("tool_calls", json!([call]));
            }
        }
        if let Some(f) = non_empty(message.get("function_call")) {
            part("function_call", f.clone());
        }
        if deltas.is_empty() {
            deltas.push(Map::new());
        }
        for (i, mut delta) in deltas.into_iter().enumerate() {
            if i == 0 {
                let role = message.get("role").cloned().unwrap_or(json!("assistant"));
                delta.insert("role".to_owned(), role);
            }
            out.push(chunk(json!([{
                "index": index,
                "delta": delta,
                "finish_reason": null,
            }])));
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_null()) {
            out.push(chunk(json!([{
                "index": index,
                "delta": {},
                "finish_reason": reason,
            }])));
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
