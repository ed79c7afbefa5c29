//! Structured inputs: plausible event sequences built from each dialect's
//! event vocabulary (types, fields, block kinds, reasons), with strings drawn
//! mostly from small pools (so that ids collide, JSON fragments join into
//! complete values, and positions repeat) and sometimes from the input.

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use serde_json::{json, Map, Value};

use _toolstitch::providers::Dialect;

use crate::render::{Body, Event};

/// At most this many events per input.
const MAX_EVENTS: usize = 48;
/// At most this many items in any generated list.
const MAX_ITEMS: usize = 4;

const IDS: &[&str] = &[
    "call_a", "call_b", "toolu_1", "fc_1", "", "call_0_0", "call_0_1", "x",
];
const NAMES: &[&str] = &[
    "get_weather",
    "lookup",
    "",
    "f",
    "web_search",
    "x_keyword_search",
];
/// Models of `response.created`: xAI's tell its own tools apart (Q47).
const MODELS: &[&str] = &["grok-4", "gpt-5", "xai/grok-4-fast-reasoning", ""];
const ARGS: &[&str] = &[
    "{",
    "}",
    "{}",
    "\"city\"",
    ":",
    "\"Paris\"",
    ",",
    "{\"city\":\"Paris\"}",
    "[1,2]",
    "\"",
    " ",
    "nul",
    "l",
    "1",
    ".5",
    "\\u00e9",
    "{\"a\":",
    "\"b\"}",
    "{\"a\":1}{\"b\":2}",
    "é",
    "",
    "{\"a\":1}",
    "{\"a\":1,\"b\":[true,null]}",
    "\\ud83d",
    "\\ude00",
];
const TEXTS: &[&str] = &["Hello", " world", "", "\n", "é", "👍", "a\u{0}b"];
const SIGS: &[&str] = &["sig", "", "EqQBCgIYAhIk", "c2ln"];

/// A string: from the field's pool, or from the input.
#[derive(Arbitrary, Debug, Clone)]
pub enum Txt {
    Pool(u8),
    Own(String),
}

impl Txt {
    fn of(&self, pool: &[&str]) -> String {
        match self {
            Txt::Pool(i) => pool[usize::from(*i) % pool.len()].to_owned(),
            Txt::Own(s) => s.chars().take(40).collect(),
        }
    }
}

fn opt(t: &Option<Txt>, pool: &[&str]) -> Option<Value> {
    t.as_ref().map(|t| Value::String(t.of(pool)))
}

/// A position: mostly 0..3, sometimes the odd forms providers send.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Ix(u8);

impl Ix {
    fn value(self) -> Value {
        match self.0 {
            0..=199 => json!(self.0 % 4),
            200..=209 => json!(-1),
            210..=219 => json!((self.0 % 4).to_string()),
            220..=229 => json!(f64::from(self.0 % 4)),
            230..=234 => json!(1.5),
            235..=239 => json!(u64::MAX),
            240..=244 => Value::Null,
            _ => json!(i64::from(self.0) * 1_000_000_007),
        }
    }
}

/// Sets `key` when there is a value.
fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_owned(), v);
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8,
           "input_tokens": 3, "output_tokens": 5})
}

fn ev(name: Option<&str>, v: Value) -> Event {
    Event::json(name, v)
}

fn raw(name: Option<&str>, text: &str) -> Event {
    Event {
        name: name.map(str::to_owned),
        body: Body::Raw(text.to_owned()),
        exception: false,
    }
}

/// The event sequence `data` describes for `dialect`.
#[must_use]
pub fn events(dialect: Dialect, data: &[u8]) -> Vec<Event> {
    let mut u = Unstructured::new(data);
    let mut out = Vec::new();
    if dialect == Dialect::OpenAiResponses {
        responses_events(&mut u, &mut out);
        return out;
    }
    if dialect == Dialect::BedrockInvoke {
        invoke_events(&mut u, &mut out);
        return out;
    }
    while !u.is_empty() && out.len() < MAX_EVENTS {
        let ok = match dialect {
            Dialect::OpenAiChat => ChatOp::arbitrary(&mut u).map(|op| op.render(&mut out)),
            Dialect::Anthropic => AnthOp::arbitrary(&mut u).map(|op| op.render(&mut out)),
            Dialect::Bedrock => BedOp::arbitrary(&mut u).map(|op| op.render(&mut out)),
            Dialect::Gemini => GemOp::arbitrary(&mut u).map(|op| op.render(&mut out)),
            Dialect::Cohere | Dialect::OpenAiResponses | Dialect::BedrockInvoke => {
                CohOp::arbitrary(&mut u).map(|op| op.render(&mut out))
            }
            Dialect::Ollama => OllamaOp::arbitrary(&mut u).map(|op| op.render(&mut out)),
            Dialect::GeminiInteractions => {
                GiOp::arbitrary(&mut u).map(|op| op.render(&mut out))
            }
        };
        if ok.is_err() {
            break;
        }
    }
    out
}

// ------------------------------------------------------------- openai-chat

const CHAT_REASONS: &[&str] = &[
    "stop",
    "tool_calls",
    "length",
    "content_filter",
    "function_call",
    "",
];

#[derive(Arbitrary, Debug)]
enum ChatOp {
    Chunk {
        choices: Vec<ChatChoice>,
        usage: bool,
        object: bool,
    },
    Done,
    ErrorChunk(Txt),
    ErrorEvent(Txt),
    GroqUsage,
    Raw(String),
    /// A long-tail shape whole, so that its rule's branches are reached.
    Shape(ChatShape),
}

/// The long-tail shapes of compatible servers (docs/quirks.md Q36 onward), each
/// a few chunks of choice 0, with the neighbouring attack shapes beside them.
#[derive(Arbitrary, Debug)]
enum ChatShape {
    /// Q36: a prefix of the arguments, then the whole value again.
    Restated { index: Ix, cut: u8, whole: Txt },
    /// Q38: two parallel calls with one id; `same` repeats the first call's
    /// name and arguments (the twin: a repeated segment).
    SameId { a: Ix, b: Ix, args: Txt, same: bool },
    /// Q39: the end with `tool_calls`, then a chunk with another reason alone
    /// (or, the twin, with content).
    LaterFinish { reason: Txt, content: Option<Txt> },
    /// Q43: an opener at one index, its arguments at another with neither id
    /// nor name; `named` names a call at the rerouted index afterwards (the twin).
    Rerouted {
        opener: Ix,
        at: Ix,
        args: Txt,
        named: Option<Txt>,
    },
    /// Q50: a tool the server ran, in `executed_tools`, announced then with
    /// its output (`twice`), or at once; `other` changes its arguments.
    Executed {
        index: Option<Ix>,
        kind: Txt,
        args: Txt,
        output: Option<Txt>,
        twice: bool,
        other: Option<Txt>,
    },
    /// Q40: several complete objects under one call, sent in pieces (split
    /// into calls with `split_concatenated`).
    Concatenated {
        index: Ix,
        pieces: u8,
        tail: Option<Txt>,
    },
}

fn chat_call(index: Option<Ix>, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    let mut call = Map::new();
    put(&mut call, "index", index.map(Ix::value));
    put(&mut call, "id", id.map(|i| json!(i)));
    let mut f = Map::new();
    put(&mut f, "name", name.map(|n| json!(n)));
    f.insert("arguments".into(), json!(args));
    call.insert("function".into(), Value::Object(f));
    Value::Object(call)
}

fn chat_chunk(delta: Value, finish: Option<&str>) -> Event {
    ev(
        None,
        json!({"object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn calls_chunk(calls: Vec<Value>) -> Event {
    chat_chunk(json!({ "tool_calls": calls }), None)
}

impl ChatShape {
    #[allow(clippy::too_many_lines)]
    fn render(self, out: &mut Vec<Event>) {
        match self {
            ChatShape::Restated { index, cut, whole } => {
                let whole = whole.of(ARGS);
                let at = usize::from(cut) % whole.len().max(1);
                let at = (0..=at)
                    .rev()
                    .find(|&i| whole.is_char_boundary(i))
                    .unwrap_or(0);
                let head = whole.get(..at).unwrap_or_default();
                out.push(calls_chunk(vec![chat_call(
                    Some(index),
                    Some("call_a"),
                    Some("f"),
                    head,
                )]));
                out.push(calls_chunk(vec![chat_call(
                    Some(index),
                    None,
                    None,
                    &whole,
                )]));
            }
            ChatShape::SameId { a, b, args, same } => {
                let args = args.of(ARGS);
                out.push(calls_chunk(vec![chat_call(
                    Some(a),
                    Some("call_a"),
                    Some("f"),
                    &args,
                )]));
                let (name, second) = if same {
                    ("f", args.clone())
                } else {
                    ("lookup", "{}".to_owned())
                };
                out.push(calls_chunk(vec![chat_call(
                    Some(b),
                    Some("call_a"),
                    Some(name),
                    &second,
                )]));
                out.push(calls_chunk(vec![chat_call(
                    Some(b),
                    Some("call_a"),
                    None,
                    "",
                )]));
            }
            ChatShape::LaterFinish { reason, content } => {
                out.push(chat_chunk(json!({}), Some("tool_calls")));
                let mut delta = Map::new();
                put(&mut delta, "content", opt(&content, TEXTS));
                out.push(chat_chunk(
                    Value::Object(delta),
                    Some(&reason.of(CHAT_REASONS)),
                ));
            }
            ChatShape::Rerouted {
                opener,
                at,
                args,
                named,
            } => {
                out.push(calls_chunk(vec![chat_call(
                    Some(opener),
                    Some("call_b"),
                    Some("lookup"),
                    "",
                )]));
                out.push(calls_chunk(vec![chat_call(
                    Some(at),
                    None,
                    None,
                    &args.of(ARGS),
                )]));
                if let Some(n) = named {
                    let n = n.of(NAMES);
                    out.push(calls_chunk(vec![chat_call(
                        Some(at),
                        Some("call_c"),
                        Some(&n),
                        "{}",
                    )]));
                }
            }
            ChatShape::Executed {
                index,
                kind,
                args,
                output,
                twice,
                other,
            } => {
                let entry = |args: &str, output: Option<&Txt>| {
                    let mut e = Map::new();
                    put(&mut e, "index", index.map(Ix::value));
                    e.insert(
                        "type".into(),
                        json!(kind.of(&["search", "python", "visit", ""])),
                    );
                    e.insert("arguments".into(), json!(args));
                    put(&mut e, "output", output.map(|o| json!(o.of(TEXTS))));
                    e.insert("search_results".into(), json!({"results": []}));
                    Value::Object(e)
                };
                let args = args.of(ARGS);
                if twice {
                    out.push(chat_chunk(
                        json!({"executed_tools": [entry(&args, None)]}),
                        None,
                    ));
                }
                let again = other.map_or(args, |o| o.of(ARGS));
                out.push(chat_chunk(
                    json!({"executed_tools": [entry(&again, output.as_ref())]}),
                    None,
                ));
            }
            ChatShape::Concatenated {
                index,
                pieces,
                tail,
            } => {
                let whole = format!(
                    "{{\"query\":\"A\"}}{{\"query\":\"B\"}}{}",
                    tail.map_or(String::new(), |t| t.of(ARGS))
                );
                let n = usize::from(pieces % 4) + 1;
                let size = whole.len().div_ceil(n).max(1);
                let mut first = true;
                let mut rest = whole.as_str();
                while !rest.is_empty() {
                    let mut at = size.min(rest.len());
                    while !rest.is_char_boundary(at) {
                        at += 1;
                    }
                    let (piece, next) = rest.split_at(at);
                    let (id, name) = if first {
                        (Some("call_q"), Some("search"))
                    } else {
                        (None, None)
                    };
                    out.push(calls_chunk(vec![chat_call(Some(index), id, name, piece)]));
                    first = false;
                    rest = next;
                }
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct ChatChoice {
    index: Option<Ix>,
    content: Option<Txt>,
    refusal: Option<Txt>,
    reasoning: Option<Txt>,
    reasoning_field: bool,
    calls: Vec<ChatCall>,
    function_call: Option<(Option<Txt>, Option<Txt>)>,
    finish: Option<Txt>,
    /// `content` as typed parts (Q49): thinking then text.
    parts: bool,
}

#[derive(Arbitrary, Debug)]
struct ChatCall {
    index: Option<Ix>,
    id: Option<Txt>,
    name: Option<Txt>,
    args: Option<Txt>,
    custom: bool,
    /// `arguments` as a JSON object when they parse as one (Q42).
    object: bool,
    /// An `extra_content` thought signature (Q37).
    extra: bool,
}

impl ChatOp {
    fn render(self, out: &mut Vec<Event>) {
        match self {
            ChatOp::Chunk {
                choices,
                usage: with_usage,
                object,
            } => {
                let mut chunk = Map::new();
                if object {
                    chunk.insert("object".into(), json!("chat.completion.chunk"));
                }
                let choices: Vec<Value> = choices
                    .into_iter()
                    .take(MAX_ITEMS)
                    .map(ChatChoice::value)
                    .collect();
                chunk.insert("choices".into(), Value::Array(choices));
                if with_usage {
                    chunk.insert("usage".into(), usage());
                }
                out.push(ev(None, Value::Object(chunk)));
            }
            ChatOp::Done => out.push(raw(None, "[DONE]")),
            ChatOp::ErrorChunk(t) => out.push(ev(
                None,
                json!({"error": {"message": t.of(TEXTS), "type": "server_error"}}),
            )),
            ChatOp::ErrorEvent(t) => out.push(ev(Some("error"), json!({"message": t.of(TEXTS)}))),
            ChatOp::GroqUsage => out.push(ev(None, json!({"x_groq": {"usage": usage()}}))),
            ChatOp::Raw(s) => out.push(raw(None, &s)),
            ChatOp::Shape(shape) => shape.render(out),
        }
    }
}

impl ChatChoice {
    fn value(self) -> Value {
        let mut delta = Map::new();
        match (self.parts, opt(&self.content, TEXTS)) {
            (true, Some(text)) => {
                let parts = json!([
                    {"type": "thinking", "thinking": [{"type": "text", "text": text.clone()}]},
                    {"type": "text", "text": text}
                ]);
                delta.insert("content".into(), parts);
            }
            (_, content) => put(&mut delta, "content", content),
        }
        put(&mut delta, "refusal", opt(&self.refusal, TEXTS));
        let reasoning_key = if self.reasoning_field {
            "reasoning"
        } else {
            "reasoning_content"
        };
        put(&mut delta, reasoning_key, opt(&self.reasoning, TEXTS));
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_iter()
                .take(MAX_ITEMS)
                .map(|c| {
                    let mut call = Map::new();
                    put(&mut call, "index", c.index.map(Ix::value));
                    put(&mut call, "id", opt(&c.id, IDS));
                    let mut f = Map::new();
                    put(&mut f, "name", opt(&c.name, NAMES));
                    let (key, field) = if c.custom {
                        ("custom", "input")
                    } else {
                        ("function", "arguments")
                    };
                    let args = opt(&c.args, ARGS);
                    let object = args
                        .as_ref()
                        .and_then(Value::as_str)
                        .and_then(|t| serde_json::from_str::<Value>(t).ok())
                        .filter(|v| c.object && v.is_object());
                    put(&mut f, field, object.or(args));
                    if c.extra {
                        call.insert(
                            "extra_content".into(),
                            json!({"google": {"thought_signature": "c2ln"}}),
                        );
                    }
                    call.insert(key.into(), Value::Object(f));
                    call.insert("type".into(), json!(key));
                    Value::Object(call)
                })
                .collect();
            delta.insert("tool_calls".into(), Value::Array(calls));
        }
        if let Some((name, args)) = &self.function_call {
            let mut f = Map::new();
            put(&mut f, "name", opt(name, NAMES));
            put(&mut f, "arguments", opt(args, ARGS));
            delta.insert("function_call".into(), Value::Object(f));
        }
        let mut choice = Map::new();
        put(&mut choice, "index", self.index.map(Ix::value));
        choice.insert("delta".into(), Value::Object(delta));
        choice.insert(
            "finish_reason".into(),
            opt(&self.finish, CHAT_REASONS).unwrap_or(Value::Null),
        );
        Value::Object(choice)
    }
}

// --------------------------------------------------------------- anthropic

const ANTH_REASONS: &[&str] = &[
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "refusal",
    "pause_turn",
];

#[derive(Arbitrary, Debug)]
enum AnthOp {
    MessageStart,
    BlockStart { index: Ix, block: AnthBlock },
    Delta { index: Ix, delta: AnthDelta },
    BlockStop(Ix),
    MessageDelta { reason: Option<Txt>, usage: bool },
    MessageStop,
    Ping,
    Error(Txt),
    Unknown(Txt),
    Named(Box<AnthOp>),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum AnthBlock {
    Text(Txt),
    Thinking(Txt, Txt),
    Redacted(Txt),
    ToolUse {
        id: Txt,
        name: Txt,
        input: Option<Txt>,
    },
    ServerToolUse {
        id: Txt,
        name: Txt,
    },
    Mcp {
        id: Txt,
        name: Txt,
    },
    Result {
        id: Txt,
        content: Txt,
        error: bool,
    },
    Unknown(Txt),
}

#[derive(Arbitrary, Debug)]
enum AnthDelta {
    Text(Txt),
    InputJson(Txt),
    Thinking(Txt),
    Signature(Txt),
    Citations,
    Unknown(Txt),
}

impl AnthBlock {
    fn value(&self) -> Value {
        match self {
            AnthBlock::Text(t) => json!({"type": "text", "text": t.of(TEXTS)}),
            AnthBlock::Thinking(t, s) => {
                json!({"type": "thinking", "thinking": t.of(TEXTS), "signature": s.of(SIGS)})
            }
            AnthBlock::Redacted(d) => json!({"type": "redacted_thinking", "data": d.of(SIGS)}),
            AnthBlock::ToolUse { id, name, input } => {
                let input = input
                    .as_ref()
                    .map(|t| serde_json::from_str::<Value>(&t.of(ARGS)).unwrap_or(json!({})))
                    .unwrap_or(json!({}));
                json!({"type": "tool_use", "id": id.of(IDS), "name": name.of(NAMES), "input": input})
            }
            AnthBlock::ServerToolUse { id, name } => json!({"type": "server_tool_use",
                "id": id.of(IDS), "name": name.of(NAMES), "input": {}}),
            AnthBlock::Mcp { id, name } => json!({"type": "mcp_tool_use", "id": id.of(IDS),
                "name": name.of(NAMES), "server_name": "s", "input": {}}),
            AnthBlock::Result { id, content, error } => json!({"type": "web_search_tool_result",
                "tool_use_id": id.of(IDS), "is_error": error,
                "content": [{"type": "text", "text": content.of(TEXTS)}]}),
            AnthBlock::Unknown(t) => json!({"type": t.of(&["image", "document", "x"]), "x": 1}),
        }
    }
}

impl AnthDelta {
    fn value(&self) -> Value {
        match self {
            AnthDelta::Text(t) => json!({"type": "text_delta", "text": t.of(TEXTS)}),
            AnthDelta::InputJson(t) => {
                json!({"type": "input_json_delta", "partial_json": t.of(ARGS)})
            }
            AnthDelta::Thinking(t) => json!({"type": "thinking_delta", "thinking": t.of(TEXTS)}),
            AnthDelta::Signature(t) => json!({"type": "signature_delta", "signature": t.of(SIGS)}),
            AnthDelta::Citations => json!({"type": "citations_delta", "citation": {"x": 1}}),
            AnthDelta::Unknown(t) => json!({"type": t.of(&["future_delta", ""]), "v": [1]}),
        }
    }
}

impl AnthOp {
    fn value(&self) -> (&'static str, Value) {
        match self {
            AnthOp::MessageStart => (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "usage": usage()}}),
            ),
            AnthOp::BlockStart { index, block } => (
                "content_block_start",
                json!({"type": "content_block_start", "index": index.value(),
                       "content_block": block.value()}),
            ),
            AnthOp::Delta { index, delta } => (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index.value(), "delta": delta.value()}),
            ),
            AnthOp::BlockStop(index) => (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index.value()}),
            ),
            AnthOp::MessageDelta { reason, usage: u } => {
                let mut delta = Map::new();
                delta.insert(
                    "stop_reason".into(),
                    opt(reason, ANTH_REASONS).unwrap_or(Value::Null),
                );
                let mut v = json!({"type": "message_delta", "delta": delta});
                if *u {
                    v["usage"] = json!({"output_tokens": 9});
                }
                ("message_delta", v)
            }
            AnthOp::MessageStop => ("message_stop", json!({"type": "message_stop"})),
            AnthOp::Ping => ("ping", json!({"type": "ping"})),
            AnthOp::Error(t) => (
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": t.of(TEXTS)}}),
            ),
            AnthOp::Unknown(t) => (
                "future",
                json!({"type": t.of(&["future_event", "message_start"])}),
            ),
            AnthOp::Named(op) => op.value(),
            AnthOp::Raw(_) => ("", Value::Null),
        }
    }

    fn render(self, out: &mut Vec<Event>) {
        match &self {
            AnthOp::Raw(s) => out.push(raw(None, s)),
            AnthOp::Named(op) => {
                let (name, v) = op.value();
                out.push(ev(Some(name), v));
            }
            _ => out.push(ev(None, self.value().1)),
        }
    }
}

// ----------------------------------------------------------------- bedrock

const BED_REASONS: &[&str] = &[
    "end_turn",
    "tool_use",
    "max_tokens",
    "guardrail_intervened",
    "stop_sequence",
];
const EXCEPTIONS: &[&str] = &[
    "throttlingException",
    "modelStreamErrorException",
    "internalServerException",
    "validationException",
    "serviceUnavailable",
];

#[derive(Arbitrary, Debug)]
struct BedOp {
    kind: BedKind,
    /// Wrap the payload in its event name (`{"contentBlockDelta": {...}}`).
    wrapped: bool,
    /// Give the `:event-type` header.
    named: bool,
    /// Pad the payload with Bedrock's random `"p"` field.
    padded: bool,
}

#[derive(Arbitrary, Debug)]
enum BedKind {
    MessageStart,
    ToolStart {
        index: Ix,
        id: Txt,
        name: Txt,
        server: bool,
    },
    ResultStart {
        index: Ix,
        id: Txt,
        error: bool,
    },
    OtherStart(Ix),
    Text {
        index: Ix,
        text: Txt,
    },
    ToolInput {
        index: Ix,
        input: Txt,
    },
    Reasoning {
        index: Ix,
        text: Option<Txt>,
        signature: Option<Txt>,
        redacted: Option<Txt>,
    },
    ResultDelta {
        index: Ix,
        text: Txt,
        json: bool,
    },
    Stop(Ix),
    MessageStop(Option<Txt>),
    Metadata,
    Exception(Txt, bool),
    Raw(String),
}

impl BedOp {
    fn render(self, out: &mut Vec<Event>) {
        let (name, mut payload) = match self.kind {
            BedKind::MessageStart => ("messageStart", json!({"role": "assistant"})),
            BedKind::ToolStart {
                index,
                id,
                name,
                server,
            } => {
                let mut tool = json!({"toolUseId": id.of(IDS), "name": name.of(NAMES)});
                if server {
                    tool["type"] = json!("server_tool_use");
                }
                (
                    "contentBlockStart",
                    json!({"contentBlockIndex": index.value(), "start": {"toolUse": tool}}),
                )
            }
            BedKind::ResultStart { index, id, error } => (
                "contentBlockStart",
                json!({"contentBlockIndex": index.value(), "start": {"toolResult":
                    {"toolUseId": id.of(IDS), "type": "web_search_result",
                     "status": if error { "error" } else { "success" }}}}),
            ),
            BedKind::OtherStart(index) => (
                "contentBlockStart",
                json!({"contentBlockIndex": index.value(), "start": {"image": {}}}),
            ),
            BedKind::Text { index, text } => (
                "contentBlockDelta",
                json!({"contentBlockIndex": index.value(), "delta": {"text": text.of(TEXTS)}}),
            ),
            BedKind::ToolInput { index, input } => (
                "contentBlockDelta",
                json!({"contentBlockIndex": index.value(), "delta": {"toolUse": {"input": input.of(ARGS)}}}),
            ),
            BedKind::Reasoning {
                index,
                text,
                signature,
                redacted,
            } => {
                let mut r = Map::new();
                put(&mut r, "text", opt(&text, TEXTS));
                put(&mut r, "signature", opt(&signature, SIGS));
                put(&mut r, "redactedContent", opt(&redacted, SIGS));
                (
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index.value(), "delta": {"reasoningContent": r}}),
                )
            }
            BedKind::ResultDelta {
                index,
                text,
                json: as_json,
            } => {
                let item = if as_json {
                    json!({"json": {"v": text.of(TEXTS)}})
                } else {
                    json!({"text": text.of(TEXTS)})
                };
                (
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index.value(), "delta": {"toolResult": [item]}}),
                )
            }
            BedKind::Stop(index) => (
                "contentBlockStop",
                json!({"contentBlockIndex": index.value()}),
            ),
            BedKind::MessageStop(reason) => {
                let mut m = Map::new();
                put(&mut m, "stopReason", opt(&reason, BED_REASONS));
                ("messageStop", Value::Object(m))
            }
            BedKind::Metadata => (
                "metadata",
                json!({"usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
                       "metrics": {"latencyMs": 1}}),
            ),
            BedKind::Exception(t, frame) => {
                let kind = t.of(EXCEPTIONS);
                if frame {
                    out.push(Event {
                        name: Some(kind),
                        body: Body::Json(json!({"message": "slow down"})),
                        exception: true,
                    });
                    return;
                }
                out.push(ev(Some(&kind), json!({"message": "slow down"})));
                return;
            }
            BedKind::Raw(s) => {
                out.push(raw(self.named.then_some("contentBlockDelta"), &s));
                return;
            }
        };
        if self.padded {
            if let Value::Object(m) = &mut payload {
                m.insert("p".into(), json!("abcdefghijkl"));
            }
        }
        if self.wrapped {
            payload = json!({ name: payload });
        }
        out.push(ev(self.named.then_some(name), payload));
    }
}

// ------------------------------------------------------- openai-responses

const ITEM_TYPES: &[&str] = &[
    "function_call",
    "custom_tool_call",
    "web_search_call",
    "computer_call",
    "mcp_call",
    "image_generation_call",
    "shell_call",
    "reasoning",
    "message",
    "future_item",
];
const PROGRESS: &[&str] = &[
    "response.content_part.added",
    "response.output_text.done",
    "response.web_search_call.searching",
    "response.mcp_call_arguments.delta",
    "response.future_event",
    "response.reasoning_summary_part.added",
];
const RESP_STATUS: &[&str] = &["completed", "incomplete", "failed", "in_progress", ""];

#[derive(Arbitrary, Debug)]
struct RespOp {
    kind: RespKind,
    /// How the sequence number of this event is written.
    seq: Seq,
    /// Give the SSE `event:` name too.
    named: bool,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Seq {
    Next,
    None,
    Repeat,
    Skip(u8),
    Back(u8),
}

#[derive(Arbitrary, Debug)]
enum RespKind {
    Created,
    /// `response.created` naming a model (Q47: xAI's own tools).
    CreatedBy(Txt),
    /// Q44: `function_call_arguments.done` before the item's `added`, then
    /// `replay` deltas replaying the done text from its start, and maybe one
    /// with other text (the twin); `item_done` ends the item between them.
    DoneEarly {
        oi: Ix,
        args: Txt,
        replay: u8,
        extra: Option<Txt>,
        item_done: bool,
        custom: bool,
    },
    InProgress,
    ItemAdded {
        oi: Option<Ix>,
        item: RespItem,
    },
    ItemDone {
        oi: Option<Ix>,
        item: RespItem,
    },
    ArgsDelta {
        oi: Option<Ix>,
        item_id: Option<Txt>,
        delta: Txt,
        custom: bool,
    },
    ArgsDone {
        oi: Option<Ix>,
        item_id: Option<Txt>,
        args: Option<Txt>,
        name: Option<Txt>,
        custom: bool,
    },
    TextDelta {
        oi: Option<Ix>,
        ci: Option<Ix>,
        delta: Txt,
    },
    RefusalDelta {
        oi: Option<Ix>,
        delta: Txt,
    },
    Reasoning {
        oi: Option<Ix>,
        part: Option<Ix>,
        delta: Txt,
        summary: bool,
    },
    Completed {
        status: Option<Txt>,
        usage: bool,
    },
    Incomplete {
        reason: Option<Txt>,
    },
    Failed(Option<Txt>),
    Error(Txt),
    Progress(Txt),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
struct RespItem {
    kind: Txt,
    id: Option<Txt>,
    call_id: Option<Txt>,
    name: Option<Txt>,
    args: Option<Txt>,
    /// `arguments` as an object instead of a string.
    args_object: bool,
    extra: Option<Txt>,
}

impl RespItem {
    fn value(&self) -> Value {
        let kind = self.kind.of(ITEM_TYPES);
        let mut m = Map::new();
        m.insert("type".into(), json!(kind));
        put(&mut m, "id", opt(&self.id, IDS));
        put(&mut m, "call_id", opt(&self.call_id, IDS));
        put(&mut m, "name", opt(&self.name, NAMES));
        let field = if kind == "custom_tool_call" {
            "input"
        } else {
            "arguments"
        };
        if self.args_object {
            m.insert(field.into(), json!({"a": 1}));
        } else {
            put(&mut m, field, opt(&self.args, ARGS));
        }
        if let Some(x) = &self.extra {
            m.insert("status".into(), json!("completed"));
            m.insert("output".into(), json!(x.of(TEXTS)));
            m.insert("encrypted_content".into(), json!(x.of(SIGS)));
            m.insert("action".into(), json!({"query": x.of(TEXTS)}));
        }
        Value::Object(m)
    }
}

struct SeqState {
    last: u64,
}

/// Q44's events: the arguments done first, the item added, deltas that
/// replay the done text (`replay` pieces of it), maybe one with `extra` text,
/// the item's end before them when `item_done`.
fn done_early(
    oi: Ix,
    args: &str,
    replay: u8,
    extra: Option<&Txt>,
    item_done: bool,
    custom: bool,
) -> Vec<(&'static str, Value)> {
    let (kind, field, delta_name, done_name) = if custom {
        (
            "custom_tool_call",
            "input",
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
        )
    } else {
        (
            "function_call",
            "arguments",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        )
    };
    let item = |with: &str| {
        json!({"output_index": oi.value(), "item": {"type": kind, "id": "fc_1",
               "call_id": "call_a", "name": "x_keyword_search", field: with}})
    };
    let mut list = vec![
        (
            done_name,
            json!({"output_index": oi.value(), "item_id": "fc_1", field: args}),
        ),
        ("response.output_item.added", item("")),
    ];
    if item_done {
        list.push(("response.output_item.done", item(args)));
    }
    let n = usize::from(replay % 4);
    let size = args.len().div_ceil(n.max(1)).max(1);
    let mut rest = args;
    for _ in 0..n {
        if rest.is_empty() {
            break;
        }
        let mut at = size.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, next) = rest.split_at(at);
        list.push((
            delta_name,
            json!({"output_index": oi.value(), "item_id": "fc_1", "delta": piece}),
        ));
        rest = next;
    }
    if let Some(x) = extra {
        list.push((
            delta_name,
            json!({"output_index": oi.value(), "item_id": "fc_1", "delta": x.of(ARGS)}),
        ));
    }
    if !item_done {
        list.push(("response.output_item.done", item(args)));
    }
    list
}

impl RespOp {
    fn render(self, out: &mut Vec<Event>, seq: &mut SeqState) {
        let (name, mut v) = match self.kind {
            RespKind::Created => (
                "response.created",
                json!({"response": {"id": "resp_1", "status": "in_progress"}}),
            ),
            RespKind::CreatedBy(model) => (
                "response.created",
                json!({"response": {"id": "resp_1", "status": "in_progress", "model": model.of(MODELS)}}),
            ),
            RespKind::DoneEarly {
                oi,
                args,
                replay,
                extra,
                item_done,
                custom,
            } => {
                let list = done_early(
                    oi,
                    &args.of(ARGS),
                    replay,
                    extra.as_ref(),
                    item_done,
                    custom,
                );
                for (name, mut v) in list {
                    v["type"] = json!(name);
                    if !matches!(self.seq, Seq::None) {
                        seq.last += 1;
                        v["sequence_number"] = json!(seq.last);
                    }
                    out.push(ev(self.named.then_some(name), v));
                }
                return;
            }
            RespKind::InProgress => (
                "response.in_progress",
                json!({"response": {"id": "resp_1"}}),
            ),
            RespKind::ItemAdded { oi, item } => {
                let mut v = json!({"item": item.value()});
                if let Some(oi) = oi {
                    v["output_index"] = oi.value();
                }
                ("response.output_item.added", v)
            }
            RespKind::ItemDone { oi, item } => {
                let mut v = json!({"item": item.value()});
                if let Some(oi) = oi {
                    v["output_index"] = oi.value();
                }
                ("response.output_item.done", v)
            }
            RespKind::ArgsDelta {
                oi,
                item_id,
                delta,
                custom,
            } => {
                let mut m = Map::new();
                put(&mut m, "output_index", oi.map(Ix::value));
                put(&mut m, "item_id", opt(&item_id, IDS));
                m.insert("delta".into(), json!(delta.of(ARGS)));
                let name = if custom {
                    "response.custom_tool_call_input.delta"
                } else {
                    "response.function_call_arguments.delta"
                };
                (name, Value::Object(m))
            }
            RespKind::ArgsDone {
                oi,
                item_id,
                args,
                name,
                custom,
            } => {
                let mut m = Map::new();
                put(&mut m, "output_index", oi.map(Ix::value));
                put(&mut m, "item_id", opt(&item_id, IDS));
                put(
                    &mut m,
                    if custom { "input" } else { "arguments" },
                    opt(&args, ARGS),
                );
                put(&mut m, "name", opt(&name, NAMES));
                let name = if custom {
                    "response.custom_tool_call_input.done"
                } else {
                    "response.function_call_arguments.done"
                };
                (name, Value::Object(m))
            }
            RespKind::TextDelta { oi, ci, delta } => {
                let mut m = Map::new();
                put(&mut m, "output_index", oi.map(Ix::value));
                put(&mut m, "content_index", ci.map(Ix::value));
                m.insert("delta".into(), json!(delta.of(TEXTS)));
                ("response.output_text.delta", Value::Object(m))
            }
            RespKind::RefusalDelta { oi, delta } => {
                let mut m = Map::new();
                put(&mut m, "output_index", oi.map(Ix::value));
                m.insert("delta".into(), json!(delta.of(TEXTS)));
                ("response.refusal.delta", Value::Object(m))
            }
            RespKind::Reasoning {
                oi,
                part,
                delta,
                summary,
            } => {
                let mut m = Map::new();
                put(&mut m, "output_index", oi.map(Ix::value));
                put(&mut m, "summary_index", part.map(Ix::value));
                m.insert("delta".into(), json!(delta.of(TEXTS)));
                let name = if summary {
                    "response.reasoning_summary_text.delta"
                } else {
                    "response.reasoning_text.delta"
                };
                (name, Value::Object(m))
            }
            RespKind::Completed { status, usage: u } => {
                let mut r = Map::new();
                put(&mut r, "status", opt(&status, RESP_STATUS));
                if u {
                    r.insert("usage".into(), usage());
                }
                ("response.completed", json!({ "response": r }))
            }
            RespKind::Incomplete { reason } => {
                let mut d = Map::new();
                put(
                    &mut d,
                    "reason",
                    opt(&reason, &["max_output_tokens", "content_filter"]),
                );
                (
                    "response.incomplete",
                    json!({"response": {"status": "incomplete", "incomplete_details": d}}),
                )
            }
            RespKind::Failed(msg) => {
                let err = msg.map_or(
                    Value::Null,
                    |m| json!({"code": "server_error", "message": m.of(TEXTS)}),
                );
                (
                    "response.failed",
                    json!({"response": {"status": "failed", "error": err}}),
                )
            }
            RespKind::Error(t) => (
                "error",
                json!({"code": "rate_limit", "message": t.of(TEXTS)}),
            ),
            RespKind::Progress(t) => {
                let kind = t.of(PROGRESS);
                out.push(ev(
                    self.named.then_some(kind.as_str()),
                    json!({"type": kind, "output_index": 0}),
                ));
                return;
            }
            RespKind::Raw(s) => {
                out.push(raw(None, &s));
                return;
            }
        };
        v["type"] = json!(name);
        let n = match self.seq {
            Seq::None => None,
            Seq::Next => Some(seq.last + 1),
            Seq::Repeat => Some(seq.last),
            Seq::Skip(k) => Some(seq.last + 1 + u64::from(k % 8)),
            Seq::Back(k) => Some(seq.last.saturating_sub(u64::from(k % 8))),
        };
        if let Some(n) = n {
            v["sequence_number"] = json!(n);
            seq.last = seq.last.max(n);
        }
        out.push(ev(self.named.then_some(name), v));
    }
}

// ------------------------------------------------------------------ gemini

const GEM_REASONS: &[&str] = &[
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "MALFORMED_FUNCTION_CALL",
    "OTHER",
];
const PATHS: &[&str] = &[
    "$.a",
    "$.b",
    "$.a.b",
    "$.b[0]",
    "$.b[1]",
    "$['x y']",
    "$[\"q\"]",
    "$",
    "$.a[0].c",
    "a",
    "$..",
    "$[",
    "$.b[2000]",
    "$['a\\'b']",
];

#[derive(Arbitrary, Debug)]
enum GemOp {
    Chunk {
        candidates: Vec<GemCand>,
        usage: bool,
        blocked: Option<Txt>,
    },
    Error(Txt),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
struct GemCand {
    index: Option<Ix>,
    parts: Vec<GemPart>,
    finish: Option<Txt>,
}

#[derive(Arbitrary, Debug)]
enum GemPart {
    Text {
        text: Txt,
        thought: Option<bool>,
        signature: Option<Txt>,
    },
    Call {
        id: Option<Txt>,
        name: Option<Txt>,
        args: Option<Txt>,
        partial: Option<Vec<PArg>>,
        will_continue: Option<bool>,
        signature: Option<Txt>,
    },
    Close(Option<Txt>),
    Code(Txt),
    CodeResult {
        ok: bool,
        output: Txt,
    },
    Image,
}

#[derive(Arbitrary, Debug)]
struct PArg {
    path: Option<Txt>,
    value: PVal,
}

#[derive(Arbitrary, Debug)]
enum PVal {
    Str(Txt),
    Num(u8),
    Bool(bool),
    Null,
    Nothing,
}

impl GemPart {
    fn value(&self) -> Value {
        let sig =
            |m: &mut Map<String, Value>, s: &Option<Txt>| put(m, "thoughtSignature", opt(s, SIGS));
        match self {
            GemPart::Text {
                text,
                thought,
                signature,
            } => {
                let mut m = Map::new();
                m.insert("text".into(), json!(text.of(TEXTS)));
                put(&mut m, "thought", thought.map(Value::Bool));
                sig(&mut m, signature);
                Value::Object(m)
            }
            GemPart::Call {
                id,
                name,
                args,
                partial,
                will_continue,
                signature,
            } => {
                let mut f = Map::new();
                put(&mut f, "id", opt(id, IDS));
                put(&mut f, "name", opt(name, NAMES));
                if let Some(a) = args {
                    let v = serde_json::from_str::<Value>(&a.of(ARGS))
                        .unwrap_or(json!({"k": a.of(TEXTS)}));
                    f.insert("args".into(), v);
                }
                if let Some(p) = partial {
                    let list: Vec<Value> = p
                        .iter()
                        .take(MAX_ITEMS)
                        .map(|a| {
                            let mut m = Map::new();
                            put(&mut m, "jsonPath", opt(&a.path, PATHS));
                            match &a.value {
                                PVal::Str(t) => {
                                    put(&mut m, "stringValue", Some(json!(t.of(TEXTS))))
                                }
                                PVal::Num(n) => {
                                    put(&mut m, "numberValue", Some(json!(f64::from(*n) / 4.0)))
                                }
                                PVal::Bool(b) => put(&mut m, "boolValue", Some(json!(b))),
                                PVal::Null => put(&mut m, "nullValue", Some(json!("NULL_VALUE"))),
                                PVal::Nothing => {}
                            }
                            Value::Object(m)
                        })
                        .collect();
                    f.insert("partialArgs".into(), Value::Array(list));
                }
                put(&mut f, "willContinue", will_continue.map(Value::Bool));
                let mut m = Map::new();
                m.insert("functionCall".into(), Value::Object(f));
                sig(&mut m, signature);
                Value::Object(m)
            }
            GemPart::Close(signature) => {
                let mut m = Map::new();
                m.insert("functionCall".into(), json!({}));
                sig(&mut m, signature);
                Value::Object(m)
            }
            GemPart::Code(t) => {
                json!({"executableCode": {"language": "PYTHON", "code": t.of(TEXTS)}})
            }
            GemPart::CodeResult { ok, output } => json!({"codeExecutionResult": {
                "outcome": if *ok { "OUTCOME_OK" } else { "OUTCOME_FAILED" }, "output": output.of(TEXTS)}}),
            GemPart::Image => json!({"inlineData": {"mimeType": "image/png", "data": "AA=="}}),
        }
    }
}

impl GemOp {
    fn render(self, out: &mut Vec<Event>) {
        let v = match self {
            GemOp::Chunk {
                candidates,
                usage: u,
                blocked,
            } => {
                let cands: Vec<Value> = candidates
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|c| {
                        let mut m = Map::new();
                        put(&mut m, "index", c.index.map(Ix::value));
                        let parts: Vec<Value> =
                            c.parts.iter().take(MAX_ITEMS).map(GemPart::value).collect();
                        m.insert("content".into(), json!({"role": "model", "parts": parts}));
                        put(&mut m, "finishReason", opt(&c.finish, GEM_REASONS));
                        Value::Object(m)
                    })
                    .collect();
                let mut m = Map::new();
                if !cands.is_empty() || blocked.is_none() {
                    m.insert("candidates".into(), Value::Array(cands));
                }
                if u {
                    m.insert(
                        "usageMetadata".into(),
                        json!({"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8}),
                    );
                }
                if let Some(b) = blocked {
                    m.insert(
                        "promptFeedback".into(),
                        json!({"blockReason": b.of(&["SAFETY", "OTHER"])}),
                    );
                }
                Value::Object(m)
            }
            GemOp::Error(t) => {
                json!({"error": {"code": 429, "message": t.of(TEXTS), "status": "RESOURCE_EXHAUSTED"}})
            }
            GemOp::Raw(s) => {
                out.push(raw(None, &s));
                return;
            }
        };
        out.push(ev(None, v));
    }
}

// ------------------------------------------------------------------ cohere

const COH_REASONS: &[&str] = &[
    "COMPLETE",
    "TOOL_CALL",
    "MAX_TOKENS",
    "ERROR",
    "STOP_SEQUENCE",
];

#[derive(Arbitrary, Debug)]
struct CohOp {
    kind: CohKind,
    named: bool,
}

#[derive(Arbitrary, Debug)]
enum CohKind {
    MessageStart,
    ContentStart {
        index: Ix,
        text: Txt,
        thinking: bool,
    },
    ContentDelta {
        index: Ix,
        text: Txt,
        thinking: bool,
    },
    ContentEnd(Ix),
    PlanDelta(Txt),
    CallStart {
        index: Ix,
        id: Option<Txt>,
        name: Option<Txt>,
        args: Option<Txt>,
    },
    CallDelta {
        index: Ix,
        id: Option<Txt>,
        name: Option<Txt>,
        args: Option<Txt>,
    },
    CallEnd(Ix),
    MessageEnd {
        reason: Option<Txt>,
        usage: bool,
    },
    Citation,
    Unknown(Txt),
    Raw(String),
}

fn coh_call(id: &Option<Txt>, name: &Option<Txt>, args: &Option<Txt>) -> Value {
    let mut f = Map::new();
    put(&mut f, "name", opt(name, NAMES));
    put(&mut f, "arguments", opt(args, ARGS));
    let mut c = Map::new();
    put(&mut c, "id", opt(id, IDS));
    c.insert("type".into(), json!("function"));
    c.insert("function".into(), Value::Object(f));
    json!({"message": {"tool_calls": c}})
}

fn coh_content(text: &Txt, thinking: bool) -> Value {
    if thinking {
        json!({"message": {"content": {"type": "thinking", "thinking": text.of(TEXTS)}}})
    } else {
        json!({"message": {"content": {"type": "text", "text": text.of(TEXTS)}}})
    }
}

impl CohOp {
    fn render(self, out: &mut Vec<Event>) {
        let (name, mut v) = match &self.kind {
            CohKind::MessageStart => (
                "message-start",
                json!({"id": "m1", "delta": {"message": {"role": "assistant"}}}),
            ),
            CohKind::ContentStart {
                index,
                text,
                thinking,
            } => (
                "content-start",
                json!({"index": index.value(), "delta": coh_content(text, *thinking)}),
            ),
            CohKind::ContentDelta {
                index,
                text,
                thinking,
            } => (
                "content-delta",
                json!({"index": index.value(), "delta": coh_content(text, *thinking)}),
            ),
            CohKind::ContentEnd(index) => ("content-end", json!({"index": index.value()})),
            CohKind::PlanDelta(t) => (
                "tool-plan-delta",
                json!({"delta": {"message": {"tool_plan": t.of(TEXTS)}}}),
            ),
            CohKind::CallStart {
                index,
                id,
                name,
                args,
            } => (
                "tool-call-start",
                json!({"index": index.value(), "delta": coh_call(id, name, args)}),
            ),
            CohKind::CallDelta {
                index,
                id,
                name,
                args,
            } => (
                "tool-call-delta",
                json!({"index": index.value(), "delta": coh_call(id, name, args)}),
            ),
            CohKind::CallEnd(index) => ("tool-call-end", json!({"index": index.value()})),
            CohKind::MessageEnd { reason, usage: u } => {
                let mut d = Map::new();
                put(&mut d, "finish_reason", opt(reason, COH_REASONS));
                if *u {
                    d.insert("usage".into(), json!({"billed_units": {"input_tokens": 3}, "tokens": {"output_tokens": 5}}));
                }
                ("message-end", json!({ "delta": d }))
            }
            CohKind::Citation => (
                "citation-start",
                json!({"index": 0, "delta": {"message": {"citations": {}}}}),
            ),
            CohKind::Unknown(t) => {
                let kind = t.of(&["future-event", "debug"]);
                out.push(ev(
                    self.named.then_some(kind.as_str()),
                    json!({"type": kind}),
                ));
                return;
            }
            CohKind::Raw(s) => {
                out.push(raw(self.named.then_some("content-delta"), s));
                return;
            }
        };
        v["type"] = json!(name);
        out.push(ev(self.named.then_some(name), v));
    }
}

// ------------------------------------------------------------------ ollama

const OLLAMA_REASONS: &[&str] = &["stop", "length", "load"];

#[derive(Arbitrary, Debug)]
enum OllamaOp {
    Line {
        content: Option<Txt>,
        thinking: Option<Txt>,
        calls: Vec<OllamaCall>,
    },
    Done {
        reason: Option<Txt>,
        counts: bool,
    },
    Error(Txt),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
struct OllamaCall {
    id: Option<Txt>,
    index: Option<Ix>,
    name: Option<Txt>,
    /// Arguments as an object (the documented shape) or, false, as text.
    object: bool,
    args: Option<Txt>,
}

impl OllamaOp {
    fn render(self, out: &mut Vec<Event>) {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let line = match self {
            OllamaOp::Line {
                content,
                thinking,
                calls,
            } => {
                put(&mut message, "content", opt(&content, TEXTS));
                put(&mut message, "thinking", opt(&thinking, TEXTS));
                if !calls.is_empty() {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            let mut f = Map::new();
                            put(&mut f, "name", opt(&c.name, NAMES));
                            if let Some(i) = &c.index {
                                f.insert("index".into(), json!(i.value()));
                            }
                            let text = c.args.as_ref().map(|t| t.of(ARGS));
                            let args = match (c.object, text) {
                                (true, Some(t)) => serde_json::from_str::<Value>(&t)
                                    .ok()
                                    .filter(Value::is_object)
                                    .unwrap_or_else(|| json!({ "q": t })),
                                (false, Some(t)) => json!(t),
                                (_, None) => json!({}),
                            };
                            f.insert("arguments".into(), args);
                            let mut call = Map::new();
                            put(&mut call, "id", opt(&c.id, IDS));
                            call.insert("function".into(), Value::Object(f));
                            Value::Object(call)
                        })
                        .collect();
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                json!({"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false})
            }
            OllamaOp::Done { reason, counts } => {
                let mut line = Map::new();
                line.insert("model".into(), json!("m"));
                line.insert("message".into(), Value::Object(message));
                line.insert("done".into(), json!(true));
                put(&mut line, "done_reason", opt(&reason, OLLAMA_REASONS));
                if counts {
                    line.insert("prompt_eval_count".into(), json!(12));
                    line.insert("eval_count".into(), json!(7));
                }
                Value::Object(line)
            }
            OllamaOp::Error(t) => json!({ "error": t.of(TEXTS) }),
            OllamaOp::Raw(s) => {
                out.push(raw(None, &s));
                return;
            }
        };
        out.push(ev(None, line));
    }
}

// ------------------------------------------------------ gemini-interactions

const GI_STATUS: &[&str] = &[
    "completed",
    "requires_action",
    "incomplete",
    "failed",
    "cancelled",
    "in_progress",
];
const GI_STEPS: &[&str] = &[
    "thought",
    "model_output",
    "function_call",
    "google_search_call",
    "google_search_result",
    "code_execution_call",
    "mcp_server_tool_call",
    "user_input",
    "video_output",
];
const GI_DELTAS: &[&str] = &[
    "text",
    "thought_signature",
    "thought_summary",
    "arguments_delta",
    "google_search_call",
    "google_search_result",
    "text_annotation_delta",
    "image",
];

#[derive(Arbitrary, Debug)]
struct GiOp {
    kind: GiKind,
    /// The type as the SSE event name too.
    named: bool,
}

#[derive(Arbitrary, Debug)]
enum GiKind {
    Created,
    Status(Txt),
    Start {
        index: Ix,
        step: Txt,
        id: Option<Txt>,
        name: Option<Txt>,
        signature: Option<Txt>,
        args: Option<Txt>,
    },
    Delta {
        index: Ix,
        delta: Txt,
        text: Option<Txt>,
        signature: Option<Txt>,
        /// Arguments as an object (a built-in call's delta) or as text.
        object: bool,
    },
    Stop(Ix),
    Completed {
        status: Option<Txt>,
        usage: bool,
    },
    Error(Txt),
    Raw(String),
}

impl GiOp {
    fn render(self, out: &mut Vec<Event>) {
        let (name, mut v) = match self.kind {
            GiKind::Created => (
                "interaction.created",
                json!({"interaction": {"id": "v1_x", "status": "in_progress", "object": "interaction"}}),
            ),
            GiKind::Status(t) => (
                "interaction.status_update",
                json!({"interaction_id": "v1_x", "status": t.of(GI_STATUS)}),
            ),
            GiKind::Start {
                index,
                step,
                id,
                name,
                signature,
                args,
            } => {
                let mut st = Map::new();
                st.insert("type".into(), json!(step.of(GI_STEPS)));
                put(&mut st, "id", opt(&id, IDS));
                put(&mut st, "call_id", opt(&id, IDS));
                put(&mut st, "name", opt(&name, NAMES));
                put(&mut st, "signature", opt(&signature, SIGS));
                if let Some(a) = args {
                    let t = a.of(ARGS);
                    st.insert(
                        "arguments".into(),
                        serde_json::from_str::<Value>(&t).unwrap_or(json!({})),
                    );
                }
                ("step.start", json!({"index": index.value(), "step": st}))
            }
            GiKind::Delta {
                index,
                delta,
                text,
                signature,
                object,
            } => {
                let kind = delta.of(GI_DELTAS);
                let mut d = Map::new();
                d.insert("type".into(), json!(kind));
                let t = text.as_ref().map(|t| t.of(if kind == "text" { TEXTS } else { ARGS }));
                match kind.as_str() {
                    "text" => put(&mut d, "text", t.map(Value::String)),
                    "thought_summary" => {
                        put(&mut d, "content", t.map(|t| json!({"type": "text", "text": t})));
                    }
                    "google_search_result" => put(&mut d, "result", t.map(|t| json!([{"url": t}]))),
                    _ if object => put(
                        &mut d,
                        "arguments",
                        t.map(|t| serde_json::from_str::<Value>(&t).unwrap_or(json!({"q": t}))),
                    ),
                    _ => put(&mut d, "arguments", t.map(Value::String)),
                }
                put(&mut d, "signature", opt(&signature, SIGS));
                ("step.delta", json!({"index": index.value(), "delta": d}))
            }
            GiKind::Stop(index) => ("step.stop", json!({"index": index.value()})),
            GiKind::Completed { status, usage } => {
                let mut it = Map::new();
                put(&mut it, "status", opt(&status, GI_STATUS));
                if usage {
                    it.insert(
                        "usage".into(),
                        json!({"total_input_tokens": 3, "total_output_tokens": 5, "total_tokens": 8}),
                    );
                }
                ("interaction.completed", json!({ "interaction": it }))
            }
            GiKind::Error(t) => (
                "error",
                json!({"error": {"code": "INTERNAL", "message": t.of(TEXTS)}}),
            ),
            GiKind::Raw(s) => {
                out.push(raw(self.named.then_some("step.delta"), &s));
                return;
            }
        };
        v["event_type"] = json!(name);
        out.push(ev(self.named.then_some(name), v));
    }
}

/// Responses events need the sequence state across ops.
pub(crate) fn responses_events(u: &mut Unstructured<'_>, out: &mut Vec<Event>) {
    let mut seq = SeqState { last: 0 };
    while !u.is_empty() && out.len() < MAX_EVENTS {
        match RespOp::arbitrary(u) {
            Ok(op) => op.render(out, &mut seq),
            Err(_) => break,
        }
    }
}

// ------------------------------------------------------------ bedrock-invoke

/// Standard base64 with padding.
fn base64(raw: &[u8]) -> String {
    const ALPHABET: &[u8; 64] =
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(raw.len().div_ceil(3) * 4);
    for group in raw.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let c = if i <= group.len() {
                ALPHABET
                    .get(((n >> (18 - 6 * i)) & 63) as usize)
                    .copied()
                    .unwrap_or(b'A')
            } else {
                b'='
            };
            out.push(char::from(c));
        }
    }
    out
}

/// How one wrapped event reaches the stream.
#[derive(Arbitrary, Debug)]
enum Wrap {
    /// `{"bytes": …, "p": …}` in a `chunk` frame, as Bedrock sends it.
    Chunk,
    /// boto3's `{"chunk": {"bytes": …}}`, unnamed.
    Boto3,
    /// The model's event itself.
    Decoded,
    /// `bytes` that is not base64.
    NotBase64(String),
    /// `bytes` whose base64 holds this text instead of the event.
    Garbage(String),
}

/// Claude's (anthropic) or Nova's (bedrock) events, each wrapped as
/// InvokeModelWithResponseStream carries it.
pub(crate) fn invoke_events(u: &mut Unstructured<'_>, out: &mut Vec<Event>) {
    let nova = bool::arbitrary(u).unwrap_or(false);
    let mut inner = Vec::new();
    while !u.is_empty() && inner.len() < MAX_EVENTS {
        let ok = if nova {
            BedOp::arbitrary(u).map(|op| op.render(&mut inner))
        } else {
            AnthOp::arbitrary(u).map(|op| op.render(&mut inner))
        };
        if ok.is_err() {
            break;
        }
    }
    for e in inner {
        if e.exception {
            out.push(e);
            continue;
        }
        let text = match (nova, &e.name, &e.body) {
            // Nova's events name themselves inside: wrapped in their name.
            (true, Some(n), Body::Json(v)) => json!({ n.as_str(): v }).to_string(),
            _ => e.text(),
        };
        let wrap = Wrap::arbitrary(u).unwrap_or(Wrap::Chunk);
        out.push(match wrap {
            Wrap::Chunk => ev(
                Some("chunk"),
                json!({"bytes": base64(text.as_bytes()), "p": "abcdefgh"}),
            ),
            Wrap::Boto3 => ev(None, json!({"chunk": {"bytes": base64(text.as_bytes())}})),
            Wrap::Decoded => match serde_json::from_str::<Value>(&text) {
                Ok(v) => ev(None, v),
                Err(_) => raw(None, &text),
            },
            Wrap::NotBase64(s) => ev(Some("chunk"), json!({ "bytes": s })),
            Wrap::Garbage(s) => ev(Some("chunk"), json!({"bytes": base64(s.as_bytes())})),
        });
    }
}
