//! The Anthropic `Message` body read directly (QUIRKS.md Q31): one typed,
//! borrowing decode of the body, then each event its stream would have sent
//! built in place as the typed [`Event`] the adapter applies. No `Value` tree of
//! the content, no JSON text of the events, no second decode.
//!
//! It gives what `body.rs` gives (the reference): the same events in the same
//! order, applied by the same [`State::apply_event`], with the same names in
//! errors. A body it cannot certify to be read exactly so is left to the
//! reference, before anything is applied: JSON that does not decode, a member
//! of an unusual type or given twice, a block other than text, thinking or a
//! client's `tool_use` (server tools, results, redacted thinking, later kinds,
//! citations: their events carry the block's text whole), a number a float
//! cannot hold, a stream already ended.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{ContentBlock, Delta, Event, Message, State};
use crate::providers::body::{apply_made, end_whole, scan_bodies, typed_decode, may_overflow, Room};
use crate::providers::json::{CompactJson, Index, Str};
use crate::providers::{
    Assembler, Dialect, DialectState, Error, Input, LiveEvent,
};

#[path = "scanned.rs"]
mod scanned;

/// What the reference names the body in errors.
const BODY: &str = "Anthropic `message` body";

/// The body: the members the reference reads, every other one decoded as the
/// reference decodes it (a value) and dropped.
#[derive(Default)]
struct Body<'a> {
    content: Option<Vec<&'a RawValue>>,
    stop_reason: Option<Value>,
    stop_sequence: Option<Value>,
    usage: Option<Value>,
    /// `type` is `"message"` (the body's shape).
    is_message: bool,
    /// `object` is present (`auto` tries other dialects' bodies first).
    has_object: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Body<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Body<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Body<'de>, A::Error> {
                let mut b = Body::default();
                let mut seen = std::collections::BTreeSet::new();
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    if !seen.insert(key.0.clone()) {
                        return Err(serde::de::Error::custom("a member twice"));
                    }
                    match &*key {
                        "content" => b.content = map.next_value()?,
                        "stop_reason" => b.stop_reason = map.next_value()?,
                        "stop_sequence" => b.stop_sequence = map.next_value()?,
                        "usage" => b.usage = map.next_value()?,
                        other => {
                            let v: Value = map.next_value()?;
                            if other == "type" {
                                b.is_message = v.as_str() == Some("message");
                            } else if other == "object" {
                                b.has_object = true;
                            }
                        }
                    }
                }
                Ok(b)
            }
        }
        d.deserialize_map(V)
    }
}

/// The members of a block the reference reads (`text` and `thinking`: absent,
/// `null` or a string, which the reference tells apart).
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    text: Option<Option<Str<'a>>>,
    #[serde(default)]
    citations: Option<Vec<IgnoredAny>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    thinking: Option<Option<Str<'a>>>,
    #[serde(default, borrow)]
    signature: Option<Str<'a>>,
    /// Read only so that a second `input` is refused, as the reference's is.
    #[serde(default)]
    #[allow(dead_code)]
    input: Option<IgnoredAny>,
}

fn nullable<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Str<'a>>>, D::Error> {
    Option::<Str<'a>>::deserialize(d).map(Some)
}

fn typed(kind: &'static str) -> Event<'static> {
    Event {
        kind: Some(Str(kind.into())),
        ..Event::default()
    }
}

/// An event at position `i` (a list's, which an `i64` always holds).
fn at(kind: &'static str, i: usize) -> Event<'static> {
    Event {
        index: Some(Index(i64::try_from(i).unwrap_or(i64::MAX))),
        ..typed(kind)
    }
}

fn start<'a>(i: usize, block: ContentBlock<'a>) -> Event<'a> {
    Event {
        content_block: Some(Box::new(block)),
        ..at("content_block_start", i)
    }
}

fn delta<'a>(i: usize, delta: Delta<'a>) -> Event<'a> {
    Event {
        delta: Some(delta),
        ..at("content_block_delta", i)
    }
}

fn usage(u: Option<Value>) -> Option<Option<Map<String, Value>>> {
    match u {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

fn str_of(v: Option<Value>) -> Option<Option<Str<'static>>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(Str(s.into()))),
        Some(_) => None,
    }
}

/// One block of the content, as the reference turns it into events.
enum Item<'a> {
    /// A text block's `text` (`null` is `None`; absent is `""`).
    Text(Option<Str<'a>>),
    /// A thinking block's `thinking` (as `Text`'s) and `signature`.
    Thinking(Option<Str<'a>>, Option<Str<'a>>),
    /// A client's call: the block as its start, and its input's compact text.
    Tool(ContentBlock<'a>, String),
}

/// A block of the content as the typed decode reads it; `None` for a block
/// left to the reference.
fn item(raw: &RawValue) -> Option<Item<'_>> {
    let block: Block<'_> = serde_json::from_str(raw.get()).ok()?;
    if block.citations.is_some_and(|c| !c.is_empty()) || may_overflow(raw.get()) {
        return None;
    }
    Some(match &*block.kind {
        "text" => Item::Text(block.text.unwrap_or_else(|| Some(Str::default()))),
        "thinking" => Item::Thinking(
            block.thinking.unwrap_or_else(|| Some(Str::default())),
            block.signature,
        ),
        "tool_use" => {
            let mut head: ContentBlock<'_> = serde_json::from_str(raw.get()).ok()?;
            let input = head.input.take().map(|c| c.0).unwrap_or_default();
            Item::Tool(head, input)
        }
        _ => return None,
    })
}

/// What a body holds that the reference turns into events.
struct Parts<'a> {
    usage: Option<Map<String, Value>>,
    stop_reason: Option<Str<'static>>,
    items: Vec<Item<'a>>,
}

/// The parts of a body the typed decode read; `None` for a body left to the
/// reference.
fn parts(body: Body<'_>) -> Option<Parts<'_>> {
    let items = body.content.unwrap_or_default().into_iter().map(item).collect::<Option<_>>()?;
    Some(Parts {
        usage: usage(body.usage)?,
        stop_reason: str_of(body.stop_reason)?,
        items,
    })
}

/// The events of a body (certified by [`parts`]), in the reference's order,
/// each handed to `emit` as it is made, until `emit` answers `false`.
fn events<'a>(parts: Parts<'a>, emit: &mut dyn FnMut(Event<'a>) -> bool) {
    let message = Message {
        usage: parts.usage.clone(),
    };
    if !emit(Event {
        message: Some(message),
        ..typed("message_start")
    }) {
        return;
    }
    for (i, item) in parts.items.into_iter().enumerate() {
        let empty = || Some(Str("".into()));
        match item {
            Item::Text(text) => {
                if !emit(start(
                    i,
                    ContentBlock {
                        kind: Str("text".into()),
                        text: empty(),
                        ..ContentBlock::default()
                    },
                )) {
                    return;
                }
                if !emit(delta(
                    i,
                    Delta {
                        kind: Some(Str("text_delta".into())),
                        text,
                        ..Delta::default()
                    },
                )) {
                    return;
                }
            }
            Item::Thinking(thinking, signature) => {
                if !emit(start(
                    i,
                    ContentBlock {
                        kind: Str("thinking".into()),
                        thinking: empty(),
                        signature: empty(),
                        ..ContentBlock::default()
                    },
                )) {
                    return;
                }
                if !emit(delta(
                    i,
                    Delta {
                        kind: Some(Str("thinking_delta".into())),
                        thinking,
                        ..Delta::default()
                    },
                )) {
                    return;
                }
                if let Some(sig) = signature.filter(|s| !s.is_empty()) {
                    if !emit(delta(
                        i,
                        Delta {
                            kind: Some(Str("signature_delta".into())),
                            signature: Some(sig),
                            ..Delta::default()
                        },
                    )) {
                    return;
                }
                }
            }
            Item::Tool(mut head, input) => {
                // The block as its start (its `input` as `{}`), then its input.
                head.input = Some(CompactJson("{}".to_owned()));
                if !emit(start(i, head)) {
                    return;
                }
                let text = if input == "{}" { String::new() } else { input };
                if !emit(delta(
                    i,
                    Delta {
                        kind: Some(Str("input_json_delta".into())),
                        partial_json: Some(Str(text.into())),
                        ..Delta::default()
                    },
                )) {
                    return;
                }
            }
        }
        if !emit(at("content_block_stop", i)) {
                    return;
                }
    }
    let end = Delta {
        stop_reason: parts.stop_reason,
        ..Delta::default()
    };
    if emit(Event {
        delta: Some(end),
        usage: parts.usage,
        ..typed("message_delta")
    }) {
        emit(typed("message_stop"));
    }
}

/// Every event of a body in a list.
#[cfg(test)]
fn all_events(parts: Parts<'_>) -> Option<Vec<Event<'_>>> {
    Some(crate::providers::body::made(|emit| events(parts, emit)))
}

/// Reads `text` (the event `input`) as a whole Anthropic `Message` body into
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
    // The scanner's one pass, else the typed decode.
    let scanned = match input {
        _ if !scan_bodies() => None,
        Input::Text(t) => scanned::body(t),
        _ => simdutf8::basic::from_utf8(text).ok().and_then(scanned::body),
    };
    let (shape, parts) = match scanned {
        Some(read) => read,
        None => {
            if !typed_decode() {
                return None;
            }
            let body: Body<'_> = match input {
                Input::Text(t) => serde_json::from_str(t).ok()?,
                _ => serde_json::from_slice(text).ok()?,
            };
            ((body.is_message, body.has_object), parts(body))
        }
    };
    if !shape.0 || (asm.dialect.is_none() && shape.1) {
        return None;
    }
    let parts = parts?;
    let applied = apply_made(
        asm,
        Dialect::Anthropic,
        Room::default(),
        BODY,
        |emit| events(parts, emit),
        live.as_deref_mut(),
        |asm, mut ev, l| {
            let kind = ev.kind.clone();
            let Some(DialectState::Anthropic(st)) = &mut asm.state else {
                return None;
            };
            // The events read here never need their text (see the module).
            let applied = State::apply_event(st, &mut asm.stream, None, &mut ev, Input::Text("{}"), l);
            Some(applied.map_err(|f| (f, kind.map(|k| k.0.into_owned()).unwrap_or_default())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}
