//! The opt-in split of several complete JSON objects under one call (Q40,
//! `AssemblerLimits::split_concatenated`): a call whose finished input is two
//! or more complete JSON objects one after another becomes one call per object.

use serde::de::IgnoredAny;

use super::state::Choice;
use super::{Note, NoteKind, ToolUse};
use crate::blocks::FUNCTION;

/// The objects of `input` when it is two or more complete JSON objects, one
/// after another (whitespace between and around them allowed), each as its
/// text; `None` for anything else (one value, a value that is not an object,
/// trailing text, a cut value).
pub(crate) fn concatenated_objects(input: &str) -> Option<Vec<&str>> {
    let mut values = serde_json::Deserializer::from_str(input).into_iter::<IgnoredAny>();
    let mut pieces = Vec::new();
    let mut start = 0;
    while let Some(next) = values.next() {
        next.ok()?;
        let end = values.byte_offset();
        let piece = input.get(start..end)?.trim();
        if !piece.starts_with('{') {
            return None;
        }
        pieces.push(piece);
        start = end;
    }
    // The stream stops at the end of the input only when every byte was read.
    if !input.get(start..)?.trim().is_empty() || pieces.len() < 2 {
        return None;
    }
    Some(pieces)
}

/// The calls `t` stands for: itself, or (split on, in a message that ended
/// normally, a finished client JSON call holding several objects) one call per object, each with an id derived
/// from the one sent (`<id>_1`, `<id>_2`, … skipping ids the choice has),
/// minted and naming the sent one, with a note saying so.
pub(crate) fn split_call(
    ch: &Choice,
    c: i64,
    t: ToolUse,
    event: u64,
    notes: &mut Vec<Note>,
) -> Vec<ToolUse> {
    let splittable = t.finished && !t.server_side && t.block.kind == FUNCTION;
    let Some(pieces) = splittable
        .then(|| concatenated_objects(&t.block.input))
        .flatten()
    else {
        return vec![t];
    };
    let sent = t.block.id.clone();
    let mut n = 0_usize;
    let mut ids = Vec::with_capacity(pieces.len());
    let calls = pieces
        .iter()
        .map(|piece| {
            let id = loop {
                n += 1;
                let candidate = format!("{sent}_{n}");
                if !ch.by_id.contains_key(&candidate) {
                    break candidate;
                }
            };
            ids.push(id.clone());
            let mut part = t.clone();
            part.block.id = id;
            (*piece).clone_into(&mut part.block.input);
            part.id_minted = true;
            part.sent_id = Some(sent.clone());
            part
        })
        .collect();
    notes.push(Note {
        kind: NoteKind::ConcatenatedSplit,
        choice: c,
        call: Some(t.index),
        event,
        message: format!(
            "call {sent} held {} complete JSON objects one after another; split into the calls \
             {} (split_concatenated)",
            ids.len(),
            ids.join(", ")
        ),
    });
    calls
}

#[cfg(test)]
mod tests {
    use super::concatenated_objects;

    #[test]
    fn only_two_or_more_whole_objects_are_split() {
        assert_eq!(
            concatenated_objects(r#"{"q":"A"}{"q":"B"}"#),
            Some(vec![r#"{"q":"A"}"#, r#"{"q":"B"}"#])
        );
        assert_eq!(
            concatenated_objects(" {\"q\":1}\n {\"q\":[2]} "),
            Some(vec![r#"{"q":1}"#, r#"{"q":[2]}"#])
        );
        for other in [
            r#"{"q":"A"}"#,
            r#"{"q":"A"}[1]"#,
            r#"{"q":"A"} x"#,
            r#"{"q":"A"}{"q":"#,
            "",
            "1 2",
            r#"{"q":"A"}}"#,
        ] {
            assert_eq!(concatenated_objects(other), None, "{other}");
        }
    }
}
