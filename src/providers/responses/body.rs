//! The OpenAI Responses `response` body (QUIRKS.md Q31) as the events its stream would have sent.

#![allow(clippy::wildcard_imports)]

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::providers::body::*;
use crate::providers::state::Fail;
use crate::providers::{DecodeKind, Input};

#[derive(Deserialize)]
struct ResponsesBody<'a> {
    #[serde(borrow, default)]
    output: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    status: Option<Value>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(borrow, default)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    summary: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    refusal: Option<Value>,
    #[serde(borrow, default)]
    annotations: Option<Vec<&'a RawValue>>,
}

/// Numbers the events of one response, as `sequence_number` does.
struct Sequence {
    out: Vec<Made>,
    next: u64,
}

/// The four events a stream sends for one part of a Responses reasoning item
/// (its summary or its text): the part added, its one delta, its text done, the
/// part done as the body has it.
struct ReasoningPart {
    index_key: &'static str,
    part_type: &'static str,
    added: &'static str,
    delta: &'static str,
    done: &'static str,
    part_done: &'static str,
}

impl ReasoningPart {
    fn push(
        &self,
        seq: &mut Sequence,
        at_item: &dyn Fn(Value) -> Value,
        index: usize,
        text: Value,
        raw: &RawValue,
    ) {
        let key = self.index_key;
        let part = json!({ key: index, "part": { "type": self.part_type, "text": "" } });
        seq.push(self.added, at_item(part));
        seq.push(self.delta, at_item(json!({ key: index, "delta": text })));
        seq.push(self.done, at_item(json!({ key: index, "text": text })));
        seq.push_raw(self.part_done, at_item(json!({ key: index })), "part", raw);
    }
}

impl Sequence {
    fn push(&mut self, kind: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("type".to_owned(), json!(kind));
        m.insert("sequence_number".to_owned(), json!(self.next));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        self.out.push(Made::Value(Value::Object(m)));
        self.next += 1;
    }

    fn push_raw(&mut self, kind: &str, fields: Value, key: &str, raw: &RawValue) {
        let mut head = json!({ "type": kind, "sequence_number": self.next });
        if let (Value::Object(h), Value::Object(f)) = (&mut head, fields) {
            h.extend(f);
        }
        self.out.push(with_raw(&head, key, raw));
        self.next += 1;
    }
}

/// The fields of an item that identify it, for its `added` event (the rest
/// streams in, or comes with `done`).
const ITEM_IDENTITY: [&str; 6] = ["id", "type", "role", "call_id", "name", "server_label"];

fn responses(body_text: &[u8], body: ResponsesBody<'_>) -> Result<Vec<Made>, Fail> {
    let whole: &RawValue = serde_json::from_slice(body_text).map_err(|e| Fail::Bad {
        kind: DecodeKind::MalformedJson,
        detail: e.to_string(),
    })?;
    let mut start: Map<String, Value> =
        serde_json::from_slice(body_text).map_err(|e| Fail::Bad {
            kind: DecodeKind::WrongType,
            detail: e.to_string(),
        })?;
    for (k, v) in [
        ("status", json!("in_progress")),
        ("output", json!([])),
        ("usage", Value::Null),
        ("incomplete_details", Value::Null),
        ("error", Value::Null),
    ] {
        start.insert(k.to_owned(), v);
    }
    let mut seq = Sequence {
        out: Vec::new(),
        next: 0,
    };
    seq.push("response.created", json!({ "response": start.clone() }));
    seq.push("response.in_progress", json!({ "response": start }));
    for (oi, raw) in body.output.unwrap_or_default().into_iter().enumerate() {
        let at = format!("output[{oi}]");
        let item: Item<'_> = parse_part(raw, &at)?;
        let full: Map<String, Value> = parse_part(raw, &at)?;
        let mut added: Map<String, Value> = full
            .iter()
            .filter(|(k, _)| ITEM_IDENTITY.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        added.insert("status".to_owned(), json!("in_progress"));
        let id = item.id.clone().unwrap_or(Value::Null);
        let kind = item.kind.as_deref().unwrap_or_default();
        match kind {
            "message" => {
                added.insert("content".to_owned(), json!([]));
            }
            "function_call" => {
                added.insert("arguments".to_owned(), json!(""));
            }
            "custom_tool_call" => {
                added.insert("input".to_owned(), json!(""));
            }
            "reasoning" => {
                added.insert("summary".to_owned(), json!([]));
                added.remove("status");
            }
            _ => {}
        }
        seq.push(
            "response.output_item.added",
            json!({ "output_index": oi, "item": added }),
        );
        let at_item = |extra: Value| {
            let mut m = json!({ "item_id": id, "output_index": oi });
            if let (Value::Object(m), Value::Object(e)) = (&mut m, extra) {
                m.extend(e);
            }
            m
        };
        match kind {
            "message" => {
                for (ci, part_raw) in item.content.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(part_raw, &format!("{at}.content[{ci}]"))?;
                    let ptype = part.kind.as_deref().unwrap_or_default();
                    let empty = match ptype {
                        "output_text" => {
                            json!({ "type": "output_text", "text": "", "annotations": [] })
                        }
                        "refusal" => json!({ "type": "refusal", "refusal": "" }),
                        _ => Value::Null,
                    };
                    if empty.is_null() {
                        seq.push_raw(
                            "response.content_part.added",
                            at_item(json!({ "content_index": ci })),
                            "part",
                            part_raw,
                        );
                    } else {
                        seq.push(
                            "response.content_part.added",
                            at_item(json!({ "content_index": ci, "part": empty })),
                        );
                    }
                    match ptype {
                        "output_text" => {
                            let text = part.text.unwrap_or(json!(""));
                            seq.push(
                                "response.output_text.delta",
                                at_item(json!({ "content_index": ci, "delta": text })),
                            );
                            for (ai, a) in
                                part.annotations.unwrap_or_default().into_iter().enumerate()
                            {
                                seq.push_raw(
                                    "response.output_text.annotation.added",
                                    at_item(json!({ "content_index": ci, "annotation_index": ai })),
                                    "annotation",
                                    a,
                                );
                            }
                            seq.push(
                                "response.output_text.done",
                                at_item(json!({ "content_index": ci, "text": text })),
                            );
                        }
                        "refusal" => {
                            let refusal = part.refusal.unwrap_or(json!(""));
                            seq.push(
                                "response.refusal.delta",
                                at_item(json!({ "content_index": ci, "delta": refusal })),
                            );
                            seq.push(
                                "response.refusal.done",
                                at_item(json!({ "content_index": ci, "refusal": refusal })),
                            );
                        }
                        _ => {}
                    }
                    seq.push_raw(
                        "response.content_part.done",
                        at_item(json!({ "content_index": ci })),
                        "part",
                        part_raw,
                    );
                }
            }
            "function_call" => {
                let args = item.arguments.unwrap_or(json!(""));
                seq.push(
                    "response.function_call_arguments.delta",
                    at_item(json!({ "delta": args })),
                );
                let mut done = at_item(json!({ "arguments": args }));
                if let (Some(name), Value::Object(m)) = (item.name, &mut done) {
                    m.insert("name".to_owned(), name);
                }
                seq.push("response.function_call_arguments.done", done);
            }
            "custom_tool_call" => {
                let input = item.input.unwrap_or(json!(""));
                seq.push(
                    "response.custom_tool_call_input.delta",
                    at_item(json!({ "delta": input })),
                );
                seq.push(
                    "response.custom_tool_call_input.done",
                    at_item(json!({ "input": input })),
                );
            }
            "reasoning" => {
                for (si, s_raw) in item.summary.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(s_raw, &format!("{at}.summary[{si}]"))?;
                    let events = ReasoningPart {
                        index_key: "summary_index",
                        part_type: "summary_text",
                        added: "response.reasoning_summary_part.added",
                        delta: "response.reasoning_summary_text.delta",
                        done: "response.reasoning_summary_text.done",
                        part_done: "response.reasoning_summary_part.done",
                    };
                    events.push(
                        &mut seq,
                        &at_item,
                        si,
                        part.text.unwrap_or(json!("")),
                        s_raw,
                    );
                }
                for (ci, c_raw) in item.content.unwrap_or_default().into_iter().enumerate() {
                    let part: Part<'_> = parse_part(c_raw, &format!("{at}.content[{ci}]"))?;
                    let events = ReasoningPart {
                        index_key: "content_index",
                        part_type: "reasoning_text",
                        added: "response.content_part.added",
                        delta: "response.reasoning_text.delta",
                        done: "response.reasoning_text.done",
                        part_done: "response.content_part.done",
                    };
                    events.push(
                        &mut seq,
                        &at_item,
                        ci,
                        part.text.unwrap_or(json!("")),
                        c_raw,
                    );
                }
            }
            _ => {}
        }
        seq.push_raw(
            "response.output_item.done",
            json!({ "output_index": oi }),
            "item",
            raw,
        );
    }
    // A response still queued or in progress (a background poll) has no end.
    let end = match body.status.as_ref().and_then(Value::as_str) {
        Some("completed") => Some("response.completed"),
        Some("failed") => Some("response.failed"),
        Some("in_progress" | "queued") | None => None,
        Some(_) => Some("response.incomplete"),
    };
    if let Some(kind) = end {
        seq.push_raw(kind, json!({}), "response", whole);
    }
    Ok(seq.out)
}

/// The events a body stands for, in protocol order.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Made>, Fail> {
    responses(body, Input::Json(body).parse()?)
}
