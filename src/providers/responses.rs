//! OpenAI Responses API streaming events (also Azure, and Open Responses servers
//! such as LM Studio). Calls are keyed by `output_index` (or `item_id`); the
//! call's id is its `call_id`, and the item id is kept as provider state (Q23).
//! The `done` events restate the arguments: they check the deltas and win on
//! a mismatch (Q10).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::json::{json_string, text, Index, Str};
use super::openai_chat::provider_error;
use super::state::{
    usage_map, Fail, Live, Src, Stream, TextKind, NS_REASONING, NS_REFUSAL, NS_TEXT, NS_TOOL, R,
};
use super::Input;
use crate::accumulate::ThinkingFragment;

const FORMAT: &str = "openai-responses";

const HANDLED: [&str; 16] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
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

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    output_index: Option<Index>,
    #[serde(default)]
    content_index: Option<Index>,
    #[serde(default)]
    summary_index: Option<Index>,
    #[serde(borrow, default)]
    item_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    delta: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    item: Option<Item<'a>>,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    encrypted_content: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "usage_map")]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// One response per stream: choice 0.
const C: i64 = 0;

#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// item id → output index, for events that name only the item.
    items: BTreeMap<String, i64>,
    /// The last summary part seen per reasoning item (parts are joined by a blank line).
    summary_part: BTreeMap<i64, i64>,
}

impl State {
    fn output_index(&self, ev: &Event<'_>) -> Option<i64> {
        ev.output_index.map(|i| i.0).or_else(|| {
            ev.item_id
                .as_deref()
                .and_then(|id| self.items.get(id).copied())
        })
    }

    /// The call at an output index, opened if no item announced it yet; `id`
    /// (the `call_id`) and `name` are added when given.
    fn call(
        &mut self,
        s: &mut Stream,
        oi: Option<i64>,
        item_id: &str,
        (id, name): (&str, &str),
        live: &mut Live<'_>,
    ) -> R<i64> {
        let oi = oi.unwrap_or(-1);
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
        if let Some(k) = existing {
            if !id.is_empty() || !name.is_empty() || state.is_some() {
                s.add_to_call(C, k, id, name, "", state, live)?;
            }
            return Ok(k);
        }
        s.new_call(C, Some(oi), Some(src), id, name, "", state, live)
    }

    pub(crate) fn feed(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let ev: Event<'_> = match input.parse() {
            Ok(ev) => ev,
            Err(f) => {
                let kind = input.self_type().or_else(|| event_name.map(str::to_owned));
                return match kind {
                    Some(k) if !HANDLED.contains(&k.as_str()) => Ok(()),
                    _ => Err(f),
                };
            }
        };
        let kind = ev.kind.as_deref().or(event_name).unwrap_or_default();
        let oi = self.output_index(&ev);
        let ci = ev.content_index.map_or(0, |i| i.0);
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                s.choice(C)?;
            }
            "response.output_item.added" | "response.output_item.done" => {
                let Some(item) = ev.item else {
                    return Ok(());
                };
                let item_id = text(&item.id);
                let oi = oi.or_else(|| self.items.get(item_id).copied());
                match item.kind.as_deref().unwrap_or_default() {
                    "function_call" => {
                        let key = self.call(
                            s,
                            oi,
                            item_id,
                            (text(&item.call_id), text(&item.name)),
                            live,
                        )?;
                        if kind == "response.output_item.done" {
                            if let Some(args) = &item.arguments {
                                s.replace_input(C, key, args, live)?;
                            }
                            s.finish_call(C, key, live);
                        } else if let Some(args) = &item.arguments {
                            s.add_to_call(C, key, "", "", args, None, live)?;
                        }
                    }
                    "reasoning" if kind == "response.output_item.done" => {
                        let signature = text(&item.encrypted_content);
                        let state = (!item_id.is_empty()).then(|| json_string(item_id));
                        let frag = ThinkingFragment {
                            signature,
                            signature_format: if signature.is_empty() { "" } else { FORMAT },
                            provider_state: state.as_deref(),
                            provider_state_format: FORMAT,
                            ..ThinkingFragment::default()
                        };
                        let src = (NS_REASONING, oi.unwrap_or(-1), 0);
                        // Only an item with something to keep becomes a block.
                        let create = !signature.is_empty() || s.choice(C)?.has_src(src);
                        if create {
                            s.thinking(C, Some(src), frag, true, live)?;
                        }
                    }
                    _ => {}
                }
                if !item_id.is_empty() {
                    if let Some(oi) = oi {
                        self.items.insert(item_id.to_owned(), oi);
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let key = self.call(s, oi, text(&ev.item_id), ("", ""), live)?;
                s.add_to_call(C, key, "", "", text(&ev.delta), None, live)?;
            }
            "response.function_call_arguments.done" => {
                let key = self.call(s, oi, text(&ev.item_id), ("", text(&ev.name)), live)?;
                if let Some(args) = &ev.arguments {
                    s.replace_input(C, key, args, live)?;
                }
                s.finish_call(C, key, live);
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
                let response = ev.response;
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
                for (k, v) in [("code", ev.code), ("message", ev.message)] {
                    if let Some(v) = v {
                        err.insert(k.to_owned(), v);
                    }
                }
                return Err(provider_error(&Value::Object(err)));
            }
            _ => {}
        }
        Ok(())
    }
}
