//! Building the messages a stream has assembled so far: blocks in stream
//! order, calls in provider order (Q3), problems, finish and token counts;
//! the opt-in split of several complete JSON objects under one call (Q40,
//! `AssemblerLimits::split_concatenated`).

use std::collections::BTreeMap;

use serde::de::IgnoredAny;

use super::outcome::{finish_of, tokens_of};
use super::state::{mint_id, Choice, Segment, Stream, MAX_NOTES};
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
        let tool = |key: i64| -> Option<ToolUse> {
            let block = ch.tools.get(key)?;
            let meta = ch.meta(key).cloned().unwrap_or_default();
            let mut block = block.clone();
            let id_minted = block.id.is_empty() || meta.sent_id.is_some();
            if block.id.is_empty() {
                block.id = mint_id(c, key);
            }
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
        let mut notes = ch.notes.clone();
        let split = self.limits.split_concatenated && ch.phase.normal();
        let calls = |key: i64, notes: &mut Vec<Note>| -> Vec<ToolUse> {
            match tool(key) {
                Some(t) if split => split_call(ch, c, t, self.ordinal, notes),
                Some(t) => vec![t],
                None => Vec::new(),
            }
        };
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
                    let mut ignored = Vec::new();
                    for t in calls(*k, &mut ignored) {
                        blocks.push(Block::ToolUse(t.block));
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
        let mut tool_uses: Vec<ToolUse> = ch
            .tools
            .iter()
            .flat_map(|(k, _)| calls(k, &mut notes))
            .collect();
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
        let tokens = self
            .dialect
            .map(|d| tokens_of(d, self.usage.as_ref()))
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
        let complete = ch.phase.normal() && !ch.failed && problems.is_empty();
        let finish = finish_of(ch.finish_reason.as_deref(), ch.phase.ended(), ch.failed).map(|f| {
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
            usage: self.usage.clone(),
            tokens,
            complete,
            problems,
            skipped: self.skipped.clone(),
            notes,
        }
    }
}

// ----------------------------------------------- Q40: split_concatenated

/// The objects of `input` when it is two or more complete JSON objects, one
/// after another (whitespace between and around them allowed), each as its
/// text; `None` for anything else (one value, a value that is not an object,
/// trailing text, a cut value).
pub(crate) fn concatenated_objects(input: &str) -> Option<Vec<&str>> {
    let mut values = serde_json::Deserializer::from_str(input).into_iter::<IgnoredAny>();
    let mut pieces = Vec::new();
    let mut start = 0;
    while let Some(next) = values.next() {
        next.ok()?;
        let end = values.byte_offset();
        let piece = input.get(start..end)?.trim();
        if !piece.starts_with('{') {
            return None;
        }
        pieces.push(piece);
        start = end;
    }
    // The stream stops at the end of the input only when every byte was read.
    if !input.get(start..)?.trim().is_empty() || pieces.len() < 2 {
        return None;
    }
    Some(pieces)
}

/// The calls `t` stands for: itself, or (split on, in a message that ended
/// normally, a finished client JSON call holding several objects) one call per object, each with an id derived
/// from the one sent (`<id>_1`, `<id>_2`, … skipping ids the choice has),
/// minted and naming the sent one, with a note saying so.
pub(crate) fn split_call(
    ch: &Choice,
    c: i64,
    t: ToolUse,
    event: u64,
    notes: &mut Vec<Note>,
) -> Vec<ToolUse> {
    let splittable = t.finished && !t.server_side && t.block.kind == FUNCTION;
    let Some(pieces) = splittable
        .then(|| concatenated_objects(&t.block.input))
        .flatten()
    else {
        return vec![t];
    };
    let sent = t.block.id.clone();
    let mut n = 0_usize;
    let mut ids = Vec::with_capacity(pieces.len());
    let calls = pieces
        .iter()
        .map(|piece| {
            let id = loop {
                n += 1;
                let candidate = format!("{sent}_{n}");
                if !ch.by_id.contains_key(&candidate) {
                    break candidate;
                }
            };
            ids.push(id.clone());
            let mut part = t.clone();
            part.block.id = id;
            (*piece).clone_into(&mut part.block.input);
            part.id_minted = true;
            part.sent_id = Some(sent.clone());
            part
        })
        .collect();
    notes.push(Note {
        kind: NoteKind::ConcatenatedSplit,
        choice: c,
        call: Some(t.index),
        event,
        message: format!(
            "call {sent} held {} complete JSON objects one after another; split into the calls \
             {} (split_concatenated)",
            ids.len(),
            ids.join(", ")
        ),
    });
    calls
}

#[cfg(test)]
mod tests {
    use super::concatenated_objects;
    use crate::providers::state::{Live, Opening, Stream};
    use crate::providers::{AssemblerLimits, ProblemKind};

    #[test]
    fn calls_come_in_provider_order_with_minted_ids_and_shared_ids_are_problems() {
        let mut s = Stream::new(AssemblerLimits::default());
        let mut live = Live(None);
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
        assert!(m.tool_uses[0].id_minted && m.tool_uses[0].block.id == "call_0_1");
        assert!(m.problems.iter().any(
            |p| p.kind == ProblemKind::Protocol && p.message.contains("share the id call_0_1")
        ));
        assert!(!m.complete && m.finish.is_none());
    }

    #[test]
    fn only_two_or_more_whole_objects_are_split() {
        assert_eq!(
            concatenated_objects(r#"{"q":"A"}{"q":"B"}"#),
            Some(vec![r#"{"q":"A"}"#, r#"{"q":"B"}"#])
        );
        assert_eq!(
            concatenated_objects(" {\"q\":1}\n {\"q\":[2]} "),
            Some(vec![r#"{"q":1}"#, r#"{"q":[2]}"#])
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
            assert_eq!(concatenated_objects(other), None, "{other}");
        }
    }
}
