//! JSON values one after another: JSON lines (one document per line), the same
//! documents pretty-printed over many lines or run together with no separator
//! at all (a whole non-streamed response body, a log of them), and one
//! top-level JSON array whose elements are the events (Gemini's
//! `streamGenerateContent` without `alt=sse`: `[{…}\n,\r\n{…}]`).
//!
//! The values are not parsed here (the provider layer does that): a small
//! scanner follows strings, escapes and brackets to find where each value
//! ends, eight bytes at a time, so a value arrives as soon as its closing
//! bracket does, whatever the bytes were cut at. Its text is checked to be
//! UTF-8.

use std::sync::LazyLock;

use memchr::{memchr, memchr2};

use super::{advance, Checked, Error, FramingLimits, BOM};

/// Brackets open at once inside one value. `serde_json`, which reads every
/// event, refuses anything deeper, so a deeper value is refused here as its
/// bytes arrive.
pub const MAX_JSON_DEPTH: u32 = 128;

/// Where the stream is between values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Mode {
    /// Nothing but a BOM or whitespace yet: `[` makes the stream an array.
    Start,
    /// Values one after another, whitespace between them.
    Values,
    /// Inside the top-level array, just after `[`: an element or `]`.
    ArrayOpen,
    /// After an element: `,` or `]`.
    ArrayAfterElement,
    /// After `,`: an element.
    ArrayAfterComma,
    /// The array closed: only whitespace may follow.
    AfterArray,
}

impl Mode {
    fn in_array(self) -> bool {
        matches!(
            self,
            Mode::ArrayOpen | Mode::ArrayAfterElement | Mode::ArrayAfterComma
        )
    }
}

/// Where the scanner is inside one value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Scan {
    depth: u32,
    in_string: bool,
    /// The last byte was a backslash inside a string.
    escaped: bool,
}

/// The scan crossed [`MAX_JSON_DEPTH`].
struct TooDeep;

/// Every byte of a word: `0x01` repeated, and its high bits.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that equals `byte` (exact: no carry
/// crosses from one byte into the next).
#[inline]
fn bytes_equal(word: u64, byte: u8) -> u64 {
    let x = word ^ ONES.wrapping_mul(u64::from(byte));
    let nonzero = (x & !HIGHS).wrapping_add(!HIGHS) | x;
    !nonzero & HIGHS
}

impl Scan {
    /// One byte; true when it closes the value.
    #[inline]
    fn step(&mut self, b: u8) -> Result<bool, TooDeep> {
        if self.in_string {
            if self.escaped {
                // Whatever follows a backslash (`"`, `\`, `u`) does not end the string.
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return Ok(false);
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.open()?,
            b'}' | b']' => return Ok(self.close()),
            _ => {}
        }
        Ok(false)
    }

    #[inline]
    fn open(&mut self) -> Result<(), TooDeep> {
        self.depth += 1;
        if self.depth > MAX_JSON_DEPTH {
            return Err(TooDeep);
        }
        Ok(())
    }

    #[inline]
    fn close(&mut self) -> bool {
        self.depth = self.depth.saturating_sub(1);
        self.depth == 0
    }

    /// Scans `s`; `Some(n)` when the value closes at `s[n - 1]`, `None` when
    /// `s` ends first (the state is kept for the next bytes).
    ///
    /// Eight bytes at a time: masks of the quotes and brackets in a word, a
    /// prefix XOR of the quotes for which bytes are inside a string, then only
    /// the brackets outside strings are visited. A word with a backslash (or
    /// after one) goes byte by byte, which is where escapes are decided.
    fn advance(&mut self, s: &[u8]) -> Result<Option<usize>, TooDeep> {
        let mut at: usize = 0;
        while let Some(chunk) = s.get(at..at.saturating_add(8)) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            if self.escaped || bytes_equal(word, b'\\') != 0 {
                for (k, &b) in chunk.iter().enumerate() {
                    if self.step(b)? {
                        return Ok(Some(at + k + 1));
                    }
                }
                at += 8;
                continue;
            }
            let quotes = bytes_equal(word, b'"');
            if quotes == 0 && self.in_string {
                // Eight bytes of string: more of it likely follows (text,
                // signatures, base64), so jump to its next quote or backslash.
                let next = s.get(at + 8..).unwrap_or_default();
                match memchr2(b'"', b'\\', next) {
                    Some(k) => at += 8 + k,
                    None => return Ok(None),
                }
                continue;
            }
            let mut inside = quotes;
            inside ^= inside << 8;
            inside ^= inside << 16;
            inside ^= inside << 32;
            if self.in_string {
                inside ^= HIGHS;
            }
            // `[` and `{`, `]` and `}` differ only in bit 5.
            let folded = word | 0x2020_2020_2020_2020;
            let opens = bytes_equal(folded, b'{') & !inside;
            let mut brackets = opens | (bytes_equal(folded, b'}') & !inside);
            while brackets != 0 {
                let bit = brackets.trailing_zeros();
                if opens & (1 << bit) != 0 {
                    self.open()?;
                } else if self.close() {
                    return Ok(Some(at + (bit / 8) as usize + 1));
                }
                brackets &= brackets - 1;
            }
            self.in_string = inside >> 63 != 0;
            at += 8;
        }
        for (k, &b) in s.get(at..).unwrap_or_default().iter().enumerate() {
            if self.step(b)? {
                return Ok(Some(at + k + 1));
            }
        }
        Ok(None)
    }
}

/// The push's checked text and the stream offset of the bytes at hand, when
/// they are the push's own (not bytes held from an earlier push).
type Here<'c, 'b> = Option<(&'c Checked<'b>, u64)>;

/// Where a decoder's values go: each value's text, in order, and (for a
/// reader that asks) each line that opens a value, offered whole before the
/// decoder checks that it is one value.
pub(crate) trait Sink {
    /// A whole value, its text checked as UTF-8.
    fn value(&mut self, text: &str);

    /// Whether the next line would be offered to [`Sink::whole`] (asked
    /// before anything is done for the offer).
    #[inline]
    fn wants_whole(&self) -> bool {
        false
    }

    /// A line that opens an object and ends with `}` (trailing whitespace
    /// cut), offered before the decoder checks that it is one value: `true`
    /// when the reader read it as exactly one JSON object, which the decoder
    /// then hands on no more. A reader that answers `true` must have found
    /// it one JSON value, nested at most [`MAX_JSON_DEPTH`] deep (the decoder
    /// would have handed on the same text then).
    #[inline]
    fn whole(&mut self, _text: &str) -> bool {
        false
    }
}

/// A closure as a [`Sink`] that takes values only.
struct Values<'f, S>(&'f mut S);

impl<S: FnMut(&str)> Sink for Values<'_, S> {
    #[inline]
    fn value(&mut self, text: &str) {
        (self.0)(text);
    }
}

/// The open value, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Open {
    None,
    /// A value opened at the top level: its line is held until its newline
    /// decides whether the line is the whole value (JSON lines: no scan).
    Line,
    /// A value being scanned (pretty-printed, or several on one line, or an
    /// element of the top-level array).
    Scan(Scan),
}

/// The search of [`whole_line`] for `}` and `]`, made once: `memchr2` makes
/// its searcher (the two bytes spread over vector registers) at each call,
/// and a line is searched a few times.
enum Closers {
    #[cfg(target_arch = "x86_64")]
    Avx2(memchr::arch::x86_64::avx2::memchr::Two),
    /// No AVX2 (or another architecture): `memchr2`'s own choice.
    Any,
}

impl Closers {
    #[inline]
    fn find(&self, haystack: &[u8]) -> Option<usize> {
        match self {
            #[cfg(target_arch = "x86_64")]
            Closers::Avx2(two) => two.find(haystack),
            Closers::Any => memchr2(b'}', b']', haystack),
        }
    }
}

static CLOSERS: LazyLock<Closers> = LazyLock::new(|| {
    #[cfg(target_arch = "x86_64")]
    if let Some(two) = memchr::arch::x86_64::avx2::memchr::Two::new(b'}', b']') {
        return Closers::Avx2(two);
    }
    Closers::Any
});

/// The length of `line` (a line that opens a value) when the line is that
/// whole value: it ends, after trailing whitespace, with the bracket matching
/// its first byte, and no closing bracket inside it is followed (after
/// whitespace) by an opening one, which would start a second value on the
/// same line (or be brackets inside a string; either way the scanner decides).
fn whole_line(line: &[u8]) -> Option<usize> {
    let end = line
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'))?
        .saturating_add(1);
    let value = line.get(..end)?;
    let closer = match value.first()? {
        b'{' => b'}',
        b'[' => b']',
        _ => return None,
    };
    if end < 2 || value.last() != Some(&closer) {
        return None;
    }
    let inner = value.get(..end - 1)?;
    let closers = &*CLOSERS;
    let mut from = 0;
    while let Some(found) = closers.find(inner.get(from..)?) {
        let at = from + found;
        from = at + 1;
        let next = inner
            .get(at + 1..)
            .unwrap_or_default()
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'));
        if matches!(next, Some(b'{' | b'[')) {
            return None;
        }
    }
    Some(end)
}

/// A push decoder for JSON values: JSON lines, pretty-printed or concatenated
/// documents, or one JSON array of events.
///
/// Each value comes out as one `String`, exactly its text from the opening
/// bracket to the closing one. Between values only whitespace may come (and,
/// at the start, a UTF-8 BOM). A stream whose first value is an array (`[`
/// first) is an array of events: each element comes out on its own, the
/// commas and the closing `]` are checked, and nothing but whitespace may
/// follow it. Otherwise each value must be an object or an array. A value is
/// bounded by `max_event_bytes` and by [`MAX_JSON_DEPTH`].
///
/// JSON lines take a fast path: a line that opens a value and ends with its
/// closing bracket is that value, found with `memchr` and not scanned. A value
/// may therefore span lines only when its first line does not end in `}` or
/// `]`, which holds for every pretty-printer (the first line is `{` alone);
/// a hand-made layout that breaks it is refused by the event parser (the
/// line is not a whole JSON value), never misread. Everything else (values
/// over many lines, several on one line, the array's elements) is scanned.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JsonLinesDecoder {
    max_value_bytes: usize,
    mode: Mode,
    /// Offset of the next byte a push brings.
    offset: u64,
    /// BOM bytes seen at the very start.
    bom: usize,
    open: Open,
    /// Where the open value starts.
    value_start: u64,
    /// The bytes of the open value (or its line) cut by the end of a push.
    pending: Vec<u8>,
    /// Where the top-level array opened.
    array_start: u64,
    failed: Option<Error>,
}

fn syntax(offset: u64, byte: u8, expected: &str) -> Error {
    let shown = if byte.is_ascii_graphic() {
        format!("`{}`", char::from(byte))
    } else {
        format!("byte {byte:#04x}")
    };
    Error::Json {
        offset,
        reason: format!("{shown} where {expected} was expected"),
    }
}

impl JsonLinesDecoder {
    /// A decoder at the start of a stream.
    #[must_use]
    pub fn new(limits: FramingLimits) -> Self {
        Self {
            max_value_bytes: limits.max_event_bytes,
            mode: Mode::Start,
            offset: 0,
            bom: 0,
            open: Open::None,
            value_start: 0,
            pending: Vec::new(),
            array_start: 0,
            failed: None,
        }
    }

    /// Back to the start of a new stream, forgetting any error.
    pub fn reset(&mut self) {
        *self = Self::new(FramingLimits {
            max_event_bytes: self.max_value_bytes,
            ..FramingLimits::default()
        });
    }

    /// Bytes taken since the start.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the value the decoder holds unfinished starts, if it holds one.
    #[must_use]
    pub fn unfinished_from(&self) -> Option<u64> {
        (self.open != Open::None).then_some(self.value_start)
    }

    /// Takes the next bytes, cut anywhere, and appends each value (or array
    /// element) they complete to `out`.
    ///
    /// # Errors
    /// [`Error::Limit`] for a value over `max_event_bytes`, [`Error::Json`]
    /// for bytes that cannot come where they are (text between values, a
    /// missing comma in the array, nesting deeper than [`MAX_JSON_DEPTH`]),
    /// [`Error::Utf8`] for a value that is not UTF-8; sticky until
    /// [`JsonLinesDecoder::reset`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<String>) -> Result<(), Error> {
        self.push_with(bytes, &mut |value| out.push(value.to_owned()))
    }

    /// Ends the stream: a last line without its newline is decided as if it
    /// had one.
    ///
    /// # Errors
    /// [`Error::Truncated`] when it ends inside a value, inside the array, or
    /// inside a BOM; the errors of [`JsonLinesDecoder::push`] for that last
    /// line; an earlier sticky error.
    pub fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Error> {
        self.finish_with(&mut |value| out.push(value.to_owned()))
    }

    pub(crate) fn push_with<S: FnMut(&str)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        self.push_to(bytes, &mut Values(emit))
    }

    pub(crate) fn finish_with<S: FnMut(&str)>(&mut self, emit: &mut S) -> Result<(), Error> {
        self.finish_to(&mut Values(emit))
    }

    /// [`JsonLinesDecoder::push_with`] with lines offered whole to `sink`.
    pub(crate) fn push_to<K: Sink>(&mut self, bytes: &[u8], emit: &mut K) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        // One UTF-8 check over the whole push: a value inside it needs none.
        let checked = Checked::new(bytes, self.offset);
        let result = self.take(bytes, self.offset, &checked, emit);
        self.offset = advance(self.offset, bytes.len());
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    /// [`JsonLinesDecoder::finish_with`] with lines offered whole to `sink`.
    pub(crate) fn finish_to<K: Sink>(&mut self, emit: &mut K) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.end(emit);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn end<S: Sink>(&mut self, emit: &mut S) -> Result<(), Error> {
        // The last line had no newline: decide it now. Each round takes a
        // value or leaves a scan open, so this ends.
        let none = Checked::new(&[], 0);
        while self.open == Open::Line {
            let line = std::mem::take(&mut self.pending);
            if self.offers(emit) && self.offered(&line, None, emit) {
                continue;
            }
            match whole_line(&line) {
                Some(len) => self.emit(line.get(..len).unwrap_or_default(), None, emit)?,
                None => {
                    self.open = Open::Scan(Scan::default());
                    self.take(&line, self.value_start, &none, emit)?;
                }
            }
        }
        let unfinished = if let Open::Scan(scan) = self.open {
            Some((
                self.value_start,
                format!(
                    "a JSON value ({} bytes, {} bracket(s) still open{})",
                    self.pending.len(),
                    scan.depth,
                    if scan.in_string {
                        ", inside a string"
                    } else {
                        ""
                    }
                ),
            ))
        } else if self.mode.in_array() {
            Some((
                self.array_start,
                "a JSON array of events that was never closed with `]`".to_owned(),
            ))
        } else if self.bom > 0 && self.bom < BOM.len() {
            Some((0, "a UTF-8 byte-order mark".to_owned()))
        } else {
            None
        };
        if let Some((offset, what)) = unfinished {
            return Err(Error::Truncated { offset, what });
        }
        self.reset();
        Ok(())
    }

    /// Takes `bytes`, the first of which is at `base`; `checked` is the
    /// push's text checked as UTF-8.
    fn take<S: Sink>(
        &mut self,
        bytes: &[u8],
        base: u64,
        checked: &Checked<'_>,
        emit: &mut S,
    ) -> Result<(), Error> {
        let mut i = 0;
        while i < bytes.len() {
            let rest = bytes.get(i..).unwrap_or_default();
            let here = Some((checked, advance(base, i)));
            match self.open {
                Open::Scan(scan) => i += self.scan(scan, rest, here, emit)?,
                Open::Line => match self.line(rest, here, emit)? {
                    Some(taken) => i += taken,
                    None => {
                        // Scan the line held so far from the value's start,
                        // then go on with these bytes.
                        self.open = Open::Scan(Scan::default());
                        let held = std::mem::take(&mut self.pending);
                        if !held.is_empty() {
                            self.take(&held, self.value_start, checked, emit)?;
                        }
                    }
                },
                Open::None => i += self.between(rest, advance(base, i))?,
            }
        }
        Ok(())
    }

    /// A value's line: `Some(bytes taken)`, or `None` when the value must be
    /// scanned instead.
    fn line<S: Sink>(
        &mut self,
        rest: &[u8],
        here: Here<'_, '_>,
        emit: &mut S,
    ) -> Result<Option<usize>, Error> {
        let held = self.pending.len();
        let Some(newline) = memchr(b'\n', rest) else {
            if held.saturating_add(rest.len()) > self.max_value_bytes {
                // A line longer than a value may be: only the scan can tell
                // whether it is one value too large or many run together.
                return Ok(None);
            }
            self.pending.extend_from_slice(rest);
            return Ok(Some(rest.len()));
        };
        if held.saturating_add(newline) > self.max_value_bytes {
            return Ok(None);
        }
        let head = rest.get(..newline).unwrap_or_default();
        if held == 0 {
            if self.offers(emit) && self.offered(head, here, emit) {
                return Ok(Some(newline + 1));
            }
            let Some(len) = whole_line(head) else {
                return Ok(None);
            };
            self.emit(head.get(..len).unwrap_or_default(), here, emit)?;
        } else {
            self.pending.extend_from_slice(head);
            if self.offers(emit) {
                let line = std::mem::take(&mut self.pending);
                if self.offered(&line, None, emit) {
                    return Ok(Some(newline + 1));
                }
                self.pending = line;
            }
            let Some(len) = whole_line(&self.pending) else {
                // The scan restarts from the value's start and includes the
                // line's head again.
                self.pending.truncate(held);
                return Ok(None);
            };
            let line = std::mem::take(&mut self.pending);
            self.emit(line.get(..len).unwrap_or_default(), None, emit)?;
        }
        Ok(Some(newline + 1))
    }

    /// Scans the open value over `rest`; returns the bytes taken.
    fn scan<S: Sink>(
        &mut self,
        mut scan: Scan,
        rest: &[u8],
        here: Here<'_, '_>,
        emit: &mut S,
    ) -> Result<usize, Error> {
        // Only the bytes the value may still take are scanned: past them it is
        // too large whatever they hold, so how the input was cut never changes
        // which error comes first (the size limit, or nesting further on).
        let room = self.max_value_bytes.saturating_sub(self.pending.len());
        let window = rest.get(..room.min(rest.len())).unwrap_or(rest);
        let closed = scan.advance(window).map_err(|TooDeep| Error::Json {
            offset: self.value_start,
            reason: format!(
                "the JSON value starting here nests deeper than {MAX_JSON_DEPTH} levels"
            ),
        })?;
        let Some(end) = closed else {
            self.open = Open::Scan(scan);
            if window.len() < rest.len() {
                return Err(self.too_large());
            }
            self.pending.extend_from_slice(rest);
            return Ok(rest.len());
        };
        let tail = rest.get(..end).unwrap_or_default();
        if self.pending.is_empty() {
            self.emit(tail, here, emit)?;
        } else {
            let mut whole = std::mem::take(&mut self.pending);
            whole.extend_from_slice(tail);
            self.emit(&whole, None, emit)?;
        }
        Ok(end)
    }

    /// Between values: whitespace, the array's punctuation, or the start of
    /// a value (which is not taken: the next round reads it). Returns the
    /// bytes taken.
    fn between(&mut self, rest: &[u8], offset: u64) -> Result<usize, Error> {
        let Some(&b) = rest.first() else {
            return Ok(0);
        };
        if self.mode == Mode::Start && offset < 3 && u64::try_from(self.bom) == Ok(offset) {
            if BOM.get(self.bom) == Some(&b) {
                self.bom += 1;
                return Ok(1);
            }
            if self.bom > 0 {
                return Err(Error::Json {
                    offset: 0,
                    reason: "an incomplete UTF-8 byte-order mark".to_owned(),
                });
            }
        }
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            let spaces = rest
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(rest.len());
            return Ok(spaces);
        }
        let opens = matches!(b, b'{' | b'[');
        let next = match self.mode {
            Mode::Start if b == b'[' => {
                self.array_start = offset;
                Mode::ArrayOpen
            }
            Mode::Start | Mode::Values if opens => {
                self.mode = Mode::Values;
                self.open = Open::Line;
                self.value_start = offset;
                return Ok(0);
            }
            Mode::ArrayOpen | Mode::ArrayAfterComma if opens => {
                self.open = Open::Scan(Scan::default());
                self.value_start = offset;
                return Ok(0);
            }
            Mode::ArrayOpen | Mode::ArrayAfterElement if b == b']' => Mode::AfterArray,
            Mode::ArrayAfterElement if b == b',' => Mode::ArrayAfterComma,
            Mode::Start | Mode::Values => return Err(syntax(offset, b, "a JSON object or array")),
            Mode::ArrayOpen => return Err(syntax(offset, b, "an array element or `]`")),
            Mode::ArrayAfterComma => return Err(syntax(offset, b, "an array element after `,`")),
            Mode::ArrayAfterElement => {
                return Err(syntax(offset, b, "`,` or `]` after an array element"))
            }
            Mode::AfterArray => {
                return Err(syntax(
                    offset,
                    b,
                    "nothing but whitespace after the JSON array",
                ))
            }
        };
        self.mode = next;
        Ok(1)
    }

    /// Whether the open value's line is offered to the sink whole
    /// ([`JsonLinesDecoder::offered`]): the stream's first value, at its
    /// very start, for a sink that asks (a line of a stream is told so with
    /// one comparison).
    #[inline(always)]
    fn offers<S: Sink>(&self, emit: &S) -> bool {
        self.value_start == 0 && emit.wants_whole()
    }

    /// Offers `line` (a value's whole line, without its newline) to a sink
    /// that reads a line whole ([`Sink::whole`]) before [`whole_line`] looks
    /// at it: `true` when the sink read it as the one JSON object the line
    /// is, which is then closed as [`JsonLinesDecoder::emit`] closes it. Only
    /// a line of one object (after trailing whitespace) is offered, as text
    /// checked as UTF-8 and within `max_event_bytes`; a line the sink leaves
    /// goes on as ever (it is then checked again, and its errors are the
    /// usual ones).
    #[cold]
    #[inline(never)]
    fn offered<S: Sink>(&mut self, line: &[u8], here: Here<'_, '_>, emit: &mut S) -> bool {
        let Some(end) = line
            .iter()
            .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'))
        else {
            return false;
        };
        let Some(value) = line.get(..=end) else {
            return false;
        };
        if value.first() != Some(&b'{') || value.last() != Some(&b'}') || value.len() < 2 {
            return false;
        }
        if value.len() > self.max_value_bytes {
            return false;
        }
        let inside = here.and_then(|(checked, offset)| checked.text(value, offset));
        let Some(text) = inside.or_else(|| super::utf8(value).ok()) else {
            return false;
        };
        if !emit.whole(text) {
            return false;
        }
        // A line opens a value only at the top level (never in the array).
        self.open = Open::None;
        true
    }

    /// Hands out a whole value and closes it; `here`, when the value starts
    /// the bytes at that offset of the checked push.
    fn emit<S: Sink>(
        &mut self,
        value: &[u8],
        here: Here<'_, '_>,
        emit: &mut S,
    ) -> Result<(), Error> {
        if value.len() > self.max_value_bytes {
            return Err(self.too_large());
        }
        // Handed on borrowed: the reader copies what it keeps.
        let inside = here.and_then(|(checked, offset)| checked.text(value, offset));
        let text = match inside.map_or_else(|| super::utf8(value), Ok) {
            Ok(text) => text,
            Err(e) => {
                return Err(Error::Utf8 {
                    offset: advance(self.value_start, e.valid_up_to()),
                    what: "JSON value",
                    start: self.value_start,
                })
            }
        };
        emit.value(text);
        self.open = Open::None;
        if matches!(self.mode, Mode::ArrayOpen | Mode::ArrayAfterComma) {
            self.mode = Mode::ArrayAfterElement;
        }
        Ok(())
    }

    fn too_large(&self) -> Error {
        Error::Limit {
            limit: "max_event_bytes",
            max: self.max_value_bytes,
            offset: self.value_start,
            what: "JSON value",
        }
    }
}

#[cfg(test)]
mod tests;
