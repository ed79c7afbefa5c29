//! Cohere v2 chat streaming events (`message-start`, `content-*`,
//! `tool-plan-delta`, `tool-call-start` / `-delta` / `-end`, `message-end`).
//! The event type is the JSON `type`, or the SSE event name when that is absent.
//! The tool plan is kept as a thinking block.

mod body;
mod direct;
mod fast;
mod guard;

#[cfg(test)]
pub(super) use fast::{fast_path_agrees, memo_agrees, memo_parts};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{text, Index, ObjectOnly, Str};
use super::outcome::{count, first, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, ResponseFields, Spec};
use super::state::{usage_map, Live, Opening, Src, Stream, TextKind, NS_BLOCK, NS_PLAN, NS_TOOL, R};
use super::scan::Facts;
use super::{common, scan, Input, NoteKind};
use crate::accumulate::ThinkingFragment;

/// The protocol of a message.
const PROTOCOL: Protocol = Protocol {
    subject: "the message",
    start: &["message-start"],
    open: &["content-start", "tool-call-start"],
    add: &["content-delta", "tool-call-delta", "tool-plan-delta"],
    stop: &["content-end", "tool-call-end"],
    stopped_positions: &[NS_BLOCK, NS_TOOL],
    ends: &[("message-end", Ends::ByReason)],
    end_label: "message-end",
    after_end: AfterEnd::Only(&[]),
    reading: Reading::AS_ASSEMBLED,
    // `finish_reason: "TOOL_CALL"`: the model stopped for the client's calls.
    calls_finish: &["TOOL_CALL"],
};

const HANDLED: [&str; 9] = [
    "message-start",
    "content-start",
    "content-delta",
    "content-end",
    "tool-plan-delta",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
    "message-end",
];

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<Index>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    message: Option<Msg<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    /// A body's usage as the text its scanner certified (`direct.rs`),
    /// merged as `usage` is (never read from an event).
    #[serde(skip)]
    usage_text: Option<&'a str>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Msg<'a> {
    /// An object in `content-*` events; `[]` in `message-start`.
    #[serde(borrow, default)]
    content: ObjectOnly<ContentPart<'a>>,
    #[serde(borrow, default)]
    tool_plan: Option<Str<'a>>,
    /// One object in `tool-call-*` events; `[]` in `message-start`.
    #[serde(borrow, default)]
    tool_calls: ObjectOnly<Call<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct ContentPart<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Str<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Call<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
}

/// One message per stream: choice 0.
const C: i64 = 0;

/// Events of the dialect that carry nothing toolstitch keeps.
const IGNORED: [&str; 3] = ["citation-start", "citation-end", "debug"];

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State;

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
        if !fast {
            match input.parse_typed(event_name, &HANDLED)? {
                Ok(general) => {
                    ev = general;
                    common::note(s, input, &ev, fast::delta_common);
                }
                Err(unread) => {
                    s.unknown(&unread);
                    return Ok(());
                }
            }
        }
        self.event(s, event_name, ev, live)
    }

    /// Applies a decoded event (from either path, or the memo's common event).
    fn event(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        ev: Event<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let kind = ev.kind.as_deref().or(event_name).unwrap_or_default();
        s.may_follow(C, kind)?;
        let i = ev.index.map_or(0, |i| i.0);
        let (message, finish_reason, usage, usage_text) = match ev.delta {
            Some(d) => (d.message, d.finish_reason, d.usage, d.usage_text),
            None => (None, None, None, None),
        };
        let (content, plan, call) = match message {
            Some(m) => (m.content.0, m.tool_plan, m.tool_calls.0),
            None => (None, None, None),
        };
        match kind {
            "message-start" => s.start(C)?,
            "content-start" | "content-delta" => {
                let src = (NS_BLOCK, i, 0);
                let create = kind == "content-start";
                if create {
                    s.fresh(C, src)?;
                }
                let Some(part) = content else {
                    return Ok(());
                };
                if part.kind.as_deref() == Some("thinking") || part.thinking.is_some() {
                    let frag = ThinkingFragment {
                        thinking: text(&part.thinking),
                        ..ThinkingFragment::default()
                    };
                    s.thinking(C, Some(src), frag, create, live)?;
                } else {
                    s.text(C, TextKind::Text, Some(src), text(&part.text), create, live)?;
                }
            }
            "content-end" => s.stop_block(C, (NS_BLOCK, i, 0), live)?,
            "tool-plan-delta" => {
                let frag = ThinkingFragment {
                    thinking: text(&plan),
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some((NS_PLAN, 0, 0)), frag, false, live)?;
            }
            "tool-call-start" | "tool-call-delta" => {
                let src = (NS_TOOL, i, 0);
                let (id, name, args) = call.as_ref().map_or(("", "", ""), |c| {
                    let (n, a) = c
                        .function
                        .as_ref()
                        .map_or(("", ""), |f| (text(&f.name), text(&f.arguments)));
                    (text(&c.id), n, a)
                });
                if kind == "tool-call-start" {
                    let opening = Opening {
                        provider_index: Some(i),
                        src: Some(src),
                        id,
                        name,
                        input: args,
                        ..Opening::default()
                    };
                    s.new_call(C, opening, live)?;
                } else {
                    s.delta_to_call(C, src, id, name, args, None, live)?;
                }
            }
            "tool-call-end" => {
                null_arguments(s, (NS_TOOL, i, 0), live)?;
                s.stop_block(C, (NS_TOOL, i, 0), live)?;
            }
            "message-end" => {
                if let Some(reason) = finish_reason {
                    s.set_finish_reason(C, &reason)?;
                }
                if let Some(u) = usage {
                    s.merge_usage(u);
                }
                if let Some(t) = usage_text {
                    s.merge_usage_text(t);
                }
                // Q26: without a finish reason the message ended, but not normally.
                s.end(C, live)?;
            }
            k if IGNORED.contains(&k) => {}
            other => s.unknown(other),
        }
        Ok(())
    }
}

/// Q53: Cohere sends `arguments: "null"` for a tool without parameters. A
/// call that is otherwise complete (its id and name came, and its end) is
/// read as `{}`, with a note; `validated()` then judges `{}` against the
/// tool's schema, so a tool with required parameters still fails. Only the
/// whole input `null` is read so, and only here (other dialects keep it).
fn null_arguments(s: &mut Stream, src: Src, live: &mut Live<'_>) -> R {
    let Some(ch) = s.existing(C) else {
        return Ok(());
    };
    let Some(key) = ch.call_at(src).filter(|&k| !ch.call_closed(k)) else {
        return Ok(());
    };
    let whole = ch
        .tools
        .get(key)
        .is_some_and(|b| b.input == "null" && !b.id.is_empty() && !b.name.is_empty());
    if !whole {
        return Ok(());
    }
    s.replace_input(C, key, "{}", live)?;
    s.note(
        C,
        NoteKind::NullArgumentsEmpty,
        Some(key),
        "the call's arguments came as \"null\" (Cohere, for a tool without parameters): \
         read as {}"
            .to_owned(),
    );
    Ok(())
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: first(
            u,
            &[
                &["tokens", "input_tokens"],
                &["billed_units", "input_tokens"],
            ],
        ),
        output_tokens: first(
            u,
            &[
                &["tokens", "output_tokens"],
                &["billed_units", "output_tokens"],
            ],
        ),
        total_tokens: None,
        reasoning_tokens: None,
        cached_input_tokens: count(u, &["cached_tokens"]),
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
        fast::delta_event(&mut ev, facts, Str(piece.into()));
        Some(self.event(s, name, ev, live))
    }
}

pub(crate) const SPEC: Spec = Spec {
    name: "cohere",
    untyped_event: "",
    hints: Hints {
        event_names: &[&HANDLED, &IGNORED],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: |_| false,
    },
    body: Some(BodySpec {
        label: "Cohere chat",
        marker: b"\"finish_reason\"",
        shape: |obj| {
            !obj.contains_key("type")
                && !obj.get("object").is_some_and(Value::is_string)
                && obj.get("message").is_some_and(Value::is_object)
                && obj.contains_key("finish_reason")
        },
        tree: |t| {
            t.str_member("object").is_none()
                && t.str_member("type").is_none()
                && t.has("message")
                && t.has("finish_reason")
        },
        events: body::events,
    }),
    tokens,
    protocol: PROTOCOL,
    state_formats: &[],
    client_items: &[],
    server_items: &[],
    response: ResponseFields {
        id: &["/id"],
        model: &[],
    },
    guard: guard::GUARD,
};
