//! The guard against independent readings (issue 34): whenever the guard passes
//! a body, the readings a client may take of the same bytes give the calls the
//! guard checked.
//!
//! Input: byte 0's low bit picks the dialect the request's path speaks (0:
//! OpenAI chat, 1: Anthropic), as `toolstitch proxy --enforce` fixes it; the
//! rest is the body (seeds: the real recordings and the differential suite's
//! crafted responses). The guard runs with SSE named by the content type and a
//! check that refuses undeclared names and inputs that are not one JSON
//! object. When it passes, the body is read again, here, from the
//! specifications and the SDKs' code rather than from the core:
//!
//! - SSE as the WHATWG algorithm defines it: one BOM dropped, lines split at
//!   CRLF, LF or CR, `:` comments skipped, one space after the colon dropped,
//!   `data` lines joined with LF, an event dispatched only at a blank line (an
//!   unterminated last event is dropped), an empty data buffer dispatching
//!   nothing;
//! - OpenAI chat as the `openai` helper accumulates chunks: every event but
//!   `[DONE]` is a chunk; each choice's `tool_calls` entries merge by `index`
//!   taken as a list position (a new position appends, Python's negative
//!   positions count from the end), string fields concatenate (the name too),
//!   and the legacy `function_call` likewise;
//! - Anthropic as the `anthropic` helper dispatches on the event name: only
//!   the six message events are read (`ping` and unknown names skipped,
//!   `error` ends the stream), a block start appends a block, a delta goes to
//!   the block at its `index` as a list position, `input_json_delta`
//!   fragments concatenate.
//!
//! Each reading's calls (name, and arguments compared as JSON values) must be
//! the guard's, in order; a reading that fails (an event it cannot take) must
//! never follow a pass of the guard with a call the guard did not check.
#![no_main]

use _toolstitch::framing::{FramingLimits, Transport};
use _toolstitch::guard::{CallCheck, Encoding, Guard, GuardLimits, Outcome};
use _toolstitch::providers::{AssemblerLimits, Dialect, ToolUse};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const DECLARED: [&str; 5] = [
    "read_file",
    "set_limit",
    "GetWeatherArgs",
    "get_stock_price",
    "get_weather",
];

struct Check;

impl CallCheck for Check {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        let input = if call.block.input.is_empty() {
            "{}"
        } else {
            call.block.input.as_str()
        };
        let object = matches!(
            _toolstitch::validate::parse_strict(input),
            Ok(Value::Object(_))
        );
        if DECLARED.contains(&call.block.name.as_str()) && object {
            Ok(())
        } else {
            Err("refused".to_owned())
        }
    }
}

/// One dispatched SSE event: its type (`message` when no `event:` field) and data.
struct Event {
    name: String,
    data: String,
}

/// The WHATWG event-stream interpretation of `body` (lossy UTF-8, as the spec's
/// decoder replaces invalid sequences).
fn sse_events(body: &[u8]) -> Vec<Event> {
    let text = String::from_utf8_lossy(body);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut events = Vec::new();
    let (mut name, mut data) = (String::new(), String::new());
    let mut rest = text;
    loop {
        let Some(end) = rest.find(['\r', '\n']) else {
            break; // an unterminated last line: never dispatched
        };
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
        if line.is_empty() {
            if !data.is_empty() {
                let value = data.strip_suffix('\n').unwrap_or(&data).to_owned();
                let kind = if name.is_empty() {
                    "message".to_owned()
                } else {
                    name.clone()
                };
                events.push(Event {
                    name: kind,
                    data: value,
                });
            }
            name.clear();
            data.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "event" => name = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
    }
    events
}

/// A call as a reading holds it: its name and its arguments' text.
#[derive(Debug, Clone, Default)]
struct Call {
    name: String,
    args: String,
}

/// Python's list position: `i` from the start, or from the end when negative.
fn position(len: usize, i: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let at = if i < 0 { len + i } else { i };
    (0..len)
        .contains(&at)
        .then(|| usize::try_from(at).ok())
        .flatten()
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// The openai helper's calls per choice, or `None` when it fails on the body.
fn openai_chat(events: &[Event]) -> Option<Vec<(i64, Vec<Call>)>> {
    let mut choices: Vec<(i64, Vec<Call>)> = Vec::new();
    for event in events {
        if event.data.starts_with("[DONE]") {
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).ok()?;
        if chunk.get("error").is_some() {
            return None; // the helper raises
        }
        for choice in chunk.get("choices")?.as_array()? {
            let c = choice.get("index")?.as_i64()?;
            let slot = match choices.iter().position(|(i, _)| *i == c) {
                Some(at) => at,
                None => {
                    choices.push((c, Vec::new()));
                    choices.len() - 1
                }
            };
            let calls = &mut choices.get_mut(slot)?.1;
            let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
                continue;
            };
            if let Some(tcs) = delta.get("tool_calls").filter(|v| !v.is_null()) {
                for tc in tcs.as_array()? {
                    let i = tc.get("index")?.as_i64()?;
                    let f = tc.get("function");
                    let name = text(f.and_then(|f| f.get("name"))).unwrap_or("");
                    let args = text(f.and_then(|f| f.get("arguments"))).unwrap_or("");
                    match position(calls.len(), i) {
                        Some(at) => {
                            let call = calls.get_mut(at)?;
                            call.name.push_str(name);
                            call.args.push_str(args);
                        }
                        None => {
                            // Python's insert: past the end appends, before the start prepends.
                            let call = Call {
                                name: name.to_owned(),
                                args: args.to_owned(),
                            };
                            if i < 0 {
                                calls.insert(0, call);
                            } else {
                                calls.push(call);
                            }
                        }
                    }
                }
            }
            if let Some(fc) = delta.get("function_call").filter(|v| v.is_object()) {
                if calls.is_empty() {
                    calls.push(Call::default());
                }
                let call = calls.last_mut()?;
                call.name.push_str(text(fc.get("name")).unwrap_or(""));
                call.args.push_str(text(fc.get("arguments")).unwrap_or(""));
            }
        }
    }
    Some(choices)
}

/// The anthropic helper's tool_use blocks, or `None` when it fails on the body.
fn anthropic(events: &[Event]) -> Option<Vec<Call>> {
    // (type, call): every block, tool_use or not, as the SDK keeps them.
    let mut blocks: Vec<(String, Call, Option<Value>)> = Vec::new();
    for event in events {
        match event.name.as_str() {
            "message_start"
            | "message_delta"
            | "message_stop"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop" => {}
            "error" => return None,
            _ => continue,
        }
        let data: Value = serde_json::from_str(&event.data).ok()?;
        match text(data.get("type"))? {
            "content_block_start" => {
                let block = data.get("content_block")?;
                let kind = text(block.get("type"))?.to_owned();
                let name = text(block.get("name")).unwrap_or("").to_owned();
                let start = block.get("input").cloned();
                blocks.push((
                    kind,
                    Call {
                        name,
                        args: String::new(),
                    },
                    start,
                ));
            }
            "content_block_delta" => {
                let at = position(blocks.len(), data.get("index")?.as_i64()?)?;
                let delta = data.get("delta")?;
                if text(delta.get("type")) == Some("input_json_delta") {
                    let piece = text(delta.get("partial_json")).unwrap_or("");
                    blocks.get_mut(at)?.1.args.push_str(piece);
                }
            }
            _ => {}
        }
    }
    Some(
        blocks
            .into_iter()
            .filter(|(kind, _, _)| kind == "tool_use")
            .map(|(_, mut call, start)| {
                if call.args.is_empty() {
                    call.args = start.map(|v| v.to_string()).unwrap_or_default();
                }
                call
            })
            .collect(),
    )
}

/// Arguments as a JSON value (empty: `{}`); text that is not JSON stays text.
fn value(args: &str) -> Value {
    let args = if args.trim().is_empty() { "{}" } else { args };
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_owned()))
}

fn same(reading: &[Call], guard: &[&ToolUse], what: &str) {
    let ours: Vec<(&str, Value)> = reading
        .iter()
        .map(|c| (c.name.as_str(), value(&c.args)))
        .collect();
    let theirs: Vec<(&str, Value)> = guard
        .iter()
        .map(|t| (t.block.name.as_str(), value(&t.block.input)))
        .collect();
    assert_eq!(
        ours, theirs,
        "{what} reads other calls than the guard checked"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, body)) = data.split_first() else {
        return;
    };
    let chat = flags & 1 == 0;
    let dialect = if chat {
        Dialect::OpenAiChat
    } else {
        Dialect::Anthropic
    };
    let limits = AssemblerLimits {
        max_calls: 16,
        max_input_bytes: 4096,
        max_total_bytes: 1 << 16,
        ..AssemblerLimits::default()
    };
    let framing = FramingLimits {
        max_line_bytes: 8192,
        max_event_bytes: 8192,
        max_frame_bytes: 8192,
    };
    let mut guard = Guard::new(
        Some(dialect),
        limits,
        framing,
        GuardLimits::default(),
        Some(Transport::Sse),
        Encoding::Identity,
        Some(dialect),
    );
    let mut released = guard.feed(body, &mut Check).forward;
    if guard.outcome() == Outcome::Blocked {
        return;
    }
    released.extend_from_slice(&guard.finish(&mut Check).forward);
    if guard.outcome() != Outcome::Passed {
        return;
    }
    assert_eq!(released, body, "a passed body is released whole");
    let events = sse_events(body);
    let messages = guard.messages();
    let checked = |choice: i64| -> Vec<&ToolUse> {
        messages
            .iter()
            .filter(|m| m.choice == choice)
            .flat_map(|m| m.tool_uses.iter())
            .filter(|t| !t.server_side)
            .collect()
    };
    if chat {
        let Some(choices) = openai_chat(&events) else {
            return; // the helper raises: the application gets no call
        };
        for (choice, calls) in &choices {
            same(calls, &checked(*choice), "the openai helper");
        }
    } else if let Some(calls) = anthropic(&events) {
        same(&calls, &checked(0), "the anthropic helper");
    }
});
