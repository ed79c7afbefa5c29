//! The Anthropic `Message` body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::json::CompactJson;
use crate::providers::state::Fail;
use crate::providers::Input;

#[derive(Deserialize)]
struct AnthropicBody<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    stop_reason: Option<Value>,
    #[serde(default)]
    stop_sequence: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
struct AnthropicBlock<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(borrow, default)]
    citations: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    thinking: Option<Value>,
    #[serde(default)]
    signature: Option<Value>,
    #[serde(default)]
    input: Option<CompactJson>,
}

fn anthropic(body: AnthropicBody<'_>) -> Result<Vec<Made>, Fail> {
    let mut message = body.rest;
    message.insert("content".to_owned(), json!([]));
    message.insert("stop_reason".to_owned(), Value::Null);
    message.insert("stop_sequence".to_owned(), Value::Null);
    if let Some(u) = &body.usage {
        message.insert("usage".to_owned(), u.clone());
    }
    let mut out = vec![typed("message_start", json!({ "message": message }))];
    for (i, raw) in body.content.unwrap_or_default().into_iter().enumerate() {
        let block: AnthropicBlock<'_> = parse_part(raw, &format!("content[{i}]"))?;
        let kind = block.kind.as_deref().unwrap_or_default();
        let delta = |d: Value| typed("content_block_delta", json!({ "index": i, "delta": d }));
        match kind {
            "text" => {
                out.push(typed(
                    "content_block_start",
                    json!({ "index": i, "content_block": { "type": "text", "text": "" } }),
                ));
                let text = block.text.unwrap_or(json!(""));
                out.push(delta(json!({ "type": "text_delta", "text": text })));
                for citation in block.citations.unwrap_or_default() {
                    out.push(Made::Text(format!(
                        "{{\"type\":\"content_block_delta\",\"index\":{i},\"delta\":\
                         {{\"type\":\"citations_delta\",\"citation\":{}}}}}",
                        citation.get()
                    )));
                }
            }
            "thinking" => {
                out.push(typed(
                    "content_block_start",
                    json!({ "index": i, "content_block": {
                        "type": "thinking", "thinking": "", "signature": ""
                    } }),
                ));
                let thinking = block.thinking.unwrap_or(json!(""));
                out.push(delta(
                    json!({ "type": "thinking_delta", "thinking": thinking }),
                ));
                if let Some(sig) = non_empty(block.signature.as_ref()) {
                    out.push(delta(
                        json!({ "type": "signature_delta", "signature": sig }),
                    ));
                }
            }
            "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                let mut start: Map<String, Value> = parse_part(raw, &format!("content[{i}]"))?;
                start.insert("input".to_owned(), json!({}));
                out.push(typed(
                    "content_block_start",
                    json!({ "index": i, "content_block": start }),
                ));
                // A tool without arguments streams no input text at all.
                let input = block.input.map(|c| c.0).unwrap_or_default();
                let text = if input == "{}" { String::new() } else { input };
                out.push(delta(
                    json!({ "type": "input_json_delta", "partial_json": text }),
                ));
            }
            // Redacted thinking, the results of server tools and blocks of
            // later kinds come whole in their start event.
            _ => out.push(with_raw(
                &json!({ "type": "content_block_start", "index": i }),
                "content_block",
                raw,
            )),
        }
        out.push(typed("content_block_stop", json!({ "index": i })));
    }
    let mut end = json!({ "delta": {
        "stop_reason": body.stop_reason.unwrap_or(Value::Null),
        "stop_sequence": body.stop_sequence.unwrap_or(Value::Null),
    } });
    if let (Some(u), Value::Object(m)) = (body.usage, &mut end) {
        m.insert("usage".to_owned(), u);
    }
    out.push(typed("message_delta", end));
    out.push(typed("message_stop", json!({})));
    Ok(out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    anthropic(Input::Json(body).parse()?)
}
