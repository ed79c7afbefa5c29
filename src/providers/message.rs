//! Building the messages a stream has assembled so far: blocks in stream
//! order, calls in provider order (Q3), problems, finish and token counts;
//! the opt-in split of several complete JSON objects under one call (Q40,
//! `AssemblerLimits::split_concatenated`).

use std::collections::{BTreeMap, BTreeSet};

use serde::de::IgnoredAny;

use super::outcome::{finish_of, tokens_of};
use super::state::{mint_id, Choice, Segment, Stream, MAX_NOTES};
use super::usage::Usage;
use super::{AssembledMessage, Finish, Note, NoteKind, Problem, ProblemKind, ToolUse};
use crate::blocks::{Block, ThinkingBlock, FUNCTION};

impl Stream {
    /// Records what a narrow rule interpreted in choice `c` (Q36 onward).
    pub(crate) fn note(&mut self, c: i64, kind: NoteKind, call: Option<i64>, message: String) {
        let event = self.ordinal;
        if let Some(ch) = self.choices.get_mut(&c) {
            if ch.notes.len() < MAX_NOTES {
                ch.notes.push(Note {
                    kind,
                    choice: c,
                    call,
                    event,
                    message,
                });
            }
        }
    }

    /// The drift report: a stream of which most events were skipped as of
    /// types this version does not read has most likely met a changed API;
    /// the message says so, naming those types, and is not complete (what it
    /// holds is not what the provider sent).
    pub(crate) fn drift(&self, c: i64) -> Option<Problem> {
        /// Below this many events a stream is too short to tell.
        const MIN_EVENTS: u64 = 4;
        let events = self.ordinal;
        if events < MIN_EVENTS || self.skipped.is_empty() {
            return None;
        }
        let mut ordinals: Vec<u64> = self.skipped.iter().map(|k| k.ordinal).collect();
        ordinals.dedup();
        let skipped = u64::try_from(ordinals.len()).unwrap_or(u64::MAX);
        if skipped.saturating_mul(2) <= events {
            return None;
        }
        let mut types: Vec<&str> = Vec::new();
        for k in &self.skipped {
            if !types.contains(&k.event_type.as_str()) {
                types.push(&k.event_type);
            }
        }
        let shown = types.iter().take(8).copied().collect::<Vec<_>>().join(", ");
        let more = types.len().saturating_sub(8);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Some(Problem {
            kind: ProblemKind::NotApplied,
            choice: Some(c),
            call: None,
            id: String::new(),
            event: None,
            message: format!(
                "{skipped} of the stream's {events} events were skipped as of types this \
                 version does not read ({shown}{more}): the provider's API has likely changed, \
                 and what the message holds is not what it sent"
            ),
        })
    }

    /// The input of every call not finished yet, as `(choice, index, input,
    /// revision)`: while the revision stays the same, the input only grows.
    pub(crate) fn open_inputs(&self) -> Vec<(i64, i64, &str, u64)> {
        let mut out = Vec::new();
        for (&c, ch) in &self.choices {
            for (key, block) in ch.tools.iter() {
                if let Some(m) = ch.meta(key).filter(|_| !ch.call_closed(key)) {
                    out.push((c, key, block.input.as_str(), m.revision));
                }
            }
        }
        out
    }

    pub(crate) fn messages(&self) -> Vec<AssembledMessage> {
        if self.choices.is_empty() {
            let empty = Choice::new(&self.limits);
            return vec![self.message(0, &empty)];
        }
        self.choices
            .iter()
            .map(|(&c, ch)| self.message(c, ch))
            .collect()
    }

    pub(crate) fn message(&self, c: i64, ch: &Choice) -> AssembledMessage {
        let thinking: BTreeMap<i64, &ThinkingBlock> = ch.thinking.iter().collect();
        let mut ids = assigned_ids(ch, c);
        let tool = |key: i64, id: String| -> Option<ToolUse> {
            let block = ch.tools.get(key)?;
            let meta = ch.meta(key).cloned().unwrap_or_default();
            let mut block = block.clone();
            let id_minted = block.id.is_empty() || meta.sent_id.is_some();
            block.id = id;
            if let Some(kind) = &meta.kind {
                block.kind.clone_from(kind);
            }
            block.server_side = meta.server_side;
            Some(ToolUse {
                block,
                index: key,
                provider_index: meta.provider_index,
                id_minted,
                sent_id: meta.sent_id.clone(),
                finished: ch.call_closed(key),
                server_side: meta.server_side,
            })
        };
        // Q40's opt-in: a call of several objects is one call per object, once
        // the message ended normally (what it holds can no longer change).
        // Each call is built once, so its blocks and its tool uses agree.
        let mut notes = ch.notes.clone();
        let mut split_problems = Vec::new();
        let mut split = Split {
            on: self.limits.split_concatenated && ch.phase.normal(),
            max_calls: self.limits.max_calls,
            room: self
                .limits
                .max_calls
                .saturating_sub(ch.tools.iter().count()),
            taken: &mut ids.taken,
            event: self.ordinal,
            notes: &mut notes,
            problems: &mut split_problems,
        };
        let mut calls: BTreeMap<i64, Vec<ToolUse>> = BTreeMap::new();
        for (key, id) in std::mem::take(&mut ids.by_key) {
            if let Some(t) = tool(key, id) {
                calls.insert(key, split.call(c, t));
            }
        }
        let mut text = String::new();
        let mut blocks = Vec::with_capacity(ch.segments.len());
        for seg in &ch.segments {
            match &seg.kind {
                Segment::Text(a) => {
                    let t = a.block().unwrap_or_default();
                    text.push_str(t);
                    blocks.push(Block::Text(t.to_owned()));
                }
                Segment::Refusal(a) => {
                    blocks.push(Block::Refusal(a.block().unwrap_or_default().to_owned()));
                }
                Segment::Thinking(k) => {
                    if let Some(b) = thinking.get(k) {
                        blocks.push(Block::Thinking((*b).clone()));
                    }
                }
                Segment::Tool(k) => {
                    for t in calls.get(k).into_iter().flatten() {
                        blocks.push(Block::ToolUse(t.block.clone()));
                    }
                }
                Segment::Result(i) => {
                    if let Some(r) = ch.results.get(*i) {
                        blocks.push(Block::ToolResult(r.clone()));
                    }
                }
                Segment::Empty => {}
            }
        }
        let mut tool_uses: Vec<ToolUse> = calls.into_values().flatten().collect();
        // Q3: ascending provider index (ties, and calls without one, in arrival order).
        tool_uses.sort_by_key(|t| (t.provider_index.unwrap_or(i64::MAX), t.index));

        let mut problems: Vec<Problem> = self
            .problems
            .iter()
            .filter(|p| p.choice.is_none_or(|pc| pc == c))
            .cloned()
            .collect();
        if self.problems_dropped > 0 {
            problems.push(Problem {
                kind: ProblemKind::NotApplied,
                choice: None,
                call: None,
                id: String::new(),
                event: None,
                message: format!("… and {} more problems", self.problems_dropped),
            });
        }
        problems.extend(ch.problems.iter().cloned());
        problems.append(&mut split_problems);
        // Two calls ending up with one id (a provider id equal to a minted one).
        let mut seen: BTreeMap<&str, i64> = BTreeMap::new();
        for t in &tool_uses {
            if let Some(first) = seen.insert(t.block.id.as_str(), t.index) {
                problems.push(Problem {
                    kind: ProblemKind::Protocol,
                    choice: Some(c),
                    call: Some(t.index),
                    id: t.block.id.clone(),
                    event: None,
                    message: format!(
                        "tool calls {first} and {} of choice {c} share the id {}",
                        t.index, t.block.id
                    ),
                });
            }
        }
        // Q38's twin: a call renamed for another's id that is the same call
        // again (name and input) is a duplicated segment, not a parallel call.
        for t in &tool_uses {
            let Some(sent) = ch.meta(t.index).and_then(|m| m.sent_id.as_deref()) else {
                continue;
            };
            let twin = tool_uses.iter().find(|o| {
                o.block.id == sent && o.block.name == t.block.name && o.block.input == t.block.input
            });
            if let Some(o) = twin {
                problems.push(Problem {
                    kind: ProblemKind::Protocol,
                    choice: Some(c),
                    call: Some(t.index),
                    id: t.block.id.clone(),
                    event: None,
                    message: format!(
                        "tool calls {} and {} of choice {c} were sent with the id {sent} and are \
                         the same call (name and arguments): a repeated segment, not executed",
                        o.index, t.index
                    ),
                });
            }
        }
        let usage = self.usage.as_ref().map(Usage::map);
        let tokens = self
            .dialect
            .map(|d| tokens_of(d, usage.as_deref()))
            .unwrap_or_default();
        // Q46: a server that reports a cut at the output limit as a normal end.
        if let (Some(max), Some(out)) = (self.limits.max_output_tokens, tokens.output_tokens) {
            if out >= max {
                problems.push(Problem {
                    kind: ProblemKind::Cut,
                    choice: Some(c),
                    call: None,
                    id: String::new(),
                    event: None,
                    message: format!(
                        "the provider reported {out} output tokens, the request's limit of {max} \
                         (max_output_tokens): the message was cut there, whatever its finish \
                         reason says"
                    ),
                });
            }
        }
        if let Some(p) = self.drift(c) {
            problems.push(p);
        }
        let complete = ch.phase.normal() && !ch.failed && problems.is_empty();
        let finish = finish_of(ch.finish_reason.as_deref(), ch.phase.ended(), ch.failed).map(|f| {
            // An empty reason that a narrow rule judged a normal end (Q63) is a stop.
            let empty = ch.finish_reason.as_deref() == Some("") && ch.phase.normal();
            let f = if empty && f == Finish::Other {
                Finish::Stop
            } else {
                f
            };
            let client_calls = tool_uses.iter().any(|t| !t.server_side);
            if f == Finish::Stop && client_calls {
                Finish::ToolCalls
            } else {
                f
            }
        });
        AssembledMessage {
            choice: c,
            blocks,
            tool_uses,
            text,
            finish_reason: ch.finish_reason.clone(),
            finish,
            usage: usage.map(std::borrow::Cow::into_owned),
            tokens,
            complete,
            problems,
            skipped: self.skipped.clone(),
            notes,
        }
    }
}

// ------------------------------------------------ ids of our own making

/// The id of every call of a choice, by key, and every id handed out.
pub(crate) struct Ids {
    pub(crate) by_key: Vec<(i64, String)>,
    pub(crate) taken: BTreeSet<String>,
}

/// The ids the calls of choice `c` are shown with. An id the provider sent is
/// kept as sent; an id of our own making (Q8's `call_<choice>_<index>`, Q38's
/// `<sent>_<n>`) is distinct by construction: it never equals an id the
/// provider sent in the message, sent before or after it, nor another of ours.
/// When its first form is taken it gets the next free `_<n>` suffix.
pub(crate) fn assigned_ids(ch: &Choice, c: i64) -> Ids {
    let sent: BTreeSet<&str> = ch
        .tools
        .iter()
        .filter(|&(k, b)| !b.id.is_empty() && ch.meta(k).is_none_or(|m| m.sent_id.is_none()))
        .map(|(_, b)| b.id.as_str())
        .collect();
    let mut taken: BTreeSet<String> = sent.iter().map(|&s| s.to_owned()).collect();
    let mut by_key = Vec::new();
    for (key, block) in ch.tools.iter() {
        let renamed = ch.meta(key).and_then(|m| m.sent_id.as_deref());
        let id = match renamed {
            None if !block.id.is_empty() => block.id.clone(),
            None => free_id(&taken, &mint_id(c, key), 2, &mint_id(c, key)),
            Some(from) => free_id(&taken, &block.id, 2, from),
        };
        taken.insert(id.clone());
        by_key.push((key, id));
    }
    Ids { by_key, taken }
}

/// `first` when it is free, else the first free `<base>_<n>` from `n` on.
/// Each step passes one taken id, so the search is bounded by their number.
pub(crate) fn free_id(taken: &BTreeSet<String>, first: &str, n: usize, base: &str) -> String {
    if !first.is_empty() && !taken.contains(first) {
        return first.to_owned();
    }
    (n..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_default()
}

// ----------------------------------------------- Q40: split_concatenated

/// The objects of `input` when it is two or more complete JSON objects, one
/// after another (whitespace between and around them allowed), each as its
/// text; `None` for anything else (one value, a value that is not an object,
/// trailing text, a cut value). One pass over the input; at most `max + 1`
/// pieces are kept (`Err(max + 1)`: more than `max` objects).
pub(crate) fn concatenated_objects(input: &str, max: usize) -> Option<Result<Vec<&str>, usize>> {
    let mut values = serde_json::Deserializer::from_str(input).into_iter::<IgnoredAny>();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut over = false;
    while let Some(next) = values.next() {
        next.ok()?;
        let end = values.byte_offset();
        let piece = input.get(start..end)?.trim();
        if !piece.starts_with('{') {
            return None;
        }
        if pieces.len() <= max {
            pieces.push(piece);
        } else {
            over = true;
        }
        start = end;
    }
    // The stream stops at the end of the input only when every byte was read.
    if !input.get(start..)?.trim().is_empty() || pieces.len() < 2 {
        return None;
    }
    Some(if over || pieces.len() > max {
        Err(max.saturating_add(1))
    } else {
        Ok(pieces)
    })
}

/// The split of one message's calls (Q40's opt-in).
struct Split<'a> {
    on: bool,
    max_calls: usize,
    /// Calls the message may still gain before it holds `max_calls`.
    room: usize,
    taken: &'a mut BTreeSet<String>,
    event: u64,
    notes: &'a mut Vec<Note>,
    problems: &'a mut Vec<Problem>,
}

/// At most this many ids are listed in a split's note.
const IDS_NAMED: usize = 8;

impl Split<'_> {
    /// The calls `t` stands for: itself, or (split on, in a message that
    /// ended normally, a finished client JSON call holding several objects)
    /// one call per object, each with an id derived from the one sent
    /// (`<id>_1`, `<id>_2`, … skipping ids the message has), minted and naming
    /// the sent one, with a note saying so. A split that would take the
    /// message over `max_calls` is not made: the call stays whole and the
    /// message has a problem naming the limit.
    fn call(&mut self, c: i64, t: ToolUse) -> Vec<ToolUse> {
        let splittable = self.on && t.finished && !t.server_side && t.block.kind == FUNCTION;
        if !splittable {
            return vec![t];
        }
        let max = self.room.saturating_add(1);
        let pieces = match concatenated_objects(&t.block.input, max) {
            None => return vec![t],
            Some(Ok(pieces)) => pieces,
            Some(Err(at_least)) => {
                self.problems.push(Problem {
                    kind: ProblemKind::NotApplied,
                    choice: Some(c),
                    call: Some(t.index),
                    id: t.block.id.clone(),
                    event: None,
                    message: format!(
                        "call {} holds at least {at_least} complete JSON objects one after \
                         another; split into one call each, the message would have more than \
                         max_calls ({}) calls, so it was not split",
                        t.block.id, self.max_calls,
                    ),
                });
                return vec![t];
            }
        };
        self.room = self.room.saturating_sub(pieces.len().saturating_sub(1));
        let sent = t.block.id.clone();
        // One template without the input: each piece copies only its own text.
        let mut template = t.clone();
        template.block.input = String::new();
        template.id_minted = true;
        template.sent_id = Some(sent.clone());
        let mut ids = Vec::with_capacity(pieces.len());
        // One counter for all the pieces: the search for free ids stays linear.
        let mut n = 0_usize;
        let calls = pieces
            .iter()
            .map(|piece| {
                let id = loop {
                    n = n.saturating_add(1);
                    let candidate = format!("{sent}_{n}");
                    if !self.taken.contains(&candidate) {
                        break candidate;
                    }
                };
                self.taken.insert(id.clone());
                let mut part = template.clone();
                part.block.input = (*piece).to_owned();
                part.block.id.clone_from(&id);
                ids.push(id);
                part
            })
            .collect();
        let mut named = ids
            .iter()
            .take(IDS_NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if ids.len() > IDS_NAMED {
            named.push_str(&format!(" and {} more", ids.len() - IDS_NAMED));
        }
        if self.notes.len() < MAX_NOTES {
            self.notes.push(Note {
                kind: NoteKind::ConcatenatedSplit,
                choice: c,
                call: Some(t.index),
                event: self.event,
                message: format!(
                    "call {sent} held {} complete JSON objects one after another; split into \
                     the calls {named} (split_concatenated)",
                    ids.len(),
                ),
            });
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::concatenated_objects;
    use crate::providers::state::{Live, Opening, Stream};
    use crate::providers::AssemblerLimits;

    #[test]
    fn calls_come_in_provider_order_and_a_minted_id_never_takes_a_sent_one() {
        let mut s = Stream::new(AssemblerLimits::default());
        let mut live = Live::off();
        for (p, id) in [(5, "x"), (1, ""), (3, "call_0_1")] {
            let o = Opening {
                provider_index: Some(p),
                id,
                name: "f",
                ..Opening::default()
            };
            s.new_call(0, o, &mut live).unwrap();
        }
        let m = &s.messages()[0];
        let order: Vec<Option<i64>> = m.tool_uses.iter().map(|t| t.provider_index).collect();
        assert_eq!(order, [Some(1), Some(3), Some(5)]);
        let ids: Vec<&str> = m.tool_uses.iter().map(|t| t.block.id.as_str()).collect();
        // Call 1 would be minted `call_0_1`, which call 2 was sent with (after it).
        assert_eq!(ids, ["call_0_1_2", "call_0_1", "x"]);
        assert!(m.tool_uses[0].id_minted && !m.tool_uses[1].id_minted);
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        assert!(!m.complete && m.finish.is_none());
    }

    #[test]
    fn only_two_or_more_whole_objects_are_split() {
        assert_eq!(
            concatenated_objects(r#"{"q":"A"}{"q":"B"}"#, 8),
            Some(Ok(vec![r#"{"q":"A"}"#, r#"{"q":"B"}"#]))
        );
        assert_eq!(
            concatenated_objects(" {\"q\":1}\n {\"q\":[2]} ", 8),
            Some(Ok(vec![r#"{"q":1}"#, r#"{"q":[2]}"#]))
        );
        for other in [
            r#"{"q":"A"}"#,
            r#"{"q":"A"}[1]"#,
            r#"{"q":"A"} x"#,
            r#"{"q":"A"}{"q":"#,
            "",
            "1 2",
            r#"{"q":"A"}}"#,
        ] {
            assert_eq!(concatenated_objects(other, 8), None, "{other}");
        }
        // More objects than the bound: counted to one past it, never collected.
        let many = "{}".repeat(30_000);
        assert_eq!(concatenated_objects(&many, 100), Some(Err(101)));
        assert_eq!(
            concatenated_objects(&many, 30_000).map(|r| r.map(|p| p.len())),
            Some(Ok(30_000))
        );
    }
}
