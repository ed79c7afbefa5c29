//! The guard: a response's raw bytes in, the bytes that may be forwarded now
//! out, so that no byte that completes an invalid tool call ever reaches the
//! client.
//!
//! A [`Guard`] frames the body (SSE, JSON lines or a JSON body, AWS
//! event-stream; gzip and deflate decoded as they arrive) and assembles it
//! with the crate's own [`BytesAssembler`]. It cuts the body only where the
//! framing holds no part of an event (`cuts.rs`), so every read is released
//! event by event: deltas go out as soon as their event is whole, and an
//! event that completes a call is released only once every call it completes
//! has passed the caller's [`CallCheck`].
//!
//! Which events complete a call is not written per dialect. It comes from the
//! live events the protocol machine emits for every dialect, and from each
//! dialect's protocol declaration:
//!
//! - [`LiveEvent::ToolCallFinished`]: the call's block stopped, its input is
//!   done (Responses `…arguments.done`, a whole Gemini or Ollama call), or its
//!   message or the stream ended;
//! - [`LiveEvent::MessageDone`]: every call of the message is complete, and the
//!   message must have ended normally;
//! - in a dialect whose calls have no stop of their own (the declaration's
//!   `stop` is empty: OpenAI chat), [`LiveEvent::ToolCallStarted`] for a new
//!   call completes the calls opened before it, as SDK helpers take it;
//! - a call that changes after it passed (more input, a late name) is due again.
//!
//! Every reading, not only its own: a response passes only if every reading a
//! client may take of it — the transport as its specification defines it,
//! each official SDK's stream helper and final-message builder — yields the
//! same calls, and those calls are valid. Where readings can diverge, the
//! guard blocks ([`Cause::Ambiguous`]). It does not decide that per dialect:
//! each dialect's protocol declaration says how its clients read it
//! (`Reading`: they dispatch on event names, read chat indexes as list
//! positions and concatenate name fragments, keep one current block, take
//! some server items as their own calls), the framing says where the SDKs'
//! SSE decoders differ from the specification (a BOM, a last event without
//! its blank line), and the core records the first divergence
//! ([`Assembler::divergence`]), where the guard blocks. The [`Assembler`]
//! keeps its own contract (the last non-empty name, Q3's keys, Q4's repeated
//! names); the guard is stricter because it answers for every client at once.
//! A call is exempt from the check only when it is server-side and of a kind
//! its SDKs also present as the provider's. docs/guard.md has every case.
//!
//! Fail closed: anything the guard cannot check — an event it cannot read, a
//! limit, a protocol violation, events before the first one a dialect reads,
//! a body in no transport it reads, a coding it cannot decode within its
//! bounds, a cut — blocks from that point. A blocked response ends with the
//! dialect's declared error shape ([`Blocked::tail`]), or, when nothing was
//! released yet, a whole error response ([`Blocked::status`], [`Blocked::body`]);
//! nothing of the blocking event or after it is released. A JSON body that no
//! dialect answers in (an error body, a models list) is released whole at the
//! end, as [`Outcome::Unchecked`].

mod cuts;
mod inflate;
mod judge;
mod step;
mod tail;

pub use inflate::{Encoding, InflateLimits};
pub use step::{Blocked, Cause, GuardLimits, Outcome, Step};
pub use tail::error_response;

use crate::framing::{self, Decoder, Detection, FramingLimits, Transport};
use crate::providers::{
    AssembledMessage, Assembler, AssemblerLimits, BytesAssembler, BytesError, Dialect, Error,
    LiveDetail, LiveEvent, ToolUse,
};
use cuts::Cutter;
use inflate::Inflater;
use judge::Judge;

/// Judges one call that a client may now act on.
pub trait CallCheck {
    /// `Ok` when the call may run; else why not, in one line.
    ///
    /// # Errors
    /// The reason the call must not run.
    fn check(&mut self, call: &ToolUse) -> Result<(), String>;
}

/// Guards one response (see the module docs).
#[derive(Debug)]
pub struct Guard {
    asm: BytesAssembler,
    framing_limits: FramingLimits,
    limits: GuardLimits,
    /// Named by the response's content type, or told from its first bytes.
    transport: Option<Transport>,
    /// The first bytes fit no transport.
    unrecognized: bool,
    cutter: Option<Cutter>,
    inflater: Option<Inflater>,
    /// Bytes received and not yet released.
    held: Vec<u8>,
    /// How much of `held` the framing has seen.
    pushed: usize,
    /// How much of `held` may go out (at the end of the read).
    releasable: usize,
    released: u64,
    /// The body is a JSON array of events (its error goes in as an element).
    array: bool,
    /// The last byte released that is not whitespace.
    last_released: Option<u8>,
    live: Vec<LiveEvent>,
    /// The cuts of one read, kept between reads (no allocation per read).
    cuts: Vec<usize>,
    judge: Judge,
    /// Events no dialect read while none was known.
    unknown_events: u64,
    /// The dialect whose error shape ends a response no dialect was read in
    /// (the request's, from its path).
    error_dialect: Option<Dialect>,
    outcome: Outcome,
    blocked: Option<Blocked>,
    unchecked: Option<String>,
}

impl Guard {
    /// A guard for one response. `dialect` `None` is `auto`; `transport` is
    /// the one the response's content type names, if any (else told from the
    /// first bytes); `error_dialect` shapes the error when no dialect was read
    /// yet.
    #[must_use]
    pub fn new(
        dialect: Option<Dialect>,
        assembler_limits: AssemblerLimits,
        framing_limits: FramingLimits,
        limits: GuardLimits,
        transport: Option<Transport>,
        encoding: Encoding,
        error_dialect: Option<Dialect>,
    ) -> Self {
        let mut core = Assembler::new(dialect, assembler_limits);
        // The guard decides on the course of calls and messages only: no
        // text or input fragment is copied into its live events.
        core.set_live_detail(LiveDetail::Structural);
        let mut guard = Self {
            asm: BytesAssembler::new(core, framing_limits),
            framing_limits,
            limits,
            transport: None,
            unrecognized: false,
            cutter: None,
            inflater: (encoding != Encoding::Identity)
                .then(|| Inflater::new(encoding, limits.inflate)),
            held: Vec::new(),
            pushed: 0,
            releasable: 0,
            released: 0,
            array: false,
            last_released: None,
            live: Vec::new(),
            cuts: Vec::new(),
            judge: Judge::default(),
            unknown_events: 0,
            error_dialect: error_dialect.or(dialect),
            outcome: Outcome::Open,
            blocked: None,
            unchecked: None,
        };
        if let Some(t) = transport {
            guard.set_transport(t);
        }
        guard
    }

    /// The assembler (its messages, dialect, problems).
    #[must_use]
    pub fn assembler(&self) -> &Assembler {
        self.asm.core()
    }

    /// The assembled messages so far.
    #[must_use]
    pub fn messages(&self) -> Vec<AssembledMessage> {
        self.asm.core().messages()
    }

    #[must_use]
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// Why the response was blocked, once it was.
    #[must_use]
    pub fn blocked(&self) -> Option<&Blocked> {
        self.blocked.as_ref()
    }

    /// Why a response was released unchecked.
    #[must_use]
    pub fn unchecked_reason(&self) -> Option<&str> {
        self.unchecked.as_deref()
    }

    /// Bytes released so far.
    #[must_use]
    pub fn released(&self) -> u64 {
        self.released
    }

    /// Bytes held back now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The transport, once known.
    #[must_use]
    pub fn transport(&self) -> Option<Transport> {
        self.transport
    }

    /// Takes the next bytes of the body (as received: still compressed when it
    /// is) and says which may be forwarded now.
    pub fn feed(&mut self, bytes: &[u8], check: &mut dyn CallCheck) -> Step {
        let mut step = Step::default();
        self.feed_into(bytes, check, &mut step);
        step
    }

    /// [`Guard::feed`] into a step the caller keeps between reads (its
    /// `forward` buffer is cleared and reused: no allocation per read).
    pub fn feed_into(&mut self, bytes: &[u8], check: &mut dyn CallCheck, step: &mut Step) {
        step.forward.clear();
        step.blocked = None;
        step.whole_read = false;
        if self.outcome != Outcome::Open {
            return;
        }
        match self.inflater.take() {
            Some(mut inflater) => {
                let decoded = inflater.push(bytes, &mut |run| self.take(run, check, step));
                self.inflater = Some(inflater);
                if let Err(why) = decoded {
                    self.block(Cause::Encoding, why, None, step);
                }
            }
            None => {
                let fresh = self.held.is_empty();
                self.take(bytes, check, step);
                // What goes out is a prefix of what was held and the read.
                step.whole_read = fresh && step.forward.len() == bytes.len();
            }
        }
    }

    /// The body ended: the last event is judged, every message must be
    /// complete, and what is held is released (or the response blocked).
    pub fn finish(&mut self, check: &mut dyn CallCheck) -> Step {
        let mut step = Step::default();
        if self.outcome != Outcome::Open {
            return step;
        }
        if let Some(mut inflater) = self.inflater.take() {
            let decoded = inflater.finish(&mut |run| self.take(run, check, &mut step));
            if let Err(why) = decoded {
                self.block(Cause::Encoding, why, None, &mut step);
            }
        }
        if self.outcome != Outcome::Open {
            return step;
        }
        if self.transport.is_none() {
            if self.unrecognized {
                let why =
                    "the body is in no transport the guard reads (SSE, JSON, AWS event-stream)";
                self.block(Cause::Unreadable, why.to_owned(), None, &mut step);
                return step;
            }
            // Empty, or whitespace only.
            self.release_all(&mut step);
            self.unchecked = Some("the body is empty".to_owned());
            self.outcome = Outcome::Unchecked;
            return step;
        }
        let closed = self.asm.close(Some(&mut self.live));
        if self.diverged(&mut step) {
            return step;
        }
        if let Err(e) = closed {
            if !self.tolerated(&e) {
                let (cause, why) = cause_of(&e);
                self.block(cause, why, None, &mut step);
                return step;
            }
        }
        if self.asm.core().dialect().is_none() {
            // Nothing in the body is a response of any dialect: it is released
            // as it came (an error body, a models list), and said so; but only
            // when every event of it is whole JSON (a cut or broken body is
            // not one that no dialect answers in).
            let whole = self
                .transport
                .map_or(Ok(()), |t| whole_json(&self.held, t, self.framing_limits));
            if let Err(why) = whole {
                self.block(Cause::Unreadable, why, None, &mut step);
                return step;
            }
            self.live.clear();
            self.release_all(&mut step);
            self.unchecked = Some(if self.unknown_events > 0 {
                "no dialect answers in the body".to_owned()
            } else {
                "the body holds no event".to_owned()
            });
            self.outcome = Outcome::Unchecked;
            return step;
        }
        if self.judge_now(check, &mut step).is_err() {
            return step;
        }
        self.release_all(&mut step);
        self.outcome = Outcome::Passed;
        step
    }

    /// The client stopped reading before the body ended. A client may leave on
    /// reading the response's own end (the openai SDK closes its response on
    /// `[DONE]`, before the upstream's connection ends), so when the guard
    /// holds nothing back and every message has already ended normally, the
    /// verdict is given now, as [`finish`](Self::finish) gives it for a body
    /// that ends here (with nothing left to release). Otherwise the response
    /// stays [`Outcome::Open`]: the client left before its end. A compressed
    /// body stays open too (its coding's own end may not have been read).
    pub fn client_left(&mut self, check: &mut dyn CallCheck) -> Outcome {
        if self.outcome != Outcome::Open || !self.held.is_empty() || self.inflater.is_some() {
            return self.outcome;
        }
        let messages = self.asm.core().messages();
        if messages.is_empty() || !messages.iter().all(|m| m.complete) {
            return self.outcome;
        }
        let step = self.finish(check);
        debug_assert!(
            step.forward.is_empty(),
            "nothing was held, so nothing is released"
        );
        self.outcome
    }

    fn set_transport(&mut self, t: Transport) {
        self.transport = Some(t);
        self.cutter = Some(Cutter::new(t));
        self.asm.decoder = Some(Decoder::with_transport(t, self.framing_limits));
    }

    /// Decoded body bytes: held, pushed to the framing piece by piece, and
    /// released at each cut whose events pass. False once blocked.
    fn take(&mut self, bytes: &[u8], check: &mut dyn CallCheck, step: &mut Step) -> bool {
        if self.outcome != Outcome::Open {
            return false;
        }
        if self.held.len().saturating_add(bytes.len()) > self.limits.max_held_bytes {
            let why = format!(
                "more than {} bytes would be held back at once (max_held_bytes): an event \
                 that never ends",
                self.limits.max_held_bytes
            );
            self.block(Cause::Limit, why, None, step);
            return false;
        }
        self.held.extend_from_slice(bytes);
        if self.transport.is_none() {
            if self.unrecognized {
                return true;
            }
            match framing::classify(&self.held) {
                Detection::Transport(t) => self.set_transport(t),
                Detection::NeedMore => {
                    if self.held.len() > self.framing_limits.max_line_bytes {
                        self.unrecognized = true;
                    }
                    return true;
                }
                Detection::Unrecognized { .. } => {
                    self.unrecognized = true;
                    return true;
                }
            }
        }
        self.push_held(check, step)
    }

    /// Pushes what the framing has not seen of `held`, one piece per cut.
    fn push_held(&mut self, check: &mut dyn CallCheck, step: &mut Step) -> bool {
        let from = self.pushed;
        let Some(cutter) = self.cutter.as_mut() else {
            return true;
        };
        if from == 0 && self.released == 0 {
            self.array = matches!(
                self.held
                    .iter()
                    .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xEF | 0xBB | 0xBF)),
                Some(b'[')
            );
        }
        let mut cut_at = std::mem::take(&mut self.cuts);
        cut_at.clear();
        cutter.cuts(self.held.get(from..).unwrap_or_default(), &mut cut_at);
        let mut start = from;
        for cut in cut_at.iter().map(|c| c + from) {
            if !self.push_piece(start, cut, step) {
                return false;
            }
            start = cut;
            if !self.at_cut(cut, check, step) {
                return false;
            }
        }
        self.cuts = cut_at;
        let end = self.held.len();
        if start < end && !self.push_piece(start, end, step) {
            return false;
        }
        self.pushed = end;
        self.flush(step);
        true
    }

    /// Pushes `held[start..end]` to the framing and the assembler.
    fn push_piece(&mut self, start: usize, end: usize, step: &mut Step) -> bool {
        let Self {
            asm, held, live, ..
        } = self;
        let piece = held.get(start..end).unwrap_or_default();
        let fed = asm.feed_bytes(piece, Some(live));
        self.pushed = end;
        if let Err(e) = fed {
            if !self.tolerated(&e) {
                let (cause, why) = cause_of(&e);
                self.block(cause, why, None, step);
                return false;
            }
        }
        if self.diverged(step) {
            return false;
        }
        if self.unknown_events > 0 && self.asm.core().dialect().is_some() {
            let why = format!(
                "{} event(s) came before the first one a dialect reads: they could not be checked",
                self.unknown_events
            );
            self.block(Cause::Unreadable, why, None, step);
            return false;
        }
        true
    }

    /// Blocks when the clients' readings of what was read so far may differ.
    fn diverged(&mut self, step: &mut Step) -> bool {
        let Some(why) = self.asm.core().divergence() else {
            return false;
        };
        let why = format!("clients may read the response otherwise: {why}");
        self.block(Cause::Ambiguous, one_line(&why), None, step);
        true
    }

    /// An error the guard may go on after: an event no dialect reads while
    /// none is known (a body no dialect answers in is released unchecked).
    fn tolerated(&mut self, e: &BytesError) -> bool {
        if self.asm.core().dialect().is_none()
            && matches!(e, BytesError::Core(Error::UnknownShape { .. }))
        {
            self.unknown_events += 1;
            return true;
        }
        false
    }

    /// At a cut: the events before it are judged, and released when they pass.
    fn at_cut(&mut self, cut: usize, check: &mut dyn CallCheck, step: &mut Step) -> bool {
        if self.asm.core().dialect().is_none() {
            // Held until a dialect reads the body, or it ends.
            return true;
        }
        if self.judge_now(check, step).is_err() {
            return false;
        }
        // The framing may hold the start of the next event already (a JSON
        // line holding two values): only what lies before it goes out.
        let unfinished = self
            .asm
            .decoder
            .as_ref()
            .and_then(Decoder::unfinished_from)
            .map(|at| usize::try_from(at.saturating_sub(self.released)).unwrap_or(usize::MAX));
        self.release(unfinished.map_or(cut, |u| u.min(cut)));
        true
    }

    /// Marks `held[..cut]` releasable: it goes out at the end of the read (or
    /// before the tail, if the read blocks), so that the offsets of the read's
    /// cuts stay valid while it is pushed.
    fn release(&mut self, cut: usize) {
        self.releasable = self.releasable.max(cut.min(self.held.len()));
    }

    /// Moves what is releasable into the step.
    fn flush(&mut self, step: &mut Step) {
        let cut = std::mem::take(&mut self.releasable).min(self.held.len());
        if let Some(&b) = self
            .held
            .get(..cut)
            .and_then(|h| h.iter().rev().find(|b| !b.is_ascii_whitespace()))
        {
            self.last_released = Some(b);
        }
        if cut == self.held.len() && step.forward.is_empty() {
            // Everything held goes out (a read of whole events that pass): the
            // two buffers change places, no byte is copied.
            std::mem::swap(&mut step.forward, &mut self.held);
            self.held.clear();
        } else {
            step.forward
                .extend_from_slice(self.held.get(..cut).unwrap_or_default());
            self.held.drain(..cut);
        }
        self.pushed = self.pushed.saturating_sub(cut);
        self.released = self
            .released
            .saturating_add(u64::try_from(cut).unwrap_or(u64::MAX));
    }

    fn release_all(&mut self, step: &mut Step) {
        self.releasable = self.held.len();
        self.flush(step);
    }

    /// Blocks the response: nothing held is released, the tail ends it.
    fn block(
        &mut self,
        cause: Cause,
        reason: String,
        call: Option<(i64, String, String)>,
        step: &mut Step,
    ) {
        if self.outcome == Outcome::Blocked {
            return;
        }
        // What passed before the blocking event goes out before the tail.
        self.flush(step);
        self.outcome = Outcome::Blocked;
        let dialect = self.asm.core().dialect().or(self.error_dialect);
        let message = format!("toolstitch guard: {reason}");
        let ends = tail::Ends {
            dialect,
            transport: self.transport,
            array: self.array,
            last_released: self.last_released,
        };
        let (status, headers, body) = tail::error_response(dialect, &message);
        let (choice, call_id, tool_name) = match call {
            Some((c, id, name)) => (Some(c), Some(id), Some(name)),
            None => (None, None, None),
        };
        let blocked = Blocked {
            cause,
            reason,
            choice,
            call_id,
            tool_name,
            tail: ends.tail(&message),
            status,
            headers,
            body,
        };
        self.held.clear();
        self.pushed = 0;
        self.live.clear();
        self.blocked = Some(blocked.clone());
        step.blocked = Some(blocked);
    }
}

/// Every event of `body` is whole JSON (or an SSE event with no data, or
/// `[DONE]`), framed the way the guard framed it.
fn whole_json(body: &[u8], t: Transport, limits: FramingLimits) -> Result<(), String> {
    fn json(text: &[u8]) -> bool {
        serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok()
    }
    let mut decoder = Decoder::with_transport(t, limits);
    let mut bad = false;
    let mut each = |frame: framing::FrameRef<'_>| {
        bad |= match frame {
            framing::FrameRef::Sse(ev) => {
                !(ev.data.is_empty() || ev.data == "[DONE]" || json(ev.data.as_bytes()))
            }
            framing::FrameRef::Line(line) => !json(line.as_bytes()),
            framing::FrameRef::EventStream(m) => !(m.payload.is_empty() || json(&m.payload)),
        };
    };
    let framed = decoder
        .push_borrowed(body, &mut each)
        .and_then(|()| decoder.finish_borrowed(&mut each));
    match framed {
        Err(e) => Err(one_line(&format!("the body cannot be framed: {e}"))),
        Ok(()) if bad => Err(
            "the body holds an event that is not whole JSON, and no dialect reads it".to_owned(),
        ),
        Ok(()) => Ok(()),
    }
}

fn cause_of(e: &BytesError) -> (Cause, String) {
    let cause = match e {
        BytesError::Framing(f) if f.is_limit() => Cause::Limit,
        BytesError::Core(Error::Limit { .. }) => Cause::Limit,
        BytesError::Framing(_) | BytesError::Core(_) => Cause::Unreadable,
    };
    let why = match e {
        BytesError::Framing(f) => format!("the body cannot be framed: {f}"),
        BytesError::Core(e) => e.to_string(),
    };
    (cause, one_line(&why))
}

fn shown(s: &str) -> &str {
    if s.is_empty() {
        "(none)"
    } else {
        s
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod detail_tests;
#[cfg(test)]
mod tests;
