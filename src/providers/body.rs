//! Whole, non-streamed response bodies fed as a stream (QUIRKS.md Q31: the
//! caller forgot `stream=True`, or replays a gateway log that holds both
//! kinds), and JSON arrays of events.
//!
//! A body is turned into the events its dialect would have streamed for it,
//! in full protocol order, and each of them goes through the dialect's own
//! adapter, so a body and its streamed form give the same message under the
//! same rules. The events keep the body's ordinal in error messages, and name
//! the body. A body that cannot be applied whole is an error.
//!
//! | body | events |
//! |---|---|
//! | OpenAI `chat.completion` | per choice: one chunk per part of the message (reasoning, content, refusal, each tool call with its `index`, a legacy `function_call`), then one with the `finish_reason`; then one with `usage` and no choices |
//! | Anthropic `Message` | `message_start`; per block `content_block_start` (text empty, a tool's `input` `{}`, a server tool's result whole), its delta (`text_delta` and `citations_delta`, `thinking_delta` and `signature_delta`, `input_json_delta` with the input) and `content_block_stop`; `message_delta` with `stop_reason` and usage; `message_stop` |
//! | OpenAI Responses `response` | `response.created`, `response.in_progress`; per output item `response.output_item.added`, its parts and deltas (text, refusal, arguments, custom tool input, reasoning summary and text), `response.output_item.done` with the item as the body has it; `response.completed` / `response.incomplete` / `response.failed` by `status` |
//! | Gemini `GenerateContentResponse` | none: it is one streamed chunk already |
//! | Bedrock `Converse` output | `messageStart`; per block a `contentBlockStart` for a tool use, its `contentBlockDelta`s and `contentBlockStop`; `messageStop` with `stopReason`; `metadata` with usage and metrics |
//! | Cohere v2 chat response | `message-start`, `tool-plan-delta`, per content part `content-start` / `content-delta` / `content-end`, per citation `citation-start` / `citation-end`, per tool call `tool-call-start` / `tool-call-delta` / `tool-call-end`, `message-end` with `finish_reason` and usage |
//!
//! A JSON array fed as one event (Gemini's `streamGenerateContent` without
//! `alt=sse` returns one) is fed element by element.
//!
//! Tool inputs that a body holds as JSON objects (Anthropic `input`, Bedrock
//! `toolUse.input`) become their compact text, keys in the order the body has
//! them; everything else a body holds is passed on as it is.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::detect;
use super::json::CompactJson;
use super::state::Fail;
use super::{Assembler, DecodeKind, Dialect, Error, Input, LiveEvent};

/// One event made from a body: built here, or text holding parts of the body
/// exactly as they are (key order included).
enum Made {
    Value(Value),
    Text(String),
}

impl From<Value> for Made {
    fn from(v: Value) -> Self {
        Made::Value(v)
    }
}

/// Takes over an event that is a JSON array or a whole response body: feeds
/// what it holds and returns the outcome. `None` for an ordinary event (the
/// usual case: one substring search for the dialect's body marker).
pub(super) fn intercept(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    if is_array(input) {
        return Some(feed_array(asm, event_name, input, live));
    }
    let shape = match asm.dialect {
        Some(Dialect::Gemini) => return None,
        Some(d) if !may_be_body(d, input) => return None,
        _ => shape_of(input)?,
    };
    match asm.dialect {
        // Q32: a body of another dialect than the one named.
        Some(d) if d != shape => Some(Err(Error::WrongDialect {
            event: asm.event_ref(event_name, input),
            expected: d,
            looks_like: shape,
        })),
        _ => {
            asm.dialect = Some(shape);
            Some(feed_body(asm, shape, event_name, input, live))
        }
    }
}

fn is_array(input: Input<'_>) -> bool {
    match input {
        Input::Json(b) => b.trim_ascii_start().first() == Some(&b'['),
        Input::Text(t) => t.trim_ascii_start().starts_with('['),
        Input::Value(v) => v.is_array(),
        Input::Tree(t) => t.is_array(),
    }
}

/// The name of a dialect's whole response, for messages.
fn label(d: Dialect) -> &'static str {
    match d {
        Dialect::OpenAiChat => "chat.completion",
        Dialect::OpenAiResponses => "Responses `response`",
        Dialect::Anthropic => "Anthropic `message`",
        Dialect::Bedrock => "Bedrock Converse",
        Dialect::Gemini => "Gemini",
        Dialect::Cohere => "Cohere chat",
    }
}

/// Cheap test on an event of a known dialect: can it be a body at all? Bytes
/// look for a key or value only a body has at its top level (or that few
/// streamed events hold: those get the exact test, [`shape_of`], too).
fn may_be_body(d: Dialect, input: Input<'_>) -> bool {
    static MESSAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"message\""));
    static RESPONSE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"response\""));
    static OUTPUT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"output\""));
    static FINISH: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"finish_reason\""));
    let bytes = match input {
        Input::Json(b) => b,
        Input::Text(t) => t.as_bytes(),
        Input::Value(Value::Object(m)) => return detect::body_shape(m).is_some(),
        Input::Value(_) => return false,
        // A decoded event: its top-level members say whether it can be a body.
        Input::Tree(t) => {
            return match (t.str_member("object"), t.str_member("type")) {
                (Some("chat.completion" | "response"), _) | (_, Some("message")) => true,
                (Some(_), _) | (_, Some(_)) => false,
                (None, None) => {
                    t.has("choices")
                        || t.has("output")
                        || (t.has("message") && t.has("finish_reason"))
                }
            } && shape_of(input).is_some();
        }
    };
    let finder = match d {
        Dialect::OpenAiChat | Dialect::Anthropic => &MESSAGE,
        Dialect::OpenAiResponses => &RESPONSE,
        Dialect::Bedrock => &OUTPUT,
        Dialect::Cohere => &FINISH,
        Dialect::Gemini => return false,
    };
    finder.find(bytes).is_some()
}

/// The dialect whose whole response this event is, if it is one.
fn shape_of(input: Input<'_>) -> Option<Dialect> {
    match input {
        Input::Value(Value::Object(m)) => detect::body_shape(m),
        Input::Value(_) => None,
        Input::Tree(t) => match t.to_value().ok()? {
            Value::Object(m) => detect::body_shape(&m),
            _ => None,
        },
        Input::Json(b) => {
            let m: Map<String, Value> = serde_json::from_slice(b).ok()?;
            detect::body_shape(&m)
        }
        Input::Text(t) => {
            let m: Map<String, Value> = serde_json::from_str(t).ok()?;
            detect::body_shape(&m)
        }
    }
}

/// Renames an error of an event made from a body: it names the body too.
fn renamed(mut e: Error, what: &str) -> Error {
    if let Some(ev) = e.event_mut() {
        ev.event_type = if ev.event_type.is_empty() {
            what.to_owned()
        } else {
            format!("{what}, at its {}", ev.event_type)
        };
    }
    e
}

fn feed_array(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    let not_object = |asm: &Assembler, i: usize| {
        asm.wrap(
            Fail::Bad {
                kind: DecodeKind::NotAnObject,
                detail: format!("element {i} of the JSON array is not a JSON object"),
            },
            event_name,
            input,
        )
    };
    let what = |i: usize| format!("element {i} of a JSON array");
    let owned;
    let input = match input {
        Input::Tree(t) => {
            owned = t.to_value().map_err(|e| {
                asm.wrap(
                    Fail::Bad {
                        kind: DecodeKind::WrongType,
                        detail: e.to_string(),
                    },
                    event_name,
                    input,
                )
            })?;
            Input::Value(&owned)
        }
        other => other,
    };
    match input {
        Input::Json(_) | Input::Text(_) => {
            let parsed = match input {
                Input::Text(t) => serde_json::from_str::<Vec<&RawValue>>(t),
                Input::Json(b) => serde_json::from_slice::<Vec<&RawValue>>(b),
                Input::Value(_) | Input::Tree(_) => return Ok(()),
            };
            let items = parsed.map_err(|e| {
                let well_formed = match input {
                    Input::Text(t) => serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok(),
                    Input::Json(b) => serde_json::from_slice::<serde::de::IgnoredAny>(b).is_ok(),
                    Input::Value(_) | Input::Tree(_) => false,
                };
                let kind = if well_formed {
                    DecodeKind::WrongType
                } else {
                    DecodeKind::MalformedJson
                };
                asm.wrap(
                    Fail::Bad {
                        kind,
                        detail: e.to_string(),
                    },
                    event_name,
                    input,
                )
            })?;
            // Q30: an element that fails is not applied; the ones after it are.
            let mut first = None;
            for (i, item) in items.iter().enumerate() {
                // A raw value is UTF-8 text already checked.
                let text = item.get();
                let fed = if text.trim_ascii_start().starts_with('{') {
                    asm.dispatch(event_name, Input::Text(text), live.as_deref_mut())
                        .map_err(|e| renamed(e, &what(i)))
                } else {
                    Err(not_object(asm, i))
                };
                if let Err(e) = fed {
                    first.get_or_insert(e);
                }
            }
            first.map_or(Ok(()), Err)
        }
        Input::Value(v) => {
            let mut first = None;
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                let fed = if item.is_object() {
                    asm.dispatch(event_name, Input::Value(item), live.as_deref_mut())
                        .map_err(|e| renamed(e, &what(i)))
                } else {
                    Err(not_object(asm, i))
                };
                if let Err(e) = fed {
                    first.get_or_insert(e);
                }
            }
            first.map_or(Ok(()), Err)
        }
        Input::Tree(_) => Ok(()),
    }
}

fn feed_body(
    asm: &mut Assembler,
    d: Dialect,
    event_name: Option<&str>,
    input: Input<'_>,
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    let owned;
    let bytes = match input {
        Input::Json(b) => b,
        Input::Text(t) => t.as_bytes(),
        Input::Value(v) => {
            owned = serde_json::to_vec(v).unwrap_or_default();
            owned.as_slice()
        }
        Input::Tree(t) => {
            let value = t.to_value().map_err(|e| {
                asm.wrap(
                    Fail::Bad {
                        kind: DecodeKind::WrongType,
                        detail: e.to_string(),
                    },
                    event_name,
                    input,
                )
            })?;
            owned = serde_json::to_vec(&value).unwrap_or_default();
            owned.as_slice()
        }
    };
    let events = events(d, bytes).map_err(|f| asm.wrap(f, event_name, input))?;
    let what = format!("{} body", label(d));
    for event in &events {
        let fed = match event {
            Made::Value(v) => asm.dispatch(None, Input::Value(v), live.as_deref_mut()),
            Made::Text(t) => asm.dispatch(None, Input::Text(t), live.as_deref_mut()),
        };
        fed.map_err(|e| renamed(e, &what))?;
    }
    Ok(())
}

/// The events a body of dialect `d` stands for.
fn events(d: Dialect, body: &[u8]) -> Result<Vec<Made>, Fail> {
    let input = Input::Json(body);
    match d {
        Dialect::OpenAiChat => chat(input.parse()?),
        Dialect::Anthropic => anthropic(input.parse()?),
        Dialect::OpenAiResponses => responses(body, input.parse()?),
        Dialect::Bedrock => bedrock(input.parse()?),
        Dialect::Cohere => cohere(input.parse()?),
        Dialect::Gemini => Ok(Vec::new()),
    }
}

/// `{"type": kind, …fields}` as an event.
fn typed(kind: &str, fields: Value) -> Made {
    let mut m = Map::new();
    m.insert("type".to_owned(), Value::String(kind.to_owned()));
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Made::Value(Value::Object(m))
}

/// An event as text, with `raw` (a part of the body, exactly as it is) under
/// `key` after the fields of `head`.
fn with_raw(head: &Value, key: &str, raw: &RawValue) -> Made {
    let mut text = head.to_string();
    text.pop(); // the closing brace of the head object
    if text.len() > 1 {
        text.push(',');
    }
    text.push_str(&Value::String(key.to_owned()).to_string());
    text.push(':');
    text.push_str(raw.get());
    text.push('}');
    Made::Text(text)
}

fn non_empty(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null() && v.as_str() != Some(""))
}

// ---------------------------------------------------------------- OpenAI chat

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

// ---------------------------------------------------------------- Anthropic

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

/// A part of a body read as `T`; an error names where it is.
fn parse_part<'a, T: Deserialize<'a>>(raw: &'a RawValue, at: &str) -> Result<T, Fail> {
    match Input::Text(raw.get()).parse() {
        Ok(t) => Ok(t),
        Err(Fail::Bad { kind, detail }) => Err(Fail::Bad {
            kind,
            detail: format!("{at}: {detail}"),
        }),
        Err(other) => Err(other),
    }
}

// ---------------------------------------------------------------- Responses

#[derive(Deserialize)]
struct ResponsesBody<'a> {
    #[serde(borrow, default)]
    output: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    status: Option<Value>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(borrow, default)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    summary: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    refusal: Option<Value>,
    #[serde(borrow, default)]
    annotations: Option<Vec<&'a RawValue>>,
}

/// Numbers the events of one response, as `sequence_number` does.
struct Sequence {
    out: Vec<Made>,
    next: u64,
}

/// The four events a stream sends for one part of a Responses reasoning item
/// (its summary or its text): the part added, its one delta, its text done, the
/// part done as the body has it.
struct ReasoningPart {
    index_key: &'static str,
    part_type: &'static str,
    added: &'static str,
    delta: &'static str,
    done: &'static str,
    part_done: &'static str,
}

impl ReasoningPart {
    fn push(
        &self,
        seq: &mut Sequence,
        at_item: &dyn Fn(Value) -> Value,
        index: usize,
        text: Value,
        raw: &RawValue,
    ) {
        let key = self.index_key;
        let part = json!({ key: index, "part": { "type": self.part_type, "text": "" } });
        seq.push(self.added, at_item(part));
        seq.push(self.delta, at_item(json!({ key: index, "delta": text })));
        seq.push(self.done, at_item(json!({ key: index, "text": text })));
        seq.push_raw(self.part_done, at_item(json!({ key: index })), "part", raw);
    }
}

impl Sequence {
    fn push(&mut self, kind: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("type".to_owned(), json!(kind));
        m.insert("sequence_number".to_owned(), json!(self.next));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        self.out.push(Made::Value(Value::Object(m)));
        self.next += 1;
    }

    fn push_raw(&mut self, kind: &str, fields: Value, key: &str, raw: &RawValue) {
        let mut head = json!({ "type": kind, "sequence_number": self.next });
        if let (Value::Object(h), Value::Object(f)) = (&mut head, fields) {
            h.extend(f);
        }
        self.out.push(with_raw(&head, key, raw));
        self.next += 1;
    }
}

/// The fields of an item that identify it, for its `added` event (the rest
/// streams in, or comes with `done`).
const ITEM_IDENTITY: [&str; 6] = ["id", "type", "role", "call_id", "name", "server_label"];

fn responses(body_text: &[u8], body: ResponsesBody<'_>) -> Result<Vec<Made>, Fail> {
    let whole: &RawValue = serde_json::from_slice(body_text).map_err(|e| Fail::Bad {
        kind: DecodeKind::MalformedJson,
        detail: e.to_string(),
    })?;
    let mut start: Map<String, Value> =
        serde_json::from_slice(body_text).map_err(|e| Fail::Bad {
            kind: DecodeKind::WrongType,
            detail: e.to_string(),
        })?;
    for (k, v) in [
        ("status", json!("in_progress")),
        ("output", json!([])),
        ("usage", Value::Null),
        ("incomplete_details", Value::Null),
        ("error", Value::Null),
    ] {
        start.insert(k.to_owned(), v);
    }
    let mut seq = Sequence {
        out: Vec::new(),
        next: 0,
    };
    seq.push("response.created", json!({ "response": start.clone() }));
    seq.push("response.in_progress", json!({ "response": start }));
    for (oi, raw) in body.output.unwrap_or_default().into_iter().enumerate() {
        let at = format!("output[{oi}]");
        let item: Item<'_> = parse_part(raw, &at)?;
        let full: Map<String, Value> = parse_part(raw, &at)?;
        let mut added: Map<String, Value> = full
            .iter()
            .filter(|(k, _)| ITEM_IDENTITY.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        added.insert("status".to_owned(), json!("in_progress"));
        let id = item.id.clone().unwrap_or(Value::Null);
        let kind = item.kind.as_deref().unwrap_or_default();
        match kind {
            "message" => {
                added.insert("content".to_owned(), json!([]));
            }
            "function_call" => {
                added.insert("arguments".to_owned(), json!(""));
            }
            "custom_tool_call" => {
                added.insert("input".to_owned(), json!(""));
            }
            "reasoning" => {
                added.insert("summary".to_owned(), json!([]));
                added.remove("status");
            }
            _ => {}
        }
        seq.push(
            "response.output_item.added",
            json!({ "output_index": oi, "item": added }),
        );
        let at_item = |extra: Value| {
            let mut m = json!({ "item_id": id, "output_index": oi });
            if let (Value::Object(m), Value::Object(e)) = (&mut m, extra) {
                m.extend(e);
            }
            m
        };
        match kind {
            "message" => {
                for (ci, part_raw) in item.content.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(part_raw, &format!("{at}.content[{ci}]"))?;
                    let ptype = part.kind.as_deref().unwrap_or_default();
                    let empty = match ptype {
                        "output_text" => {
                            json!({ "type": "output_text", "text": "", "annotations": [] })
                        }
                        "refusal" => json!({ "type": "refusal", "refusal": "" }),
                        _ => Value::Null,
                    };
                    if empty.is_null() {
                        seq.push_raw(
                            "response.content_part.added",
                            at_item(json!({ "content_index": ci })),
                            "part",
                            part_raw,
                        );
                    } else {
                        seq.push(
                            "response.content_part.added",
                            at_item(json!({ "content_index": ci, "part": empty })),
                        );
                    }
                    match ptype {
                        "output_text" => {
                            let text = part.text.unwrap_or(json!(""));
                            seq.push(
                                "response.output_text.delta",
                                at_item(json!({ "content_index": ci, "delta": text })),
                            );
                            for (ai, a) in
                                part.annotations.unwrap_or_default().into_iter().enumerate()
                            {
                                seq.push_raw(
                                    "response.output_text.annotation.added",
                                    at_item(json!({ "content_index": ci, "annotation_index": ai })),
                                    "annotation",
                                    a,
                                );
                            }
                            seq.push(
                                "response.output_text.done",
                                at_item(json!({ "content_index": ci, "text": text })),
                            );
                        }
                        "refusal" => {
                            let refusal = part.refusal.unwrap_or(json!(""));
                            seq.push(
                                "response.refusal.delta",
                                at_item(json!({ "content_index": ci, "delta": refusal })),
                            );
                            seq.push(
                                "response.refusal.done",
                                at_item(json!({ "content_index": ci, "refusal": refusal })),
                            );
                        }
                        _ => {}
                    }
                    seq.push_raw(
                        "response.content_part.done",
                        at_item(json!({ "content_index": ci })),
                        "part",
                        part_raw,
                    );
                }
            }
            "function_call" => {
                let args = item.arguments.unwrap_or(json!(""));
                seq.push(
                    "response.function_call_arguments.delta",
                    at_item(json!({ "delta": args })),
                );
                let mut done = at_item(json!({ "arguments": args }));
                if let (Some(name), Value::Object(m)) = (item.name, &mut done) {
                    m.insert("name".to_owned(), name);
                }
                seq.push("response.function_call_arguments.done", done);
            }
            "custom_tool_call" => {
                let input = item.input.unwrap_or(json!(""));
                seq.push(
                    "response.custom_tool_call_input.delta",
                    at_item(json!({ "delta": input })),
                );
                seq.push(
                    "response.custom_tool_call_input.done",
                    at_item(json!({ "input": input })),
                );
            }
            "reasoning" => {
                for (si, s_raw) in item.summary.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(s_raw, &format!("{at}.summary[{si}]"))?;
                    let events = ReasoningPart {
                        index_key: "summary_index",
                        part_type: "summary_text",
                        added: "response.reasoning_summary_part.added",
                        delta: "response.reasoning_summary_text.delta",
                        done: "response.reasoning_summary_text.done",
                        part_done: "response.reasoning_summary_part.done",
                    };
                    events.push(
                        &mut seq,
                        &at_item,
                        si,
                        part.text.unwrap_or(json!("")),
                        s_raw,
                    );
                }
                for (ci, c_raw) in item.content.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(c_raw, &format!("{at}.content[{ci}]"))?;
                    let events = ReasoningPart {
                        index_key: "content_index",
                        part_type: "reasoning_text",
                        added: "response.content_part.added",
                        delta: "response.reasoning_text.delta",
                        done: "response.reasoning_text.done",
                        part_done: "response.content_part.done",
                    };
                    events.push(
                        &mut seq,
                        &at_item,
                        ci,
                        part.text.unwrap_or(json!("")),
                        c_raw,
                    );
                }
            }
            _ => {}
        }
        seq.push_raw(
            "response.output_item.done",
            json!({ "output_index": oi }),
            "item",
            raw,
        );
    }
    // A response still queued or in progress (a background poll) has no end.
    let end = match body.status.as_ref().and_then(Value::as_str) {
        Some("completed") => Some("response.completed"),
        Some("failed") => Some("response.failed"),
        Some("in_progress" | "queued") | None => None,
        Some(_) => Some("response.incomplete"),
    };
    if let Some(kind) = end {
        seq.push_raw(kind, json!({}), "response", whole);
    }
    Ok(seq.out)
}

// ---------------------------------------------------------------- Bedrock

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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseToolUse {
    #[serde(default)]
    input: Option<CompactJson>,
    #[serde(flatten)]
    start: Map<String, Value>,
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

// ---------------------------------------------------------------- Cohere

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event made from a body is an ordinary streamed event: none of
    /// them is taken for a body again (which would loop).
    #[test]
    fn made_events_are_never_bodies() {
        let bodies = [
            (
                Dialect::OpenAiChat,
                r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"total_tokens":3}}"#,
            ),
            (
                Dialect::Anthropic,
                r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi","citations":[{"type":"char_location"}]},{"type":"tool_use","id":"t","name":"f","input":{"b":1,"a":2}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]}],"stop_reason":"tool_use","usage":{"output_tokens":3}}"#,
            ),
            (
                Dialect::OpenAiResponses,
                r#"{"id":"r","object":"response","status":"completed","output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[{"type":"url_citation"}]}]},{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{}"},{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"s"}]},{"type":"web_search_call","id":"ws","status":"completed"}],"usage":{"total_tokens":3}}"#,
            ),
            (
                Dialect::Bedrock,
                r#"{"output":{"message":{"role":"assistant","content":[{"text":"hi"},{"toolUse":{"toolUseId":"t","name":"f","input":{"x":1}}},{"reasoningContent":{"reasoningText":{"text":"r","signature":"s"}}},{"image":{"format":"png"}}]}},"stopReason":"tool_use","usage":{"inputTokens":1},"metrics":{"latencyMs":2}}"#,
            ),
            (
                Dialect::Cohere,
                r#"{"id":"c","finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"p","content":[{"type":"text","text":"hi"}],"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}],"citations":[{"start":0}]},"usage":{"tokens":{"output_tokens":1}}}"#,
            ),
        ];
        for (d, body) in bodies {
            let map: Map<String, Value> = serde_json::from_str(body).unwrap_or_default();
            assert_eq!(detect::body_shape(&map), Some(d), "{body}");
            let made = events(d, body.as_bytes()).unwrap_or_default();
            assert!(made.len() >= 4, "{d}: {} events", made.len());
            for event in made {
                let value = match event {
                    Made::Value(v) => v,
                    Made::Text(t) => serde_json::from_str(&t).unwrap_or_default(),
                };
                let m = value.as_object().cloned().unwrap_or_default();
                assert!(!m.is_empty(), "{d}: an event that is not an object");
                assert_eq!(detect::body_shape(&m), None, "{d}: {value}");
            }
        }
    }

    #[test]
    fn raw_parts_keep_their_text() {
        let raw: Box<RawValue> =
            RawValue::from_string(r#"{"z": 1, "a": [2]}"#.to_owned()).unwrap_or_default();
        let made = with_raw(&json!({ "type": "x", "index": 3 }), "block", &raw);
        let Made::Text(text) = made else {
            panic!("expected text");
        };
        assert!(text.ends_with(r#""block":{"z": 1, "a": [2]}}"#), "{text}");
        let empty = with_raw(&json!({}), "block", &raw);
        assert!(matches!(empty, Made::Text(t) if t == r#"{"block":{"z": 1, "a": [2]}}"#));
    }
}
