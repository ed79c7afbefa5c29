//! Server-sent events, parsed as the WHATWG `EventSource` algorithm says,
//! with errors instead of lossy replacement and bounds on every buffer.

use serde::de::IgnoredAny;

use super::lines::{Line, LineSplitter};
use super::{advance, Checked, Error, FramingLimits};

mod whole;

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, `None` when absent or empty (a browser would say
    /// `message`).
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`. `[DONE]` is passed through as is.
    pub data: String,
    /// The last event ID: an `id:` field persists across events until another
    /// one changes it, as in `EventSource`; `None` when unset or empty.
    pub id: Option<String>,
}

/// One dispatched server-sent event, borrowed: its data from the bytes being
/// pushed when the event lies whole inside them in one `data:` line (the usual
/// case: nothing is copied), from the decoder's buffer otherwise. The fields
/// mean what [`SseEvent`]'s do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    pub event: Option<&'a str>,
    pub data: &'a str,
    pub id: Option<&'a str>,
}

impl SseEventRef<'_> {
    /// The event with its own copies of the strings.
    #[must_use]
    pub fn to_event(&self) -> SseEvent {
        SseEvent {
            event: self.event.map(str::to_owned),
            data: self.data.to_owned(),
            id: self.id.map(str::to_owned),
        }
    }
}

/// The event being built from field lines until a blank line dispatches it.
///
/// Its data is in `data`, or, while it is one `data:` line of the bytes being
/// pushed, only borrowed (the `held` of [`Builder::line`]); at the end of each
/// push a borrowed line is copied into `data`, so between pushes (and in a
/// saved state) `data` holds everything.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Builder {
    max_event_bytes: usize,
    data: String,
    has_data: bool,
    event: String,
    last_id: String,
    /// Where the first `data:` or `event:` line of this event starts.
    started_at: Option<u64>,
}

impl Builder {
    fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            data: String::new(),
            has_data: false,
            event: String::new(),
            last_id: String::new(),
            started_at: None,
        }
    }

    /// Takes one line. `held` is the event's data while it is a single line
    /// borrowed from the pushed bytes (`data` is empty then).
    fn line<'b, S: FnMut(SseEventRef<'_>)>(
        &mut self,
        line: Line<'b, '_>,
        offset: u64,
        checked: Option<&Checked<'b>>,
        held: &mut Option<&'b str>,
        emit: &mut S,
    ) -> Result<(), Error> {
        let bytes = line.bytes();
        if bytes.is_empty() {
            self.dispatch(held, emit);
            return Ok(());
        }
        let utf8 = |e: std::str::Utf8Error| Error::Utf8 {
            offset: advance(offset, e.valid_up_to()),
            what: "SSE line",
            start: offset,
        };
        // Only a line of the pushed bytes may be held past this call.
        let (text, borrowed): (&str, Option<&'b str>) = match line {
            Line::Input(b) => {
                let t = match checked.and_then(|c| c.text(b, offset)) {
                    Some(t) => t,
                    None => super::utf8(b).map_err(utf8)?,
                };
                (t, Some(t))
            }
            Line::Held(b) => (super::utf8(b).map_err(utf8)?, None),
        };
        if text.starts_with(':') {
            return Ok(());
        }
        let (field, value_at) = split_field(text);
        let value = text.get(value_at..).unwrap_or_default();
        match field {
            "data" => {
                let started_at = *self.started_at.get_or_insert(offset);
                let so_far = held.map_or(self.data.len(), str::len);
                let size = so_far
                    .saturating_add(usize::from(self.has_data))
                    .saturating_add(value.len());
                if size > self.max_event_bytes {
                    return Err(Error::Limit {
                        limit: "max_event_bytes",
                        max: self.max_event_bytes,
                        offset: started_at,
                        what: "SSE event data",
                    });
                }
                if self.has_data {
                    if let Some(first) = held.take() {
                        self.data.push_str(first);
                    }
                    self.data.push('\n');
                    self.data.push_str(value);
                } else {
                    match borrowed {
                        Some(b) => *held = Some(b.get(value_at..).unwrap_or_default()),
                        None => self.data.push_str(value),
                    }
                }
                self.has_data = true;
            }
            "event" => {
                self.started_at.get_or_insert(offset);
                value.clone_into(&mut self.event);
            }
            // An id with NUL is ignored, as `EventSource` does.
            "id" if !value.contains('\0') => value.clone_into(&mut self.last_id),
            // `retry` concerns reconnection, which is not ours; unknown
            // fields are ignored by the standard.
            _ => {}
        }
        Ok(())
    }

    /// Copies a borrowed data line into `data` (the pushed bytes are going away).
    fn keep(&mut self, held: &mut Option<&str>) {
        if let Some(first) = held.take() {
            self.data.push_str(first);
        }
    }

    fn dispatch<S: FnMut(SseEventRef<'_>)>(&mut self, held: &mut Option<&str>, emit: &mut S) {
        self.started_at = None;
        if self.has_data {
            self.has_data = false;
            let data = held.take();
            emit(SseEventRef {
                event: Some(self.event.as_str()).filter(|e| !e.is_empty()),
                data: data.unwrap_or(&self.data),
                id: Some(self.last_id.as_str()).filter(|id| !id.is_empty()),
            });
            self.data.clear();
        }
        self.event.clear();
    }

    /// Nothing of an event read yet (an `id` seen before is kept apart).
    fn is_clean(&self) -> bool {
        !self.has_data && self.started_at.is_none() && self.event.is_empty()
    }

    /// Whether an event left without its blank line may still be dispatched.
    fn is_complete(&self) -> bool {
        self.has_data
            && (self.data == "[DONE]" || serde_json::from_str::<IgnoredAny>(&self.data).is_ok())
    }
}

/// A field line's name, and where its value starts (after the colon and one
/// space after it, if any).
fn split_field(text: &str) -> (&str, usize) {
    // Field names are short: a byte loop finds the colon before a searcher
    // would be set up.
    let b = text.as_bytes();
    match b.iter().position(|&c| c == b':') {
        Some(colon) => {
            let space = usize::from(b.get(colon + 1) == Some(&b' '));
            let field = text.get(..colon).unwrap_or_default();
            (field, colon.saturating_add(1).saturating_add(space))
        }
        None => (text, text.len()),
    }
}

/// A push decoder for `text/event-stream`.
///
/// ```
/// use _toolstitch::framing::{FramingLimits, SseDecoder};
/// let mut decoder = SseDecoder::new(FramingLimits::default());
/// let mut events = Vec::new();
/// decoder.push(b"event: ping\ndata: {\"a\"", &mut events)?;
/// decoder.push(b":1}\n\ndata: [DONE]\n\n", &mut events)?;
/// decoder.finish(&mut events)?;
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].data, "{\"a\":1}");
/// # Ok::<(), _toolstitch::framing::Error>(())
/// ```
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SseDecoder {
    lines: LineSplitter,
    builder: Builder,
    failed: Option<Error>,
    /// Where SDK clients read the stream otherwise than the specification
    /// (see [`SseDecoder::divergence`]).
    #[serde(default)]
    diverged: Option<Divergence>,
}

/// Where SDK clients read an SSE stream otherwise than the specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Divergence {
    Bom,
    Unterminated,
}

impl Divergence {
    fn text(self) -> &'static str {
        match self {
            Divergence::Bom => BOM_DIVERGES,
            Divergence::Unterminated => UNTERMINATED_DIVERGES,
        }
    }
}

/// A stream that begins with a BOM: the specification removes it, the SDKs'
/// decoders (openai's and anthropic's `SSEDecoder`) keep it in the first
/// field name, so they ignore the first line.
pub const BOM_DIVERGES: &str = "the SSE stream begins with a byte order mark: the specification \
     removes it, but the openai and anthropic SDKs' decoders keep it in the first field's name \
     and ignore that line";

/// A last event without its blank line: this decoder dispatches it (its data is
/// whole), the specification and the SDKs' decoders drop it.
pub const UNTERMINATED_DIVERGES: &str = "the SSE stream's last event has no closing blank line: \
     the specification and the SDKs' decoders drop it, while it was read";

impl SseDecoder {
    /// A decoder at the start of a stream.
    #[must_use]
    pub fn new(limits: FramingLimits) -> Self {
        Self {
            lines: LineSplitter::new(limits.max_line_bytes, "SSE line"),
            builder: Builder::new(limits.max_event_bytes),
            failed: None,
            diverged: None,
        }
    }

    /// Back to the start of a new stream, forgetting any error.
    pub fn reset(&mut self) {
        self.lines.reset();
        self.builder = Builder::new(self.builder.max_event_bytes);
        self.failed = None;
        self.diverged = None;
    }

    /// The first place where the stream's clients read it otherwise than this
    /// decoder ([`BOM_DIVERGES`], [`UNTERMINATED_DIVERGES`]: whether the event
    /// that [`SseDecoder::finish`] dispatched without its blank line matters is
    /// for its reader to say: the SDKs' readings lose nothing when it adds no
    /// call content, as a last `message_stop` does); kept by
    /// [`SseDecoder::finish`], forgotten by [`SseDecoder::reset`]. The SDKs'
    /// decoders otherwise split lines, join `data:` lines, strip the one space,
    /// skip comments and unknown fields as the specification does; where they
    /// dispatch an event this decoder does not (an event with no `data:` line
    /// but an `event:`, `id:` or `retry:`), they hand on empty data, which the
    /// openai SDK fails to parse and the anthropic SDK skips: no reading takes
    /// a call from it.
    #[must_use]
    pub fn divergence(&self) -> Option<&'static str> {
        self.diverged.map(Divergence::text)
    }

    /// Bytes taken since the start.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.lines.offset()
    }

    /// Where the event the decoder holds unfinished starts (its first field
    /// line, or a line cut by the end of a push), if it holds one.
    #[must_use]
    pub fn unfinished_from(&self) -> Option<u64> {
        self.builder
            .started_at
            .or_else(|| self.lines.pending_from())
    }

    /// Takes the next bytes of the stream, cut anywhere, and appends each event
    /// they complete to `out`.
    ///
    /// # Errors
    /// [`Error::Limit`] for a line over `max_line_bytes` or event data over
    /// `max_event_bytes`; [`Error::Utf8`] for a line that is not UTF-8. The
    /// error is sticky until [`SseDecoder::reset`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), Error> {
        self.push_with(bytes, &mut |event| out.push(event.to_event()))
    }

    /// [`SseDecoder::push`] without copies: `emit` gets each event borrowed
    /// (from `bytes` when it lies whole in them in one `data:` line).
    ///
    /// # Errors
    /// Those of [`SseDecoder::push`].
    pub fn push_borrowed<S: FnMut(SseEventRef<'_>)>(
        &mut self,
        bytes: &[u8],
        mut emit: S,
    ) -> Result<(), Error> {
        self.push_with(bytes, &mut emit)
    }

    /// Ends the stream. A last event without its closing blank line is
    /// dispatched when its data is complete JSON or `[DONE]`.
    ///
    /// # Errors
    /// [`Error::Truncated`] for any other unfinished event, or a last line
    /// cut inside an unknown field name; the errors of [`SseDecoder::push`].
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), Error> {
        self.finish_with(&mut |event| out.push(event.to_event()))
    }

    pub(crate) fn push_with<S: FnMut(SseEventRef<'_>)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        self.push_inner(bytes, emit, true)
    }

    /// [`SseDecoder::push_with`]; `whole` lets events of the usual shape
    /// skip the line-by-line reading (`whole.rs`; the tests compare both).
    fn push_inner<S: FnMut(SseEventRef<'_>)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
        whole: bool,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let mut held = None;
        let checked = Checked::new(bytes, self.lines.offset());
        let mut rest = bytes;
        let result = loop {
            if whole {
                while let Some(taken) = self.whole_event(rest, &checked, emit) {
                    rest = rest.get(taken..).unwrap_or_default();
                }
            }
            if rest.is_empty() {
                break Ok(());
            }
            // Line by line up to the end of the next event (or of the read),
            // then the usual shape is looked for again.
            let upto = if whole {
                whole::event_end(rest)
            } else {
                rest.len()
            };
            let (chunk, after) = rest.split_at_checked(upto).unwrap_or((rest, &[]));
            let builder = &mut self.builder;
            let pushed = self.lines.push(chunk, |line, offset| {
                builder.line(line, offset, Some(&checked), &mut held, emit)
            });
            if let Err(e) = pushed {
                break Err(e);
            }
            rest = after;
        };
        self.builder.keep(&mut held);
        if self.lines.bom() {
            self.diverged.get_or_insert(Divergence::Bom);
        }
        self.fail_on(result)
    }

    pub(crate) fn finish_with<S: FnMut(SseEventRef<'_>)>(
        &mut self,
        emit: &mut S,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.finish_inner(emit);
        if self.lines.bom() {
            self.diverged.get_or_insert(Divergence::Bom);
        }
        if result.is_ok() {
            let diverged = self.diverged;
            self.reset();
            self.diverged = diverged;
        }
        self.fail_on(result)
    }

    fn finish_inner<S: FnMut(SseEventRef<'_>)>(&mut self, emit: &mut S) -> Result<(), Error> {
        let mut held = None;
        if let Some((line, offset)) = self.lines.take_unterminated() {
            let field = line.split(|b| *b == b':').next().unwrap_or_default();
            let known = matches!(field, b"" | b"data" | b"event" | b"id" | b"retry");
            if !known {
                return Err(Error::Truncated {
                    offset,
                    what: "an SSE line with an unknown field name (probably cut short)".to_owned(),
                });
            }
            let taken = self
                .builder
                .line(Line::Held(&line), offset, None, &mut held, emit);
            self.builder.keep(&mut held);
            taken?;
        }
        let Some(started_at) = self.builder.started_at else {
            return Ok(());
        };
        if self.builder.is_complete() {
            if self.builder.data != "[DONE]" {
                self.diverged.get_or_insert(Divergence::Unterminated);
            }
            self.builder.dispatch(&mut held, emit);
            return Ok(());
        }
        let what = if self.builder.has_data {
            "an SSE event whose data is neither complete JSON nor [DONE]"
        } else {
            "an SSE event with no data line yet"
        };
        Err(Error::Truncated {
            offset: started_at,
            what: format!("{what} and no closing blank line"),
        })
    }

    fn fail_on(&mut self, result: Result<(), Error>) -> Result<(), Error> {
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }
}

#[cfg(test)]
mod tests;
