//! Cohere's fast path: the scanner of an event's text and the common events
//! its memo serves (see `scan/`). The scanner fills an [`Event`] with exactly
//! what the typed decode gives, or gives up: a `message-start` (its `[]`
//! lists), usage, a member twice, anything [`Scan`] does not certify.

use super::{Call, ContentPart, Delta, Event, Function, Msg};
use crate::providers::json::Str;
#[cfg(test)]
use crate::providers::scan;
use crate::providers::scan::{Facts, Memoized, Scan, Seen};

/// The common events, by the tag of their facts: the event's type, and
/// where its one string is.
const COMMON: [&str; 4] = [
    "tool-call-delta",
    "tool-plan-delta",
    "content-delta",
    "content-delta",
];

/// See [`Memoized::scan`].
fn scan_event<'a>(text: &'a str, ev: &mut Event<'a>) -> Option<Option<(usize, usize)>> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "type" => {
            seen.once(0)?;
            ev.kind = p.opt_str()?;
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
        _ => p.skip(),
    })?;
    p.end()?;
    Some(p.the_hole())
}

fn scan_delta<'a>(p: &mut Scan<'a>, d: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "message" => {
            seen.once(0)?;
            if !p.null()? {
                scan_message(p, d.message.insert(Msg::default()))?;
            }
            Some(())
        }
        "finish_reason" => {
            seen.once(1)?;
            d.finish_reason = p.opt_str()?;
            Some(())
        }
        // Present as `null` is absent; usage is for the general path.
        "usage" => seen.once(2).and_then(|()| p.null()?.then_some(())),
        _ => p.skip(),
    })
}

fn scan_message<'a>(p: &mut Scan<'a>, m: &mut Msg<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        // An object, or `null`; a list (`message-start`'s `[]`) is for the
        // general path.
        "content" => {
            seen.once(0)?;
            if !p.null()? {
                scan_part(p, m.content.0.insert(ContentPart::default()))?;
            }
            Some(())
        }
        "tool_plan" => {
            seen.once(1)?;
            m.tool_plan = p.hole()?;
            Some(())
        }
        "tool_calls" => {
            seen.once(2)?;
            if !p.null()? {
                scan_call(p, m.tool_calls.0.insert(Call::default()))?;
            }
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_part<'a>(p: &mut Scan<'a>, c: &mut ContentPart<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "type" => (0, &mut c.kind),
            "text" => (1, &mut c.text),
            "thinking" => (2, &mut c.thinking),
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = if n == 0 { p.opt_str()? } else { p.hole()? };
        Some(())
    })
}

fn scan_call<'a>(p: &mut Scan<'a>, c: &mut Call<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| match key {
        "id" => {
            seen.once(0)?;
            c.id = p.opt_str()?;
            Some(())
        }
        "function" => {
            seen.once(1)?;
            if !p.null()? {
                scan_function(p, c.function.insert(Function::default()))?;
            }
            Some(())
        }
        _ => p.skip(),
    })
}

fn scan_function<'a>(p: &mut Scan<'a>, f: &mut Function<'a>) -> Option<()> {
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "name" => (0, &mut f.name),
            "arguments" => (1, &mut f.arguments),
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = if n == 1 { p.hole()? } else { p.opt_str()? };
        Some(())
    })
}

/// Makes `ev` (fresh) the common event of these facts: a `tool-call-delta`
/// with one argument fragment, a `tool-plan-delta` with one piece of the
/// plan, or a `content-delta` with one piece of text or of thinking; `piece`
/// is its string, and nothing else is in it.
pub(super) fn delta_event<'a>(ev: &mut Event<'a>, (tag, index, _): Facts, piece: Str<'a>) {
    ev.kind = COMMON.get(usize::from(tag)).map(|k| Str((*k).into()));
    ev.index = index;
    let m = ev
        .delta
        .insert(Delta::default())
        .message
        .insert(Msg::default());
    match tag {
        0 => {
            let f = m
                .tool_calls
                .0
                .insert(Call::default())
                .function
                .insert(Function::default());
            f.arguments = Some(piece);
        }
        1 => m.tool_plan = Some(piece),
        2 => m.content.0.insert(ContentPart::default()).text = Some(piece),
        _ => m.content.0.insert(ContentPart::default()).thinking = Some(piece),
    }
}

/// The facts and the string of an event that is exactly a [`delta_event`].
pub(super) fn delta_common<'e>(ev: &'e Event<'_>) -> Option<(Facts, &'e str)> {
    let m = ev.delta.as_ref()?.message.as_ref()?;
    let call = m.tool_calls.0.as_ref().and_then(|c| c.function.as_ref());
    let part = m.content.0.as_ref();
    let (tag, piece) = match ev.kind.as_deref()? {
        "tool-call-delta" => (0, call?.arguments.as_ref()?),
        "tool-plan-delta" => (1, m.tool_plan.as_ref()?),
        "content-delta" => match (part?.text.as_ref(), part?.thinking.as_ref()) {
            (Some(t), None) => (2, t),
            (None, Some(t)) => (3, t),
            _ => return None,
        },
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
