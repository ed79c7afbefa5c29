//! The guard (`_toolstitch::guard`): whatever the bytes, however they are cut,
//! what it releases is a prefix of the body, the same for every cut, the whole
//! body when it passes, and never the completion of a call the check refuses.
//!
//! Input: byte 0's low bits pick the dialect (0: `auto`), byte 1 and bytes 2-3
//! the cuts ([`toolstitch_fuzz::cuts::pieces`]); the rest is the body.
#![no_main]

use _toolstitch::framing::FramingLimits;
use _toolstitch::guard::{CallCheck, Encoding, Guard, GuardLimits, Outcome};
use _toolstitch::providers::{
    Assembler, AssemblerLimits, BytesAssembler, Dialect, LiveEvent, ToolUse,
};
use libfuzzer_sys::fuzz_target;
use toolstitch_fuzz::cuts::pieces;

/// Refuses a call named with an `x`, or whose input is not one JSON object.
struct Check;

fn passes(name: &str, input: &str) -> bool {
    let input = if input.is_empty() { "{}" } else { input };
    !name.is_empty()
        && !name.contains('x')
        && matches!(
            _toolstitch::validate::parse_strict(input),
            Ok(serde_json::Value::Object(_))
        )
}

impl CallCheck for Check {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        if passes(&call.block.name, &call.block.input) {
            Ok(())
        } else {
            Err("refused".to_owned())
        }
    }
}

fn new_guard(dialect: Option<Dialect>) -> Guard {
    let limits = AssemblerLimits {
        max_calls: 16,
        max_input_bytes: 4096,
        max_total_bytes: 1 << 16,
        ..AssemblerLimits::default()
    };
    let framing = FramingLimits {
        max_line_bytes: 4096,
        max_event_bytes: 4096,
        max_frame_bytes: 8192,
    };
    Guard::new(dialect, limits, framing, GuardLimits::default(), None, Encoding::Identity, None)
}

/// Feeds `parts`: the bytes released, and whether the guard blocked.
fn fed(g: &mut Guard, parts: &[&[u8]]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    for part in parts {
        let step = g.feed(part, &mut Check);
        out.extend_from_slice(&step.forward);
        if step.blocked.is_some() {
            return (out, true);
        }
    }
    (out, false)
}

fn guarded(dialect: Option<Dialect>, parts: &[&[u8]]) -> (Vec<u8>, Outcome) {
    let mut g = new_guard(dialect);
    let (mut out, blocked) = fed(&mut g, parts);
    if blocked {
        assert!(g.feed(b"data: {}\n\n", &mut Check).forward.is_empty());
        return (out, g.outcome());
    }
    let step = g.finish(&mut Check);
    out.extend_from_slice(&step.forward);
    (out, g.outcome())
}

/// The same reads, then the client leaves instead of the body ending.
fn left(dialect: Option<Dialect>, parts: &[&[u8]]) -> (Vec<u8>, Outcome) {
    let mut g = new_guard(dialect);
    let (out, blocked) = fed(&mut g, parts);
    if blocked {
        return (out, g.outcome());
    }
    let outcome = g.client_left(&mut Check);
    // Given or not, the verdict stands: a later finish releases nothing new.
    let after = g.finish(&mut Check);
    if outcome != Outcome::Open {
        assert!(after.forward.is_empty(), "a settled response released more");
        assert_eq!(g.outcome(), outcome);
    }
    (out, outcome)
}

fuzz_target!(|data: &[u8]| {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let dialect = match usize::from(byte(0) % 10) {
        0 => None,
        n => Dialect::ALL.get(n - 1).copied(),
    };
    let body = data.get(4..).unwrap_or_default();
    let (whole, outcome) = guarded(dialect, &[body]);
    let cut = pieces(body, byte(1), u16::from_le_bytes([byte(2), byte(3)]));
    let (again, again_outcome) = guarded(dialect, &cut);
    assert!(body.starts_with(&whole), "released bytes are not a prefix of the body");
    assert_eq!(whole, again, "what is released depends on how reads are cut");
    assert_eq!(outcome, again_outcome);
    if outcome == Outcome::Passed {
        assert_eq!(whole, body, "a passed body is released whole");
    }
    // A client that left after the last read: no verdict, or the one the body's end
    // there gives, with the same bytes released.
    let (gone, gone_outcome) = left(dialect, &cut);
    if gone_outcome == Outcome::Open {
        assert!(again.starts_with(&gone), "a client that left got bytes past the end's");
    } else {
        assert_eq!((gone.as_slice(), gone_outcome), (again.as_slice(), again_outcome));
    }
    // A reader of exactly the released bytes never sees a refused call end.
    let mut reader = BytesAssembler::new(Assembler::new(dialect, AssemblerLimits::default()), FramingLimits::default());
    let mut live = Vec::new();
    let _ = reader.feed_bytes(&whole, Some(&mut live));
    let messages = reader.core().messages();
    let call = |choice: i64, index: i64| {
        messages
            .iter()
            .find(|m| m.choice == choice)
            .and_then(|m| m.tool_uses.iter().find(|t| t.index == index))
            .filter(|t| !t.server_side)
    };
    for ev in &live {
        match ev {
            LiveEvent::ToolCallFinished { choice, index } => {
                if let Some(t) = call(*choice, *index) {
                    assert!(passes(&t.block.name, &t.block.input), "a refused call's end was released: {t:?}");
                }
            }
            LiveEvent::MessageDone { choice, .. } => {
                for t in messages.iter().filter(|m| m.choice == *choice).flat_map(|m| m.tool_uses.iter()) {
                    if !t.server_side {
                        assert!(passes(&t.block.name, &t.block.input), "a message with a refused call ended: {t:?}");
                    }
                }
            }
            _ => {}
        }
    }
});
