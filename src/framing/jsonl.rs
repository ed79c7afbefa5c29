//! JSON lines: one JSON document per line. The documents are not parsed here
//! (the provider layer does that); their text is checked to be UTF-8.

use super::lines::{Endings, LineSplitter};
use super::{advance, Error, FramingLimits};

/// A push decoder for newline-delimited JSON.
///
/// Each non-blank line comes out as one `String`, a trailing `\r` removed; a
/// line of only spaces, tabs or `\r` is blank and skipped; a leading UTF-8
/// BOM is skipped. A line is bounded by `max_line_bytes`.
#[derive(Debug, Clone)]
pub struct JsonLinesDecoder {
    lines: LineSplitter,
    failed: Option<Error>,
}

fn line_text(line: &[u8], offset: u64) -> Result<Option<String>, Error> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return Ok(None);
    }
    match std::str::from_utf8(line) {
        Ok(text) => Ok(Some(text.to_owned())),
        Err(e) => Err(Error::Utf8 {
            offset: advance(offset, e.valid_up_to()),
            what: "JSON line",
            start: offset,
        }),
    }
}

impl JsonLinesDecoder {
    /// A decoder at the start of a stream.
    #[must_use]
    pub fn new(limits: FramingLimits) -> Self {
        Self {
            lines: LineSplitter::new(Endings::Lf, limits.max_line_bytes, "JSON line"),
            failed: None,
        }
    }

    /// Back to the start of a new stream, forgetting any error.
    pub fn reset(&mut self) {
        self.lines.reset();
        self.failed = None;
    }

    /// Bytes taken since the start.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.lines.offset()
    }

    /// Takes the next bytes, cut anywhere, and appends each non-blank line
    /// they complete to `out`.
    ///
    /// # Errors
    /// [`Error::Limit`] for a line over `max_line_bytes`, [`Error::Utf8`] for
    /// a line that is not UTF-8; sticky until [`JsonLinesDecoder::reset`].
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<String>) -> Result<(), Error> {
        self.push_with(bytes, &mut |line| out.push(line))
    }

    /// Ends the stream: a last line without its newline comes out if it is
    /// not blank.
    ///
    /// # Errors
    /// [`Error::Utf8`] for that last line; an earlier sticky error.
    pub fn finish(&mut self, out: &mut Vec<String>) -> Result<(), Error> {
        self.finish_with(&mut |line| out.push(line))
    }

    pub(crate) fn push_with<S: FnMut(String)>(
        &mut self,
        bytes: &[u8],
        emit: &mut S,
    ) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.lines.push(bytes, |line, offset| {
            if let Some(text) = line_text(line, offset)? {
                emit(text);
            }
            Ok(())
        });
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    pub(crate) fn finish_with<S: FnMut(String)>(&mut self, emit: &mut S) -> Result<(), Error> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let Some((line, offset)) = self.lines.take_unterminated() else {
            return Ok(());
        };
        match line_text(&line, offset) {
            Ok(text) => {
                text.into_iter().for_each(emit);
                Ok(())
            }
            Err(error) => {
                self.failed = Some(error.clone());
                Err(error)
            }
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
    fn blank_lines_are_skipped_and_cr_stripped() {
        assert_eq!(
            decode(b"\n{\"a\":1}\r\n\r\n  \t\n{\"b\":2}\n\n"),
            Ok(strings(&["{\"a\":1}", "{\"b\":2}"]))
        );
        // only the trailing CR goes
        assert_eq!(
            decode(b"{\"a\":\"x\ry\"} \r\n"),
            Ok(strings(&["{\"a\":\"x\ry\"} "]))
        );
    }

    #[test]
    fn last_line_without_newline_comes_from_finish() {
        let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
        let mut out = Vec::new();
        assert_eq!(decoder.push(b"{\"a\":1}\n{\"b\"", &mut out), Ok(()));
        assert_eq!(out, vec!["{\"a\":1}".to_owned()]);
        assert_eq!(decoder.push(b":2}", &mut out), Ok(()));
        assert_eq!(out.len(), 1);
        assert_eq!(decoder.finish(&mut out), Ok(()));
        assert_eq!(out, vec!["{\"a\":1}".to_owned(), "{\"b\":2}".to_owned()]);
        assert_eq!(decode(b"{}\n  \r"), Ok(strings(&["{}"])));
        assert_eq!(decode(b""), Ok(strings(&[])));
    }

    #[test]
    fn bom_is_skipped() {
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
                what: "JSON line",
                start: 3
            })
        );
        assert!(matches!(
            decode(b"{}\n\xFF"),
            Err(Error::Utf8 { offset: 3, .. })
        ));
    }

    #[test]
    fn line_limit() {
        let limits = FramingLimits {
            max_line_bytes: 8,
            ..FramingLimits::default()
        };
        assert_eq!(
            decode_pieces(limits, &[b"12345678\n"]),
            Ok(strings(&["12345678"]))
        );
        assert_eq!(
            decode_pieces(limits, &[b"{}\n1234", b"56789"]),
            Err(Error::Limit {
                limit: "max_line_bytes",
                max: 8,
                offset: 3,
                what: "JSON line"
            })
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
        assert_eq!(out, vec!["{}".to_owned()]);
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_lines(
            lines in proptest::collection::vec(("\\{[^\r\n]{0,30}", 0u8..4), 0..8),
            final_newline in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut bytes = Vec::new();
            for (i, (line, style)) in lines.iter().enumerate() {
                bytes.extend_from_slice(line.as_bytes());
                if !final_newline && i + 1 == lines.len() {
                    break;
                }
                bytes.extend_from_slice(match style {
                    0 => b"\n".as_slice(),
                    1 => b"\r\n",
                    2 => b"\n\n",
                    _ => b"\r\n \n",
                });
            }
            let expected: Vec<String> = lines.iter().map(|(line, _)| line.clone()).collect();
            let whole = decode(&bytes);
            prop_assert_eq!(&whole, &Ok(expected));
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
            prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
        }
    }
}
