//! Anthropic Messages streaming events (also Claude on Vertex and Bedrock's
//! InvokeModel stream, which carry the same events).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{json_string, text, CompactJson, Index, Str};
use super::openai_chat::provider_error;
use super::state::{usage_map, Fail, Live, Src, Stream, TextKind, NS_BLOCK, R};
use super::{DecodeKind, Input};
use crate::accumulate::ThinkingFragment;

const HANDLED: [&str; 8] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    content_block: Option<ContentBlock<'a>>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(default)]
    input: Option<CompactJson>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
}

/// Anthropic has one message per stream: choice 0.
const C: i64 = 0;

#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// A tool_use start's `input` when it is not `{}` (used only if no delta comes).
    start_inputs: BTreeMap<i64, String>,
}

fn block_index(i: Option<Index>) -> R<Src> {
    match i {
        Some(i) => Ok((NS_BLOCK, i.0, 0)),
        None => Err(Fail::Bad {
            kind: DecodeKind::WrongType,
            detail: "field `index`: missing".to_owned(),
        }),
    }
}

pub(crate) fn type_probe(input: Input<'_>) -> Option<String> {
    input.self_type()
}

impl State {
    pub(crate) fn feed(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let ev: Event<'_> = match input.parse() {
            Ok(ev) => ev,
            Err(f) => {
                let kind = type_probe(input).or_else(|| event_name.map(str::to_owned));
                return match kind {
                    Some(k) if HANDLED.contains(&k.as_str()) => Err(f),
                    Some(_) => Ok(()), // an event type we do not read: skipped
                    None => Err(f),
                };
            }
        };
        let kind = ev.kind.as_deref().or(event_name).unwrap_or_default();
        match kind {
            "message_start" => {
                s.choice(C)?;
                if let Some(u) = ev.message.and_then(|m| m.usage) {
                    s.merge_usage(u);
                }
            }
            "content_block_start" => {
                let src = block_index(ev.index)?;
                let Some(block) = ev.content_block else {
                    return Ok(());
                };
                self.block_start(s, src, block, live)?;
            }
            "content_block_delta" => {
                let src = block_index(ev.index)?;
                let Some(d) = ev.delta else {
                    return Ok(());
                };
                match d.kind.as_deref().unwrap_or_default() {
                    "text_delta" => {
                        s.text(C, TextKind::Text, Some(src), text(&d.text), false, live)?
                    }
                    "input_json_delta" => {
                        let key = match s.choice(C)?.call_at(src) {
                            Some(k) => k,
                            // A delta whose block never started: keep it (Q7: unnamed till close).
                            None => {
                                s.new_call(C, Some(src.1), Some(src), "", "", "", None, live)?
                            }
                        };
                        s.add_to_call(C, key, "", "", text(&d.partial_json), None, live)?;
                    }
                    "thinking_delta" => {
                        let frag = ThinkingFragment {
                            thinking: text(&d.thinking),
                            ..ThinkingFragment::default()
                        };
                        s.thinking(C, Some(src), frag, false, live)?;
                    }
                    "signature_delta" => {
                        let frag = ThinkingFragment {
                            signature: text(&d.signature),
                            signature_format: "anthropic",
                            ..ThinkingFragment::default()
                        };
                        s.thinking(C, Some(src), frag, false, live)?;
                    }
                    _ => {} // citations_delta and future deltas
                }
            }
            "content_block_stop" => {
                let src = block_index(ev.index)?;
                if let Some(key) = s.existing(C).and_then(|ch| ch.call_at(src)) {
                    let empty = s
                        .existing(C)
                        .and_then(|ch| ch.tools.get(key))
                        .is_some_and(|b| b.input.is_empty());
                    if let Some(start) = self.start_inputs.remove(&src.1) {
                        if empty {
                            s.add_to_call(C, key, "", "", &start, None, live)?;
                        }
                    }
                    s.finish_call(C, key, live);
                }
            }
            "message_delta" => {
                if let Some(reason) = ev.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    s.set_finish_reason(C, reason)?;
                }
                if let Some(u) = ev.usage {
                    s.merge_usage(u);
                }
            }
            "message_stop" => s.end(C, live)?,
            "error" => {
                let err = ev.error.unwrap_or(Value::Null);
                return Err(provider_error(&err));
            }
            _ => {} // ping, and event types added later
        }
        Ok(())
    }

    fn block_start(
        &mut self,
        s: &mut Stream,
        src: Src,
        block: ContentBlock<'_>,
        live: &mut Live<'_>,
    ) -> R {
        match &*block.kind {
            "text" => s.text(C, TextKind::Text, Some(src), text(&block.text), true, live),
            "thinking" => {
                let signature = text(&block.signature);
                let frag = ThinkingFragment {
                    thinking: text(&block.thinking),
                    signature,
                    signature_format: if signature.is_empty() {
                        ""
                    } else {
                        "anthropic"
                    },
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, true, live)
            }
            "redacted_thinking" => {
                let state = json_string(text(&block.data));
                let frag = ThinkingFragment {
                    provider_state: Some(&state),
                    provider_state_format: "anthropic-redacted",
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, true, live)
            }
            kind @ ("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                // The start's `input` is `{}` and is not part of the input: the
                // deltas are. It is kept only for a block that gets no delta.
                let key = s.new_call(
                    C,
                    Some(src.1),
                    Some(src),
                    text(&block.id),
                    text(&block.name),
                    "",
                    None,
                    live,
                )?;
                if kind != "tool_use" {
                    s.set_server_side(C, key);
                }
                if let Some(CompactJson(start)) = block.input {
                    if start != "{}" && !start.is_empty() {
                        self.start_inputs.insert(src.1, start);
                    }
                }
                Ok(())
            }
            _ => Ok(()), // tool results of server tools, and later block types
        }
    }
}
