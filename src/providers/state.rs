//! Per-choice state shared by every adapter: the seed accumulators, the map from
//! provider positions to internal call keys, blocks in stream order, the end of
//! the message, and the live-event sink.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::DecodeKind;
use super::json::{is_complete_json, starts_value};
use super::{AssembledMessage, AssemblerLimits, CallProblem, LiveEvent, ProblemKind, ToolUse};
use crate::accumulate::{self, Appender, Thinking, ThinkingFragment, ToolUseLimits, ToolUses};
use crate::blocks::{Block, ThinkingBlock};

/// Why an adapter refused an event; the assembler adds which event it was.
#[derive(Debug)]
pub(crate) enum Fail {
    Limit {
        limit: &'static str,
        max: usize,
        would_be: usize,
        target: String,
    },
    Provider {
        error_type: String,
        message: String,
    },
    Bad {
        kind: DecodeKind,
        detail: String,
    },
}

impl Fail {
    /// The public error, naming the event that caused it.
    pub(crate) fn into_error(self, event: super::EventRef) -> super::Error {
        use super::Error;
        match self {
            Fail::Limit {
                limit,
                max,
                would_be,
                target,
            } => Error::Limit {
                event,
                limit,
                max,
                would_be,
                target,
            },
            Fail::Provider {
                error_type,
                message,
            } => Error::Provider {
                event,
                error_type,
                message,
            },
            Fail::Bad { kind, detail } => Error::Decode {
                event,
                kind,
                detail,
            },
        }
    }
}

impl From<accumulate::Error> for Fail {
    fn from(e: accumulate::Error) -> Self {
        match e {
            accumulate::Error::Limit {
                limit,
                max,
                would_be,
                target,
            } => Fail::Limit {
                limit,
                max,
                would_be,
                target,
            },
        }
    }
}

pub(crate) type R<T = ()> = Result<T, Fail>;

/// Where live events go; `None` costs one branch per would-be event.
pub(crate) struct Live<'a>(pub Option<&'a mut Vec<LiveEvent>>);

impl Live<'_> {
    #[inline]
    pub(crate) fn emit(&mut self, make: impl FnOnce() -> LiveEvent) {
        if let Some(sink) = self.0.as_deref_mut() {
            sink.push(make());
        }
    }
}

/// A provider position of a block: (namespace, major, minor).
pub(crate) type Src = (u8, i64, i64);
pub(crate) const NS_BLOCK: u8 = 0; // Anthropic / Bedrock content block index, Cohere content index
pub(crate) const NS_TOOL: u8 = 1; // Cohere tool-call index, Responses output index of a call
pub(crate) const NS_TEXT: u8 = 2; // Responses (output_index, content_index) of text
pub(crate) const NS_REFUSAL: u8 = 3;
pub(crate) const NS_REASONING: u8 = 4; // Responses reasoning item by output index
pub(crate) const NS_PLAN: u8 = 5; // Cohere tool plan

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    Text,
    Refusal,
}

#[derive(Debug, Clone)]
pub(crate) enum Segment {
    Text(Appender),
    Refusal(Appender),
    Thinking(i64),
    Tool(i64),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct CallMeta {
    pub(crate) provider_index: Option<i64>,
    pub(crate) finished: bool,
    pub(crate) server_side: bool,
    /// `(input length, complete?)` of the last completeness check (Q10 / Q20).
    complete_cache: Option<(usize, bool)>,
    /// The time `ToolCallStarted` went out with an empty name (Q7).
    announced_unnamed: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Choice {
    pub(crate) tools: ToolUses,
    pub(crate) calls: Vec<CallMeta>,
    thinking: Thinking,
    next_thinking: i64,
    segments: Vec<Segment>,
    src: BTreeMap<Src, usize>,
    /// Provider index → the key of the newest call opened at it (openai-chat).
    pub(crate) by_provider_index: BTreeMap<i64, i64>,
    /// Provider id → key.
    pub(crate) by_id: BTreeMap<String, i64>,
    /// The newest call (Q1: an index-less, id-less fragment continues it).
    pub(crate) latest: Option<i64>,
    finish_reason: Option<String>,
    ended: bool,
    normal: bool,
    failed: bool,
    done_emitted: bool,
    problems: Vec<CallProblem>,
}

impl Choice {
    fn new(limits: &AssemblerLimits) -> Self {
        Self {
            tools: ToolUses::new(ToolUseLimits {
                max_calls: limits.max_calls,
                max_input_bytes: limits.max_input_bytes,
                max_total_bytes: limits.max_total_bytes,
            }),
            calls: Vec::new(),
            thinking: Thinking::new(limits.max_blocks, limits.max_total_bytes),
            next_thinking: 0,
            segments: Vec::new(),
            src: BTreeMap::new(),
            by_provider_index: BTreeMap::new(),
            by_id: BTreeMap::new(),
            latest: None,
            finish_reason: None,
            ended: false,
            normal: false,
            failed: false,
            done_emitted: false,
            problems: Vec::new(),
        }
    }

    pub(crate) fn meta(&self, key: i64) -> Option<&CallMeta> {
        usize::try_from(key).ok().and_then(|k| self.calls.get(k))
    }

    fn meta_mut(&mut self, key: i64) -> Option<&mut CallMeta> {
        usize::try_from(key)
            .ok()
            .and_then(|k| self.calls.get_mut(k))
    }

    /// The call a provider position was opened at, if any.
    pub(crate) fn call_at(&self, src: Src) -> Option<i64> {
        match self.src.get(&src).and_then(|&s| self.segments.get(s)) {
            Some(Segment::Tool(k)) => Some(*k),
            _ => None,
        }
    }

    /// True when a block was opened at this provider position.
    pub(crate) fn has_src(&self, src: Src) -> bool {
        self.src.contains_key(&src)
    }

    /// The call's input so far is complete JSON (cached by input length).
    pub(crate) fn input_complete(&mut self, key: i64) -> bool {
        let Some(input) = self.tools.get(key).map(|b| b.input.as_str()) else {
            return false;
        };
        let len = input.len();
        let cached = self.meta(key).and_then(|m| m.complete_cache);
        if let Some((l, c)) = cached {
            if l == len {
                return c;
            }
        }
        let complete = is_complete_json(input);
        if let Some(m) = self.meta_mut(key) {
            m.complete_cache = Some((len, complete));
        }
        complete
    }

    /// Q20: a fragment without an id that brings a name and starts a new JSON
    /// value after the call's input is already complete opens a new call.
    pub(crate) fn opens_new_value(&mut self, key: i64, id: &str, name: &str, input: &str) -> bool {
        id.is_empty() && !name.is_empty() && starts_value(input) && self.input_complete(key)
    }

    fn new_segment(&mut self, seg: Segment, src: Option<Src>, max_blocks: usize) -> R<usize> {
        if self.segments.len() >= max_blocks {
            return Err(Fail::Limit {
                limit: "max_blocks",
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        self.segments.push(seg);
        let at = self.segments.len() - 1;
        if let Some(src) = src {
            self.src.insert(src, at);
        }
        Ok(at)
    }

    fn finish_all(&mut self, choice: i64, live: &mut Live<'_>) {
        for (key, meta) in (0_i64..).zip(self.calls.iter_mut()) {
            if !meta.finished {
                meta.finished = true;
                live.emit(|| LiveEvent::ToolCallFinished { choice, index: key });
            }
        }
    }

    fn complete(&self) -> bool {
        self.ended && self.normal && !self.failed
    }
}

/// Is this finish / stop reason a normal end (the model finished, or stopped to call tools)?
pub(crate) fn is_normal_reason(reason: &str) -> bool {
    const NORMAL: [&str; 10] = [
        "stop",
        "tool_calls",
        "function_call",
        "end_turn",
        "tool_use",
        "stop_sequence",
        "complete",
        "completed",
        "tool_call",
        "eos",
    ];
    NORMAL.iter().any(|n| n.eq_ignore_ascii_case(reason))
}

/// Everything one stream has accumulated.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub(crate) limits: AssemblerLimits,
    choices: BTreeMap<i64, Choice>,
    usage: Option<Map<String, Value>>,
    content_bytes: usize,
    closed: bool,
}

fn mint_id(choice: i64, key: i64) -> String {
    format!("call_{choice}_{key}")
}

impl Stream {
    pub(crate) fn new(limits: AssemblerLimits) -> Self {
        Self {
            limits,
            choices: BTreeMap::new(),
            usage: None,
            content_bytes: 0,
            closed: false,
        }
    }

    /// The choice, created on first use (bounded by `max_choices`).
    pub(crate) fn choice(&mut self, c: i64) -> R<&mut Choice> {
        if !self.choices.contains_key(&c) && self.choices.len() >= self.limits.max_choices {
            return Err(Fail::Limit {
                limit: "max_choices",
                max: self.limits.max_choices,
                would_be: self.limits.max_choices.saturating_add(1),
                target: format!("choice {c}"),
            });
        }
        let limits = &self.limits;
        Ok(self.choices.entry(c).or_insert_with(|| Choice::new(limits)))
    }

    pub(crate) fn existing(&mut self, c: i64) -> Option<&mut Choice> {
        self.choices.get_mut(&c)
    }

    /// Checks the stream-wide content budget for `n` more bytes.
    fn budget(&self, n: usize, target: impl FnOnce() -> String) -> R<usize> {
        match self.content_bytes.checked_add(n) {
            Some(t) if t <= self.limits.max_total_bytes => Ok(t),
            other => Err(Fail::Limit {
                limit: "max_total_bytes",
                max: self.limits.max_total_bytes,
                would_be: other.unwrap_or(usize::MAX),
                target: target(),
            }),
        }
    }

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
        let ch = self.choice(c)?;
        let found = match src {
            Some(s) => ch.src.get(&s).copied(),
            None => ch.segments.len().checked_sub(1),
        };
        let at = match found.and_then(|i| ch.segments.get(i).map(|seg| (i, seg))) {
            Some((i, Segment::Text(_))) if kind == TextKind::Text => i,
            Some((i, Segment::Refusal(_))) if kind == TextKind::Refusal => i,
            _ => {
                let seg = match kind {
                    TextKind::Text => Segment::Text(Appender::new("text", max_bytes)),
                    TextKind::Refusal => Segment::Refusal(Appender::new("refusal", max_bytes)),
                };
                ch.new_segment(seg, src, max_blocks)?
            }
        };
        if let Some(Segment::Text(a) | Segment::Refusal(a)) = ch.segments.get_mut(at) {
            a.add(text)?;
        }
        self.content_bytes = total;
        if !text.is_empty() {
            live.emit(|| match kind {
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
        let ch = self.choice(c)?;
        let found = match src {
            Some(s) => ch.src.get(&s).copied(),
            None => ch.segments.len().checked_sub(1),
        };
        let (key, created) = match found.and_then(|i| ch.segments.get(i)) {
            Some(Segment::Thinking(k)) => (*k, false),
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
            live.emit(|| LiveEvent::ThinkingDelta {
                choice: c,
                text: frag.thinking.to_owned(),
            });
        }
        Ok(())
    }

    /// Opens a new call and returns its internal key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_call(
        &mut self,
        c: i64,
        provider_index: Option<i64>,
        src: Option<Src>,
        id: &str,
        name: &str,
        input: &str,
        state: Option<(&str, &str)>,
        live: &mut Live<'_>,
    ) -> R<i64> {
        let n = id
            .len()
            .saturating_add(name.len())
            .saturating_add(input.len())
            .saturating_add(state.map_or(0, |(s, _)| s.len()));
        let total = self.budget(n, || format!("a new tool call of choice {c}"))?;
        let max_blocks = self.limits.max_blocks;
        let ch = self.choice(c)?;
        if ch.segments.len() >= max_blocks {
            return Err(Fail::Limit {
                limit: "max_blocks",
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        let key = i64::try_from(ch.calls.len()).unwrap_or(i64::MAX);
        let (ps, pf) = state.map_or((None, ""), |(s, f)| (Some(s), f));
        ch.tools.add(key, id, name, input, ps, pf)?;
        ch.new_segment(Segment::Tool(key), src, max_blocks)?;
        ch.calls.push(CallMeta {
            provider_index,
            announced_unnamed: name.is_empty(),
            ..CallMeta::default()
        });
        if let Some(p) = provider_index {
            ch.by_provider_index.insert(p, key);
        }
        if !id.is_empty() {
            ch.by_id.insert(id.to_owned(), key);
        }
        ch.latest = Some(key);
        self.content_bytes = total;
        live.emit(|| LiveEvent::ToolCallStarted {
            choice: c,
            index: key,
            id: if id.is_empty() {
                mint_id(c, key)
            } else {
                id.to_owned()
            },
            name: name.to_owned(),
        });
        if !input.is_empty() {
            live.emit(|| LiveEvent::ToolInputDelta {
                choice: c,
                index: key,
                fragment: input.to_owned(),
            });
        }
        Ok(key)
    }

    /// Adds a fragment to an open call. Q10: once the call's input is complete
    /// JSON, a fragment that repeats it from the start is a resend: an equal one
    /// is dropped, a longer one only adds what it has beyond.
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
        let n = id
            .len()
            .saturating_add(name.len())
            .saturating_add(input.len())
            .saturating_add(state.map_or(0, |(s, _)| s.len()));
        let total = self.budget(n, || format!("tool call {key} of choice {c}"))?;
        let ch = self.choice(c)?;
        let mut piece = input;
        if let Some(existing) = ch.tools.get(key).map(|b| b.input.as_str()) {
            if !existing.is_empty() && input.len() >= existing.len() && input.starts_with(existing)
            {
                let rest_at = existing.len();
                if ch.input_complete(key) {
                    piece = input.get(rest_at..).unwrap_or_default();
                }
            }
        }
        let had_name = ch.tools.get(key).is_some_and(|b| !b.name.is_empty());
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
                announce = Some(ch.tools.get(key).map(|b| b.id.clone()).unwrap_or_default());
            }
        }
        self.content_bytes = total;
        if let Some(id_now) = announce {
            live.emit(|| LiveEvent::ToolCallStarted {
                choice: c,
                index: key,
                id: if id_now.is_empty() {
                    mint_id(c, key)
                } else {
                    id_now
                },
                name: name.to_owned(),
            });
        }
        if !piece.is_empty() {
            live.emit(|| LiveEvent::ToolInputDelta {
                choice: c,
                index: key,
                fragment: piece.to_owned(),
            });
        }
        Ok(())
    }

    /// Replaces a call's whole input (Responses `done` text that disagrees with
    /// the deltas; a Gemini call rebuilt from its paths).
    pub(crate) fn replace_input(
        &mut self,
        c: i64,
        key: i64,
        input: &str,
        live: &mut Live<'_>,
    ) -> R {
        let total = self.budget(input.len(), || format!("tool call {key} of choice {c}"))?;
        let ch = self.choice(c)?;
        if ch.tools.get(key).is_some_and(|b| b.input == input) {
            return Ok(());
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
        }
        self.content_bytes = total;
        // Live consumers append fragments: when the new text extends the old one,
        // send what is new; otherwise they see the whole text once more.
        let fragment = match prefix_len {
            Some(l) => input.get(l..).unwrap_or_default(),
            None => input,
        };
        if !fragment.is_empty() {
            live.emit(|| LiveEvent::ToolInputDelta {
                choice: c,
                index: key,
                fragment: fragment.to_owned(),
            });
        }
        Ok(())
    }

    /// Marks a call finished (its block ended).
    pub(crate) fn finish_call(&mut self, c: i64, key: i64, live: &mut Live<'_>) {
        if let Some(meta) = self.choices.get_mut(&c).and_then(|ch| ch.meta_mut(key)) {
            if !meta.finished {
                meta.finished = true;
                live.emit(|| LiveEvent::ToolCallFinished {
                    choice: c,
                    index: key,
                });
            }
        }
    }

    pub(crate) fn set_server_side(&mut self, c: i64, key: i64) {
        if let Some(meta) = self.choices.get_mut(&c).and_then(|ch| ch.meta_mut(key)) {
            meta.server_side = true;
        }
    }

    /// Records the provider's finish / stop reason (last one wins).
    pub(crate) fn set_finish_reason(&mut self, c: i64, reason: &str) -> R {
        let ch = self.choice(c)?;
        if ch.finish_reason.as_deref() != Some(reason) {
            ch.finish_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    /// An explicit end of the message: finishes its calls and decides whether
    /// it ended normally (Q15) from the recorded reason (none recorded: normal).
    pub(crate) fn end(&mut self, c: i64, live: &mut Live<'_>) -> R {
        let ch = self.choice(c)?;
        ch.ended = true;
        ch.normal = ch.finish_reason.as_deref().is_none_or(is_normal_reason);
        ch.finish_all(c, live);
        ch.done_emitted = true;
        let (finish_reason, complete) = (ch.finish_reason.clone(), ch.complete());
        live.emit(|| LiveEvent::MessageDone {
            choice: c,
            finish_reason,
            complete,
        });
        Ok(())
    }

    /// An end that is not normal whatever the reason says (Responses
    /// `response.incomplete`, a provider error).
    pub(crate) fn end_abnormal(&mut self, c: i64, live: &mut Live<'_>) -> R {
        self.end(c, live)?;
        if let Some(ch) = self.choices.get_mut(&c) {
            ch.normal = false;
        }
        Ok(())
    }

    /// A provider error: no choice of this stream can be complete any more.
    pub(crate) fn fail_all(&mut self) {
        if self.choices.is_empty() {
            let limits = &self.limits;
            self.choices.insert(0, Choice::new(limits));
        }
        for ch in self.choices.values_mut() {
            ch.failed = true;
        }
    }

    /// Merges a usage object: its top-level keys override earlier ones.
    pub(crate) fn merge_usage(&mut self, usage: Map<String, Value>) {
        match &mut self.usage {
            Some(u) => u.extend(usage),
            None => self.usage = Some(usage),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// End of stream: finishes every call, reports unnamed calls (Q7), and
    /// sends `MessageDone` for every message that had not ended.
    pub(crate) fn close(&mut self, live: &mut Live<'_>) {
        if self.closed {
            return;
        }
        self.closed = true;
        for (&c, ch) in &mut self.choices {
            ch.finish_all(c, live);
            for (key, block) in ch.tools.iter() {
                if block.name.is_empty() {
                    let id = if block.id.is_empty() {
                        mint_id(c, key)
                    } else {
                        block.id.clone()
                    };
                    ch.problems.push(CallProblem {
                        index: key,
                        message: format!(
                            "tool call {id} (choice {c}, index {key}) never received a name"
                        ),
                        id,
                        kind: ProblemKind::Unnamed,
                    });
                }
            }
            if !ch.done_emitted {
                ch.done_emitted = true;
                let (finish_reason, complete) = (ch.finish_reason.clone(), ch.complete());
                live.emit(|| LiveEvent::MessageDone {
                    choice: c,
                    finish_reason,
                    complete,
                });
            }
        }
    }

    /// The input of every call not finished yet, as `(choice, index, input)`.
    pub(crate) fn open_inputs(&self) -> Vec<(i64, i64, &str)> {
        let mut out = Vec::new();
        for (&c, ch) in &self.choices {
            for (key, block) in ch.tools.iter() {
                if ch.meta(key).is_some_and(|m| !m.finished) {
                    out.push((c, key, block.input.as_str()));
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

    fn message(&self, c: i64, ch: &Choice) -> AssembledMessage {
        let thinking: BTreeMap<i64, &ThinkingBlock> = ch.thinking.iter().collect();
        let tool = |key: i64| -> Option<ToolUse> {
            let block = ch.tools.get(key)?;
            let meta = ch.meta(key).cloned().unwrap_or_default();
            let mut block = block.clone();
            let id_minted = block.id.is_empty();
            if id_minted {
                block.id = mint_id(c, key);
            }
            Some(ToolUse {
                block,
                index: key,
                provider_index: meta.provider_index,
                id_minted,
                finished: meta.finished,
                server_side: meta.server_side,
            })
        };
        let mut text = String::new();
        let mut blocks = Vec::with_capacity(ch.segments.len());
        for seg in &ch.segments {
            match seg {
                Segment::Text(a) => {
                    let t = a.block().unwrap_or_default();
                    text.push_str(t);
                    blocks.push(Block::Text(t.to_owned()));
                }
                Segment::Refusal(a) => {
                    blocks.push(Block::Refusal(a.block().unwrap_or_default().to_owned()))
                }
                Segment::Thinking(k) => {
                    if let Some(b) = thinking.get(k) {
                        blocks.push(Block::Thinking((*b).clone()));
                    }
                }
                Segment::Tool(k) => {
                    if let Some(t) = tool(*k) {
                        blocks.push(Block::ToolUse(t.block));
                    }
                }
            }
        }
        let mut tool_uses: Vec<ToolUse> = ch.tools.iter().filter_map(|(k, _)| tool(k)).collect();
        // Q3: ascending provider index (ties, and calls without one, in arrival order).
        tool_uses.sort_by_key(|t| (t.provider_index.unwrap_or(i64::MAX), t.index));
        AssembledMessage {
            choice: c,
            blocks,
            tool_uses,
            text,
            finish_reason: ch.finish_reason.clone(),
            usage: self.usage.clone(),
            complete: ch.complete(),
            errors: ch.problems.clone(),
        }
    }
}

/// Deserialises an object into a usage map; `null` is `None`.
pub(crate) fn usage_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    Option::<Map<String, Value>>::deserialize(d)
}
