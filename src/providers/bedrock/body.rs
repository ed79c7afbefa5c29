//! The Bedrock `Converse` output body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::json::CompactJson;
use crate::providers::state::Fail;
use crate::providers::Input;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseBody<'a> {
    #[serde(borrow, default)]
    output: Option<ConverseOutput<'a>>,
    #[serde(default)]
    stop_reason: Option<Value>,
    #[serde(default)]
    additional_model_response_fields: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    metrics: Option<Value>,
    #[serde(default)]
    trace: Option<Value>,
    #[serde(default)]
    performance_config: Option<Value>,
}

#[derive(Deserialize)]
struct ConverseOutput<'a> {
    #[serde(borrow, default)]
    message: Option<ConverseMessage<'a>>,
}

#[derive(Deserialize)]
struct ConverseMessage<'a> {
    #[serde(default)]
    role: Option<Value>,
    #[serde(borrow, default)]
    content: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseBlock {
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    tool_use: Option<ConverseToolUse>,
    #[serde(default)]
    reasoning_content: Option<ConverseReasoning>,
    #[serde(default)]
    citations_content: Option<ConverseCitations>,
}

/// A `toolUse` block: its input, and the rest as its start event's `toolUse`
/// (the direct reader reads it so too).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ConverseToolUse {
    #[serde(default)]
    pub(super) input: Option<CompactJson>,
    #[serde(flatten)]
    pub(super) start: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseReasoning {
    #[serde(default)]
    reasoning_text: Option<ConverseReasoningText>,
    #[serde(default)]
    redacted_content: Option<Value>,
}

#[derive(Deserialize)]
struct ConverseReasoningText {
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    signature: Option<Value>,
}

#[derive(Deserialize)]
struct ConverseCitations {
    #[serde(default)]
    content: Option<Vec<ConverseCitedText>>,
    #[serde(default)]
    citations: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct ConverseCitedText {
    #[serde(default)]
    text: Option<Value>,
}

fn bedrock(body: ConverseBody<'_>) -> Result<Vec<Made>, Fail> {
    let message = body.output.and_then(|o| o.message);
    let (role, content) = match message {
        Some(m) => (m.role, m.content.unwrap_or_default()),
        None => (None, Vec::new()),
    };
    let role = role.unwrap_or(json!("assistant"));
    let mut out: Vec<Made> = vec![json!({ "messageStart": { "role": role } }).into()];
    for (i, raw) in content.into_iter().enumerate() {
        let at = format!("output.message.content[{i}]");
        let block: ConverseBlock = parse_part(raw, &at)?;
        let delta = |d: Value| -> Made {
            json!({ "contentBlockDelta": { "contentBlockIndex": i, "delta": d } }).into()
        };
        if let Some(tool) = block.tool_use {
            out.push(
                json!({ "contentBlockStart": {
                    "contentBlockIndex": i, "start": { "toolUse": tool.start }
                } })
                .into(),
            );
            let input = tool.input.map_or_else(|| "{}".to_owned(), |c| c.0);
            out.push(delta(json!({ "toolUse": { "input": input } })));
        } else if let Some(text) = block.text {
            out.push(delta(json!({ "text": text })));
        } else if let Some(r) = block.reasoning_content {
            if let Some(t) = r.reasoning_text {
                out.push(delta(
                    json!({ "reasoningContent": { "text": t.text.unwrap_or(json!("")) } }),
                ));
                if let Some(sig) = non_empty(t.signature.as_ref()) {
                    out.push(delta(json!({ "reasoningContent": { "signature": sig } })));
                }
            }
            if let Some(redacted) = r.redacted_content {
                out.push(delta(
                    json!({ "reasoningContent": { "redactedContent": redacted } }),
                ));
            }
        } else if let Some(c) = block.citations_content {
            for part in c.content.unwrap_or_default() {
                out.push(delta(json!({ "text": part.text.unwrap_or(json!("")) })));
            }
            for citation in c.citations.unwrap_or_default() {
                out.push(delta(json!({ "citation": citation })));
            }
        } else {
            // Blocks of other kinds (images, results of server tools, later
            // kinds) come whole in a start event.
            let start: Map<String, Value> = parse_part(raw, &at)?;
            out.push(
                json!({ "contentBlockStart": { "contentBlockIndex": i, "start": start } }).into(),
            );
        }
        out.push(json!({ "contentBlockStop": { "contentBlockIndex": i } }).into());
    }
    let mut stop = Map::new();
    if let Some(reason) = body.stop_reason {
        stop.insert("stopReason".to_owned(), reason);
    }
    if let Some(extra) = body.additional_model_response_fields {
        stop.insert("additionalModelResponseFields".to_owned(), extra);
    }
    out.push(json!({ "messageStop": stop }).into());
    let mut metadata = Map::new();
    for (k, v) in [
        ("usage", body.usage),
        ("metrics", body.metrics),
        ("trace", body.trace),
        ("performanceConfig", body.performance_config),
    ] {
        if let Some(v) = v {
            metadata.insert(k.to_owned(), v);
        }
    }
    if !metadata.is_empty() {
        out.push(json!({ "metadata": metadata }).into());
    }
    Ok(out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    bedrock(Input::Json(body).parse()?)
}
