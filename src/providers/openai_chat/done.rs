//! How a chat stream ends besides its finish reason: `[DONE]` and what may
//! follow it. Q63: a message whose every chunk gave `finish_reason: ""`
//! (Snowflake Cortex) ends at `[DONE]`, or at the end of a whole body; Q58: a
//! gateway's chunk after `[DONE]` that carries nothing to apply is a note.

use serde_json::{Map, Value};

use crate::providers::state::{EmptyFinish, Live, Stream, R};
use crate::providers::{Input, NoteKind};

/// Q63: `[DONE]` (or a whole body) after a message whose every chunk gave
/// `finish_reason: ""` ends it normally, with a note, when every call's input
/// is a complete JSON value; otherwise it stays not ended (Q5), so not
/// complete.
pub(super) fn empty_finish_throughout(s: &mut Stream, live: &mut Live<'_>) -> R {
    let candidates: Vec<i64> = s
        .choices
        .iter()
        .filter(|(_, ch)| !ch.phase.ended() && ch.empty_finish == EmptyFinish::Throughout)
        .map(|(&c, _)| c)
        .collect();
    for c in candidates {
        let Some(ch) = s.existing(c) else {
            continue;
        };
        let keys: Vec<i64> = ch.tools.iter().map(|(k, _)| k).collect();
        let mut whole = true;
        for key in keys {
            whole &= ch.input_complete(key);
        }
        if !whole {
            continue;
        }
        s.set_finish_reason(c, "")?;
        s.end_normal(c, live)?;
        s.note(
            c,
            NoteKind::EmptyFinishEnded,
            None,
            "every chunk gave finish_reason \"\" and the stream ended whole with every \
             call's input complete JSON: read as a normal end"
                .to_owned(),
        );
    }
    Ok(())
}

/// Q58: a chunk after `[DONE]` with no choices (`{"choices":[],"cost":"0"}`,
/// usage, metadata): nothing in it changes a message; what it holds, for the
/// note. A choice of any kind, or an error, is not content-free (Q24).
pub(super) fn content_free(input: Input<'_>) -> Option<String> {
    let obj: Map<String, Value> = input.parse().ok()?;
    let no_choices = match obj.get("choices") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if !no_choices || obj.contains_key("error") {
        return None;
    }
    let keys: Vec<&str> = obj.keys().map(String::as_str).take(8).collect();
    Some(format!(
        "a chunk with no choices came after [DONE] (members: {}) and was not applied",
        keys.join(", ")
    ))
}
