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
//! Each dialect's body, and the events it stands for, is its own (its folder's
//! `body` module, named by the registry); docs/providers.md has the table.
//!
//! A JSON array fed as one event (a stream some servers send as one array of
//! its events) is fed element by element.
//!
//! Tool inputs that a body holds as JSON objects become their compact text, keys in the order the body has
//! them; everything else a body holds is passed on as it is.

use std::fmt;
use std::marker::PhantomData;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::de::{value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::detect;
use super::raw::object_for_shape;

#[path = "body_scan.rs"]
mod scanned;
#[path = "body_whole.rs"]
mod whole;
pub(crate) use super::state::Room;
use super::state::{Fail, Live};
use super::{Assembler, DecodeKind, Dialect, DialectState, Error, EventRef, Input, LiveEvent};
pub(crate) use scanned::{may_overflow, outside_strings, scanned_map, scanned_value};
pub(crate) use whole::{typed_decode, whole_first};
#[cfg(test)]
pub(crate) use whole::{without_offer, WHOLE_READS};

/// One event made from a body: built here, or text holding parts of the body
/// exactly as they are (key order included).
pub(crate) enum Made {
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
#[inline]
pub(super) fn intercept(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    // An event of a named dialect without its body marker is no body: the
    // usual case, told here, inline, before a direct reader looks (each
    // looks for the same marker).
    if !is_array(input) && asm.dialect.is_some_and(|d| !may_be_body(d, input)) {
        return None;
    }
    take_over(asm, event_name, input, live)
}

/// [`intercept`] past the usual case: an array, or an event that holds its
/// dialect's body marker (or of a dialect not told yet).
#[inline(never)]
fn take_over(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    if is_array(input) {
        return Some(feed_array(asm, event_name, input, live));
    }
    let mut live = live;
    if let Some(fed) = direct(asm, event_name, input, live.as_deref_mut()) {
        return Some(fed);
    }
    let shape = match asm.dialect {
        Some(d) if surely_event(d, input) => return None,
        named => shape_of(named, input)?,
    };
    match asm.dialect {
        // Q32: a body of another dialect than the one named.
        Some(d) if d != shape => Some(Err(Error::WrongDialect {
            event: asm.event_ref(event_name, input),
            expected: d,
            looks_like: shape,
            auto: asm.auto,
        })),
        _ => {
            asm.decide(shape);
            Some(feed_body(asm, shape, event_name, input, live))
        }
    }
}

/// A body read directly, as the typed message its dialect's direct reader
/// decodes it into (`direct.rs` in the dialect's folder): `None` for an event
/// that reader does not certify (not a body, a body of an unusual shape, bad
/// JSON), which the reference path below reads as today. A direct reader
/// gives exactly what the reference gives (`body_tests.rs` holds them to it).
fn direct(
    asm: &mut Assembler,
    event_name: Option<&str>,
    input: Input<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Option<Result<(), Error>> {
    if reference_only() {
        return None;
    }
    let text = match input {
        Input::Json(b) => b,
        Input::Text(t) => t.as_bytes(),
        Input::Value(_) | Input::Tree(_) => return None,
    };
    let mut live = live;
    let read = |d: Dialect, asm: &mut Assembler, live: Option<&mut Vec<LiveEvent>>| {
        DialectState::read_body(
            d,
            Body {
                asm,
                event_name,
                input,
                text,
                live,
            },
        )
    };
    // Each reader is handed only text that holds its dialect's body marker
    // (`intercept` found a named dialect's), and looks for it no more.
    let marked = |d: Dialect| may_be_body(d, input);
    let fed = match asm.dialect {
        Some(d) => read(d, asm, live),
        // `auto` tries a body as chat first, then as Anthropic's (Responses'
        // bodies have no `type`); other dialects' bodies go to the reference.
        None => marked(Dialect::OpenAiChat)
            .then(|| read(Dialect::OpenAiChat, asm, live.as_deref_mut()))
            .flatten()
            .or_else(|| {
                marked(Dialect::Anthropic)
                    .then(|| read(Dialect::Anthropic, asm, live))
                    .flatten()
            }),
    };
    #[cfg(test)]
    if fed.is_some() {
        DIRECT_READS.with(|n| n.set(n.get() + 1));
    }
    fed
}

#[cfg(test)]
thread_local! {
    static REFERENCE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Bodies the direct readers read (the tests check they read some).
    pub(crate) static DIRECT_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether bodies take the reference path only (the tests that compare the two).
#[cfg(not(test))]
const fn reference_only() -> bool {
    false
}

#[cfg(test)]
fn reference_only() -> bool {
    REFERENCE_ONLY.with(std::cell::Cell::get)
}

/// Runs `f` with every body read by the reference path only.
#[cfg(test)]
pub(crate) fn with_reference<T>(f: impl FnOnce() -> T) -> T {
    whole::while_set(&REFERENCE_ONLY, f)
}

#[cfg(test)]
thread_local! {
    static TYPED_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a direct reader may read a body with the scanner of
/// `providers/scan` before its typed decode (always, outside the tests that
/// compare the two).
#[cfg(not(test))]
#[inline(always)]
pub(crate) const fn scan_bodies() -> bool {
    true
}

#[cfg(test)]
pub(crate) fn scan_bodies() -> bool {
    !TYPED_ONLY.with(std::cell::Cell::get)
}

/// Runs `f` with every body a direct reader reads decoded by its typed decode.
#[cfg(test)]
pub(crate) fn with_typed<T>(f: impl FnOnce() -> T) -> T {
    whole::while_set(&TYPED_ONLY, f)
}

/// The text of a body for a direct reader's scanner (`None`: the bytes are
/// not UTF-8, or the tests read bodies with the typed decodes only).
pub(crate) fn scanned_text<'a>(input: Input<'a>, text: &'a [u8]) -> Option<&'a str> {
    match input {
        _ if !scan_bodies() => None,
        Input::Text(t) => Some(t),
        _ => simdutf8::basic::from_utf8(text).ok(),
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

/// Cheap test on an event of a known dialect: can it be a body at all? Bytes
/// look for the JSON text every body of the dialect holds (or that few
/// streamed events hold: those get the exact test, [`shape_of`], too).
#[inline]
fn may_be_body(d: Dialect, input: Input<'_>) -> bool {
    /// One prebuilt searcher per dialect, in registry order.
    static MARKERS: LazyLock<Vec<Option<Finder<'static>>>> = LazyLock::new(|| {
        Dialect::ALL
            .iter()
            .map(|d| d.spec().body.as_ref().map(|b| Finder::new(b.marker)))
            .collect()
    });
    let bytes = match input {
        Input::Json(b) => b,
        Input::Text(t) => t.as_bytes(),
        Input::Value(Value::Object(m)) => return detect::body_shape_for(Some(d), m).is_some(),
        Input::Value(_) => return false,
        // A decoded event: its top-level members say whether it can be a body.
        Input::Tree(t) => {
            return Dialect::ALL
                .iter()
                .any(|o| o.spec().body.as_ref().is_some_and(|b| (b.tree)(t)))
                && shape_of(Some(d), input).is_some();
        }
    };
    // `Dialect::ALL` lists the dialects in declaration order.
    match MARKERS.get(d as usize) {
        Some(Some(finder)) => finder.find(bytes).is_some(),
        _ => false,
    }
}

/// An event whose text its dialect tells apart as surely no body.
fn surely_event(d: Dialect, input: Input<'_>) -> bool {
    match input {
        Input::Json(b) => DialectState::surely_event(d, b),
        Input::Text(t) => DialectState::surely_event(d, t.as_bytes()),
        Input::Value(_) | Input::Tree(_) => false,
    }
}

/// The dialect whose whole response this event is, if it is one (the named
/// dialect's own body first).
fn shape_of(named: Option<Dialect>, input: Input<'_>) -> Option<Dialect> {
    let shape = |m: &Map<String, Value>| detect::body_shape_for(named, m);
    match input {
        Input::Value(Value::Object(m)) => shape(m),
        Input::Value(_) => None,
        Input::Tree(t) => match t.to_value().ok()? {
            Value::Object(m) => shape(&m),
            _ => None,
        },
        Input::Json(b) => shape(&object_for_shape(b)?),
        Input::Text(t) => shape(&object_for_shape(t.as_bytes())?),
    }
}

/// A JSON object only (a derived struct would also take an array, by position).
pub(crate) struct Obj<T>(pub(crate) T);

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

/// A whole body handed to a direct reader: the assembler, the event as fed
/// (its name, its input, its bytes, which hold the dialect's body marker)
/// and where live events go.
pub(crate) struct Body<'a, 'b> {
    pub(crate) asm: &'a mut Assembler,
    pub(crate) event_name: Option<&'b str>,
    pub(crate) input: Input<'b>,
    pub(crate) text: &'b [u8],
    pub(crate) live: Option<&'a mut Vec<LiveEvent>>,
}

/// Renames an error of an event made from a body: it names the body too.
pub(crate) fn renamed(mut e: Error, what: &str) -> Error {
    if let Some(ev) = e.event_mut() {
        ev.event_type = if ev.event_type.is_empty() {
            what.to_owned()
        } else {
            format!("{what}, at its {}", ev.event_type)
        };
    }
    e
}

/// Applies, in order, the typed events a direct reader built from a whole body,
/// as the reference applies the events it makes: the dialect decided, each
/// event's stream bookkeeping, and on a failure the stream failed where the
/// provider failed it and the error named as the reference names it (the
/// event's ordinal and type, then the body). `apply` gives the failure with the
/// event's type, or `None` when the assembler holds another dialect's state
/// (then `None` here too). The message is ended by [`end_whole`].
pub(crate) fn apply_whole<E>(
    asm: &mut Assembler,
    dialect: Dialect,
    body: &str,
    events: impl IntoIterator<Item = E>,
    live: Option<&mut Vec<LiveEvent>>,
    apply: impl FnMut(&mut Assembler, E, &mut Live<'_>) -> Option<Result<(), (Fail, String)>>,
) -> Option<Result<(), Error>> {
    apply_made(
        asm,
        dialect,
        Room::default(),
        body,
        |sink| {
            for ev in events {
                if !sink(ev) {
                    return;
                }
            }
        },
        live,
        apply,
    )
}

/// [`apply_whole`] with the events handed over one at a time as `make`
/// makes them, none of them kept in a list, and each choice made with `room`
/// for what the body holds: `make` gives each to the sink it
/// gets, which applies it and answers whether to go on (`false` after a
/// failure). `make` must have certified the body first: an event it cannot
/// make after others were applied would leave those applied.
pub(crate) fn apply_made<E>(
    asm: &mut Assembler,
    dialect: Dialect,
    room: Room,
    body: &str,
    make: impl FnOnce(&mut dyn FnMut(E) -> bool),
    mut live: Option<&mut Vec<LiveEvent>>,
    mut apply: impl FnMut(&mut Assembler, E, &mut Live<'_>) -> Option<Result<(), (Fail, String)>>,
) -> Option<Result<(), Error>> {
    asm.decide(dialect);
    asm.stream.room = room;
    let mut outcome = Some(Ok(()));
    make(&mut |ev| {
        asm.stream.dialect = Some(dialect);
        asm.stream.unknown = None;
        let mut l = asm.stream.live(live.as_deref_mut());
        let failed = match apply(asm, ev, &mut l) {
            None => None,
            Some(Ok(())) => return true,
            Some(Err((f, event_type))) => {
                if matches!(f, Fail::Provider { .. }) {
                    asm.stream.fail_all();
                }
                let event = EventRef {
                    ordinal: asm.events,
                    event_type,
                };
                Some(Err(renamed(f.into_error(event), body)))
            }
        };
        outcome = failed;
        false
    });
    asm.stream.room = Room::default();
    outcome
}

/// The events `make` hands over (as to [`apply_made`]), in a list.
#[cfg(test)]
pub(crate) fn made<E>(make: impl FnOnce(&mut dyn FnMut(E) -> bool)) -> Vec<E> {
    let mut out = Vec::new();
    make(&mut |e| {
        out.push(e);
        true
    });
    out
}

/// Ends the message of a whole body a direct reader applied
/// ([`apply_whole`]), as the reference ends it.
pub(crate) fn end_whole(
    asm: &mut Assembler,
    body: &str,
    event_name: Option<&str>,
    input: Input<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    asm.ended_whole(&mut asm.stream.live(live))
        .map_err(|f| renamed(asm.wrap(f, event_name, input), body))
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
    let what = format!(
        "{} body",
        d.spec().body.as_ref().map_or(d.name(), |b| b.label)
    );
    for event in &events {
        let fed = match event {
            Made::Value(v) => asm.dispatch(None, Input::Value(v), live.as_deref_mut()),
            Made::Text(t) => asm.dispatch(None, Input::Text(t), live.as_deref_mut()),
        };
        fed.map_err(|e| renamed(e, &what))?;
    }
    let mut live = asm.stream.live(live);
    asm.ended_whole(&mut live)
        .map_err(|f| renamed(asm.wrap(f, event_name, input), &what))
}

/// The events a body of dialect `d` stands for.
fn events(d: Dialect, body: &[u8]) -> Result<Vec<Made>, Fail> {
    match &d.spec().body {
        Some(b) => (b.events)(body),
        None => Ok(Vec::new()),
    }
}

/// `{"type": kind, …fields}` as an event.
pub(crate) fn typed(kind: &str, fields: Value) -> Made {
    let mut m = Map::new();
    m.insert("type".to_owned(), Value::String(kind.to_owned()));
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Made::Value(Value::Object(m))
}

/// An event as text, with `raw` (a part of the body, exactly as it is) under
/// `key` after the fields of `head`.
pub(crate) fn with_raw(head: &Value, key: &str, raw: &RawValue) -> Made {
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

pub(crate) fn non_empty(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null() && v.as_str() != Some(""))
}

/// A part of a body read as `T`; an error names where it is.
pub(crate) fn parse_part<'a, T: Deserialize<'a>>(raw: &'a RawValue, at: &str) -> Result<T, Fail> {
    match Input::Text(raw.get()).parse() {
        Ok(t) => Ok(t),
        Err(Fail::Bad { kind, detail }) => Err(Fail::Bad {
            kind,
            detail: format!("{at}: {detail}"),
        }),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

#[cfg(test)]
#[path = "body_tests.rs"]
mod direct_tests;
