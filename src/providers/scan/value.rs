//! What the fast paths of the dialects that send whole values read besides
//! strings and indexes: booleans, and a value taken whole as its raw text
//! (a call's arguments object, kept as `compact_raw` writes it).

use std::borrow::Cow;

use super::Scan;
use crate::providers::json::compact_raw;

impl<'a> Scan<'a> {
    /// A boolean, or `null` (`None` inside), as an `Option<bool>` field decodes.
    pub(crate) fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.next_token()? {
            b'n' => self.word(b"null").map(|()| None),
            b't' => self.word(b"true").map(|()| Some(true)),
            b'f' => self.word(b"false").map(|()| Some(false)),
            _ => None,
        }
    }

    /// The next token's first byte, not taken.
    pub(crate) fn peek_token(&mut self) -> Option<u8> {
        self.next_token()
    }

    /// One value read by `read`, as its raw text (from its first byte to
    /// its last).
    pub(crate) fn raw_read(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<&'a str> {
        self.next_token()?;
        let start = self.at;
        read(self)?;
        self.text.get(start..self.at)
    }

    /// One value, checked as [`Scan::skip`] checks it, as its raw text (from
    /// its first byte to its last: what `serde_json` hands over as a value's
    /// raw text).
    pub(crate) fn raw(&mut self) -> Option<&'a str> {
        self.next_token()?;
        let start = self.at;
        self.skip()?;
        self.text.get(start..self.at)
    }
}

impl<'a> Scan<'a> {
    /// One value, checked as [`Scan::skip`] checks it, written compactly as
    /// `compact_raw` writes its raw text: a value with no whitespace between
    /// its tokens and no escape but those in the form `compact_raw` writes
    /// is that text already (borrowed, with no second pass over it).
    pub(crate) fn compact_text(&mut self) -> Option<Cow<'a, str>> {
        self.next_token()?;
        let start = self.at;
        self.loose = false;
        self.skip()?;
        let raw = self.text.get(start..self.at)?;
        Some(if self.loose {
            Cow::Owned(compact_raw(raw))
        } else {
            Cow::Borrowed(raw)
        })
    }

    /// [`Scan::compact_text`] as a `String` of its own.
    pub(crate) fn compact(&mut self) -> Option<String> {
        self.compact_text().map(Cow::into_owned)
    }
}

/// Whether the escape whose letter is `letter` is written as `compact_raw`
/// writes the character it stands for (`\uXXXX` never counts: the rare
/// control character it may spell is left to `compact_raw`).
pub(super) fn canonical(letter: Option<u8>) -> bool {
    matches!(
        letter,
        Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f')
    )
}
