//! Room made at once for what a whole body holds: its reader counts the calls
//! and blocks of its messages before it applies them, and each choice made
//! meanwhile reserves that many slots at once instead of growing them one by
//! one (`push_small` in `state.rs`). Only capacity: nothing a message holds or
//! says changes, and the room is never more than the limits allow. (A module
//! of `state.rs`, whose choices it makes.)

use super::Choice;
use crate::providers::AssemblerLimits;

/// Slots a choice made while a whole body is applied reserves at once
/// (`Stream::room`; none outside a body).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Room {
    /// Calls of one message.
    pub(crate) calls: usize,
    /// Blocks of one message (its calls, text, thinking, refusal, plan).
    pub(crate) blocks: usize,
}

impl Room {
    /// A new choice with this room, bounded by `limits`.
    pub(crate) fn choice(self, limits: &AssemblerLimits) -> Choice {
        let mut ch = Choice::new(limits);
        ch.calls.reserve_exact(self.calls.min(limits.max_calls));
        ch.segments
            .reserve_exact(self.blocks.min(limits.max_blocks));
        ch
    }
}

#[cfg(test)]
mod tests {
    use crate::providers::{Assembler, AssemblerLimits, Dialect};

    /// `n` calls as `make` writes the one at each position.
    fn calls(n: usize, make: impl Fn(usize) -> String) -> String {
        (0..n).map(make).collect::<Vec<_>>().join(",")
    }

    /// The capacity of choice `c`'s calls and blocks after `body` was fed
    /// (and whether the body was taken), and whether room is still asked.
    fn fed(d: Dialect, limits: AssemblerLimits, body: &str, c: i64) -> (bool, usize, usize, bool) {
        let mut a = Assembler::new(Some(d), limits);
        let taken = a.feed_text(None, body, None).is_ok();
        let ch = a.stream.choices.get(&c).expect("the body's message");
        let left = a.stream.room.calls != 0 || a.stream.room.blocks != 0;
        (taken, ch.calls.capacity(), ch.segments.capacity(), left)
    }

    /// A body's message is made with room for its three calls at once (where
    /// growing slot by slot leaves room for four), no more than the limits
    /// allow, and no room is asked of choices made after the body.
    #[test]
    fn a_body_makes_room_for_its_calls_at_once() {
        let chat = |n| {
            let call = |i| {
                format!(
                    r#"{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{\"a\":{i}}}"}}}}"#
                )
            };
            format!(
                r#"{{"object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","tool_calls":[{}]}},"finish_reason":"tool_calls"}}]}}"#,
                calls(n, call)
            )
        };
        let cohere = calls(3, |i| {
            format!(
                r#"{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}"#
            )
        });
        let cohere = format!(
            r#"{{"id":"x","finish_reason":"TOOL_CALL","message":{{"role":"assistant","tool_plan":"p","tool_calls":[{cohere}]}}}}"#
        );
        let responses = calls(3, |i| {
            format!(
                r#"{{"type":"function_call","id":"fc{i}","call_id":"c{i}","name":"f","arguments":"{{}}"}}"#
            )
        });
        let responses = format!(
            r#"{{"id":"r","object":"response","status":"completed","model":"m","output":[{responses}]}}"#
        );
        let usual = AssemblerLimits::default();
        let chat_room = fed(Dialect::OpenAiChat, usual, &chat(3), 0);
        assert_eq!(chat_room, (true, 3, 3, false));
        assert_eq!(fed(Dialect::Cohere, usual, &cohere, 0).1, 3);
        assert_eq!(fed(Dialect::OpenAiResponses, usual, &responses, 0).1, 3);
        // Five calls where two are allowed: the body is refused, and the room
        // made was what the limit allows.
        let two = AssemblerLimits {
            max_calls: 2,
            max_blocks: 2,
            ..usual
        };
        let (taken, calls, blocks, left) = fed(Dialect::OpenAiChat, two, &chat(5), 0);
        assert!(!taken && calls <= 2 && blocks <= 2 && !left);
    }
}
