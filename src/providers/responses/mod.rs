//! OpenAI Responses API streaming events (also Azure, and Open Responses servers
//! such as LM Studio). Calls are keyed by `output_index` (or `item_id`); the
//! call's id is its `call_id`, and the item id is kept as provider state (Q23).
//! The `done` events restate the arguments: they check the deltas and win on
//! a mismatch (Q10).
//!
//! Every kind of output item is accounted for (Q27, Q28): function calls and
//! the client tools that are not JSON functions (`custom_tool_call`, whose
//! input is free-form text, `computer_call`, `local_shell_call`, `shell_call`,
//! `apply_patch_call`) are calls for the client; the
//! built-in tools the provider runs (`web_search_call`, `file_search_call`,
//! `code_interpreter_call`, `image_generation_call`, `mcp_call`,
//! `mcp_list_tools`, `tool_search_call`, `program`, …) are server-side calls,
//! with their results as tool-result blocks. An `mcp_approval_request` asks the
//! client to approve a call the provider runs (Q60): it is kept whole like a
//! server-side call (never a call for the client to run or validate), with
//! its kind naming it an approval request. Events carry a `sequence_number`:
//! a resent one is skipped, a gap or a reordering is a problem (Q33).

mod body;
pub(super) mod carrying;
mod direct;
mod fast;
mod guard;
mod ids;
mod items;
mod replays;
mod restated;
mod snapshot;
mod wire;
mod xai;

use wire::*;

#[cfg(test)]
pub(super) use fast::{fast_path_agrees, memo_agrees, memo_parts};

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::json::{json_string, text, Loose};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, BlockPhase, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, Offer, ResponseFields, Spec};
use super::state::{
    provider_error, violation, Fail, Live, Opening, Src, Stream, TextKind, NS_REASONING,
    NS_REFUSAL, NS_TEXT, NS_TOOL, R,
};
use super::{common, scan, Input, NoteKind, ProblemKind, Rule};
use crate::accumulate::ThinkingFragment;
use crate::blocks::{Block, ToolResultBlock, CUSTOM};

const FORMAT: &str = "openai-responses";
/// The provider state of a non-function call: the whole output item.
const ITEM_FORMAT: &str = "openai-responses-item";

/// The protocol of a response.
const PROTOCOL: Protocol = Protocol {
    subject: "the response",
    start: &["response.created"],
    open: &["response.output_item.added"],
    add: &[
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
    ],
    stop: &[
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.done",
        "response.output_item.done",
    ],
    stopped_positions: &[NS_TOOL],
    ends: &[
        ("response.completed", Ends::ByReason),
        ("response.incomplete", Ends::Abnormal),
        ("response.failed", Ends::Failed),
    ],
    end_label: "the response's final event",
    after_end: AfterEnd::Only(&[]),
    reading: Reading::AS_ASSEMBLED,
    // A response with calls ends `completed`, like one of text.
    calls_finish: &[],
};

const HANDLED: [&str; 18] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.error",
];

/// Client tools that are not JSON functions (Q28), by item type.
const CLIENT_ITEMS: [&str; 5] = [
    "computer_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    CUSTOM,
];

/// Built-in tools the provider runs itself (Q27), by item type; the last four
/// are xAI's item types for its own tools.
const SERVER_ITEMS: [&str; 14] = [
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
    "tool_search_call",
    "program",
    "web_fetch_call",
    "x_search_call",
    "code_execution_call",
    "view_image_call",
    "view_x_video_call",
    // Q60: run by the provider once the client approves (`APPROVAL_KINDS`).
    "mcp_approval_request",
];

/// Item fields that are the call's result rather than its input.
const RESULT_FIELDS: [&str; 6] = ["result", "results", "output", "outputs", "tools", "error"];
/// Item fields that are neither input nor result.
const BOOKKEEPING: [&str; 4] = ["type", "id", "call_id", "status"];

/// One response per stream: choice 0.
const C: i64 = 0;

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State {
    /// item id → output index, for events that name only the item.
    items: BTreeMap<String, i64>,
    /// The last summary part seen per reasoning item (parts are joined by a blank line).
    summary_part: BTreeMap<i64, i64>,
    /// The highest `sequence_number` seen (Q33).
    last_seq: Option<u64>,
    /// Sequence numbers skipped over by a gap, not seen yet.
    missing: BTreeSet<u64>,
    /// Output index → how many bytes of the call's `done` arguments the deltas
    /// after that `done` have replayed (Q44); until the item's own end.
    #[serde(default)]
    args_done: BTreeMap<i64, usize>,
    /// Output indexes whose arguments were done before `output_item.added` (Q44).
    #[serde(default)]
    done_early: BTreeSet<i64>,
    /// The response's model, from `response.created` (Q47).
    #[serde(default)]
    model: Option<String>,
    /// Output index → the item id the first event of that call named.
    #[serde(default)]
    item_at: BTreeMap<i64, String>,
    /// The id of the stream's response, from its first `response.*` event (Q54).
    #[serde(default)]
    response_id: Option<String>,
    /// Output indexes of the calls announced by `output_item.added` whose
    /// `output_item.done` has not come: where a fresh `item_id` is rotation (Q59).
    #[serde(default)]
    open_items: BTreeSet<i64>,
    /// The fast path's memo (a cache of the scan, never saved; boxed, as
    /// the other dialects' states are small).
    #[serde(skip)]
    memo: Box<scan::Memo<fast::Facts>>,
    /// The call the last event, a delta, named (`delta_call`): its output
    /// index, item id and key; dropped by every other event (never saved).
    #[serde(skip)]
    last_delta: Box<Option<LastDelta>>,
    /// The text each call's arguments were last restated in (a cache of
    /// the fast path, never saved; see `restated.rs`).
    #[serde(skip)]
    said: Vec<restated::Said>,
}

/// The call the last event, a delta, named: its output index, item id and key.
type LastDelta = (i64, String, i64);

/// True for the progress events of hosted tools and other events that carry
/// nothing toolstitch keeps (`response.content_part.added`,
/// `response.web_search_call.searching`, …).
fn is_progress(kind: &str) -> bool {
    const KNOWN: [&str; 9] = [
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    ];
    if KNOWN.contains(&kind) {
        return true;
    }
    let Some(rest) = kind.strip_prefix("response.") else {
        return false;
    };
    let family = rest.split('.').next().unwrap_or_default();
    family.ends_with("_call")
        || family.contains("_call_")
        || family.starts_with("mcp_")
        || family == "program"
}

impl State {
    fn output_index(&self, ev: &Event<'_>) -> Option<i64> {
        ev.output_index.map(|i| i.0).or_else(|| {
            ev.item_id
                .as_deref()
                .and_then(|id| self.items.get(id).copied())
        })
    }

    /// The call at an output index; `id` (the `call_id`) and `name` are added
    /// when given. `start` is an `output_item.added` event: it opens the call, a
    /// second time is a block opened twice (Q25). Any other event for a call no
    /// item announced yet opens it implicitly (its `added` may still come).
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        s: &mut Stream,
        oi: Option<i64>,
        item_id: &str,
        (id, name): (&str, &str),
        kind: Option<&str>,
        start: bool,
        live: &mut Live<'_>,
    ) -> R<i64> {
        let oi = oi.unwrap_or(-1);
        if self.same_item(oi, item_id)? {
            let key = s.choice(C)?.call_at((NS_TOOL, oi, 0));
            let noted = s.choice(C)?.notes.iter().any(|n| {
                n.kind == NoteKind::ItemIdRotated && (n.call.is_none() || n.call == key)
            });
            if !noted {
                let first = self.item_at.get(&oi).cloned().unwrap_or_default();
                s.note(
                    C,
                    NoteKind::ItemIdRotated,
                    key,
                    format!(
                        "events of the item {first:?} at output index {oi} name item ids never \
                         seen before ({item_id:?}, …): read as that item, by its output index"
                    ),
                );
            }
        }
        let src: Src = (NS_TOOL, oi, 0);
        let ch = s.choice(C)?;
        let existing = ch.call_at(src);
        let has_state =
            existing.is_some_and(|k| ch.tools.get(k).is_some_and(|b| b.provider_state.is_some()));
        let state = (!item_id.is_empty() && !has_state).then(|| json_string(item_id));
        let state = state.as_deref().map(|st| (st, FORMAT));
        if !item_id.is_empty() && !self.items.contains_key(item_id) {
            self.items.insert(item_id.to_owned(), oi);
        }
        match existing {
            Some(k) if !start => {
                if !id.is_empty() || !name.is_empty() || state.is_some() {
                    s.add_to_call(C, k, id, name, "", state, live)?;
                }
                Ok(k)
            }
            _ => {
                let opening = Opening {
                    provider_index: Some(oi),
                    src: Some(src),
                    id,
                    name,
                    state,
                    kind,
                    implicit: !start,
                    ..Opening::default()
                };
                s.new_call(C, opening, live)
            }
        }
    }

    pub(crate) fn apply(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let mut ev = Event::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => {
                let held = restated::Held::of(s, &self.said);
                fast::scan_text(&mut self.memo, t, &mut ev, held)
            }
            _ => false,
        };
        let found = ev.restated.or(ev.item.as_ref().and_then(|i| i.restated));
        restated::remember(&mut self.said, s, found);
        if !fast {
            ev = match input.parse_typed(event_name, &HANDLED)? {
                Ok(ev) => ev,
                Err(unread) => {
                    *self.last_delta = None;
                    self.check_carried(s, &unread, input)?;
                    if !is_progress(&unread) {
                        s.unknown(&unread);
                    }
                    return Ok(());
                }
            };
            common::note_named(s, input, &ev, fast::common);
        }
        self.apply_event(s, event_name, &mut ev, fast, input, None, live)
    }

    /// Applies one decoded event (by reference: it is not copied on the way;
    /// what an arm keeps is taken out of it). `fast`: the fast path served it (no
    /// snapshot to check). `snapshot`: the calls a `response.completed` holds,
    /// when its reader has them typed already (else they are read from `input`).
    #[allow(clippy::too_many_arguments)]
    fn apply_event(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        ev: &mut Event<'_>,
        fast: bool,
        input: Input<'_>,
        snapshot: Option<&[snapshot::SnapshotCall<'_>]>,
        live: &mut Live<'_>,
    ) -> R {
        let kind = ev.kind.as_deref().or(event_name).unwrap_or_default();
        let last_delta = self.last_delta.take();
        self.same_response(s, kind, ev.response.as_ref(), ev.sequence_number)?;
        if let Some(n) = ev.sequence_number {
            if !self.in_sequence(s, kind, n) {
                return Ok(());
            }
        }
        // Q61, for the events the sequence numbers let through (a resend with
        // its own number again stays Q33's, skipped).
        if let Some(Loose::Str(nonce)) = &ev.obfuscation {
            if !nonce.is_empty() {
                s.fresh_nonce(nonce)?;
            }
        }
        s.may_follow(C, kind)?;
        let oi = self.output_index(ev);
        let ci = ev.content_index.map_or(0, |i| i.0);
        match kind {
            "response.created" => {
                s.start(C)?;
                self.remember_model(ev.response.as_ref());
            }
            "response.in_progress" | "response.queued" => {
                s.choice(C)?;
                self.remember_model(ev.response.as_ref());
            }
            "response.output_item.added" | "response.output_item.done" => {
                let Some(item) = ev.item.take() else {
                    return Ok(());
                };
                self.item(s, kind, oi, &item, input, live)?;
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let custom = kind.starts_with("response.custom");
                let item_id = text(&ev.item_id);
                let kind = custom.then_some(CUSTOM);
                let (key, hit) = self.delta_call(s, oi, item_id, kind, last_delta, live)?;
                let delta = text(&ev.delta);
                if self.stale_delta(s, oi, key, delta)? {
                    return Ok(());
                }
                s.add_to_call(C, key, "", "", delta, None, live)?;
                self.remember_delta(s, oi, item_id, key, hit);
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let custom = kind.starts_with("response.custom");
                let key = self.call(
                    s,
                    oi,
                    text(&ev.item_id),
                    ("", text(&ev.name)),
                    custom.then_some(CUSTOM),
                    false,
                    live,
                )?;
                let restated = if custom { &ev.input } else { &ev.arguments };
                if let Some(args) = restated {
                    s.replace_input(C, key, args, live)?;
                } else if let Some(found) = ev.restated {
                    found.replace(s, key, live)?;
                }
                let oi_key = oi.unwrap_or(-1);
                self.args_done.entry(oi_key).or_insert(0);
                if implicit(s, key) {
                    // Q44: done before the item was announced; the item's
                    // `added` completes the call.
                    if self.done_early.insert(oi_key) {
                        s.note(
                            C,
                            NoteKind::ArgumentsDoneEarly,
                            Some(key),
                            format!(
                                "{kind} came before output_item.added for output item \
                                 {oi_key}: the call is as its done text says"
                            ),
                        );
                    }
                } else {
                    // The arguments' own end stops the call's block as well as
                    // the item's end does.
                    s.item_done(C, key, live);
                }
            }
            "response.output_text.delta" => {
                let src = (NS_TEXT, oi.unwrap_or(-1), ci);
                s.text(C, TextKind::Text, Some(src), text(&ev.delta), false, live)?;
            }
            "response.refusal.delta" => {
                let src = (NS_REFUSAL, oi.unwrap_or(-1), ci);
                s.text(
                    C,
                    TextKind::Refusal,
                    Some(src),
                    text(&ev.delta),
                    false,
                    live,
                )?;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let oi = oi.unwrap_or(-1);
                let delta = text(&ev.delta);
                let mut joined = None;
                if kind == "response.reasoning_summary_text.delta" {
                    let part = ev.summary_index.map_or(0, |i| i.0);
                    let previous = self.summary_part.insert(oi, part);
                    if previous.is_some_and(|p| p != part) {
                        joined = Some(format!("\n\n{delta}"));
                    }
                }
                let frag = ThinkingFragment {
                    thinking: joined.as_deref().unwrap_or(delta),
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some((NS_REASONING, oi, 0)), frag, false, live)?;
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.said.clear();
                if kind == "response.completed" {
                    match snapshot {
                        Some(calls) => self.check_calls(s, kind, calls)?,
                        None => self.check_carried(s, kind, input)?,
                    }
                }
                let response = ev.response.take();
                let (status, usage, reason, error) = match response {
                    Some(r) => (
                        r.status,
                        r.usage,
                        r.incomplete_details.and_then(|d| d.reason),
                        r.error,
                    ),
                    None => (None, None, None, None),
                };
                if let Some(u) = usage {
                    s.merge_usage(u);
                }
                let short = kind.trim_start_matches("response.");
                let finish = match kind {
                    "response.incomplete" => reason.or(status).unwrap_or_else(|| short.to_owned()),
                    _ => status.unwrap_or_else(|| short.to_owned()),
                };
                s.set_finish_reason(C, &finish)?;
                if kind == "response.completed" {
                    s.end(C, live)?;
                } else {
                    s.end_abnormal(C, live)?;
                }
                if kind == "response.failed" {
                    let err = error.filter(|e| !e.is_null()).unwrap_or(Value::Null);
                    let mut fail = provider_error(&err);
                    if let Fail::Provider { message, .. } = &mut fail {
                        if err.is_null() {
                            "the response failed".clone_into(message);
                        }
                    }
                    return Err(fail);
                }
            }
            "error" | "response.error" => {
                let mut err = Map::new();
                for (k, v) in [("code", ev.code.take()), ("message", ev.message.take())] {
                    if let Some(v) = v {
                        err.insert(k.to_owned(), v);
                    }
                }
                return Err(provider_error(&Value::Object(err)));
            }
            other => {
                // An event the fast path served carries no snapshot.
                if !fast {
                    self.check_carried(s, other, input)?;
                }
                if !is_progress(other) {
                    s.unknown(other);
                }
            }
        }
        Ok(())
    }
}

/// True while a call was opened by its fragments and its item not announced yet.
fn implicit(s: &mut Stream, key: i64) -> bool {
    s.existing(C).is_some_and(|ch| {
        ch.meta(key)
            .and_then(|m| ch.segments.get(m.seg))
            .is_some_and(|seg| seg.phase == BlockPhase::Implicit)
    })
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["input_tokens"]),
        output_tokens: count(u, &["output_tokens"]),
        total_tokens: count(u, &["total_tokens"]),
        reasoning_tokens: count(u, &["output_tokens_details", "reasoning_tokens"]),
        cached_input_tokens: count(u, &["input_tokens_details", "cached_tokens"]),
    }
}

impl Adapter for State {
    fn read_body(body: super::body::Body<'_, '_>) -> Option<Result<(), super::Error>> {
        direct::feed(body.asm, body.event_name, body.input, body.text, body.live)
    }

    fn surely_event(text: &[u8]) -> bool {
        scan::enabled() && direct::surely_event(text)
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
        let (text, name) = (offer.text, offer.event_name);
        let mut ev = Event::default();
        if !fast::fill(&self.memo, text, &mut ev) {
            return self.feed_carrying(offer);
        }
        let (s, live) = offer.ready();
        Some(self.apply_event(s, name, &mut ev, true, Input::Text(text), None, live))
    }

    fn feed_common(
        &mut self,
        s: &mut Stream,
        name: Option<&str>,
        facts: (scan::Facts, Option<&str>),
        piece: &str,
        stamp: crate::providers::common::Stamp<'_>,
        live: &mut Live<'_>,
    ) -> Option<R> {
        Some(self.apply_common(s, name, facts, piece, stamp, live))
    }
}

pub(crate) const SPEC: Spec = Spec {
    name: "openai-responses",
    untyped_event: "",
    hints: Hints {
        event_names: &[],
        event_prefix: Some("response."),
        exception_suffix: None,
        error_event: Some(("error", false)),
        shape: |_| false,
    },
    body: Some(BodySpec {
        label: "Responses `response`",
        marker: b"\"response\"",
        shape: |obj| {
            !obj.contains_key("type")
                && obj.get("object").and_then(Value::as_str) == Some("response")
        },
        tree: |t| t.str_member("object") == Some("response"),
        events: body::events,
    }),
    tokens,
    protocol: PROTOCOL,
    state_formats: &[FORMAT, ITEM_FORMAT],
    client_items: &CLIENT_ITEMS,
    server_items: &SERVER_ITEMS,
    response: ResponseFields {
        id: &["/response/id", "/id"],
        model: &["/response/model", "/model"],
    },
    guard: guard::GUARD,
};

#[cfg(test)]
mod body_tests;
