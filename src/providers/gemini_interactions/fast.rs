//! The Interactions API's fast path: the scanner of an event's text and the
//! common events its memo serves (see `scan/`). The scanner fills an
//! [`Event`] with exactly what the typed decode gives, or gives up: a step's
//! start, the interaction's events, an error, a delta with content, a result
//! or object arguments, a member twice, anything [`Scan`] does not certify.

use super::wire::{Delta, Event};
use crate::providers::json::{Str, TextOrObject};
#[cfg(test)]
use crate::providers::scan;
use crate::providers::scan::{Facts, Memoized, Scan, Seen};

/// The deltas of the common events, by the tag of their facts.
const COMMON: [&str; 2] = ["text", "arguments_delta"];

/// See [`Memoized::scan`].
fn scan_event<'a>(text: &'a str, ev: &mut Event<'a>) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "event_type" => {
            seen.once(0)?;
            ev.event_type = p.opt_str()?;
            Some(())
        }
        "index" => {
            seen.once(1)?;
            ev.index = p.opt_index()?;
            Some(())
        }
        "delta" => {
            seen.once(2)?;
            if !p.null()? {
                scan_delta(p, ev.delta.insert(Delta::default()))?;
            }
            Some(())
        }
        // Present as `null` is absent; anything else is for the general path.
        "step" => seen.once(3).and_then(|()| p.null()?.then_some(())),
        "interaction" => seen.once(4).and_then(|()| p.null()?.then_some(())),
        "error" => seen.once(5).and_then(|()| p.null()?.then_some(())),
        "content" => seen.once(6).and_then(|()| p.null()?.then_some(())),
        _ => p.skip(),
    })?;
    p.end()?;
    Some(p.the_hole())
}

fn scan_delta<'a>(p: &mut Scan<'a>, d: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "type" => (0, &mut d.kind),
            "text" => (1, &mut d.text),
            "signature" => (2, &mut d.signature),
            "id" => (3, &mut d.id),
            "call_id" => (4, &mut d.call_id),
            "name" => (9, &mut d.name),
            // Text arguments (an object is a built-in call's: the general path).
            "arguments" => {
                seen.once(5)?;
                d.arguments = p.hole()?.map(TextOrObject::Text);
                return Some(());
            }
            "content" | "result" | "is_error" => {
                let n = match key {
                    "content" => 6,
                    "result" => 7,
                    _ => 8,
                };
                return seen.once(n).and_then(|()| p.null()?.then_some(()));
            }
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = if n == 1 { p.hole()? } else { p.opt_str()? };
        Some(())
    })
}

/// Makes `ev` (fresh) the common event of these facts: a `step.delta` of
/// one piece of text, or of one fragment of a call's arguments; `piece` is
/// its string, and nothing else is in it.
fn delta_event<'a>(ev: &mut Event<'a>, (tag, index, _): Facts, piece: Str<'a>) {
    ev.event_type = Some(Str("step.delta".into()));
    ev.index = index;
    let d = ev.delta.insert(Delta::default());
    d.kind = COMMON.get(usize::from(tag)).map(|k| Str((*k).into()));
    if tag == 0 {
        d.text = Some(piece);
    } else {
        d.arguments = Some(TextOrObject::Text(piece));
    }
}

/// The facts and the string of an event that is exactly a [`delta_event`].
fn delta_common<'e>(ev: &'e Event<'_>) -> Option<(Facts, &'e str)> {
    let d = ev.delta.as_ref()?;
    let (tag, piece) = match (d.kind.as_deref()?, &d.text, &d.arguments) {
        ("text", Some(t), None) => (0, t),
        ("arguments_delta", None, Some(TextOrObject::Text(t))) => (1, t),
        _ => return None,
    };
    let facts = (tag, ev.index, None);
    let mut again = Event::default();
    delta_event(&mut again, facts, piece.clone());
    (again == *ev).then_some((facts, &**piece))
}

impl<'a> Memoized<'a> for Event<'a> {
    fn scan(&mut self, text: &'a str) -> Option<Option<(usize, usize)>> {
        scan_event(text, self)
    }
    fn facts(&self) -> Option<Facts> {
        delta_common(self).map(|(facts, _)| facts)
    }
    fn fill(&mut self, facts: Facts, piece: Str<'a>) {
        delta_event(self, facts, piece);
    }
}

/// See [`scan::fast_path_agrees`].
#[cfg(test)]
pub(in crate::providers) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    scan::fast_path_agrees(scan_event, text)
}

/// See [`scan::memo_parts`].
#[cfg(test)]
pub(in crate::providers) fn memo_parts(template: &str) -> Option<(String, String)> {
    scan::memo_parts::<Event<'_>>(template)
}

/// See [`scan::memo_agrees`].
#[cfg(test)]
pub(in crate::providers) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    scan::memo_agrees::<Event<'_>>(template, text)
}
