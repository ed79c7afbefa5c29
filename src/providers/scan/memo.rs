//! The memo of the fast paths: the last event a fast path read whole, kept as a
//! template, so the next event that differs only in one string is that string
//! to scan.

use std::borrow::Cow;

use super::Scan;
use crate::providers::json::{Index, Str};

/// What a dialect read from a [`Memo`]'s template besides the string: a tag
/// of its own (which kind of event it was) and two indexes.
pub(crate) type Facts = (u8, Option<Index>, Option<Index>);

/// What a dialect notes of the event it just decoded from a tree: the facts
/// of its common event, the id it names (a Responses delta's `item_id`), where
/// its string is and its stamps (`common.rs`).
pub(crate) type Noted = Option<NotedEvent>;

/// The common event a tree was (see [`Noted`]): its facts, the id it names,
/// where its string is (address and length), and its stamps (where its nonce
/// is, its sequence number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotedEvent {
    pub(crate) facts: Facts,
    pub(crate) id: Option<String>,
    pub(crate) piece: (usize, usize),
    pub(crate) nonce: Option<(usize, usize)>,
    pub(crate) seq: Option<u64>,
}

/// The last event that a fast path read whole, as a template: the text
/// before one string value of it and the text after. An event that is the
/// template with another string in that place is the event the template was,
/// with that string: JSON is context-free, so the members around the string
/// are the same members with the same values, checked the same way, and only
/// the string is left to scan (with every check [`Scan::string`] makes).
///
/// This is what makes the common event cheap: a chunk with the next argument
/// fragment of the open call is the previous one with another string. The
/// memo is a cache of the scan, kept per stream and never saved.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo<F> {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    /// When the template carries a per-event nonce after its string (OpenAI's
    /// `obfuscation`, Q61: no two events of a stream share one), how much of
    /// `suffix` comes before the nonce; the rest follows it. The nonce itself
    /// is a second place of the template: a string without escapes there is
    /// the event's own, handed on with it and checked as the general path
    /// checks it.
    nonce: Option<usize>,
    /// What the dialect read from the template besides the string.
    facts: Option<F>,
}

impl<F: Copy> Memo<F> {
    /// Takes `text` as the template, its string at `hole` (a span from
    /// [`Scan::the_hole`], quotes included), with what else was read from it.
    pub(crate) fn learn(&mut self, text: &str, hole: (usize, usize), facts: F) {
        let b = text.as_bytes();
        let (Some(prefix), Some(suffix)) = (b.get(..hole.0), b.get(hole.1..)) else {
            self.facts = None;
            return;
        };
        self.prefix.clear();
        self.prefix.extend_from_slice(prefix);
        self.suffix.clear();
        self.suffix.extend_from_slice(suffix);
        self.nonce = None;
        self.facts = Some(facts);
    }

    /// [`Memo::learn`] for a template whose nonce lies at `nonce` (a span,
    /// quotes included, after the string): the text between the two and after
    /// the nonce are kept, the nonce is a place of its own.
    pub(crate) fn learn_stamped(
        &mut self,
        text: &str,
        hole: (usize, usize),
        nonce: (usize, usize),
        facts: F,
    ) {
        let b = text.as_bytes();
        let (Some(middle), Some(tail)) = (b.get(hole.1..nonce.0), b.get(nonce.1..)) else {
            self.facts = None;
            return;
        };
        self.learn(text, hole, facts);
        self.suffix.clear();
        self.suffix.extend_from_slice(middle);
        self.suffix.extend_from_slice(tail);
        self.nonce = Some(middle.len());
    }

    /// The template's facts and the string in its place, when `text` is the
    /// template with another string there.
    #[inline]
    pub(crate) fn fill<'a>(&self, text: &'a str) -> Option<(F, Str<'a>)> {
        self.fill_with(text, Scan::string)
            .and_then(|(facts, s, nonce)| nonce.is_none().then_some((facts, s)))
    }

    /// [`Memo::fill`] that also gives the event's nonce where the template
    /// has a place for one.
    #[cfg(test)]
    pub(crate) fn fill_stamped<'a>(&self, text: &'a str) -> Option<(F, Str<'a>, Option<&'a str>)> {
        self.fill_with(text, Scan::string)
    }

    /// [`Memo::fill`] that decodes a string with escapes into `decoded`: the
    /// string's text (`None` inside: the string is `decoded`), and the event's
    /// nonce where the template has a place for one. Nothing of the result
    /// borrows `decoded`, which the scanner may take when the event is not the
    /// template's ([`scan_text_in`]).
    #[inline]
    pub(crate) fn fill_at<'a>(
        &self,
        text: &'a str,
        decoded: &mut String,
    ) -> Option<(F, Option<&'a str>, Option<&'a str>)> {
        self.fill_with(text, |p| p.string_at(decoded))
    }

    /// [`Memo::fill`] with the string read by `string`, and the nonce.
    #[inline(always)]
    fn fill_with<'a, T>(
        &self,
        text: &'a str,
        string: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<(F, T, Option<&'a str>)> {
        let facts = self.facts?;
        let b = text.as_bytes();
        let start = self.prefix.len();
        if b.len() < start + 2 + self.suffix.len()
            || b.get(start) != Some(&b'"')
            || b.get(..start)? != self.prefix.as_slice()
        {
            return None;
        }
        let mut p = Scan::new(text);
        p.at = start;
        let s = string(&mut p)?;
        let Some(middle) = self.nonce else {
            return (b.get(p.at..)? == self.suffix.as_slice()).then_some((facts, s, None));
        };
        let (before, after) = self.suffix.split_at_checked(middle)?;
        if b.get(p.at..p.at.checked_add(middle)?)? != before {
            return None;
        }
        p.at += middle;
        // Only a nonce without escapes: any other takes the scanner.
        let nonce = p.plain_string()?.ok()?;
        (b.get(p.at..)? == after).then_some((facts, s, Some(nonce)))
    }

    /// The template's text before and after its string, once it has one.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> Option<(String, String)> {
        self.facts?;
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
        Some((text(&self.prefix)?, text(&self.suffix)?))
    }
}

/// An event a dialect's fast path reads from its text, and the common event a
/// [`Memo`] serves: what [`scan_text`] needs of each dialect.
pub(crate) trait Memoized<'a> {
    /// The scanner: fills `self` (fresh) with exactly what the typed decode
    /// gives, or returns `None` for the general path; gives the span of the
    /// event's one string, if it has exactly one (what a [`Memo`] may vary).
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>>;
    /// [`Memoized::scan`] with `decoded` lent for a string with escapes
    /// ([`Scan::lend`]); a dialect that lends it nothing scans as `scan`.
    fn scan_in(
        &mut self,
        text: &'a str,
        decoded: &'a mut String,
    ) -> Option<Option<(usize, usize)>> {
        let _ = decoded;
        self.scan(text)
    }
    /// The facts of an event that is exactly the common one (with, for a
    /// dialect that has [`Memoized::nonce`], its nonce).
    fn facts(&self) -> Option<Facts>;
    /// Makes `self` (fresh) the common event with these facts and string.
    fn fill(&mut self, facts: Facts, piece: Str<'a>);
    /// Where in `text` the event's per-event nonce is, when it carries one:
    /// `Some(Some(span))`, quotes included, for a nonce read from `text` as
    /// it stands (no escapes), `Some(None)` for one that is not. A dialect
    /// without nonces: `None`.
    fn nonce(&self, text: &str) -> Option<Option<(usize, usize)>> {
        let _ = text;
        None
    }
    /// Gives `self`, the common event just filled, the event's nonce.
    fn stamp(&mut self, nonce: &'a str) {
        let _ = nonce;
    }
}

/// The fast paths of an event's text, into `ev` (fresh): the memo's template,
/// else the scanner, whose event becomes the template when it is the common
/// one. `false` leaves the text to the general path.
#[inline]
pub(crate) fn scan_text<'a, E: Memoized<'a>>(
    memo: &mut Memo<Facts>,
    text: &'a str,
    ev: &mut E,
) -> bool {
    if let Some((facts, piece)) = memo.fill(text) {
        ev.fill(facts, piece);
        return true;
    }
    let scanned = ev.scan(text);
    scanned_event(memo, text, ev, scanned)
}

/// [`scan_text`] with `decoded` lent for the event's string with escapes
/// ([`Memo::fill_at`], [`Memoized::scan_in`]): the common event, and an event
/// whose one string with escapes is its fragment, cost no allocation.
#[inline]
pub(crate) fn scan_text_in<'a, E: Memoized<'a>>(
    memo: &mut Memo<Facts>,
    text: &'a str,
    ev: &mut E,
    decoded: &'a mut String,
) -> bool {
    if let Some((facts, piece, nonce)) = memo.fill_at(text, decoded) {
        let decoded: &'a String = decoded;
        ev.fill(facts, Str(Cow::Borrowed(piece.unwrap_or(decoded))));
        if let Some(nonce) = nonce {
            ev.stamp(nonce);
        }
        return true;
    }
    let scanned = ev.scan_in(text, decoded);
    scanned_event(memo, text, ev, scanned)
}

/// What the scanner gave for `text` (see [`Memoized::scan`]): the template
/// learned when the event is the common one; `false` for the general path.
#[inline(always)]
fn scanned_event<'a, E: Memoized<'a>>(
    memo: &mut Memo<Facts>,
    text: &'a str,
    ev: &E,
    scanned: Option<Option<(usize, usize)>>,
) -> bool {
    let Some(hole) = scanned else {
        return false;
    };
    if let (Some(hole), Some(facts)) = (hole, ev.facts()) {
        match ev.nonce(text) {
            None => memo.learn(text, hole, facts),
            // A nonce after the string is the template's second place; one
            // before it or with escapes is not learned (the template stays).
            Some(Some(nonce)) if nonce.0 >= hole.1 => memo.learn_stamped(text, hole, nonce, facts),
            Some(_) => {}
        }
    }
    true
}

/// What the memo keeps of `template` around its string, once the fast path
/// read it (for the tests that make events from it).
#[cfg(test)]
pub(crate) fn memo_parts<'a, E: Memoized<'a> + Default>(
    template: &'a str,
) -> Option<(String, String)> {
    let mut memo = Memo::default();
    scan_text(&mut memo, template, &mut E::default());
    memo.parts()
}

/// The memo against the general decode, for the tests that compare them:
/// after the fast path read `template`, `Ok(true)` when the memo took `text`
/// and gave exactly what the typed `serde_json` decode gives, `Ok(false)`
/// when it did not take it, `Err` otherwise.
#[cfg(test)]
pub(crate) fn memo_agrees<'a, E>(template: &'a str, text: &'a str) -> Result<bool, String>
where
    E: Memoized<'a> + Default + PartialEq + std::fmt::Debug + serde::Deserialize<'a>,
{
    let mut memo = Memo::default();
    if !scan_text(&mut memo, template, &mut E::default()) {
        return Ok(false);
    }
    let Some((facts, piece, nonce)) = memo.fill_stamped(text) else {
        return Ok(false);
    };
    let mut fast = E::default();
    fast.fill(facts, piece);
    if let Some(nonce) = nonce {
        fast.stamp(nonce);
    }
    match serde_json::from_str::<E>(text) {
        Ok(general) if general == fast => Ok(true),
        Ok(general) => Err(format!("memo {fast:?}, general path {general:?}")),
        Err(e) => Err(format!("memo {fast:?}, general path refuses: {e}")),
    }
}

/// The memo with a buffer lent ([`Memo::fill_at`]) against the memo alone
/// ([`Memo::fill`]), for the tests that compare them: after the fast path
/// read `template`, `Ok` when both take `text` and make the same event, or
/// neither takes it. `decoded` is the buffer (holding a string of before).
#[cfg(test)]
pub(crate) fn memo_lent_agrees<'a, E>(
    template: &'a str,
    text: &'a str,
    decoded: &'a mut String,
) -> Result<(), String>
where
    E: Memoized<'a> + Default + PartialEq + std::fmt::Debug,
{
    let mut memo = Memo::default();
    if !scan_text(&mut memo, template, &mut E::default()) {
        return Ok(());
    }
    let alone = memo.fill_stamped(text).map(|(facts, piece, nonce)| {
        let mut ev = E::default();
        ev.fill(facts, piece);
        if let Some(nonce) = nonce {
            ev.stamp(nonce);
        }
        ev
    });
    let at = memo.fill_at(text, decoded);
    let decoded: &'a String = decoded;
    let lent = at.map(|(facts, piece, nonce)| {
        let mut ev = E::default();
        ev.fill(facts, Str(Cow::Borrowed(piece.unwrap_or(decoded))));
        if let Some(nonce) = nonce {
            ev.stamp(nonce);
        }
        ev
    });
    if alone == lent {
        Ok(())
    } else {
        Err(format!("memo alone {alone:?}, with a buffer lent {lent:?}"))
    }
}
