//! A Responses body read straight into the message: each output item written
//! as the events its stream would have sent leave it (the call opened, its
//! arguments added, its block done; each text and reasoning part added), with
//! no event built, dispatched or numbered one by one, and without the steps
//! that, on a stream that starts with this body, change nothing (an item
//! looked up again by each of its later events, the arguments restated by
//! `.done` and by the item's end and compared, the progress events).
//!
//! It applies only where those steps surely change nothing: the first
//! response of the stream (nothing read before it), every item of a kind the
//! direct reader reads, no item id given twice. It ends where the event path
//! ends, state included (the sequence numbers, items and ids the state
//! keeps). Anything else goes on to the event path (`None`, nothing changed):
//! a stream read before, and a body whose reading fails anywhere or whose
//! restated arguments the event path would have found over `max_total_bytes`
//! (the assembler as it was before is put back first, and its live events
//! dropped), so every error and every limit is the event path's own.

use std::collections::BTreeSet;

use super::super::items::reasoning_done;
use super::super::snapshot::SnapshotCall;
use super::super::{State, C, FORMAT};
use super::{given, Body};
use crate::accumulate::ThinkingFragment;
use crate::blocks::CUSTOM;
use crate::providers::body::Room;
use crate::providers::json::{json_string, Str};
use crate::providers::state::{Live, Opening, Stream, TextKind, NS_REASONING, NS_REFUSAL, NS_TEXT, NS_TOOL, R};
use crate::providers::{Assembler, Dialect, DialectState, LiveEvent};

/// Reads `body` into `asm` straight (see the module); `None` when it is
/// left to the event path, with `asm` and `live` as they were.
pub(super) fn feed(
    asm: &mut Assembler,
    body: &mut Body<'_>,
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Option<()> {
    if !first_response(asm) || !plain_items(body) {
        return None;
    }
    let before = asm.clone();
    let sent = live.as_deref().map_or(0, Vec::len);
    asm.decide(Dialect::OpenAiResponses);
    asm.stream.dialect = Some(Dialect::OpenAiResponses);
    asm.stream.unknown = None;
    let read = match &mut asm.state {
        Some(DialectState::OpenAiResponses(st)) => {
            let mut l = asm.stream.live(live.as_deref_mut());
            st.straight(&mut asm.stream, body, &mut l)
        }
        _ => Err(Fallback),
    };
    if read.is_ok() {
        return Some(());
    }
    *asm = before;
    if let Some(live) = live {
        live.truncate(sent);
    }
    None
}

/// Why a body goes on to the event path.
struct Fallback;

impl From<crate::providers::state::Fail> for Fallback {
    fn from(_: crate::providers::state::Fail) -> Self {
        Fallback
    }
}

/// Nothing of a Responses stream read yet (its state as new).
fn first_response(asm: &Assembler) -> bool {
    let s = &asm.stream;
    if s.done || s.is_closed() || !s.choices.is_empty() || s.content_bytes != 0 {
        return false;
    }
    match &asm.state {
        None => true,
        Some(DialectState::OpenAiResponses(st)) => st.is_new(),
        Some(_) => false,
    }
}

/// Every item of a kind the direct reader reads, no item id twice, and a
/// response that did not fail (the event path leaves such bodies to the
/// reference).
fn plain_items(body: &Body<'_>) -> bool {
    if body.status.as_deref() == Some("failed") {
        return false;
    }
    let items = body.output.as_deref().unwrap_or_default();
    let mut ids = BTreeSet::new();
    items.iter().all(|item| {
        let item = &item.0;
        let kind = item.kind.as_deref().unwrap_or_default();
        let known = matches!(kind, "message" | "reasoning" | "function_call" | CUSTOM);
        let id = item.id.as_deref().unwrap_or_default();
        known && (id.is_empty() || ids.insert(id))
    })
}

fn text_of<'s>(s: &'s Option<Str<'_>>) -> &'s str {
    s.as_deref().unwrap_or_default()
}

impl State {
    /// Nothing read yet.
    fn is_new(&self) -> bool {
        self.items.is_empty()
            && self.summary_part.is_empty()
            && self.last_seq.is_none()
            && self.missing.is_empty()
            && self.args_done.is_empty()
            && self.done_early.is_empty()
            && self.model.is_none()
            && self.item_at.is_empty()
            && self.response_id.is_none()
            && self.open_items.is_empty()
    }

    /// What the body's events do on a new stream, in their order.
    fn straight(&mut self, s: &mut Stream, body: &mut Body<'_>, live: &mut Live<'_>) -> Result<(), Fallback> {
        *self.last_delta = None;
        let owned = |v: &Option<Str<'_>>| v.as_deref().map(str::to_owned);
        // `response.created` and `response.in_progress`.
        if let Some(id) = body.id.as_deref().filter(|id| !id.is_empty()) {
            self.response_id = Some(id.to_owned());
        }
        // The message made with room for its items.
        let items = body.output.as_deref().unwrap_or_default();
        let calls = items.iter().filter(|i| matches!(i.0.kind.as_deref(), Some("function_call" | CUSTOM))).count();
        s.room = Room {
            calls,
            blocks: items.iter().map(|i| i.0.content.as_ref().map_or(1, Vec::len).max(1)).sum(),
        };
        let started = s.start(C).and_then(|()| s.choice(C).map(|_| ()));
        s.room = Room::default();
        started?;
        self.model = owned(&body.model);
        let mut events: u64 = 2;
        let mut calls = Vec::new();
        // The largest text a call's later events restate (each is checked
        // against `max_total_bytes` there).
        let mut restated = 0_usize;
        for (oi, item) in body.output.as_deref().unwrap_or_default().iter().enumerate() {
            let item = &item.0;
            let oi = i64::try_from(oi).map_err(|_| Fallback)?;
            let kind = item.kind.as_deref().unwrap_or_default();
            let id = text_of(&item.id);
            // `output_item.added` and `.done`.
            events += 2;
            match kind {
                "function_call" | CUSTOM => {
                    let custom = kind == CUSTOM;
                    let args = given(if custom { &item.input } else { &item.arguments });
                    let args = args.as_deref().unwrap_or_default();
                    let (call_id, name) = (text_of(&item.call_id), text_of(&item.name));
                    events += 2;
                    restated = restated.max(args.len().max(call_id.len() + name.len()));
                    let key = if custom {
                        let key = self.open_call(s, (oi, id), (call_id, name, ""), Some(CUSTOM), live)?;
                        self.xai_server_tool(s, key, name);
                        s.add_to_call(C, key, "", "", args, None, live)?;
                        key
                    } else {
                        // Opened with its arguments: what the call opened, then
                        // its arguments added, leave (any failure goes on to
                        // the event path).
                        self.open_call(s, (oi, id), (call_id, name, args), None, live)?
                    };
                    s.item_done(C, key, live);
                    if custom {
                        self.xai_server_tool(s, key, name);
                    }
                    let held = if custom { &item.input } else { &item.arguments };
                    calls.push(SnapshotCall {
                        item_type: kind,
                        call_id,
                        id,
                        name,
                        args: held.as_ref().map(|a| a.as_deref()),
                        restated: None,
                    });
                }
                "message" => {
                    self.note_item(id, oi);
                    for (ci, part) in item.content.as_deref().unwrap_or_default().iter().enumerate() {
                        let part = &part.0;
                        let ci = i64::try_from(ci).map_err(|_| Fallback)?;
                        // `content_part.added` and `.done`.
                        events += 2;
                        let (text, kind, ns) = match part.kind.as_deref() {
                            Some("output_text") => {
                                let notes = part.annotations.as_ref().map_or(0, Vec::len);
                                events += 2 + u64::try_from(notes).map_err(|_| Fallback)?;
                                (&part.text, TextKind::Text, NS_TEXT)
                            }
                            Some("refusal") => {
                                events += 2;
                                (&part.refusal, TextKind::Refusal, NS_REFUSAL)
                            }
                            _ => continue,
                        };
                        let text = given(text);
                        let text = text.as_deref().unwrap_or_default();
                        s.text(C, kind, Some((ns, oi, ci)), text, false, live)?;
                    }
                }
                _ => {
                    self.note_item(id, oi);
                    let src = Some((NS_REASONING, oi, 0));
                    let summary = item.summary.as_deref().unwrap_or_default();
                    let content = item.content.as_deref().unwrap_or_default();
                    events += 4 * u64::try_from(summary.len() + content.len()).map_err(|_| Fallback)?;
                    for (si, part) in summary.iter().enumerate() {
                        let si = i64::try_from(si).map_err(|_| Fallback)?;
                        let delta = given(&part.0.text);
                        let delta = delta.as_deref().unwrap_or_default();
                        let previous = self.summary_part.insert(oi, si);
                        let joined = previous.is_some_and(|p| p != si).then(|| format!("\n\n{delta}"));
                        let frag = ThinkingFragment {
                            thinking: joined.as_deref().unwrap_or(delta),
                            ..ThinkingFragment::default()
                        };
                        s.thinking(C, src, frag, false, live)?;
                    }
                    for part in content {
                        let delta = given(&part.0.text);
                        let frag = ThinkingFragment {
                            thinking: delta.as_deref().unwrap_or_default(),
                            ..ThinkingFragment::default()
                        };
                        s.thinking(C, src, frag, false, live)?;
                    }
                    reasoning_done(s, oi, id, text_of(&item.encrypted_content), live)?;
                }
            }
        }
        let ended = self.end(s, body, &calls, events, live)?;
        // The restated arguments, ids and names, checked where the event
        // path checks them (the content only grew since).
        match s.content_bytes.checked_add(restated) {
            Some(n) if n <= s.limits.max_total_bytes => {}
            _ => return Err(Fallback),
        }
        // The usage of the final event, last: nothing after it can send the
        // body on to the event path (which reads it), so it is taken, not
        // copied, and nothing before reads it.
        if ended {
            if let Some(u) = body.usage.take() {
                s.merge_usage(u);
            } else if let Some(t) = body.usage_text.take() {
                s.merge_usage_text(t);
            }
        }
        Ok(())
    }

    /// The item id of an item that is no call, at its output index.
    fn note_item(&mut self, id: &str, oi: i64) {
        if !id.is_empty() {
            self.items.insert(id.to_owned(), oi);
        }
    }

    /// A call's `output_item.added`: the call opened at its output index
    /// (with `input`: its arguments added too).
    fn open_call(
        &mut self,
        s: &mut Stream,
        (oi, item_id): (i64, &str),
        (id, name, input): (&str, &str, &str),
        kind: Option<&str>,
        live: &mut Live<'_>,
    ) -> R<i64> {
        let state = (!item_id.is_empty()).then(|| json_string(item_id));
        if !item_id.is_empty() {
            self.item_at.insert(oi, item_id.to_owned());
            self.items.insert(item_id.to_owned(), oi);
        }
        let opening = Opening {
            provider_index: Some(oi),
            src: Some((NS_TOOL, oi, 0)),
            id,
            name,
            input,
            state: state.as_deref().map(|st| (st, FORMAT)),
            kind,
            ..Opening::default()
        };
        s.new_call(C, opening, live)
    }

    /// The response's final event, if its status has one (then `true`; its
    /// usage is merged by the caller), and the events' last sequence number.
    fn end(
        &mut self,
        s: &mut Stream,
        body: &Body<'_>,
        calls: &[SnapshotCall<'_>],
        events: u64,
        live: &mut Live<'_>,
    ) -> Result<bool, Fallback> {
        let completed = match body.status.as_deref() {
            Some("completed") => true,
            Some("in_progress" | "queued") | None => {
                self.last_seq = Some(events - 1);
                return Ok(false);
            }
            Some(_) => false,
        };
        self.last_seq = Some(events);
        let kind = if completed { "response.completed" } else { "response.incomplete" };
        if completed {
            self.check_calls(s, kind, calls)?;
        }
        let status = body.status.as_deref().unwrap_or_default();
        let reason = body.incomplete_details.as_ref().and_then(|d| d.reason.as_deref());
        let finish = if completed { status } else { reason.unwrap_or(status) };
        s.set_finish_reason(C, finish)?;
        if completed {
            s.end(C, live)?;
        } else {
            s.end_abnormal(C, live)?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use crate::providers::{Assembler, AssemblerLimits, Dialect};

    /// Whether a body fed first to a new assembler is read straight.
    fn straight(body: &str) -> bool {
        let mut a = Assembler::new(Some(Dialect::OpenAiResponses), AssemblerLimits::default());
        let Ok(mut parsed) = serde_json::from_str::<super::Body<'_>>(body) else {
            return false;
        };
        super::feed(&mut a, &mut parsed, None).is_some()
    }

    /// A usual body is read straight; its neighbours that the event path
    /// reads (an item id given twice, a failed response, an item kept whole)
    /// are not.
    #[test]
    fn reads_usual_bodies_straight_and_leaves_the_rest() {
        let usual = r#"{"id":"r","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"m","content":[{"type":"output_text","text":"hi","annotations":[]}]},{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{}"},{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"s"}]}]}"#;
        assert!(straight(usual));
        for neighbour in [
            usual.replace(r#""id":"rs""#, r#""id":"fc""#),
            usual.replace("completed", "failed"),
            usual.replace(r#""type":"reasoning""#, r#""type":"web_search_call""#),
        ] {
            assert!(!straight(&neighbour), "{neighbour}");
        }
    }
}
