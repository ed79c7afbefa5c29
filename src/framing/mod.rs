//! Framing: raw transport bytes, cut anywhere, into events.
//!
//! Three transports carry LLM streams: server-sent events (most providers,
//! Gemini with `alt=sse`), JSON (JSON lines, one document per line; documents
//! pretty-printed over many lines or run together, as a whole non-streamed
//! response body is; or one JSON array whose elements are the events, as
//! Gemini's `streamGenerateContent` sends without `alt=sse`), and AWS
//! `application/vnd.amazon.eventstream` binary frames (Bedrock). Each has a push decoder that takes bytes split at any
//! point (mid-line, mid-UTF-8, mid-frame) and appends whole events to a `Vec`
//! the caller owns; [`Decoder`] tells the transport from the first bytes and
//! delegates.
//!
//! Every decoder is stateful across pushes and bounded: a line, an event or a
//! frame larger than its [`FramingLimits`] is an [`Error::Limit`] as soon as the
//! bytes that cross it arrive, never after buffering them. Errors name a byte
//! offset counted from the decoder's start. After an error a decoder is
//! poisoned: every later call returns the same error until `reset()`, because
//! resynchronising inside a broken stream would guess. Events completed before
//! the error are already in the caller's `Vec`.
//!
//! `finish()` ends the stream: it reports what was left unterminated and leaves
//! the decoder fresh for a new stream (offsets restart at 0).
//!
//! Nothing here parses JSON except one check: an SSE event left without its
//! closing blank line at the end of the stream is kept only when its data is
//! complete JSON or `[DONE]` (recordings and some servers end like that). The
//! JSON transport only follows strings and brackets to find where each value
//! ends.

mod decoder;
mod detect;
mod error;
mod eventstream;
mod head;
mod jsonl;
mod lines;
mod sse;

pub(crate) use decoder::FrameSink;
pub use decoder::{Decoder, Frame, FrameRef};
pub use detect::{classify, detect, Detection, Transport};
pub use error::{CrcKind, Error};
pub(crate) use eventstream::EventFrame;
pub use eventstream::{EventStreamDecoder, EventStreamMessage, HeaderValue};
pub use head::{first_sse_event_end, Head};
pub use jsonl::{JsonLinesDecoder, MAX_JSON_DEPTH};
pub use sse::{SseDecoder, SseEvent, SseEventRef, BOM_DIVERGES, UNTERMINATED_DIVERGES};

/// `bytes` as text, checked as UTF-8 (every framed line and value is): the
/// SIMD check, then, only for bytes it refuses, the standard library's,
/// whose error says where the bad sequence starts.
#[inline]
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, std::str::Utf8Error> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(_) => std::str::from_utf8(bytes),
    }
}

/// The bytes of one push checked as UTF-8 at once (SIMD over the whole read),
/// up to where they stop being UTF-8 (a character cut by the end of the read,
/// or a bad byte): a line that lies inside needs no check of its own.
pub(crate) struct Checked<'b> {
    text: &'b str,
    /// The stream offset of the push's first byte.
    base: u64,
}

impl<'b> Checked<'b> {
    pub(crate) fn new(bytes: &'b [u8], base: u64) -> Self {
        let text = match simdutf8::compat::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => bytes
                .get(..e.valid_up_to())
                .and_then(|b| simdutf8::basic::from_utf8(b).ok())
                .unwrap_or_default(),
        };
        Self { text, base }
    }

    /// `line`, a slice of the push starting at stream offset `offset`, as
    /// text, when it lies inside the checked part (the very same bytes).
    #[inline]
    pub(crate) fn text(&self, line: &[u8], offset: u64) -> Option<&'b str> {
        let at = usize::try_from(offset.checked_sub(self.base)?).ok()?;
        let text = self.text.get(at..at.checked_add(line.len())?)?;
        std::ptr::eq(text.as_ptr(), line.as_ptr()).then_some(text)
    }
}

/// Default bound on one SSE line, terminator excluded.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Default bound on one SSE event's data (its `data:` lines joined by `\n`)
/// and on one JSON value.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Default bound on one AWS event-stream frame (its total length); AWS's own
/// bound is 16 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// The bounds every decoder of this layer enforces while bytes arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FramingLimits {
    /// Longest SSE line, terminator excluded. Also bounds the bytes
    /// [`Decoder`] holds before it can tell the transport.
    pub max_line_bytes: usize,
    /// Largest SSE event data (all `data:` lines joined by `\n`), and largest
    /// JSON value (one document, or one element of a JSON array of events).
    pub max_event_bytes: usize,
    /// Largest AWS event-stream frame (total length, prelude and CRCs included).
    pub max_frame_bytes: usize,
}

impl Default for FramingLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        }
    }
}

/// `offset + n`, saturating: offsets are reporting aids and must never wrap.
pub(crate) fn advance(offset: u64, n: usize) -> u64 {
    offset.saturating_add(u64::try_from(n).unwrap_or(u64::MAX))
}

/// The UTF-8 byte-order mark some servers put before the first line.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

#[cfg(test)]
pub(crate) mod testutil {
    //! Shared by this layer's unit tests: splitting a byte string every way.

    /// `bytes` cut at each of `cuts` (positions taken modulo the length, any
    /// order, duplicates allowed), giving the pieces in order.
    pub(crate) fn split_at_cuts<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|c| c.checked_rem(bytes.len().saturating_add(1)).unwrap_or(0))
            .collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        points
            .windows(2)
            .filter_map(|w| match w {
                [a, b] => bytes.get(*a..*b),
                _ => None,
            })
            .collect()
    }

    /// Every piece one byte long.
    pub(crate) fn bytewise(bytes: &[u8]) -> Vec<&[u8]> {
        bytes.chunks(1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_sixteen_mebibytes() {
        let limits = FramingLimits::default();
        assert_eq!(limits.max_line_bytes, 16 << 20);
        assert_eq!(limits.max_event_bytes, 16 << 20);
        assert_eq!(limits.max_frame_bytes, 16 << 20);
    }

    #[test]
    fn a_checked_push_gives_the_text_of_its_lines_up_to_a_cut_character() {
        // "é" cut after its first byte by the end of the push.
        let push = "data: a\ndata: é".as_bytes();
        let push = &push[..push.len() - 1];
        let checked = Checked::new(push, 100);
        assert_eq!(checked.text(&push[..7], 100), Some("data: a"));
        assert_eq!(checked.text(&push[8..14], 108), Some("data: "));
        // The cut character, a wrong offset, bytes from elsewhere: not checked here.
        assert_eq!(checked.text(&push[8..], 108), None);
        assert_eq!(checked.text(&push[..7], 101), None);
        assert_eq!(checked.text(&push[..7], 99), None);
        let other = b"data: a".to_vec();
        assert_eq!(checked.text(&other, 100), None);
    }

    #[test]
    fn split_at_cuts_keeps_every_byte_in_order() {
        let pieces = testutil::split_at_cuts(b"abcdef", &[4, 1, 1, 100]);
        assert_eq!(pieces.concat(), b"abcdef");
        assert!(pieces.len() >= 3);
    }
}
