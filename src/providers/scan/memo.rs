//! The memo of the fast paths: the last event a fast path read whole, kept as a
//! template, so the next event that differs only in one string is that string
//! to scan.

use std::borrow::Cow;

use super::Scan;
use crate::providers::json::{Index, Str};

/// Where something is in a text: its start and its end.
pub(crate) type Span = (usize, usize);

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
    /// When the template carries a per-event number (the Responses API's
    /// `sequence_number`, Q33), where it is: in which run of fixed text (the
    /// prefix, the suffix before the nonce, the suffix after it) and how far
    /// into it. The number is a third place: an integer there is the event's
    /// own, handed on with it and checked as the general path checks it.
    seq: Option<(Run, usize)>,
    /// What the dialect read from the template besides the string.
    facts: Option<F>,
    /// Where [`Memo::fill_bytes_in`] decodes a string with escapes (taken
    /// out and given back around each event, [`Memo::take_spare`]).
    spare: String,
}

/// A run of a [`Memo`]'s fixed text, around its places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Before the string.
    Prefix,
    /// After the string, before the nonce (or to the end, without one).
    Middle,
    /// After the nonce.
    Tail,
}

/// An event a [`Memo`] took: the template's facts, the string in its place
/// and where it starts in the event's text, and the event's stamps (a nonce
/// and a number, where the template has places for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Filled<'a, F, T> {
    pub(crate) facts: F,
    pub(crate) string: T,
    pub(crate) at: usize,
    pub(crate) nonce: Option<&'a str>,
    pub(crate) seq: Option<u64>,
}

/// The span of `s`, quotes included, when it is a string of `text` as it
/// stands (between quotes, no escapes: a string decoded elsewhere has none).
pub(crate) fn quoted_span(text: &str, s: &str) -> Option<(usize, usize)> {
    let at = (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = at.checked_add(s.len())?;
    let b = text.as_bytes();
    let quoted = b.get(at.checked_sub(1)?) == Some(&b'"')
        && b.get(end) == Some(&b'"')
        && std::ptr::eq(text.get(at..end)?.as_ptr(), s.as_ptr());
    quoted.then_some((at - 1, end + 1))
}

impl<F: Copy> Memo<F> {
    /// Takes `text` as the template, its string at `hole` (a span from
    /// [`Scan::the_hole`], quotes included), with what else was read from it.
    pub(crate) fn learn(&mut self, text: &str, hole: (usize, usize), facts: F) {
        self.learn_places(text, hole, None, None, facts);
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
        self.learn_places(text, hole, Some(nonce), None, facts);
    }

    /// [`Memo::learn`] with a place for a nonce (a span, quotes included,
    /// after the string) and one for a number (the span of its digits,
    /// anywhere but inside the string or the nonce). A template whose spans
    /// do not fit so is not learned (the memo is left empty).
    pub(crate) fn learn_places(
        &mut self,
        text: &str,
        hole: (usize, usize),
        nonce: Option<(usize, usize)>,
        seq: Option<(usize, usize)>,
        facts: F,
    ) {
        self.facts = None;
        let b = text.as_bytes();
        let (mid_end, tail_start) = match nonce {
            None => (b.len(), None),
            Some((start, end)) => (start, Some(end)),
        };
        let (Some(prefix), Some(middle), Some(tail)) = (
            b.get(..hole.0),
            b.get(hole.1..mid_end),
            tail_start.map_or(Some(&[][..]), |end| b.get(end..)),
        ) else {
            return;
        };
        // Which run the number lies in, and where in it.
        let place = match seq {
            None => None,
            Some((start, end)) if start < end && end <= hole.0 => Some((Run::Prefix, start, end)),
            Some((start, end)) if hole.1 <= start && end <= mid_end => {
                Some((Run::Middle, start - hole.1, end - hole.1))
            }
            Some((start, end)) if tail_start.is_some_and(|t| t <= start) && end <= b.len() => {
                let t = tail_start.unwrap_or_default();
                Some((Run::Tail, start - t, end - t))
            }
            Some(_) => return,
        };
        let keep = |out: &mut Vec<u8>, run: &[u8], which: Run| {
            out.extend_from_slice(run);
            if let Some((_, start, end)) = place.filter(|p| p.0 == which) {
                let kept = out.len() - run.len();
                out.drain(kept + start..kept + end);
            }
        };
        self.prefix.clear();
        keep(&mut self.prefix, prefix, Run::Prefix);
        self.suffix.clear();
        keep(&mut self.suffix, middle, Run::Middle);
        self.nonce = nonce.map(|_| self.suffix.len());
        keep(&mut self.suffix, tail, Run::Tail);
        self.seq = place.map(|(run, start, _)| (run, start));
        self.facts = Some(facts);
    }

    /// The template's facts and the string in its place, when `text` is the
    /// template with another string there (a template with other places
    /// takes nothing here).
    #[inline]
    pub(crate) fn fill<'a>(&self, text: &'a str) -> Option<(F, Str<'a>)> {
        if self.seq.is_some() || self.nonce.is_some() {
            return None;
        }
        self.fill_with(text, Scan::string)
            .map(|filled| (filled.facts, filled.string))
    }

    /// [`Memo::fill`] of bytes not yet checked as UTF-8 (an event-stream
    /// frame's payload): the template's runs are compared as bytes and only
    /// the string between them is checked, which makes the whole text UTF-8
    /// (the runs are the template's text, cut at its string's quotes). The
    /// same event [`Memo::fill`] takes from the same bytes checked whole.
    #[cfg(test)]
    pub(crate) fn fill_bytes<'a>(&self, b: &'a [u8]) -> Option<(F, Str<'a>)> {
        self.fill_bytes_in(b, None)
    }

    /// [`Memo::fill_bytes`] with `decoded` lent for a string with escapes
    /// ([`Scan::lend`]): the string is decoded into it and borrowed from it,
    /// with no allocation once it has grown to the strings' size.
    #[inline]
    pub(crate) fn fill_bytes_in<'a>(
        &self,
        b: &'a [u8],
        decoded: Option<&'a mut String>,
    ) -> Option<(F, Str<'a>)> {
        if self.seq.is_some() || self.nonce.is_some() {
            return None;
        }
        let facts = self.facts?;
        let start = self.prefix.len();
        let end = b.len().checked_sub(self.suffix.len())?;
        if end < start + 2
            || b.get(start) != Some(&b'"')
            || b.get(..start)? != self.prefix.as_slice()
            || b.get(end..)? != self.suffix.as_slice()
        {
            return None;
        }
        let text = utf8_between(b, start, end)?;
        let mut p = Scan::new(text);
        if let Some(decoded) = decoded {
            p.lend(decoded);
        }
        let s = p.string()?;
        (p.at == text.len()).then_some((facts, s))
    }

    /// The buffer [`Memo::fill_bytes_in`] decodes into, taken out of the
    /// memo (empty), to be given back by [`Memo::keep_spare`].
    pub(crate) fn take_spare(&mut self) -> String {
        std::mem::take(&mut self.spare)
    }

    /// Gives the buffer back (unless it grew past what a thread keeps).
    pub(crate) fn keep_spare(&mut self, mut spare: String) {
        if spare.capacity() <= super::KEEP_DECODED {
            spare.clear();
            self.spare = spare;
        }
    }

    /// [`Memo::fill`] that also gives where the string starts and the
    /// event's stamps, where the template has places for them.
    #[inline]
    pub(crate) fn fill_stamped<'a>(&self, text: &'a str) -> Option<Filled<'a, F, Str<'a>>> {
        self.fill_with(text, Scan::string)
    }

    /// [`Memo::fill`] that decodes a string with escapes into `decoded`: the
    /// string's text (`None` inside: the string is `decoded`), and the event's
    /// nonce where the template has a place for one (a template with a place
    /// for a number takes nothing here). Nothing of the result borrows
    /// `decoded`, which the scanner may take when the event is not the
    /// template's ([`scan_text_in`]).
    #[inline]
    pub(crate) fn fill_at<'a>(
        &self,
        text: &'a str,
        decoded: &mut String,
    ) -> Option<(F, Option<&'a str>, Option<&'a str>)> {
        if self.seq.is_some() {
            return None;
        }
        self.fill_with(text, |p| p.string_at(decoded))
            .map(|filled| (filled.facts, filled.string, filled.nonce))
    }

    /// [`Memo::fill`] with the string read by `string`, and the stamps.
    #[inline(always)]
    fn fill_with<'a, T>(
        &self,
        text: &'a str,
        string: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<Filled<'a, F, T>> {
        let facts = self.facts?;
        let b = text.as_bytes();
        let mut p = Scan::new(text);
        let mut seq = None;
        if let Some((Run::Prefix, k)) = self.seq {
            fixed(&mut p, &self.prefix, Some(k), &mut seq)?;
        } else {
            let start = self.prefix.len();
            if b.len() < start + 2 + self.suffix.len()
                || b.get(start) != Some(&b'"')
                || b.get(..start)? != self.prefix.as_slice()
            {
                return None;
            }
            p.at = start;
        }
        let at = p.at;
        let s = string(&mut p)?;
        let nonce = if self.nonce.is_none() && self.seq.is_none() {
            // No place after the string: the rest is the template's.
            if b.get(p.at..)? != self.suffix.as_slice() {
                return None;
            }
            None
        } else {
            self.stamps_after(&mut p, &mut seq)?
        };
        Some(Filled {
            facts,
            string: s,
            at,
            nonce,
            seq,
        })
    }

    /// The rest of an event after its string, for a template with places
    /// there: the fixed runs, the nonce (given) and the number (into `seq`).
    fn stamps_after<'a>(&self, p: &mut Scan<'a>, seq: &mut Option<u64>) -> Option<Option<&'a str>> {
        let number = |run: Run| self.seq.and_then(|(r, k)| (r == run).then_some(k));
        let (middle, tail) = match self.nonce {
            None => (self.suffix.as_slice(), None),
            Some(m) => {
                let (middle, tail) = self.suffix.split_at_checked(m)?;
                (middle, Some(tail))
            }
        };
        fixed(p, middle, number(Run::Middle), seq)?;
        let mut nonce = None;
        if let Some(tail) = tail {
            // Only a nonce without escapes: any other takes the scanner.
            nonce = Some(p.plain_string()?.ok()?);
            fixed(p, tail, number(Run::Tail), seq)?;
        }
        (p.at == p.bytes().len()).then_some(nonce)
    }

    /// The template's text before and after its string, once it has one,
    /// with stamps of its own in the places for them (the number `7`, the
    /// nonce `"n0nce"`): an event made of them differs from the template in
    /// those too.
    #[cfg(test)]
    pub(crate) fn parts(&self) -> Option<(String, String)> {
        self.facts?;
        let mut runs = [self.prefix.clone(), self.suffix.clone(), Vec::new()];
        if let Some(middle) = self.nonce {
            runs[2] = runs[1].split_off(middle);
        }
        if let Some((run, k)) = self.seq {
            let n = match run {
                Run::Prefix => 0,
                Run::Middle => 1,
                Run::Tail => 2,
            };
            runs[n].splice(k..k, *b"7");
        }
        let [prefix, mut suffix, tail] = runs;
        if self.nonce.is_some() {
            suffix.extend_from_slice(b"\"n0nce\"");
            suffix.extend_from_slice(&tail);
        }
        Some((
            String::from_utf8(prefix).ok()?,
            String::from_utf8(suffix).ok()?,
        ))
    }
}

/// `b[start..end]` as text, when it is UTF-8: exactly
/// `std::str::from_utf8(b.get(start..end)?).ok()`, checked in a wider window
/// where that is cheaper. The standard check reads sixteen bytes at a time
/// from an address that is a multiple of eight, and byte by byte before it
/// and in the last fifteen bytes; a memo's string is short and lies between
/// the template's runs (UTF-8 on their own, its quotes ASCII), so the window
/// ends at such an address inside the suffix and starts a multiple of
/// sixteen bytes before it, inside the prefix: nothing of it is read byte by
/// byte but the characters that are not ASCII. A window that does not fit
/// in `b`, or is not UTF-8 (it cuts a character of the runs, or the string
/// is not UTF-8), is left for the check of exactly `start..end`; one that is
/// gives the string's text where both ends are characters' boundaries (a
/// span that is not empty is UTF-8 on its own exactly then), else the exact
/// check too.
#[inline(always)]
pub(crate) fn utf8_between(b: &[u8], start: usize, end: usize) -> Option<&str> {
    let exact = b.get(start..end)?;
    let past = (exact.as_ptr() as usize).wrapping_add(exact.len()) % 8;
    let to = end.saturating_add((8 - past) % 8);
    let from = to.checked_sub((to - start).next_multiple_of(16));
    if let Some(Some(Ok(window))) = from.map(|from| b.get(from..to).map(std::str::from_utf8)) {
        let skip = window.len() - (to - start);
        if let Some(text) = window.get(skip..skip + exact.len()) {
            return Some(text);
        }
    }
    std::str::from_utf8(exact).ok()
}

/// Takes the run of fixed text `run` at the scanner's place, with the
/// template's number at `number` into it when it has one there (a `u64` as
/// [`Scan::opt_u64`] reads one, into `seq`).
#[inline(always)]
fn fixed(p: &mut Scan<'_>, run: &[u8], number: Option<usize>, seq: &mut Option<u64>) -> Option<()> {
    let (before, after) = match number {
        None => (run, None),
        Some(k) => {
            let (before, after) = run.split_at_checked(k)?;
            (before, Some(after))
        }
    };
    let end = p.at.checked_add(before.len())?;
    if p.bytes().get(p.at..end)? != before {
        return None;
    }
    p.at = end;
    if let Some(after) = after {
        *seq = p.opt_u64()?;
        fixed(p, after, None, seq)?;
    }
    Some(())
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
    let Some(Filled {
        facts,
        string: piece,
        nonce,
        ..
    }) = memo.fill_stamped(text)
    else {
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
    let alone = memo.fill_stamped(text).map(|filled| {
        let Filled {
            facts,
            string: piece,
            nonce,
            ..
        } = filled;
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
