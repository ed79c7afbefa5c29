//! Bounded line splitting for SSE: CRLF, LF or a lone CR ends a line.
//!
//! Lines found whole inside one push are handed out as borrowed slices of the
//! pushed bytes ([`Line::Input`]); only a line cut by a push boundary is
//! copied, once, into `pending` ([`Line::Held`]).

use memchr::memchr2;

use super::{advance, Error, BOM};

/// One line, terminator excluded: borrowed from the bytes of the current push
/// (for as long as they live), or from the splitter's buffer (only until the
/// callback returns).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Line<'b, 'h> {
    Input(&'b [u8]),
    Held(&'h [u8]),
}

impl Line<'_, '_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Line::Input(b) | Line::Held(b) => b,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct LineSplitter {
    max_line_bytes: usize,
    #[serde(with = "crate::statics")]
    what: crate::statics::Name,
    /// The start of a line cut by the end of the last push.
    pending: Vec<u8>,
    /// Offset of the next line's first byte (`pending`'s, when it has any).
    line_start: u64,
    /// Offset of the next byte a push brings.
    offset: u64,
    /// The last push ended in CR: an LF first in the next one completes a CRLF.
    skip_lf: bool,
    /// The stream began with a BOM (removed from its first line).
    #[serde(default)]
    bom: bool,
}

impl LineSplitter {
    pub(crate) fn new(max_line_bytes: usize, what: &'static str) -> Self {
        Self {
            max_line_bytes,
            what,
            pending: Vec::new(),
            line_start: 0,
            offset: 0,
            skip_lf: false,
            bom: false,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.pending = Vec::new();
        self.line_start = 0;
        self.offset = 0;
        self.skip_lf = false;
        self.bom = false;
    }

    /// Whether the stream began with a BOM (which was removed).
    pub(crate) fn bom(&self) -> bool {
        self.bom
    }

    /// Bytes seen since the start.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The next byte starts a line: nothing held, no LF owed to a CR.
    pub(crate) fn at_line_start(&self) -> bool {
        self.pending.is_empty() && !self.skip_lf
    }

    /// The bound on one line.
    pub(crate) fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// Takes `n` bytes of whole lines read elsewhere (from a line's start,
    /// see [`LineSplitter::at_line_start`]).
    pub(crate) fn skip(&mut self, n: usize) {
        self.offset = advance(self.offset, n);
        self.line_start = self.offset;
    }

    /// Where a line cut by the end of the last push starts, if there is one.
    pub(crate) fn pending_from(&self) -> Option<u64> {
        (!self.pending.is_empty()).then_some(self.line_start)
    }

    fn too_long(&self) -> Error {
        Error::Limit {
            limit: "max_line_bytes",
            max: self.max_line_bytes,
            offset: self.line_start,
            what: self.what,
        }
    }

    /// Calls `on_line(line, offset)` for each line `bytes` completes, in
    /// order, terminator excluded; a leading BOM is removed from the stream's
    /// first line. Stops at the first error `on_line` returns.
    pub(crate) fn push<'b, F>(&mut self, bytes: &'b [u8], mut on_line: F) -> Result<(), Error>
    where
        F: FnMut(Line<'b, '_>, u64) -> Result<(), Error>,
    {
        let mut rest = bytes;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if let Some((b'\n', tail)) = rest.split_first() {
                rest = tail;
                self.offset = advance(self.offset, 1);
                self.line_start = self.offset;
            }
        }
        loop {
            // The blank line that ends an SSE event needs no search.
            let end = match rest.first() {
                Some(b'\n' | b'\r') => Some(0),
                _ => memchr2(b'\n', b'\r', rest),
            };
            let Some(end) = end else {
                if self.pending.len().saturating_add(rest.len()) > self.max_line_bytes {
                    return Err(self.too_long());
                }
                self.pending.extend_from_slice(rest);
                self.offset = advance(self.offset, rest.len());
                return Ok(());
            };
            if self.pending.len().saturating_add(end) > self.max_line_bytes {
                return Err(self.too_long());
            }
            let (line, terminated) = rest.split_at_checked(end).unwrap_or((rest, &[]));
            let (terminator, after) = match terminated.split_first() {
                Some((b'\r', [b'\n', after @ ..])) => (2, after),
                Some((b'\r', after)) => {
                    // A CR last in this push may be the first half of a CRLF.
                    self.skip_lf = after.is_empty();
                    (1, after)
                }
                Some((_, after)) => (1, after),
                None => (0, terminated),
            };
            let start = self.line_start;
            if self.pending.is_empty() {
                let (line, from) = strip_bom(line, start);
                self.bom |= from != start;
                on_line(Line::Input(line), from)?;
            } else {
                self.pending.extend_from_slice(line);
                let (line, from) = strip_bom(&self.pending, start);
                self.bom |= from != start;
                on_line(Line::Held(line), from)?;
                self.pending.clear();
            }
            self.offset = advance(advance(self.offset, end), terminator);
            self.line_start = self.offset;
            rest = after;
        }
    }

    /// The line the stream ended inside (no terminator), with its offset, if
    /// any; the splitter is then fresh.
    pub(crate) fn take_unterminated(&mut self) -> Option<(Vec<u8>, u64)> {
        let pending = std::mem::take(&mut self.pending);
        let start = self.line_start;
        let bom = self.bom;
        self.reset();
        if pending.is_empty() {
            return None;
        }
        let (line, from) = strip_bom(&pending, start);
        self.bom = bom || from != start;
        Some((line.to_vec(), from))
    }
}

/// The stream's first line without its BOM.
fn strip_bom(line: &[u8], start: u64) -> (&[u8], u64) {
    if start == 0 {
        if let Some(rest) = line.strip_prefix(BOM) {
            return (rest, advance(start, BOM.len()));
        }
    }
    (line, start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::testutil::{bytewise, split_at_cuts};

    /// The lines found, each with its offset, and the unterminated rest.
    type Split = (Vec<(String, u64)>, Option<(Vec<u8>, u64)>);

    fn lines(pieces: &[&[u8]]) -> Result<Split, Error> {
        let mut splitter = LineSplitter::new(64, "test line");
        let mut got = Vec::new();
        for piece in pieces {
            splitter.push(piece, |line, at| {
                got.push((String::from_utf8_lossy(line.bytes()).into_owned(), at));
                Ok(())
            })?;
        }
        Ok((got, splitter.take_unterminated()))
    }

    #[test]
    fn sse_endings_are_crlf_lf_and_cr() {
        let input: &[u8] = b"a\r\nb\nc\rd\r\re";
        let expected = vec![
            ("a".to_owned(), 0),
            ("b".to_owned(), 3),
            ("c".to_owned(), 5),
            ("d".to_owned(), 7),
            (String::new(), 9),
        ];
        let whole = lines(&[input]);
        assert_eq!(whole, Ok((expected.clone(), Some((b"e".to_vec(), 10)))));
        assert_eq!(lines(&bytewise(input)), whole);
        for cut in 0..input.len() {
            assert_eq!(lines(&split_at_cuts(input, &[cut])), whole, "cut at {cut}");
        }
    }

    #[test]
    fn cr_at_the_end_of_a_push_then_lf_is_one_line_end() {
        let got = lines(&[b"a\r", b"\nb\r", b"", b"\n"]);
        assert_eq!(
            got,
            Ok((vec![("a".to_owned(), 0), ("b".to_owned(), 3)], None))
        );
        let got = lines(&[b"a\r", b"b\n"]);
        assert_eq!(
            got,
            Ok((vec![("a".to_owned(), 0), ("b".to_owned(), 2)], None))
        );
    }

    #[test]
    fn bom_is_stripped_from_the_first_line_only_even_when_split() {
        let input: &[u8] = b"\xEF\xBB\xBFa\n\xEF\xBB\xBFb\n";
        let got = lines(&bytewise(input));
        assert_eq!(
            got,
            Ok((vec![("a".to_owned(), 3), ("\u{feff}b".to_owned(), 5)], None))
        );
    }

    #[test]
    fn line_limit_is_checked_as_bytes_arrive() {
        let long = [b'x'; 65];
        let mut splitter = LineSplitter::new(64, "test line");
        assert_eq!(splitter.push(b"ok\n", |_, _| Ok(())), Ok(()));
        assert_eq!(
            splitter.push(long.get(..64).unwrap_or_default(), |_, _| Ok(())),
            Ok(())
        );
        let err = splitter.push(b"x", |_, _| Ok(()));
        assert_eq!(
            err,
            Err(Error::Limit {
                limit: "max_line_bytes",
                max: 64,
                offset: 3,
                what: "test line"
            })
        );
        // A whole line in one push is checked too.
        let mut splitter = LineSplitter::new(64, "test line");
        assert!(splitter
            .push(&[long.as_slice(), b"\n"].concat(), |_, _| Ok(()))
            .is_err());
        // Exactly at the limit is fine.
        let mut splitter = LineSplitter::new(64, "test line");
        let at_limit = [long.get(..64).unwrap_or_default(), b"\n"].concat();
        assert_eq!(splitter.push(&at_limit, |_, _| Ok(())), Ok(()));
    }
}
