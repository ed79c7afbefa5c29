//! The Bedrock `Converse` output body read directly (QUIRKS.md Q31): one
//! typed, borrowing decode of the body, then each event its stream would have
//! sent built in place as the bare [`Payload`] the adapter applies, with its
//! name. No `Value` tree of the content, no JSON of the events, no second
//! decode.
//!
//! It gives what `body.rs` gives (the reference): the same events in the same
//! order, applied by the same `State::event`, with the same names in errors.
//! A body it cannot certify to be read exactly so is left to the reference,
//! before anything is applied: JSON that does not decode, a member of an
//! unusual type or given twice, a block that is not an object or is other
//! than text, a client's or server's `toolUse` or reasoning text (images,
//! documents, results, citations, redacted reasoning, later kinds: their
//! events carry the block whole), a stream already ended. The members the
//! reference decodes as values are decoded so here too, so that a number a
//! float cannot hold fails (and is left to it) exactly where it fails there.
//! The scanner of `scanned.rs` reads a usual body in one pass into the same
//! [`Body`]; the typed decode reads what it gives up on.

use serde::de::{Error as _, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::body::ConverseToolUse;
use super::{Delta, Payload, Reasoning, Start, State, ToolUseDelta, ToolUseStart};
use crate::providers::body::{apply_whole, end_whole, scanned_text, typed_decode, Obj};
use crate::providers::json::{present, Index, Str};
use crate::providers::{Assembler, Dialect, Error, Input, LiveEvent};

#[path = "scanned.rs"]
mod scanned;

/// What the reference names the body in errors (its events have no type).
const BODY: &str = "Bedrock Converse body";

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(borrow, default)]
    output: Option<Obj<Output<'a>>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
    // Values, as the reference decodes them (a number a float cannot hold
    // is refused in them), though no event reads them.
    #[serde(default)]
    additional_model_response_fields: Option<Given>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    metrics: Option<Given>,
    #[serde(default)]
    trace: Option<Given>,
    #[serde(default)]
    performance_config: Option<Given>,
    /// The body's shape: no `type`, no `object` that is a string.
    #[serde(default, rename = "type", deserialize_with = "present")]
    has_type: bool,
    #[serde(default)]
    object: Option<Value>,
}

#[derive(Deserialize)]
struct Output<'a> {
    /// Present (`null` included): the body's shape.
    #[serde(borrow, default, deserialize_with = "some")]
    message: Option<Option<Obj<Message<'a>>>>,
}

/// A member decoded as a value, as the reference decodes it (a number a
/// float cannot hold refused), and kept only as present (`null` is absent).
struct Given;

impl<'de> Deserialize<'de> for Given {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|_| Given)
    }
}

fn some<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<Vec<Obj<Block<'a>>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Block<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    /// Read as the reference reads it: the same input text, the same start.
    #[serde(default)]
    tool_use: Option<ToolUseIn<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Obj<ReasoningIn<'a>>>,
    #[serde(default)]
    citations_content: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningIn<'a> {
    #[serde(borrow, default)]
    reasoning_text: Option<Obj<ReasoningText<'a>>>,
    #[serde(default)]
    redacted_content: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ReasoningText<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
}

/// A `toolUse` block: its input's compact text, and the members of its start
/// event's `toolUse` that the adapter reads (each absent, `null` or a string).
#[derive(Default)]
struct ToolUseIn<'a> {
    input: Option<String>,
    tool_use_id: Option<Str<'a>>,
    name: Option<Str<'a>>,
    kind: Option<Str<'a>>,
}

impl<'de> Deserialize<'de> for ToolUseIn<'_> {
    /// Decoded as the reference decodes it; a member of the start that its
    /// payload would not read as a string fails the decode (the body is left
    /// to the reference).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut tool = ConverseToolUse::deserialize(d)?;
        let mut member = |key| member(&mut tool.start, key).ok_or_else(|| D::Error::custom(key));
        Ok(ToolUseIn {
            tool_use_id: member("toolUseId")?,
            name: member("name")?,
            kind: member("type")?,
            input: tool.input.map(|c| c.0),
        })
    }
}

/// One event: its name and its bare payload.
type Event<'a> = (&'static str, Payload<'a>);

/// Pushes the event `name`, of block `i` if given, its payload built in place
/// (an event is large: it is not moved again on its way to the adapter).
fn push<'a>(
    out: &mut Vec<Event<'a>>,
    name: &'static str,
    i: Option<usize>,
    fill: impl FnOnce(&mut Payload<'a>),
) -> Option<()> {
    out.push((name, Payload::default()));
    let (_, p) = out.last_mut()?;
    if let Some(i) = i {
        p.content_block_index = Some(Index(i64::try_from(i).ok()?));
    }
    fill(p);
    Some(())
}

fn delta<'a>(out: &mut Vec<Event<'a>>, i: usize, d: Delta<'a>) -> Option<()> {
    push(out, "contentBlockDelta", Some(i), |p| p.delta = Some(d))
}

/// A member of a `toolUse` start as the reference's payload reads it: absent
/// or `null`, or a string (else the body is left to the reference).
fn member(start: &mut Map<String, Value>, key: &str) -> Option<Option<Str<'static>>> {
    match start.remove(key) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(Str(s.into()))),
        Some(_) => None,
    }
}

/// The events of a block, in the reference's order.
fn block<'a>(i: usize, b: Block<'a>, out: &mut Vec<Event<'a>>) -> Option<()> {
    if b.citations_content.is_some() {
        return None;
    }
    if let Some(tool) = b.tool_use {
        let start = ToolUseStart {
            tool_use_id: tool.tool_use_id,
            name: tool.name,
            kind: tool.kind,
        };
        push(out, "contentBlockStart", Some(i), |p| {
            p.start = Some(Start {
                tool_use: Some(start),
                tool_result: None,
            });
        })?;
        let input = tool.input.unwrap_or_else(|| "{}".to_owned());
        let d = Delta {
            tool_use: Some(ToolUseDelta {
                input: Some(Str(input.into())),
            }),
            ..Delta::default()
        };
        delta(out, i, d)?;
    } else if let Some(text) = b.text {
        let d = Delta {
            text: Some(text),
            ..Delta::default()
        };
        delta(out, i, d)?;
    } else if let Some(Obj(r)) = b.reasoning_content {
        if r.redacted_content.is_some() {
            return None;
        }
        if let Some(Obj(t)) = r.reasoning_text {
            let reasoning = |text, signature| Delta {
                reasoning_content: Some(Reasoning {
                    text,
                    signature,
                    redacted_content: None,
                }),
                ..Delta::default()
            };
            let text = t.text.unwrap_or_default();
            delta(out, i, reasoning(Some(text), None))?;
            if let Some(sig) = t.signature.filter(|s| !s.is_empty()) {
                delta(out, i, reasoning(None, Some(sig)))?;
            }
        }
    } else {
        return None;
    }
    push(out, "contentBlockStop", Some(i), |_| {})
}

/// The events of a body, in the reference's order; `None` for a body left to it.
fn events(body: Body<'_>) -> Option<Vec<Event<'_>>> {
    // The body's shape (`SPEC.body.shape`).
    let message = body.output?.0.message?;
    if body.has_type || body.object.as_ref().is_some_and(Value::is_string) {
        return None;
    }
    let (role, content) = match message {
        Some(Obj(m)) => (m.role, m.content.unwrap_or_default()),
        None => (None, Vec::new()),
    };
    let mut out = Vec::with_capacity(content.len() * 3 + 3);
    let role = role.unwrap_or_else(|| Str("assistant".into()));
    push(&mut out, "messageStart", None, |p| p.role = Some(role))?;
    for (i, Obj(b)) in content.into_iter().enumerate() {
        block(i, b, &mut out)?;
    }
    let stop_reason = body.stop_reason;
    push(&mut out, "messageStop", None, |p| p.stop_reason = stop_reason)?;
    let _ = body.additional_model_response_fields;
    let has_metadata = body.usage.is_some()
        || body.metrics.is_some()
        || body.trace.is_some()
        || body.performance_config.is_some();
    if has_metadata {
        let usage = body.usage;
        push(&mut out, "metadata", None, |p| p.usage = usage)?;
    }
    Some(out)
}

/// Reads `text` (the event `input`) as a whole Bedrock `Converse` body into
/// `asm`, if it is one this path reads exactly as the reference does; `None`
/// (nothing changed) otherwise.
pub(super) fn feed(
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
    let body: Body<'_> = match scanned_text(input, text).and_then(scanned::body) {
        Some(body) => body,
        None if !typed_decode() => return None,
        None => match input {
            Input::Text(t) => serde_json::from_str(t).ok()?,
            _ => serde_json::from_slice(text).ok()?,
        },
    };
    let mut events = events(body)?;
    // Applied where they lie (by reference, not moved out of the list).
    let applied = apply_whole(
        asm,
        Dialect::Bedrock,
        BODY,
        events.iter_mut(),
        live.as_deref_mut(),
        |asm, (name, p), l| {
            if !matches!(&asm.state, Some(crate::providers::DialectState::Bedrock(_))) {
                return None;
            }
            let applied = State::event(&mut asm.stream, None, name, p, l);
            Some(applied.map_err(|f| (f, String::new())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}
