//! The Gemini Interactions API (`POST /v1beta/interactions`): an interaction
//! is a list of steps, streamed as `interaction.created`, then per step
//! `step.start` / `step.delta` / `step.stop` at its `index`, then
//! `interaction.completed` with the interaction's `status` and `usage`. The
//! event type is the JSON `event_type`, or the SSE event name when that is
//! absent.
//!
//! Steps: `thought` (a thinking block: its `signature` and `thought_summary`
//! deltas), `model_output` (text), `function_call` (a call for the client:
//! `id`, `name`, the arguments streamed as `arguments_delta` text; the step's
//! own `signature` is the call's provider state, format
//! `"gemini-interactions"`), the built-in `*_call` steps (calls the provider
//! runs itself, their whole `arguments` in one delta) and `*_result` steps
//! (their results, kept as tool-result blocks). `requires_action` is the
//! status of an interaction that stopped for its function calls. Every step
//! must start before its deltas and stop once; other step and delta types are
//! skipped (Q29).
//!
//! The API's other form (Q56), still sent in 2026 when steps are not enabled:
//! a body lists its blocks under `outputs` (not `steps`), and a stream sends
//! `interaction.start`, per block `content.start` (the block under `content`)
//! / `content.delta` / `content.stop` at its `index`, then
//! `interaction.complete`. Its blocks are the steps' types, with `text` for
//! `model_output`; a `function_call` delta brings the call whole (`id`,
//! `name`, `arguments` as an object). Both forms are read alike.

mod body;
mod fast;
mod guard;
mod parts;
mod wire;

#[cfg(test)]
pub(super) use fast::{fast_path_agrees, memo_agrees, memo_parts};

use parts::{as_step, is_text, joined, unknown_part, whole_names};
use wire::{Delta, Event, Step};

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::{DecodeKind, Limit, Rule};
use super::json::{json_string, text, CompactJson, Index, TextOrObject};
use super::outcome::{count, TokenUsage};
use super::protocol::{AfterEnd, Ends, Protocol, Reading};
use super::registry::{Adapter, BodySpec, Hints, Spec, ResponseFields};
use super::state::{
    provider_error, violation, Fail, Live, Opening, Src, Stream, TextKind, NS_BLOCK, R,
};
use super::{scan, Input};
use crate::accumulate::ThinkingFragment;
use crate::blocks::{Block, ToolResultBlock};

const FORMAT: &str = "gemini-interactions";

/// Steps of calls the provider runs itself.
const SERVER_CALLS: [&str; 6] = [
    "google_search_call",
    "code_execution_call",
    "url_context_call",
    "file_search_call",
    "google_maps_call",
    "mcp_server_tool_call",
];

/// Steps holding the results of those calls.
const SERVER_RESULTS: [&str; 6] = [
    "google_search_result",
    "code_execution_result",
    "url_context_result",
    "file_search_result",
    "google_maps_result",
    "mcp_server_tool_result",
];

/// The protocol of an interaction.
const PROTOCOL: Protocol = Protocol {
    subject: "the interaction",
    start: &["interaction.created", "interaction.start"],
    open: &["step.start", "content.start"],
    add: &["step.delta", "content.delta"],
    stop: &["step.stop", "content.stop"],
    stopped_positions: &[NS_BLOCK],
    ends: &[
        ("interaction.completed", Ends::ByReason),
        ("interaction.complete", Ends::ByReason),
    ],
    end_label: "interaction.completed",
    after_end: AfterEnd::Only(&[]),
    reading: Reading::AS_ASSEMBLED,
    // `status: "requires_action"`: the interaction waits for the client's calls.
    calls_finish: &["requires_action"],
};

const HANDLED: [&str; 14] = [
    "interaction.created",
    "interaction.status_update",
    "interaction.in_progress",
    "interaction.requires_action",
    "step.start",
    "step.delta",
    "step.stop",
    "interaction.completed",
    // The other form (Q56).
    "interaction.start",
    "content.start",
    "content.delta",
    "content.stop",
    "interaction.complete",
    "error",
];

/// The event types only this dialect sends (every one it reads but `error`).
const EVENTS: &[&str] = HANDLED.split_at(HANDLED.len() - 1).0;

/// One interaction per stream: choice 0.
const C: i64 = 0;

/// What a started step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Kind {
    Thought,
    Output,
    Call,
    Result,
    /// A step of a type this version does not read (Q29): its deltas are skipped.
    Other,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct StepState {
    kind: Kind,
    stopped: bool,
}

/// A built-in tool's result step, kept until its stop.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct PendingResult {
    kind: String,
    call_id: String,
    is_error: bool,
    result: Option<String>,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct State {
    /// Every step started, by its index.
    steps: BTreeMap<i64, StepState>,
    /// A call step's start `arguments` when not `{}` (used only if no delta comes).
    start_inputs: BTreeMap<i64, String>,
    /// Result steps not stopped yet.
    results: BTreeMap<i64, PendingResult>,
}

fn step_index(i: Option<Index>) -> R<i64> {
    i.map(|i| i.0).ok_or_else(|| Fail::Bad {
        kind: DecodeKind::WrongType,
        detail: "field `index`: missing".to_owned(),
    })
}

fn at(i: i64) -> Src {
    (NS_BLOCK, i, 0)
}

/// A call's signature as its provider state (the JSON string), or `None`
/// when it is empty: made only when a delta carries one, not for each delta.
fn signature_state(signature: &str) -> Option<String> {
    (!signature.is_empty()).then(|| json_string(signature))
}

/// [`State::open_step`]'s refusal (out of line): step `i` never started, or
/// it stopped.
#[cold]
#[inline(never)]
fn step_not_open(i: i64, what: &str, started: bool) -> Fail {
    if started {
        violation(
            Rule::AfterStop,
            Some(format!("step {i}")),
            format!("{what} arrived after the step stopped"),
        )
    } else {
        violation(
            Rule::WrongBlock,
            Some(format!("step {i}")),
            format!("{what} for a step that never started"),
        )
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
        let mut ev = Event::default();
        let fast = match input {
            Input::Text(t) if scan::enabled() => scan::scan_text(&mut s.memo, t, &mut ev),
            _ => false,
        };
        if !fast {
            ev = match input.parse() {
                Ok(ev) => ev,
                Err(f) => {
                    return match unknown_part(input, event_name) {
                        Some(what) => {
                            s.unknown(&what);
                            Ok(())
                        }
                        None => Err(f),
                    }
                }
            };
        }
        let kind = ev.event_type.as_deref().or(event_name).unwrap_or_default();
        s.may_follow(C, kind)?;
        match kind {
            "interaction.created" | "interaction.start" => s.start(C)?,
            // The status of a running interaction; its end carries the final one.
            "interaction.status_update" | "interaction.in_progress" | "interaction.requires_action" => {
                s.choice(C)?;
            }
            "step.start" | "content.start" => {
                let i = step_index(ev.index)?;
                let (field, step) = match kind {
                    "step.start" => ("step", ev.step),
                    _ => ("content", ev.content.map(as_step)),
                };
                let Some(step) = step else {
                    return Err(Fail::Bad {
                        kind: DecodeKind::WrongType,
                        detail: format!("field `{field}`: missing"),
                    });
                };
                self.step_start(s, i, step, live)?;
            }
            "step.delta" | "content.delta" => {
                let i = step_index(ev.index)?;
                let what = if kind == "step.delta" { "a step.delta" } else { "a content.delta" };
                let step = self.open_step(i, what)?;
                if let Some(d) = &mut ev.delta {
                    self.step_delta(s, i, step, d, live)?;
                }
            }
            "step.stop" | "content.stop" => {
                let i = step_index(ev.index)?;
                let what = if kind == "step.stop" { "a step.stop" } else { "a content.stop" };
                let step = self.open_step(i, what)?;
                self.step_stop(s, i, step, live)?;
            }
            "interaction.completed" | "interaction.complete" => {
                self.flush_results(s)?;
                let (status, usage) = match ev.interaction {
                    Some(it) => (it.status, it.usage),
                    None => (None, None),
                };
                if let Some(status) = status {
                    s.set_finish_reason(C, &status)?;
                }
                if let Some(u) = usage {
                    s.merge_usage(u);
                }
                // Q26: an interaction that ends without its status is not complete.
                s.end(C, live)?;
            }
            "error" => return Err(provider_error(&ev.error.unwrap_or(Value::Null))),
            other => s.unknown(other),
        }
        Ok(())
    }

    /// The step at `i` for a delta or a stop: it must have started and not stopped.
    #[inline]
    fn open_step(&self, i: i64, what: &str) -> R<Kind> {
        match self.steps.get(&i) {
            Some(st) if !st.stopped => Ok(st.kind),
            st => Err(step_not_open(i, what, st.is_some())),
        }
    }

    fn step_start(&mut self, s: &mut Stream, i: i64, step: Step<'_>, live: &mut Live<'_>) -> R {
        let src = at(i);
        if self.steps.contains_key(&i) {
            return Err(violation(
                Rule::OpenedTwice,
                Some(format!("step {i}")),
                "a step.start for a step that was already started",
            ));
        }
        let max = s.limits.max_blocks;
        if self.steps.len() >= max {
            return Err(Fail::Limit {
                limit: Limit::MaxBlocks,
                max,
                would_be: max.saturating_add(1),
                target: "steps of one interaction".to_owned(),
            });
        }
        let signature = text(&step.signature);
        let kind = match &*step.kind {
            "thought" => {
                s.fresh(C, src)?;
                let summary = joined(step.summary.as_deref());
                let frag = ThinkingFragment {
                    thinking: &summary,
                    signature,
                    signature_format: if signature.is_empty() { "" } else { FORMAT },
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, true, live)?;
                Kind::Thought
            }
            "model_output" => {
                s.fresh(C, src)?;
                let content = step.content.as_deref().unwrap_or_default();
                for item in content.iter().filter(|it| !is_text(it)) {
                    s.skip(&format!("model_output:{}", text(&item.kind)));
                }
                let joined = joined(Some(content));
                s.text(C, TextKind::Text, Some(src), &joined, true, live)?;
                Kind::Output
            }
            kind @ "function_call" => self.call_start(s, i, &step, kind, false, live)?,
            kind if SERVER_CALLS.contains(&kind) => self.call_start(s, i, &step, kind, true, live)?,
            kind if SERVER_RESULTS.contains(&kind) => {
                s.fresh(C, src)?;
                self.results.insert(
                    i,
                    PendingResult {
                        kind: kind.to_owned(),
                        call_id: text(&step.call_id).to_owned(),
                        is_error: step.is_error.unwrap_or(false),
                        result: step.result.map(|r| r.0),
                    },
                );
                Kind::Result
            }
            other => {
                s.choice(C)?;
                s.unknown(&format!("step.start:{other}"));
                Kind::Other
            }
        };
        self.steps.insert(
            i,
            StepState {
                kind,
                stopped: false,
            },
        );
        Ok(())
    }

    fn call_start(
        &mut self,
        s: &mut Stream,
        i: i64,
        step: &Step<'_>,
        kind: &str,
        server_side: bool,
        live: &mut Live<'_>,
    ) -> R<Kind> {
        let signature = text(&step.signature);
        // A built-in call always has state (its signature, maybe `""`): it says
        // which provider ran the call.
        let state = (server_side || !signature.is_empty()).then(|| json_string(signature));
        // A built-in call is named by its tool (`google_search`), or by its
        // own name (an MCP server's tool).
        let name = match text(&step.name) {
            "" if server_side => kind.strip_suffix("_call").unwrap_or(kind),
            n => n,
        };
        let opening = Opening {
            provider_index: Some(i),
            src: Some(at(i)),
            id: text(&step.id),
            name,
            state: state.as_deref().map(|st| (st, FORMAT)),
            kind: server_side.then_some(kind),
            server_side,
            ..Opening::default()
        };
        s.new_call(C, opening, live)?;
        // The start's `arguments` is `{}` and not part of the input: the deltas
        // are. It is kept only for a step that gets no delta.
        if let Some(CompactJson(start)) = &step.arguments {
            if start != "{}" && !start.is_empty() && start != "null" {
                self.start_inputs.insert(i, start.clone());
            }
        }
        Ok(Kind::Call)
    }

    /// A call step that started with arguments of its own (not `{}`) keeps
    /// them: a delta may restate them whole, and any other arguments are
    /// refused, naming the step (which of the two the model meant cannot be told).
    fn keeps_start(&self, i: i64, args: &str) -> R {
        match self.start_inputs.get(&i) {
            Some(start) if !args.is_empty() && args != start => Err(Fail::Bad {
                kind: DecodeKind::BadValue,
                detail: format!(
                    "step {i} started with the arguments {}, and a delta brings other \
                     arguments ({}): a delta never overrides a start's arguments",
                    super::state::cut(start, 80),
                    super::state::cut(args, 80),
                ),
            }),
            _ => Ok(()),
        }
    }

    fn step_delta(
        &mut self,
        s: &mut Stream,
        i: i64,
        step: Kind,
        d: &mut Delta<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let src = at(i);
        let dkind = d.kind.as_deref().unwrap_or_default();
        if step == Kind::Other {
            s.unknown(&format!("step.delta:{dkind}"));
            return Ok(());
        }
        let wrong = || {
            violation(
                Rule::WrongBlock,
                Some(format!("step {i}")),
                format!("a {dkind:?} delta arrived for a {} step", step.name()),
            )
        };
        let fits = match dkind {
            "text" => step == Kind::Output,
            "thought_summary" => step == Kind::Thought,
            "thought_signature" => matches!(step, Kind::Thought | Kind::Call),
            "arguments_delta" | "function_call" => step == Kind::Call,
            k if SERVER_CALLS.contains(&k) => step == Kind::Call,
            k if SERVER_RESULTS.contains(&k) => step == Kind::Result,
            _ => true,
        };
        if !fits {
            return Err(wrong());
        }
        match dkind {
            "text" => s.text(C, TextKind::Text, Some(src), text(&d.text), false, live)?,
            "thought_summary" => {
                let summary = d.content.as_ref().filter(|it| is_text(it));
                let frag = ThinkingFragment {
                    thinking: summary.map_or("", |it| text(&it.text)),
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, false, live)?;
            }
            "thought_signature" if step == Kind::Call => {
                let st = signature_state(text(&d.signature));
                let state = st.as_deref().map(|st| (st, FORMAT));
                s.delta_to_call(C, src, "", "", "", state, live)?;
            }
            "thought_signature" => {
                let signature = text(&d.signature);
                let frag = ThinkingFragment {
                    signature,
                    signature_format: if signature.is_empty() { "" } else { FORMAT },
                    ..ThinkingFragment::default()
                };
                s.thinking(C, Some(src), frag, false, live)?;
            }
            "arguments_delta" => {
                let args = match &d.arguments {
                    Some(TextOrObject::Text(t)) => t.0.as_ref(),
                    Some(TextOrObject::Object(o)) => o.as_ref(),
                    None => "",
                };
                self.keeps_start(i, args)?;
                let sig = signature_state(text(&d.signature));
                let state = sig.as_deref().map(|st| (st, FORMAT));
                s.delta_to_call(C, src, text(&d.id), "", args, state, live)?;
            }
            // The other form (Q56): the call whole, its arguments an object.
            "function_call" => {
                let args = match &d.arguments {
                    Some(TextOrObject::Object(o)) => o.as_ref(),
                    Some(TextOrObject::Text(t)) => t.0.as_ref(),
                    None => "",
                };
                self.keeps_start(i, args)?;
                let key = s.call_for_delta(C, src, live)?;
                let (id, name) = whole_names(s, i, key, text(&d.id), text(&d.name))?;
                let sig = signature_state(text(&d.signature));
                let state = sig.as_deref().map(|st| (st, FORMAT));
                s.add_to_call(C, key, id, name, args, state, live)?;
            }
            k if SERVER_CALLS.contains(&k) => {
                let key = s.call_for_delta(C, src, live)?;
                let args = match &d.arguments {
                    Some(TextOrObject::Object(o)) => o.as_ref(),
                    Some(TextOrObject::Text(t)) => t.0.as_ref(),
                    None => "",
                };
                self.keeps_start(i, args)?;
                let sig = signature_state(text(&d.signature));
                let state = sig.as_deref().map(|st| (st, FORMAT));
                s.add_to_call(C, key, text(&d.id), "", args, state, live)?;
            }
            k if SERVER_RESULTS.contains(&k) => {
                let Some(pending) = self.results.get_mut(&i) else {
                    return Err(wrong());
                };
                if let Some(CompactJson(r)) = d.result.take() {
                    s.budget(r.len(), || format!("the result of step {i}"))?;
                    pending.result = Some(r);
                }
                if let Some(id) = d.call_id.as_deref().filter(|id| !id.is_empty()) {
                    id.clone_into(&mut pending.call_id);
                }
                pending.is_error |= d.is_error.unwrap_or(false);
            }
            // Citations are not kept; the text they cite is.
            "text_annotation_delta" | "text_annotation" => {}
            other => s.unknown(&format!("step.delta:{other}")),
        }
        Ok(())
    }

    fn step_stop(&mut self, s: &mut Stream, i: i64, step: Kind, live: &mut Live<'_>) -> R {
        let src = at(i);
        match step {
            Kind::Call => {
                if let Some(key) = s.existing(C).and_then(|ch| ch.call_at(src)) {
                    let empty = s
                        .existing(C)
                        .and_then(|ch| ch.tools.get(key))
                        .is_some_and(|b| b.input.is_empty());
                    if let Some(start) = self.start_inputs.remove(&i) {
                        if empty {
                            s.add_to_call(C, key, "", "", &start, None, live)?;
                        }
                    }
                }
                s.stop_block(C, src, live)?;
            }
            Kind::Result => {
                self.flush_result(s, i)?;
                s.stop_block(C, src, live)?;
            }
            Kind::Thought | Kind::Output => s.stop_block(C, src, live)?,
            Kind::Other => {}
        }
        if let Some(st) = self.steps.get_mut(&i) {
            st.stopped = true;
        }
        Ok(())
    }

    /// A result step becomes its block (at its stop, or at the end of the
    /// interaction or stream when its stop never came).
    fn flush_result(&mut self, s: &mut Stream, i: i64) -> R {
        let Some(p) = self.results.remove(&i) else {
            return Ok(());
        };
        let content = match p.result.as_deref().map(serde_json::from_str::<Value>) {
            Some(Ok(Value::String(t))) => vec![Block::Text(t)],
            _ => Vec::new(),
        };
        let result = ToolResultBlock {
            tool_use_id: p.call_id,
            content,
            is_error: p.is_error,
            kind: p.kind,
            provider_state: p.result,
            provider_state_format: FORMAT.to_owned(),
        };
        s.tool_result(C, Some(at(i)), result)
    }

    fn flush_results(&mut self, s: &mut Stream) -> R {
        let open: Vec<i64> = self.results.keys().copied().collect();
        for i in open {
            self.flush_result(s, i)?;
        }
        Ok(())
    }
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Thought => "thought",
            Kind::Output => "model_output",
            Kind::Call => "call",
            Kind::Result => "result",
            Kind::Other => "skipped",
        }
    }
}

/// The token counts of this dialect's usage object.
pub(crate) fn tokens(u: &Map<String, Value>) -> TokenUsage {
    TokenUsage {
        input_tokens: count(u, &["total_input_tokens"]),
        output_tokens: count(u, &["total_output_tokens"]),
        total_tokens: count(u, &["total_tokens"]),
        reasoning_tokens: count(u, &["total_thought_tokens"]),
        cached_input_tokens: count(u, &["total_cached_tokens"]),
    }
}

impl Adapter for State {
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

    /// An `interaction.created` / `.completed` holds the body marker; its
    /// members tell it is no body.
    fn surely_event(text: &[u8]) -> bool {
        scan::enabled() && super::detect::surely_no_body(text)
    }

    /// A result step still open when the stream ends keeps its result (the
    /// message is not complete either way).
    fn end_of_stream(&mut self, s: &mut Stream, _live: &mut Live<'_>) -> R {
        if s.existing(C).is_some_and(|ch| ch.phase.ended()) {
            return Ok(());
        }
        self.flush_results(s)
    }
}

/// An event of this dialect: its `event_type` (a key no other dialect uses) is
/// one of its events, a later `interaction.*` / `step.*` one, or `error` with
/// its error.
fn is_event(obj: &Map<String, Value>) -> bool {
    obj.get("event_type").and_then(Value::as_str).is_some_and(|t| {
        EVENTS.contains(&t)
            || t.starts_with("interaction.")
            || t.starts_with("step.")
            || t.starts_with("content.")
            || (t == "error" && obj.contains_key("error"))
    })
}

pub(crate) const SPEC: Spec = Spec {
    name: "gemini-interactions",
    untyped_event: "",
    hints: Hints {
        event_names: &[EVENTS],
        event_prefix: None,
        exception_suffix: None,
        error_event: None,
        shape: is_event,
    },
    body: Some(BodySpec {
        label: "Gemini `interaction`",
        marker: b"\"status\"",
        shape: |obj| {
            !obj.contains_key("event_type")
                && (obj.get("object").and_then(Value::as_str) == Some("interaction")
                    || ((obj.get("steps").is_some_and(Value::is_array)
                        || obj.get("outputs").is_some_and(Value::is_array))
                        && obj.get("status").is_some_and(Value::is_string)))
        },
        tree: |t| {
            t.str_member("event_type").is_none()
                && (t.str_member("object") == Some("interaction")
                    || t.has("steps")
                    || (t.has("outputs") && t.str_member("status").is_some()))
        },
        events: body::events,
    }),
    tokens,
    protocol: PROTOCOL,
    state_formats: &[FORMAT],
    client_items: &[],
    server_items: &SERVER_CALLS,
    response: ResponseFields {
        id: &["/interaction/id", "/id"],
        model: &["/interaction/model", "/model"],
    },
    guard: guard::GUARD,
};
