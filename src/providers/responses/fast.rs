//! The fast path of a Responses event: the deltas that make up nearly all of
//! a stream (a call's argument or input fragments, text, refusal and
//! reasoning text), read by the scanner of `providers/scan` in one pass.

use super::wire::Event;
use crate::providers::scan::{Scan, Seen};

/// The event types the fast path serves: the deltas among those `apply`
/// reads (`HANDLED`), and the `.done` events of a call's arguments or input
/// (the same members, the whole text in one). Any other type, or none, is
/// for the general path.
const SERVED: [&str; 8] = [
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.custom_tool_call_input.delta",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
];

/// Fills `ev` (fresh) with exactly the [`Event`] the typed decode gives, or
/// returns `None` for the general path: an event of a type not in
/// [`SERVED`] (or of no type), an output item, a response, an error's code
/// or message that is not `null`, anything [`Scan`] does not certify.
///
/// What it serves is what `parse_typed` gives (the typed decode succeeds),
/// and then the event's own `type` is the one `apply` reads: the SSE event
/// name is read only for an event that names no type, which is never served.
pub(super) fn scan_event<'a>(text: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let mut p = Scan::new(text);
    let mut seen = Seen::default();
    p.object(|p, key| {
        let (n, field) = match key {
            "type" => (0, &mut ev.kind),
            "item_id" => (1, &mut ev.item_id),
            "delta" => (2, &mut ev.delta),
            "arguments" => (3, &mut ev.arguments),
            "input" => (4, &mut ev.input),
            "name" => (5, &mut ev.name),
            "obfuscation" => (14, &mut ev.obfuscation),
            "sequence_number" => {
                seen.once(6)?;
                ev.sequence_number = p.opt_u64()?;
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
            "item" => return seen.once(10).and_then(|()| p.null()?.then_some(())),
            "response" => return seen.once(11).and_then(|()| p.null()?.then_some(())),
            "code" => return seen.once(12).and_then(|()| p.null()?.then_some(())),
            "message" => return seen.once(13).and_then(|()| p.null()?.then_some(())),
            _ => return p.skip(),
        };
        seen.once(n)?;
        *field = p.opt_str()?;
        Some(())
    })?;
    p.end()?;
    SERVED.contains(&ev.kind.as_deref()?).then_some(())
}

/// See [`crate::providers::scan::fast_path_agrees`].
#[cfg(test)]
pub(crate) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    crate::providers::scan::fast_path_agrees(scan_event, text)
}
