//! JSON values one after another: JSON lines (one document per line), the same
//! documents pretty-printed over many lines or run together with no separator
//! at all (a whole non-streamed response body, a log of them), and one
//! top-level JSON array whose elements are the events (Gemini's
//! `streamGenerateContent` without `alt=sse`: `[{…}\n,\r\n{…}]`).
//!
//! The values are not parsed here (the provider layer does that): a small
//! scanner follows strings, escapes and brackets to find where each value
//! ends, skipping string contents with `memchr`, so a value arrives as soon as
//! its closing bracket does, whatever the bytes were cut at. Its text is
//! checked to be UTF-8.

use memchr::memchr2;

use super::{advance, Error, FramingLimits, BOM};

/// Brackets open at once inside one value. `serde_json`, which reads every
/// event, refuses anything deeper, so a deeper value is refused here as its
/// bytes arrive.
pub const MAX_JSON_DEPTH: u32 = 128;

/// Where the stream is between values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default)]
struct Scan {
    depth: u32,
    in_string: bool,
    /// The last byte was a backslash inside a string.
    escaped: bool,
}

/// The scan crossed [`MAX_JSON_DEPTH`].
struct TooDeep;

impl Scan {
    /// Scans `s`; `Some(n)` when the value closes at `s[n - 1]`, `None` when
    /// `s` ends first (the state is kept for the next bytes).
    fn advance(&mut self, s: &[u8]) -> Result<Option<usize>, TooDeep> {
        let mut i = 0;
        loop {
            if self.in_string {
                if self.escaped {
                    if i >= s.len() {
                        return Ok(None);
                    }
                    // Whatever follows a backslash (`"`, `\`, `u`) is not a quote that ends the string.
                    self.escaped = false;
                    i += 1;
                }
                let Some(k) = s.get(i..).and_then(|rest| memchr2(b'"', b'\\', rest)) else {
                    return Ok(None);
                };
                let at = i + k;
                i = at + 1;
                if s.get(at) == Some(&b'\\') {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                }
                continue;
            }
            while let Some(&b) = s.get(i) {
                i += 1;
                match b {
                    b'"' => {
                        self.in_string = true;
                        break;
                    }
                    b'{' | b'[' => {
                        self.depth += 1;
                        if self.depth > MAX_JSON_DEPTH {
                            return Err(TooDeep);
                        }
                    }
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Ok(Some(i));
                        }
                    }
                    _ => {}
                }
            }
            if !self.in_string {
                return Ok(None);
            }
        }
    }
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
#[derive(Debug, Clone)]
pub struct JsonLinesDecoder {
    max_value_bytes: usize,
    mode: Mode,
    /// Offset of the next byte a push brings.
    offset: u64,
    /// BOM bytes seen at the very start.
    bom: usize,
    /// The value being scanned, if one is open.
    value: Option<Scan>,
    /// Where the open value starts.
    value_start: u64,
    /// The start of an open value cut by the end of the last push.
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
            value: None,
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
        self.push_with(bytes, &mut |value| out.push(value))
    }

    /// Ends the stream.
    ///
    /// # Errors
    /// [`Error::Truncated`] when it ends inside a value, inside the array, or
    /// inside a BOM; an earlier sticky error.
    pub fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Error> {
        self.finish_with(&mut |value| out.push(value))
    }

    pub(crate) fn push_with<S: FnMut(String)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.scan(bytes, emit);
        self.offset = advance(self.offset, bytes.len());
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    pub(crate) fn finish_with<S: FnMut(String)>(&mut self, _emit: &mut S) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let unfinished = if let Some(scan) = self.value {
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
            let error = Error::Truncated { offset, what };
            self.failed = Some(error.clone());
            return Err(error);
        }
        self.reset();
        Ok(())
    }

    fn scan<S: FnMut(String)>(&mut self, bytes: &[u8], emit: &mut S) -> Result<(), Error> {
        let base = self.offset;
        let at = |i: usize| advance(base, i);
        let mut i = 0;
        while i < bytes.len() {
            let rest = bytes.get(i..).unwrap_or_default();
            if let Some(mut scan) = self.value {
                let closed = scan.advance(rest).map_err(|TooDeep| Error::Json {
                    offset: self.value_start,
                    reason: format!(
                        "the JSON value starting here nests deeper than {MAX_JSON_DEPTH} levels"
                    ),
                })?;
                let Some(end) = closed else {
                    self.value = Some(scan);
                    if self.pending.len().saturating_add(rest.len()) > self.max_value_bytes {
                        return Err(self.too_large());
                    }
                    self.pending.extend_from_slice(rest);
                    return Ok(());
                };
                let tail = rest.get(..end).unwrap_or_default();
                if self.pending.len().saturating_add(tail.len()) > self.max_value_bytes {
                    return Err(self.too_large());
                }
                let text = if self.pending.is_empty() {
                    self.text(tail)?
                } else {
                    let mut whole = std::mem::take(&mut self.pending);
                    whole.extend_from_slice(tail);
                    self.text(&whole)?
                };
                emit(text);
                self.value = None;
                self.mode = match self.mode {
                    Mode::ArrayOpen | Mode::ArrayAfterComma => Mode::ArrayAfterElement,
                    other => other,
                };
                i += end;
                continue;
            }
            let Some(&b) = bytes.get(i) else {
                break;
            };
            let offset = at(i);
            if self.mode == Mode::Start && offset < 3 && u64::try_from(self.bom) == Ok(offset) {
                if BOM.get(self.bom) == Some(&b) {
                    self.bom += 1;
                    i += 1;
                    continue;
                }
                if self.bom > 0 {
                    return Err(Error::Json {
                        offset: 0,
                        reason: "an incomplete UTF-8 byte-order mark".to_owned(),
                    });
                }
            }
            if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                i += 1;
                continue;
            }
            let opens = matches!(b, b'{' | b'[');
            match self.mode {
                Mode::Start if b == b'[' => {
                    self.mode = Mode::ArrayOpen;
                    self.array_start = offset;
                    i += 1;
                    continue;
                }
                Mode::Start | Mode::Values if opens => self.mode = Mode::Values,
                Mode::ArrayOpen | Mode::ArrayAfterComma if opens => {}
                Mode::ArrayOpen | Mode::ArrayAfterElement if b == b']' => {
                    self.mode = Mode::AfterArray;
                    i += 1;
                    continue;
                }
                Mode::ArrayAfterElement if b == b',' => {
                    self.mode = Mode::ArrayAfterComma;
                    i += 1;
                    continue;
                }
                Mode::Start | Mode::Values => {
                    return Err(syntax(offset, b, "a JSON object or array"))
                }
                Mode::ArrayOpen => return Err(syntax(offset, b, "an array element or `]`")),
                Mode::ArrayAfterComma => {
                    return Err(syntax(offset, b, "an array element after `,`"))
                }
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
            }
            // A value (or array element) opens here; the scan above takes it.
            self.value = Some(Scan::default());
            self.value_start = offset;
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

    fn text(&self, value: &[u8]) -> Result<String, Error> {
        match std::str::from_utf8(value) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => Err(Error::Utf8 {
                offset: advance(self.value_start, e.valid_up_to()),
                what: "JSON value",
                start: self.value_start,
            }),
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
    fn a_value_comes_out_as_soon_as_it_closes() {
        let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.push(b"{\"a\":1}\n{\"b\"", &mut out), Ok(()));
        assert_eq!(out, strings(&["{\"a\":1}"]));
        assert_eq!(decoder.push(b":2}", &mut out), Ok(()));
        assert_eq!(out, strings(&["{\"a\":1}", "{\"b\":2}"]));
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(out.len(), 2);
        assert_eq!(decode(b"{}\n  \r"), Ok(strings(&["{}"])));
        assert_eq!(decode(b""), Ok(strings(&[])));
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
            decode(b"{},{}"),
            Err(Error::Json { offset: 2, .. })
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
    fn depth_limit() {
        let deep = |n: usize| [vec![b'['; n], vec![b']'; n]].concat();
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

    proptest! {
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
