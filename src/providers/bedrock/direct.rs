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

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::body::ConverseToolUse;
use super::{Delta, Payload, Reasoning, Start, State, ToolUseDelta, ToolUseStart};
use crate::providers::body::{apply_whole, end_whole, Obj};
use crate::providers::json::{present, Index, Str};
use crate::providers::{Assembler, Dialect, Error, Input, LiveEvent};

/// What the reference names the body in errors (its events have no type).
const BODY: &str = "Bedrock Converse body";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(borrow, default)]
    output: Option<Obj<Output<'a>>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
    // Values, as the reference decodes them (a number a float cannot hold
    // is refused in them), though no event reads them.
    #[serde(default)]
    additional_model_response_fields: Option<Value>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    metrics: Option<Value>,
    #[serde(default)]
    trace: Option<Value>,
    #[serde(default)]
    performance_config: Option<Value>,
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
    tool_use: Option<ConverseToolUse>,
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

/// One event: its name and its bare payload.
type Event<'a> = (&'static str, Payload<'a>);

fn at<'a>(i: usize) -> Option<Payload<'a>> {
    Some(Payload {
        content_block_index: Some(Index(i64::try_from(i).ok()?)),
        ..Payload::default()
    })
}

fn delta<'a>(i: usize, d: Delta<'a>) -> Option<Event<'a>> {
    Some((
        "contentBlockDelta",
        Payload {
            delta: Some(d),
            ..at(i)?
        },
    ))
}

/// A member of a `toolUse` start as the reference's payload reads it: absent
/// or `null`, or a string (else the body is left to the reference).
fn member(start: &Map<String, Value>, key: &str) -> Option<Option<Str<'static>>> {
    match start.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(Str(s.clone().into()))),
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
            tool_use_id: member(&tool.start, "toolUseId")?,
            name: member(&tool.start, "name")?,
            kind: member(&tool.start, "type")?,
        };
        out.push((
            "contentBlockStart",
            Payload {
                start: Some(Start {
                    tool_use: Some(start),
                    tool_result: None,
                }),
                ..at(i)?
            },
        ));
        let input = tool.input.map_or_else(|| "{}".to_owned(), |c| c.0);
        out.push(delta(
            i,
            Delta {
                tool_use: Some(ToolUseDelta {
                    input: Some(Str(input.into())),
                }),
                ..Delta::default()
            },
        )?);
    } else if let Some(text) = b.text {
        out.push(delta(
            i,
            Delta {
                text: Some(text),
                ..Delta::default()
            },
        )?);
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
            out.push(delta(i, reasoning(Some(text), None))?);
            if let Some(sig) = t.signature.filter(|s| !s.is_empty()) {
                out.push(delta(i, reasoning(None, Some(sig)))?);
            }
        }
    } else {
        return None;
    }
    out.push(("contentBlockStop", at(i)?));
    Some(())
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
    out.push((
        "messageStart",
        Payload {
            role: Some(role.unwrap_or_else(|| Str("assistant".into()))),
            ..Payload::default()
        },
    ));
    for (i, Obj(b)) in content.into_iter().enumerate() {
        block(i, b, &mut out)?;
    }
    out.push((
        "messageStop",
        Payload {
            stop_reason: body.stop_reason,
            ..Payload::default()
        },
    ));
    let _ = body.additional_model_response_fields;
    let has_metadata = body.usage.is_some()
        || body.metrics.is_some()
        || body.trace.is_some()
        || body.performance_config.is_some();
    if has_metadata {
        out.push((
            "metadata",
            Payload {
                usage: body.usage,
                ..Payload::default()
            },
        ));
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
    let body: Body<'_> = match input {
        Input::Text(t) => serde_json::from_str(t).ok()?,
        _ => serde_json::from_slice(text).ok()?,
    };
    let events = events(body)?;
    let applied = apply_whole(
        asm,
        Dialect::Bedrock,
        BODY,
        events,
        live.as_deref_mut(),
        |asm, (name, mut p), l| {
            if !matches!(&asm.state, Some(crate::providers::DialectState::Bedrock(_))) {
                return None;
            }
            let applied = State::event(&mut asm.stream, None, name, &mut p, l);
            Some(applied.map_err(|f| (f, String::new())))
        },
    )?;
    if let Err(e) = applied {
        return Some(Err(e));
    }
    Some(end_whole(asm, BODY, event_name, input, live))
}
