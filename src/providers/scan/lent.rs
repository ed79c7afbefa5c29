//! The strings a scan reads, and the buffer a string with escapes is decoded
//! into and borrowed from ([`with_decoded`], [`Scan::lend`]).

use std::borrow::Cow;

use super::{plain_run, Scan, KEEP_DECODED};
use crate::providers::json::Str;

thread_local! {
    /// The buffer lent by [`with_decoded`].
    static HOLE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Runs `f` with the thread's buffer for a decoded string ([`Scan::lend`],
/// [`super::Memo::fill_at`]), kept between events: a fragment with escapes is
/// decoded into it, and borrowed from it, with no allocation once it has
/// grown to the fragments' size. A buffer grown past [`KEEP_DECODED`] is let
/// go; while the thread ends (or when `f` runs inside `f`), a buffer of its own.
pub(crate) fn with_decoded<T>(f: impl FnOnce(&mut String) -> T) -> T {
    let mut buffer = HOLE
        .try_with(|cell| cell.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let out = f(&mut buffer);
    if buffer.capacity() <= KEEP_DECODED {
        buffer.clear();
        // Nothing to keep while the thread ends.
        let _ = HOLE.try_with(|cell| {
            if let Ok(mut b) = cell.try_borrow_mut() {
                *b = buffer;
            }
        });
    }
    out
}

impl<'a> Scan<'a> {
    /// Lends `buffer` for the first string with escapes ([`Scan::string`]):
    /// the common event's one such string costs no allocation.
    pub(crate) fn lend(&mut self, buffer: &'a mut String) {
        self.spare = Some(buffer);
    }

    /// A string value, borrowed when it has no escapes. The first one with
    /// escapes is decoded into the buffer lent by [`Scan::lend`], if any, and
    /// borrowed from it; any other is decoded into a `String` of its own.
    pub(crate) fn string(&mut self) -> Option<Str<'a>> {
        match self.plain_string()? {
            Ok(plain) => Some(Str(Cow::Borrowed(plain))),
            Err((start, at)) => match self.spare.take() {
                Some(out) => {
                    out.clear();
                    self.at = self.unescape(start, at, out)?;
                    let out: &'a String = out;
                    Some(Str(Cow::Borrowed(out.as_str())))
                }
                None => {
                    let mut out = String::new();
                    self.at = self.unescape(start, at, &mut out)?;
                    Some(Str(Cow::Owned(out)))
                }
            },
        }
    }

    /// A string value: its text when it has no escapes, else `None` and the
    /// string decoded into `out` (cleared first).
    pub(crate) fn string_at(&mut self, out: &mut String) -> Option<Option<&'a str>> {
        match self.plain_string()? {
            Ok(plain) => Some(Some(plain)),
            Err((start, at)) => {
                out.clear();
                self.at = self.unescape(start, at, out)?;
                Some(None)
            }
        }
    }

    /// The start of a string value: its text when it has no escapes (read
    /// to its closing quote), else where its text starts and where its first
    /// backslash is (read no further).
    #[inline]
    pub(super) fn plain_string(&mut self) -> Option<Result<&'a str, (usize, usize)>> {
        self.eat(b'"')?;
        let start = self.at;
        let len = plain_run(self.bytes().get(start..)?)?;
        let at = start + len;
        match self.peek_at(at)? {
            b'"' => {
                self.at = at + 1;
                Some(Ok(self.text.get(start..at)?))
            }
            b'\\' => Some(Err((start, at))),
            _ => None,
        }
    }
}
