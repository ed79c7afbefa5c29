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
use std::marker::PhantomData;

use memchr::memmem;
use serde::de::{value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::content::Content;
use super::{apply_chunk, ChatChoice, Chunk, Delta, Function, ToolCall};
use crate::providers::body::renamed;
use crate::providers::json::{present, Few, Index, Str};
use crate::providers::state::{Fail, Live};
use crate::providers::{Assembler, Dialect, Error, EventRef, Input, LiveEvent};

/// What the reference names each chunk in errors: its `object`.
const CHUNK: &str = "chat.completion.chunk";
/// What the reference names the body in errors.
const BODY: &str = "chat.completion body";

/// A JSON object only (a derived struct would also take an array, by position).
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

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
    object: Option<Value>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    has_type: bool,
    #[serde(default, borrow)]
    choices: Option<Vec<Obj<Choice<'a>>>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default, borrow)]
    message: Option<Obj<Message<'a>>>,
    #[serde(default)]
    finish_reason: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    delta: bool,
}

/// The members of a message the reference reads (`null` is absent there too).
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    role: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_calls: Option<&'a RawValue>,
    #[serde(default, borrow)]
    function_call: Option<&'a RawValue>,
}

/// Whether a call names an `index` at all (`null` included).
#[derive(Deserialize)]
struct CallIndex {
    #[serde(default, deserialize_with = "present")]
    index: bool,
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
        if self.object.as_ref().and_then(Value::as_str) == Some("chat.completion") {
            return !choices.iter().any(|c| c.0.delta);
        }
        if self.has_type || self.object.as_ref().and_then(Value::as_str) == Some(CHUNK) {
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

/// The chunks of a body, in the reference's order; `None` for a body left to it.
fn chunks(body: Body<'_>) -> Option<Vec<Chunk<'_>>> {
    let mut out = Vec::new();
    for (pos, choice) in body.choices.unwrap_or_default().into_iter().enumerate() {
        let choice = choice.0;
        let index = choice
            .index
            .filter(|i| !i.is_null())
            .unwrap_or_else(|| Value::from(pos));
        let index = Index::deserialize(&index).ok()?;
        let finish_text = match &choice.finish_reason {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return None,
        };
        let delta_finish = || (finish_text == Some("")).then(|| Str("".into()));
        let mut deltas: Vec<Delta<'_>> = Vec::new();
        if let Some(Obj(m)) = choice.message {
            if let Some(raw) = present_raw(m.reasoning_content) {
                deltas.push(Delta {
                    reasoning_content: Some(from_raw(raw)?),
                    ..Delta::default()
                });
            }
            if let Some(raw) = present_raw(m.reasoning) {
                deltas.push(Delta {
                    reasoning: Some(from_raw(raw)?),
                    ..Delta::default()
                });
            }
            if let Some(raw) = present_raw(m.content) {
                deltas.push(Delta {
                    content: Some(from_raw::<Content<'_>>(raw)?),
                    ..Delta::default()
                });
            }
            if let Some(raw) = present_raw(m.refusal) {
                deltas.push(Delta {
                    refusal: Some(from_raw(raw)?),
                    ..Delta::default()
                });
            }
            let calls: Option<Vec<&RawValue>> = m
                .tool_calls
                .and_then(|raw| serde_json::from_str(raw.get()).ok());
            for (i, raw) in calls.unwrap_or_default().into_iter().enumerate() {
                if !raw.get().trim_start().starts_with('{') {
                    return None;
                }
                let mut call: ToolCall<'_> = from_raw(raw)?;
                if call.index.is_none() {
                    // Named `null`, the reference's chunk would name it twice.
                    if from_raw::<CallIndex>(raw)?.index {
                        return None;
                    }
                    call.index = Some(Index(i64::try_from(i).ok()?));
                }
                let mut few = Few::default();
                few.push(call);
                deltas.push(Delta {
                    tool_calls: Some(few),
                    ..Delta::default()
                });
            }
            if let Some(raw) = present_raw(m.function_call) {
                deltas.push(Delta {
                    function_call: Some(from_raw::<Function<'_>>(raw)?),
                    ..Delta::default()
                });
            }
            // The role goes with the first delta, which the chunk ignores.
            let _ = m.role;
        }
        if deltas.is_empty() {
            deltas.push(Delta::default());
        }
        for delta in deltas {
            out.push(chunk(index, delta, delta_finish()));
        }
        if let Some(reason) = finish_text.filter(|r| !r.is_empty()) {
            out.push(chunk(
                index,
                Delta::default(),
                Some(Str(reason.to_owned().into())),
            ));
        }
    }
    match body.usage {
        None | Some(Value::Null) => {}
        Some(Value::Object(usage)) => out.push(Chunk {
            choices: Some(Few::default()),
            usage: Some(usage),
            ..Chunk::default()
        }),
        Some(_) => return None,
    }
    Some(out)
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
    if asm.stream.done || memmem::find(text, b"\"message\"").is_none() {
        return None;
    }
    let body: Body<'_> = match input {
        Input::Text(t) => serde_json::from_str(t).ok()?,
        _ => serde_json::from_slice(text).ok()?,
    };
    if !body.is_body() {
        return None;
    }
    // Decoded as the reference decodes them; `Value` is cheap on these.
    let _ = (&body.id, &body.created, &body.model, &body.system_fingerprint);
    let chunks = chunks(body)?;
    asm.decide(Dialect::OpenAiChat);
    for chunk in chunks {
        let s = &mut asm.stream;
        s.dialect = Some(Dialect::OpenAiChat);
        s.unknown = None;
        let mut l = Live(live.as_deref_mut());
        if let Err(f) = apply_chunk(s, None, chunk, &mut l) {
            if matches!(f, Fail::Provider { .. }) {
                asm.stream.fail_all();
            }
            let event = EventRef {
                ordinal: asm.events,
                event_type: CHUNK.to_owned(),
            };
            return Some(Err(renamed(f.into_error(event), BODY)));
        }
    }
    let mut l = Live(live);
    Some(
        asm.ended_whole(&mut l)
            .map_err(|f| renamed(asm.wrap(f, event_name, input), BODY)),
    )
}
