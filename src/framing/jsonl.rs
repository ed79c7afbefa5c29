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

use memchr::{memchr, memchr2, memchr2_iter};

use super::{advance, Error, FramingLimits, BOM};

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
    for at in memchr2_iter(b'}', b']', inner) {
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
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.take(bytes, self.offset, emit);
        self.offset = advance(self.offset, bytes.len());
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    pub(crate) fn finish_with<S: FnMut(&str)>(&mut self, emit: &mut S) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.end(emit);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn end<S: FnMut(&str)>(&mut self, emit: &mut S) -> Result<(), Error> {
        // The last line had no newline: decide it now. Each round takes a
        // value or leaves a scan open, so this ends.
        while self.open == Open::Line {
            let line = std::mem::take(&mut self.pending);
            match whole_line(&line) {
                Some(len) => self.emit(line.get(..len).unwrap_or_default(), emit)?,
                None => {
                    self.open = Open::Scan(Scan::default());
                    self.take(&line, self.value_start, emit)?;
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

    /// Takes `bytes`, the first of which is at `base`.
    fn take<S: FnMut(&str)>(&mut self, bytes: &[u8], base: u64, emit: &mut S) -> Result<(), Error> {
        let mut i = 0;
        while i < bytes.len() {
            let rest = bytes.get(i..).unwrap_or_default();
            match self.open {
                Open::Scan(scan) => i += self.scan(scan, rest, emit)?,
                Open::Line => match self.line(rest, emit)? {
                    Some(taken) => i += taken,
                    None => {
                        // Scan the line held so far from the value's start,
                        // then go on with these bytes.
                        self.open = Open::Scan(Scan::default());
                        let held = std::mem::take(&mut self.pending);
                        if !held.is_empty() {
                            self.take(&held, self.value_start, emit)?;
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
    fn line<S: FnMut(&str)>(&mut self, rest: &[u8], emit: &mut S) -> Result<Option<usize>, Error> {
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
            let Some(len) = whole_line(head) else {
                return Ok(None);
            };
            self.emit(head.get(..len).unwrap_or_default(), emit)?;
        } else {
            self.pending.extend_from_slice(head);
            let Some(len) = whole_line(&self.pending) else {
                // The scan restarts from the value's start and includes the
                // line's head again.
                self.pending.truncate(held);
                return Ok(None);
            };
            let line = std::mem::take(&mut self.pending);
            self.emit(line.get(..len).unwrap_or_default(), emit)?;
        }
        Ok(Some(newline + 1))
    }

    /// Scans the open value over `rest`; returns the bytes taken.
    fn scan<S: FnMut(&str)>(
        &mut self,
        mut scan: Scan,
        rest: &[u8],
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
            self.emit(tail, emit)?;
        } else {
            let mut whole = std::mem::take(&mut self.pending);
            whole.extend_from_slice(tail);
            self.emit(&whole, emit)?;
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

    /// Hands out a whole value and closes it.
    fn emit<S: FnMut(&str)>(&mut self, value: &[u8], emit: &mut S) -> Result<(), Error> {
        if value.len() > self.max_value_bytes {
            return Err(self.too_large());
        }
        // Handed on borrowed: the reader copies what it keeps.
        let text = match super::utf8(value) {
            Ok(text) => text,
            Err(e) => {
                return Err(Error::Utf8 {
                    offset: advance(self.value_start, e.valid_up_to()),
                    what: "JSON value",
                    start: self.value_start,
                })
            }
        };
        emit(text);
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
mod tests {
    use super::*;
    use crate::framing::testutil::{bytewise, split_at_cuts};
    use proptest::prelude::*;

    fn decode_pieces(limits: FramingLimits, pieces: &[&[u8]]) -> Result<Vec<String>, Error> {
        let mut decoder = JsonLinesDecoder::new(limits);
        let mut out = Vec::new();
        for piece in pieces {
            decoder.push(piece, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn decode(input: &[u8]) -> Result<Vec<String>, Error> {
        decode_pieces(FramingLimits::default(), &[input])
    }

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn one_string_per_line() {
        assert_eq!(
            decode(b"{\"a\":1}\n[2]\n"),
            Ok(strings(&["{\"a\":1}", "[2]"]))
        );
    }

    #[test]
    fn blank_lines_are_skipped_and_surrounding_whitespace_dropped() {
        assert_eq!(
            decode(b"\n{\"a\":1}\r\n\r\n  \t\n{\"b\":2}\n\n"),
            Ok(strings(&["{\"a\":1}", "{\"b\":2}"]))
        );
        assert_eq!(
            decode(b"  {\"a\":\"x\ry\"} \r\n"),
            Ok(strings(&["{\"a\":\"x\ry\"}"]))
        );
    }

    #[test]
    fn a_line_comes_out_at_its_newline_and_a_scanned_value_at_its_bracket() {
        let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.push(b"{\"a\":1}\n{\"b\"", &mut out), Ok(()));
        assert_eq!(out, strings(&["{\"a\":1}"]));
        assert_eq!(decoder.push(b":2}", &mut out), Ok(()));
        assert_eq!(out.len(), 1, "a line waits for its newline (or the end)");
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(out, strings(&["{\"a\":1}", "{\"b\":2}"]));
        // pretty-printed: out as soon as the closing bracket arrives
        assert_eq!(decoder.push(b"{\n  \"c\": 3\n", &mut out), Ok(()));
        assert_eq!(out.len(), 2);
        assert_eq!(decoder.push(b"}", &mut out), Ok(()));
        assert_eq!(out.len(), 3);
        assert_eq!(decode(b"{}\n  \r"), Ok(strings(&["{}"])));
        assert_eq!(decode(b""), Ok(strings(&[])));
    }

    #[test]
    fn a_whole_line_is_not_scanned() {
        // The line is taken as it is; the event parser refuses what is not one
        // JSON value. A scanned layout names the stray byte instead.
        assert_eq!(decode(b"{},{}\n"), Ok(strings(&["{},{}"])));
        assert!(matches!(
            decode(b"{\n},{}"),
            Err(Error::Json { offset: 3, .. })
        ));
        // A first line ending in its bracket is the whole value, so a value
        // laid out like this comes out cut (and the parser refuses it).
        assert_eq!(
            decode(b"{\"a\": {\"b\": 1}\n, \"c\": 2}"),
            Err(Error::Json {
                offset: 15,
                reason: "`,` where a JSON object or array was expected".to_owned()
            })
        );
    }

    #[test]
    fn pretty_printed_and_concatenated_values() {
        let input =
            b"{\n  \"a\": {\n    \"b\": [1, {\"c\": \"}]{[\"}]\n  }\n}{\"d\":\"\\\"}\"}  [\n]\n";
        assert_eq!(
            decode(input),
            Ok(strings(&[
                "{\n  \"a\": {\n    \"b\": [1, {\"c\": \"}]{[\"}]\n  }\n}",
                "{\"d\":\"\\\"}\"}",
                "[\n]",
            ]))
        );
        // escapes: an escaped backslash before the closing quote
        assert_eq!(
            decode(b"{\"e\":\"\\\\\"}{\"f\":\"\\u005c\"}"),
            Ok(strings(&["{\"e\":\"\\\\\"}", "{\"f\":\"\\u005c\"}"]))
        );
    }

    #[test]
    fn a_top_level_array_gives_its_elements() {
        let input = b"[{\"a\":1}\n,\r\n{\"b\":[2,3]}\r\n,\r\n  {\n \"c\": \"],\"\n}\r\n]\r\n";
        assert_eq!(
            decode(input),
            Ok(strings(&[
                "{\"a\":1}",
                "{\"b\":[2,3]}",
                "{\n \"c\": \"],\"\n}"
            ]))
        );
        assert_eq!(decode(b" [ ] "), Ok(strings(&[])));
        assert_eq!(decode(b"\xEF\xBB\xBF[{}]"), Ok(strings(&["{}"])));
        // A later array is a value, not a stream of elements.
        assert_eq!(decode(b"{}[{},{}]"), Ok(strings(&["{}", "[{},{}]"])));
    }

    #[test]
    fn array_syntax_errors_name_their_offset() {
        let err = |input: &[u8]| decode(input).err();
        assert!(matches!(
            err(b"[{}{}]"),
            Some(Error::Json { offset: 3, .. })
        ));
        assert!(matches!(err(b"[{},]"), Some(Error::Json { offset: 4, .. })));
        assert!(matches!(err(b"[,{}]"), Some(Error::Json { offset: 1, .. })));
        assert!(matches!(
            err(b"[{}] {}"),
            Some(Error::Json { offset: 5, .. })
        ));
        assert!(matches!(err(b"[1]"), Some(Error::Json { offset: 1, .. })));
        let text = err(b"[{} x").map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("byte 4") && text.contains("`x`") && text.contains("`,` or `]`"),
            "{text}"
        );
        assert!(matches!(
            err(b"[{},\n{}"),
            Some(Error::Truncated { offset: 0, .. })
        ));
        assert!(matches!(
            err(b"  [{},\n{\"a\":"),
            Some(Error::Truncated { offset: 7, .. })
        ));
    }

    #[test]
    fn garbage_between_values_is_an_error() {
        let garbage = decode(b"{}\n<html>");
        assert!(
            matches!(garbage, Err(Error::Json { offset: 3, .. })),
            "{garbage:?}"
        );
        assert!(matches!(
            decode(b"{}\n\xFF"),
            Err(Error::Json { offset: 3, .. })
        ));
        assert!(matches!(
            decode(b"data: {}"),
            Err(Error::Json { offset: 0, .. })
        ));
        assert!(matches!(
            decode(b"\"text\""),
            Err(Error::Json { offset: 0, .. })
        ));
        // a BOM anywhere but first, or cut short
        assert!(matches!(
            decode(b" \xEF\xBB\xBF{}"),
            Err(Error::Json { offset: 1, .. })
        ));
        assert!(matches!(
            decode(b"\xEF\xBB{}"),
            Err(Error::Json { offset: 0, .. })
        ));
        assert!(matches!(
            decode(b"\xEF\xBB"),
            Err(Error::Truncated { offset: 0, .. })
        ));
    }

    #[test]
    fn bom_is_skipped_even_when_split() {
        assert_eq!(
            decode_pieces(FramingLimits::default(), &bytewise(b"\xEF\xBB\xBF{}\n")),
            Ok(strings(&["{}"]))
        );
    }

    #[test]
    fn invalid_utf8_names_its_offset() {
        assert_eq!(
            decode(b"{}\n{\"a\":\"\xF0\x9F\"}\n"),
            Err(Error::Utf8 {
                offset: 9,
                what: "JSON value",
                start: 3
            })
        );
    }

    #[test]
    fn truncated_value() {
        let err = decode(b"{}\n {\"a\": [\"x");
        assert!(
            matches!(&err, Err(Error::Truncated { offset: 4, what }) if what.contains("inside a string")),
            "{err:?}"
        );
    }

    #[test]
    fn value_limit_is_checked_as_bytes_arrive() {
        let limits = FramingLimits {
            max_event_bytes: 8,
            ..FramingLimits::default()
        };
        assert_eq!(
            decode_pieces(limits, &[b"{\"a\":12}\n"]),
            Ok(strings(&["{\"a\":12}"]))
        );
        let over = Err(Error::Limit {
            limit: "max_event_bytes",
            max: 8,
            offset: 3,
            what: "JSON value",
        });
        assert_eq!(decode_pieces(limits, &[b"{}\n{\"a\":", b"1234"]), over);
        assert_eq!(decode_pieces(limits, &[b"{}\n{\"a\":123}"]), over);
        // whitespace between values is not held, so it is not bounded
        let spaces = vec![b' '; 100];
        assert_eq!(
            decode_pieces(limits, &[b"{}", &spaces, b"{}"]),
            Ok(strings(&["{}", "{}"]))
        );
    }

    #[test]
    fn a_value_over_the_limit_is_a_limit_error_before_deeper_nesting_past_it() {
        // 8 bytes allowed; the nesting limit is crossed only far past them.
        let limits = FramingLimits {
            max_event_bytes: 8,
            ..FramingLimits::default()
        };
        let text = format!("[{}", "[x".repeat(200));
        let whole = decode_pieces(limits, &[text.as_bytes()]);
        let bytewise: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        assert_eq!(decode_pieces(limits, &bytewise), whole);
        assert!(
            matches!(
                whole,
                Err(Error::Limit {
                    limit: "max_event_bytes",
                    offset: 1,
                    ..
                })
            ),
            "{whole:?}"
        );
    }

    #[test]
    fn depth_limit() {
        let deep = |n: usize| [vec![b'['; n], vec![b'\n'], vec![b']'; n]].concat();
        let ok = deep(MAX_JSON_DEPTH as usize);
        assert_eq!(
            decode(&[b"{}", ok.as_slice()].concat()).map(|v| v.len()),
            Ok(2)
        );
        let too_deep = deep(MAX_JSON_DEPTH as usize + 1);
        let err = decode(&[b"{} ", too_deep.as_slice()].concat());
        assert!(
            matches!(&err, Err(Error::Json { offset: 3, reason }) if reason.contains("128")),
            "{err:?}"
        );
    }

    #[test]
    fn errors_are_sticky() {
        let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        let err = decoder.push(b"\xFF\n", &mut out);
        assert!(err.is_err());
        assert_eq!(decoder.push(b"{}\n", &mut out), err);
        assert_eq!(decoder.finish(&mut out), err);
        decoder.reset();
        assert_eq!(decoder.push(b"{}\n", &mut out), Ok(()));
        assert_eq!(out, strings(&["{}"]));
    }

    /// A JSON object whose strings hold the characters that trip scanners.
    fn value_strategy() -> impl Strategy<Value = serde_json::Value> {
        let text = "[a-z{}\\[\\]\",:\\\\ é\u{1F600}\n\t\u{1}]{0,12}";
        let leaf = prop_oneof![
            text.prop_map(serde_json::Value::String),
            any::<i32>().prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
        ];
        let tree = leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map("[a-z\"{]{1,6}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map("[a-z]{1,5}", tree, 0..4)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
    }

    fn render(value: &serde_json::Value, pretty: bool) -> String {
        let text = if pretty {
            serde_json::to_string_pretty(value)
        } else {
            serde_json::to_string(value)
        };
        text.unwrap_or_default()
    }

    /// The scanner one byte at a time, as the word-wise one must agree with.
    fn bytewise_scan(scan: &mut Scan, s: &[u8]) -> Result<Option<usize>, TooDeep> {
        for (k, &b) in s.iter().enumerate() {
            if scan.step(b)? {
                return Ok(Some(k + 1));
            }
        }
        Ok(None)
    }

    #[test]
    fn word_masks_are_exact() {
        let word = u64::from_le_bytes(*b"{\"}\x00\x80[]\\");
        assert_eq!(bytes_equal(word, b'{'), 0x80);
        assert_eq!(bytes_equal(word, b'"'), 0x80 << 8);
        assert_eq!(bytes_equal(word, 0), 0x80 << 24);
        assert_eq!(bytes_equal(word, 0x80), 0x80 << 32);
        let folded = word | 0x2020_2020_2020_2020;
        assert_eq!(bytes_equal(folded, b'{'), 0x80 | (0x80 << 40));
        assert_eq!(bytes_equal(folded, b'}'), (0x80 << 16) | (0x80 << 48));
        assert_eq!(bytes_equal(word, b'\\'), 0x80 << 56);
    }

    proptest! {
        #[test]
        fn word_scan_agrees_with_bytewise(
            bytes in proptest::collection::vec(prop_oneof![
                Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
                Just(b'a'), Just(b' '), any::<u8>(),
            ], 0..80),
            in_string in any::<bool>(),
            escaped in any::<bool>(),
            depth in 0u32..4,
        ) {
            let start = Scan { depth, in_string, escaped: escaped && in_string };
            let (mut words, mut bytes_only) = (start, start);
            let by_words = words.advance(&bytes).map_err(|TooDeep| ());
            let by_bytes = bytewise_scan(&mut bytes_only, &bytes).map_err(|TooDeep| ());
            prop_assert_eq!(by_words, by_bytes);
            if by_bytes == Ok(None) {
                prop_assert_eq!(words, bytes_only);
            }
        }

        #[test]
        fn any_split_gives_the_same_values(
            values in proptest::collection::vec((value_strategy(), any::<bool>(), 0u8..4), 0..6),
            array in any::<bool>(),
            crlf in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let texts: Vec<String> = values
                .iter()
                .map(|(v, pretty, _)| {
                    let text = render(v, *pretty);
                    if crlf { text.replace('\n', "\r\n") } else { text }
                })
                .collect();
            let mut bytes = Vec::new();
            if array {
                bytes.extend_from_slice(b"[");
            }
            for (i, (text, (_, _, gap))) in texts.iter().zip(&values).enumerate() {
                if array && i > 0 {
                    bytes.extend_from_slice(if crlf { b"\r\n,\r\n".as_slice() } else { b"," });
                }
                bytes.extend_from_slice(text.as_bytes());
                bytes.extend_from_slice(match gap {
                    0 => b"".as_slice(),
                    1 => b"\n",
                    2 => b"\r\n",
                    _ => b" \n\t ",
                });
            }
            if array {
                bytes.extend_from_slice(b"]\n");
            }
            let whole = decode(&bytes);
            prop_assert_eq!(&whole, &Ok(texts.clone()));
            for text in &texts {
                prop_assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
            }
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_splits_agree(
            bytes in proptest::collection::vec(prop_oneof![
                Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
                Just(b','), Just(b' '), Just(b'\n'), Just(b'a'), any::<u8>(),
            ], 0..64),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let whole = decode(&bytes);
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
        }
    }
}
