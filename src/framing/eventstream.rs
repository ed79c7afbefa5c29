//! AWS `application/vnd.amazon.eventstream` frames (Bedrock's streaming body).
//!
//! A frame is, big-endian throughout:
//!
//! ```text
//! total length u32 | headers length u32 | prelude CRC32 (of the 8 bytes before)
//! headers (headers length bytes) | payload | message CRC32 (of every byte before)
//! ```
//!
//! A header is `name length u8 | name | value type u8 | value`, the value's
//! shape chosen by its type: 0 true, 1 false, 2 i8, 3 i16, 4 i32, 5 i64,
//! 6 bytes (u16 length), 7 string (u16 length), 8 timestamp (i64 ms),
//! 9 UUID (16 bytes).

use super::{advance, CrcKind, Error, FramingLimits};

const PRELUDE_LEN: usize = 12;
const CRC_LEN: usize = 4;
/// The smallest frame: a prelude and a message CRC, no headers, no payload.
const MIN_FRAME_LEN: usize = PRELUDE_LEN + CRC_LEN;
/// Pending buffers larger than this are released after their frame.
const KEEP_CAPACITY: usize = 1 << 20;

/// A fresh CRC32 hasher, the machine's instructions told once (not per frame).
static HASHER: std::sync::LazyLock<crc32fast::Hasher> =
    std::sync::LazyLock::new(crc32fast::Hasher::new);

/// The CRC32 of `bytes` (crc32fast: carry-less multiplication where the
/// machine has it).
fn crc32_of(bytes: &[u8]) -> u32 {
    let mut h = HASHER.clone();
    h.update(bytes);
    h.finalize()
}

/// The CRC32 (IEEE, reflected) tables of slicing by eight: row `k` gives a
/// byte's remainder as if `k` zero bytes followed it.
static SLICES: [[u32; 256]; 8] = slices();

// Indexing in a constant's evaluation cannot panic at run time: a bad index
// fails the build.
#[allow(clippy::indexing_slicing)]
const fn slices() -> [[u32; 256]; 8] {
    let mut t = [[0_u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut k = 1;
        while k < 8 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            k += 1;
        }
        i += 1;
    }
    t
}

/// The CRC32 of a prelude's eight bytes of lengths, by eight table lookups
/// (what crc32fast does byte by byte below sixteen bytes).
fn crc32_of_lengths(lengths: [u8; 8]) -> u32 {
    let [a, b, c, d, e, f, g, h] = lengths;
    let [a, b, c, d] = (u32::from_le_bytes([a, b, c, d]) ^ u32::MAX).to_le_bytes();
    let at = |row: usize, byte: u8| {
        SLICES
            .get(row)
            .and_then(|r| r.get(usize::from(byte)))
            .copied()
            .unwrap_or_default()
    };
    !(at(7, a) ^ at(6, b) ^ at(5, c) ^ at(4, d) ^ at(3, e) ^ at(2, f) ^ at(1, g) ^ at(0, h))
}

/// One header value, by its wire type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeaderValue {
    /// Types 0 (true) and 1 (false).
    Bool(bool),
    /// Type 2.
    Byte(i8),
    /// Type 3.
    Short(i16),
    /// Type 4.
    Int(i32),
    /// Type 5.
    Long(i64),
    /// Type 6: at most 65,535 bytes.
    Bytes(Vec<u8>),
    /// Type 7: UTF-8, at most 65,535 bytes.
    String(String),
    /// Type 8: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// Type 9.
    Uuid([u8; 16]),
}

impl HeaderValue {
    /// The wire type code.
    #[must_use]
    pub fn type_code(&self) -> u8 {
        match self {
            HeaderValue::Bool(true) => 0,
            HeaderValue::Bool(false) => 1,
            HeaderValue::Byte(_) => 2,
            HeaderValue::Short(_) => 3,
            HeaderValue::Int(_) => 4,
            HeaderValue::Long(_) => 5,
            HeaderValue::Bytes(_) => 6,
            HeaderValue::String(_) => 7,
            HeaderValue::Timestamp(_) => 8,
            HeaderValue::Uuid(_) => 9,
        }
    }

    /// The text of a string value.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            HeaderValue::String(s) => Some(s),
            _ => None,
        }
    }
}

/// One decoded frame: its headers in wire order and its payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventStreamMessage {
    /// The headers, in the order they came (duplicates kept).
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload bytes (JSON for Bedrock).
    pub payload: Vec<u8>,
}

impl EventStreamMessage {
    /// The first header called `name`.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The first header called `name`, if it is a string.
    #[must_use]
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(HeaderValue::as_str)
    }

    /// `:event-type` (`messageStart`, `contentBlockDelta`, …).
    #[must_use]
    pub fn event_type(&self) -> Option<&str> {
        self.header_str(":event-type")
    }

    /// `:message-type`: `event`, `exception` or `error`.
    #[must_use]
    pub fn message_type(&self) -> Option<&str> {
        self.header_str(":message-type")
    }

    /// `:exception-type`, on `exception` messages (`throttlingException`, …).
    #[must_use]
    pub fn exception_type(&self) -> Option<&str> {
        self.header_str(":exception-type")
    }

    /// `:content-type` (`application/json`).
    #[must_use]
    pub fn content_type(&self) -> Option<&str> {
        self.header_str(":content-type")
    }

    /// The payload as text, if it is UTF-8.
    #[must_use]
    pub fn payload_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.payload).ok()
    }

    /// The frame's wire bytes, CRCs included (for tests and replay tools).
    ///
    /// # Errors
    /// [`Error::Encode`] for a header name over 255 bytes, a string or bytes
    /// value over 65,535 bytes, or a frame over 4 GiB.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            let name_len = u8::try_from(name.len()).map_err(|_| Error::Encode {
                reason: format!("header name of {} bytes (at most 255)", name.len()),
            })?;
            headers.push(name_len);
            headers.extend_from_slice(name.as_bytes());
            headers.push(value.type_code());
            match value {
                HeaderValue::Bool(_) => {}
                HeaderValue::Byte(v) => headers.extend_from_slice(&v.to_be_bytes()),
                HeaderValue::Short(v) => headers.extend_from_slice(&v.to_be_bytes()),
                HeaderValue::Int(v) => headers.extend_from_slice(&v.to_be_bytes()),
                HeaderValue::Long(v) | HeaderValue::Timestamp(v) => {
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Bytes(v) => push_u16_prefixed(&mut headers, name, v)?,
                HeaderValue::String(v) => push_u16_prefixed(&mut headers, name, v.as_bytes())?,
                HeaderValue::Uuid(v) => headers.extend_from_slice(v),
            }
        }
        let too_big = || Error::Encode {
            reason: "frame over 4 GiB".to_owned(),
        };
        let total = MIN_FRAME_LEN
            .checked_add(headers.len())
            .and_then(|n| n.checked_add(self.payload.len()))
            .ok_or_else(too_big)?;
        let total_u32 = u32::try_from(total).map_err(|_| too_big())?;
        let headers_u32 = u32::try_from(headers.len()).map_err(|_| too_big())?;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&total_u32.to_be_bytes());
        out.extend_from_slice(&headers_u32.to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out.extend_from_slice(&headers);
        out.extend_from_slice(&self.payload);
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        Ok(out)
    }
}

fn push_u16_prefixed(out: &mut Vec<u8>, name: &str, value: &[u8]) -> Result<(), Error> {
    let len = u16::try_from(value.len()).map_err(|_| Error::Encode {
        reason: format!(
            "header {name:?} has a value of {} bytes (at most 65535)",
            value.len()
        ),
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(value);
    Ok(())
}

/// The checked lengths of a frame's prelude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Prelude {
    total: usize,
    headers_len: usize,
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let chunk: [u8; 4] = bytes.get(at..end)?.try_into().ok()?;
    Some(u32::from_be_bytes(chunk))
}

fn malformed(offset: u64, reason: impl Into<String>) -> Error {
    Error::Malformed {
        offset,
        reason: reason.into(),
    }
}

/// Checks the first 12 bytes of a frame starting at `offset`; gives the
/// prelude.
fn read_prelude(bytes: &[u8], offset: u64, max_frame_bytes: usize) -> Result<Prelude, Error> {
    let (Some(total), Some(headers_len), Some(expected), Some(lengths)) = (
        be_u32(bytes, 0),
        be_u32(bytes, 4),
        be_u32(bytes, 8),
        bytes.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()),
    ) else {
        return Err(malformed(offset, "prelude shorter than 12 bytes"));
    };
    let computed = crc32_of_lengths(lengths);
    if computed != expected {
        return Err(Error::Crc {
            crc: CrcKind::Prelude,
            offset,
            expected,
            computed,
        });
    }
    let total_len = usize::try_from(total).unwrap_or(usize::MAX);
    if total_len < MIN_FRAME_LEN {
        return Err(malformed(
            offset,
            format!("total length {total} is under the 16-byte minimum (12-byte prelude and 4-byte message CRC)"),
        ));
    }
    if total_len > max_frame_bytes {
        return Err(Error::Limit {
            limit: "max_frame_bytes",
            max: max_frame_bytes,
            offset,
            what: "AWS event-stream frame",
        });
    }
    let headers_len = usize::try_from(headers_len).unwrap_or(usize::MAX);
    if headers_len > total_len.saturating_sub(MIN_FRAME_LEN) {
        return Err(malformed(
            offset,
            format!("headers length {headers_len} does not fit in a frame of {total} bytes"),
        ));
    }
    Ok(Prelude {
        total: total_len,
        headers_len,
    })
}

/// A bounds-checked cursor over a frame's headers section.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let taken = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(taken)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }

    fn u16_prefixed(&mut self) -> Option<&'a [u8]> {
        let len = u16::from_be_bytes(self.array()?);
        self.take(usize::from(len))
    }
}

fn header_text<'a>(bytes: &'a [u8], offset: u64, what: &'static str) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes).map_err(|e| Error::Utf8 {
        offset: advance(offset, e.valid_up_to()),
        what,
        start: offset,
    })
}

/// Sets `slot` to the text of `bytes`, checked as UTF-8 unless `slot`
/// already holds exactly these bytes (a valid string): the headers of
/// consecutive frames repeat (`:event-type`, `:content-type`, the same event
/// type many times), and then nothing is checked, copied or allocated.
fn set_text(slot: &mut String, bytes: &[u8], offset: u64, what: &'static str) -> Result<(), Error> {
    if slot.as_bytes() != bytes {
        let text = header_text(bytes, offset, what)?;
        slot.clear();
        slot.push_str(text);
    }
    Ok(())
}

/// Parses a headers section whose first byte is at `offset` into `out`,
/// reusing the strings it holds from the frame before.
fn parse_headers(
    bytes: &[u8],
    offset: u64,
    out: &mut Vec<(String, HeaderValue)>,
) -> Result<(), Error> {
    let mut n = 0;
    let mut r = Reader { bytes, pos: 0 };
    while r.pos < bytes.len() {
        let start = advance(offset, r.pos);
        let overrun = || malformed(start, "a header runs past the end of the headers section");
        let name_len = r.u8().ok_or_else(overrun)?;
        let name_at = advance(offset, r.pos);
        let name = r.take(usize::from(name_len)).ok_or_else(overrun)?;
        if out.len() == n {
            out.push((String::new(), HeaderValue::Bool(true)));
        }
        let Some((slot, value)) = out.get_mut(n) else {
            return Err(overrun());
        };
        n += 1;
        set_text(slot, name, name_at, "event-stream header name")?;
        let fixed = match r.u8().ok_or_else(overrun)? {
            0 => Some(HeaderValue::Bool(true)),
            1 => Some(HeaderValue::Bool(false)),
            2 => r.array().map(|b| HeaderValue::Byte(i8::from_be_bytes(b))),
            3 => r.array().map(|b| HeaderValue::Short(i16::from_be_bytes(b))),
            4 => r.array().map(|b| HeaderValue::Int(i32::from_be_bytes(b))),
            5 => r.array().map(|b| HeaderValue::Long(i64::from_be_bytes(b))),
            6 => r.u16_prefixed().map(|b| HeaderValue::Bytes(b.to_vec())),
            7 => {
                let b = r.u16_prefixed().ok_or_else(overrun)?;
                let at = advance(offset, r.pos.saturating_sub(b.len()));
                if !matches!(value, HeaderValue::String(_)) {
                    *value = HeaderValue::String(String::new());
                }
                if let HeaderValue::String(text) = value {
                    set_text(text, b, at, "event-stream header value")?;
                }
                continue;
            }
            8 => r
                .array()
                .map(|b| HeaderValue::Timestamp(i64::from_be_bytes(b))),
            9 => r.array().map(HeaderValue::Uuid),
            other => {
                return Err(malformed(
                    start,
                    format!(
                        "header {:?} has unknown value type {other} (known: 0 to 9)",
                        slot.as_str()
                    ),
                ))
            }
        };
        *value = fixed.ok_or_else(overrun)?;
    }
    out.truncate(n);
    Ok(())
}

/// Where a frame's `:event-type` and `:message-type` headers are in its
/// list (the first of each name, as [`EventStreamMessage::header`] finds
/// it), found once per headers section read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Named {
    event_type: Option<usize>,
    message_type: Option<usize>,
}

impl Named {
    fn of(headers: &[(String, HeaderValue)]) -> Self {
        let at = |name: &str| headers.iter().position(|(n, _)| n == name);
        Self {
            event_type: at(":event-type"),
            message_type: at(":message-type"),
        }
    }
}

/// One frame as the decoder hands it to a reader inside the crate
/// (`FrameSink::event_frame`): its headers, in a message whose payload is
/// not this frame's, and its payload borrowed from the pushed bytes (or the
/// decoder's buffer), not copied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventFrame<'a> {
    /// The frame's headers (its `payload` is stale: read [`EventFrame::payload`]).
    pub(crate) headers: &'a EventStreamMessage,
    /// The frame's payload.
    pub(crate) payload: &'a [u8],
    named: Named,
}

impl<'a> EventFrame<'a> {
    /// What [`EventStreamMessage::header_str`] gives for the header at `at`.
    fn named_str(&self, at: Option<usize>) -> Option<&'a str> {
        at.and_then(|i| self.headers.headers.get(i))
            .and_then(|(_, v)| v.as_str())
    }

    /// [`EventStreamMessage::event_type`].
    #[must_use]
    pub(crate) fn event_type(&self) -> Option<&'a str> {
        self.named_str(self.named.event_type)
    }

    /// [`EventStreamMessage::message_type`].
    #[must_use]
    pub(crate) fn message_type(&self) -> Option<&'a str> {
        self.named_str(self.named.message_type)
    }
}

/// What [`EventStreamDecoder::push_frames`] gives beside a frame's headers:
/// its payload, borrowed, and where two of its headers are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventFrameParts<'a>(&'a [u8], Named);

impl<'a> EventFrameParts<'a> {
    /// The frame's payload.
    pub(crate) fn payload(self) -> &'a [u8] {
        self.0
    }

    /// The frame, its headers those of `headers` (the message the decoder
    /// gave beside these parts).
    pub(crate) fn with<'m>(self, headers: &'m EventStreamMessage) -> EventFrame<'m>
    where
        'a: 'm,
    {
        EventFrame {
            headers,
            payload: self.0,
            named: self.1,
        }
    }
}

/// Decodes one whole frame starting at `offset`, whose prelude is checked,
/// into `m`'s headers (whose buffers are reused; `named` says where two of
/// them are) and gives its payload, borrowed from `frame`. `raw` holds the
/// headers section `m`'s headers were read from: a frame with the same
/// section (the usual next frame: the same names, types and event type) has
/// the same headers, and they are not read again.
fn decode_frame<'f>(
    frame: &'f [u8],
    offset: u64,
    prelude: Prelude,
    m: &mut EventStreamMessage,
    raw: &mut Vec<u8>,
    named: &mut Named,
) -> Result<&'f [u8], Error> {
    let short = || malformed(offset, "frame shorter than its total length");
    let body_len = prelude.total.checked_sub(CRC_LEN).ok_or_else(short)?;
    let (body, crc) = frame.split_at_checked(body_len).ok_or_else(short)?;
    let expected = be_u32(crc, 0).ok_or_else(short)?;
    let computed = crc32_of(body);
    if computed != expected {
        return Err(Error::Crc {
            crc: CrcKind::Message,
            offset,
            expected,
            computed,
        });
    }
    let (_, rest) = body.split_at_checked(PRELUDE_LEN).ok_or_else(short)?;
    let (headers, payload) = rest
        .split_at_checked(prelude.headers_len)
        .ok_or_else(short)?;
    if raw.is_empty() || raw.as_slice() != headers {
        raw.clear();
        parse_headers(headers, advance(offset, PRELUDE_LEN), &mut m.headers)?;
        *named = Named::of(&m.headers);
        raw.extend_from_slice(headers);
    }
    Ok(payload)
}

/// A push decoder for AWS event-stream frames.
///
/// Whole frames inside one push are decoded in place; only a frame cut by a
/// push boundary is copied. A frame's prelude CRC is checked as soon as its
/// 12 bytes arrive, before its declared length is trusted for buffering.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EventStreamDecoder {
    max_frame_bytes: usize,
    /// The start of a frame cut by the end of the last push.
    pending: Vec<u8>,
    /// The pending frame's checked prelude, once its 12 bytes are in.
    prelude: Option<Prelude>,
    /// Offset of the pending (or next) frame's first byte.
    frame_start: u64,
    failed: Option<Error>,
    /// The frame last decoded, whose buffers the next one reuses.
    #[serde(skip)]
    frame: EventStreamMessage,
    /// The headers section its headers were read from (see [`decode_frame`]).
    #[serde(skip)]
    raw_headers: Vec<u8>,
    /// Where two of its headers are (see [`Named`]).
    #[serde(skip)]
    named: Named,
}

impl EventStreamDecoder {
    /// A decoder at the start of a stream.
    #[must_use]
    pub fn new(limits: FramingLimits) -> Self {
        Self {
            max_frame_bytes: limits.max_frame_bytes,
            pending: Vec::new(),
            prelude: None,
            frame_start: 0,
            failed: None,
            frame: EventStreamMessage::default(),
            raw_headers: Vec::new(),
            named: Named::default(),
        }
    }

    /// Back to the start of a new stream, forgetting any error.
    pub fn reset(&mut self) {
        *self = Self {
            max_frame_bytes: self.max_frame_bytes,
            ..Self::new(FramingLimits::default())
        };
    }

    /// Bytes taken since the start.
    #[must_use]
    pub fn offset(&self) -> u64 {
        advance(self.frame_start, self.pending.len())
    }

    /// Where the frame the decoder holds unfinished starts, if it holds one.
    #[must_use]
    pub fn unfinished_from(&self) -> Option<u64> {
        (!self.pending.is_empty()).then_some(self.frame_start)
    }

    /// Takes the next bytes, cut anywhere, and appends each frame they
    /// complete to `out`.
    ///
    /// # Errors
    /// [`Error::Crc`] for a bad prelude or message CRC, [`Error::Limit`] for a
    /// frame over `max_frame_bytes`, [`Error::Malformed`] for lengths that do
    /// not fit, an unknown header type or a header past its section,
    /// [`Error::Utf8`] for a header name or string value that is not UTF-8.
    /// Sticky until [`EventStreamDecoder::reset`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<EventStreamMessage>) -> Result<(), Error> {
        self.push_with(bytes, &mut |message| out.push(message.clone()))
    }

    /// Ends the stream.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the stream ends inside a frame; an earlier
    /// sticky error.
    pub fn finish(&mut self, out: &mut Vec<EventStreamMessage>) -> Result<(), Error> {
        self.finish_with(&mut |message| out.push(message.clone()))
    }

    pub(crate) fn push_with<S: FnMut(&EventStreamMessage)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        self.push_frames(bytes, &mut |m, parts| {
            m.payload.clear();
            m.payload.extend_from_slice(parts.payload());
            emit(m);
        })
    }

    /// [`EventStreamDecoder::push_with`] that gives each frame's payload
    /// borrowed, beside its headers (in a message whose payload `emit` may
    /// fill), instead of copied into the message.
    pub(crate) fn push_frames<S: FnMut(&mut EventStreamMessage, EventFrameParts<'_>)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.push_inner(bytes, emit);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn push_inner<S: FnMut(&mut EventStreamMessage, EventFrameParts<'_>)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        let mut input = bytes;
        while !input.is_empty() {
            if self.pending.is_empty() {
                // Whole frames straight from the caller's bytes.
                let Some(head) = input.get(..PRELUDE_LEN) else {
                    self.pending.extend_from_slice(input);
                    return Ok(());
                };
                let prelude = read_prelude(head, self.frame_start, self.max_frame_bytes)?;
                let Some((frame, rest)) = input.split_at_checked(prelude.total) else {
                    self.prelude = Some(prelude);
                    self.pending.reserve(prelude.total);
                    self.pending.extend_from_slice(input);
                    return Ok(());
                };
                let payload = decode_frame(
                    frame,
                    self.frame_start,
                    prelude,
                    &mut self.frame,
                    &mut self.raw_headers,
                    &mut self.named,
                )?;
                emit(&mut self.frame, EventFrameParts(payload, self.named));
                self.frame_start = advance(self.frame_start, prelude.total);
                input = rest;
                continue;
            }
            // Complete the frame a previous push cut.
            let need = self.prelude.map_or(PRELUDE_LEN, |p| p.total);
            let wanted = need.saturating_sub(self.pending.len());
            let (head, rest) = input.split_at_checked(wanted).unwrap_or((input, &[]));
            self.pending.extend_from_slice(head);
            input = rest;
            if self.pending.len() < need {
                return Ok(());
            }
            match self.prelude {
                None => {
                    let prelude =
                        read_prelude(&self.pending, self.frame_start, self.max_frame_bytes)?;
                    self.pending
                        .reserve(prelude.total.saturating_sub(self.pending.len()));
                    self.prelude = Some(prelude);
                }
                Some(prelude) => {
                    let payload = decode_frame(
                        &self.pending,
                        self.frame_start,
                        prelude,
                        &mut self.frame,
                        &mut self.raw_headers,
                        &mut self.named,
                    )?;
                    emit(&mut self.frame, EventFrameParts(payload, self.named));
                    self.frame_start = advance(self.frame_start, prelude.total);
                    self.prelude = None;
                    if self.pending.capacity() > KEEP_CAPACITY {
                        self.pending = Vec::new();
                    } else {
                        self.pending.clear();
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish_with<S: FnMut(&EventStreamMessage)>(
        &mut self,
        _emit: &mut S,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if self.pending.is_empty() {
            self.reset();
            return Ok(());
        }
        let what = match self.prelude {
            Some(p) => format!(
                "an AWS event-stream frame ({} of its {} bytes)",
                self.pending.len(),
                p.total
            ),
            None => format!(
                "an AWS event-stream frame's 12-byte prelude ({} bytes of it)",
                self.pending.len()
            ),
        };
        let error = Error::Truncated {
            offset: self.frame_start,
            what,
        };
        self.failed = Some(error.clone());
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::testutil::{bytewise, split_at_cuts};
    use proptest::prelude::*;

    /// A headers section on its own, as a fresh list.
    fn parse_headers(bytes: &[u8], offset: u64) -> Result<Vec<(String, HeaderValue)>, Error> {
        let mut out = Vec::new();
        super::parse_headers(bytes, offset, &mut out).map(|()| out)
    }

    fn decode_pieces(
        limits: FramingLimits,
        pieces: &[&[u8]],
    ) -> Result<Vec<EventStreamMessage>, Error> {
        let mut decoder = EventStreamDecoder::new(limits);
        let mut out = Vec::new();
        for piece in pieces {
            decoder.push(piece, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn decode(input: &[u8]) -> Result<Vec<EventStreamMessage>, Error> {
        decode_pieces(FramingLimits::default(), &[input])
    }

    fn message(event_type: &str, payload: &str) -> EventStreamMessage {
        EventStreamMessage {
            headers: vec![
                (
                    ":event-type".to_owned(),
                    HeaderValue::String(event_type.to_owned()),
                ),
                (
                    ":content-type".to_owned(),
                    HeaderValue::String("application/json".to_owned()),
                ),
                (
                    ":message-type".to_owned(),
                    HeaderValue::String("event".to_owned()),
                ),
            ],
            payload: payload.as_bytes().to_vec(),
        }
    }

    fn encoded(m: &EventStreamMessage) -> Vec<u8> {
        m.encode().unwrap_or_default()
    }

    /// Rewrites a frame's CRCs after a test edited its bytes.
    fn fix_crcs(frame: &mut [u8]) {
        let prelude_crc = crc32fast::hash(frame.get(..8).unwrap_or_default());
        if let Some(slot) = frame.get_mut(8..12) {
            slot.copy_from_slice(&prelude_crc.to_be_bytes());
        }
        let body_len = frame.len().saturating_sub(4);
        let message_crc = crc32fast::hash(frame.get(..body_len).unwrap_or_default());
        if let Some(slot) = frame.get_mut(body_len..) {
            slot.copy_from_slice(&message_crc.to_be_bytes());
        }
    }

    #[test]
    fn known_answer_frames() {
        // Published encodings of `{"foo": "bar"}`, without and with a header.
        let bare: &[u8] = &[
            0, 0, 0, 30, 0, 0, 0, 0, 186, 242, 246, 138, 123, 34, 102, 111, 111, 34, 58, 32, 34,
            98, 97, 114, 34, 125, 174, 114, 88, 228,
        ];
        let with_header: &[u8] = &[
            0, 0, 0, 62, 0, 0, 0, 32, 64, 93, 249, 70, 12, 99, 111, 110, 116, 101, 110, 116, 45,
            116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47,
            106, 115, 111, 110, 123, 34, 102, 111, 111, 34, 58, 32, 34, 98, 97, 114, 34, 125, 111,
            162, 191, 59,
        ];
        let bare_message = EventStreamMessage {
            headers: vec![],
            payload: b"{\"foo\": \"bar\"}".to_vec(),
        };
        let header_message = EventStreamMessage {
            headers: vec![(
                "content-type".to_owned(),
                HeaderValue::String("application/json".to_owned()),
            )],
            payload: b"{\"foo\": \"bar\"}".to_vec(),
        };
        assert_eq!(decode(bare), Ok(vec![bare_message.clone()]));
        assert_eq!(decode(with_header), Ok(vec![header_message.clone()]));
        assert_eq!(bare_message.encode(), Ok(bare.to_vec()));
        assert_eq!(header_message.encode(), Ok(with_header.to_vec()));
    }

    #[test]
    fn helpers_read_the_usual_headers() {
        let mut m = message("contentBlockDelta", "{}");
        m.headers.push((
            ":exception-type".to_owned(),
            HeaderValue::String("throttlingException".to_owned()),
        ));
        m.headers.push((
            ":event-type".to_owned(),
            HeaderValue::String("shadowed".to_owned()),
        ));
        m.headers.push(("flag".to_owned(), HeaderValue::Bool(true)));
        assert_eq!(m.event_type(), Some("contentBlockDelta"));
        assert_eq!(m.content_type(), Some("application/json"));
        assert_eq!(m.message_type(), Some("event"));
        assert_eq!(m.exception_type(), Some("throttlingException"));
        assert_eq!(m.header_str("flag"), None);
        assert_eq!(m.header("flag"), Some(&HeaderValue::Bool(true)));
        assert_eq!(m.header_str("missing"), None);
        assert_eq!(m.payload_str(), Some("{}"));
    }

    #[test]
    fn every_header_type_round_trips() {
        let m = EventStreamMessage {
            headers: vec![
                ("t".to_owned(), HeaderValue::Bool(true)),
                ("f".to_owned(), HeaderValue::Bool(false)),
                ("byte".to_owned(), HeaderValue::Byte(-7)),
                ("short".to_owned(), HeaderValue::Short(-30_000)),
                ("int".to_owned(), HeaderValue::Int(i32::MIN)),
                ("long".to_owned(), HeaderValue::Long(i64::MAX)),
                ("bytes".to_owned(), HeaderValue::Bytes(vec![0, 255, 1])),
                (
                    "string".to_owned(),
                    HeaderValue::String("h\u{e9}".to_owned()),
                ),
                ("ts".to_owned(), HeaderValue::Timestamp(1_700_000_000_000)),
                ("uuid".to_owned(), HeaderValue::Uuid([9; 16])),
                (String::new(), HeaderValue::Bytes(vec![])),
            ],
            payload: vec![1, 2, 3],
        };
        let bytes = encoded(&m);
        // Type codes land where the format puts them.
        assert_eq!(bytes.get(12..18), Some(b"\x01t\x00\x01f\x01".as_slice()));
        assert_eq!(bytes.get(18..25), Some(b"\x04byte\x02\xF9".as_slice()));
        assert_eq!(decode(&bytes), Ok(vec![m.clone()]));
        let codes: Vec<u8> = m.headers.iter().map(|(_, v)| v.type_code()).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 6]);
    }

    #[test]
    fn header_values_are_big_endian() {
        // name "n", type 3 (i16) 0x0102, type 4 (i32), type 5 (i64), type 8
        let headers: &[u8] = b"\x01a\x03\x01\x02\x01b\x04\x00\x00\x01\x00\x01c\x05\x00\x00\x00\x00\x00\x00\x00\x02\x01d\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF";
        assert_eq!(
            parse_headers(headers, 0),
            Ok(vec![
                ("a".to_owned(), HeaderValue::Short(258)),
                ("b".to_owned(), HeaderValue::Int(256)),
                ("c".to_owned(), HeaderValue::Long(2)),
                ("d".to_owned(), HeaderValue::Timestamp(-1)),
            ])
        );
    }

    #[test]
    fn bad_prelude_crc() {
        let mut bytes = encoded(&message("messageStart", "{}"));
        let good = bytes.clone();
        if let Some(b) = bytes.get_mut(9) {
            *b ^= 1;
        }
        let second = [good.as_slice(), &bytes].concat();
        let err = decode(&second);
        assert!(
            matches!(err, Err(Error::Crc { crc: CrcKind::Prelude, offset, .. }) if offset == good.len() as u64),
            "{err:?}"
        );
        // and the same when the prelude arrives byte by byte
        assert_eq!(
            decode_pieces(FramingLimits::default(), &bytewise(&second)),
            err
        );
    }

    #[test]
    fn bad_message_crc() {
        let mut bytes = encoded(&message("messageStop", "{\"stopReason\":\"tool_use\"}"));
        let last = bytes.len().saturating_sub(1);
        if let Some(b) = bytes.get_mut(last) {
            *b ^= 0x80;
        }
        let err = decode(&bytes);
        assert!(
            matches!(
                err,
                Err(Error::Crc {
                    crc: CrcKind::Message,
                    offset: 0,
                    ..
                })
            ),
            "{err:?}"
        );
        assert!(err.is_err_and(|e| e.to_string().contains("message CRC32")));
        // a flipped payload byte is caught the same way
        let mut bytes = encoded(&message("messageStop", "{}"));
        if let Some(b) = bytes.get_mut(20) {
            *b ^= 1;
        }
        assert!(matches!(
            decode(&bytes),
            Err(Error::Crc {
                crc: CrcKind::Message,
                ..
            })
        ));
    }

    #[test]
    fn total_length_under_sixteen_is_malformed() {
        let mut frame = vec![0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        fix_crcs(&mut frame);
        let err = decode(&frame);
        assert!(
            matches!(&err, Err(Error::Malformed { offset: 0, reason }) if reason.contains("16-byte minimum")),
            "{err:?}"
        );
        // 16 bytes exactly: an empty message
        let empty = encoded(&EventStreamMessage::default());
        assert_eq!(empty.len(), 16);
        assert_eq!(decode(&empty), Ok(vec![EventStreamMessage::default()]));
    }

    #[test]
    fn headers_length_over_the_frame_is_malformed() {
        let mut frame = encoded(&EventStreamMessage {
            headers: vec![],
            payload: b"abcd".to_vec(),
        });
        if let Some(b) = frame.get_mut(7) {
            *b = 5;
        }
        fix_crcs(&mut frame);
        assert!(matches!(
            decode(&frame),
            Err(Error::Malformed { offset: 0, .. })
        ));
    }

    #[test]
    fn frame_over_the_limit_is_refused_before_buffering() {
        let limits = FramingLimits {
            max_frame_bytes: 128,
            ..FramingLimits::default()
        };
        let frame = encoded(&message("contentBlockDelta", &"x".repeat(100)));
        let mut decoder = EventStreamDecoder::new(limits);
        let mut out = Vec::new();
        let err = decoder.push(frame.get(..12).unwrap_or_default(), &mut out);
        assert_eq!(
            err,
            Err(Error::Limit {
                limit: "max_frame_bytes",
                max: 128,
                offset: 0,
                what: "AWS event-stream frame"
            })
        );
        let small = encoded(&message("a", ""));
        assert!(small.len() <= 128);
        assert_eq!(decode_pieces(limits, &[&small]), Ok(vec![message("a", "")]));
    }

    #[test]
    fn unknown_header_type_is_an_error() {
        let mut frame = encoded(&EventStreamMessage {
            headers: vec![("x".to_owned(), HeaderValue::Bool(true))],
            payload: vec![],
        });
        // header at 12: len 1, "x", type at 14
        if let Some(b) = frame.get_mut(14) {
            *b = 10;
        }
        fix_crcs(&mut frame);
        let err = decode(&frame);
        assert!(
            matches!(&err, Err(Error::Malformed { offset: 12, reason }) if reason.contains("unknown value type 10")),
            "{err:?}"
        );
    }

    #[test]
    fn header_overrunning_its_section_is_an_error() {
        // A string header claiming 200 bytes inside a 10-byte section.
        let headers: &[u8] = b"\x01s\x07\x00\xC8abcde";
        assert!(matches!(
            parse_headers(headers, 12),
            Err(Error::Malformed { offset: 12, .. })
        ));
        // A name longer than the section.
        assert!(matches!(
            parse_headers(b"\x09ab", 12),
            Err(Error::Malformed { .. })
        ));
        // A fixed-size value cut short.
        assert!(matches!(
            parse_headers(b"\x01a\x05\x00\x00", 0),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(
            parse_headers(b"\x01a", 0),
            Err(Error::Malformed { .. })
        ));
        assert!(matches!(
            parse_headers(b"\x01a\x09\x00", 0),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn non_utf8_header_text_is_an_error() {
        assert_eq!(
            parse_headers(b"\x02a\xFF\x00", 12),
            Err(Error::Utf8 {
                offset: 14,
                what: "event-stream header name",
                start: 13
            })
        );
        assert_eq!(
            parse_headers(b"\x01a\x07\x00\x02\xC3\x28", 12),
            Err(Error::Utf8 {
                offset: 17,
                what: "event-stream header value",
                start: 17
            })
        );
    }

    #[test]
    fn partial_frame_at_finish_is_truncated() {
        let first = encoded(&message("messageStart", "{}"));
        let second = encoded(&message("messageStop", "{}"));
        let offset = first.len() as u64;
        for cut in 1..second.len() {
            let bytes = [first.as_slice(), second.get(..cut).unwrap_or_default()].concat();
            let err = decode(&bytes);
            assert!(
                matches!(err, Err(Error::Truncated { offset: o, .. }) if o == offset),
                "cut {cut}: {err:?}"
            );
        }
        assert!(decode(&[0, 0]).is_err_and(|e| e.to_string().contains("12-byte prelude (2 bytes")));
    }

    #[test]
    fn errors_are_sticky_and_events_before_stay() {
        let good = encoded(&message("messageStart", "{}"));
        let mut bad = good.clone();
        if let Some(b) = bad.last_mut() {
            *b ^= 1;
        }
        let mut decoder = EventStreamDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        let err = decoder.push(&[good.as_slice(), &bad, &good].concat(), &mut out);
        assert!(err.is_err());
        assert_eq!(out.len(), 1);
        assert_eq!(decoder.push(&good, &mut out), err);
        assert_eq!(decoder.finish(&mut out), err);
        decoder.reset();
        assert_eq!(decoder.push(&good, &mut out), Ok(()));
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn encode_refuses_what_the_format_cannot_carry() {
        let long_name = EventStreamMessage {
            headers: vec![("n".repeat(256), HeaderValue::Bool(true))],
            payload: vec![],
        };
        assert!(matches!(long_name.encode(), Err(Error::Encode { .. })));
        let long_value = EventStreamMessage {
            headers: vec![("n".to_owned(), HeaderValue::Bytes(vec![0; 65_536]))],
            payload: vec![],
        };
        assert!(matches!(long_value.encode(), Err(Error::Encode { .. })));
    }

    fn header_value() -> impl Strategy<Value = HeaderValue> {
        prop_oneof![
            any::<bool>().prop_map(HeaderValue::Bool),
            any::<i8>().prop_map(HeaderValue::Byte),
            any::<i16>().prop_map(HeaderValue::Short),
            any::<i32>().prop_map(HeaderValue::Int),
            any::<i64>().prop_map(HeaderValue::Long),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(HeaderValue::Bytes),
            ".{0,20}".prop_map(HeaderValue::String),
            any::<i64>().prop_map(HeaderValue::Timestamp),
            any::<[u8; 16]>().prop_map(HeaderValue::Uuid),
        ]
    }

    fn gen_message() -> impl Strategy<Value = EventStreamMessage> {
        (
            proptest::collection::vec((":?[a-zA-Z-]{0,16}", header_value()), 0..5),
            proptest::collection::vec(any::<u8>(), 0..80),
        )
            .prop_map(|(headers, payload)| EventStreamMessage { headers, payload })
    }

    /// Headers named as the stream's are, in any order, repeated or of
    /// another type.
    fn named_headers() -> impl Strategy<Value = Vec<(String, HeaderValue)>> {
        let name = prop_oneof![
            Just(":event-type".to_owned()),
            Just(":message-type".to_owned()),
            Just(":content-type".to_owned()),
            Just(":event-typ".to_owned()),
            Just(":message-type ".to_owned()),
            ":?[a-z-]{0,14}",
        ];
        let value = prop_oneof![
            3 => "[a-zA-Z]{0,12}".prop_map(HeaderValue::String),
            1 => header_value(),
        ];
        proptest::collection::vec((name, value), 0..6)
    }

    #[test]
    fn the_lengths_crc_is_the_published_one() {
        // The prelude of the published frame of `{"foo": "bar"}` (30 bytes,
        // no headers) and its CRC.
        assert_eq!(crc32_of_lengths([0, 0, 0, 30, 0, 0, 0, 0]), 0xbaf2_f68a);
    }

    proptest! {
        /// The CRC of a prelude's lengths by slicing by eight is crc32fast's.
        #[test]
        fn the_lengths_crc_is_crc32fasts(lengths in any::<[u8; 8]>()) {
            prop_assert_eq!(crc32_of_lengths(lengths), crc32fast::hash(&lengths));
        }

        /// A frame's event and message types, found once per headers
        /// section ([`Named`]), are what the message's own lookups find.
        #[test]
        fn named_headers_are_the_messages_lookups(headers in named_headers()) {
            let m = EventStreamMessage { headers, payload: Vec::new() };
            let frame = EventFrameParts(&[], Named::of(&m.headers)).with(&m);
            prop_assert_eq!(frame.event_type(), m.event_type());
            prop_assert_eq!(frame.message_type(), m.message_type());
        }

        /// Frames with such headers, pushed cut anywhere: each frame's
        /// payload given borrowed and its types are the frame's.
        #[test]
        fn frames_given_borrowed_are_the_frames(
            list in proptest::collection::vec((named_headers(), proptest::collection::vec(any::<u8>(), 0..40)), 0..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let messages: Vec<EventStreamMessage> = list
                .into_iter()
                .map(|(headers, payload)| EventStreamMessage { headers, payload })
                .collect();
            let bytes: Vec<u8> = messages.iter().flat_map(encoded).collect();
            let mut decoder = EventStreamDecoder::new(FramingLimits::default());
            let mut seen = Vec::new();
            for piece in split_at_cuts(&bytes, &cuts) {
                decoder
                    .push_frames(piece, &mut |m, parts| {
                        let frame = parts.with(m);
                        seen.push((
                            frame.headers.headers.clone(),
                            frame.payload.to_vec(),
                            frame.event_type().map(str::to_owned),
                            frame.message_type().map(str::to_owned),
                        ));
                    })
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let expected: Vec<_> = messages
                .iter()
                .map(|m| {
                    (
                        m.headers.clone(),
                        m.payload.clone(),
                        m.event_type().map(str::to_owned),
                        m.message_type().map(str::to_owned),
                    )
                })
                .collect();
            prop_assert_eq!(seen, expected);
        }
    }

    proptest! {
        /// Frames whose headers repeat those of the frame before (the usual
        /// stream), or not, in any order: each decodes to its own headers.
        #[test]
        fn repeated_headers_give_the_same_frames(
            pool in proptest::collection::vec(gen_message(), 1..3),
            picks in proptest::collection::vec((0..3_usize, proptest::collection::vec(any::<u8>(), 0..40)), 0..8),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let messages: Vec<EventStreamMessage> = picks
                .into_iter()
                .map(|(i, payload)| EventStreamMessage {
                    headers: pool[i % pool.len()].headers.clone(),
                    payload,
                })
                .collect();
            let bytes: Vec<u8> = messages.iter().flat_map(encoded).collect();
            let whole = decode(&bytes);
            prop_assert_eq!(&whole, &Ok(messages));
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
        }

        #[test]
        fn any_split_gives_the_same_frames(
            messages in proptest::collection::vec(gen_message(), 0..5),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let bytes: Vec<u8> = messages.iter().flat_map(encoded).collect();
            let whole = decode(&bytes);
            prop_assert_eq!(&whole, &Ok(messages));
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let limits = FramingLimits { max_frame_bytes: 128, ..FramingLimits::default() };
            let whole = decode_pieces(limits, &[&bytes]);
            prop_assert_eq!(decode_pieces(limits, &split_at_cuts(&bytes, &cuts)), whole);
        }

        #[test]
        fn corrupted_frames_never_panic(
            message in gen_message(),
            flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 1..4),
            recompute in any::<bool>(),
        ) {
            // With CRCs recomputed the damage reaches the header parser.
            let mut bytes = encoded(&message);
            for (at, mask) in flips {
                let at = at % bytes.len();
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= mask;
                }
            }
            if recompute {
                fix_crcs(&mut bytes);
            }
            let _ = decode(&bytes);
        }
    }
}
