//! The Interactions API's whole `interaction` (QUIRKS.md Q31) as the events its
//! stream would have sent: `interaction.created`, each step as its start, its
//! deltas and its stop, and `interaction.completed` with the status and usage.
//! The parts of a step are passed on as the body has them (key order kept).
//! The API's other form lists its blocks under `outputs` (Q56): each is the
//! step it stands for (`text` a `model_output` holding it).

#![allow(clippy::wildcard_imports)]

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::providers::body::*;
use crate::providers::json::CompactJson;
use crate::providers::state::Fail;
use crate::providers::{DecodeKind, Input};

#[derive(Deserialize)]
struct InteractionBody<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    steps: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    outputs: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// `{"k": raw, …}` from JSON texts.
fn object(pairs: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (n, (k, v)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String((*k).to_owned()).to_string());
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    out
}

fn event(kind: &str, i: usize, key: &str, raw: &str) -> Made {
    let kind = format!("\"{kind}\"");
    let index = i.to_string();
    Made::Text(object(&[
        ("event_type", &kind),
        ("index", &index),
        (key, raw),
    ]))
}

fn delta(i: usize, pairs: &[(&str, &str)]) -> Made {
    event("step.delta", i, "delta", &object(pairs))
}

fn steps(i: usize, raw: &RawValue, out: &mut Vec<Made>) -> Result<(), Fail> {
    let at = format!("steps[{i}]");
    let fields: BTreeMap<String, &RawValue> = parse_part(raw, &at)?;
    let kind = parse_part::<Typed>(raw, &at)?.kind.unwrap_or_default();
    // The fields a step streams as deltas rather than in its start.
    let streamed: &[&str] = match kind.as_str() {
        "thought" => &["signature", "summary"],
        "model_output" => &["content"],
        "function_call" => &["arguments"],
        k if k.ends_with("_call") => &["arguments"],
        k if k.ends_with("_result") => &["result"],
        _ => &[],
    };
    let head: Vec<(&str, &str)> = fields
        .iter()
        .filter(|(k, _)| !streamed.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.get()))
        .collect();
    out.push(event("step.start", i, "step", &object(&head)));
    let field = |k: &str| fields.get(k).map(|v| v.get()).filter(|v| *v != "null");
    let type_of = format!("\"{kind}\"");
    match kind.as_str() {
        "thought" => {
            if let Some(sig) = field("signature") {
                out.push(delta(i, &[("type", "\"thought_signature\""), ("signature", sig)]));
            }
            if let Some(summary) = fields.get("summary") {
                for item in parse_part::<Vec<&RawValue>>(summary, &format!("{at}.summary"))? {
                    out.push(delta(i, &[("type", "\"thought_summary\""), ("content", item.get())]));
                }
            }
        }
        "model_output" => {
            if let Some(content) = fields.get("content") {
                let at = format!("{at}.content");
                for item in parse_part::<Vec<&RawValue>>(content, &at)? {
                    let parts: BTreeMap<String, &RawValue> = parse_part(item, &at)?;
                    match (parts.get("type").map(|t| t.get()), parts.get("text")) {
                        (Some("\"text\""), Some(t)) => {
                            out.push(delta(i, &[("type", "\"text\""), ("text", t.get())]));
                        }
                        // An image or video is one delta of its own type, as streamed.
                        _ => out.push(event("step.delta", i, "delta", item.get())),
                    }
                }
            }
        }
        "function_call" => {
            if let Some(args) = fields.get("arguments").filter(|a| a.get() != "null") {
                let CompactJson(text) = parse_part(args, &format!("{at}.arguments"))?;
                let text = serde_json::Value::String(text).to_string();
                out.push(delta(i, &[("type", "\"arguments_delta\""), ("arguments", &text)]));
            }
        }
        k if k.ends_with("_call") => {
            if let Some(args) = field("arguments") {
                out.push(delta(i, &[("type", &type_of), ("arguments", args)]));
            }
        }
        k if k.ends_with("_result") => {
            if let Some(result) = field("result") {
                out.push(delta(i, &[("type", &type_of), ("result", result)]));
            }
        }
        _ => {}
    }
    out.push(Made::Text(object(&[
        ("event_type", "\"step.stop\""),
        ("index", &i.to_string()),
    ])));
    Ok(())
}

fn interaction(body: InteractionBody<'_>) -> Result<Vec<Made>, Fail> {
    let mut head: Vec<(&str, &str)> = Vec::new();
    if let Some(id) = body.id {
        head.push(("id", id.get()));
    }
    head.push(("status", "\"in_progress\""));
    let mut out = vec![Made::Text(object(&[
        ("event_type", "\"interaction.created\""),
        ("interaction", &object(&head)),
    ]))];
    let listed = body.steps.unwrap_or_default();
    let outputs = body.outputs.unwrap_or_default();
    if !listed.is_empty() && !outputs.is_empty() {
        return Err(Fail::Bad {
            kind: DecodeKind::BadValue,
            detail: "an interaction with both `steps` and `outputs`: which lists its blocks \
                     cannot be told"
                .to_owned(),
        });
    }
    for (i, step) in listed.into_iter().enumerate() {
        steps(i, step, &mut out)?;
    }
    for (i, output) in outputs.into_iter().enumerate() {
        let at = format!("outputs[{i}]");
        let kind = parse_part::<Typed>(output, &at)?.kind.unwrap_or_default();
        if kind == "text" {
            // A text block is the `model_output` step holding it.
            let step = object(&[("type", "\"model_output\""), ("content", &format!("[{}]", output.get()))]);
            let raw: Box<RawValue> = serde_json::from_str(&step).map_err(|e| Fail::Bad {
                kind: DecodeKind::BadValue,
                detail: format!("{at}: {e}"),
            })?;
            steps(i, &raw, &mut out)?;
        } else {
            steps(i, output, &mut out)?;
        }
    }
    let mut end: Vec<(&str, &str)> = Vec::new();
    if let Some(id) = body.id {
        end.push(("id", id.get()));
    }
    if let Some(status) = body.status {
        end.push(("status", status.get()));
    }
    if let Some(usage) = body.usage {
        end.push(("usage", usage.get()));
    }
    out.push(Made::Text(object(&[
        ("event_type", "\"interaction.completed\""),
        ("interaction", &object(&end)),
    ])));
    Ok(out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    interaction(Input::Json(body).parse()?)
}
