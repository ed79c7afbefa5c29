//! The transport-agnostic decoder: detects, then delegates.

use super::detect::{classify_from, Detection};
use super::eventstream::EventFrame;
use super::jsonl::Sink;
use super::{
    Error, EventStreamDecoder, EventStreamMessage, FramingLimits, JsonLinesDecoder, SseDecoder,
    SseEvent, SseEventRef, Transport,
};

/// One event of any transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A server-sent event.
    Sse(SseEvent),
    /// One JSON document, or one element of a JSON array of events (its
    /// text, not parsed).
    Line(String),
    /// One AWS event-stream message.
    EventStream(EventStreamMessage),
}

/// One event of any transport, borrowed for the time of a callback: an SSE
/// event's strings usually straight from the pushed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRef<'a> {
    Sse(SseEventRef<'a>),
    Line(&'a str),
    EventStream(&'a EventStreamMessage),
}

impl FrameRef<'_> {
    /// The frame with its own copies.
    #[must_use]
    pub fn to_frame(&self) -> Frame {
        match self {
            FrameRef::Sse(e) => Frame::Sse(e.to_event()),
            FrameRef::Line(l) => Frame::Line((*l).to_owned()),
            FrameRef::EventStream(m) => Frame::EventStream((*m).clone()),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Inner {
    Undecided,
    Sse(SseDecoder),
    Lines(JsonLinesDecoder),
    Events(EventStreamDecoder),
}

impl Inner {
    fn new(transport: Option<Transport>, limits: FramingLimits) -> Self {
        match transport {
            None => Inner::Undecided,
            Some(Transport::Sse) => Inner::Sse(SseDecoder::new(limits)),
            Some(Transport::JsonLines) => Inner::Lines(JsonLinesDecoder::new(limits)),
            Some(Transport::EventStream) => Inner::Events(EventStreamDecoder::new(limits)),
        }
    }

    fn push<K: FrameSink>(&mut self, bytes: &[u8], sink: &mut K) -> Result<(), Error> {
        match self {
            Inner::Undecided => Ok(()),
            Inner::Sse(d) => d.push_with(bytes, &mut |e| sink.frame(FrameRef::Sse(e))),
            Inner::Lines(d) => d.push_to(bytes, &mut Lines(sink)),
            Inner::Events(d) => d.push_frames(bytes, &mut |m, parts| {
                if !sink.event_frame(parts.with(m)) {
                    m.payload.clear();
                    m.payload.extend_from_slice(parts.payload());
                    sink.frame(FrameRef::EventStream(m));
                }
            }),
        }
    }

    fn finish<K: FrameSink>(&mut self, sink: &mut K) -> Result<(), Error> {
        match self {
            Inner::Undecided => Ok(()),
            Inner::Sse(d) => d.finish_with(&mut |e| sink.frame(FrameRef::Sse(e))),
            Inner::Lines(d) => d.finish_to(&mut Lines(sink)),
            Inner::Events(d) => d.finish_with(&mut |m| sink.frame(FrameRef::EventStream(m))),
        }
    }
}

/// Where a decoder's frames go: each frame, borrowed, and (for a reader
/// that asks) each JSON line offered whole first (`jsonl::Sink::whole`).
pub(crate) trait FrameSink {
    /// A frame.
    fn frame(&mut self, frame: FrameRef<'_>);

    /// An AWS event-stream frame with its payload borrowed, offered before
    /// it is copied into its message for [`FrameSink::frame`]: `true` when
    /// the sink read it (and `frame` is not called), `false` for `frame`.
    #[inline]
    fn event_frame(&mut self, _frame: EventFrame<'_>) -> bool {
        false
    }

    /// Whether the next JSON line would be offered to [`FrameSink::whole`].
    #[inline]
    fn wants_whole(&self) -> bool {
        false
    }

    /// A JSON line that may be one whole object, offered before the decoder
    /// checks that it is (`jsonl::Sink::whole`, which says what `true` asks).
    #[inline]
    fn whole(&mut self, _line: &str) -> bool {
        false
    }
}

/// A closure as a [`FrameSink`] that takes frames only.
struct Frames<S>(S);

impl<S: FnMut(FrameRef<'_>)> FrameSink for Frames<S> {
    #[inline]
    fn frame(&mut self, frame: FrameRef<'_>) {
        (self.0)(frame);
    }
}

/// A [`FrameSink`] as the JSON-lines decoder's sink.
struct Lines<'k, K>(&'k mut K);

impl<K: FrameSink> Sink for Lines<'_, K> {
    #[inline]
    fn value(&mut self, text: &str) {
        self.0.frame(FrameRef::Line(text));
    }

    #[inline]
    fn wants_whole(&self) -> bool {
        self.0.wants_whole()
    }

    #[inline]
    fn whole(&mut self, text: &str) -> bool {
        self.0.whole(text)
    }
}

/// A push decoder for any of the three transports: given one, or told from
/// the first bytes by [`super::detect`]. Until the transport is known it holds
/// the first bytes (at most `max_line_bytes`: leading whitespace and the
/// first few bytes of a field name or prelude), then hands them all to the
/// chosen decoder, so offsets count from the very first byte.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Decoder {
    limits: FramingLimits,
    /// The transport given to [`Decoder::with_transport`], if any.
    fixed: Option<Transport>,
    inner: Inner,
    /// Bytes held while the transport is unknown.
    head: Vec<u8>,
    /// Where detection resumes in `head`.
    resume: usize,
    failed: Option<Error>,
    /// The divergence of the stream [`Decoder::finish`] ended (kept past the
    /// reset, for its reader to see).
    #[serde(skip)]
    finished_divergence: Option<&'static str>,
}

impl Decoder {
    /// A decoder that tells the transport from the first bytes.
    #[must_use]
    pub fn new(limits: FramingLimits) -> Self {
        Self::build(None, limits)
    }

    /// A decoder for a known transport (from a `Content-Type`, say).
    #[must_use]
    pub fn with_transport(transport: Transport, limits: FramingLimits) -> Self {
        Self::build(Some(transport), limits)
    }

    fn build(fixed: Option<Transport>, limits: FramingLimits) -> Self {
        Self {
            limits,
            fixed,
            inner: Inner::new(fixed, limits),
            head: Vec::new(),
            resume: 0,
            failed: None,
            finished_divergence: None,
        }
    }

    /// The transport, once known.
    #[must_use]
    pub fn transport(&self) -> Option<Transport> {
        match self.inner {
            Inner::Undecided => None,
            Inner::Sse(_) => Some(Transport::Sse),
            Inner::Lines(_) => Some(Transport::JsonLines),
            Inner::Events(_) => Some(Transport::EventStream),
        }
    }

    /// The first place where the stream's clients read its framing otherwise
    /// than this decoder (SSE only: see [`super::SseDecoder::divergence`]).
    #[must_use]
    pub fn divergence(&self) -> Option<&'static str> {
        match &self.inner {
            Inner::Sse(d) => d.divergence().or(self.finished_divergence),
            Inner::Undecided | Inner::Lines(_) | Inner::Events(_) => self.finished_divergence,
        }
    }

    /// Where the event the decoder holds unfinished starts (an offset from
    /// the first byte), if it holds one: every byte before it belongs to
    /// events already given out (or to none). Before the transport is told,
    /// the first byte.
    #[must_use]
    pub fn unfinished_from(&self) -> Option<u64> {
        match &self.inner {
            Inner::Undecided => (!self.head.is_empty()).then_some(0),
            Inner::Sse(d) => d.unfinished_from(),
            Inner::Lines(d) => d.unfinished_from(),
            Inner::Events(d) => d.unfinished_from(),
        }
    }

    /// Back to the start of a new stream (detecting again unless the
    /// transport was given), forgetting any error.
    pub fn reset(&mut self) {
        *self = Self::build(self.fixed, self.limits);
    }

    /// Takes the next bytes, cut anywhere, and appends each frame they
    /// complete to `out`.
    ///
    /// # Errors
    /// [`Error::UnknownTransport`] when the first bytes are no known
    /// transport; [`Error::Limit`] when more than `max_line_bytes` arrive
    /// before the transport is known; the chosen decoder's errors. Sticky
    /// until [`Decoder::reset`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), Error> {
        self.push_borrowed(bytes, |frame| out.push(frame.to_frame()))
    }

    /// [`Decoder::push`] without copies: `emit` gets each frame borrowed, an
    /// SSE event's strings from `bytes` when the event lies whole in them.
    ///
    /// # Errors
    /// Those of [`Decoder::push`].
    pub fn push_borrowed<S: FnMut(FrameRef<'_>)>(
        &mut self,
        bytes: &[u8],
        emit: S,
    ) -> Result<(), Error> {
        self.push_to(bytes, &mut Frames(emit))
    }

    /// [`Decoder::push_borrowed`] into a [`FrameSink`], which may read JSON
    /// lines whole.
    pub(crate) fn push_to<K: FrameSink>(
        &mut self,
        bytes: &[u8],
        sink: &mut K,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if !matches!(self.inner, Inner::Undecided) {
            return self.inner.push(bytes, sink);
        }
        let result = self.detect_and_push(bytes, sink);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn detect_and_push<K: FrameSink>(&mut self, bytes: &[u8], out: &mut K) -> Result<(), Error> {
        let holding = !self.head.is_empty();
        if holding {
            self.head.extend_from_slice(bytes);
        }
        let seen = if holding { self.head.as_slice() } else { bytes };
        let (detection, resume) = classify_from(seen, self.resume);
        match detection {
            Detection::Transport(transport) => {
                self.inner = Inner::new(Some(transport), self.limits);
                if holding {
                    let head = std::mem::take(&mut self.head);
                    self.resume = 0;
                    self.inner.push(&head, out)
                } else {
                    self.inner.push(bytes, out)
                }
            }
            Detection::NeedMore => {
                if seen.len() > self.limits.max_line_bytes {
                    return Err(Error::Limit {
                        limit: "max_line_bytes",
                        max: self.limits.max_line_bytes,
                        offset: 0,
                        what: "leading bytes read before the transport could be told",
                    });
                }
                if !holding {
                    self.head.extend_from_slice(bytes);
                }
                self.resume = resume;
                Ok(())
            }
            Detection::Unrecognized { offset, byte } => Err(Error::UnknownTransport {
                offset: u64::try_from(offset).unwrap_or(u64::MAX),
                byte,
            }),
        }
    }

    /// Ends the stream and leaves the decoder fresh for a new one.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the stream ends inside an event, a frame, or
    /// before its transport could be told (only whitespace is fine then); the
    /// chosen decoder's errors.
    pub fn finish(&mut self, out: &mut Vec<Frame>) -> Result<(), Error> {
        self.finish_borrowed(|frame| out.push(frame.to_frame()))
    }

    /// [`Decoder::finish`], each frame borrowed.
    ///
    /// # Errors
    /// Those of [`Decoder::finish`].
    pub fn finish_borrowed<S: FnMut(FrameRef<'_>)>(&mut self, emit: S) -> Result<(), Error> {
        self.finish_to(&mut Frames(emit))
    }

    /// [`Decoder::finish_borrowed`] into a [`FrameSink`], which may read JSON
    /// lines whole.
    pub(crate) fn finish_to<K: FrameSink>(&mut self, out: &mut K) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if matches!(self.inner, Inner::Undecided) {
            // `resume` is past the BOM and whitespace: anything after it is
            // the start of a field name, a prelude or a BOM, cut short.
            let (_, resume) = classify_from(&self.head, self.resume);
            if resume < self.head.len() {
                let error = Error::Truncated {
                    offset: 0,
                    what: format!(
                        "the first {} bytes, too few to tell SSE, JSON and AWS event-stream apart",
                        self.head.len()
                    ),
                };
                self.failed = Some(error.clone());
                return Err(error);
            }
            self.reset();
            return Ok(());
        }
        self.inner.finish(out)?;
        let diverged = self.divergence();
        self.reset();
        self.finished_divergence = diverged;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::testutil::{bytewise, split_at_cuts};
    use crate::framing::HeaderValue;
    use proptest::prelude::*;

    fn decode_pieces(pieces: &[&[u8]]) -> Result<Vec<Frame>, Error> {
        let mut decoder = Decoder::new(FramingLimits::default());
        let mut out = Vec::new();
        for piece in pieces {
            decoder.push(piece, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn decode(input: &[u8]) -> Result<Vec<Frame>, Error> {
        decode_pieces(&[input])
    }

    fn sse(data: &str) -> Frame {
        Frame::Sse(SseEvent {
            event: None,
            data: data.to_owned(),
            id: None,
        })
    }

    fn es_message(event_type: &str) -> EventStreamMessage {
        EventStreamMessage {
            headers: vec![(
                ":event-type".to_owned(),
                HeaderValue::String(event_type.to_owned()),
            )],
            payload: b"{}".to_vec(),
        }
    }

    #[test]
    fn detects_each_transport() {
        assert_eq!(decode(b"data: 1\n\n"), Ok(vec![sse("1")]));
        assert_eq!(
            decode(b"{\"a\":1}\n{}\n"),
            Ok(vec![
                Frame::Line("{\"a\":1}".to_owned()),
                Frame::Line("{}".to_owned())
            ])
        );
        let frame = es_message("messageStart").encode().unwrap_or_default();
        assert_eq!(
            decode(&frame),
            Ok(vec![Frame::EventStream(es_message("messageStart"))])
        );
    }

    #[test]
    fn detection_across_pushes_keeps_offsets_from_the_first_byte() {
        let input: &[u8] = b"\xEF\xBB\xBF\n\ndata: \xFF\n\n";
        let whole = decode(input);
        assert_eq!(
            whole,
            Err(Error::Utf8 {
                offset: 11,
                what: "SSE line",
                start: 5
            })
        );
        assert_eq!(decode_pieces(&bytewise(input)), whole);
    }

    #[test]
    fn transport_is_reported_and_reset_by_finish() {
        let mut decoder = Decoder::new(FramingLimits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.transport(), None);
        assert_eq!(decoder.push(b"\n ", &mut out), Ok(()));
        assert_eq!(decoder.transport(), None);
        assert_eq!(decoder.push(b"\n{}\n", &mut out), Ok(()));
        assert_eq!(decoder.transport(), Some(Transport::JsonLines));
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(decoder.transport(), None);
        assert_eq!(decoder.push(b"data: x\n\n", &mut out), Ok(()));
        assert_eq!(out, vec![Frame::Line("{}".to_owned()), sse("x")]);
    }

    #[test]
    fn given_transport_skips_detection() {
        let mut decoder = Decoder::with_transport(Transport::JsonLines, FramingLimits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.transport(), Some(Transport::JsonLines));
        assert!(matches!(
            decoder.push(b"data: {}\n", &mut out),
            Err(Error::Json { offset: 0, .. })
        ));
        let mut decoder = Decoder::with_transport(Transport::JsonLines, FramingLimits::default());
        assert_eq!(decoder.push(b"{\"data\": 1}\n", &mut out), Ok(()));
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(decoder.transport(), Some(Transport::JsonLines));
        assert_eq!(out, vec![Frame::Line("{\"data\": 1}".to_owned())]);
    }

    #[test]
    fn unknown_transport_is_an_error() {
        let err = decode(b"<html><body>502 Bad Gateway");
        assert_eq!(
            err,
            Err(Error::UnknownTransport {
                offset: 0,
                byte: b'<'
            })
        );
        assert_eq!(
            decode_pieces(&bytewise(b"\r\nHTTP")),
            Err(Error::UnknownTransport {
                offset: 2,
                byte: b'H'
            })
        );
    }

    #[test]
    fn finish_before_detection() {
        assert_eq!(decode(b""), Ok(vec![]));
        assert_eq!(decode(b" \r\n\t"), Ok(vec![]));
        assert_eq!(decode(b"\xEF\xBB\xBF\n"), Ok(vec![]));
        assert!(matches!(
            decode(b"dat"),
            Err(Error::Truncated { offset: 0, .. })
        ));
        assert!(matches!(
            decode(b"\n\nda"),
            Err(Error::Truncated { offset: 0, .. })
        ));
        assert!(matches!(
            decode(b"\0\0\0"),
            Err(Error::Truncated { offset: 0, .. })
        ));
        assert!(matches!(
            decode(b"\xEF\xBB"),
            Err(Error::Truncated { offset: 0, .. })
        ));
    }

    #[test]
    fn leading_whitespace_is_bounded() {
        let limits = FramingLimits {
            max_line_bytes: 8,
            ..FramingLimits::default()
        };
        let mut decoder = Decoder::new(limits);
        let mut out = Vec::new();
        assert_eq!(decoder.push(b"\n\n\n\n", &mut out), Ok(()));
        assert_eq!(decoder.push(b"\n\n\n\n", &mut out), Ok(()));
        assert!(matches!(
            decoder.push(b"\n", &mut out),
            Err(Error::Limit {
                limit: "max_line_bytes",
                ..
            })
        ));
        // a big first push that decides at once is not held
        let mut decoder = Decoder::new(limits);
        assert_eq!(decoder.push(b"data: 1\n\ndata: 2\n\n", &mut out), Ok(()));
    }

    #[test]
    fn errors_are_sticky() {
        let mut decoder = Decoder::new(FramingLimits::default());
        let mut out = Vec::new();
        let err = decoder.push(b"<", &mut out);
        assert!(err.is_err());
        assert_eq!(decoder.push(b"data: x\n\n", &mut out), err);
        assert_eq!(decoder.finish(&mut out), err);
        decoder.reset();
        assert_eq!(decoder.push(b"data: x\n\n", &mut out), Ok(()));
        let inner_err = decoder.push(b"data: \xFF\n", &mut out);
        assert!(inner_err.is_err());
        assert_eq!(decoder.finish(&mut out), inner_err);
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_frames(
            kind in 0u8..4,
            items in proptest::collection::vec("[^\r\n]{0,20}", 1..6),
            lead in "(\n|\r\n| \n|\u{feff})?[\n]{0,2}",
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let docs: Vec<String> = items.iter().map(|s| serde_json::json!({ "s": s }).to_string()).collect();
            let (bytes, expected): (Vec<u8>, Vec<Frame>) = match kind {
                0 => (
                    [lead.as_bytes(), &items.iter().flat_map(|s| format!("data: {s}\n\n").into_bytes()).collect::<Vec<u8>>()].concat(),
                    items.iter().map(|s| sse(s)).collect(),
                ),
                1 => (
                    [lead.as_bytes(), docs.iter().flat_map(|d| format!("{d}\n").into_bytes()).collect::<Vec<u8>>().as_slice()].concat(),
                    docs.iter().cloned().map(Frame::Line).collect(),
                ),
                2 => (
                    [lead.as_bytes(), b"[", docs.join("\r\n,\r\n").as_bytes(), b"]\r\n"].concat(),
                    docs.iter().cloned().map(Frame::Line).collect(),
                ),
                _ => {
                    let messages: Vec<EventStreamMessage> = items.iter().map(|s| es_message(s)).collect();
                    (
                        messages.iter().flat_map(|m| m.encode().unwrap_or_default()).collect(),
                        messages.into_iter().map(Frame::EventStream).collect(),
                    )
                }
            };
            let whole = decode(&bytes);
            prop_assert_eq!(&whole, &Ok(expected));
            prop_assert_eq!(&decode_pieces(&split_at_cuts(&bytes, &cuts)), &whole);
            prop_assert_eq!(&decode_pieces(&bytewise(&bytes)), &whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let whole = decode(&bytes);
            prop_assert_eq!(decode_pieces(&split_at_cuts(&bytes, &cuts)), whole);
        }
    }
}
