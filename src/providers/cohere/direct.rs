//! The Cohere v2 chat response body read directly (QUIRKS.md Q31): one typed,
//! borrowing decode of the body, then each event its stream would have sent
//! built in place as the typed [`Event`] the adapter applies. No `Value` tree of
//! the parts and calls, no JSON text of the events, no second decode.
//!
//! It gives what `body.rs` gives (the reference): the same events in the same
//! order, applied by the same `State::event`, with the same names in errors.
//! A body it cannot certify to be read exactly so is left to the reference,
//! before anything is applied: JSON that does not decode, a member of an
//! unusual type or given twice, a part or call that is not an object, a
//! number a float cannot hold, a body fed to `auto` (other dialects' bodies
//! are tried first there), a stream already ended.

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Call, ContentPart, Delta, Event, Function, Msg, State};
use crate::providers::body::{apply_made, end_whole, scan_bodies, typed_decode, may_overflow, Obj, Room};
use crate::providers::json::{present, Index, ObjectOnly, Str};
use crate::providers::{Assembler, Dialect, DialectState, Error, Input, LiveEvent};

#[path = "scanned.rs"]
mod scanned;

/// What the reference names the body in errors.
const BODY: &str = "Cohere chat body";

/// A member present (`null` included) and its value.
fn valued<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Absent, `null` or a string, told apart.
fn nullable<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Str<'a>>>, D::Error> {
    Option::<Str<'a>>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, deserialize_with = "valued")]
    finish_reason: Option<Value>,
    #[serde(default, borrow)]
    message: Option<Obj<Message<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    has_type: bool,
    #[serde(default)]
    object: Option<Value>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default)]
    role: Option<IgnoredAny>,
    #[serde(default, borrow)]
    content: Option<Vec<Obj<Part<'a>>>>,
    #[serde(default)]
    tool_plan: Option<Value>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<Obj<CallIn<'a>>>>,
    #[serde(default)]
    citations: Option<Vec<IgnoredAny>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Str<'a>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    text: Option<Option<Str<'a>>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    thinking: Option<Option<Str<'a>>>,
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    function: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FunctionIn<'a> {
    #[serde(default, borrow)]
    name: Option<Str<'a>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    arguments: Option<Option<Str<'a>>>,
}

fn typed(kind: &'static str) -> Event<'static> {
    Event {
        kind: Some(Str(kind.into())),
        ..Event::default()
    }
}

fn with_message<'a>(ev: Event<'a>, message: Msg<'a>) -> Event<'a> {
    Event {
        delta: Some(Delta {
            message: Some(message),
            ..Delta::default()
        }),
        ..ev
    }
}

/// A member the reference reads as a string or `null` (`finish_reason`,
/// `tool_plan`): its text (borrowed from the body when the scanner read it),
/// `null`, or another value (the body is then left to the reference).
enum Text<'a> {
    Null,
    Str(Str<'a>),
    Other,
}

impl Text<'_> {
    /// The typed decode's value.
    fn of(v: Value) -> Self {
        match v {
            Value::Null => Text::Null,
            Value::String(s) => Text::Str(Str(s.into())),
            _ => Text::Other,
        }
    }
}

fn str_of(v: Option<Text<'_>>) -> Option<Option<Str<'_>>> {
    match v {
        None | Some(Text::Null) => Some(None),
        Some(Text::Str(s)) => Some(Some(s)),
        Some(Text::Other) => None,
    }
}

fn usage(u: Option<Value>) -> Option<Option<Map<String, Value>>> {
    match u {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

/// What a body holds that the reference turns into events.
struct Parts<'a> {
    finish_reason: Option<Text<'a>>,
    usage: Option<Value>,
    /// The usage object's text, as the scanner certified it (then `usage` is
    /// absent).
    usage_text: Option<&'a str>,
    tool_plan: Option<Text<'a>>,
    content: Vec<Part<'a>>,
    citations: usize,
    /// Each call's `id` and `function`.
    calls: Vec<(Option<Str<'a>>, FunctionIn<'a>)>,
}

/// The parts of a body the typed decode read; `None` for a body left to the
/// reference.
fn parts(body: Body<'_>) -> Option<Parts<'_>> {
    let message = body.message?.0;
    let _ = message.role;
    let mut calls = Vec::new();
    for Obj(call) in message.tool_calls.unwrap_or_default() {
        let function = match call.function {
            Some(raw) if raw.get().starts_with('{') => serde_json::from_str(raw.get()).ok()?,
            _ => FunctionIn {
                name: None,
                arguments: None,
            },
        };
        calls.push((call.id, function));
    }
    Some(Parts {
        finish_reason: body.finish_reason.map(Text::of),
        usage: body.usage,
        usage_text: None,
        tool_plan: message.tool_plan.map(Text::of),
        content: message.content.unwrap_or_default().into_iter().map(|p| p.0).collect(),
        citations: message.citations.map_or(0, |c| c.len()),
        calls,
    })
}

/// The parts of a body certified, every member that could still refuse it
/// read already: its tool plan, finish reason and usage.
struct Ready<'a> {
    parts: Parts<'a>,
    tool_plan: Option<Str<'a>>,
    finish_reason: Option<Str<'a>>,
    usage: Option<Map<String, Value>>,
}

/// `None` for a body left to the reference (before anything is applied).
fn ready(mut parts: Parts<'_>) -> Option<Ready<'_>> {
    let tool_plan = str_of(parts.tool_plan.take())?.filter(|p| !p.is_empty());
    let finish_reason = str_of(parts.finish_reason.take())?;
    let usage = usage(parts.usage.take())?;
    Some(Ready {
        parts,
        tool_plan,
        finish_reason,
        usage,
    })
}

/// An event at position `i` (a list's, which an `i64` always holds).
fn at(kind: &'static str, i: usize) -> Event<'static> {
    Event {
        index: Some(Index(i64::try_from(i).unwrap_or(i64::MAX))),
        ..typed(kind)
    }
}

/// The events of a certified body, in the reference's order, each handed to
/// `emit` as it is made, until `emit` answers `false`.
fn events<'a>(ready: Ready<'a>, emit: &mut dyn FnMut(Event<'a>) -> bool) {
    let message = ready.parts;
    let start = Msg {
        tool_plan: Some(Str("".into())),
        ..Msg::default()
    };
    if !emit(with_message(typed("message-start"), start)) {
        return;
    }
    if let Some(p) = ready.tool_plan {
        let plan = Msg {
            tool_plan: Some(p),
            ..Msg::default()
        };
        if !emit(with_message(typed("tool-plan-delta"), plan)) {
            return;
        }
    }
    for (i, part) in message.content.into_iter().enumerate() {
        let thinking = part.kind.as_deref() == Some("thinking");
        let empty = Some(Str("".into()));
        let (started, delta) = if thinking {
            let started = ContentPart {
                kind: part.kind.clone(),
                text: part.text.flatten(),
                thinking: empty,
            };
            let delta = ContentPart {
                thinking: part.thinking.unwrap_or_else(|| Some(Str::default())),
                ..ContentPart::default()
            };
            (started, delta)
        } else {
            let started = ContentPart {
                kind: part.kind.clone(),
                text: empty,
                thinking: part.thinking.flatten(),
            };
            let delta = ContentPart {
                text: part.text.unwrap_or_else(|| Some(Str::default())),
                ..ContentPart::default()
            };
            (started, delta)
        };
        let content = |p| Msg {
            content: ObjectOnly(Some(p)),
            ..Msg::default()
        };
        if !emit(with_message(at("content-start", i), content(started)))
            || !emit(with_message(at("content-delta", i), content(delta)))
            || !emit(at("content-end", i))
        {
            return;
        }
    }
    for i in 0..message.citations {
        if !emit(with_message(at("citation-start", i), Msg::default()))
            || !emit(at("citation-end", i))
        {
            return;
        }
    }
    for (i, (id, function)) in message.calls.into_iter().enumerate() {
        let head = Call {
            id,
            function: Some(Function {
                name: function.name,
                arguments: Some(Str("".into())),
            }),
        };
        let tools = |c| Msg {
            tool_calls: ObjectOnly(Some(c)),
            ..Msg::default()
        };
        let args = Call {
            id: None,
            function: Some(Function {
                name: None,
                arguments: function.arguments.unwrap_or_else(|| Some(Str::default())),
            }),
        };
        if !emit(with_message(at("tool-call-start", i), tools(head)))
            || !emit(with_message(at("tool-call-delta", i), tools(args)))
            || !emit(at("tool-call-end", i))
        {
            return;
        }
    }
    let end = Delta {
        finish_reason: ready.finish_reason,
        usage: ready.usage,
        usage_text: message.usage_text,
        ..Delta::default()
    };
    emit(Event {
        delta: Some(end),
        ..typed("message-end")
    });
}

/// Every event of a body in a list (`None` for a body left to the reference).
#[cfg(test)]
fn all_events(parts: Parts<'_>) -> Option<Vec<Event<'_>>> {
    let ready = ready(parts)?;
    let mut all = crate::providers::body::made(|emit| events(ready, emit));
    // A usage kept as text, as the map the typed decode gives.
    for d in all.iter_mut().filter_map(|e| e.delta.as_mut()) {
        if let Some(text) = d.usage_text.take() {
            d.usage = serde_json::from_str(text).ok();
        }
    }
    Some(all)
}

/// Reads `text` (the event `input`) as a whole Cohere chat response body into
/// `asm`, if it is one this path reads exactly as the reference does; `None`
/// (nothing changed) otherwise.
pub(in crate::providers) fn feed(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    text: &[u8],
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    // `text` holds the body marker (`body.rs` looked for it).
    if asm.stream.done {
        return None;
    }
    // The scanner's one pass (it checks numbers as it goes), else the typed
    // decode.
    let scanned = match input {
        _ if !scan_bodies() => None,
        Input::Text(t) => scanned::body(t),
        _ => simdutf8::basic::from_utf8(text).ok().and_then(scanned::body),
    };
    let parts = match scanned {
        Some(parts) => parts,
        None => {
            if !typed_decode() {
                return None;
            }
            let body: Body<'_> = match input {
                Input::Text(t) => serde_json::from_str(t).ok()?,
                _ => serde_json::from_slice(text).ok()?,
            };
            // The body's shape (`SPEC.body.shape`).
            let shaped = !body.has_type
                && !body.object.as_ref().is_some_and(Value::is_string)
                && body.message.is_some()
                && body.finish_reason.is_some();
            if !shaped || may_overflow(std::str::from_utf8(text).ok()?) {
                return None;
            }
            let _ = &body.id;
            parts(body)?
        }
    };
    let ready = ready(parts)?;
    // The message's calls, and its blocks: the calls, the parts, the plan.
    let calls = ready.parts.calls.len();
    let room = Room {
        calls,
        blocks: calls + ready.parts.content.len() + 1,
    };
    let applied = apply_made(
        asm,
        Dialect::Cohere,
        room,
        BODY,
        |emit| events(ready, emit),
        live.as_deref_mut(),
        |asm, ev, l| {
            let kind = ev.kind.clone();
            let Some(DialectState::Cohere(st)) = &mut asm.state else {
                return None;
            };
            let applied = State::event(st, &mut asm.stream, None, ev, l);
            Some(applied.map_err(|f| (f, kind.map(|k| k.0.into_owned()).unwrap_or_default())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}
