//! The content of a stream's messages: text, thinking, refusals, tool calls
//! and tool results, added block by block. Every change first asks the
//! protocol machine ([`super::protocol`]) whether the block and the message
//! take it, then checks the limits, then changes the store.

use super::error::{Limit, Rule};
use super::protocol::{BlockEvent, BlockPhase};
use super::state::{
    describe_src, violation, CallMeta, Choice, Fail, Live, Opening, Seg, Segment, Src, Stream,
    TextKind, R,
};
use super::LiveEvent;
use crate::accumulate::{Appender, ThinkingFragment};
use crate::blocks::{Block, ToolResultBlock};

impl Stream {
    /// Appends text or refusal text. `src` keys the block (a provider block
    /// index); without one the text continues the last block when it is of the
    /// same kind. Empty text creates no block unless `create` is set.
    pub(crate) fn text(
        &mut self,
        c: i64,
        kind: TextKind,
        src: Option<Src>,
        text: &str,
        create: bool,
        live: &mut Live<'_>,
    ) -> R {
        if text.is_empty() && !create {
            return Ok(());
        }
        let total = self.budget(text.len(), || format!("text of choice {c}"))?;
        let (max_blocks, max_bytes) = (self.limits.max_blocks, self.limits.max_total_bytes);
        let ch = self.writable(c)?;
        let found = match (src, kind) {
            (Some(s), TextKind::Text) => {
                ch.segment_for(s, "text", |k| matches!(k, Segment::Text(_)))?
            }
            (Some(s), TextKind::Refusal) => {
                ch.segment_for(s, "refusal text", |k| matches!(k, Segment::Refusal(_)))?
            }
            (None, _) => ch.segments.len().checked_sub(1).filter(|&i| {
                ch.segments.get(i).is_some_and(|seg| {
                    !seg.phase.closed()
                        && match kind {
                            TextKind::Text => matches!(seg.kind, Segment::Text(_)),
                            TextKind::Refusal => matches!(seg.kind, Segment::Refusal(_)),
                        }
                })
            }),
        };
        let at = match found {
            Some(i) => i,
            None => {
                let seg = match kind {
                    TextKind::Text => Segment::Text(Appender::new("text", max_bytes)),
                    TextKind::Refusal => Segment::Refusal(Appender::new("refusal", max_bytes)),
                };
                ch.new_segment(seg, src, max_blocks)?
            }
        };
        if let Some(Seg {
            kind: Segment::Text(a) | Segment::Refusal(a),
            ..
        }) = ch.segments.get_mut(at)
        {
            a.add(text)?;
        }
        self.content_bytes = total;
        if !text.is_empty() {
            live.content(|| match kind {
                TextKind::Text => LiveEvent::TextDelta {
                    choice: c,
                    text: text.to_owned(),
                },
                TextKind::Refusal => LiveEvent::RefusalDelta {
                    choice: c,
                    text: text.to_owned(),
                },
            });
        }
        Ok(())
    }

    /// Adds reasoning to the thinking block at `src` (or, without one, to the
    /// last block when it is a thinking block). An empty fragment creates no
    /// block unless `create` is set.
    pub(crate) fn thinking(
        &mut self,
        c: i64,
        src: Option<Src>,
        frag: ThinkingFragment<'_>,
        create: bool,
        live: &mut Live<'_>,
    ) -> R {
        let n = frag
            .thinking
            .len()
            .saturating_add(frag.signature.len())
            .saturating_add(frag.provider_state.map_or(0, str::len));
        if n == 0 && !create {
            return Ok(());
        }
        let total = self.budget(n, || format!("thinking of choice {c}"))?;
        let max_blocks = self.limits.max_blocks;
        let ch = self.writable(c)?;
        let found = match src {
            Some(s) => ch.segment_for(s, "reasoning", |k| matches!(k, Segment::Thinking(_)))?,
            None => ch.segments.len().checked_sub(1).filter(|&i| {
                ch.segments.get(i).is_some_and(|seg| {
                    !seg.phase.closed() && matches!(seg.kind, Segment::Thinking(_))
                })
            }),
        };
        let (key, created) = match found.and_then(|i| ch.segments.get(i)) {
            Some(Seg {
                kind: Segment::Thinking(k),
                ..
            }) => (*k, false),
            _ => {
                let k = ch.next_thinking;
                ch.new_segment(Segment::Thinking(k), src, max_blocks)?;
                ch.next_thinking += 1;
                (k, true)
            }
        };
        if let Err(e) = ch.thinking.add(key, frag) {
            // A block that was only just created for this fragment goes away with it.
            if created {
                ch.segments.pop();
                if let Some(s) = src {
                    ch.src.remove(&s);
                }
            }
            return Err(e.into());
        }
        self.content_bytes = total;
        if !frag.thinking.is_empty() {
            live.content(|| LiveEvent::ThinkingDelta {
                choice: c,
                text: frag.thinking.to_owned(),
            });
        }
        Ok(())
    }

    /// Opens a new call and returns its internal key. At a position that a
    /// fragment opened implicitly, the start completes that call instead; at
    /// any other position already taken it is a block opened twice (Q25); an id
    /// another call has is two calls with one id (Q25).
    pub(crate) fn new_call(&mut self, c: i64, o: Opening<'_>, live: &mut Live<'_>) -> R<i64> {
        let n =
            o.id.len()
                .saturating_add(o.name.len())
                .saturating_add(o.input.len())
                .saturating_add(o.state.map_or(0, |(s, _)| s.len()));
        let total = self.budget(n, || format!("a new tool call of choice {c}"))?;
        let max_blocks = self.limits.max_blocks;
        let ch = self.writable(c)?;
        if let Some(src) = o.src {
            if let Some(&at) = ch.src.get(&src) {
                let implicit = match ch.segments.get(at) {
                    Some(Seg {
                        kind: Segment::Tool(k),
                        phase: BlockPhase::Implicit,
                    }) if !o.implicit => Some(*k),
                    _ => None,
                };
                let Some(key) = implicit else {
                    return Err(violation(
                        Rule::OpenedTwice,
                        Some(describe_src(src)),
                        "a start event for a block that was already opened",
                    ));
                };
                // The start of a call whose fragments came first (Q7).
                if let Some(s) = ch.segments.get_mut(at) {
                    s.phase = s.phase.on(BlockEvent::Start, || describe_src(src))?;
                }
                if let Some(m) = ch.meta_mut(key) {
                    m.server_side |= o.server_side;
                    if let Some(k) = o.kind {
                        m.kind = Some(k.to_owned());
                    }
                }
                self.add_to_call(c, key, o.id, o.name, o.input, o.state, live)?;
                return Ok(key);
            }
        }
        if !o.id.is_empty() {
            if let Some(&other) = ch.by_id.get(o.id) {
                return Err(violation(
                    Rule::DuplicateId,
                    Some(format!("tool call {}", o.id)),
                    format!(
                        "a new call has the id of call {other} of choice {c}; ids must be unique"
                    ),
                ));
            }
        }
        if ch.segments.len() >= max_blocks {
            return Err(Fail::Limit {
                limit: Limit::MaxBlocks,
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        let key = i64::try_from(ch.calls.len()).unwrap_or(i64::MAX);
        let (ps, pf) = o.state.map_or((None, ""), |(s, f)| (Some(s), f));
        ch.tools.add(key, o.id, o.name, o.input, ps, pf)?;
        let seg = ch.new_segment(Segment::Tool(key), o.src, max_blocks)?;
        if o.implicit {
            if let Some(s) = ch.segments.get_mut(seg) {
                s.phase = BlockPhase::Implicit;
            }
        }
        super::state::push_small(
            &mut ch.calls,
            CallMeta {
                provider_index: o.provider_index,
                server_side: o.server_side,
                kind: o.kind.map(str::to_owned),
                announced_unnamed: o.name.is_empty(),
                seg,
                ..CallMeta::default()
            },
        );
        if let Some(p) = o.provider_index {
            ch.by_provider_index.insert(p, key);
        }
        if !o.id.is_empty() {
            ch.by_id.insert(o.id.to_owned(), key);
        }
        ch.latest = Some(key);
        let shown = live.id(|| ch.call_id(c, key));
        self.content_bytes = total;
        let (name, input) = (o.name, o.input);
        live.started(c, key, shown, name);
        if !input.is_empty() {
            live.input(c, key, input, false);
        }
        Ok(key)
    }

    /// The call at block position `src` for an input delta. A delta whose block
    /// never started opens the call implicitly (kept, Q7; its start may still
    /// come); a position holding another kind of block, or a stopped one, is
    /// refused (Q25).
    pub(crate) fn call_for_delta(&mut self, c: i64, src: Src, live: &mut Live<'_>) -> R<i64> {
        let ch = self.writable(c)?;
        if let Some(key) = ch.call_at(src) {
            return Ok(key);
        }
        ch.segment_for(src, "tool input", |k| matches!(k, Segment::Tool(_)))?;
        let opening = Opening {
            provider_index: Some(src.1),
            src: Some(src),
            implicit: true,
            ..Opening::default()
        };
        self.new_call(c, opening, live)
    }

    /// Adds a fragment to an open call. Q10: once the call's input is complete
    /// JSON, a fragment that repeats it from the start is a resend: an equal one
    /// is dropped, a longer one only adds what it has beyond. A fragment for a
    /// stopped call is refused (Q25) unless it changes nothing (a restatement).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_to_call(
        &mut self,
        c: i64,
        key: i64,
        id: &str,
        name: &str,
        input: &str,
        state: Option<(&str, &str)>,
        live: &mut Live<'_>,
    ) -> R {
        let n = fragment_bytes(id, name, input, state);
        let total = self.budget(n, || format!("tool call {key} of choice {c}"))?;
        let ch = self.writable(c)?;
        if ch.fragment(c, key, id, name, input, state, live)? {
            self.content_bytes = total;
        }
        Ok(())
    }

    /// An input fragment for the call at block position `src`: what
    /// [`Stream::call_for_delta`] then [`Stream::add_to_call`] with the
    /// fragment alone do, the choice looked up once when the call is open
    /// (the usual delta).
    pub(crate) fn input_delta(&mut self, c: i64, src: Src, input: &str, live: &mut Live<'_>) -> R {
        self.delta_to_call(c, src, "", "", input, None, live)
    }

    /// A fragment (id, name, input, state) for the call at block position
    /// `src`: what [`Stream::call_for_delta`] then [`Stream::add_to_call`] do,
    /// the choice looked up once when the call is open.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn delta_to_call(
        &mut self,
        c: i64,
        src: Src,
        id: &str,
        name: &str,
        input: &str,
        state: Option<(&str, &str)>,
        live: &mut Live<'_>,
    ) -> R {
        let (used, max) = (self.content_bytes, self.limits.max_total_bytes);
        let ch = self.writable(c)?;
        let Some(key) = ch.call_at(src) else {
            let key = self.call_for_delta(c, src, live)?;
            return self.add_to_call(c, key, id, name, input, state, live);
        };
        let n = fragment_bytes(id, name, input, state);
        let total =
            super::state::budget(used, max, n, || format!("tool call {key} of choice {c}"))?;
        if ch.fragment(c, key, id, name, input, state, live)? {
            self.content_bytes = total;
        }
        Ok(())
    }
}

/// The bytes a fragment adds to the stream's budget.
fn fragment_bytes(id: &str, name: &str, input: &str, state: Option<(&str, &str)>) -> usize {
    id.len()
        .saturating_add(name.len())
        .saturating_add(input.len())
        .saturating_add(state.map_or(0, |(s, _)| s.len()))
}

impl Choice {
    /// [`Stream::add_to_call`] once the budget is checked and the choice
    /// found: whether the call took the fragment (the budget's new total
    /// then holds).
    #[allow(clippy::too_many_arguments)]
    fn fragment(
        &mut self,
        c: i64,
        key: i64,
        id: &str,
        name: &str,
        input: &str,
        state: Option<(&str, &str)>,
        live: &mut Live<'_>,
    ) -> R<bool> {
        let ch = self;
        let Some(current) = ch.tools.get(key) else {
            return Ok(false);
        };
        let changes = !input.is_empty()
            || (!id.is_empty() && current.id != id)
            || (!name.is_empty() && current.name != name)
            || state.is_some_and(|(s, f)| {
                !s.is_empty()
                    && !f.is_empty()
                    && (current.provider_state.as_deref() != Some(s)
                        || current.provider_state_format != f)
            });
        if !changes {
            return Ok(false);
        }
        // What the checks below need of the call, read in this one lookup.
        let had_name = !current.name.is_empty();
        let rest_at = current.input.len();
        let resent = rest_at > 0 && input.len() >= rest_at && input.starts_with(&current.input);
        if ch.call_closed(key) {
            return Err(violation(
                Rule::AfterStop,
                Some(ch.call_label(c, key)),
                "a fragment arrived after the call's block stopped",
            ));
        }
        if !id.is_empty() && current.id != id {
            if let Some(&other) = ch.by_id.get(id).filter(|&&k| k != key) {
                return Err(violation(
                    Rule::DuplicateId,
                    Some(format!("tool call {id}")),
                    format!("call {key} would take the id of call {other} of choice {c}"),
                ));
            }
        }
        let mut piece = input;
        if resent && ch.input_complete(key) {
            piece = input.get(rest_at..).unwrap_or_default();
        }
        let (ps, pf) = state.map_or((None, ""), |(s, f)| (Some(s), f));
        ch.tools.add(key, id, name, piece, ps, pf)?;
        if !id.is_empty() && ch.by_id.get(id) != Some(&key) {
            ch.by_id.insert(id.to_owned(), key);
        }
        // Q7: a call announced without a name is announced again once it has one.
        let mut announce = None;
        if !had_name && !name.is_empty() {
            if let Some(m) = ch.meta_mut(key).filter(|m| m.announced_unnamed) {
                m.announced_unnamed = false;
                announce = Some(live.id(|| ch.call_id(c, key)));
            }
        }
        if let Some(id_now) = announce {
            live.started(c, key, id_now, name);
        }
        if !piece.is_empty() {
            live.input(c, key, piece, false);
        }
        Ok(true)
    }
}

impl Stream {
    /// Replaces a call's whole input (a restated input that disagrees with
    /// the deltas; a call rebuilt from paths). After the call stopped
    /// only a restatement of the same input is accepted.
    pub(crate) fn replace_input(
        &mut self,
        c: i64,
        key: i64,
        input: &str,
        live: &mut Live<'_>,
    ) -> R {
        let total = self.budget(input.len(), || format!("tool call {key} of choice {c}"))?;
        let ch = self.writable(c)?;
        if ch.tools.get(key).is_some_and(|b| b.input == input) {
            return Ok(());
        }
        if ch.call_closed(key) {
            return Err(violation(
                Rule::AfterStop,
                Some(ch.call_label(c, key)),
                "the call's input was restated differently after its block stopped",
            ));
        }
        let prefix_len = ch
            .tools
            .get(key)
            .map(|b| b.input.as_str())
            .filter(|old| input.starts_with(old))
            .map(str::len);
        ch.tools.replace_input(key, input)?;
        if let Some(m) = ch.meta_mut(key) {
            m.complete_cache = None;
            if prefix_len.is_none() {
                m.revision = m.revision.wrapping_add(1);
            }
        }
        self.content_bytes = total;
        // Live consumers append fragments: when the new text extends the old one,
        // send what is new; otherwise the whole text, marked as replacing the old
        // (an appender that guessed could take it for a continuation: `{"a":` then
        // `{"b":1}` parses as one value).
        let (fragment, replaces) = match prefix_len {
            Some(l) => (input.get(l..).unwrap_or_default(), false),
            None => (input, true),
        };
        if !fragment.is_empty() || replaces {
            live.input(c, key, fragment, replaces);
        }
        Ok(())
    }

    /// [`Stream::replace_input`] with the input call `key` holds already (a
    /// restatement a reader found equal without decoding it): checked as
    /// that checks it, nothing changed.
    pub(crate) fn restate_input(&mut self, c: i64, key: i64) -> R {
        let held = self.choices.get(&c).and_then(|ch| ch.tools.get(key));
        self.budget(held.map_or(0, |b| b.input.len()), || {
            format!("tool call {key} of choice {c}")
        })?;
        self.writable(c)?;
        Ok(())
    }

    /// Adds the result of a server-side tool (Q27) as a block of its own.
    pub(crate) fn tool_result(&mut self, c: i64, src: Option<Src>, block: ToolResultBlock) -> R {
        let n = block
            .provider_state
            .as_deref()
            .map_or(0, str::len)
            .saturating_add(block.tool_use_id.len());
        let total = self.budget(n, || format!("a tool result of choice {c}"))?;
        let max_blocks = self.limits.max_blocks;
        let ch = self.writable(c)?;
        if let Some(s) = src {
            if ch.src.contains_key(&s) {
                return Err(violation(
                    Rule::OpenedTwice,
                    Some(describe_src(s)),
                    "a start event for a block that was already opened",
                ));
            }
        }
        ch.results.push(block);
        let at = ch.results.len() - 1;
        ch.new_segment(Segment::Result(at), src, max_blocks)?;
        self.content_bytes = total;
        Ok(())
    }

    /// Appends streamed output to the result block at `src` (server-side
    /// tools), as text in its content.
    pub(crate) fn result_text(&mut self, c: i64, src: Src, piece: &str) -> R {
        let total = self.budget(piece.len(), || format!("a tool result of choice {c}"))?;
        let max_bytes = self.limits.max_input_bytes;
        let ch = self.writable(c)?;
        let at = ch.segment_for(src, "tool result output", |k| {
            matches!(k, Segment::Result(_))
        })?;
        let Some(Seg {
            kind: Segment::Result(i),
            ..
        }) = at.and_then(|a| ch.segments.get(a))
        else {
            return Err(violation(
                Rule::WrongBlock,
                Some(describe_src(src)),
                "tool result output arrived for a block that is not a tool result",
            ));
        };
        let i = *i;
        let Some(result) = ch.results.get_mut(i) else {
            return Ok(());
        };
        let used: usize = result
            .content
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.len(),
                _ => 0,
            })
            .sum();
        if used.saturating_add(piece.len()) > max_bytes {
            return Err(Fail::Limit {
                limit: Limit::MaxInputBytes,
                max: max_bytes,
                would_be: used.saturating_add(piece.len()),
                target: format!("the result of tool call {}", result.tool_use_id),
            });
        }
        match result.content.last_mut() {
            Some(Block::Text(t)) => t.push_str(piece),
            _ => result.content.push(Block::Text(piece.to_owned())),
        }
        self.content_bytes = total;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::state::{LiveDetail, NS_BLOCK};
    use crate::providers::AssemblerLimits;

    fn stream() -> Stream {
        Stream::new(AssemblerLimits::default())
    }

    #[test]
    fn text_without_a_position_continues_the_last_text_block() {
        let mut s = stream();
        let mut live = Live::off();
        s.text(0, TextKind::Text, None, "a", false, &mut live)
            .unwrap();
        s.text(0, TextKind::Text, None, "b", false, &mut live)
            .unwrap();
        s.text(0, TextKind::Refusal, None, "no", false, &mut live)
            .unwrap();
        s.text(0, TextKind::Text, None, "c", false, &mut live)
            .unwrap();
        let m = &s.messages()[0];
        assert_eq!(m.text, "abc");
        assert_eq!(m.blocks.len(), 3);
    }

    #[test]
    fn a_fragment_after_the_calls_stop_is_refused_and_a_resend_is_dropped() {
        let mut s = stream();
        let mut events = Vec::new();
        let mut live = Live::new(Some(&mut events), LiveDetail::Full);
        let src = (NS_BLOCK, 0, 0);
        let opening = Opening {
            src: Some(src),
            id: "c1",
            name: "f",
            ..Opening::default()
        };
        let key = s.new_call(0, opening, &mut live).unwrap();
        s.add_to_call(0, key, "", "", "{\"a\":1}", None, &mut live)
            .unwrap();
        // Q10: the complete input sent again from the start adds nothing.
        s.add_to_call(0, key, "", "", "{\"a\":1}", None, &mut live)
            .unwrap();
        s.stop_block(0, src, &mut live).unwrap();
        let late = s.add_to_call(0, key, "", "", "x", None, &mut live);
        assert!(matches!(
            late,
            Err(Fail::Protocol {
                rule: Rule::AfterStop,
                ..
            })
        ));
        let m = &s.messages()[0];
        assert_eq!(m.tool_uses[0].block.input, "{\"a\":1}");
        assert!(m.tool_uses[0].finished);
        let deltas = events
            .iter()
            .filter(|e| matches!(e, LiveEvent::ToolInputDelta { .. }))
            .count();
        assert_eq!(deltas, 1);
    }

    #[test]
    fn an_implicit_call_takes_its_start_once() {
        let mut s = stream();
        let mut live = Live::off();
        let src = (NS_BLOCK, 2, 0);
        let key = s.call_for_delta(0, src, &mut live).unwrap();
        let start = Opening {
            src: Some(src),
            id: "c",
            name: "f",
            ..Opening::default()
        };
        assert_eq!(s.new_call(0, start, &mut live).ok(), Some(key));
        let again = s.new_call(0, start, &mut live);
        assert!(matches!(
            again,
            Err(Fail::Protocol {
                rule: Rule::OpenedTwice,
                ..
            })
        ));
    }
}
