//! The byte pipeline of the binding (`Assembler.feed_bytes` / `close`):
//! framing, then the core assembler, frame by frame; and the invariants every
//! state of an assembler must satisfy.

use std::collections::{BTreeMap, BTreeSet};

use _toolstitch::blocks::Block;
use _toolstitch::framing::{self, Decoder, EventStreamMessage, Frame, FramingLimits, Transport};
use _toolstitch::providers::{
    exception_frame, AssembledMessage, Assembler, AssemblerLimits, BytesAssembler, BytesError,
    Dialect, Error, Finish, LiveEvent, NoteKind, ProblemKind,
};
use serde_json::Value;

use crate::render::Event;

/// `TOOLSTITCH_FUZZ_TRACE=1` prints every event fed and its result (for
/// triaging a crash: run the target binary on the crash file).
fn trace() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TOOLSTITCH_FUZZ_TRACE").is_some())
}

/// `pieces` through the transport-telling [`Decoder`] (or one fixed to
/// `transport`): the transport it settled on, the frames, and the first error
/// (nothing is pushed after it).
pub fn decode_frames(
    transport: Option<Transport>,
    limits: FramingLimits,
    pieces: &[&[u8]],
) -> (Option<Transport>, Vec<Frame>, Result<(), framing::Error>) {
    let mut d = match transport {
        Some(t) => Decoder::with_transport(t, limits),
        None => Decoder::new(limits),
    };
    let mut out = Vec::new();
    for p in pieces {
        if let Err(e) = d.push(p, &mut out) {
            return (d.transport(), out, Err(e));
        }
    }
    let t = d.transport();
    let r = d.finish(&mut out);
    (t, out, r)
}

/// Limits small enough for a fuzz input to cross every one of them.
#[must_use]
pub fn small_limits() -> (AssemblerLimits, FramingLimits) {
    (
        AssemblerLimits {
            max_calls: 3,
            max_input_bytes: 48,
            max_total_bytes: 400,
            max_event_bytes: 300,
            max_choices: 3,
            max_blocks: 5,
            max_arg_nodes: 12,
            max_output_tokens: None,
            split_concatenated: false,
        },
        FramingLimits {
            max_line_bytes: 200,
            max_event_bytes: 260,
            max_frame_bytes: 400,
        },
    )
}

/// The limits a header asks for.
#[must_use]
pub fn limits(small: bool) -> (AssemblerLimits, FramingLimits) {
    if small {
        small_limits()
    } else {
        (AssemblerLimits::default(), FramingLimits::default())
    }
}

/// Everything a run leaves that another run of the same events must match.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub messages: Vec<AssembledMessage>,
    pub errors: Vec<Error>,
    pub framing: Option<framing::Error>,
    pub partial_before_close: Vec<(i64, i64, String)>,
    pub close: Result<(), Error>,
    pub events_seen: u64,
    pub live: Option<Vec<LiveEvent>>,
}

/// How a run is observed.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    /// Check every invariant after every event (costly: one `messages()` per event).
    pub checked: bool,
    /// Collect live events.
    pub live: bool,
}

struct Runner {
    a: Assembler,
    live: Option<Vec<LiveEvent>>,
    errors: Vec<Error>,
    checker: Option<Checker>,
}

impl Runner {
    fn new(dialect: Option<Dialect>, limits: AssemblerLimits, mode: Mode) -> Self {
        Self {
            a: Assembler::new(dialect, limits),
            live: mode.live.then(Vec::new),
            errors: Vec::new(),
            checker: mode.checked.then(|| Checker::new(mode.live)),
        }
    }

    fn after(&mut self, r: Result<(), Error>, done: bool) {
        if trace() {
            eprintln!("  -> {r:?}");
            if let Some(live) = &self.live {
                eprintln!("  live so far: {}", live.len());
            }
        }
        let failed = r.is_err();
        if let Err(e) = r {
            self.errors.push(e);
        }
        if let Some(c) = &mut self.checker {
            c.step(&self.a, self.live.as_deref(), failed, done);
        }
    }

    fn feed(&mut self, name: Option<&str>, payload: &[u8]) {
        if trace() {
            eprintln!(
                "feed #{} {name:?} {}",
                self.a.events_seen() + 1,
                String::from_utf8_lossy(payload)
            );
        }
        let before = self.a.events_seen();
        let r = self.a.feed_json(name, payload, self.live.as_mut());
        assert_eq!(
            self.a.events_seen(),
            before + 1,
            "one event counted per feed"
        );
        let done = r.is_ok() && payload.trim_ascii() == b"[DONE]";
        self.after(r, done);
    }

    fn feed_value(&mut self, name: Option<&str>, value: &Value) {
        let before = self.a.events_seen();
        let r = self.a.feed_value(name, value, self.live.as_mut());
        assert_eq!(
            self.a.events_seen(),
            before + 1,
            "one event counted per feed"
        );
        let done = r.is_ok() && value.as_str().is_some_and(|s| s.trim() == "[DONE]");
        self.after(r, done);
    }

    /// The binding's handling of an exception frame.
    fn exception_frame(&mut self, m: &EventStreamMessage) {
        let e = exception_frame(&mut self.a, m, self.live.as_mut());
        self.after(Err(e), false);
    }

    fn frame(&mut self, frame: Frame) {
        match frame {
            Frame::Sse(ev) => self.feed(ev.event.as_deref(), ev.data.as_bytes()),
            Frame::Line(line) => self.feed(None, line.as_bytes()),
            Frame::EventStream(m) => {
                if matches!(m.message_type(), Some("exception" | "error")) {
                    self.exception_frame(&m);
                } else {
                    self.feed(m.event_type(), &m.payload);
                }
            }
        }
    }

    fn unreadable(&mut self, e: &framing::Error) {
        self.a.note_unreadable(&e.to_string());
        if let Some(c) = &mut self.checker {
            c.step(&self.a, self.live.as_deref(), true, false);
        }
    }

    fn close(mut self, framing: Option<framing::Error>) -> Outcome {
        let partial_before_close = self.a.partial_inputs();
        let close = self.a.close(self.live.as_mut());
        if let Err(e) = &close {
            // The only documented failure of close(): rebuilding an open call over a limit.
            assert!(matches!(e, Error::Limit { .. }), "close() failed: {e:?}");
        }
        if let Some(c) = &mut self.checker {
            c.closed(&self.a, self.live.as_deref(), close.is_err());
        }
        Outcome {
            messages: self.a.messages(),
            errors: self.errors,
            framing,
            partial_before_close,
            close,
            events_seen: self.a.events_seen(),
            live: self.live,
        }
    }
}

/// Runs transport bytes, in `pieces`, through framing and the assembler, as
/// the binding's `feed_bytes` and `close` do.
#[must_use]
pub fn run_bytes(
    dialect: Option<Dialect>,
    (limits, flimits): (AssemblerLimits, FramingLimits),
    pieces: &[&[u8]],
    mode: Mode,
) -> Outcome {
    let mut r = Runner::new(dialect, limits, mode);
    let mut decoder = Decoder::new(flimits);
    let mut failed: Option<framing::Error> = None;
    for piece in pieces {
        let mut frames = Vec::new();
        let pushed = decoder.push(piece, &mut frames);
        for f in frames {
            r.frame(f);
        }
        if let Err(e) = pushed {
            r.unreadable(&e);
            // Sticky: a later push gives the same error, recorded once.
            let mut again = Vec::new();
            assert_eq!(
                decoder.push(b"x", &mut again),
                Err(e.clone()),
                "sticky framing error"
            );
            assert!(again.is_empty());
            failed = Some(e);
            break;
        }
    }
    if failed.is_none() {
        let mut frames = Vec::new();
        let finished = decoder.finish(&mut frames);
        for f in frames {
            r.frame(f);
        }
        if let Err(e) = finished {
            r.unreadable(&e);
            failed = Some(e);
        }
    }
    r.close(failed)
}

/// The same pieces through the binding's own glue ([`BytesAssembler`]: the
/// borrowed frames and the decoders' fast paths), then `close()`: the final
/// messages, for comparison with [`run_bytes`], which feeds owned frames one
/// by one.
#[must_use]
pub fn run_production(
    dialect: Option<Dialect>,
    (limits, flimits): (AssemblerLimits, FramingLimits),
    pieces: &[&[u8]],
) -> Vec<AssembledMessage> {
    let mut a = BytesAssembler::new(Assembler::new(dialect, limits), flimits);
    for piece in pieces {
        // A framing error is sticky: nothing after it is read.
        if let Err(BytesError::Framing(_)) = a.feed_bytes(piece, None) {
            break;
        }
    }
    // Its error was reported by the run it is compared with.
    let _ = a.close(None);
    a.core().messages()
}

/// Feeds decoded events directly: as JSON text, or as values.
#[must_use]
pub fn run_events(
    dialect: Option<Dialect>,
    limits: AssemblerLimits,
    events: &[Event],
    as_value: bool,
    mode: Mode,
) -> Outcome {
    let mut r = Runner::new(dialect, limits, mode);
    for e in events {
        let (text, value) = e.canonical();
        if as_value {
            r.feed_value(e.name.as_deref(), &value);
        } else {
            r.feed(e.name.as_deref(), text.as_bytes());
        }
    }
    r.close(None)
}

// ------------------------------------------------------------------ invariants

/// What must stay as it is once a message ended (or the stream sent `[DONE]`).
#[derive(Debug, Clone, PartialEq)]
struct Frozen {
    blocks: Vec<Block>,
    calls: Vec<(i64, _toolstitch::blocks::ToolUseBlock, Option<i64>, bool)>,
    text: String,
    finish_reason: Option<String>,
}

impl Frozen {
    fn of(m: &AssembledMessage) -> Self {
        Self {
            blocks: m.blocks.clone(),
            calls: m
                .tool_uses
                .iter()
                .map(|t| (t.index, t.block.clone(), t.provider_index, t.id_minted))
                .collect(),
            text: m.text.clone(),
            finish_reason: m.finish_reason.clone(),
        }
    }
}

/// Checks every state of one assembler, event after event.
struct Checker {
    live: bool,
    live_seen: usize,
    problems: BTreeMap<i64, usize>,
    skipped: usize,
    /// Choices whose `MessageDone` came from an event (not from `close`).
    frozen: BTreeMap<i64, Frozen>,
    /// Every message when `[DONE]` was applied.
    done: Option<BTreeMap<i64, Frozen>>,
    started: BTreeSet<(i64, i64)>,
    finished: BTreeSet<(i64, i64)>,
    message_done: BTreeMap<i64, bool>,
    text: BTreeMap<i64, String>,
}

/// Problems that stay once recorded: all but the two `messages()` computes
/// from the stream so far: two calls showing one id (a minted id can clash
/// until the call's own id arrives), and the drift report (more than half the
/// stream's events skipped as of unknown types: a share, which later events
/// the dialect reads bring down).
fn lasting(m: &AssembledMessage) -> usize {
    m.problems
        .iter()
        .filter(|p| !(p.kind == ProblemKind::Protocol && p.call.is_some() && p.event.is_none()))
        .filter(|p| {
            !(p.kind == ProblemKind::NotApplied
                && p.event.is_none()
                && p.message.contains("events were skipped as of types"))
        })
        .count()
}

fn by_choice(msgs: &[AssembledMessage]) -> BTreeMap<i64, &AssembledMessage> {
    msgs.iter().map(|m| (m.choice, m)).collect()
}

/// What holds for any message at any time.
pub fn check_message(m: &AssembledMessage) {
    if m.complete {
        assert!(m.problems.is_empty(), "complete with problems: {m:#?}");
        assert!(
            matches!(m.finish, Some(Finish::Stop | Finish::ToolCalls)),
            "complete without a normal finish: {m:#?}"
        );
        assert!(
            m.tool_uses.iter().all(|t| t.finished),
            "complete with an unfinished call: {m:#?}"
        );
    }
    let text: String = m
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(m.text, text, "text is its text blocks");
    // Call keys are unique, but for a call split into one call per object
    // (split_concatenated, Q40): its parts share its key, and a note says so.
    let mut per_key: BTreeMap<i64, usize> = BTreeMap::new();
    for t in &m.tool_uses {
        *per_key.entry(t.index).or_default() += 1;
    }
    for (k, n) in per_key.iter().filter(|(_, n)| **n > 1) {
        let noted = m
            .notes
            .iter()
            .any(|note| note.kind == NoteKind::ConcatenatedSplit && note.call == Some(*k));
        assert!(
            noted,
            "call key {k} given {n} times without a split: {m:#?}"
        );
        assert!(
            m.finish.is_some(),
            "a call is split only once its message ended"
        );
    }
    let order: Vec<(i64, i64)> = m
        .tool_uses
        .iter()
        .map(|t| (t.provider_index.unwrap_or(i64::MAX), t.index))
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "calls in provider order"
    );
    for t in &m.tool_uses {
        match (&t.sent_id, t.id_minted) {
            // Q38: derived from the id the provider sent to another call too.
            (Some(sent), true) => assert!(
                t.block.id.starts_with(sent.as_str()) && t.block.id != *sent,
                "a renamed call's id derives from the sent one"
            ),
            // Q8: minted; `_<n>` after it when a sent id took it already.
            (None, true) => {
                let minted = format!("call_{}_{}", m.choice, t.index);
                let suffix = t.block.id.strip_prefix(minted.as_str());
                assert!(
                    suffix.is_some_and(|s| s.is_empty()
                        || s.strip_prefix('_').is_some_and(|n| n.parse::<u64>().is_ok_and(|n| n >= 2))),
                    "a minted id is {minted} or {minted}_<n>: {}",
                    t.block.id
                );
            }
            (Some(_), false) => panic!("a renamed call's id is minted"),
            (None, false) => {}
        }
        assert!(!t.block.id.is_empty(), "every call has an id");
        assert_eq!(t.block.server_side, t.server_side);
    }
    let mut in_blocks: Vec<&_toolstitch::blocks::ToolUseBlock> = m
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(
        in_blocks.len(),
        m.tool_uses.len(),
        "one block per call: {m:#?}"
    );
    for t in &m.tool_uses {
        let at = in_blocks.iter().position(|b| **b == t.block);
        assert!(at.is_some(), "call {} has its block: {m:#?}", t.index);
        if let Some(at) = at {
            in_blocks.swap_remove(at);
        }
    }
}

impl Checker {
    fn new(live: bool) -> Self {
        Self {
            live,
            live_seen: 0,
            problems: BTreeMap::new(),
            skipped: 0,
            frozen: BTreeMap::new(),
            done: None,
            started: BTreeSet::new(),
            finished: BTreeSet::new(),
            message_done: BTreeMap::new(),
            text: BTreeMap::new(),
        }
    }

    fn live_events(&mut self, live: Option<&[LiveEvent]>, closing: bool) -> Vec<i64> {
        let mut ended = Vec::new();
        let Some(live) = live else {
            return ended;
        };
        for e in live.get(self.live_seen..).unwrap_or_default() {
            match e {
                LiveEvent::ToolCallStarted { choice, index, .. } => {
                    assert!(
                        !self.message_done.contains_key(choice),
                        "call after MessageDone"
                    );
                    assert!(
                        !self.finished.contains(&(*choice, *index)),
                        "call started after it finished"
                    );
                    self.started.insert((*choice, *index));
                }
                LiveEvent::ToolInputDelta {
                    choice,
                    index,
                    fragment,
                    replaces,
                } => {
                    // A replacement by an empty input says so; an append never is empty.
                    assert!(!fragment.is_empty() || *replaces, "empty input delta");
                    assert!(
                        !self.message_done.contains_key(choice),
                        "input after MessageDone"
                    );
                    assert!(
                        self.started.contains(&(*choice, *index)),
                        "input before start"
                    );
                    assert!(
                        !self.finished.contains(&(*choice, *index)),
                        "input after the call finished"
                    );
                }
                LiveEvent::ToolCallFinished { choice, index } => {
                    assert!(
                        !self.message_done.contains_key(choice),
                        "finish after MessageDone"
                    );
                    assert!(
                        self.started.contains(&(*choice, *index)),
                        "finish before start"
                    );
                    assert!(
                        self.finished.insert((*choice, *index)),
                        "call finished twice"
                    );
                }
                LiveEvent::TextDelta { choice, text } => {
                    assert!(
                        !self.message_done.contains_key(choice),
                        "text after MessageDone"
                    );
                    self.text.entry(*choice).or_default().push_str(text);
                }
                LiveEvent::ThinkingDelta { choice, .. }
                | LiveEvent::RefusalDelta { choice, .. } => {
                    assert!(
                        !self.message_done.contains_key(choice),
                        "delta after MessageDone"
                    );
                }
                LiveEvent::MessageDone {
                    choice, complete, ..
                } => {
                    assert!(
                        self.message_done.insert(*choice, *complete).is_none(),
                        "MessageDone twice"
                    );
                    if !closing {
                        ended.push(*choice);
                    }
                }
            }
        }
        self.live_seen = live.len();
        ended
    }

    fn step(&mut self, a: &Assembler, live: Option<&[LiveEvent]>, failed: bool, done: bool) {
        let msgs = a.messages();
        assert!(!msgs.is_empty(), "there is always a message");
        let now = by_choice(&msgs);
        assert_eq!(now.len(), msgs.len(), "one message per choice");
        for m in &msgs {
            check_message(m);
            if failed {
                assert!(!m.problems.is_empty(), "an error leaves a problem: {m:#?}");
            }
            let kept = lasting(m);
            if let Some(&before) = self.problems.get(&m.choice) {
                assert!(kept >= before, "problems never go away: {m:#?}");
            }
            self.problems.insert(m.choice, kept);
            assert_eq!(m.skipped, msgs[0].skipped, "one skipped list per stream");
            assert!(
                m.skipped.len() >= self.skipped,
                "skipped events never go away"
            );
        }
        self.skipped = msgs[0].skipped.len();
        for c in self.live_events(live, false) {
            if let Some(m) = now.get(&c) {
                self.frozen.insert(c, Frozen::of(m));
            }
        }
        for (c, f) in &self.frozen {
            let m = now.get(c).expect("an ended message stays");
            assert_eq!(&Frozen::of(m), f, "message {c} changed after it ended");
        }
        if done && self.done.is_none() {
            self.done = Some(now.iter().map(|(&c, m)| (c, Frozen::of(m))).collect());
        }
        if let Some(snapshot) = &self.done {
            let after: BTreeMap<i64, Frozen> =
                now.iter().map(|(&c, m)| (c, Frozen::of(m))).collect();
            assert_eq!(&after, snapshot, "content changed after [DONE]");
        }
        // Partial inputs: exactly the calls not finished yet.
        let partial = a.partial_inputs();
        let mut open = BTreeSet::new();
        for m in &msgs {
            for t in m.tool_uses.iter().filter(|t| !t.finished) {
                open.insert((m.choice, t.index));
            }
        }
        let listed: BTreeSet<(i64, i64)> = partial.iter().map(|(c, k, _)| (*c, *k)).collect();
        assert_eq!(listed.len(), partial.len(), "each open call once");
        assert_eq!(listed, open, "partial_inputs lists the open calls");
        if a.dialect() != Some(Dialect::Gemini) {
            for (c, k, text) in &partial {
                let t = now[c]
                    .tool_uses
                    .iter()
                    .find(|t| t.index == *k)
                    .expect("listed");
                assert_eq!(&t.block.input, text, "partial input is the call's input");
            }
        }
    }

    fn closed(&mut self, a: &Assembler, live: Option<&[LiveEvent]>, failed: bool) {
        let msgs = a.messages();
        if trace() {
            eprintln!("closed: {msgs:#?}\nlive: {live:#?}");
        }
        let now = by_choice(&msgs);
        for m in &msgs {
            check_message(m);
            if failed {
                assert!(!m.problems.is_empty(), "an error leaves a problem");
            }
            if let Some(&before) = self.problems.get(&m.choice) {
                assert!(lasting(m) >= before, "problems never go away");
            }
            assert!(
                m.tool_uses.iter().all(|t| t.finished),
                "close finishes every call"
            );
        }
        assert!(a.partial_inputs().is_empty(), "no call open after close");
        for m in &msgs {
            assert_eq!(
                a.message(m.choice).as_ref(),
                Some(m),
                "message(c) is messages()[c]"
            );
        }
        self.live_events(live, true);
        for (c, f) in &self.frozen {
            assert_eq!(
                &Frozen::of(now[c]),
                f,
                "message {c} changed at close after it ended"
            );
        }
        if let Some(snapshot) = &self.done {
            for (c, f) in snapshot {
                assert_eq!(&Frozen::of(now[c]), f, "close changed content after [DONE]");
            }
        }
        if self.live {
            for m in &msgs {
                for t in &m.tool_uses {
                    let key = (m.choice, t.index);
                    assert!(self.started.contains(&key), "every call was announced");
                    assert!(self.finished.contains(&key), "every call was finished live");
                }
                let announced = !m.blocks.is_empty() || !m.tool_uses.is_empty();
                match self.message_done.get(&m.choice) {
                    Some(&done_complete) => {
                        if m.complete {
                            assert!(done_complete, "complete now, but MessageDone said not");
                        }
                    }
                    None => assert!(!announced, "a message with content got no MessageDone"),
                }
                // Deltas of several text blocks may interleave; their bytes add up.
                let live_text = self.text.get(&m.choice).map_or("", String::as_str);
                let text_blocks = m
                    .blocks
                    .iter()
                    .filter(|b| matches!(b, Block::Text(_)))
                    .count();
                if text_blocks <= 1 {
                    assert_eq!(live_text, m.text, "live text deltas add up to the text");
                } else {
                    assert_eq!(
                        live_text.len(),
                        m.text.len(),
                        "live text deltas add up to the text"
                    );
                }
            }
        }
        // Closing twice changes nothing; a feed after close is refused.
        let mut again = a.clone();
        assert_eq!(again.close(None), Ok(()));
        assert_eq!(again.messages(), msgs, "a second close changes nothing");
        let r = again.feed_json(None, b"{}", None);
        assert!(
            matches!(r, Err(Error::Closed { .. })),
            "feed after close: {r:?}"
        );
        assert!(again
            .messages()
            .iter()
            .all(|m| !m.complete && !m.problems.is_empty()));
    }
}

/// The outcome with what legitimately differs between JSON text and values
/// removed: error and problem messages (serde names positions in text only).
#[must_use]
pub fn comparable(o: &Outcome) -> (Vec<AssembledMessage>, Vec<String>) {
    let mut msgs = o.messages.clone();
    for m in &mut msgs {
        for p in &mut m.problems {
            p.message.clear();
        }
    }
    let errors = o
        .errors
        .iter()
        .map(|e| match e {
            Error::Decode { event, kind, .. } => format!("decode {kind:?} {event:?}"),
            Error::Protocol { event, rule, .. } => format!("protocol {rule:?} {event:?}"),
            Error::Provider { event, .. } => format!("provider {event:?}"),
            Error::Limit { event, limit, .. } => format!("limit {limit} {event:?}"),
            other => format!("{:?}", std::mem::discriminant(other)),
        })
        .collect();
    (msgs, errors)
}
