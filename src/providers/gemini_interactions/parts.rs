//! The parts of the Interactions adapter that read blocks rather than apply
//! them: the API's other form (Q56) as the steps it stands for, the text of
//! content items, and the type of a step or delta this version does not read
//! (Q29).

use serde::Deserialize;
use serde_json::Value;

use super::wire::{Item, Step};
use super::{C, HANDLED, SERVER_CALLS, SERVER_RESULTS};
use crate::providers::error::DecodeKind;
use crate::providers::json::{text, Str};
use crate::providers::state::{Fail, Stream, R};
use crate::providers::Input;

/// The id and name a whole `function_call` delta (Q56) adds to call `key`:
/// what the call has already must be what the delta says (it is not a
/// fragment to append), and is not added again; another id or name is
/// refused, naming the step.
pub(super) fn whole_names<'d>(
    s: &mut Stream,
    i: i64,
    key: i64,
    id: &'d str,
    name: &'d str,
) -> R<(&'d str, &'d str)> {
    let Some(call) = s.existing(C).and_then(|ch| ch.tools.get(key)) else {
        return Ok((id, name));
    };
    let mut out = [id, name];
    for (sent, (had, what)) in out
        .iter_mut()
        .zip([(&call.id, "id"), (&call.name, "name")])
    {
        if sent.is_empty() || had.is_empty() {
            continue;
        }
        if *sent != had.as_str() {
            return Err(Fail::Bad {
                kind: DecodeKind::BadValue,
                detail: format!(
                    "step {i}: a function_call delta gives the {what} {sent:?}, and the call \
                     started as {had:?}"
                ),
            });
        }
        *sent = "";
    }
    let [id, name] = out;
    Ok((id, name))
}

/// A block of the other form (Q56) as the step it is: `text` is a
/// `model_output` holding it; the other types are the steps' own.
pub(super) fn as_step(mut block: Step<'_>) -> Step<'_> {
    if &*block.kind == "text" {
        block.kind = Str("model_output".into());
        let text = block.text.take().filter(|t| !t.is_empty());
        block.content = Some(
            text.map(|t| Item {
                kind: Some(Str("text".into())),
                text: Some(t),
            })
            .into_iter()
            .collect(),
        );
    }
    block
}

pub(super) fn is_text(item: &Item<'_>) -> bool {
    matches!(item.kind.as_deref(), None | Some("text"))
}

/// The text of the text items, in order.
pub(super) fn joined(items: Option<&[Item<'_>]>) -> String {
    items
        .unwrap_or_default()
        .iter()
        .filter(|it| is_text(it))
        .map(|it| text(&it.text))
        .collect()
}

/// The type of the step or delta an unreadable event carries, when it is one
/// this version does not read (cold path: its fields may be of any type, Q29),
/// or the type of an event it does not read at all.
pub(super) fn unknown_part(input: Input<'_>, event_name: Option<&str>) -> Option<String> {
    #[derive(Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Probe {
        event_type: Option<Value>,
        step: Option<Typed>,
        content: Option<Typed>,
        delta: Option<Typed>,
    }
    const STEPS: [&str; 4] = ["thought", "model_output", "function_call", "text"];
    const DELTAS: [&str; 5] = [
        "text",
        "thought_summary",
        "thought_signature",
        "arguments_delta",
        "function_call",
    ];
    let probe: Probe = input.parse().ok()?;
    let kind = match &probe.event_type {
        Some(Value::String(k)) => k.clone(),
        None => event_name?.to_owned(),
        Some(_) => return None,
    };
    if !HANDLED.contains(&kind.as_str()) {
        return Some(kind);
    }
    let known = |t: &str, own: &[&str]| {
        own.contains(&t) || SERVER_CALLS.contains(&t) || SERVER_RESULTS.contains(&t)
    };
    let of = |t: Option<Typed>| t.and_then(|t| t.kind).and_then(|k| k.as_str().map(str::to_owned));
    match kind.as_str() {
        "step.start" => of(probe.step)
            .filter(|t| !known(t, &STEPS))
            .map(|t| format!("step.start:{t}")),
        "content.start" => of(probe.content)
            .filter(|t| !known(t, &STEPS))
            .map(|t| format!("step.start:{t}")),
        "step.delta" | "content.delta" => of(probe.delta)
            .filter(|t| !known(t, &DELTAS))
            .map(|t| format!("step.delta:{t}")),
        _ => None,
    }
}
