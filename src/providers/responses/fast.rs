//! The fast path of a Responses event: the deltas that make up nearly all of
//! a stream (a call's argument or input fragments, text, refusal and
//! reasoning text), read by the scanner of `providers/scan` in one pass.

use std::borrow::Cow;

use super::restated::Held;
use super::wire::{Event, Item};
use super::{State, CUSTOM};
use crate::providers::common::Stamp;
use crate::providers::json::{Index, Loose, Str};
use crate::providers::scan::{self, Memo, Scan, Seen, Span};
use crate::providers::state::{Live, Stream, R};
use crate::providers::Input;

/// The event types the fast path serves: the deltas among those `apply`
/// reads (`HANDLED`), the `.done` events of a call's arguments or input (the
/// same members, the whole text in one), the output items ([`ITEMS`]), and
/// the progress events `apply` passes over (a part or a whole text, skipped
/// as the typed decode skips them). Any other type, or none, is for the
/// general path.
const SERVED: [&str; 19] = [
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.custom_tool_call_input.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
];

/// The event types whose `item` the fast path reads. `apply` reads these
/// events' item itself (`State::item`), never as a snapshot to check.
const ITEMS: [&str; 2] = ["response.output_item.added", "response.output_item.done"];

/// Whether the member `key` of an event of type `kind` is the arguments
/// (the input) its `.done` restates.
fn restates(kind: Option<&str>, key: &str) -> bool {
    matches!(
        (kind, key),
        (Some("response.function_call_arguments.done"), "arguments")
            | (Some("response.custom_tool_call_input.done"), "input")
    )
}

/// Whether the member `key` of an item of type `kind` is the arguments (the
/// input) of the call it is.
pub(super) fn restates_item(kind: Option<&str>, key: &str) -> bool {
    matches!(
        (kind, key),
        (Some("function_call"), "arguments") | (Some(CUSTOM), "input")
    )
}

/// Fills `ev` (fresh) with exactly the [`Event`] the typed decode gives, or
/// returns `None` for the general path: an event of a type not in
/// [`SERVED`] (or of no type), an item that is not an object ([`scan_item`])
/// or in an event not of [`ITEMS`], a response, an error's code or message
/// that is not `null`, anything [`Scan`] does not certify. Only an output
/// item's event carries an `item`, and none a `response` (`null` is none): no
/// snapshot for `check_carried` to check.
///
/// What it serves is what `parse_typed` gives (the typed decode succeeds),
/// and then the event's own `type` is the one `apply` reads: the SSE event
/// name is read only for an event that names no type, which is never served.
///
/// Gives also where the digits of the event's `sequence_number` are (`seq`),
/// when it has one.
fn scan_event<'a>(
    text: &'a str,
    ev: &mut Event<'a>,
    seq: &mut Option<(usize, usize)>,
    held: Held<'_>,
) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            // What a `.done` event restates, read as the call's input when
            // it is that (`restated.rs`).
            "arguments" | "input" if restates(ev.kind.as_deref(), key) => {
                seen.once(if key == "arguments" { 3 } else { 4 })?;
                let oi = ev.output_index.map(|i| i.0);
                match held.read(p, oi) {
                    Some(r) => ev.restated = Some(r),
                    None if key == "arguments" => ev.arguments = p.opt_str()?,
                    None => ev.input = p.opt_str()?,
                }
                return Some(());
            }
            "type" => (0, &mut ev.kind),
            "item_id" => (1, &mut ev.item_id),
            "delta" => (2, &mut ev.delta),
            "arguments" => (3, &mut ev.arguments),
            "input" => (4, &mut ev.input),
            "name" => (5, &mut ev.name),
            "obfuscation" => {
                seen.once(14)?;
                ev.obfuscation = p.opt_str()?.map(|s| crate::providers::json::Loose::Str(s.0));
                return Some(());
            }
            "sequence_number" => {
                seen.once(6)?;
                (ev.sequence_number, *seq) = p.opt_u64_spanned()?;
                return Some(());
            }
            "output_index" | "content_index" | "summary_index" => {
                let (n, index) = match key {
                    "output_index" => (7, &mut ev.output_index),
                    "content_index" => (8, &mut ev.content_index),
                    _ => (9, &mut ev.summary_index),
                };
                seen.once(n)?;
                *index = p.opt_index()?;
                return Some(());
            }
            // Present as `null` is absent; anything else is for the general path.
            "item" => {
                seen.once(10)?;
                if !p.null()? {
                    let done = ev.kind.as_deref() == Some("response.output_item.done");
                    let oi = ev.output_index.map(|i| i.0).filter(|_| done);
                    ev.item = Some(scan_item(p, held, oi)?);
                }
                return Some(());
            }
            "response" => return seen.once(11).and_then(|()| p.null()?.then_some(())),
            "code" => return seen.once(12).and_then(|()| p.null()?.then_some(())),
            "message" => return seen.once(13).and_then(|()| p.null()?.then_some(())),
            _ => return p.skip(),
        };
        seen.once(n)?;
        // The delta is the string a memo may vary.
        *field = if n == 2 { p.hole()? } else { p.opt_str()? };
        Some(())
    })?;
    p.end()?;
    let kind = ev.kind.as_deref()?;
    if ev.item.is_some() && !ITEMS.contains(&kind) {
        return None;
    }
    SERVED.contains(&kind).then_some(p.the_hole())
}

/// An output item, exactly as the typed decode reads it: an object whose
/// members read are strings or `null` (a call's `arguments` or `input` that
/// is any other value is for the general path), each at most once; any
/// other member skipped.
fn scan_item<'a>(p: &mut Scan<'a>, held: Held<'_>, oi: Option<i64>) -> Option<Item<'a>> {
    let mut item = Item::default();
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "type" => (0, &mut item.kind),
            "id" => (1, &mut item.id),
            "call_id" => (2, &mut item.call_id),
            "name" => (3, &mut item.name),
            "encrypted_content" => (4, &mut item.encrypted_content),
            "arguments" | "input" => {
                // A done call's arguments (its input, for a custom call),
                // read as the call's input when they are that.
                let kind = item.kind.as_deref();
                if oi.is_some() && restates_item(kind, key) {
                    if let Some(r) = held.read(p, oi) {
                        seen.once(if key == "arguments" { 5 } else { 6 })?;
                        item.restated = Some(r);
                        return Some(());
                    }
                }
                let (n, loose) = if key == "arguments" {
                    (5, &mut item.arguments)
                } else {
                    (6, &mut item.input)
                };
                seen.once(n)?;
                *loose = p.opt_str()?.map(|s| crate::providers::json::Loose::Str(s.0));
                return Some(());
            }
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = p.opt_str()?;
        Some(())
    })?;
    Some(item)
}

/// The deltas a memo serves, by their tag in [`Facts`].
const MEMO_DELTAS: [&str; 3] = [
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
];

/// What a memo keeps of its template besides the string: the delta's tag,
/// its output and content indexes, and where its item id (a string without
/// escapes) lies in the text before the string: how far before the string
/// it starts, and its length (no place of the template lies between the two,
/// so the distance is the same in every event the template takes).
pub(super) type Facts = (u8, Option<Index>, Option<Index>, Option<(usize, usize)>);

/// The event a memo serves: a delta with only its type, item id, indexes and
/// string.
fn delta_event<'a>(
    ev: &mut Event<'a>,
    (tag, output, content, _): Facts,
    item_id: Option<&'a str>,
    piece: Str<'a>,
) {
    let kind = MEMO_DELTAS.get(usize::from(tag)).copied().unwrap_or_default();
    ev.kind = Some(Str(kind.into()));
    ev.output_index = output;
    ev.content_index = content;
    ev.item_id = item_id.map(|id| Str(id.into()));
    ev.delta = Some(piece);
}

/// A template of the event just scanned from `text`, its string at `hole`
/// and its number's digits at `seq`, when the event is exactly a
/// [`delta_event`] with its stamps: its facts, and where its nonce and its
/// number are (places of the template). An item id that is not a string of
/// the text before the string, with no number between the two, or a nonce
/// that is not a string of the text after it, makes no template.
fn template(
    ev: &Event<'_>,
    text: &str,
    hole: (usize, usize),
    seq: Option<(usize, usize)>,
) -> Option<(Facts, Option<Span>, Option<Span>)> {
    let kind = ev.kind.as_deref()?;
    let tag = u8::try_from(MEMO_DELTAS.iter().position(|k| *k == kind)?).ok()?;
    let id = match &ev.item_id {
        None => None,
        Some(Str(Cow::Borrowed(id))) => {
            let (at, end) = scan::quoted_span(text, id)?;
            let number_between = seq.is_some_and(|(start, _)| end <= start && start < hole.0);
            if end > hole.0 || number_between {
                return None;
            }
            Some((hole.0 - (at + 1), id.len()))
        }
        Some(_) => return None,
    };
    let nonce = match &ev.obfuscation {
        None => None,
        Some(Loose::Str(Cow::Borrowed(nonce))) => {
            Some(scan::quoted_span(text, nonce).filter(|n| n.0 >= hole.1)?)
        }
        Some(_) => return None,
    };
    let facts = (tag, ev.output_index, ev.content_index, id);
    let mut again = Event::default();
    let id = id.and_then(|(back, len)| text.get(hole.0 - back..hole.0 - back + len));
    delta_event(&mut again, facts, id, ev.delta.clone()?);
    let stamp = Stamp {
        nonce: nonce.and_then(|(a, b)| text.get(a + 1..b - 1)),
        seq: ev.sequence_number,
    };
    stamp_event(&mut again, stamp);
    (again == *ev).then_some((facts, nonce, seq.filter(|_| ev.sequence_number.is_some())))
}

/// The fast paths of an event's text, into `ev` (fresh): the memo's
/// template (with the event's own stamps in their places), else the scanner,
/// whose event becomes the template when it is a delta [`delta_event`] makes,
/// with its stamps. `false` leaves the text to the general path.
pub(super) fn scan_text<'a>(
    memo: &mut Memo<Facts>,
    text: &'a str,
    ev: &mut Event<'a>,
    held: Held<'_>,
) -> bool {
    if fill(memo, text, ev) {
        return true;
    }
    let mut seq = None;
    let Some(hole) = scan_event(text, ev, &mut seq, held) else {
        return false;
    };
    if let Some(hole) = hole {
        if let Some((facts, nonce, seq)) = template(ev, text, hole, seq) {
            memo.learn_places(text, hole, nonce, seq, facts);
        }
    }
    true
}

/// The memo's template with the event's string and stamps, into `ev`
/// (fresh), when `text` is the template with those in their places.
#[inline]
pub(super) fn fill<'a>(memo: &Memo<Facts>, text: &'a str, ev: &mut Event<'a>) -> bool {
    let Some(filled) = memo.fill_stamped(text) else {
        return false;
    };
    // The item id lies before the string, the same bytes as the template's.
    let id = filled.facts.3.and_then(|(back, len)| {
        let at = filled.at.checked_sub(back)?;
        text.get(at..at.checked_add(len)?)
    });
    delta_event(ev, filled.facts, id, filled.string);
    // `ev` is fresh: an event without stamps needs none given.
    if filled.nonce.is_some() || filled.seq.is_some() {
        stamp_event(
            ev,
            Stamp {
                nonce: filled.nonce,
                seq: filled.seq,
            },
        );
    }
    true
}

/// The common event of a tree (`providers/common.rs`): an event that is
/// exactly a [`delta_event`], but perhaps for its stamps (a sequence number, a
/// nonce as a string; nothing else); its tag and indexes, its item id, its
/// string and its stamps.
pub(super) fn common<'e>(
    ev: &'e Event<'_>,
) -> Option<(scan::Facts, Option<&'e str>, &'e str, Stamp<'e>)> {
    let kind = ev.kind.as_deref()?;
    let tag = u8::try_from(MEMO_DELTAS.iter().position(|k| *k == kind)?).ok()?;
    let piece = ev.delta.as_deref()?;
    let id = ev.item_id.as_deref();
    let nonce = match &ev.obfuscation {
        None => None,
        Some(Loose::Str(n)) => Some(&**n),
        Some(Loose::Json(_)) => return None,
    };
    let stamp = Stamp {
        nonce,
        seq: ev.sequence_number,
    };
    let mut again = Event::default();
    let facts = (tag, ev.output_index, ev.content_index, None);
    delta_event(&mut again, facts, id, Str(piece.into()));
    stamp_event(&mut again, stamp);
    (again == *ev).then_some(((tag, ev.output_index, ev.content_index), id, piece, stamp))
}

/// Gives `ev` the stamps of a served event.
fn stamp_event<'a>(ev: &mut Event<'a>, stamp: Stamp<'a>) {
    ev.sequence_number = stamp.seq;
    ev.obfuscation = stamp.nonce.map(|n| Loose::Str(n.into()));
}

impl State {
    /// Applies the common event with these facts, item id and string: the
    /// [`delta_event`] the general path decoded, applied as it applies it.
    pub(super) fn apply_common(
        &mut self,
        s: &mut Stream,
        event_name: Option<&str>,
        ((tag, output, content), id): (scan::Facts, Option<&str>),
        piece: &str,
        stamp: Stamp<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let mut ev = Event::default();
        delta_event(&mut ev, (tag, output, content, None), id, Str(piece.into()));
        stamp_event(&mut ev, stamp);
        // A delta's input is never read (no snapshot to check): any text stands for it.
        self.apply_event(s, event_name, &mut ev, true, Input::Text("{}"), None, live)
    }
}

/// What the memo keeps of `template` around its string (for the tests).
#[cfg(test)]
pub(crate) fn memo_parts(template: &str) -> Option<(String, String)> {
    let mut memo = Memo::default();
    scan_text(&mut memo, template, &mut Event::default(), Held(None, &[]));
    memo.parts()
}

/// The memo against the general decode (see [`crate::providers::scan::memo_agrees`]).
#[cfg(test)]
pub(crate) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    let mut memo = Memo::default();
    if !scan_text(&mut memo, template, &mut Event::default(), Held(None, &[])) {
        return Ok(false);
    }
    let mut fast = Event::default();
    if !fill(&memo, text, &mut fast) {
        return Ok(false);
    }
    match serde_json::from_str::<Event<'_>>(text) {
        Ok(general) if general == fast => Ok(true),
        Ok(general) => Err(format!("memo {fast:?}, general path {general:?}")),
        Err(e) => Err(format!("memo {fast:?}, general path refuses: {e}")),
    }
}

/// See [`crate::providers::scan::fast_path_agrees`].
#[cfg(test)]
pub(crate) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    crate::providers::scan::fast_path_agrees(|t, ev| scan_event(t, ev, &mut None, Held(None, &[])), text)
}
