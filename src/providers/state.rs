//! Per-choice state shared by every adapter: the seed accumulators, the map from
//! provider positions to internal call keys, blocks in stream order, and the
//! protocol state of every block, call and message.
//!
//! The protocol lives here, in one place, for every dialect (QUIRKS Q24–Q26):
//! each block has an explicit state (opened, then stopped), each call one more
//! (opened implicitly by a delta that came before its start), and each message
//! one (started, ended with or without its reason), and every method that
//! changes content checks them before it changes anything. An adapter only says
//! what the event means ("a delta for block 3", "block 3 stopped", "the message
//! ended"); whether that is allowed is decided here.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{DecodeKind, Rule};
use super::json::{is_complete_json, starts_value};
use super::outcome::{finish_of, tokens_of};
use super::{
    AssembledMessage, AssemblerLimits, Dialect, LiveEvent, Problem, ProblemKind, Skipped, ToolUse,
};
use crate::accumulate::{self, Appender, Thinking, ThinkingFragment, ToolUseLimits, ToolUses};
use crate::blocks::{Block, ThinkingBlock, ToolResultBlock};

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
        raw: Option<String>,
    },
    Bad {
        kind: DecodeKind,
        detail: String,
    },
    Protocol {
        rule: Rule,
        target: Option<String>,
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
                raw,
            } => Error::Provider {
                event,
                error_type,
                message,
                raw,
            },
            Fail::Bad { kind, detail } => Error::Decode {
                event,
                kind,
                detail,
            },
            Fail::Protocol {
                rule,
                target,
                detail,
            } => Error::Protocol {
                event,
                rule,
                target,
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

pub(crate) fn violation(rule: Rule, target: Option<String>, detail: impl Into<String>) -> Fail {
    Fail::Protocol {
        rule,
        target,
        detail: detail.into(),
    }
}

/// `{"error": {...}}` chunks (OpenAI-compatible servers, OpenRouter, vLLM,
/// Groq), Anthropic and Responses error events. Q35: the error's type is the
/// most specific one sent: a string `code` (`tool_use_failed`) before the
/// `type` (`invalid_request_error`), a numeric code (an HTTP status) after it.
pub(crate) fn provider_error(err: &Value) -> Fail {
    let field = |k: &str| -> Option<String> {
        err.get(k).and_then(|v| match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let string_code = err
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    let message = field("message").unwrap_or_else(|| err.to_string());
    let error_type = string_code
        .or_else(|| field("type"))
        .or_else(|| field("code"))
        .or_else(|| field("status"))
        .unwrap_or_default();
    Fail::Provider {
        error_type,
        message,
        raw: (!err.is_null()).then(|| err.to_string()),
    }
}

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

fn describe_src(src: Src) -> String {
    match src.0 {
        NS_BLOCK => format!("block {}", src.1),
        NS_TOOL => format!("tool call at position {}", src.1),
        NS_TEXT | NS_REFUSAL => format!("content part {} of output item {}", src.2, src.1),
        NS_REASONING => format!("reasoning item {}", src.1),
        NS_PLAN => "the tool plan".to_owned(),
        _ => format!("position {}", src.1),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    Text,
    Refusal,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Segment {
    Text(Appender),
    Refusal(Appender),
    Thinking(i64),
    Tool(i64),
    /// The result of a server-side tool, by its place in `Choice::results`.
    Result(usize),
    /// A block that was stopped before anything was in it (it gives no output,
    /// but its position is taken).
    Empty,
}

impl Segment {
    fn name(&self) -> &'static str {
        match self {
            Segment::Text(_) => "a text block",
            Segment::Refusal(_) => "a refusal block",
            Segment::Thinking(_) => "a thinking block",
            Segment::Tool(_) => "a tool call",
            Segment::Result(_) => "a tool result",
            Segment::Empty => "an empty block",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Seg {
    kind: Segment,
    stopped: bool,
}

/// Where a call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) enum Phase {
    /// Created by a fragment that came before the call's own start event (kept,
    /// Q7); its start may still come, once.
    Implicit,
    /// Opened; fragments may come.
    #[default]
    Open,
    /// Its block stopped (or the message ended): nothing may change it any more.
    Stopped,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct CallMeta {
    pub(crate) provider_index: Option<i64>,
    pub(crate) phase: Phase,
    pub(crate) server_side: bool,
    /// The provider's own type of the call when it is not a JSON function call.
    pub(crate) kind: Option<String>,
    /// `(input length, complete?)` of the last completeness check (Q10 / Q20).
    complete_cache: Option<(usize, bool)>,
    /// The time `ToolCallStarted` went out with an empty name (Q7).
    announced_unnamed: bool,
    /// The segment of the call.
    seg: usize,
    /// Bumped each time the input is replaced by text that does not extend it;
    /// between bumps the input only grows at its end (for live readers).
    pub(crate) revision: u64,
}

/// What opens a call: [`Stream::new_call`]'s arguments.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Opening<'a> {
    /// The provider's own position of the call, for ordering (Q3).
    pub(crate) provider_index: Option<i64>,
    /// The block position the call occupies, when the dialect has blocks.
    pub(crate) src: Option<Src>,
    pub(crate) id: &'a str,
    pub(crate) name: &'a str,
    pub(crate) input: &'a str,
    pub(crate) state: Option<(&'a str, &'a str)>,
    /// The provider's type of the call when it is not a JSON function call (Q27, Q28).
    pub(crate) kind: Option<&'a str>,
    pub(crate) server_side: bool,
    /// Opened by a fragment ahead of its start event.
    pub(crate) implicit: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Choice {
    pub(crate) tools: ToolUses,
    pub(crate) calls: Vec<CallMeta>,
    thinking: Thinking,
    next_thinking: i64,
    segments: Vec<Seg>,
    results: Vec<ToolResultBlock>,
    #[serde(with = "crate::statics::pairs")]
    src: BTreeMap<Src, usize>,
    /// Provider index → the key of the newest call opened at it (openai-chat).
    pub(crate) by_provider_index: BTreeMap<i64, i64>,
    /// Provider id → key.
    pub(crate) by_id: BTreeMap<String, i64>,
    /// The newest call (Q1: an index-less, id-less fragment continues it).
    pub(crate) latest: Option<i64>,
    finish_reason: Option<String>,
    started: bool,
    ended: bool,
    normal: bool,
    /// Ended by an event that is never a normal end, whatever its reason says.
    abnormal: bool,
    failed: bool,
    done_emitted: bool,
    problems: Vec<Problem>,
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
            results: Vec::new(),
            src: BTreeMap::new(),
            by_provider_index: BTreeMap::new(),
            by_id: BTreeMap::new(),
            latest: None,
            finish_reason: None,
            started: false,
            ended: false,
            normal: false,
            abnormal: false,
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
            Some(Seg {
                kind: Segment::Tool(k),
                ..
            }) => Some(*k),
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

    /// The call's id as shown (minted when the provider sent none), for messages.
    fn call_label(&self, c: i64, key: i64) -> String {
        match self.tools.get(key).map(|b| b.id.as_str()) {
            Some(id) if !id.is_empty() => format!("tool call {id}"),
            _ => format!("tool call {}", mint_id(c, key)),
        }
    }

    fn new_segment(&mut self, kind: Segment, src: Option<Src>, max_blocks: usize) -> R<usize> {
        if self.segments.len() >= max_blocks {
            return Err(Fail::Limit {
                limit: "max_blocks",
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        self.segments.push(Seg {
            kind,
            stopped: false,
        });
        let at = self.segments.len() - 1;
        if let Some(src) = src {
            self.src.insert(src, at);
        }
        Ok(at)
    }

    /// The segment at `src` for content of kind `want`: `Ok(Some(at))` when it
    /// exists, is of that kind and is not stopped; `Ok(None)` when nothing is
    /// there yet; a protocol error otherwise.
    fn segment_for(
        &self,
        src: Src,
        want: &'static str,
        fits: fn(&Segment) -> bool,
    ) -> R<Option<usize>> {
        let Some(&at) = self.src.get(&src) else {
            return Ok(None);
        };
        let Some(seg) = self.segments.get(at) else {
            return Ok(None);
        };
        if seg.stopped {
            return Err(violation(
                Rule::AfterStop,
                Some(describe_src(src)),
                format!("{want} arrived after the block stopped"),
            ));
        }
        if !fits(&seg.kind) {
            return Err(violation(
                Rule::WrongBlock,
                Some(describe_src(src)),
                format!("{want} arrived for {}", seg.kind.name()),
            ));
        }
        Ok(Some(at))
    }

    fn finish_all(&mut self, choice: i64, live: &mut Live<'_>) {
        for (key, meta) in (0_i64..).zip(self.calls.iter_mut()) {
            if meta.phase != Phase::Stopped {
                meta.phase = Phase::Stopped;
                live.emit(|| LiveEvent::ToolCallFinished { choice, index: key });
            }
        }
        for seg in &mut self.segments {
            seg.stopped = true;
        }
    }

    fn complete(&self, stream_problems: bool) -> bool {
        self.ended && self.normal && !self.failed && !stream_problems && self.problems.is_empty()
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

/// At most this many problems are kept per stream; later ones are counted.
const MAX_PROBLEMS: usize = 1000;
/// At most this many skipped events are listed per stream.
const MAX_SKIPPED: usize = 10_000;
/// Event types are cut to this many bytes in `skipped`.
const MAX_TYPE_BYTES: usize = 128;

/// Everything one stream has accumulated.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stream {
    pub(crate) limits: AssemblerLimits,
    choices: BTreeMap<i64, Choice>,
    usage: Option<Map<String, Value>>,
    content_bytes: usize,
    closed: bool,
    /// `[DONE]` was seen: nothing may follow.
    pub(crate) done: bool,
    /// The ordinal of the event being applied (for problems).
    pub(crate) ordinal: u64,
    /// Problems of the whole stream (every message carries them).
    problems: Vec<Problem>,
    problems_dropped: u64,
    skipped: Vec<Skipped>,
    /// Set by an adapter for an event it cannot read; the assembler decides
    /// whether it is skipped (Q29) or of another dialect (Q32).
    pub(crate) unknown: Option<String>,
    pub(crate) dialect: Option<Dialect>,
}

fn mint_id(choice: i64, key: i64) -> String {
    format!("call_{choice}_{key}")
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s.get(..end).unwrap_or_default())
}

impl Stream {
    pub(crate) fn new(limits: AssemblerLimits) -> Self {
        Self {
            limits,
            choices: BTreeMap::new(),
            usage: None,
            content_bytes: 0,
            closed: false,
            done: false,
            ordinal: 0,
            problems: Vec::new(),
            problems_dropped: 0,
            skipped: Vec::new(),
            unknown: None,
            dialect: None,
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

    /// The id of a call as messages show it (minted when the provider sent none).
    pub(crate) fn call_id(&self, c: i64, key: i64) -> String {
        match self.choices.get(&c).and_then(|ch| ch.tools.get(key)) {
            Some(b) if !b.id.is_empty() => b.id.clone(),
            _ => mint_id(c, key),
        }
    }

    pub(crate) fn existing(&mut self, c: i64) -> Option<&mut Choice> {
        self.choices.get_mut(&c)
    }

    /// Refuses anything after `[DONE]` (Q24).
    fn not_done(&self) -> R {
        if self.done {
            return Err(violation(
                Rule::AfterDone,
                None,
                "the stream sent [DONE] already",
            ));
        }
        Ok(())
    }

    /// The choice, for a change of its content: refused after `[DONE]` and after
    /// the message ended (Q24).
    fn writable(&mut self, c: i64) -> R<&mut Choice> {
        self.not_done()?;
        let ch = self.choice(c)?;
        if ch.ended {
            return Err(violation(
                Rule::AfterEnd,
                Some(format!("choice {c}")),
                match &ch.finish_reason {
                    Some(r) => format!("the message already ended (reason {r:?})"),
                    None => "the message already ended".to_owned(),
                },
            ));
        }
        Ok(ch)
    }

    /// Records an event that could not be applied, or another problem of the
    /// whole stream: every message carries it and none is complete.
    pub(crate) fn problem(&mut self, kind: ProblemKind, choice: Option<i64>, message: String) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.problems_dropped = self.problems_dropped.saturating_add(1);
            return;
        }
        let ordinal = self.ordinal;
        self.problems.push(Problem {
            kind,
            choice,
            call: None,
            id: String::new(),
            event: (ordinal > 0).then_some(ordinal),
            message,
        });
    }

    /// Records an event skipped for forward compatibility (Q29).
    pub(crate) fn skip(&mut self, event_type: &str) {
        if self.skipped.len() >= MAX_SKIPPED {
            return;
        }
        self.skipped.push(Skipped {
            ordinal: self.ordinal,
            event_type: cut(event_type, MAX_TYPE_BYTES),
        });
    }

    /// Says the current event is of a type this dialect does not read.
    pub(crate) fn unknown(&mut self, event_type: &str) {
        self.unknown = Some(cut(event_type, MAX_TYPE_BYTES));
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

    /// An explicit start of a message (`message_start`, `response.created`,
    /// `messageStart`, `message-start`): a second one is a replayed or
    /// concatenated stream (Q24).
    pub(crate) fn start(&mut self, c: i64) -> R {
        self.not_done()?;
        let ch = self.choice(c)?;
        if ch.started || ch.ended {
            return Err(violation(
                Rule::StartedTwice,
                Some(format!("choice {c}")),
                "the message had started already",
            ));
        }
        ch.started = true;
        Ok(())
    }

    /// The start event of a block at `src`: refused when something was opened
    /// there already (Q25).
    pub(crate) fn fresh(&mut self, c: i64, src: Src) -> R {
        let ch = self.writable(c)?;
        if ch.has_src(src) {
            return Err(violation(
                Rule::OpenedTwice,
                Some(describe_src(src)),
                "a start event for a block that was already opened",
            ));
        }
        Ok(())
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
                    !seg.stopped
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
        let ch = self.writable(c)?;
        let found = match src {
            Some(s) => ch.segment_for(s, "reasoning", |k| matches!(k, Segment::Thinking(_)))?,
            None => ch.segments.len().checked_sub(1).filter(|&i| {
                ch.segments
                    .get(i)
                    .is_some_and(|seg| !seg.stopped && matches!(seg.kind, Segment::Thinking(_)))
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
            live.emit(|| LiveEvent::ThinkingDelta {
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
                        stopped: false,
                    }) => ch
                        .meta(*k)
                        .filter(|m| m.phase == Phase::Implicit && !o.implicit)
                        .map(|_| *k),
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
                if let Some(m) = ch.meta_mut(key) {
                    m.phase = Phase::Open;
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
                limit: "max_blocks",
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        let key = i64::try_from(ch.calls.len()).unwrap_or(i64::MAX);
        let (ps, pf) = o.state.map_or((None, ""), |(s, f)| (Some(s), f));
        ch.tools.add(key, o.id, o.name, o.input, ps, pf)?;
        let seg = ch.new_segment(Segment::Tool(key), o.src, max_blocks)?;
        ch.calls.push(CallMeta {
            provider_index: o.provider_index,
            phase: if o.implicit {
                Phase::Implicit
            } else {
                Phase::Open
            },
            server_side: o.server_side,
            kind: o.kind.map(str::to_owned),
            announced_unnamed: o.name.is_empty(),
            seg,
            ..CallMeta::default()
        });
        if let Some(p) = o.provider_index {
            ch.by_provider_index.insert(p, key);
        }
        if !o.id.is_empty() {
            ch.by_id.insert(o.id.to_owned(), key);
        }
        ch.latest = Some(key);
        self.content_bytes = total;
        let (id, name, input) = (o.id, o.name, o.input);
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
        let n = id
            .len()
            .saturating_add(name.len())
            .saturating_add(input.len())
            .saturating_add(state.map_or(0, |(s, _)| s.len()));
        let total = self.budget(n, || format!("tool call {key} of choice {c}"))?;
        let ch = self.writable(c)?;
        let Some(current) = ch.tools.get(key) else {
            return Ok(());
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
            return Ok(());
        }
        if ch.meta(key).is_some_and(|m| m.phase == Phase::Stopped) {
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
    /// the deltas; a Gemini call rebuilt from its paths). After the call stopped
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
        if ch.meta(key).is_some_and(|m| m.phase == Phase::Stopped) {
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

    /// Marks a call finished (its item ended). Idempotent: the dialects that
    /// restate a finished call (Responses `done` events) call it more than once.
    pub(crate) fn finish_call(&mut self, c: i64, key: i64, live: &mut Live<'_>) {
        if let Some(ch) = self.choices.get_mut(&c) {
            let seg = match ch.meta_mut(key) {
                Some(meta) if meta.phase != Phase::Stopped => {
                    meta.phase = Phase::Stopped;
                    Some(meta.seg)
                }
                _ => None,
            };
            if let Some(seg) = seg {
                if let Some(s) = ch.segments.get_mut(seg) {
                    s.stopped = true;
                }
                live.emit(|| LiveEvent::ToolCallFinished {
                    choice: c,
                    index: key,
                });
            }
        }
    }

    /// The stop event of the block at `src` (`content_block_stop`,
    /// `contentBlockStop`, `tool-call-end`, `content-end`). A second stop is a
    /// duplicated event (Q25); a stop for a position nothing was opened at
    /// takes the position, so that content for it afterwards is refused.
    pub(crate) fn stop_block(&mut self, c: i64, src: Src, live: &mut Live<'_>) -> R {
        let max_blocks = self.limits.max_blocks;
        let ch = self.writable(c)?;
        let at = match ch.src.get(&src) {
            Some(&at) => at,
            None => {
                let at = ch.new_segment(Segment::Empty, Some(src), max_blocks)?;
                if let Some(s) = ch.segments.get_mut(at) {
                    s.stopped = true;
                }
                return Ok(());
            }
        };
        let Some(seg) = ch.segments.get_mut(at) else {
            return Ok(());
        };
        if seg.stopped {
            return Err(violation(
                Rule::AfterStop,
                Some(describe_src(src)),
                "the block had stopped already",
            ));
        }
        seg.stopped = true;
        if let Segment::Tool(key) = seg.kind {
            if let Some(meta) = ch.meta_mut(key) {
                meta.phase = Phase::Stopped;
            }
            live.emit(|| LiveEvent::ToolCallFinished {
                choice: c,
                index: key,
            });
        }
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

    /// Appends streamed output to the result block at `src` (Bedrock server-side
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
                limit: "max_input_bytes",
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

    /// Records the provider's finish / stop reason (last one wins). After the
    /// message ended, only the same reason again is accepted.
    pub(crate) fn set_finish_reason(&mut self, c: i64, reason: &str) -> R {
        let ch = self.choice(c)?;
        if ch.ended && ch.finish_reason.as_deref() != Some(reason) {
            return Err(violation(
                Rule::EndedTwice,
                Some(format!("choice {c}")),
                format!(
                    "finish reason {reason:?} after the message ended with {:?}",
                    ch.finish_reason.as_deref().unwrap_or("no reason")
                ),
            ));
        }
        if ch.finish_reason.as_deref() != Some(reason) {
            ch.finish_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    /// An explicit end of the message: finishes its calls and blocks and decides
    /// whether it ended normally (Q15) from the recorded reason. No reason
    /// recorded is not a normal end (Q26). A second end changes nothing.
    pub(crate) fn end(&mut self, c: i64, live: &mut Live<'_>) -> R {
        self.not_done()?;
        let stream_problems = self.has_problems(c);
        let ch = self.choice(c)?;
        if ch.ended {
            return Ok(());
        }
        ch.ended = true;
        ch.normal = !ch.abnormal && ch.finish_reason.as_deref().is_some_and(is_normal_reason);
        ch.finish_all(c, live);
        ch.done_emitted = true;
        let (finish_reason, complete) = (ch.finish_reason.clone(), ch.complete(stream_problems));
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
        let ch = self.choice(c)?;
        if !ch.ended {
            ch.abnormal = true;
        }
        self.end(c, live)
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

    /// True once some usage was recorded.
    pub(crate) fn has_usage(&self) -> bool {
        self.usage.is_some()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    fn has_problems(&self, c: i64) -> bool {
        self.problems
            .iter()
            .any(|p| p.choice.is_none_or(|pc| pc == c))
            || self.problems_dropped > 0
    }

    /// End of stream: finishes every call, reports unnamed calls (Q7), and
    /// sends `MessageDone` for every message that had not ended.
    pub(crate) fn close(&mut self, live: &mut Live<'_>) {
        if self.closed {
            return;
        }
        self.closed = true;
        let with_problems: Vec<i64> = self
            .choices
            .keys()
            .copied()
            .filter(|&c| self.has_problems(c))
            .collect();
        for (&c, ch) in &mut self.choices {
            ch.finish_all(c, live);
            for (key, block) in ch.tools.iter() {
                if block.name.is_empty() {
                    let id = if block.id.is_empty() {
                        mint_id(c, key)
                    } else {
                        block.id.clone()
                    };
                    ch.problems.push(Problem {
                        kind: ProblemKind::Unnamed,
                        choice: Some(c),
                        call: Some(key),
                        event: None,
                        message: format!(
                            "tool call {id} (choice {c}, index {key}) never received a name"
                        ),
                        id,
                    });
                }
            }
            if !ch.done_emitted {
                ch.done_emitted = true;
                let (finish_reason, complete) = (
                    ch.finish_reason.clone(),
                    ch.complete(with_problems.contains(&c)),
                );
                live.emit(|| LiveEvent::MessageDone {
                    choice: c,
                    finish_reason,
                    complete,
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
                if let Some(m) = ch.meta(key).filter(|m| m.phase != Phase::Stopped) {
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
            if let Some(kind) = &meta.kind {
                block.kind.clone_from(kind);
            }
            block.server_side = meta.server_side;
            Some(ToolUse {
                block,
                index: key,
                provider_index: meta.provider_index,
                id_minted,
                finished: meta.phase == Phase::Stopped,
                server_side: meta.server_side,
            })
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
                    if let Some(t) = tool(*k) {
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
        let mut tool_uses: Vec<ToolUse> = ch.tools.iter().filter_map(|(k, _)| tool(k)).collect();
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
        let complete = ch.ended && ch.normal && !ch.failed && problems.is_empty();
        let finish = finish_of(ch.finish_reason.as_deref(), ch.ended, ch.failed).map(|f| {
            let client_calls = tool_uses.iter().any(|t| !t.server_side);
            if f == super::Finish::Stop && client_calls {
                super::Finish::ToolCalls
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
            tokens: self
                .dialect
                .map(|d| tokens_of(d, self.usage.as_ref()))
                .unwrap_or_default(),
            complete,
            problems,
            skipped: self.skipped.clone(),
        }
    }
}

/// Deserialises an object into a usage map; `null` is `None`.
pub(crate) fn usage_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    Option::<Map<String, Value>>::deserialize(d)
}
