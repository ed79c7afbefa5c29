//! QUIRKS.md Q31: a whole, non-streamed response body fed as a stream gives the
//! message its streamed form gives, in every dialect, named and `auto`, fed as
//! one event and through the framing (pretty-printed, cut anywhere). The
//! bodies compared with real recordings are built from the recordings
//! themselves (the way each provider's SDK accumulates a stream), so each
//! pair is one response in its two forms.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;
use support::{cassette_bodies, fixture, ragged};

use std::collections::BTreeMap;

use _toolstitch::blocks::Block;
use _toolstitch::framing::{Decoder, Frame, FramingLimits};
use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, DecodeKind, Dialect, Error, LiveEvent,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------- feeding

/// Every frame of `bytes` (SSE, JSON or AWS event-stream, told from the bytes).
fn frames(pieces: &[&[u8]]) -> Vec<Frame> {
    let mut decoder = Decoder::new(FramingLimits::default());
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out).unwrap();
    }
    decoder.finish(&mut out).unwrap();
    out
}

/// Feeds frames as the Python binding does, then closes.
fn feed_frames(d: Option<Dialect>, frames: &[Frame]) -> Result<Assembler, Error> {
    let mut a = Assembler::new(d, AssemblerLimits::default());
    for frame in frames {
        match frame {
            Frame::Sse(ev) => a.feed_json(ev.event.as_deref(), ev.data.as_bytes(), None)?,
            Frame::Line(text) => a.feed_json(None, text.as_bytes(), None)?,
            Frame::EventStream(m) => a.feed_json(m.event_type(), &m.payload, None)?,
        }
    }
    a.close(None)?;
    Ok(a)
}

/// The stream's events as JSON values (SSE data, JSON values, event-stream
/// payloads with their event name).
fn events_of(bytes: &[u8]) -> Vec<(Option<String>, Value)> {
    frames(&[bytes])
        .into_iter()
        .filter_map(|f| {
            let (name, text) = match f {
                Frame::Sse(ev) => (ev.event, ev.data.into_bytes()),
                Frame::Line(t) => (None, t.into_bytes()),
                Frame::EventStream(m) => (m.event_type().map(str::to_owned), m.payload),
            };
            serde_json::from_slice::<Value>(&text)
                .ok()
                .map(|v| (name, v))
        })
        .collect()
}

/// One body fed as one event, then closed.
fn feed_body(d: Option<Dialect>, body: &str) -> Assembler {
    let mut a = Assembler::new(d, AssemblerLimits::default());
    a.feed_json(None, body.as_bytes(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    a.close(None).unwrap();
    a
}

/// JSON text pretty-printed, keys kept in their order (a body's tool inputs
/// keep theirs): two-space indent, `newline` between lines.
fn pretty(text: &str, newline: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let indent = |out: &mut String, depth: usize| {
        out.push_str(newline);
        out.push_str(&"  ".repeat(depth));
    };
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                depth += 1;
                indent(&mut out, depth);
            }
            '}' | ']' => {
                depth -= 1;
                indent(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                indent(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// JSON text without the whitespace between its tokens, keys in their order.
fn compact(text: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c.is_whitespace() {
            continue;
        } else {
            in_string = c == '"';
        }
        out.push(c);
    }
    out
}

/// Call inputs as canonical JSON: a body holds an input as an object, and
/// gives it compact where a stream gives the model's own spacing.
fn canonical_inputs(mut messages: Vec<AssembledMessage>) -> Vec<AssembledMessage> {
    let canon = |s: &mut String| {
        if !s.is_empty() {
            *s = serde_json::from_str::<Value>(s).unwrap().to_string();
        }
    };
    // Provider state is raw JSON sent back as it came; a body rebuilds it, so
    // only its members (not their order) are the same.
    let canon_state = |s: &mut Option<String>| {
        if let Some(s) = s {
            canon(s);
        }
    };
    for m in &mut messages {
        for t in &mut m.tool_uses {
            canon(&mut t.block.input);
            canon_state(&mut t.block.provider_state);
        }
        for b in &mut m.blocks {
            match b {
                Block::ToolUse(t) => {
                    canon(&mut t.input);
                    canon_state(&mut t.provider_state);
                }
                Block::ToolResult(r) => canon_state(&mut r.provider_state),
                _ => {}
            }
        }
    }
    messages
}

/// The checks every body goes through: named and `auto`, one event and
/// framed (compact and pretty-printed, LF and CRLF, cut anywhere), all giving
/// the same messages; returns them.
fn body_everywhere(d: Dialect, body: &str) -> Vec<AssembledMessage> {
    let named = feed_body(Some(d), body);
    let messages = named.messages();
    let auto = feed_body(None, body);
    assert_eq!(auto.dialect(), Some(d));
    assert_eq!(auto.messages(), messages, "{d}: auto");
    assert_eq!(named.events_seen(), 1, "{d}: a body is one event");
    for text in [compact(body), pretty(body, "\n"), pretty(body, "\r\n")] {
        let bytes = text.as_bytes();
        for pieces in [
            vec![bytes],
            ragged(bytes, 13),
            bytes.chunks(1).collect::<Vec<_>>(),
        ] {
            for dialect in [Some(d), None] {
                let framed = feed_frames(dialect, &frames(&pieces)).unwrap();
                assert_eq!(framed.messages(), messages, "{d}: framed, {dialect:?}");
            }
        }
    }
    messages
}

/// The message of a whole recorded stream.
fn stream_messages(d: Dialect, bytes: &[u8]) -> Vec<AssembledMessage> {
    let stream = feed_frames(Some(d), &frames(&[bytes])).unwrap();
    let auto = feed_frames(None, &frames(&ragged(bytes, 13))).unwrap();
    assert_eq!(auto.messages(), stream.messages());
    stream.messages()
}

fn merge(into: &mut Value, from: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
}

fn append(slot: &mut Value, more: &Value) {
    let joined = format!(
        "{}{}",
        slot.as_str().unwrap_or_default(),
        more.as_str().unwrap_or_default()
    );
    *slot = Value::String(joined);
}

// ---------------------------------------------------------------- OpenAI chat

/// A Chat Completions stream accumulated into its `chat.completion` body.
fn chat_body_of(events: &[(Option<String>, Value)]) -> Value {
    let mut body = json!({ "object": "chat.completion" });
    let mut choices: BTreeMap<i64, Value> = BTreeMap::new();
    let mut usage = Value::Null;
    for (_, chunk) in events {
        for k in ["id", "created", "model", "system_fingerprint"] {
            if let Some(v) = chunk.get(k) {
                body[k] = v.clone();
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            if usage.is_null() {
                usage = json!({});
            }
            merge(&mut usage, u);
        }
        for c in chunk["choices"].as_array().into_iter().flatten() {
            let index = c["index"].as_i64().unwrap_or(0);
            let choice = choices.entry(index).or_insert_with(|| {
                json!({ "index": index, "message": { "role": "assistant", "content": null }, "finish_reason": null })
            });
            let delta = &c["delta"];
            for k in ["content", "refusal", "reasoning_content"] {
                if let Some(s) = delta.get(k).filter(|s| s.is_string()) {
                    let slot = &mut choice["message"][k];
                    if slot.is_null() {
                        *slot = json!("");
                    }
                    append(slot, s);
                }
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let calls = choice["message"]
                    .as_object_mut()
                    .unwrap()
                    .entry("tool_calls")
                    .or_insert(json!([]))
                    .as_array_mut()
                    .unwrap();
                let at = call["index"].as_u64().map_or(calls.len(), |i| i as usize);
                if at >= calls.len() {
                    calls.push(json!({ "id": "", "type": "function", "function": { "name": "", "arguments": "" } }));
                }
                let slot = &mut calls[at];
                let given = |v: &&Value| v.as_str().is_some_and(|s| !s.is_empty());
                if let Some(id) = call.get("id").filter(given) {
                    slot["id"] = id.clone();
                }
                if let Some(name) = call["function"].get("name").filter(given) {
                    slot["function"]["name"] = name.clone();
                }
                if let Some(args) = call["function"].get("arguments") {
                    append(&mut slot["function"]["arguments"], args);
                }
            }
            if let Some(r) = c.get("finish_reason").filter(|r| !r.is_null()) {
                choice["finish_reason"] = r.clone();
            }
        }
    }
    body["choices"] = Value::Array(choices.into_values().collect());
    body["usage"] = usage;
    body
}

#[test]
fn q31_chat_completion_body_equals_its_recorded_stream() {
    for (name, same_index) in [
        ("openai_chat-completions-parallel-two-tools.sse", true),
        ("vercel-ai/groq-tool-call.chunks.txt", true),
        ("vercel-ai/xai-tool-call.chunks.txt", true),
        ("vercel-ai/mistral-incremental-tool-call.chunks.txt", true),
        // Mistral sends calls without `index`; a body's calls are at their positions.
        ("mistral_chat-single-chunk-tool-call.jsonl", false),
    ] {
        let bytes = fixture(name);
        let streamed = stream_messages(Dialect::OpenAiChat, &bytes);
        let body = chat_body_of(&events_of(&bytes)).to_string();
        let mut from_body = body_everywhere(Dialect::OpenAiChat, &body);
        if !same_index {
            for m in &mut from_body {
                for t in &mut m.tool_uses {
                    t.provider_index = None;
                }
            }
        }
        assert_eq!(from_body, streamed, "{name}");
        assert!(from_body[0].complete, "{name}");
        assert!(!from_body[0].tool_uses.is_empty(), "{name}");
    }
}

#[test]
fn q31_chat_completion_parts_choices_and_legacy_function_call() {
    // n = 2, reasoning (DeepSeek's field), text, a refusal, and calls without index.
    let body = r#"{
      "id": "chatcmpl-9xYz", "object": "chat.completion", "created": 1741570283,
      "model": "deepseek-reasoner",
      "choices": [
        {"index": 0, "message": {"role": "assistant", "reasoning_content": "The user wants weather.",
          "content": "Checking both cities.", "refusal": null,
          "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}
          ]}, "logprobs": null, "finish_reason": "tool_calls"},
        {"index": 1, "message": {"role": "assistant", "content": null,
          "refusal": "I can't help with that."}, "logprobs": null, "finish_reason": "stop"}
      ],
      "usage": {"prompt_tokens": 41, "completion_tokens": 37, "total_tokens": 78,
        "completion_tokens_details": {"reasoning_tokens": 6}}
    }"#;
    let messages = body_everywhere(Dialect::OpenAiChat, body);
    assert_eq!(messages.len(), 2);
    let m = &messages[0];
    assert!(matches!(&m.blocks[0], Block::Thinking(t) if t.thinking == "The user wants weather."));
    assert!(matches!(&m.blocks[1], Block::Text(t) if t == "Checking both cities."));
    let calls: Vec<(&str, &str, Option<i64>)> = m
        .tool_uses
        .iter()
        .map(|t| {
            (
                t.block.id.as_str(),
                t.block.input.as_str(),
                t.provider_index,
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", r#"{"city":"Paris"}"#, Some(0)),
            ("call_b", r#"{"city":"Rome"}"#, Some(1))
        ]
    );
    assert!(m.complete && m.finish_reason.as_deref() == Some("tool_calls"));
    assert_eq!(m.usage.as_ref().unwrap()["total_tokens"], json!(78));
    let refusal = &messages[1];
    assert_eq!(
        refusal.blocks,
        vec![Block::Refusal("I can't help with that.".to_owned())]
    );
    assert!(refusal.complete);

    // The legacy single function call, and a body cut by max tokens.
    let legacy = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,
        "function_call":{"name":"lookup","arguments":"{\"q\":\"x\"}"}},"finish_reason":"function_call"}]}"#;
    let m = body_everywhere(Dialect::OpenAiChat, legacy).remove(0);
    assert_eq!(m.tool_uses[0].block.name, "lookup");
    assert_eq!(m.tool_uses[0].block.input, r#"{"q":"x"}"#);
    assert!(m.complete);
    let cut = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}]}"#;
    let m = body_everywhere(Dialect::OpenAiChat, cut).remove(0);
    assert_eq!(m.text, "Once upon");
    assert!(!m.complete, "Q15: a length cut is never complete");
}

// ---------------------------------------------------------------- Anthropic

/// An Anthropic stream accumulated into its `Message`, as the SDK does.
fn anthropic_body_of(events: &[(Option<String>, Value)]) -> Value {
    let mut message = json!({});
    let mut blocks: Vec<Value> = Vec::new();
    let mut inputs: BTreeMap<usize, String> = BTreeMap::new();
    for (_, ev) in events {
        let i = ev["index"].as_u64().unwrap_or(0) as usize;
        match ev["type"].as_str().unwrap_or_default() {
            "message_start" => message = ev["message"].clone(),
            "content_block_start" => {
                blocks.push(ev["content_block"].clone());
            }
            "content_block_delta" => {
                let d = &ev["delta"];
                let block = &mut blocks[i];
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => append(&mut block["text"], &d["text"]),
                    "thinking_delta" => append(&mut block["thinking"], &d["thinking"]),
                    "signature_delta" => block["signature"] = d["signature"].clone(),
                    "input_json_delta" => inputs
                        .entry(i)
                        .or_default()
                        .push_str(d["partial_json"].as_str().unwrap_or_default()),
                    "citations_delta" => block
                        .as_object_mut()
                        .unwrap()
                        .entry("citations")
                        .or_insert(json!([]))
                        .as_array_mut()
                        .unwrap()
                        .push(d["citation"].clone()),
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(text) = inputs.remove(&i).filter(|t| !t.is_empty()) {
                    blocks[i]["input"] = serde_json::from_str(&text).unwrap();
                }
            }
            "message_delta" => {
                for k in ["stop_reason", "stop_sequence"] {
                    message[k] = ev["delta"][k].clone();
                }
                let mut usage = message["usage"].clone();
                merge(&mut usage, &ev["usage"]);
                message["usage"] = usage;
            }
            _ => {}
        }
    }
    message["content"] = Value::Array(blocks);
    message
}

#[test]
fn q31_anthropic_message_equals_its_recorded_stream() {
    for name in [
        "anthropic_messages-text-then-tool-use.sse",
        "vercel-ai/anthropic-tool-no-args.chunks.txt",
        "vercel-ai/anthropic-json-tool.1.chunks.txt",
        "vercel-ai/anthropic-web-search-tool.1.chunks.txt",
        "vercel-ai/anthropic-mcp.1.chunks.txt",
    ] {
        let bytes = fixture(name);
        let streamed = canonical_inputs(stream_messages(Dialect::Anthropic, &bytes));
        let body = anthropic_body_of(&events_of(&bytes)).to_string();
        let from_body = canonical_inputs(body_everywhere(Dialect::Anthropic, &body));
        assert_eq!(from_body, streamed, "{name}");
        assert!(from_body[0].complete, "{name}");
    }
    // The first one, as its source states it (tests/fixtures/PROVENANCE.md).
    let body = anthropic_body_of(&events_of(&fixture(
        "anthropic_messages-text-then-tool-use.sse",
    )));
    let m = feed_body(Some(Dialect::Anthropic), &body.to_string()).messages()[0].clone();
    assert_eq!(m.text, "I'll check the current weather in Paris for you.");
    assert_eq!(m.tool_uses[0].block.id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
    assert_eq!(m.tool_uses[0].block.input, r#"{"location":"Paris"}"#);
    assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(m.usage.as_ref().unwrap()["output_tokens"], json!(65));
    assert_eq!(m.usage.as_ref().unwrap()["input_tokens"], json!(377));
}

#[test]
fn q31_anthropic_thinking_redacted_and_server_tools() {
    // Extended thinking, a redacted block, a server tool and its result, a
    // citation, and a client tool whose input keys are not in sorted order.
    let body = r#"{
      "id": "msg_01AbC", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
      "content": [
        {"type": "thinking", "thinking": "Let me search first.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "weather Paris"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
          {"type": "web_search_result", "title": "Paris", "url": "https://example.com/paris", "encrypted_content": "Eu8B"}]},
        {"type": "text", "text": "It is sunny.", "citations": [
          {"type": "web_search_result_location", "cited_text": "sunny", "url": "https://example.com/paris", "title": "Paris", "encrypted_index": "Eo8B"}]},
        {"type": "tool_use", "id": "toolu_02", "name": "book", "input": {"zone": "CET", "city": "Paris", "when": {"day": 2, "at": "09:00"}}}
      ],
      "stop_reason": "tool_use", "stop_sequence": null,
      "usage": {"input_tokens": 2095, "output_tokens": 503, "server_tool_use": {"web_search_requests": 1}}
    }"#;
    let m = body_everywhere(Dialect::Anthropic, body).remove(0);
    assert!(m.complete);
    assert!(
        matches!(&m.blocks[0], Block::Thinking(t) if t.thinking == "Let me search first." && t.signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3h" && t.signature_format == "anthropic")
    );
    assert!(
        matches!(&m.blocks[1], Block::Thinking(t) if t.provider_state_format == "anthropic-redacted")
    );
    assert_eq!(m.text, "It is sunny.");
    let calls: Vec<(&str, &str, bool)> = m
        .tool_uses
        .iter()
        .map(|t| (t.block.id.as_str(), t.block.input.as_str(), t.server_side))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("srvtoolu_01", r#"{"query":"weather Paris"}"#, true),
            (
                "toolu_02",
                r#"{"zone":"CET","city":"Paris","when":{"day":2,"at":"09:00"}}"#,
                false
            ),
        ],
        "inputs compact, keys in the body's order"
    );
    // A tool with no arguments streams no input: the body's `{}` gives the same.
    let no_args = r#"{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"now","input":{}}],"stop_reason":"tool_use","usage":{}}"#;
    assert_eq!(
        body_everywhere(Dialect::Anthropic, no_args)[0].tool_uses[0]
            .block
            .input,
        ""
    );
    // max_tokens: kept exactly, never complete.
    let cut = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Long"}],"stop_reason":"max_tokens","usage":{}}"#;
    let m = body_everywhere(Dialect::Anthropic, cut).remove(0);
    assert_eq!(m.text, "Long");
    assert!(!m.complete);
}

// ---------------------------------------------------------------- Responses

#[test]
fn q31_responses_object_equals_its_recorded_stream() {
    // The `response` of a stream's `response.completed` is the body a
    // non-streamed call returns.
    for name in [
        "vercel-ai/azure-tool-call.1.chunks.txt",
        "vercel-ai/lmstudio-tool-call.1.chunks.txt",
        "vercel-ai/openai-custom-tool.1.chunks.txt",
        "vercel-ai/azure-web-search-preview-tool.1.chunks.txt",
        "vercel-ai/openai-file-search-tool.1.chunks.txt",
        "vercel-ai/azure-image-generation-tool.1.chunks.txt",
    ] {
        let bytes = fixture(name);
        let events = events_of(&bytes);
        let completed = events
            .iter()
            .find(|(_, e)| e["type"] == "response.completed")
            .map(|(_, e)| e["response"].to_string())
            .unwrap();
        let streamed = stream_messages(Dialect::OpenAiResponses, &bytes);
        let from_body = body_everywhere(Dialect::OpenAiResponses, &completed);
        assert_eq!(from_body, streamed, "{name}");
        assert!(from_body[0].complete, "{name}");
    }
}

#[test]
fn q31_responses_parts_and_statuses() {
    let body = r#"{
      "id": "resp_67ccd2bed1ec8190", "object": "response", "created_at": 1741476542,
      "status": "completed", "error": null, "incomplete_details": null, "model": "o4-mini",
      "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [
          {"type": "summary_text", "text": "First part."}, {"type": "summary_text", "text": "Second part."}],
          "encrypted_content": "gAAAAABo"},
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [
          {"type": "output_text", "text": "Here you go.", "annotations": [
            {"type": "url_citation", "start_index": 0, "end_index": 4, "url": "https://example.com", "title": "Ex"}]},
          {"type": "refusal", "refusal": "Not that part."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
          "arguments": "{\"city\":\"Paris\"}", "status": "completed"}
      ],
      "usage": {"input_tokens": 36, "output_tokens": 87, "total_tokens": 123,
        "output_tokens_details": {"reasoning_tokens": 64}}
    }"#;
    let m = body_everywhere(Dialect::OpenAiResponses, body).remove(0);
    assert!(m.complete && m.finish_reason.as_deref() == Some("completed"));
    assert!(
        matches!(&m.blocks[0], Block::Thinking(t) if t.thinking == "First part.\n\nSecond part." && t.signature == "gAAAAABo")
    );
    assert_eq!(m.text, "Here you go.");
    assert_eq!(m.blocks[2], Block::Refusal("Not that part.".to_owned()));
    assert_eq!(m.tool_uses[0].block.id, "call_1");
    assert_eq!(m.tool_uses[0].block.input, r#"{"city":"Paris"}"#);
    assert_eq!(
        m.tool_uses[0].block.provider_state.as_deref(),
        Some("\"fc_1\"")
    );
    assert_eq!(m.usage.as_ref().unwrap()["total_tokens"], json!(123));

    let incomplete = r#"{"id":"r","object":"response","status":"incomplete",
      "incomplete_details":{"reason":"max_output_tokens"},
      "output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"Part","annotations":[]}]}]}"#;
    let m = body_everywhere(Dialect::OpenAiResponses, incomplete).remove(0);
    assert_eq!(m.finish_reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(m.text, "Part");
    assert!(!m.complete);

    let in_progress = r#"{"id":"r","object":"response","status":"in_progress","output":[]}"#;
    assert!(!body_everywhere(Dialect::OpenAiResponses, in_progress)[0].complete);

    let failed = r#"{"id":"r","object":"response","status":"failed","output":[],
      "error":{"code":"server_error","message":"The model failed."}}"#;
    let mut a = Assembler::new(Some(Dialect::OpenAiResponses), AssemblerLimits::default());
    let err = a.feed_json(None, failed.as_bytes(), None).unwrap_err();
    assert!(
        matches!(&err, Error::Provider { event, error_type, message, .. }
            if event.ordinal == 1 && error_type == "server_error" && message == "The model failed."),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("Responses `response` body"),
        "{err}"
    );
}

// ---------------------------------------------------------------- Gemini

#[test]
fn q31_gemini_response_and_json_array() {
    let bytes = fixture("google_vertex-stream-function-call-args-4-calls.jsonl");
    let streamed = stream_messages(Dialect::Gemini, &bytes);
    let lines: Vec<String> = frames(&[&bytes])
        .into_iter()
        .filter_map(|f| match f {
            Frame::Line(t) => Some(t),
            _ => None,
        })
        .collect();
    // streamGenerateContent without alt=sse: one array, pretty-printed, CRLF.
    let array = format!("[{}]", lines.join(","));
    for text in [array.clone(), pretty(&array, "\r\n"), pretty(&array, "\n")] {
        let bytes = text.as_bytes();
        for pieces in [
            vec![bytes],
            ragged(bytes, 13),
            bytes.chunks(1).collect::<Vec<_>>(),
        ] {
            for d in [Some(Dialect::Gemini), None] {
                let a = feed_frames(d, &frames(&pieces)).unwrap();
                assert_eq!(a.messages(), streamed);
            }
        }
    }
    // The array fed as one event, and each element (a whole response) alone.
    for d in [Some(Dialect::Gemini), None] {
        assert_eq!(feed_body(d, &array).messages(), streamed);
        let mut a = Assembler::new(d, AssemblerLimits::default());
        for line in &lines {
            a.feed_json(None, pretty(line, "\n").as_bytes(), None)
                .unwrap();
        }
        a.close(None).unwrap();
        assert_eq!(a.messages(), streamed);
    }
    assert_eq!(streamed[0].tool_uses.len(), 4);

    // A plain generateContent response is one streamed chunk.
    let body = r#"{"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Calling it."},
        {"functionCall": {"name": "get_weather", "args": {"zone": "CET", "city": "Paris"}}, "thoughtSignature": "CiQB"}]},
        "finishReason": "STOP", "index": 0}],
      "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
      "modelVersion": "gemini-2.5-flash"}"#;
    let m = feed_body(None, body).messages().remove(0);
    assert!(m.complete);
    assert_eq!(
        m.tool_uses[0].block.input,
        r#"{"zone":"CET","city":"Paris"}"#
    );
}

// ---------------------------------------------------------------- Bedrock

/// A ConverseStream accumulated into its `Converse` output.
fn converse_body_of(events: &[(Option<String>, Value)]) -> Value {
    let mut blocks: BTreeMap<u64, Value> = BTreeMap::new();
    let mut inputs: BTreeMap<u64, String> = BTreeMap::new();
    let mut body = json!({});
    let mut role = json!("assistant");
    for (name, ev) in events {
        let i = ev["contentBlockIndex"].as_u64().unwrap_or(0);
        match name.as_deref().unwrap_or_default() {
            "messageStart" => role = ev["role"].clone(),
            "contentBlockStart" => {
                let t = &ev["start"]["toolUse"];
                blocks.insert(
                    i,
                    json!({ "toolUse": { "toolUseId": t["toolUseId"], "name": t["name"] } }),
                );
            }
            "contentBlockDelta" => {
                if let Some(text) = ev["delta"].get("text") {
                    let b = blocks.entry(i).or_insert(json!({ "text": "" }));
                    append(&mut b["text"], text);
                }
                if let Some(input) = ev["delta"]["toolUse"].get("input") {
                    inputs
                        .entry(i)
                        .or_default()
                        .push_str(input.as_str().unwrap());
                }
            }
            "contentBlockStop" => {
                if let Some(text) = inputs.remove(&i) {
                    blocks.get_mut(&i).unwrap()["toolUse"]["input"] =
                        serde_json::from_str(&text).unwrap();
                }
            }
            "messageStop" => body["stopReason"] = ev["stopReason"].clone(),
            "metadata" => {
                body["usage"] = ev["usage"].clone();
                body["metrics"] = ev["metrics"].clone();
            }
            _ => {}
        }
    }
    body["output"] =
        json!({ "message": { "role": role, "content": blocks.into_values().collect::<Vec<_>>() } });
    body
}

#[test]
fn q31_bedrock_converse_output_equals_its_recorded_stream() {
    let yaml =
        String::from_utf8(fixture("bedrock_converse-stream-nova-tool-use.vcr.yaml")).unwrap();
    let bodies = cassette_bodies(&yaml);
    assert_eq!(bodies.len(), 2);
    for stream in &bodies {
        let streamed = stream_messages(Dialect::Bedrock, stream);
        let body = converse_body_of(&events_of(stream)).to_string();
        let from_body = body_everywhere(Dialect::Bedrock, &body);
        assert_eq!(from_body, streamed);
        assert!(from_body[0].complete);
    }
    let body = converse_body_of(&events_of(&bodies[0]));
    let m = feed_body(None, &body.to_string()).messages().remove(0);
    assert_eq!(m.tool_uses[0].block.id, "tooluse_lAG_zP8QRHmSYOwZzzaCqA");
    assert_eq!(m.tool_uses[0].block.input, r#"{"city":"Paris"}"#);
    assert_eq!(m.usage.as_ref().unwrap()["inputTokens"], json!(471));
    assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
}

#[test]
fn q31_bedrock_reasoning_and_boto3_shape() {
    // As boto3 returns it (ResponseMetadata beside the output), with reasoning.
    let body = r#"{
      "ResponseMetadata": {"RequestId": "5c6f", "HTTPStatusCode": 200},
      "output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "The user asks for Paris.", "signature": "ErcBCkgIAxABGAIiQ"}}},
        {"reasoningContent": {"redactedContent": "RXJjQkNrZ0lBeEFC"}},
        {"text": "Let me look that up."},
        {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "top_song", "input": {"sign": "WZPZ", "limit": 1}}}
      ]}},
      "stopReason": "tool_use",
      "usage": {"inputTokens": 375, "outputTokens": 92, "totalTokens": 467},
      "metrics": {"latencyMs": 2083}
    }"#;
    let m = body_everywhere(Dialect::Bedrock, body).remove(0);
    assert!(
        matches!(&m.blocks[0], Block::Thinking(t) if t.thinking == "The user asks for Paris." && t.signature == "ErcBCkgIAxABGAIiQ")
    );
    assert!(
        matches!(&m.blocks[1], Block::Thinking(t) if t.provider_state_format == "bedrock-redacted")
    );
    assert_eq!(m.text, "Let me look that up.");
    assert_eq!(m.tool_uses[0].block.input, r#"{"sign":"WZPZ","limit":1}"#);
    assert_eq!(m.tool_uses[0].provider_index, Some(3));
    assert!(m.complete);
    assert_eq!(m.usage.as_ref().unwrap()["totalTokens"], json!(467));
}

// ---------------------------------------------------------------- Cohere

/// A Cohere v2 chat stream accumulated into its chat response.
fn cohere_body_of(events: &[(Option<String>, Value)]) -> Value {
    let mut body = json!({});
    let mut message = json!({ "role": "assistant" });
    let mut calls: BTreeMap<u64, Value> = BTreeMap::new();
    let mut content: BTreeMap<u64, Value> = BTreeMap::new();
    for (_, ev) in events {
        let i = ev["index"].as_u64().unwrap_or(0);
        let m = &ev["delta"]["message"];
        match ev["type"].as_str().unwrap_or_default() {
            "message-start" => body["id"] = ev["id"].clone(),
            "tool-plan-delta" => {
                if message.get("tool_plan").is_none() {
                    message["tool_plan"] = json!("");
                }
                append(&mut message["tool_plan"], &m["tool_plan"]);
            }
            "content-start" => {
                content.insert(i, m["content"].clone());
            }
            "content-delta" => append(
                &mut content.get_mut(&i).unwrap()["text"],
                &m["content"]["text"],
            ),
            "tool-call-start" => {
                calls.insert(i, m["tool_calls"].clone());
            }
            "tool-call-delta" => append(
                &mut calls.get_mut(&i).unwrap()["function"]["arguments"],
                &m["tool_calls"]["function"]["arguments"],
            ),
            "message-end" => {
                body["finish_reason"] = ev["delta"]["finish_reason"].clone();
                body["usage"] = ev["delta"]["usage"].clone();
            }
            _ => {}
        }
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls.into_values().collect());
    }
    if !content.is_empty() {
        message["content"] = Value::Array(content.into_values().collect());
    }
    body["message"] = message;
    body
}

#[test]
fn q31_cohere_chat_response_equals_its_recorded_stream() {
    let bytes = fixture("vercel-ai/cohere-tool-call.chunks.txt");
    let streamed = stream_messages(Dialect::Cohere, &bytes);
    let body = cohere_body_of(&events_of(&bytes)).to_string();
    let from_body = body_everywhere(Dialect::Cohere, &body);
    assert_eq!(from_body, streamed);
    let m = &from_body[0];
    assert!(m.complete);
    assert_eq!(m.tool_uses.len(), 2);
    assert_eq!(m.tool_uses[0].block.id, "weather_e8p4pn45zt0t");

    // Text with a thinking part, as command-a-reasoning answers.
    let body = r#"{"id": "d1f0", "finish_reason": "COMPLETE",
      "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Short answer."}, {"type": "text", "text": "Paris."}]},
      "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 3}, "tokens": {"input_tokens": 70, "output_tokens": 9}}}"#;
    let m = body_everywhere(Dialect::Cohere, body).remove(0);
    assert!(matches!(&m.blocks[0], Block::Thinking(t) if t.thinking == "Short answer."));
    assert_eq!(m.text, "Paris.");
    assert!(m.complete && m.finish_reason.as_deref() == Some("COMPLETE"));
}

// ---------------------------------------------------------------- errors and arrays

#[test]
fn q31_body_errors_name_the_body_and_keep_its_ordinal() {
    // A body of another dialect than the one named.
    let anthropic =
        r#"{"type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#;
    let mut a = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
    let err = a.feed_json(None, anthropic.as_bytes(), None).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::WrongDialect {
                expected: Dialect::OpenAiChat,
                looks_like: Dialect::Anthropic,
                ..
            }
        ),
        "{err}"
    );
    // A field of the wrong type names its path.
    let mut a = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
    let err = a
        .feed_json(None, br#"{"type":"message","content":{"a":1}}"#, None)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { kind: DecodeKind::WrongType, detail, event } if detail.contains("content") && event.ordinal == 1),
        "{err}"
    );
    // A limit crossed halfway through a body: an error naming the body at
    // its own ordinal, with what came before kept.
    let limits = AssemblerLimits {
        max_calls: 1,
        ..AssemblerLimits::default()
    };
    let mut a = Assembler::new(None, limits);
    a.feed_json(None, b" ", None).unwrap(); // an empty payload: skipped, but counted
    let body = r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[
      {"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},
      {"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
    let err = a.feed_json(None, body.as_bytes(), None).unwrap_err();
    let Error::Limit { event, limit, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(limit.name(), "max_calls");
    assert_eq!(event.ordinal, 2);
    assert!(
        event.event_type.starts_with("chat.completion body, at its"),
        "{}",
        event.event_type
    );
    assert_eq!(a.events_seen(), 2);
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert_eq!(m.tool_uses.len(), 1);
    assert!(!m.complete, "a body not applied whole is never complete");
}

#[test]
fn json_arrays_of_events() {
    let chunk = |text: &str, finish: Value| json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":text},"finish_reason":finish}]});
    let array = json!([chunk("Hel", Value::Null), chunk("lo", json!("stop"))]);
    for d in [Some(Dialect::OpenAiChat), None] {
        let mut a = Assembler::new(d, AssemblerLimits::default());
        let mut live = Vec::new();
        a.feed_json(None, array.to_string().as_bytes(), Some(&mut live))
            .unwrap();
        a.close(None).unwrap();
        let m = a.messages().remove(0);
        assert_eq!(m.text, "Hello");
        assert!(m.complete);
        assert_eq!(a.events_seen(), 1);
        assert!(live.contains(&LiveEvent::TextDelta {
            choice: 0,
            text: "lo".to_owned()
        }));
        // The same as a value.
        let mut b = Assembler::new(d, AssemblerLimits::default());
        b.feed_value(None, &array, None).unwrap();
        b.close(None).unwrap();
        assert_eq!(b.messages(), a.messages());
    }
    // An element that is not an object is named.
    let mut a = Assembler::new(None, AssemblerLimits::default());
    let err = a
        .feed_json(None, br#"[{"candidates":[]}, 3]"#, None)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Decode { kind: DecodeKind::NotAnObject, detail, .. } if detail.contains("element 1")),
        "{err}"
    );
    // Malformed JSON in an array.
    let err = Assembler::new(None, AssemblerLimits::default())
        .feed_json(None, b"[{\"a\":", None)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Decode {
            kind: DecodeKind::MalformedJson,
            ..
        }
    ));
}

#[test]
fn a_body_streams_live_events() {
    let body = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Hi"},
      {"type":"tool_use","id":"t1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{}}"#;
    let mut a = Assembler::new(None, AssemblerLimits::default());
    let mut live = Vec::new();
    a.feed_json(None, body.as_bytes(), Some(&mut live)).unwrap();
    assert_eq!(
        live,
        vec![
            LiveEvent::TextDelta {
                choice: 0,
                text: "Hi".to_owned()
            },
            LiveEvent::ToolCallStarted {
                choice: 0,
                index: 0,
                id: "t1".to_owned(),
                name: "f".to_owned()
            },
            LiveEvent::ToolInputDelta {
                choice: 0,
                index: 0,
                fragment: r#"{"a":1}"#.to_owned(),
                replaces: false
            },
            LiveEvent::ToolCallFinished {
                choice: 0,
                index: 0
            },
            LiveEvent::MessageDone {
                choice: 0,
                finish_reason: Some("tool_use".to_owned()),
                complete: true
            },
        ]
    );
}

/// Streamed events whose text happens to hold a body's marker are read as
/// the events they are.
#[test]
fn streamed_events_that_mention_body_markers_stay_events() {
    let events = [
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"\"message\""},"finish_reason":null}]}),
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"message"},"finish_reason":"stop"}]}),
    ];
    let mut a = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
    for e in &events {
        a.feed_json(None, e.to_string().as_bytes(), None).unwrap();
    }
    a.close(None).unwrap();
    assert_eq!(a.messages()[0].text, "\"message\"message");
    // Anthropic's message_start holds a nested `"type": "message"`.
    let mut a = Assembler::new(None, AssemblerLimits::default());
    for e in [
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}),
        json!({"type":"message_stop"}),
    ] {
        a.feed_json(None, e.to_string().as_bytes(), None).unwrap();
    }
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert_eq!(a.dialect(), Some(Dialect::Anthropic));
    assert_eq!((m.text.as_str(), m.complete), ("ok", true));
    assert_eq!(a.events_seen(), 6);
}
