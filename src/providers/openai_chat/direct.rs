//! The OpenAI `chat.completion` body read directly (QUIRKS.md Q31): one typed,
//! borrowing decode of the body, then each chunk its stream would have sent
//! built in place as the typed [`Chunk`] the adapter applies. No `Value` tree of
//! the body, no JSON text of its chunks, no second decode.
//!
//! It gives what `body.rs` gives (the reference: the chunks as JSON text, each
//! dispatched): the same chunks, in the same order, applied by the same
//! [`apply_chunk`], with the same names in errors. A body it cannot certify
//! to be read exactly as the reference reads it (JSON that does not decode,
//! a member of an unusual type, duplicate members, a choice or call that is
//! not an object, a call whose `index` is `null`, a stream already ended) is
//! left to the reference, before anything is applied.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::content::Content;
use super::{apply_chunk, ChatChoice, Chunk, Delta, Function, ToolCall};
use crate::providers::body::{apply_made, end_whole, scan_bodies, typed_decode, Obj, Room};
use crate::providers::json::{present, Few, Index, Str};
use crate::providers::{Assembler, Dialect, Error, Input, LiveEvent};

#[path = "scanned.rs"]
mod scanned;

/// What the reference names each chunk in errors: its `object`.
const CHUNK: &str = "chat.completion.chunk";
/// What the reference names the body in errors.
const BODY: &str = "chat.completion body";

#[derive(Deserialize)]
struct Body<'a> {
    /// The body's fields the reference decodes as values (so that a number
    /// out of range fails here as it fails there).
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    created: Option<Value>,
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    system_fingerprint: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    /// For the shape only.
    #[serde(default)]
    object: Option<Object>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    has_type: bool,
    #[serde(default, borrow)]
    choices: Option<Vec<Obj<Choice<'a>>>>,
    /// The usage object's text, as the scanner certified it (then `usage` is
    /// absent); never from the typed decode.
    #[serde(skip)]
    usage_text: Option<&'a str>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default, borrow)]
    message: Option<Obj<Message<'a>>>,
    #[serde(default, borrow)]
    finish_reason: Option<Reason<'a>>,
    #[serde(default, deserialize_with = "present")]
    delta: bool,
}

/// A body's `object`, for its shape only: decoded as the value the reference
/// decodes (so that what fails there fails here), kept as what it says of
/// the shape. The scanner reads it with no copy of its text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Object {
    /// `"chat.completion"`.
    Body,
    /// `"chat.completion.chunk"`.
    Chunk,
    /// Any other value.
    Other,
}

impl Object {
    fn of(text: &str) -> Self {
        match text {
            "chat.completion" => Object::Body,
            CHUNK => Object::Chunk,
            _ => Object::Other,
        }
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Object::of(&s),
            _ => Object::Other,
        })
    }
}

/// A choice's `finish_reason` that is not `null`: its text (borrowed from
/// the body when the scanner reads it), or another value (the body is then
/// left to the reference). Decoded by the typed decode as the value the
/// reference decodes.
enum Reason<'a> {
    Text(Str<'a>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Reason<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Reason::Text(Str(s.into())),
            _ => Reason::Other,
        })
    }
}

/// The members of a message the reference reads (`null` is absent there too).
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    role: Option<&'a RawValue>,
    /// Decoded as the reference's chunk decodes them (`""` is absent there).
    #[serde(default, borrow)]
    reasoning_content: Option<Str<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<Str<'a>>,
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    refusal: Option<Str<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Calls<'a>>,
    #[serde(default, borrow)]
    function_call: Option<&'a RawValue>,
}

/// A message's `tool_calls` read in the body's one pass: what the
/// reference's chunks give for them (anything but an array: no calls), or
/// `None` for calls it reads otherwise (a call that is not an object, or that
/// names its `index` as `null`).
struct Calls<'a>(Option<Vec<ToolCall<'a>>>);

impl<'de: 'a, 'a> Deserialize<'de> for Calls<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Calls<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Calls<'de>, A::Error> {
                let mut calls = Some(Vec::new());
                while let Some(call) = seq.next_element::<Call<'de>>()? {
                    match (call.0, &mut calls) {
                        (Some(c), Some(calls)) => calls.push(c),
                        _ => calls = None,
                    }
                }
                Ok(Calls(calls))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Calls<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Calls(Some(Vec::new())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Calls<'de>, E> {
                Ok(Calls(Some(Vec::new())))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Calls<'de>, E> {
                Ok(Calls(Some(Vec::new())))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Calls<'de>, E> {
                Ok(Calls(Some(Vec::new())))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Calls<'de>, E> {
                Ok(Calls(Some(Vec::new())))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Calls<'de>, E> {
                Ok(Calls(Some(Vec::new())))
            }
        }
        d.deserialize_any(V)
    }
}

/// One call of `tool_calls` as the adapter's [`ToolCall`] decodes it (the same
/// members, each decoded as there, a member twice refused), with its index
/// given by position when it names none; `None` for a call that is not an
/// object or names its `index` as `null`.
struct Call<'a>(Option<ToolCall<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Call<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Call<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Call<'de>, A::Error> {
                let mut call = ToolCall::default();
                let mut seen = 0_u8;
                let mut once = |n: u8| {
                    let again = seen & (1 << n) != 0;
                    seen |= 1 << n;
                    if again {
                        Err(de::Error::custom("a member twice"))
                    } else {
                        Ok(())
                    }
                };
                let mut null_index = false;
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    match &*key {
                        "index" => {
                            once(0)?;
                            call.index = map.next_value()?;
                            null_index = call.index.is_none();
                        }
                        "id" => {
                            once(1)?;
                            call.id = map.next_value()?;
                        }
                        "function" => {
                            once(2)?;
                            call.function = map.next_value()?;
                        }
                        "custom" => {
                            once(3)?;
                            call.custom = map.next_value()?;
                        }
                        "type" => {
                            once(4)?;
                            call.kind = map.next_value()?;
                        }
                        "extra_content" => {
                            once(5)?;
                            call.extra_content = map.next_value()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Call((!null_index).then_some(call)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Call<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Call(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Call<'de>, E> {
                Ok(Call(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Neither absent, `null` nor `""` (what the reference leaves out of a delta).
fn present_raw(raw: Option<&RawValue>) -> Option<&RawValue> {
    raw.filter(|r| !matches!(r.get().trim(), "null" | "\"\""))
}

fn from_raw<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Option<T> {
    serde_json::from_str(raw.get()).ok()
}

impl Body<'_> {
    /// The `chat.completion` body shape (`SPEC.body.shape`), on this decode.
    fn is_body(&self) -> bool {
        let choices = self.choices.as_deref().unwrap_or_default();
        if self.object == Some(Object::Body) {
            return !choices.iter().any(|c| c.0.delta);
        }
        if self.has_type || self.object == Some(Object::Chunk) {
            return false;
        }
        self.choices.is_some()
            && !choices.is_empty()
            && choices.iter().all(|c| c.0.message.is_some() && !c.0.delta)
    }
}

/// One chunk of one choice.
fn chunk<'a>(index: Index, delta: Delta<'a>, finish: Option<Str<'a>>) -> Chunk<'a> {
    let mut choices = Few::default();
    choices.push(ChatChoice {
        index: Some(index),
        delta: Some(delta),
        finish_reason: finish,
        text: None,
    });
    Chunk {
        choices: Some(choices),
        ..Chunk::default()
    }
}

/// A choice of a body certified to be read as the reference reads it: every
/// member that could still refuse it read already.
struct Ready<'a> {
    index: Index,
    finish: Option<Str<'a>>,
    message: Option<Message<'a>>,
    calls: Vec<ToolCall<'a>>,
    function_call: Option<Function<'a>>,
}

/// A body's choices and its usage (a map, or the text the scanner
/// certified), certified.
type Certified<'a> = (Vec<Ready<'a>>, Option<Map<String, Value>>, Option<&'a str>);

/// A body's choices and usage certified, or `None` for a body left to the
/// reference (before anything is applied).
fn ready(body: Body<'_>) -> Option<Certified<'_>> {
    let usage = match body.usage {
        None | Some(Value::Null) => None,
        Some(Value::Object(usage)) => Some(usage),
        Some(_) => return None,
    };
    let choices = body.choices.unwrap_or_default();
    let mut out = Vec::with_capacity(choices.len());
    for (pos, choice) in choices.into_iter().enumerate() {
        let choice = choice.0;
        let index = choice
            .index
            .filter(|i| !i.is_null())
            .unwrap_or_else(|| Value::from(pos));
        let index = Index::deserialize(&index).ok()?;
        let finish = match choice.finish_reason {
            None => None,
            Some(Reason::Text(s)) => Some(s),
            Some(Reason::Other) => return None,
        };
        let mut calls = Vec::new();
        let mut function_call = None;
        let mut message = choice.message.map(|m| m.0);
        if let Some(m) = &mut message {
            if let Some(Calls(c)) = m.tool_calls.take() {
                calls = c?;
            }
            for (i, call) in calls.iter_mut().enumerate() {
                if call.index.is_none() {
                    call.index = Some(Index(i64::try_from(i).ok()?));
                }
            }
            if let Some(raw) = present_raw(m.function_call) {
                function_call = Some(from_raw::<Function<'_>>(raw)?);
            }
        }
        out.push(Ready {
            index,
            finish,
            message,
            calls,
            function_call,
        });
    }
    Some((out, usage, body.usage_text))
}

/// The chunks of a certified body, each handed to `emit` as it is made,
/// until `emit` answers `false`.
///
/// The reference sends a chunk per member of a message (its reasoning, text,
/// refusal, each call, the legacy call), then one with the finish reason.
/// Here a choice's members go in one delta, in that same order: `apply_chunk`
/// applies a delta's members in that order, and what it does once per chunk
/// besides (the choice's position, its `""` finish noted, the choice's empty
/// `text`) gives the same state done once as done for each member. The one
/// exception: a delta is read for one reasoning member, so with both the
/// first goes in a chunk of its own. The finish stays a chunk of its own.
fn chunks<'a>(
    (choices, usage, usage_text): Certified<'a>,
    emit: &mut dyn FnMut(Chunk<'a>) -> bool,
) {
    for c in choices {
        let index = c.index;
        let delta_finish = || (c.finish.as_deref() == Some("")).then(|| Str("".into()));
        let mut delta = Delta::default();
        if let Some(m) = c.message {
            let filled = |t: Option<Str<'a>>| t.filter(|t| !t.is_empty());
            match (filled(m.reasoning_content), filled(m.reasoning)) {
                (Some(first), Some(second)) => {
                    let alone = Delta {
                        reasoning_content: Some(first),
                        ..Delta::default()
                    };
                    if !emit(chunk(index, alone, delta_finish())) {
                        return;
                    }
                    delta.reasoning = Some(second);
                }
                (first, second) => {
                    delta.reasoning_content = first;
                    delta.reasoning = second;
                }
            }
            delta.content = m
                .content
                .filter(|c| !matches!(c, Content::Text(t) if t.is_empty()));
            delta.refusal = filled(m.refusal);
            // The role goes with the first delta, which the chunk ignores.
            let _ = m.role;
        }
        if !c.calls.is_empty() {
            delta.tool_calls = Some(Few::from(c.calls));
        }
        delta.function_call = c.function_call;
        if !emit(chunk(index, delta, delta_finish())) {
            return;
        }
        if let Some(reason) = c.finish.filter(|r| !r.is_empty()) {
            if !emit(chunk(index, Delta::default(), Some(reason))) {
                return;
            }
        }
    }
    if usage.is_some() || usage_text.is_some() {
        emit(Chunk {
            choices: Some(Few::default()),
            usage,
            usage_text,
            ..Chunk::default()
        });
    }
}

/// The most calls and blocks a message of the body holds.
fn room(choices: &[Ready<'_>]) -> Room {
    choices.iter().fold(Room::default(), |room, c| {
        let calls = c.calls.len() + usize::from(c.function_call.is_some());
        let texts = c.message.as_ref().map_or(0, |m| {
            let parts = [
                m.reasoning_content.is_some(),
                m.reasoning.is_some(),
                m.content.is_some(),
                m.refusal.is_some(),
            ];
            parts.into_iter().filter(|&p| p).count()
        });
        Room {
            calls: room.calls.max(calls),
            blocks: room.blocks.max(calls + texts),
        }
    })
}

/// Every chunk of a body in a list (`None` for a body left to the reference).
#[cfg(test)]
fn all_chunks(body: Body<'_>) -> Option<Vec<Chunk<'_>>> {
    let ready = ready(body)?;
    let mut all = crate::providers::body::made(|emit| chunks(ready, emit));
    // A usage kept as text, as the map the typed decode gives.
    for c in &mut all {
        if let Some(text) = c.usage_text.take() {
            c.usage = serde_json::from_str(text).ok();
        }
    }
    Some(all)
}

/// Reads `text` (the event `input`) as a whole `chat.completion` body into
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
    let body: Body<'_> = match (scanned, input) {
        (Some(b), _) => b,
        (None, _) if !typed_decode() => return None,
        (None, Input::Text(t)) => serde_json::from_str(t).ok()?,
        (None, _) => serde_json::from_slice(text).ok()?,
    };
    if !body.is_body() {
        return None;
    }
    // Decoded as the reference decodes them; `Value` is cheap on these.
    let _ = (&body.id, &body.created, &body.model, &body.system_fingerprint);
    let ready = ready(body)?;
    let room = room(&ready.0);
    let applied = apply_made(
        asm,
        Dialect::OpenAiChat,
        room,
        BODY,
        |emit| chunks(ready, emit),
        live.as_deref_mut(),
        |asm, chunk, l| {
            Some(apply_chunk(&mut asm.stream, None, chunk, l).map_err(|f| (f, CHUNK.to_owned())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}
