//! AWS Bedrock ConverseStream events, either as the bare payload with its
//! `:event-type` name, or wrapped (`{"contentBlockDelta": {…}}`) as boto3 yields
//! them; a bare payload without a name is recognised by its fields. The random
//! `"p"` padding field is ignored (Q22).

mod body;
#[cfg(test)]
mod agree;
#[cfg(test)]
mod body_tests;
mod direct;
mod guard;
mod parts;

#[cfg(test)]
pub(super) use agree::{fast_path_agrees, memo_agrees, memo_bytes_agree, memo_parts};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{json_string, text, CompactJson, Index, Str};
use super::scan::{self, Facts, Memoized, Scan, Seen};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, Offer, ResponseFields, Spec};
use super::state::{usage_map, Fail, Live, Opening, Stream, TextKind, NS_BLOCK, R};
use super::body::scanned_map;
use super::Input;
use parts::{scan_delta, scan_start};
use crate::accumulate::ThinkingFragment;
use crate::blocks::ToolResultBlock;

const FORMAT: &str = "bedrock";
/// The provider state of redacted reasoning: its content.
const REDACTED_FORMAT: &str = "bedrock-redacted";
/// The `toolUse` type of a tool the provider runs itself.
const SERVER_TOOL: &str = "server_tool_use";

#[derive(Debug, PartialEq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Payload<'a> {
    #[serde(default)]
    content_block_index: Option<Index>,
    #[serde(borrow, default)]
    start: Option<Start<'a>>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    #[serde(borrow, default)]
    role: Option<Str<'a>>,
    /// The text of an exception event.
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
    #[serde(borrow, default)]
    message_start: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    content_block_start: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    content_block_delta: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    content_block_stop: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    message_stop: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    metadata: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    internal_server_exception: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    model_stream_error_exception: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    validation_exception: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    throttling_exception: Option<Box<Payload<'a>>>,
    #[serde(borrow, default)]
    service_unavailable_exception: Option<Box<Payload<'a>>>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Start<'a> {
    #[serde(borrow, default)]
    tool_use: Option<ToolUseStart<'a>>,
    /// The result of a server-side tool (Q27), kept whole as provider state.
    #[serde(default)]
    tool_result: Option<CompactJson>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart<'a> {
    #[serde(borrow, default)]
    tool_use_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    /// `server_tool_use` for a tool the provider runs itself (Nova's code
    /// interpreter, Q27).
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultStart {
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_use: Option<ToolUseDelta<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Reasoning<'a>>,
    /// Output of a server-side tool, streamed into its result block.
    #[serde(default)]
    tool_result: Option<CompactJson>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct ToolUseDelta<'a> {
    #[serde(borrow, default)]
    input: Option<Str<'a>>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reasoning<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    redacted_content: Option<Str<'a>>,
}

/// The fast path of a payload's text: fills `p` (fresh) with exactly the
/// [`Payload`] the typed decode gives, or returns `None` for the general path.
/// It serves the bare payloads that make up nearly all of a stream: a text
/// or tool-input delta, a block's start (a tool call's) and stop, the
/// message's start and stop, its usage (integers). Reasoning, a tool result,
/// an exception or the boto3 wrapped shape is left to the general path. The
/// padding `"p"` is skipped as every unknown member is.
fn scan_payload<'a>(text: &'a str, p: &mut Payload<'a>) -> Option<Option<(usize, usize)>> {
    let mut s = Scan::new(text);
    let mut seen = Seen::default();
    s.object(|s, key| match key {
        "contentBlockIndex" => {
            seen.once(0)?;
            p.content_block_index = s.opt_index()?;
            Some(())
        }
        "delta" => {
            seen.once(1)?;
            if !s.null()? {
                scan_delta(s, p.delta.insert(Delta::default()))?;
            }
            Some(())
        }
        "stopReason" => {
            seen.once(2)?;
            p.stop_reason = s.opt_str()?;
            Some(())
        }
        "role" => {
            seen.once(3)?;
            p.role = s.opt_str()?;
            Some(())
        }
        "start" => {
            seen.once(4)?;
            if !s.null()? {
                p.start = Some(scan_start(s)?);
            }
            Some(())
        }
        "usage" => {
            seen.once(5)?;
            if !s.null()? {
                p.usage = Some(scanned_map(s)?);
            }
            Some(())
        }
        // Every other member the typed decode reads: the general path.
        "message"
        | "messageStart"
        | "contentBlockStart"
        | "contentBlockDelta"
        | "contentBlockStop"
        | "messageStop"
        | "metadata"
        | "internalServerException"
        | "modelStreamErrorException"
        | "validationException"
        | "throttlingException"
        | "serviceUnavailableException" => None,
        _ => s.skip(),
    })?;
    s.end()?;
    Some(s.the_hole())
}

/// The event a memo serves: a block's text (tag 0) or tool-input (tag 1)
/// delta, nothing else read (the padding is skipped, as the typed decode
/// skips it).
fn delta_payload<'a>(p: &mut Payload<'a>, (tag, index, _): Facts, piece: Str<'a>) {
    p.content_block_index = index;
    let d = p.delta.insert(Delta::default());
    if tag == 0 {
        d.text = Some(piece);
    } else {
        d.tool_use = Some(ToolUseDelta { input: Some(piece) });
    }
}

impl<'a> Memoized<'a> for Payload<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_payload(text, self)
    }
    fn facts(&self) -> Option<Facts> {
        let d = self.delta.as_ref()?;
        let (tag, piece) = match (&d.text, &d.tool_use) {
            (Some(t), None) => (0, t),
            (None, Some(ToolUseDelta { input: Some(t) })) => (1, t),
            _ => return None,
        };
        let facts = (tag, self.content_block_index, None);
        let mut again = Payload::default();
        delta_payload(&mut again, facts, piece.clone());
        (again == *self).then_some(facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        delta_payload(self, facts, piece);
    }
}

/// Bedrock has one message per stream: choice 0.
const C: i64 = 0;

/// The event a memo serves.
const DELTA: &str = "contentBlockDelta";

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State;

impl<'a> Payload<'a> {
    /// The wrapped event, if this is the boto3 shape.
    fn unwrap_event(&mut self) -> Option<(&'static str, Box<Payload<'a>>)> {
        let slots: [(&'static str, &mut Option<Box<Payload<'a>>>); 11] = [
            ("messageStart", &mut self.message_start),
            ("contentBlockStart", &mut self.content_block_start),
            ("contentBlockDelta", &mut self.content_block_delta),
            ("contentBlockStop", &mut self.content_block_stop),
            ("messageStop", &mut self.message_stop),
            ("metadata", &mut self.metadata),
            (
                "internalServerException",
                &mut self.internal_server_exception,
            ),
            (
                "modelStreamErrorException",
                &mut self.model_stream_error_exception,
            ),
            ("validationException", &mut self.validation_exception),
            ("throttlingException", &mut self.throttling_exception),
            (
                "serviceUnavailableException",
                &mut self.service_unavailable_exception,
            ),
        ];
        slots
            .into_iter()
            .find_map(|(name, slot)| slot.take().map(|p| (name, p)))
    }

    /// The event a bare payload without a name must be.
    fn infer_name(&self) -> &'static str {
        if self.delta.is_some() {
            "contentBlockDelta"
        } else if self.start.is_some() {
            "contentBlockStart"
        } else if self.stop_reason.is_some() {
            "messageStop"
        } else if self.usage.is_some() {
            "metadata"
        } else if self.role.is_some() {
            "messageStart"
        } else if self.content_block_index.is_some() {
            "contentBlockStop"
        } else {
            ""
        }
    }
}

impl State {
    pub(crate) fn apply(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        // Built in place by the fast paths, and never moved: a wrapped
        // event stays in its box.
        let mut outer = Payload::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => scan::scan_text(&mut s.memo, t, &mut outer),
            _ => false,
        };
        if !fast {
            outer = input.parse()?;
        }
        Self::payload(s, event_name, &mut outer, live)
    }

    /// Applies the event offered, which the memo made of its template's
    /// facts and a string.
    #[inline]
    fn served<T: ?Sized>(offer: Offer<'_, '_, T>, (facts, piece): (Facts, Str<'_>)) -> R {
        let event_name = offer.event_name;
        let (s, live) = offer.ready();
        // What `payload` finds in it: no wrapper, a delta (its name when the
        // transport names none).
        let name = match event_name {
            Some(n) if !n.is_empty() => n,
            _ => DELTA,
        };
        if name != DELTA {
            let mut outer = Payload::default();
            outer.fill(facts, piece);
            return Self::event(s, event_name, name, &mut outer, live);
        }
        // What `event` does with it, without the payload: a text delta (tag
        // 0) or a tool-input delta, nothing else.
        let (tag, index, _) = facts;
        let src = (NS_BLOCK, index.map_or(0, |i| i.0), 0);
        s.may_follow(C, name)?;
        s.client_block(C, src, false);
        if tag == 0 {
            s.text(C, TextKind::Text, Some(src), &piece, false, live)
        } else {
            s.input_delta(C, src, &piece, live)
        }
    }

    /// Applies one event's payload as decoded (wrapped or bare).
    #[inline]
    fn payload(
        s: &mut Stream,
        event_name: Option<&str>,
        outer: &mut Payload<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let mut wrapped = outer.unwrap_event();
        if let (Some(n), Some((w, _))) = (event_name, &wrapped) {
            // Clients that read the transport's name parse the wrapper's own
            // fields as that event's, and find none.
            s.named_as(Some(n), &format!("wrapped as {{\"{w}\": …}}"))?;
        }
        let (name, p): (&str, &mut Payload<'_>) = match (event_name, &mut wrapped) {
            (_, Some((n, p))) => (n, p),
            (Some(n), None) if !n.is_empty() => (n, outer),
            (_, None) => (outer.infer_name(), outer),
        };
        Self::event(s, event_name, name, p, live)
    }

    /// Applies one event, its payload bare: `name` is the event's, from the
    /// transport, the boto3 wrapper or the payload's fields.
    fn event(
        s: &mut Stream,
        event_name: Option<&str>,
        name: &str,
        p: &mut Payload<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let src = (NS_BLOCK, p.content_block_index.map_or(0, |i| i.0), 0);
        s.may_follow(C, name)?;
        match name {
            "contentBlockStart" | "contentBlockDelta" => s.client_block(C, src, false),
            "contentBlockStop" => s.client_block(C, src, true),
            _ => {}
        }
        match name {
            "messageStart" => s.start(C)?,
            "contentBlockStart" => {
                let Some(start) = p.start.take() else {
                    return Ok(());
                };
                if let Some(tool) = start.tool_use {
                    let server_side = tool.kind.as_deref() == Some(SERVER_TOOL);
                    let opening = Opening {
                        provider_index: Some(src.1),
                        src: Some(src),
                        id: text(&tool.tool_use_id),
                        name: text(&tool.name),
                        kind: server_side.then_some(SERVER_TOOL),
                        server_side,
                        ..Opening::default()
                    };
                    s.new_call(C, opening, live)?;
                } else if let Some(CompactJson(raw)) = start.tool_result {
                    let r: ResultStart = serde_json::from_str(&raw).unwrap_or(ResultStart {
                        tool_use_id: None,
                        kind: None,
                        status: None,
                    });
                    let result = ToolResultBlock {
                        tool_use_id: r.tool_use_id.unwrap_or_default(),
                        content: Vec::new(),
                        is_error: r.status.as_deref() == Some("error"),
                        kind: r.kind.unwrap_or_else(|| "tool_result".to_owned()),
                        provider_state: Some(raw),
                        provider_state_format: FORMAT.to_owned(),
                    };
                    s.tool_result(C, Some(src), result)?;
                } else {
                    s.unknown("contentBlockStart");
                }
            }
            "contentBlockDelta" => {
                // Read in place: the delta is not moved out of its payload.
                let Some(d) = p.delta.as_ref() else {
                    return Ok(());
                };
                if let Some(t) = &d.text {
                    s.text(C, TextKind::Text, Some(src), t, false, live)?;
                }
                if let Some(tool) = &d.tool_use {
                    s.input_delta(C, src, text(&tool.input), live)?;
                }
                if let Some(r) = &d.reasoning_content {
                    let signature = text(&r.signature);
                    let redacted = r.redacted_content.as_deref().map(json_string);
                    let frag = ThinkingFragment {
                        thinking: text(&r.text),
                        signature,
                        signature_format: if signature.is_empty() { "" } else { FORMAT },
                        provider_state: redacted.as_deref(),
                        provider_state_format: if redacted.is_some() {
                            REDACTED_FORMAT
                        } else {
                            ""
                        },
                    };
                    s.thinking(C, Some(src), frag, redacted.is_some(), live)?;
                }
                if let Some(CompactJson(result)) = &d.tool_result {
                    for piece in result_pieces(result) {
                        s.result_text(C, src, &piece)?;
                    }
                }
            }
            "contentBlockStop" => s.stop_block(C, src, live)?,
            "messageStop" => {
                if let Some(reason) = &p.stop_reason {
                    s.set_finish_reason(C, reason)?;
                }
                // Q26: without a stopReason the message ended, but not normally.
                s.end(C, live)?;
            }
            "metadata" => {
                // Q22: usage after messageStop is still recorded.
                if let Some(u) = p.usage.take() {
                    s.merge_usage(u);
                }
            }
            n if n.ends_with("Exception") => {
                return Err(Fail::Provider {
                    error_type: n.to_owned(),
                    message: p.message.take().map(|m| m.0.into_owned()).unwrap_or_default(),
                    raw: None,
                });
            }
            "" => s.unknown(event_name.unwrap_or("event")),
            other => s.unknown(other),
        }
        Ok(())
    }
}

/// The text of a streamed tool-result delta: a list of `{"text": …}` or
/// `{"json": …}` pieces (or one of them); JSON pieces are kept as their text.
fn result_pieces(delta: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(delta).unwrap_or(Value::Null);
    let items = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    items
        .iter()
        .filter_map(|item| match (item.get("text"), item.get("json")) {
            (Some(Value::String(t)), _) => Some(t.clone()),
            (_, Some(j)) => Some(j.to_string()),
            _ => None,
        })
        .collect()
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["inputTokens"]),
        output_tokens: count(u, &["outputTokens"]),
        total_tokens: count(u, &["totalTokens"]),
        reasoning_tokens: None,
        cached_input_tokens: count(u, &["cacheReadInputTokens"]),
    }
}

impl Adapter for State {
    fn read_body(body: super::body::Body<'_, '_>) -> Option<Result<(), super::Error>> {
        direct::feed(body.asm, body.event_name, body.input, body.text, body.live)
    }

    #[inline]
    fn feed(
        &mut self,
        s: &mut Stream,
        name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        self.apply(s, name, input, live)
    }

    const SERVES: bool = true;

    #[inline]
    fn feed_served(&mut self, offer: Offer<'_, '_, str>) -> Option<R> {
        let filled = offer.s.memo.fill(offer.text)?;
        Some(Self::served(offer, filled))
    }

    #[inline]
    fn feed_served_bytes(&mut self, offer: Offer<'_, '_, [u8]>) -> Option<R> {
        // A string with escapes (a tool input's fragment, mostly) is decoded
        // into the memo's buffer, not a `String` of its own.
        let Offer {
            s,
            live,
            dialect,
            event_name,
            text,
        } = offer;
        let mut spare = s.memo.take_spare();
        let applied = s.memo.fill_bytes_in(text, Some(&mut spare)).map(|filled| {
            let offer = Offer {
                s: &mut *s,
                live: &mut *live,
                dialect,
                event_name,
                text,
            };
            Self::served(offer, filled)
        });
        s.memo.keep_spare(spare);
        applied
    }
}

/// The protocol of a message.
const PROTOCOL: Protocol = Protocol {
    subject: "the message",
    start: &["messageStart"],
    open: &["contentBlockStart"],
    add: &["contentBlockDelta"],
    stop: &["contentBlockStop"],
    stopped_positions: &[NS_BLOCK],
    ends: &[("messageStop", Ends::ByReason)],
    end_label: "messageStop",
    after_end: AfterEnd::Only(&["metadata", "*Exception"]),
    reading: Reading {
        named_events: true,
        one_current_block: true,
        client_run: &[SERVER_TOOL],
        ..Reading::AS_ASSEMBLED
    },
    // `stopReason: "tool_use"`: the model stopped for the client's calls.
    calls_finish: &["tool_use"],
};

/// The event types of ConverseStream.
const EVENTS: [&str; 6] = [
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
];

/// True when an object is not tagged with a `type` or `object` of its own.
fn untagged(obj: &Map<String, Value>) -> bool {
    !obj.contains_key("type") && !obj.get("object").is_some_and(Value::is_string)
}

pub(crate) const SPEC: Spec = Spec {
    name: "bedrock",
    untyped_event: "",
    hints: Hints {
        event_names: &[&EVENTS],
        event_prefix: None,
        exception_suffix: Some("Exception"),
        error_event: None,
        shape: |obj| {
            // As boto3 yields it: one key naming the event ({"contentBlockDelta": {…}}).
            let mut keys = obj.keys().filter(|k| k.as_str() != "p");
            if let (Some(k), None) = (keys.next(), keys.next()) {
                if EVENTS.contains(&k.as_str()) || k.ends_with("Exception") {
                    return true;
                }
            }
            // A bare payload without its event name.
            let has = |k: &str| obj.contains_key(k);
            has("contentBlockIndex")
                || has("stopReason")
                || (has("p") && (has("role") || has("usage")))
        },
    },
    body: Some(BodySpec {
        label: "Bedrock Converse",
        marker: b"\"output\"",
        shape: |obj| {
            untagged(obj)
                && obj
                    .get("output")
                    .and_then(Value::as_object)
                    .is_some_and(|o| o.contains_key("message"))
        },
        tree: |t| {
            t.str_member("object").is_none() && t.str_member("type").is_none() && t.has("output")
        },
        events: body::events,
    }),
    tokens,
    protocol: PROTOCOL,
    state_formats: &[FORMAT, REDACTED_FORMAT],
    client_items: &[],
    server_items: &[SERVER_TOOL],
    response: ResponseFields {
        id: &[],
        model: &[],
    },
    guard: guard::GUARD,
};
