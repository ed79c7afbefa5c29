//! Anthropic Messages streaming events (also Claude on Vertex and Bedrock's
//! InvokeModel stream, which carry the same events).
//!
//! Server-side tools (Q27): `server_tool_use` and `mcp_tool_use` blocks are
//! calls the provider runs itself (kept, flagged server-side, with the start
//! block as provider state so they can be sent back), and every
//! `*_tool_result` block is kept as a tool-result block with its content as
//! provider state. Block types this version does not know are skipped, with
//! their deltas and stop (Q29).

mod body;
mod direct;
mod guard;

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{json_string, text, CompactJson, Index, Str};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, Spec, ResponseFields};
use super::scan::{self, Facts, Memoized, Scan, Seen};
use super::state::{
    provider_error, usage_map, Fail, Live, Opening, Src, Stream, TextKind, NS_BLOCK, R,
};
use super::{common, DecodeKind, Input};
use crate::accumulate::ThinkingFragment;
use crate::blocks::{Block, ToolResultBlock};

const FORMAT: &str = "anthropic";
/// Blocks of calls the provider runs itself (Q27).
const SERVER_BLOCKS: [&str; 2] = ["server_tool_use", "mcp_tool_use"];

/// The protocol of a message.
const PROTOCOL: Protocol = Protocol {
    subject: "the message",
    start: &["message_start"],
    open: &["content_block_start"],
    add: &["content_block_delta"],
    stop: &["content_block_stop"],
    stopped_positions: &[NS_BLOCK],
    ends: &[("message_stop", Ends::ByReason)],
    end_label: "message_stop",
    after_end: AfterEnd::Only(&["ping", "error"]),
    reading: Reading {
        named_events: true,
        blocks_by_position: true,
        ..Reading::AS_ASSEMBLED
    },
    // `stop_reason: "tool_use"`: the model stopped for the client's calls.
    calls_finish: &["tool_use"],
};

/// The event types only this dialect sends (every one it reads but `error`).
const EVENTS: &[&str] = HANDLED.split_at(7).0;

const HANDLED: [&str; 8] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    /// Boxed: only block starts have one, and the event stays small to build.
    content_block: Option<Box<ContentBlock<'a>>>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    data: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(default)]
    input: Option<CompactJson>,
    #[serde(borrow, default)]
    tool_use_id: Option<Str<'a>>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// The start event again, keeping the whole block as JSON (cold path: only
/// for server-side calls and tool results).
#[derive(Deserialize)]
struct RawStart {
    #[serde(default)]
    content_block: Option<CompactJson>,
}

/// The text parts of a tool result's `content`, when it is a list of blocks.
#[derive(Deserialize)]
struct ResultContent {
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
    #[serde(borrow, default)]
    signature: Option<Str<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Str<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Message {
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
}

/// The fast path of an event: fills `ev` (fresh) with exactly the [`Event`]
/// the typed decode gives, or returns `None` for the general path (a block start, usage, a message, an
/// error, anything [`Scan`] does not certify). It serves the deltas, stops and
/// pings that make up nearly all of a stream.
/// Gives the span of the delta's one string, if it has exactly one (what a
/// [`scan::Memo`] may vary).
fn scan_event<'a>(text: &'a str, ev: &mut Event<'a>) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "type" => {
            seen.once(0)?;
            ev.kind = p.opt_str()?;
            Some(())
        }
        "index" => {
            seen.once(1)?;
            ev.index = p.opt_index()?;
            Some(())
        }
        "delta" => {
            seen.once(2)?;
            if !p.null()? {
                scan_delta(p, ev.delta.insert(Delta::default()))?;
            }
            Some(())
        }
        // Present as `null` is absent; anything else is for the general path.
        "content_block" => seen.once(3).and_then(|()| p.null()?.then_some(())),
        "usage" => seen.once(4).and_then(|()| p.null()?.then_some(())),
        "message" => seen.once(5).and_then(|()| p.null()?.then_some(())),
        "error" => seen.once(6).and_then(|()| p.null()?.then_some(())),
        _ => p.skip(),
    })?;
    p.end()?;
    Some(p.the_hole())
}

/// The deltas a [`scan::Memo`] serves, by the tag of its facts: the delta's type.
const MEMO_DELTAS: [&str; 3] = ["input_json_delta", "text_delta", "thinking_delta"];

/// Makes `ev` (fresh) the event of the common case: a `content_block_delta`
/// whose delta is one string of one of [`MEMO_DELTAS`], and nothing else.
fn delta_event<'a>(ev: &mut Event<'a>, (tag, index, _): Facts, piece: Str<'a>) {
    let kind = MEMO_DELTAS.get(usize::from(tag)).copied().unwrap_or_default();
    ev.kind = Some(Str("content_block_delta".into()));
    ev.index = index;
    let d = ev.delta.insert(Delta::default());
    d.kind = Some(Str(kind.into()));
    *match tag {
        0 => &mut d.partial_json,
        1 => &mut d.text,
        _ => &mut d.thinking,
    } = Some(piece);
}

/// The facts and the string of an event that is exactly a [`delta_event`].
fn delta_common<'e>(ev: &'e Event<'_>) -> Option<(Facts, &'e str)> {
    let d = ev.delta.as_ref()?;
    let kind = d.kind.as_deref()?;
    let tag = MEMO_DELTAS.iter().position(|k| *k == kind)?;
    let piece = [&d.partial_json, &d.text, &d.thinking].get(tag)?.as_ref()?;
    let facts = (u8::try_from(tag).ok()?, ev.index, None);
    let mut again = Event::default();
    delta_event(&mut again, facts, piece.clone());
    (again == *ev).then_some((facts, &**piece))
}

impl<'a> Memoized<'a> for Event<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_event(text, self)
    }
    fn facts(&self) -> Option<Facts> {
        delta_common(self).map(|(facts, _)| facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        delta_event(self, facts, piece);
    }
}

/// See [`scan::memo_parts`].
#[cfg(test)]
pub(super) fn memo_parts(template: &str) -> Option<(String, String)> {
    scan::memo_parts::<Event<'_>>(template)
}

/// See [`scan::memo_agrees`].
#[cfg(test)]
pub(super) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    scan::memo_agrees::<Event<'_>>(template, text)
}


fn scan_delta<'a>(p: &mut Scan<'a>, d: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "type" => (0, &mut d.kind),
            "text" => (1, &mut d.text),
            "partial_json" => (2, &mut d.partial_json),
            "thinking" => (3, &mut d.thinking),
            "signature" => (4, &mut d.signature),
            "stop_reason" => (5, &mut d.stop_reason),
            _ => return p.skip(),
        };
        seen.once(n)?;
        // The pieces of text a memo may vary.
        *field = if matches!(n, 1..=3) {
            p.hole()?
        } else {
            p.opt_str()?
        };
        Some(())
    })
}

/// See [`scan::fast_path_agrees`].
#[cfg(test)]
pub(super) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    scan::fast_path_agrees(scan_event, text)
}

/// Anthropic has one message per stream: choice 0.
const C: i64 = 0;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State {
    /// A tool_use start's `input` when it is not `{}` (used only if no delta comes).
    start_inputs: std::collections::BTreeMap<i64, String>,
    /// Blocks of a type this version does not read: their deltas and stop are skipped.
    skipped_blocks: BTreeSet<i64>,
}

fn block_index(i: Option<Index>) -> R<Src> {
    match i {
        Some(i) => Ok((NS_BLOCK, i.0, 0)),
        None => Err(Fail::Bad {
            kind: DecodeKind::WrongType,
            detail: "field `index`: missing".to_owned(),
        }),
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
        // Built in place by the fast paths: the event is not moved on the way.
        let mut ev = Event::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => scan::scan_text(&mut s.memo, t, &mut ev),
            _ => false,
        };
        let parsed = if fast {
            Ok(Ok(()))
        } else {
            input.parse_typed(event_name, &HANDLED).map(|r| r.map(|e| ev = e))
        };
        match parsed {
            Ok(Ok(())) => {
                if !fast {
                    common::note(s, input, &ev, delta_common);
                }
            }
            Ok(Err(unread)) => {
                s.unknown(&unread);
                return Ok(());
            }
            // A block or delta of a type this version does not read may carry
            // fields of any type (Q29): skipped, not an error.
            Err(f) => match self.unknown_part(input) {
                Some(what) => {
                    let kind = input.self_type().or_else(|| event_name.map(str::to_owned));
                    s.unknown(&format!("{}:{what}", kind.unwrap_or_default()));
                    return Ok(());
                }
                None => return Err(f),
            },
        }
        self.apply_event(s, event_name, &mut ev, input, live)
    }

    /// Applies one decoded event (taken by reference: it is not copied on
    /// the way); `input` is its text, which the start of a server-side call
    /// or of a tool result keeps whole.
    fn apply_event(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        ev: &mut Event<'_>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        if let Some(own) = ev.kind.as_deref() {
            s.named_as(event_name, own)?;
        }
        let kind = ev.kind.as_deref().or(event_name).unwrap_or_default();
        s.may_follow(C, kind)?;
        match kind {
            "message_start" => {
                s.start(C)?;
                if let Some(u) = ev.message.take().and_then(|m| m.usage) {
                    s.merge_usage(u);
                }
            }
            "content_block_start" => {
                let src = block_index(ev.index)?;
                s.client_block_position(C, src.1, true);
                let Some(block) = ev.content_block.take() else {
                    return Err(Fail::Bad {
                        kind: DecodeKind::WrongType,
                        detail: "field `content_block`: missing".to_owned(),
                    });
                };
                self.block_start(s, src, *block, input, live)?;
            }
            "content_block_delta" => self.block_delta(s, ev.index, ev.delta.as_ref(), live)?,
            "content_block_stop" => {
                let src = block_index(ev.index)?;
                s.client_block_position(C, src.1, false);
                if self.skipped_blocks.remove(&src.1) {
                    return Ok(());
                }
                if let Some(key) = s.existing(C).and_then(|ch| ch.call_at(src)) {
                    let empty = s
                        .existing(C)
                        .and_then(|ch| ch.tools.get(key))
                        .is_some_and(|b| b.input.is_empty());
                    if let Some(start) = self.start_inputs.remove(&src.1) {
                        if empty {
                            s.add_to_call(C, key, "", "", &start, None, live)?;
                        }
                    }
                }
                s.stop_block(C, src, live)?;
            }
            "message_delta" => {
                if let Some(reason) = ev.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    s.set_finish_reason(C, reason)?;
                }
                if let Some(u) = ev.usage.take() {
                    s.merge_usage(u);
                }
            }
            // Q26: `message_stop` without a `stop_reason` ever sent ends the
            // message, but not normally.
            "message_stop" => {
                s.end(C, live)?;
            }
            "error" => {
                let err = ev.error.take().unwrap_or(Value::Null);
                return Err(provider_error(&err));
            }
            "ping" => {}
            other => s.unknown(other),
        }
        Ok(())
    }

    /// The type of the block or delta an unreadable event carries, when it is
    /// one this version does not read (cold path); a block's position is
    /// remembered so that its deltas and stop are skipped too.
    fn unknown_part(&mut self, input: Input<'_>) -> Option<String> {
        #[derive(Deserialize)]
        struct Typed {
            #[serde(rename = "type")]
            kind: String,
        }
        #[derive(Deserialize)]
        struct Probe {
            index: Option<Index>,
            content_block: Option<Typed>,
            delta: Option<Typed>,
        }
        const BLOCKS: [&str; 6] = [
            "text",
            "thinking",
            "redacted_thinking",
            "tool_use",
            "server_tool_use",
            "mcp_tool_use",
        ];
        const DELTAS: [&str; 5] = [
            "text_delta",
            "input_json_delta",
            "thinking_delta",
            "signature_delta",
            "citations_delta",
        ];
        let probe: Probe = input.parse().ok()?;
        if let Some(b) = probe.content_block {
            if BLOCKS.contains(&b.kind.as_str()) || b.kind.ends_with("_tool_result") {
                return None;
            }
            if let Some(i) = probe.index {
                self.skipped_blocks.insert(i.0);
            }
            return Some(b.kind);
        }
        let d = probe.delta?;
        (!DELTAS.contains(&d.kind.as_str())).then_some(d.kind)
    }

    fn block_delta(
        &mut self,
        s: &mut Stream,
        index: Option<Index>,
        delta: Option<&Delta<'_>>,
        live: &mut Live<'_>,
    ) -> R {
        let src = block_index(index)?;
        s.client_block_position(C, src.1, false);
        if self.skipped_blocks.contains(&src.1) {
            s.unknown("content_block_delta");
            return Ok(());
        }
        let Some(d) = delta else {
            return Ok(());
        };
        match d.kind.as_deref().unwrap_or_default() {
            "text_delta" => {
                s.text(C, TextKind::Text, Some(src), text(&d.text), false, live)?;
            }
            "input_json_delta" => {
                s.input_delta(C, src, text(&d.partial_json), live)?;
            }
            "thinking_delta" => {
                let frag = ThinkingFragment {
                    thinking: text(&d.thinking),
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, false, live)?;
            }
            "signature_delta" => {
                let frag = ThinkingFragment {
                    signature: text(&d.signature),
                    signature_format: FORMAT,
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, false, live)?;
            }
            // Citations are not kept; the text they cite is.
            "citations_delta" => {}
            other => s.unknown(&format!("content_block_delta:{other}")),
        }
        Ok(())
    }

    fn block_start(
        &mut self,
        s: &mut Stream,
        src: Src,
        block: ContentBlock<'_>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        if matches!(&*block.kind, "text" | "thinking" | "redacted_thinking") {
            s.fresh(C, src)?;
        }
        match &*block.kind {
            "text" => s.text(C, TextKind::Text, Some(src), text(&block.text), true, live),
            "thinking" => {
                let signature = text(&block.signature);
                let frag = ThinkingFragment {
                    thinking: text(&block.thinking),
                    signature,
                    signature_format: if signature.is_empty() { "" } else { FORMAT },
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, true, live)
            }
            "redacted_thinking" => {
                let state = json_string(text(&block.data));
                let frag = ThinkingFragment {
                    provider_state: Some(&state),
                    provider_state_format: REDACTED_FORMAT,
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, true, live)
            }
            kind @ ("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let server_side = kind != "tool_use";
                // A server-side call keeps its start block (the MCP server name,
                // …) to be sent back as it came.
                let raw = if server_side {
                    input.parse::<RawStart>()?.content_block.map(|c| c.0)
                } else {
                    None
                };
                // The start's `input` is `{}` and is not part of the input: the
                // deltas are. It is kept only for a block that gets no delta.
                let opening = Opening {
                    provider_index: Some(src.1),
                    src: Some(src),
                    id: text(&block.id),
                    name: text(&block.name),
                    state: raw.as_deref().map(|r| (r, FORMAT)),
                    kind: server_side.then_some(kind),
                    server_side,
                    ..Opening::default()
                };
                s.new_call(C, opening, live)?;
                if let Some(CompactJson(start)) = block.input {
                    if start != "{}" && !start.is_empty() {
                        self.start_inputs.insert(src.1, start);
                    }
                }
                Ok(())
            }
            kind if kind.ends_with("_tool_result") => {
                let raw = input.parse::<RawStart>()?.content_block.map(|c| c.0);
                let content = raw
                    .as_deref()
                    .and_then(|r| serde_json::from_str::<ResultContent>(r).ok())
                    .and_then(|r| r.content)
                    .map(|c| result_text(&c))
                    .unwrap_or_default();
                let result = ToolResultBlock {
                    tool_use_id: text(&block.tool_use_id).to_owned(),
                    content,
                    is_error: block.is_error.unwrap_or(false),
                    kind: kind.to_owned(),
                    provider_state: raw,
                    provider_state_format: FORMAT.to_owned(),
                };
                s.tool_result(C, Some(src), result)
            }
            other => {
                // Q29: a block type this version does not read.
                self.skipped_blocks.insert(src.1);
                s.unknown(&format!("content_block_start:{other}"));
                Ok(())
            }
        }
    }
}

/// The text blocks of a tool result's content (an MCP result's text); other
/// content stays in the result's provider state only.
fn result_text(content: &Value) -> Vec<Block> {
    match content {
        Value::String(t) => vec![Block::Text(t.clone())],
        Value::Array(items) => items
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .map(|t| Block::Text(t.to_owned()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["input_tokens"]),
        output_tokens: count(u, &["output_tokens"]),
        total_tokens: None,
        reasoning_tokens: None,
        cached_input_tokens: count(u, &["cache_read_input_tokens"]),
    }
}

impl Adapter for State {
    fn read_body(body: super::body::Body<'_, '_>) -> Option<Result<(), super::Error>> {
        direct::feed(body.asm, body.event_name, body.input, body.text, body.live)
    }

    /// A `message_start` holds the body marker; its members tell it is no body.
    fn surely_event(text: &[u8]) -> bool {
        scan::enabled() && super::detect::surely_no_body(text)
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

    fn feed_common(
        &mut self,
        s: &mut Stream,
        name: Option<&str>,
        (facts, _): (Facts, Option<&str>),
        piece: &str,
        // Never stamped: the dialect notes no stamp.
        _stamp: crate::providers::common::Stamp<'_>,
        live: &mut Live<'_>,
    ) -> Option<R> {
        let mut ev = Event::default();
        delta_event(&mut ev, facts, Str(piece.into()));
        // The event's own type is `content_block_delta`: a name that is not is refused.
        let r = s
            .named_as(name, "content_block_delta")
            .and_then(|()| s.may_follow(C, "content_block_delta"));
        Some(r.and_then(|()| self.block_delta(s, ev.index, ev.delta.as_ref(), live)))
    }
}

/// The provider state of a redacted thinking block: its `data`.
const REDACTED_FORMAT: &str = "anthropic-redacted";

pub(crate) const SPEC: Spec = Spec {
    name: "anthropic",
    untyped_event: "",
    hints: Hints {
        event_names: &[EVENTS],
        event_prefix: None,
        exception_suffix: None,
        error_event: Some(("error", true)),
        shape: |_| false,
    },
    body: Some(BodySpec {
        label: "Anthropic `message`",
        marker: b"\"message\"",
        shape: |obj| obj.get("type").and_then(Value::as_str) == Some("message"),
        tree: |t| t.str_member("type") == Some("message"),
        events: body::events,
    }),
    tokens,
    protocol: PROTOCOL,
    state_formats: &[FORMAT, REDACTED_FORMAT],
    client_items: &[],
    server_items: &SERVER_BLOCKS,
    response: ResponseFields {
        id: &["/message/id", "/id"],
        model: &["/message/model", "/model"],
    },
    guard: guard::GUARD,
};
