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

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::{Limit, Rule};
pub(crate) use super::fail::{provider_error, violation, Fail, R};
pub(crate) use super::json::usage_map;
use super::json::{is_complete_json, starts_value};
use super::phase::{BlockEvent, BlockPhase, MessagePhase};
use super::scan::{Facts, Memo};
use super::usage::Usage;
use super::{AssemblerLimits, Dialect, Note, Problem, ProblemKind, Skipped};
use crate::accumulate::{Appender, Thinking, ToolUseLimits, ToolUses};
use crate::blocks::ToolResultBlock;

pub(crate) use super::live::{Live, LiveDetail};
#[path = "body_room.rs"]
mod room;
pub(crate) use room::Room;

/// A provider position of a block: (namespace, major, minor).
pub(crate) type Src = (u8, i64, i64);
/// A content block by its index.
pub(crate) const NS_BLOCK: u8 = 0;
/// A tool call by its own index or output position.
pub(crate) const NS_TOOL: u8 = 1;
/// A text part by (output position, part index).
pub(crate) const NS_TEXT: u8 = 2;
/// A refusal part by (output position, part index).
pub(crate) const NS_REFUSAL: u8 = 3;
/// A reasoning item by its output position.
pub(crate) const NS_REASONING: u8 = 4;
/// The model's plan for its tool calls.
pub(crate) const NS_PLAN: u8 = 5;

pub(crate) fn describe_src(src: Src) -> String {
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
    pub(crate) fn name(&self) -> &'static str {
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

/// A block of a message: what it holds, and where it is in its life.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Seg {
    pub(crate) kind: Segment,
    pub(crate) phase: BlockPhase,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct CallMeta {
    pub(crate) provider_index: Option<i64>,
    pub(crate) server_side: bool,
    /// The provider's own type of the call when it is not a JSON function call.
    pub(crate) kind: Option<String>,
    /// `(input length, complete?)` of the last completeness check (Q10 / Q20).
    pub(crate) complete_cache: Option<(usize, bool)>,
    /// The time `ToolCallStarted` went out with an empty name (Q7).
    pub(crate) announced_unnamed: bool,
    /// The segment (block) of the call, which holds its phase.
    pub(crate) seg: usize,
    /// Bumped each time the input is replaced by text that does not extend it;
    /// between bumps the input only grows at its end (for live readers).
    pub(crate) revision: u64,
    /// The id the provider sent when it was another call's and this call got a
    /// minted one instead (Q38).
    #[serde(default)]
    pub(crate) sent_id: Option<String>,
    /// Fragments of another provider index were routed to this call (Q43).
    #[serde(default)]
    pub(crate) aliased: bool,
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
    pub(crate) thinking: Thinking,
    pub(crate) next_thinking: i64,
    pub(crate) segments: Vec<Seg>,
    pub(crate) results: Vec<ToolResultBlock>,
    #[serde(with = "crate::statics::pairs")]
    pub(crate) src: BTreeMap<Src, usize>,
    /// Provider index → the key of the newest call opened at it (openai-chat).
    pub(crate) by_provider_index: BTreeMap<i64, i64>,
    /// Provider id → key.
    pub(crate) by_id: BTreeMap<String, i64>,
    /// The newest call (Q1: an index-less, id-less fragment continues it).
    pub(crate) latest: Option<i64>,
    pub(crate) finish_reason: Option<String>,
    /// Where the message is in its life (the protocol machine's).
    pub(crate) phase: MessagePhase,
    /// A provider error came: at any phase, and no phase undoes it.
    pub(crate) failed: bool,
    pub(crate) problems: Vec<Problem>,
    /// What narrow rules interpreted (Q36 onward), the first [`MAX_NOTES`].
    #[serde(default)]
    pub(crate) notes: Vec<Note>,
    /// The calls as clients that read `index` as a list position hold them
    /// (`Reading::calls_by_position`): the key of the call at each position.
    #[serde(default)]
    pub(crate) positions: Vec<i64>,
    /// The block clients that keep one current block hold open
    /// (`Reading::one_current_block`).
    #[serde(default)]
    pub(crate) current_block: Option<Src>,
    /// Blocks started so far, as clients that keep blocks in a list by
    /// position count them (`Reading::blocks_by_position`).
    #[serde(default)]
    pub(crate) started_blocks: i64,
    /// Whether every event of the message gave an empty finish reason (Q63).
    #[serde(default)]
    pub(crate) empty_finish: EmptyFinish,
}

/// What the events of a message said of its finish reason, for Q63's rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum EmptyFinish {
    /// No event of the message has carried the field yet.
    #[default]
    Unseen,
    /// Every event of the message so far gave it as `""`.
    Throughout,
    /// Some event gave it otherwise (`null`, absent, a reason).
    Mixed,
}

impl EmptyFinish {
    /// The next state after an event that gave `empty` (`""`) or not.
    pub(crate) fn after(self, empty: bool) -> Self {
        match (self, empty) {
            (EmptyFinish::Unseen | EmptyFinish::Throughout, true) => EmptyFinish::Throughout,
            _ => EmptyFinish::Mixed,
        }
    }
}

/// At most this many notes are kept per message.
pub(crate) const MAX_NOTES: usize = 1000;

impl Choice {
    pub(crate) fn new(limits: &AssemblerLimits) -> Self {
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
            phase: MessagePhase::Idle,
            failed: false,
            problems: Vec::new(),
            notes: Vec::new(),
            positions: Vec::new(),
            current_block: None,
            started_blocks: 0,
            empty_finish: EmptyFinish::Unseen,
        }
    }

    pub(crate) fn meta(&self, key: i64) -> Option<&CallMeta> {
        usize::try_from(key).ok().and_then(|k| self.calls.get(k))
    }

    pub(crate) fn meta_mut(&mut self, key: i64) -> Option<&mut CallMeta> {
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

    /// True once nothing may change the call any more (its block stopped or
    /// finished, or the message ended).
    pub(crate) fn call_closed(&self, key: i64) -> bool {
        self.meta(key)
            .and_then(|m| self.segments.get(m.seg))
            .is_some_and(|s| s.phase.closed())
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

    /// The call's id (minted when the provider sent none, Q8).
    pub(crate) fn call_id(&self, c: i64, key: i64) -> String {
        match self.tools.get(key) {
            Some(b) if !b.id.is_empty() => b.id.clone(),
            _ => self.minted_id(c, key),
        }
    }

    /// The id minted for an id-less call as far as the stream has come: Q8's
    /// `call_<choice>_<index>`, or its next free `_<n>` form when the
    /// provider sent that id for another call (messages settle it against
    /// ids sent later, `message.rs`).
    pub(crate) fn minted_id(&self, c: i64, key: i64) -> String {
        let first = mint_id(c, key);
        if !self.by_id.contains_key(&first) {
            return first;
        }
        (2_u32..)
            .map(|n| format!("{first}_{n}"))
            .find(|candidate| !self.by_id.contains_key(candidate))
            .unwrap_or_default()
    }

    /// The call's id as shown (minted when the provider sent none), for messages.
    pub(crate) fn call_label(&self, c: i64, key: i64) -> String {
        format!("tool call {}", self.call_id(c, key))
    }

    pub(crate) fn new_segment(
        &mut self,
        kind: Segment,
        src: Option<Src>,
        max_blocks: usize,
    ) -> R<usize> {
        if self.segments.len() >= max_blocks {
            return Err(Fail::Limit {
                limit: Limit::MaxBlocks,
                max: max_blocks,
                would_be: max_blocks.saturating_add(1),
                target: "blocks of one message".to_owned(),
            });
        }
        push_small(
            &mut self.segments,
            Seg {
                kind,
                phase: BlockPhase::Open,
            },
        );
        let at = self.segments.len() - 1;
        if let Some(src) = src {
            self.src.insert(src, at);
        }
        Ok(at)
    }

    /// The segment at `src` for content of kind `want`: `Ok(Some(at))` when it
    /// exists, is of that kind and is not stopped; `Ok(None)` when nothing is
    /// there yet; a protocol error otherwise.
    pub(crate) fn segment_for(
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
        if seg.phase.on(BlockEvent::Content, String::new).is_err() {
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
}

/// Is this finish / stop reason a normal end (the model finished, or stopped to call tools)?
pub(crate) fn is_normal_reason(reason: &str) -> bool {
    const NORMAL: [&str; 11] = [
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
        "requires_action",
    ];
    NORMAL.iter().any(|n| n.eq_ignore_ascii_case(reason))
}

/// At most this many problems are kept per stream; later ones are counted.
const MAX_PROBLEMS: usize = 1000;
/// At most this many skipped events are listed per stream.
const MAX_SKIPPED: usize = 10_000;
/// Event types are cut to this many bytes in `skipped`.
const MAX_TYPE_BYTES: usize = 128;

/// A choice past `max_choices` (`max`).
fn too_many_choices(c: i64, max: usize) -> Fail {
    Fail::Limit {
        limit: Limit::MaxChoices,
        max,
        would_be: max.saturating_add(1),
        target: format!("choice {c}"),
    }
}

/// Everything one stream has accumulated.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stream {
    pub(crate) limits: AssemblerLimits,
    /// Boxed: a map's node holds room for eleven entries, and most streams
    /// have one choice.
    pub(crate) choices: BTreeMap<i64, Box<Choice>>,
    pub(crate) usage: Option<Usage>,
    pub(crate) content_bytes: usize,
    pub(crate) closed: bool,
    /// `[DONE]` was seen: nothing may follow.
    pub(crate) done: bool,
    /// The ordinal of the event being applied (for problems).
    pub(crate) ordinal: u64,
    /// Problems of the whole stream (every message carries them).
    pub(crate) problems: Vec<Problem>,
    pub(crate) problems_dropped: u64,
    pub(crate) skipped: Vec<Skipped>,
    /// Set by an adapter for an event it cannot read; the assembler decides
    /// whether it is skipped (Q29) or of another dialect (Q32).
    pub(crate) unknown: Option<String>,
    pub(crate) dialect: Option<Dialect>,
    /// The template of the dialect's fast path (a cache of the scan).
    #[serde(skip)]
    pub(crate) memo: Memo<Facts>,
    /// The common event the last tree was, noted by its dialect (`common.rs`).
    #[serde(skip)]
    pub(crate) learned: super::scan::Noted,
    /// The first place where the readings clients may take of the stream
    /// differ (see [`Stream::diverge`]); the assembler reads on, the guard
    /// blocks.
    #[serde(default)]
    pub(crate) diverged: Option<String>,
    /// Choices seen, as clients that keep choices in a list by `index` count
    /// them (`Reading::calls_by_position`).
    #[serde(default)]
    pub(crate) choice_positions: i64,
    /// Hashes of the per-event nonces seen (OpenAI's `obfuscation`, Q61).
    #[serde(default)]
    pub(crate) nonces: std::collections::HashSet<u64>,
    /// How much the live events carry (`live.rs`); not kept when serialised.
    #[serde(skip)]
    pub(crate) live_detail: LiveDetail,
    /// Room a whole body's reader asks of each choice made as it applies it.
    #[serde(skip)]
    pub(crate) room: Room,
}

/// Pushes `item`, growing `v` from one slot by doubling: a message holds few
/// blocks and calls, and `Vec`'s own first growth reserves four, which for
/// these structs is most of an open stream's memory.
#[inline]
pub(crate) fn push_small<T>(v: &mut Vec<T>, item: T) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len().max(1));
    }
    v.push(item);
}

/// The stream-wide content budget (`used` of `max` bytes) for `n` more bytes:
/// the new total.
pub(crate) fn budget(
    used: usize,
    max: usize,
    n: usize,
    target: impl FnOnce() -> String,
) -> R<usize> {
    match used.checked_add(n) {
        Some(t) if t <= max => Ok(t),
        other => Err(Fail::Limit {
            limit: Limit::MaxTotalBytes,
            max,
            would_be: other.unwrap_or(usize::MAX),
            target: target(),
        }),
    }
}

pub(crate) fn mint_id(choice: i64, key: i64) -> String {
    format!("call_{choice}_{key}")
}

pub(crate) fn cut(s: &str, max: usize) -> String {
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
    /// Where this stream's live events go (`sink`), made in its detail.
    #[inline]
    pub(crate) fn live<'a>(&self, sink: Option<&'a mut Vec<super::LiveEvent>>) -> Live<'a> {
        Live::new(sink, self.live_detail)
    }

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
            memo: Memo::default(),
            learned: None,
            diverged: None,
            choice_positions: 0,
            nonces: std::collections::HashSet::new(),
            live_detail: LiveDetail::Full,
            room: Room::default(),
        }
    }

    /// Records that the clients of the dialect (its transport read as the
    /// specification defines it, its official SDKs' stream helpers) may read
    /// this event differently from the assembler, or from one another: the
    /// first such place is kept, with the event's ordinal.
    pub(crate) fn diverge(&mut self, why: impl FnOnce() -> String) {
        if self.diverged.is_none() {
            let why = why();
            self.diverged = Some(if self.ordinal > 0 {
                format!("event {}: {why}", self.ordinal)
            } else {
                why
            });
        }
    }

    /// The choice, found inline (several times an event), made on first use.
    #[inline]
    pub(crate) fn choice(&mut self, c: i64) -> R<&mut Choice> {
        if self.choices.contains_key(&c) {
            let max = self.limits.max_choices;
            let found = self.choices.get_mut(&c).map(|b| &mut **b);
            return found.ok_or_else(|| too_many_choices(c, max));
        }
        self.new_choice(c)
    }

    /// [`Stream::choice`] for a choice not made yet (bounded by `max_choices`).
    #[inline(never)]
    fn new_choice(&mut self, c: i64) -> R<&mut Choice> {
        let (n, limits, max) = (self.choices.len(), &self.limits, self.limits.max_choices);
        match self.choices.entry(c) {
            Entry::Occupied(e) => Ok(&mut **e.into_mut()),
            Entry::Vacant(_) if n >= max => Err(too_many_choices(c, max)),
            Entry::Vacant(e) => Ok(&mut **e.insert(Box::new(self.room.choice(limits)))),
        }
    }

    /// The id of a call as messages show it (minted when the provider sent none).
    pub(crate) fn call_id(&self, c: i64, key: i64) -> String {
        match self.choices.get(&c) {
            Some(ch) => ch.call_id(c, key),
            None => mint_id(c, key),
        }
    }

    pub(crate) fn existing(&mut self, c: i64) -> Option<&mut Choice> {
        self.choices.get_mut(&c).map(|b| &mut **b)
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
    pub(crate) fn budget(&self, n: usize, target: impl FnOnce() -> String) -> R<usize> {
        budget(self.content_bytes, self.limits.max_total_bytes, n, target)
    }

    /// Merges a usage object: its top-level keys override earlier ones.
    pub(crate) fn merge_usage(&mut self, usage: Map<String, Value>) {
        Usage::merge(&mut self.usage, usage);
    }

    /// [`Stream::merge_usage`] of a usage text a body's scanner certified.
    pub(crate) fn merge_usage_text(&mut self, text: &str) {
        Usage::merge_text(&mut self.usage, text);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn has_problems(&self, c: i64) -> bool {
        self.problems
            .iter()
            .any(|p| p.choice.is_none_or(|pc| pc == c))
            || self.problems_dropped > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_bounded_and_problems_capped() {
        let limits = AssemblerLimits {
            max_choices: 2,
            ..AssemblerLimits::default()
        };
        let mut s = Stream::new(limits);
        assert!(s.choice(0).is_ok() && s.choice(7).is_ok());
        assert!(matches!(
            s.choice(8),
            Err(Fail::Limit {
                limit: Limit::MaxChoices,
                ..
            })
        ));
        for i in 0..=MAX_PROBLEMS {
            s.problem(ProblemKind::NotApplied, None, format!("p{i}"));
        }
        assert_eq!(s.problems.len(), MAX_PROBLEMS);
        assert_eq!(s.problems_dropped, 1);
    }

    #[test]
    fn skipped_types_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_TYPE_BYTES);
        let short = cut(&long, MAX_TYPE_BYTES + 1);
        assert!(short.ends_with('…') && short.len() <= MAX_TYPE_BYTES + '…'.len_utf8());
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(mint_id(1, 2), "call_1_2");
    }

    #[test]
    fn provider_errors_name_their_most_specific_type() {
        let e = serde_json::json!({"type": "invalid_request_error", "code": "tool_use_failed", "message": "m"});
        assert!(matches!(
            provider_error(&e),
            Fail::Provider { error_type, message, .. } if error_type == "tool_use_failed" && message == "m"
        ));
    }
}
