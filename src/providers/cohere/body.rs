//! The Cohere v2 chat response body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::state::Fail;
use crate::providers::Input;

#[derive(Deserialize)]
struct CohereBody {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    finish_reason: Option<Value>,
    #[serde(default)]
    message: Option<CohereMessage>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct CohereMessage {
    #[serde(default)]
    role: Option<Value>,
    #[serde(default)]
    content: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    tool_plan: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    citations: Option<Vec<Value>>,
}

fn cohere(body: CohereBody) -> Result<Vec<Made>, Fail> {
    let message = body.message.unwrap_or(CohereMessage {
        role: None,
        content: None,
        tool_plan: None,
        tool_calls: None,
        citations: None,
    });
    let mut start = json!({ "delta": { "message": {
        "role": message.role.unwrap_or(json!("assistant")),
        "content": [], "tool_plan": "", "tool_calls": [], "citations": [],
    } } });
    if let (Some(id), Value::Object(m)) = (body.id, &mut start) {
        m.insert("id".to_owned(), id);
    }
    let mut out = vec![typed("message-start", start)];
    if let Some(plan) = non_empty(message.tool_plan.as_ref()) {
        out.push(typed(
            "tool-plan-delta",
            json!({ "delta": { "message": { "tool_plan": plan } } }),
        ));
    }
    for (i, part) in message.content.unwrap_or_default().into_iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
        let field = if kind == "thinking" {
            "thinking"
        } else {
            "text"
        };
        let mut empty = part.clone();
        empty.insert(field.to_owned(), json!(""));
        out.push(typed(
            "content-start",
            json!({ "index": i, "delta": { "message": { "content": empty } } }),
        ));
        let mut delta = Map::new();
        delta.insert(
            field.to_owned(),
            part.get(field).cloned().unwrap_or(json!("")),
        );
        out.push(typed(
            "content-delta",
            json!({ "index": i, "delta": { "message": { "content": delta } } }),
        ));
        out.push(typed("content-end", json!({ "index": i })));
    }
    for (i, citation) in message
        .citations
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        out.push(typed(
            "citation-start",
            json!({ "index": i, "delta": { "message": { "citations": citation } } }),
        ));
        out.push(typed("citation-end", json!({ "index": i })));
    }
    for (i, call) in message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let function = call.get("function").cloned().unwrap_or(json!({}));
        let args = function.get("arguments").cloned().unwrap_or(json!(""));
        let mut head = call.clone();
        let mut empty_function = match function {
            Value::Object(f) => f,
            _ => Map::new(),
        };
        empty_function.insert("arguments".to_owned(), json!(""));
        head.insert("function".to_owned(), Value::Object(empty_function));
        out.push(typed(
            "tool-call-start",
            json!({ "index": i, "delta": { "message": { "tool_calls": head } } }),
        ));
        out.push(typed(
            "tool-call-delta",
            json!({ "index": i, "delta": { "message": { "tool_calls": {
                "function": { "arguments": args }
            } } } }),
        ));
        out.push(typed("tool-call-end", json!({ "index": i })));
    }
    let mut end = Map::new();
    if let Some(reason) = body.finish_reason {
        end.insert("finish_reason".to_owned(), reason);
    }
    if let Some(usage) = body.usage {
        end.insert("usage".to_owned(), usage);
    }
    out.push(typed("message-end", json!({ "delta": end })));
    Ok(out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    cohere(Input::Json(body).parse()?)
}
