//! The OpenAI Responses `response` body read directly (QUIRKS.md Q31): one
//! pass of the scanner over the body (`scanned.rs`), or where it gives up one
//! typed, borrowing decode of the body, then each event its stream would have
//! sent built in place as the typed [`Event`] the adapter applies. No `Value`
//! tree of the output, no JSON text of the events, no second decode.
//!
//! It gives what `body.rs` gives (the reference): the same events in the same
//! order and numbering, applied by the same [`State::apply_event`], with the
//! same names in errors, and the final snapshot checked against the calls
//! assembled as the reference checks it. A body it cannot certify to be read
//! exactly so is left to the reference, before anything is applied: JSON that
//! does not decode, a member the reference reads given twice or of an unusual
//! type, an item or a part that is not an object, an item other than a
//! message, a function call, a custom tool call or a reasoning item (the items
//! kept whole, server tools), a response that failed, a number a float cannot
//! hold, a stream already ended.
//!
//! The first response of a stream is read straight into the message instead
//! (`straight.rs`): what those events leave, without the events.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::snapshot::SnapshotCall;
use super::wire::{Event, Incomplete, Item, Response};
use crate::providers::body::{apply_whole, end_whole, outside_strings, scan_bodies, typed_decode, Obj};
use crate::providers::json::{Index, Loose, Str};
use crate::providers::state::usage_map;
use crate::providers::usage::read as read_usage;
use crate::providers::{detect, Assembler, Dialect, DialectState, Error, Input, LiveEvent};

#[path = "scanned.rs"]
mod scanned;
#[path = "straight.rs"]
mod straight;

/// What the reference names the body in errors.
const BODY: &str = "Responses `response` body";

/// The body: the members the reference reads, decoded as the reference's
/// `Response` decodes them; any other member skipped.
#[derive(Default)]
struct Body<'a> {
    id: Option<Str<'a>>,
    model: Option<Str<'a>>,
    status: Option<Str<'a>>,
    usage: Option<Map<String, Value>>,
    /// The usage object's text, as the scanner certified it (then `usage` is
    /// absent); never from the typed decode.
    usage_text: Option<&'a str>,
    incomplete_details: Option<Incomplete>,
    output: Option<Vec<Obj<BodyItem<'a>>>>,
    /// `object` is `"response"` (the body's shape; a body has no `type`).
    is_response: bool,
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
                // The members read, each at most once.
                let mut seen = 0_u8;
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    let bit = match &*key {
                        // A streamed event (its `type` first): not a body.
                        "type" => return Err(serde::de::Error::custom("an event")),
                        "id" => 1,
                        "model" => 2,
                        "status" => 4,
                        "usage" => 8,
                        "incomplete_details" => 16,
                        "output" => 32,
                        "object" => 64,
                        "error" => 128,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if seen & bit != 0 {
                        return Err(serde::de::Error::custom("a member twice"));
                    }
                    seen |= bit;
                    match bit {
                        1 => b.id = map.next_value()?,
                        2 => b.model = map.next_value()?,
                        4 => b.status = map.next_value()?,
                        8 => b.usage = map.next_value::<Usage>()?.0,
                        16 => b.incomplete_details = map.next_value()?,
                        32 => b.output = map.next_value()?,
                        64 => {
                            let object: Str<'de> = map.next_value()?;
                            b.is_response = &*object == "response";
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(b)
            }
        }
        d.deserialize_map(V)
    }
}

/// A `usage` member as the reference's `Response` decodes it.
struct Usage(Option<Map<String, Value>>);

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        usage_map(d).map(Usage)
    }
}

/// An output item: the members the events made of it carry (those of
/// [`Item`], its `arguments` and `input` strings only), and its parts.
#[derive(Default, Deserialize)]
struct BodyItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    call_id: Option<Str<'a>>,
    #[serde(default, borrow)]
    name: Option<Str<'a>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    arguments: Option<Option<Str<'a>>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    input: Option<Option<Str<'a>>>,
    #[serde(default, borrow)]
    encrypted_content: Option<Str<'a>>,
    #[serde(default, borrow)]
    content: Option<Vec<Obj<Part<'a>>>>,
    #[serde(default, borrow)]
    summary: Option<Vec<Obj<Part<'a>>>>,
}

/// A part of a message or of a reasoning item.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Str<'a>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    text: Option<Option<Str<'a>>>,
    #[serde(default, borrow, deserialize_with = "nullable")]
    refusal: Option<Option<Str<'a>>>,
    #[serde(default)]
    annotations: Option<Vec<IgnoredAny>>,
}

/// A string member that may be `null` (`Some(None)`), which the reference
/// tells from an absent one.
fn nullable<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Str<'a>>>, D::Error> {
    Option::<Str<'a>>::deserialize(d).map(Some)
}

/// A string the reference sends on: absent or `null` as `""`.
fn given<'a>(v: &Option<Option<Str<'a>>>) -> Option<Str<'a>> {
    match v {
        Some(Some(s)) => Some(s.clone()),
        None | Some(None) => Some(Str("".into())),
    }
}

fn to_index(i: usize) -> Option<Index> {
    i64::try_from(i).ok().map(Index)
}

/// The events of one body, numbered as `sequence_number` numbers them.
struct Events<'a> {
    out: Vec<Event<'a>>,
}

impl<'a> Events<'a> {
    fn push(&mut self, kind: &'static str, mut ev: Event<'a>) -> Option<()> {
        // Set in place: the event (large) is moved once, into the list.
        ev.sequence_number = Some(u64::try_from(self.out.len()).ok()?);
        ev.kind = Some(Str(kind.into()));
        self.out.push(ev);
        Some(())
    }
}

/// The events of a body, in the reference's order, and the calls its final
/// snapshot holds; `None` for a body left to the reference.
#[allow(clippy::too_many_lines)]
fn events<'a>(body: &'a Body<'a>) -> Option<(Vec<Event<'a>>, Vec<SnapshotCall<'a>>)> {
    let end = match body.status.as_deref() {
        Some("completed") => Some("response.completed"),
        Some("in_progress" | "queued") | None => None,
        Some("failed") => return None,
        Some(_) => Some("response.incomplete"),
    };
    let owned = |s: &Option<Str<'_>>| s.as_deref().map(str::to_owned);
    let start = || Response {
        id: owned(&body.id),
        status: Some("in_progress".to_owned()),
        model: owned(&body.model),
        usage: None,
        incomplete_details: None,
        error: None,
    };
    let items: &[Obj<BodyItem<'a>>] = body.output.as_deref().unwrap_or_default();
    // Room for every event at once (they are large: no move of them all as
    // the list grows).
    let room = items.iter().fold(3, |n, Obj(item)| {
        let parts = |p: &Option<Vec<Obj<Part<'_>>>>| {
            p.as_deref().unwrap_or_default().iter().fold(0, |n, Obj(part)| {
                n + 4 + part.annotations.as_ref().map_or(0, Vec::len)
            })
        };
        n + 4 + parts(&item.content) + parts(&item.summary)
    });
    let mut seq = Events {
        out: Vec::with_capacity(room),
    };
    let mut calls = Vec::new();
    for kind in ["response.created", "response.in_progress"] {
        let ev = Event {
            response: Some(start()),
            ..Event::default()
        };
        seq.push(kind, ev)?;
    }
    for (oi, Obj(item)) in items.iter().enumerate() {
        let output_index = Some(Index(i64::try_from(oi).ok()?));
        let kind = item.kind.as_deref().unwrap_or_default();
        let (function, custom) = (kind == "function_call", kind == "custom_tool_call");
        if !matches!(kind, "message" | "reasoning") && !function && !custom {
            return None;
        }
        let empty = || Some(Loose::Str("".into()));
        let added = Item {
            kind: item.kind.clone(),
            id: item.id.clone(),
            call_id: item.call_id.clone(),
            name: item.name.clone(),
            arguments: if function { empty() } else { None },
            input: if custom { empty() } else { None },
            encrypted_content: None,
            restated: None,
        };
        let ev = Event {
            output_index,
            item: Some(added),
            ..Event::default()
        };
        seq.push("response.output_item.added", ev)?;
        // An event of the item: its id and output index.
        let at = || Event {
            item_id: item.id.clone(),
            output_index,
            ..Event::default()
        };
        let in_part = |ci: usize| {
            Some(Event {
                content_index: Some(to_index(ci)?),
                ..at()
            })
        };
        let no_parts = Vec::new();
        match kind {
            "message" => {
                for (ci, Obj(part)) in item.content.as_ref().unwrap_or(&no_parts).iter().enumerate() {
                    seq.push("response.content_part.added", in_part(ci)?)?;
                    match part.kind.as_deref() {
                        Some("output_text") => {
                            let delta = Event {
                                delta: given(&part.text),
                                ..in_part(ci)?
                            };
                            seq.push("response.output_text.delta", delta)?;
                            for _ in part.annotations.as_deref().unwrap_or_default() {
                                seq.push("response.output_text.annotation.added", in_part(ci)?)?;
                            }
                            seq.push("response.output_text.done", in_part(ci)?)?;
                        }
                        Some("refusal") => {
                            let delta = Event {
                                delta: given(&part.refusal),
                                ..in_part(ci)?
                            };
                            seq.push("response.refusal.delta", delta)?;
                            seq.push("response.refusal.done", in_part(ci)?)?;
                        }
                        _ => {}
                    }
                    seq.push("response.content_part.done", in_part(ci)?)?;
                }
            }
            "function_call" | "custom_tool_call" => {
                let text = given(if function { &item.arguments } else { &item.input });
                let delta = Event {
                    delta: text.clone(),
                    ..at()
                };
                let done = if function {
                    Event {
                        arguments: text,
                        name: item.name.clone(),
                        ..at()
                    }
                } else {
                    Event { input: text, ..at() }
                };
                if function {
                    seq.push("response.function_call_arguments.delta", delta)?;
                    seq.push("response.function_call_arguments.done", done)?;
                } else {
                    seq.push("response.custom_tool_call_input.delta", delta)?;
                    seq.push("response.custom_tool_call_input.done", done)?;
                }
            }
            _ => {
                for (si, Obj(part)) in item.summary.as_ref().unwrap_or(&no_parts).iter().enumerate() {
                    let in_summary = || {
                        Some(Event {
                            summary_index: Some(to_index(si)?),
                            ..at()
                        })
                    };
                    seq.push("response.reasoning_summary_part.added", in_summary()?)?;
                    let delta = Event {
                        delta: given(&part.text),
                        ..in_summary()?
                    };
                    seq.push("response.reasoning_summary_text.delta", delta)?;
                    seq.push("response.reasoning_summary_text.done", in_summary()?)?;
                    seq.push("response.reasoning_summary_part.done", in_summary()?)?;
                }
                for (ci, Obj(part)) in item.content.as_ref().unwrap_or(&no_parts).iter().enumerate() {
                    seq.push("response.content_part.added", in_part(ci)?)?;
                    let delta = Event {
                        delta: given(&part.text),
                        ..in_part(ci)?
                    };
                    seq.push("response.reasoning_text.delta", delta)?;
                    seq.push("response.reasoning_text.done", in_part(ci)?)?;
                    seq.push("response.content_part.done", in_part(ci)?)?;
                }
            }
        }
        let loose = |v: &Option<Option<Str<'a>>>| {
            v.as_ref()
                .and_then(|s| s.as_ref().map(|s| Loose::Str(s.0.clone())))
        };
        let whole = Item {
            kind: item.kind.clone(),
            id: item.id.clone(),
            call_id: item.call_id.clone(),
            name: item.name.clone(),
            arguments: loose(&item.arguments),
            input: loose(&item.input),
            encrypted_content: item.encrypted_content.clone(),
            restated: None,
        };
        let ev = Event {
            output_index,
            item: Some(whole),
            ..Event::default()
        };
        seq.push("response.output_item.done", ev)?;
        if function || custom {
            let args = if function { &item.arguments } else { &item.input };
            calls.push(SnapshotCall {
                item_type: kind,
                call_id: item.call_id.as_deref().unwrap_or_default(),
                id: item.id.as_deref().unwrap_or_default(),
                name: item.name.as_deref().unwrap_or_default(),
                args: args.as_ref().map(|a| a.as_deref()),
                restated: None,
            });
        }
    }
    if let Some(kind) = end {
        let response = Response {
            id: owned(&body.id),
            status: owned(&body.status),
            model: owned(&body.model),
            usage: body.usage.clone().or_else(|| body.usage_text.map(read_usage)),
            incomplete_details: body.incomplete_details.clone(),
            // Read for a failed response only, which is the reference's.
            error: None,
        };
        let ev = Event {
            response: Some(response),
            ..Event::default()
        };
        seq.push(kind, ev)?;
    }
    Some((seq.out, calls))
}

/// Reads `text` (the event `input`) as a whole Responses `response` body into
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
    // decode and a pass for the numbers.
    let scanned = match input {
        _ if !scan_bodies() => None,
        Input::Text(t) => scanned::body(t),
        _ => simdutf8::basic::from_utf8(text).ok().and_then(scanned::body),
    };
    let mut body: Body<'_> = match scanned {
        Some(body) => body,
        None => {
            if !typed_decode() {
                return None;
            }
            let body = match input {
                Input::Text(t) => serde_json::from_str(t).ok()?,
                _ => serde_json::from_slice(text).ok()?,
            };
            if !plain(text) {
                return None;
            }
            body
        }
    };
    if !body.is_response {
        return None;
    }
    // The first response of a stream, read straight into the message.
    if straight::feed(asm, &mut body, live.as_deref_mut()).is_some() {
        return Some(end_whole(asm, BODY, event_name, input, live));
    }
    let (events, calls) = events(&body)?;
    let applied = apply_whole(
        asm,
        Dialect::OpenAiResponses,
        BODY,
        events,
        live.as_deref_mut(),
        |asm, mut ev, l| {
            // Borrowed (every kind here is a `&'static str`): owned only for
            // an error.
            let kind = ev.kind.clone().unwrap_or_default();
            let Some(DialectState::OpenAiResponses(st)) = &mut asm.state else {
                return None;
            };
            let snapshot = (&*kind == "response.completed").then_some(calls.as_slice());
            // No event made here needs its text (see the module).
            let input = Input::Text("{}");
            let applied = st.apply_event(&mut asm.stream, None, &mut ev, false, input, snapshot, l);
            Some(applied.map_err(|f| (f, kind.0.into_owned())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}

/// A streamed event that carries a response (`response.created`,
/// `response.in_progress`, `response.completed`, …): its members, each once,
/// are only `type` (a `response.*` string), `sequence_number` and `response`.
struct ResponseEvent {
    kind: String,
    sequence_number: Option<Value>,
    has_response: bool,
}

impl<'de> Deserialize<'de> for ResponseEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResponseEvent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResponseEvent, A::Error> {
                let (mut kind, mut seq, mut response) = (None, None, false);
                let twice = || serde::de::Error::custom("a member twice");
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    match &*key {
                        "type" if kind.is_none() => {
                            kind = Some(map.next_value::<Str<'de>>()?.0.into_owned());
                        }
                        "sequence_number" if seq.is_none() => seq = Some(map.next_value()?),
                        "response" if !response => {
                            map.next_value::<IgnoredAny>()?;
                            response = true;
                        }
                        _ => return Err(twice()),
                    }
                }
                let kind = kind.ok_or_else(|| serde::de::Error::custom("no type"))?;
                Ok(ResponseEvent {
                    kind,
                    sequence_number: seq,
                    has_response: response,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `true` when `text` is surely no dialect's whole body: a [`ResponseEvent`]
/// whose members, its `response` standing in as an empty object, match no
/// body's shape (body shapes read top-level members, never inside a
/// `response`). Decoding it skips the response (no `Value` tree of the
/// snapshot a `response.completed` carries); `false` when unsure.
pub(super) fn surely_event(text: &[u8]) -> bool {
    let Ok(ev) = serde_json::from_slice::<ResponseEvent>(text) else {
        return false;
    };
    if !ev.kind.starts_with("response.") {
        return false;
    }
    let mut standin = Map::new();
    standin.insert("type".to_owned(), Value::String(ev.kind));
    if let Some(n) = ev.sequence_number {
        standin.insert("sequence_number".to_owned(), n);
    }
    if ev.has_response {
        standin.insert("response".to_owned(), Value::Object(Map::new()));
    }
    detect::body_shape_for(None, &standin).is_none()
}

/// Whether every value of the JSON `text` decodes as the reference's values
/// decode it: no number a float cannot hold (an exponent, or 300 digits in a
/// row, outside strings: what `body::may_overflow` looks for) and no nesting
/// near `serde_json`'s depth limit (128), which the values refuse while the
/// skipped members here would not. Strings are passed over with `memchr`.
pub(super) fn plain(text: &[u8]) -> bool {
    let (mut run, mut depth) = (0_u32, 0_u32);
    !outside_strings(text, |b| {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > 100 {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'e' | b'E' if run > 0 => return true,
            _ => {}
        }
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= 300
    })
}
