//! Raw transport bytes into an [`Assembler`]: the framing decoder (the
//! transport told from the first bytes) feeding each event as it completes.
//!
//! The hot path copies nothing: an SSE event lying whole in one read is fed
//! straight from the read's bytes (its text already checked as UTF-8 by the
//! framing, and not checked again), and no `Vec` of frames or `String` per
//! event is made on the way. Only an event cut by the end of a read is copied,
//! once, into the decoder's buffer.

use serde_json::{Map, Value};

use super::{Assembler, Dialect, Error, EventRef, LiveEvent};
use crate::framing::{self, Decoder, EventFrame, EventStreamMessage, FrameRef, FramingLimits};

/// Why a read (or the end of the stream) failed.
#[derive(Debug, Clone, PartialEq)]
pub enum BytesError {
    /// The bytes could not be framed: nothing after that point can be read.
    Framing(framing::Error),
    /// An event was refused; the others of the read were applied.
    Core(Error),
}

impl From<Error> for BytesError {
    fn from(e: Error) -> Self {
        BytesError::Core(e)
    }
}

/// An [`Assembler`] fed raw transport bytes (SSE, JSON lines or AWS
/// event-stream), cut anywhere.
#[derive(Debug, Clone)]
pub struct BytesAssembler {
    pub(crate) core: Assembler,
    /// Made by the first read, which tells the transport.
    pub(crate) decoder: Option<Decoder>,
    pub(crate) framing_limits: FramingLimits,
    /// The last framing error recorded as a problem.
    pub(crate) last_framing_error: Option<String>,
    /// In capture mode (Q62, [`BytesAssembler::read_captures`]): the responses
    /// read before the current one, each closed.
    pub(crate) finished: Option<Vec<Assembler>>,
}

impl BytesAssembler {
    /// A fresh assembler over `core`, framing with `framing_limits`.
    #[must_use]
    pub fn new(core: Assembler, framing_limits: FramingLimits) -> Self {
        Self {
            core,
            decoder: None,
            framing_limits,
            last_framing_error: None,
            finished: None,
        }
    }

    /// Capture mode (Q62): the bytes are a capture that may hold several
    /// responses one after another (Anthropic `message_stop` then
    /// `message_start`; a Responses capture with a second `response.created`).
    /// Once every message of the current response has ended, an event the
    /// dialect's protocol declares a message start, and that the current
    /// response refuses, begins the next response: the current one is closed
    /// as it stood before that event and kept, and a fresh assembler of the
    /// same dialect reads on. Each response is judged alone. Without it an
    /// assembler reads one response (Q24, Q54).
    pub fn read_captures(&mut self) {
        self.finished.get_or_insert_with(Vec::new);
    }

    /// The responses read (capture mode: those before the current one, then
    /// the current one; otherwise the one).
    #[must_use]
    pub fn responses(&self) -> Vec<&Assembler> {
        let mut out: Vec<&Assembler> = self.finished.iter().flatten().collect();
        out.push(&self.core);
        out
    }

    /// The assembler the events go to.
    #[must_use]
    pub fn core(&self) -> &Assembler {
        &self.core
    }

    /// The assembler the events go to, to feed it other events or close it.
    pub fn core_mut(&mut self) -> &mut Assembler {
        &mut self.core
    }

    /// Decodes `bytes` and feeds every whole event, in order. An event that
    /// fails is not applied, but the ones after it in the same read still are
    /// (Q30); events completed before bad bytes are fed before the framing
    /// error is reported.
    ///
    /// # Errors
    /// The first event's error of the read, else the framing error; every
    /// failure has left a problem on the messages, so none is complete.
    pub fn feed_bytes(
        &mut self,
        bytes: &[u8],
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), BytesError> {
        self.feed_through(bytes, live, |decoder, bytes, feeding| {
            decoder.push_to(bytes, feeding)
        })
    }

    /// [`BytesAssembler::feed_bytes`] with every event-stream frame's payload
    /// copied into its message and read from there ([`feed_frame`]), as
    /// before frames were offered with their payload borrowed (for the tests
    /// that compare the two).
    #[cfg(test)]
    pub(crate) fn feed_bytes_copied(
        &mut self,
        bytes: &[u8],
        live: Option<&mut Vec<LiveEvent>>,
    ) -> Result<(), BytesError> {
        self.feed_through(bytes, live, |decoder, bytes, feeding| {
            decoder.push_to(bytes, &mut Copying(feeding))
        })
    }

    /// [`BytesAssembler::feed_bytes`], the bytes framed by `push`.
    #[inline(always)]
    fn feed_through(
        &mut self,
        bytes: &[u8],
        live: Option<&mut Vec<LiveEvent>>,
        push: impl FnOnce(&mut Decoder, &[u8], &mut Feeding<'_, '_>) -> Result<(), framing::Error>,
    ) -> Result<(), BytesError> {
        // After close() nothing is framed: the bytes are refused whole.
        if self.core.is_closed() {
            return Err(BytesError::Core(self.core.refuse_after_close()));
        }
        let limits = self.framing_limits;
        let decoder = self.decoder.get_or_insert_with(|| Decoder::new(limits));
        let mut feeding = Feeding {
            core: &mut self.core,
            finished: self.finished.as_mut(),
            live,
            first: None,
        };
        let framed = push(decoder, bytes, &mut feeding);
        let (core, first) = (feeding.core, feeding.first);
        if let Some(why) = decoder.divergence() {
            core.diverge(why);
        }
        let framed = framed.map_err(|e| self.framing_failed(e));
        match first {
            Some(e) => Err(BytesError::Core(e)),
            None => framed,
        }
    }

    /// Ends the stream: flushes the framing (an event left without its end),
    /// then closes the assembler whatever happened.
    ///
    /// # Errors
    /// The first error: of an event flushed, of the framing (unless a read
    /// already reported that one), of closing.
    pub fn close(&mut self, mut live: Option<&mut Vec<LiveEvent>>) -> Result<(), BytesError> {
        // Closing twice does nothing.
        if self.core.is_closed() {
            return Ok(());
        }
        let seen = live.as_deref().map(Vec::len);
        let mut feeding = Feeding {
            core: &mut self.core,
            finished: self.finished.as_mut(),
            live: live.as_deref_mut(),
            first: None,
        };
        let framed = match self.decoder.as_mut() {
            Some(d) => d.finish_to(&mut feeding),
            None => Ok(()),
        };
        let (core, first) = (feeding.core, feeding.first);
        match self.decoder.as_ref().and_then(Decoder::divergence) {
            // A last event without its blank line, which the SDKs drop: their
            // calls differ only if it added call content (unknown without
            // the live events).
            Some(why) if why == framing::UNTERMINATED_DIVERGES => {
                let added = match (seen, live.as_deref()) {
                    (Some(n), Some(l)) => l.iter().skip(n).any(|e| {
                        matches!(
                            e,
                            LiveEvent::ToolCallStarted { .. } | LiveEvent::ToolInputDelta { .. }
                        )
                    }),
                    _ => true,
                };
                if added {
                    core.diverge(why);
                }
            }
            Some(why) => core.diverge(why),
            None => {}
        }
        // A framing error already reported by a read is not reported again.
        let framed = match framed {
            Err(e) if self.last_framing_error.as_deref() == Some(e.to_string().as_str()) => Ok(()),
            other => other.map_err(|e| self.framing_failed(e)),
        };
        let closed = self.core.close(live);
        if let Some(e) = first {
            return Err(BytesError::Core(e));
        }
        framed?;
        closed.map_err(BytesError::Core)
    }

    /// A framing error: the bytes from there on could not be read, so no
    /// message of the stream is complete (recorded once per distinct error).
    fn framing_failed(&mut self, e: framing::Error) -> BytesError {
        let why = e.to_string();
        if self.last_framing_error.as_deref() != Some(why.as_str()) {
            self.core.note_unreadable(&why);
            self.last_framing_error = Some(why);
        }
        BytesError::Framing(e)
    }
}

/// Where a read's frames go: each fed in turn ([`feed_capture`]), the first
/// error kept; a stream's first JSON line is offered whole to the body
/// readers first ([`super::body::whole_first`]), which spares the framing
/// its check that the line is one value when a reader reads it as a body.
struct Feeding<'a, 'l> {
    core: &'a mut Assembler,
    finished: Option<&'a mut Vec<Assembler>>,
    live: Option<&'l mut Vec<LiveEvent>>,
    first: Option<Error>,
}

impl framing::FrameSink for Feeding<'_, '_> {
    #[inline]
    fn frame(&mut self, frame: FrameRef<'_>) {
        let fed = feed_capture(
            self.core,
            self.finished.as_deref_mut(),
            frame,
            self.live.as_deref_mut(),
        );
        if let Err(e) = fed {
            self.first.get_or_insert(e);
        }
    }

    /// An event-stream frame, its payload borrowed (not copied into its
    /// message): what [`feed_frame`] does with it, unless it is an exception
    /// or error frame or capture mode may roll over at it (those are read
    /// whole, by [`Feeding::frame`]).
    #[inline]
    fn event_frame(&mut self, frame: EventFrame<'_>) -> bool {
        if self.finished.is_some() || matches!(frame.message_type(), Some("exception" | "error")) {
            return false;
        }
        let fed = feed_event(
            self.core,
            frame.event_type(),
            frame.payload,
            self.live.as_deref_mut(),
        );
        if let Err(e) = fed {
            self.first.get_or_insert(e);
        }
        true
    }

    /// Before the stream's first event only (a body is all its stream), of
    /// a dialect that has bodies, or not told yet.
    #[inline]
    fn wants_whole(&self) -> bool {
        self.core.events == 0 && self.core.dialect.is_none_or(|d| d.spec().body.is_some())
    }

    fn whole(&mut self, line: &str) -> bool {
        // No event yet: capture mode's rollover has no response to end.
        match super::body::whole_first(self.core, line, self.live.as_deref_mut()) {
            Some(fed) => {
                if let Err(e) = fed {
                    self.first.get_or_insert(e);
                }
                true
            }
            None => false,
        }
    }
}

/// A [`Feeding`] that takes no event-stream frame with its payload borrowed
/// (see [`BytesAssembler::feed_bytes_copied`]).
#[cfg(test)]
struct Copying<'f, 'a, 'l>(&'f mut Feeding<'a, 'l>);

#[cfg(test)]
impl framing::FrameSink for Copying<'_, '_, '_> {
    fn frame(&mut self, frame: FrameRef<'_>) {
        self.0.frame(frame);
    }

    fn wants_whole(&self) -> bool {
        self.0.wants_whole()
    }

    fn whole(&mut self, line: &str) -> bool {
        self.0.whole(line)
    }
}

/// Feeds one frame; in capture mode (`finished` given) a frame that starts
/// the next response rolls over to a fresh assembler (Q62). The boundary is
/// the dialect's declared start event, refused by a response whose messages
/// all ended: no dialect is named here.
fn feed_capture(
    core: &mut Assembler,
    finished: Option<&mut Vec<Assembler>>,
    frame: FrameRef<'_>,
    mut live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    let Some(finished) = finished else {
        return feed_frame(core, frame, live);
    };
    let ended =
        !core.stream.choices.is_empty() && core.stream.choices.values().all(|ch| ch.phase.ended());
    if !ended {
        return feed_frame(core, frame, live);
    }
    // Only after the end (a few frames at most): the response as it stood.
    let before = core.clone();
    match feed_frame(core, frame, live.as_deref_mut()) {
        Err(Error::Protocol { event, .. })
            if core
                .dialect()
                .is_some_and(|d| d.spec().protocol.start.contains(&event.event_type.as_str())) =>
        {
            // The refused event's problem stays with the assembler dropped here.
            *core = Assembler::new(core.dialect(), core.limits());
            core.set_live_detail(before.stream.live_detail);
            let mut done = before;
            // Its end was read already: closing it finishes nothing new.
            let _ = done.close(None);
            finished.push(done);
            feed_frame(core, frame, live)
        }
        other => other,
    }
}

/// Feeds one frame of any transport.
fn feed_frame(
    core: &mut Assembler,
    frame: FrameRef<'_>,
    live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    match frame {
        FrameRef::Sse(ev) => {
            let fed = core.feed_text(ev.event, ev.data, live);
            // `[DONE]` is no event of a dialect (SDKs stop at it, by its data).
            if ev.event.is_none() && ev.data != "[DONE]" {
                core.unnamed_event();
            }
            fed
        }
        FrameRef::Line(line) => core.feed_text(None, line, live),
        FrameRef::EventStream(m) => {
            if matches!(m.message_type(), Some("exception" | "error")) {
                Err(exception_frame(core, m, live))
            } else {
                feed_event(core, m.event_type(), &m.payload, live)
            }
        }
    }
}

/// Feeds an event-stream frame that is an event (named `name`, from its
/// `:event-type`): its payload, checked as UTF-8 once, is text, as an SSE
/// event's data is: it is not checked again, and the dialect's fast path may
/// read it.
#[inline]
fn feed_event(
    core: &mut Assembler,
    name: Option<&str>,
    payload: &[u8],
    live: Option<&mut Vec<LiveEvent>>,
) -> Result<(), Error> {
    let fed = core.feed_payload(name, payload, live);
    if name.is_none_or(str::is_empty) {
        core.unnamed_event();
    }
    fed
}

/// The text an AWS event-stream exception or error frame carries: its payload's
/// `message` (or `Message`), the `:error-message` header, or the payload as is.
fn exception_message(m: &EventStreamMessage) -> String {
    let from_json = serde_json::from_slice::<Map<String, Value>>(&m.payload)
        .ok()
        .and_then(|o| {
            ["message", "Message"]
                .into_iter()
                .find_map(|k| o.get(k).and_then(Value::as_str).map(str::to_owned))
        });
    from_json
        .or_else(|| m.header_str(":error-message").map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&m.payload).into_owned())
}

/// An AWS event-stream frame whose `:message-type` is `exception` or `error`:
/// for the dialect whose exception events such frames are (or `auto`), the
/// assembler sees it as the exception event it is
/// (so no message can be complete any more); either way it is a provider error,
/// which this returns (the fuzz harness feeds such frames through it too).
pub fn exception_frame(
    core: &mut Assembler,
    m: &EventStreamMessage,
    live: Option<&mut Vec<LiveEvent>>,
) -> Error {
    let error_type = m
        .exception_type()
        .or_else(|| m.header_str(":error-code"))
        .or_else(|| m.message_type())
        .unwrap_or("error")
        .to_owned();
    let message = exception_message(m);
    let suffix = match core.dialect() {
        Some(d) => d.spec().hints.exception_suffix,
        None => Dialect::ALL
            .iter()
            .find_map(|d| d.spec().hints.exception_suffix),
    };
    let via_core = suffix.is_some();
    if let Some(suffix) = suffix {
        let name = if error_type.ends_with(suffix) {
            error_type.clone()
        } else {
            format!("{error_type}{suffix}")
        };
        let mut payload = Map::new();
        payload.insert("message".to_owned(), Value::String(message.clone()));
        let fed = core.feed_value(Some(&name), &Value::Object(payload), live);
        if let Err(e @ Error::Provider { .. }) = fed {
            if error_type == name {
                return e;
            }
        }
    }
    let e = Error::Provider {
        event: EventRef {
            ordinal: core.events_seen().max(1),
            event_type: error_type.clone(),
        },
        error_type,
        message,
        raw: None,
    };
    if !via_core {
        core.note_provider_error(&e);
    }
    e
}
