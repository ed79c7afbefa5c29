//! The one protocol machine, and the declarations of each dialect's protocol
//! it runs (QUIRKS Q24–Q26).
//!
//! A message goes through these phases; every event that changes it is one
//! transition, and anything else is a `ProtocolError`:
//!
//! ```text
//!            start                end (reason)
//!   Idle ─────────────▶ Started ───────────────▶ Ended(Normal | Abnormal)
//!     │                                ▲
//!     └────────────── end ─────────────┘      (dialects without a start event)
//! ```
//!
//! A block (a text, thinking or refusal part, a tool call, a tool result) has
//! its own:
//!
//! ```text
//!              start                 stop (its own)
//!   Implicit ─────────▶ Open ──────────────────────▶ Stopped
//!      │ content          │ content, end of input ──▶ Finished ── own stop ─▶ Stopped
//!      └──────────────────┴── message end / stream end ─▶ Finished
//! ```
//!
//! `Implicit` is a call whose fragments came before its start event (kept, Q7):
//! its start may still come, once. `Finished` takes no more content but has
//! not seen its own stop: in a dialect whose blocks end with their own stop
//! event, a message that ends normally with a call in any phase but `Stopped`
//! lost an event of the stream, and is not complete.

use super::error::Rule;
use super::state::Fail;
use super::state::{
    describe_src, is_normal_reason, violation, Choice, Live, Segment, Src, Stream, R,
};
use super::{DecodeKind, LiveEvent, Problem, ProblemKind};

/// Q61: the shortest `obfuscation` value that tells a replayed event. OpenAI
/// pads with 1 to 15 random characters; 62^8 values make an honest repeat in a
/// ten-thousand-event stream a one-in-four-million chance, where one or two
/// characters repeat in real recordings.
const MIN_NONCE_CHARS: usize = 8;

mod declaration;

pub(crate) use super::phase::{BlockEvent, BlockPhase, MessageEvent};
pub(crate) use declaration::{AfterEnd, Ends, Protocol, Reading};

/// The protocol's transitions of a stream's messages and blocks. An adapter
/// says what an event means ("block 3 stopped", "the message ended"); whether
/// that is allowed is decided here.
/// [`Stream::not_done`]'s refusal (out of line: the checks run for every event).
#[cold]
#[inline(never)]
fn after_done() -> Fail {
    violation(Rule::AfterDone, None, "the stream sent [DONE] already")
}

/// [`Stream::writable`]'s refusal of choice `c`, which ended (for `reason`).
#[cold]
#[inline(never)]
fn ended(c: i64, reason: Option<&str>) -> Fail {
    violation(
        Rule::AfterEnd,
        Some(format!("choice {c}")),
        match reason {
            Some(r) => format!("the message already ended (reason {r:?})"),
            None => "the message already ended".to_owned(),
        },
    )
}

impl Stream {
    /// The protocol of the stream's dialect, once it is known.
    fn protocol(&self) -> Option<&'static Protocol> {
        self.dialect.map(|d| &d.spec().protocol)
    }

    /// How the dialect's clients read the stream (see [`Reading`]).
    fn reading(&self) -> Reading {
        self.protocol().map_or(Reading::AS_ASSEMBLED, |p| p.reading)
    }

    /// An event's transport name against the type its payload reads as
    /// (`kind`): in a dialect whose clients dispatch on the name, a name that
    /// is not the type is refused (they read another event than the payload
    /// says: an `input_json_delta` named `ping` is skipped by them).
    pub(crate) fn named_as(&self, name: Option<&str>, kind: &str) -> R {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        if name == kind || !self.reading().named_events {
            return Ok(());
        }
        Err(Fail::Bad {
            kind: DecodeKind::BadValue,
            detail: format!(
                "the event is named {name:?} by its transport but its payload is {kind}: clients \
                 that dispatch on the name read another event than the payload says"
            ),
        })
    }

    /// An event that came without a transport name (no SSE `event:` line, no
    /// event-stream `:event-type` header): clients that dispatch on the name
    /// skip it, while the assembler read it by its payload.
    pub(crate) fn unnamed(&mut self) {
        if self.reading().named_events {
            self.diverge(|| {
                "the event has no name (no SSE `event:` field, no `:event-type` header): \
                 clients that dispatch on the name (the SDKs) skip it, while its payload was \
                 read"
                    .to_owned()
            });
        }
    }

    /// Where a call fragment lands for clients that keep calls in a list by
    /// `index` and concatenate name fragments, against the assembler's
    /// routing to call `key` (`had_name`: the call had a name before this
    /// fragment). Records a divergence where they differ.
    pub(crate) fn client_position(
        &mut self,
        c: i64,
        index: Option<i64>,
        key: i64,
        name: &str,
        had_name: bool,
    ) {
        if !self.reading().calls_by_position {
            return;
        }
        // Without an integer index such clients fail (openai's helper raises):
        // they take no call from the fragment.
        let Some(i) = index else {
            return;
        };
        let Some(ch) = self.choices.get_mut(&c) else {
            return;
        };
        let len = ch.positions.len();
        let why = match usize::try_from(i) {
            Err(_) => Some(format!(
                "a tool-call fragment at index {i} of choice {c}: clients that read the index as \
                 a list position take it as another call's (Python's negative positions)"
            )),
            Ok(p) if p < len => (ch.positions.get(p) != Some(&key)).then(|| {
                format!(
                    "a tool-call fragment at index {i} of choice {c} was read as call {key}'s, \
                     but clients that read the index as a list position add it to the call at \
                     that position"
                )
            }),
            Ok(p) if p == len && !ch.positions.contains(&key) => {
                ch.positions.push(key);
                None
            }
            Ok(_) => Some(format!(
                "a tool-call fragment at index {i} of choice {c} is not at the next position \
                 ({len}) of the calls: clients that read the index as a list position put it \
                 elsewhere (or as a call of its own)"
            )),
        };
        let why = why.or_else(|| {
            (had_name && !name.is_empty()).then(|| {
                format!(
                    "a second name fragment {name:?} for the tool call at index {i} of choice {c}: \
                     clients that concatenate name fragments (openai's helper) read another name \
                     than the last one"
                )
            })
        });
        if let Some(why) = why {
            self.diverge(|| why);
        }
    }

    /// A chunk's choice `index`, for clients that keep choices in a list too
    /// (openai's helper appends a choice whose index is past the end, and
    /// reads a negative one from the end).
    pub(crate) fn client_choice_position(&mut self, c: i64) {
        if !self.reading().calls_by_position {
            return;
        }
        let next = self.choice_positions;
        if c == next {
            self.choice_positions = next.saturating_add(1);
        } else if c < 0 || c > next {
            self.diverge(|| {
                format!(
                    "choice index {c} with {next} choice(s) seen: clients that read it as a list \
                     position take it as another choice"
                )
            });
        }
    }

    /// The start (`start`) of, or an event for, the block at `index`, for
    /// clients that append started blocks to a list and read `index` as a
    /// position in it.
    pub(crate) fn client_block_position(&mut self, c: i64, index: i64, start: bool) {
        if !self.reading().blocks_by_position {
            return;
        }
        let Ok(ch) = self.choice(c) else {
            return;
        };
        let next = ch.started_blocks;
        let why = if start {
            ch.started_blocks = next.saturating_add(1);
            (index != next).then(|| {
                format!(
                    "block {index} started as the block at position {next}: clients that \
                     append blocks to a list and read the index as a position there read its \
                     events as another block's"
                )
            })
        } else {
            (index < 0 || index >= next).then(|| {
                format!(
                    "an event for block {index}, with {next} block(s) started: clients that \
                     read the index as a list position read another block, or none"
                )
            })
        };
        if let Some(why) = why {
            self.diverge(|| why);
        }
    }

    /// Content (or the start or stop, `stop`) of the block at `src`, for
    /// clients that keep one current block: content for another block while
    /// one is open goes to the open one for them.
    pub(crate) fn client_block(&mut self, c: i64, src: Src, stop: bool) {
        if !self.reading().one_current_block {
            return;
        }
        let Ok(ch) = self.choice(c) else {
            return;
        };
        let why = match ch.current_block {
            Some(open) if open != src => Some(format!(
                "{} got content while {} is open: clients that keep one current block add it \
                 to the open one",
                describe_src(src),
                describe_src(open)
            )),
            _ => None,
        };
        ch.current_block = (!stop).then_some(src);
        if let Some(why) = why {
            self.diverge(|| why);
        }
    }

    /// Refuses anything after `[DONE]` (Q24).
    #[inline]
    pub(crate) fn not_done(&self) -> R {
        if self.done {
            return Err(after_done());
        }
        Ok(())
    }

    /// Refuses an event of type `event` after choice `c` ended, unless the
    /// dialect's protocol allows it there (pings, usage trailers).
    #[inline]
    pub(crate) fn may_follow(&self, c: i64, event: &str) -> R {
        // The usual case, a message not ended yet, costs one lookup.
        if !self.choices.get(&c).is_some_and(|ch| ch.phase.ended()) {
            return Ok(());
        }
        self.after_end(event)
    }

    /// [`Stream::may_follow`] once the message ended.
    #[cold]
    #[inline(never)]
    fn after_end(&self, event: &str) -> R {
        match self.protocol() {
            Some(p) => p.after_end(true, event),
            None => Ok(()),
        }
    }

    /// The choice, for a change of its content: refused after `[DONE]` and after
    /// the message ended (Q24).
    #[inline]
    pub(crate) fn writable(&mut self, c: i64) -> R<&mut Choice> {
        self.not_done()?;
        let ch = self.choice(c)?;
        if ch.phase.ended() {
            return Err(ended(c, ch.finish_reason.as_deref()));
        }
        Ok(ch)
    }

    /// Q61: an event carrying a per-event nonce (OpenAI's `obfuscation`) whose
    /// nonce came before is that event replayed: refused, never applied twice.
    /// Only the nonce is hashed, so the cost stays off the hot path; events
    /// without a nonce are not numbered and stay as they are (identical
    /// fragments are two fragments).
    ///
    /// The field is random padding whose length varies with the event, so a
    /// short one repeats in honest streams (a real recording sends `"x"`
    /// twice): only a nonce of at least [`MIN_NONCE_CHARS`] characters tells a
    /// replay, and a shorter one is read as if absent.
    pub(crate) fn fresh_nonce(&mut self, nonce: &str) -> R {
        use std::hash::{Hash, Hasher};
        if nonce.chars().count() < MIN_NONCE_CHARS {
            return Ok(());
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        nonce.hash(&mut h);
        if self.nonces.insert(h.finish()) {
            return Ok(());
        }
        Err(violation(
            Rule::Replayed,
            None,
            format!(
                "an event carries the nonce {nonce:?} (`obfuscation`) of an earlier event: \
                 the event was sent again, and is not applied a second time"
            ),
        ))
    }

    /// An explicit start of a message: a second one is a replayed or
    /// concatenated stream (Q24).
    pub(crate) fn start(&mut self, c: i64) -> R {
        self.not_done()?;
        let ch = self.choice(c)?;
        if let Some(next) = ch.phase.on(MessageEvent::Start, c)? {
            ch.phase = next;
        }
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

    /// Marks a call's input finished (its arguments are done, Gemini's call
    /// closed). Idempotent: the dialects that restate a finished call call it
    /// more than once.
    pub(crate) fn finish_call(&mut self, c: i64, key: i64, live: &mut Live<'_>) {
        self.call_event(c, key, BlockEvent::Finish, live);
    }

    /// The restated end of a call's item (a dialect's repeatable stop): the
    /// block's own stop, which may come more than once (Q4).
    pub(crate) fn item_done(&mut self, c: i64, key: i64, live: &mut Live<'_>) {
        self.call_event(c, key, BlockEvent::Done, live);
    }

    fn call_event(&mut self, c: i64, key: i64, ev: BlockEvent, live: &mut Live<'_>) {
        let Some(ch) = self.choices.get_mut(&c) else {
            return;
        };
        let Some(seg) = ch.meta(key).map(|m| m.seg) else {
            return;
        };
        let Some(s) = ch.segments.get_mut(seg) else {
            return;
        };
        let was_closed = s.phase.closed();
        // Finish and Done are accepted in every phase.
        s.phase = s.phase.on(ev, String::new).unwrap_or(s.phase);
        if !was_closed {
            live.emit(|| LiveEvent::ToolCallFinished {
                choice: c,
                index: key,
            });
        }
    }

    /// The stop event of the block at `src`. A second stop is a duplicated
    /// event (Q25); a stop for a position nothing was opened at takes the
    /// position, so that content for it afterwards is refused.
    pub(crate) fn stop_block(&mut self, c: i64, src: Src, live: &mut Live<'_>) -> R {
        let max_blocks = self.limits.max_blocks;
        let ch = self.writable(c)?;
        let Some(&at) = ch.src.get(&src) else {
            let at = ch.new_segment(Segment::Empty, Some(src), max_blocks)?;
            if let Some(s) = ch.segments.get_mut(at) {
                s.phase = BlockPhase::Stopped;
            }
            return Ok(());
        };
        let Some(seg) = ch.segments.get_mut(at) else {
            return Ok(());
        };
        seg.phase = seg.phase.on(BlockEvent::Stop, || describe_src(src))?;
        if let Segment::Tool(key) = seg.kind {
            live.emit(|| LiveEvent::ToolCallFinished {
                choice: c,
                index: key,
            });
        }
        Ok(())
    }

    /// Records the provider's finish / stop reason (last one wins). After the
    /// message ended, only the same reason again is accepted.
    pub(crate) fn set_finish_reason(&mut self, c: i64, reason: &str) -> R {
        let ch = self.choice(c)?;
        if ch.phase.ended() && ch.finish_reason.as_deref() != Some(reason) {
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
        self.end_with(c, Some(true), live)
    }

    /// An end a dialect's narrow rule judged normal whatever the recorded
    /// reason is (Q63: an empty reason throughout, the stream whole).
    pub(crate) fn end_normal(&mut self, c: i64, live: &mut Live<'_>) -> R {
        self.end_with(c, None, live)
    }

    /// An end that is not normal whatever the reason says (an end event the
    /// dialect declares never normal, a provider error).
    pub(crate) fn end_abnormal(&mut self, c: i64, live: &mut Live<'_>) -> R {
        self.end_with(c, Some(false), live)
    }

    /// `by_reason`: `Some(true)` normal when the reason is, `Some(false)` never
    /// normal, `None` normal.
    fn end_with(&mut self, c: i64, by_reason: Option<bool>, live: &mut Live<'_>) -> R {
        self.not_done()?;
        let stream_problems = self.has_problems(c);
        let protocol = self.protocol();
        let ordinal = self.ordinal;
        let ch = self.choice(c)?;
        let normal = match by_reason {
            Some(may_be_normal) => {
                may_be_normal && ch.finish_reason.as_deref().is_some_and(is_normal_reason)
            }
            None => true,
        };
        let Some(next) = ch.phase.on(MessageEvent::End { normal }, c)? else {
            return Ok(());
        };
        ch.phase = next;
        if normal {
            if let Some(p) = protocol {
                ch.unstopped_blocks(c, p, ordinal);
                ch.calls_missing(c, p, ordinal);
            }
        }
        ch.finish_all(c, live);
        // Made only for a sink: no copy of the reason otherwise.
        live.emit(|| LiveEvent::MessageDone {
            choice: c,
            finish_reason: ch.finish_reason.clone(),
            complete: ch.complete(stream_problems),
        });
        Ok(())
    }

    /// A provider error: no choice of this stream can be complete any more.
    pub(crate) fn fail_all(&mut self) {
        if self.choices.is_empty() {
            let limits = &self.limits;
            self.choices.insert(0, Box::new(Choice::new(limits)));
        }
        for ch in self.choices.values_mut() {
            ch.failed = true;
        }
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
                        ch.minted_id(c, key)
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
            if !ch.phase.ended() {
                live.emit(|| LiveEvent::MessageDone {
                    choice: c,
                    finish_reason: ch.finish_reason.clone(),
                    complete: ch.complete(with_problems.contains(&c)),
                });
            }
        }
    }
}

impl Choice {
    /// In a dialect whose blocks end with their own stop, every call whose
    /// block never got it by a normal end: an event of the stream was lost
    /// there, so the message is not complete and the call not executable.
    /// (A text block without its stop loses nothing a caller would execute,
    /// and streams that end text blocks implicitly stay complete.)
    fn unstopped_blocks(&mut self, c: i64, p: &Protocol, ordinal: u64) {
        let mut found = Vec::new();
        for (&src, &at) in &self.src {
            if !p.stops(src) {
                continue;
            }
            let Some(seg) = self.segments.get(at) else {
                continue;
            };
            if seg.phase == BlockPhase::Stopped {
                continue;
            }
            if let Segment::Tool(key) = seg.kind {
                found.push((src, key));
            }
        }
        for (src, key) in found {
            let id = self.call_id(c, key);
            let label = format!("tool call {id}");
            self.problems.push(Problem {
                kind: ProblemKind::Protocol,
                choice: Some(c),
                call: Some(key),
                id,
                event: (ordinal > 0).then_some(ordinal),
                message: format!(
                    "{} ({label}) never received its own stop ({}) before the message ended: \
                     an event of the stream is missing",
                    describe_src(src),
                    p.stop.join(" / ")
                ),
            });
        }
    }

    /// The safety net (Q65): a message that ended with a finish its dialect
    /// declares as "the client has calls to run" and holds no client call lost
    /// its calls (a shape this version does not read, an event dropped): it is
    /// not complete, with a problem naming the finish.
    fn calls_missing(&mut self, c: i64, p: &Protocol, ordinal: u64) {
        let Some(reason) = self.finish_reason.as_deref() else {
            return;
        };
        if !p.ends_for_calls(reason) {
            return;
        }
        let client_call = self
            .tools
            .iter()
            .any(|(key, _)| self.meta(key).is_none_or(|m| !m.server_side));
        if client_call {
            return;
        }
        self.problems.push(Problem {
            kind: ProblemKind::MissingCalls,
            choice: Some(c),
            call: None,
            id: String::new(),
            event: (ordinal > 0).then_some(ordinal),
            message: format!(
                "{} ended with {reason:?}, which says the client has calls to run, and holds \
                 no client call: its calls were lost (a shape this version does not read, or \
                 a missing event)",
                p.subject
            ),
        });
    }

    /// Nothing may change the message's blocks any more (its end, or the
    /// stream's): every call still open is finished.
    pub(crate) fn finish_all(&mut self, choice: i64, live: &mut Live<'_>) {
        for seg in &mut self.segments {
            if seg.phase.closed() {
                continue;
            }
            seg.phase = BlockPhase::Finished;
            if let Segment::Tool(key) = seg.kind {
                live.emit(|| LiveEvent::ToolCallFinished { choice, index: key });
            }
        }
    }

    pub(crate) fn complete(&self, stream_problems: bool) -> bool {
        self.phase.normal() && !self.failed && !stream_problems && self.problems.is_empty()
    }
}

#[cfg(test)]
mod tests;
