//! A small JSON scanner for the fast paths of the hottest events (the
//! dialects' own scanners use it): it reads an event's
//! members in one pass over the text, borrowing strings without escapes, and
//! gives up (`None`) on anything it does not certify, so that the general,
//! `serde_json` path decodes that event instead.
//!
//! The contract, checked by property tests against `serde_json`: whatever a
//! fast path built on this scanner returns is exactly what the typed
//! `serde_json` decode of the same text returns. To keep that true the
//! scanner accepts a strict subset of what `serde_json` accepts, and every
//! value it returns is the one `serde_json` would give:
//!
//! - whitespace is what JSON allows (space, tab, LF, CR), nothing else;
//! - strings: a raw control character, an unknown escape, a malformed `\u`, a
//!   `\u` surrogate that is not one half of a proper pair, give up; escapes
//!   are decoded as `serde_json` decodes them; object keys with any escape
//!   give up (the typed decode compares keys after unescaping);
//! - numbers are read only as indexes (a non-negative integer of at most 18
//!   digits) or as a `u64` (up to `u64::MAX`); anything else gives up; a
//!   skipped number must follow the JSON grammar exactly;
//! - values skipped (members no field reads) are checked as `serde_json`
//!   checks what it skips, and nested at most [`MAX_SKIP_DEPTH`] deep;
//! - after the event, only whitespace.
//!
//! The text is `&str`: the framing checked it is UTF-8, and nothing here
//! checks it again (only the bytes a long string decodes to are checked once
//! more, to become a `String` without unsafe code: see [`Scan::unescape`]).

use super::json::{Index, Str};
use super::raw::plain_run;

#[cfg(test)]
mod agree;
mod lent;
mod memo;
mod number;
mod same;
mod value;
#[cfg(test)]
pub(crate) use agree::fast_path_agrees;
pub(crate) use lent::with_decoded;
#[cfg(test)]
pub(crate) use memo::{memo_agrees, memo_lent_agrees, memo_parts};
pub(crate) use memo::{
    quoted_span, scan_text, scan_text_in, Facts, Memo, Memoized, Noted, NotedEvent, Span,
};

#[cfg(test)]
thread_local! {
    /// Set by the tests that compare the two paths: every event takes the
    /// general path.
    pub(crate) static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the fast paths may serve an event (always, outside the tests that
/// compare them with the general path).
#[cfg(not(test))]
#[inline(always)]
pub(crate) const fn enabled() -> bool {
    true
}

/// Whether the fast paths may serve an event (always, outside the tests that
/// compare them with the general path).
#[cfg(test)]
pub(crate) fn enabled() -> bool {
    !GENERAL_ONLY.with(std::cell::Cell::get)
}

/// How deep a skipped value may nest before the scanner gives up (the general
/// decode has its own, larger limit and its own error for it).
pub(crate) const MAX_SKIP_DEPTH: usize = 32;

/// A cursor over one event's JSON text. Every method returns `None` to give up.
pub(crate) struct Scan<'a> {
    text: &'a str,
    at: usize,
    /// The span of the string read by [`Scan::hole`] (the last one), and how
    /// many were read.
    hole: Option<(usize, usize)>,
    holes: u32,
    /// Whitespace between tokens, or an escape in a skipped string that is
    /// not in the one form `compact_raw` writes, seen.
    loose: bool,
    /// A skipped number a float may not hold seen (see `number.rs`).
    wide: bool,
    /// Where the first string with escapes is decoded ([`Scan::lend`]).
    spare: Option<&'a mut String>,
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Bytes of an escaped string's text looked at a time by [`Scan::unescape`].
const BLOCK: usize = 16;

/// The text left from a string's start up to which [`Scan::unescape`]
/// appends its runs and escapes in turn.
const SHORT_EVENT: usize = 256;

/// The decoding buffer kept by a thread is let go when a string larger than
/// this was decoded in it.
const KEEP_DECODED: usize = 1 << 20;

thread_local! {
    /// Where [`Scan::unescape`] decodes (reused: no allocation per string
    /// but the decoded one).
    static DECODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Where the first `"`, `\` or control character of `block` is ([`BLOCK`]
/// when there is none): the test of [`plain_run`] on its first eight bytes
/// at once, and on the last eight only when the first hold none (the runs
/// between a long string's escapes are mostly shorter than eight bytes).
/// Exact: a borrow that would cross from the first eight bytes into the last
/// only comes from a byte flagged in the first.
#[inline(always)]
fn first_special(block: &[u8; BLOCK]) -> usize {
    const LO: u64 = u64::from_le_bytes([1; 8]);
    const HI: u64 = u64::from_le_bytes([0x80; 8]);
    // As in `plain_run`: the lowest byte flagged is always exact.
    #[inline(always)]
    fn hits(w: u64) -> u64 {
        let below = |x: u64, n: u64| x.wrapping_sub(LO.wrapping_mul(n)) & !x & HI;
        below(w ^ (LO * u64::from(b'"')), 1)
            | below(w ^ (LO * u64::from(b'\\')), 1)
            | below(w, 0x20)
    }
    let w = u128::from_le_bytes(*block);
    let first = hits(w as u64);
    if first != 0 {
        return (first.trailing_zeros() / 8) as usize;
    }
    // None in the last eight: 64 trailing zeros, eight more bytes.
    let last = hits((w >> 64) as u64);
    8 + (last.trailing_zeros() / 8) as usize
}

/// [`escaped`]: the byte after a backslash that starts no escape.
const NOT_AN_ESCAPE: u8 = 0;
/// [`escaped`]: `u`, a `\uXXXX` escape.
const UNICODE: u8 = 1;

/// What the byte after a backslash decodes to: the character of a
/// one-character escape (all ASCII, none of them 0 or 1), [`UNICODE`], or
/// [`NOT_AN_ESCAPE`].
#[inline(always)]
fn escaped(b: u8) -> u8 {
    match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => UNICODE,
        _ => NOT_AN_ESCAPE,
    }
}

#[inline]
fn hex(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some(u16::from(b - b'0')),
        b'a'..=b'f' => Some(u16::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(b - b'A' + 10)),
        _ => None,
    }
}

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text,
            at: 0,
            hole: None,
            holes: 0,
            loose: false,
            wide: false,
            spare: None,
        }
    }

    /// The one string read by [`Scan::hole`] in the whole text (its span,
    /// quotes included), when exactly one was.
    pub(crate) fn the_hole(&self) -> Option<(usize, usize)> {
        self.hole.filter(|_| self.holes == 1)
    }

    /// [`Scan::opt_str`] for the member a [`Memo`] may vary: a string's span
    /// is recorded (a `null` is not a hole).
    pub(crate) fn hole(&mut self) -> Option<Option<Str<'a>>> {
        if self.null()? {
            return Some(None);
        }
        self.next_token()?;
        let start = self.at;
        let s = self.string()?;
        self.hole = Some((start, self.at));
        self.holes = self.holes.saturating_add(1);
        Some(Some(s))
    }

    #[inline]
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    /// The next byte that is not whitespace, not taken.
    #[inline]
    fn next_token(&mut self) -> Option<u8> {
        loop {
            let b = self.peek()?;
            if !is_ws(b) {
                return Some(b);
            }
            self.at += 1;
            self.loose = true;
        }
    }

    /// Takes `b` as the next token.
    #[inline]
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next_token()? == b).then(|| self.at += 1)
    }

    /// Takes `word` (a literal) here.
    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.bytes().get(self.at..end)? == word).then(|| self.at = end)
    }

    /// Takes a `null` if it is the next token.
    #[inline]
    pub(crate) fn null(&mut self) -> Option<bool> {
        if self.next_token()? == b'n' {
            self.word(b"null")?;
            return Some(true);
        }
        Some(false)
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        match self.next_token() {
            None => Some(()),
            Some(_) => None,
        }
    }

    /// The members of an object, each key handed to `member`, which must take
    /// the value.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.next_token()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.next_token()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of an array, each taken by `element`.
    pub(crate) fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.next_token()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.next_token()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object key: a string without escapes.
    fn key(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let len = plain_run(self.bytes().get(start..)?)?;
        let end = start + len;
        if self.peek_at(end)? != b'"' {
            return None;
        }
        self.at = end + 1;
        self.text.get(start..end)
    }

    #[inline]
    fn peek_at(&self, i: usize) -> Option<u8> {
        self.bytes().get(i).copied()
    }

    /// A string, or `null` (`None` inside), as an `Option<Str>` field decodes.
    pub(crate) fn opt_str(&mut self) -> Option<Option<Str<'a>>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// The rest of a string with escapes: its text starts at `start` and has
    /// its first backslash at `at`. Appends the decoded string to `out`
    /// (empty) and gives where the text goes on after its closing quote.
    ///
    /// In a short event, each plain run and each escape is appended to the
    /// string in turn. In a long one (a large argument's fragment) the bytes
    /// are decoded in one pass by [`Scan::decode`] into a buffer kept by the
    /// thread, checked as UTF-8 at SIMD speed and copied out once: faster
    /// than a run at a time where escapes are close together. (The decoded
    /// bytes are UTF-8 by construction, runs of the text cut at ASCII bytes,
    /// and characters; the check keeps that from resting on this code.)
    #[inline(never)]
    fn unescape(&self, start: usize, mut at: usize, out: &mut String) -> Option<usize> {
        // Decoded, a string is never longer than its text.
        let left = self.text.len() - start;
        if left > SHORT_EVENT {
            // The thread's buffer, or (while the thread ends) one of its own.
            let kept = DECODED.try_with(|cell| {
                let mut decoded = cell.try_borrow_mut().ok()?;
                let next = self.decode_long(start, at, &mut decoded, out);
                if decoded.capacity() > KEEP_DECODED {
                    *decoded = Vec::new();
                }
                Some(next)
            });
            return match kept {
                Ok(Some(next)) => next,
                _ => self.decode_alone(start, at, out),
            };
        }
        out.reserve(left);
        out.push_str(self.text.get(start..at)?);
        loop {
            // At a backslash.
            let (c, next) = self.escape(at)?;
            out.push(c);
            let run = plain_run(self.bytes().get(next..)?)?;
            at = next + run;
            out.push_str(self.text.get(next..at)?);
            match self.peek_at(at)? {
                b'"' => return Some(at + 1),
                b'\\' => {}
                _ => return None,
            }
        }
    }

    /// [`Scan::decode_long`] with a decoding buffer of its own.
    #[cold]
    #[inline(never)]
    fn decode_alone(&self, start: usize, at: usize, out: &mut String) -> Option<usize> {
        self.decode_long(start, at, &mut Vec::new(), out)
    }

    /// [`Scan::unescape`] of a long event: decoded into `decoded`, checked as
    /// UTF-8, copied to `out`.
    fn decode_long(
        &self,
        start: usize,
        at: usize,
        decoded: &mut Vec<u8>,
        out: &mut String,
    ) -> Option<usize> {
        let (next, len) = self.decode(start, at, decoded)?;
        out.push_str(simdutf8::basic::from_utf8(decoded.get(..len)?).ok()?);
        Some(next)
    }

    /// Decodes the string of [`Scan::unescape`] into the first bytes of
    /// `out`, in one pass, and gives where the text goes on and the decoded
    /// length. `out` is a scratch buffer, made as long as the text left
    /// and a block (a decoded string is never longer than its text) and
    /// left that long for the next string: its bytes are written by index,
    /// with no length kept up to date. After an escape, the text is looked
    /// at [`BLOCK`] bytes at a time, each block copied whole and the index
    /// moved up to the first `"`, `\` or control character in it; a run
    /// longer than a block is found by [`plain_run`] (with SIMD) and copied
    /// at once. The escape at a backslash is decoded by [`escaped`].
    fn decode(&self, start: usize, mut at: usize, out: &mut Vec<u8>) -> Option<(usize, usize)> {
        let b = self.bytes();
        let most = b.len() - start + BLOCK;
        if out.len() < most {
            out.resize(most, 0);
        }
        let buf = out.get_mut(..most)?;
        let mut o = at - start;
        buf.get_mut(..o)?.copy_from_slice(b.get(start..at)?);
        loop {
            // At a backslash.
            match escaped(*b.get(at + 1)?) {
                NOT_AN_ESCAPE => return None,
                UNICODE => {
                    let (c, next) = self.escape(at)?;
                    let mut four = [0_u8; 4];
                    let c = c.encode_utf8(&mut four).as_bytes();
                    buf.get_mut(o..o + c.len())?.copy_from_slice(c);
                    o += c.len();
                    at = next;
                }
                decoded => {
                    *buf.get_mut(o)? = decoded;
                    o += 1;
                    at += 2;
                }
            }
            // The plain run from here: in a block, else (a long run, or the
            // end of the text) found by `plain_run` and copied at once.
            let mut long = true;
            if let Some(block) = b.get(at..at + BLOCK) {
                let mut bytes = [0_u8; BLOCK];
                bytes.copy_from_slice(block);
                let n = first_special(&bytes);
                buf.get_mut(o..o + BLOCK)?.copy_from_slice(&bytes);
                o += n;
                at += n;
                long = n == BLOCK;
            }
            if long {
                let run = plain_run(b.get(at..)?)?;
                buf.get_mut(o..o + run)?
                    .copy_from_slice(b.get(at..at + run)?);
                o += run;
                at += run;
            }
            match b.get(at)? {
                b'"' => return Some((at + 1, o)),
                b'\\' => {}
                _ => return None,
            }
        }
    }

    /// The escape at `at` (a backslash): the character, and where the text
    /// goes on.
    fn escape(&self, at: usize) -> Option<(char, usize)> {
        let c = match self.peek_at(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4(at + 2)?;
                return match first {
                    0xD800..=0xDBFF => {
                        // Only a proper pair: a high half, then `\u` and a low half.
                        if self.peek_at(at + 6)? != b'\\' || self.peek_at(at + 7)? != b'u' {
                            return None;
                        }
                        let second = self.hex4(at + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return None;
                        }
                        let code = 0x1_0000
                            + ((u32::from(first) - 0xD800) << 10)
                            + (u32::from(second) - 0xDC00);
                        Some((char::from_u32(code)?, at + 12))
                    }
                    0xDC00..=0xDFFF => None,
                    n => Some((char::from_u32(u32::from(n))?, at + 6)),
                };
            }
            _ => return None,
        };
        Some((c, at + 2))
    }

    fn hex4(&self, at: usize) -> Option<u16> {
        let d = self.bytes().get(at..at.checked_add(4)?)?;
        let mut n = 0_u16;
        for &b in d {
            n = (n << 4) | hex(b)?;
        }
        Some(n)
    }

    /// An index: a non-negative integer of at most 18 digits (what `serde_json`
    /// gives as that `u64`), or `null` (`None` inside).
    pub(crate) fn opt_index(&mut self) -> Option<Option<Index>> {
        if self.null()? {
            return Some(None);
        }
        let digits = self.plain_integer()?;
        if digits.len() > 18 {
            return None;
        }
        let n = digits
            .iter()
            .fold(0_i64, |n, &b| n * 10 + i64::from(b - b'0'));
        self.at += digits.len();
        Some(Some(Index(n)))
    }

    /// A `u64` as `serde_json` reads one (a non-negative integer up to
    /// `u64::MAX`; anything larger gives up), or `null` (`None` inside).
    pub(crate) fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        let digits = self.plain_integer()?;
        let n = digits.iter().try_fold(0_u64, |n, &b| {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        })?;
        self.at += digits.len();
        Some(Some(n))
    }

    /// [`Scan::opt_u64`], giving also the span of the number's digits (for a
    /// [`Memo`] with a place for it), when there is a number.
    pub(crate) fn opt_u64_spanned(&mut self) -> Option<(Option<u64>, Option<Span>)> {
        let n = self.opt_u64()?;
        let digits = n.map(|n| n.checked_ilog10().unwrap_or(0) as usize + 1);
        Some((n, digits.map(|d| (self.at - d, self.at))))
    }

    /// The digits of the integer here, not taken: at least one, no leading
    /// zero, no sign, no fraction or exponent after them (each of those
    /// gives up, for the general path).
    fn plain_integer(&self) -> Option<&'a [u8]> {
        let rest = self.bytes().get(self.at..)?;
        let len = rest
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(rest.len());
        let digits = rest.get(..len)?;
        if len == 0
            || (len > 1 && digits.first() == Some(&b'0'))
            || matches!(rest.get(len), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        Some(digits)
    }

    /// Skips one value, checked as `serde_json` checks a value it ignores.
    pub(crate) fn skip(&mut self) -> Option<()> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Option<()> {
        match self.next_token()? {
            b'"' => self.skip_string(),
            b'{' => {
                if depth >= MAX_SKIP_DEPTH {
                    return None;
                }
                self.object(|p, _| p.skip_at(depth + 1))
            }
            b'[' => {
                if depth >= MAX_SKIP_DEPTH {
                    return None;
                }
                self.array(|p| p.skip_at(depth + 1))
            }
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            let run = plain_run(self.bytes().get(self.at..)?)?;
            self.at += run;
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => {
                    let (_, next) = self.escape(self.at)?;
                    self.loose |= !value::canonical(self.peek_at(self.at + 1));
                    self.at = next;
                }
                _ => return None,
            }
        }
    }
}

/// Which members of one object were read already: a member read twice is a
/// `duplicate field` error of the typed decode, so the scanner gives up.
#[derive(Default)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks member `n` (below 32) read; `None` when it was already.
    #[inline]
    pub(crate) fn once(&mut self, n: u32) -> Option<()> {
        let bit = 1_u32.checked_shl(n)?;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

#[cfg(test)]
mod tests;
