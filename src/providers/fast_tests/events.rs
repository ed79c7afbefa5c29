//! Generated events of the two dialects with fast paths: single events with
//! every field the scanners read, and well-formed streams of them.

#![allow(clippy::wildcard_imports)]

use super::*;

pub(super) fn chat_call(r: &mut Rng) -> J {
    let function = obj_field(r, |r| {
        let v = vec![(60, "name", str_field(r)), (90, "arguments", str_field(r))];
        members(r, v)
    });
    let custom = obj_field(r, |r| {
        let v = vec![(50, "name", str_field(r)), (50, "input", str_field(r))];
        members(r, v)
    });
    let v = vec![
        (95, "index", index(r)),
        (40, "id", str_field(r)),
        (40, "type", J::Str("function".to_owned())),
        (90, "function", function),
        (5, "custom", custom),
    ];
    members(r, v)
}

pub(super) fn chat_delta(r: &mut Rng) -> J {
    let calls = obj_field(r, |r| {
        let n = if r.chance(80) { 1 } else { r.below(4) };
        J::Arr((0..n).map(|_| chat_call(r)).collect())
    });
    let function_call = obj_field(r, |r| {
        let v = vec![(50, "name", str_field(r)), (50, "arguments", str_field(r))];
        members(r, v)
    });
    let executed = obj_field(r, |r| {
        let v = vec![
            (90, "index", index(r)),
            (90, "type", J::Str("search".to_owned())),
            (90, "arguments", str_field(r)),
            (50, "output", str_field(r)),
        ];
        J::Arr(vec![members(r, v)])
    });
    let v = vec![
        (20, "role", J::Str("assistant".to_owned())),
        (50, "content", str_field(r)),
        (10, "refusal", str_field(r)),
        (10, "reasoning_content", str_field(r)),
        (10, "reasoning", str_field(r)),
        (50, "tool_calls", calls),
        (5, "function_call", function_call),
        (5, "executed_tools", executed),
    ];
    members(r, v)
}

pub(super) fn chat_choice(r: &mut Rng) -> J {
    let delta = obj_field(r, chat_delta);
    let finish = if r.chance(70) {
        J::Null
    } else {
        match r.below(4) {
            0 => junk(r, 1),
            _ => J::Str(r.pick(&["stop", "tool_calls", "length", ""]).to_owned()),
        }
    };
    let v = vec![
        (90, "index", index(r)),
        (90, "delta", delta),
        (30, "logprobs", J::Null),
        (80, "finish_reason", finish),
    ];
    members(r, v)
}

pub(super) fn usage(r: &mut Rng) -> J {
    obj_field(r, |r| {
        let v = vec![
            (80, "prompt_tokens", J::Num("12")),
            (80, "completion_tokens", J::Num("7")),
            (30, "output_tokens", J::Num("5")),
        ];
        members(r, v)
    })
}

/// An OpenAI chat chunk of any shape.
pub(super) fn chat_chunk(r: &mut Rng) -> J {
    let choices = obj_field(r, |r| {
        let n = if r.chance(85) { 1 } else { r.below(4) };
        J::Arr((0..n).map(|_| chat_choice(r)).collect())
    });
    let usage = usage(r);
    let x_groq = obj_field(r, |r| {
        let u = usage_value(r);
        members(
            r,
            vec![(50, "id", J::Str("req".to_owned())), (60, "usage", u)],
        )
    });
    let error = obj_field(r, |r| {
        let v = vec![(90, "message", str_field(r))];
        members(r, v)
    });
    let v = vec![
        (50, "id", J::Str("chatcmpl-1".to_owned())),
        (40, "object", J::Str("chat.completion.chunk".to_owned())),
        (30, "created", J::Num("1700000000")),
        (30, "model", J::Str("gpt-4o".to_owned())),
        (95, "choices", choices),
        (15, "usage", usage),
        (5, "x_groq", x_groq),
        (5, "error", error),
    ];
    members(r, v)
}

pub(super) fn usage_value(r: &mut Rng) -> J {
    usage(r)
}

pub(super) fn anthropic_delta(r: &mut Rng) -> J {
    let kind = J::Str(
        r.pick(&[
            "text_delta",
            "input_json_delta",
            "thinking_delta",
            "signature_delta",
            "citations_delta",
        ])
        .to_owned(),
    );
    let v = vec![
        (90, "type", kind),
        (40, "text", str_field(r)),
        (40, "partial_json", str_field(r)),
        (15, "thinking", str_field(r)),
        (10, "signature", str_field(r)),
        (15, "stop_reason", str_field(r)),
        (10, "stop_sequence", J::Null),
    ];
    members(r, v)
}

/// An Anthropic event of any shape.
pub(super) fn anthropic_event(r: &mut Rng) -> J {
    let kind = if r.chance(60) {
        J::Str("content_block_delta".to_owned())
    } else if r.chance(90) {
        J::Str(
            r.pick(&[
                "message_start",
                "content_block_start",
                "content_block_stop",
                "message_delta",
                "message_stop",
                "ping",
                "error",
                "future_event",
            ])
            .to_owned(),
        )
    } else {
        junk(r, 1)
    };
    let delta = obj_field(r, anthropic_delta);
    let block = obj_field(r, |r| {
        let v = vec![
            (
                95,
                "type",
                J::Str(r.pick(&["text", "tool_use", "thinking"]).to_owned()),
            ),
            (40, "text", str_field(r)),
            (40, "id", str_field(r)),
            (40, "name", str_field(r)),
            (40, "input", J::Obj(Vec::new())),
        ];
        members(r, v)
    });
    let usage = usage(r);
    let message = obj_field(r, |r| {
        let u = usage_value(r);
        members(
            r,
            vec![(50, "id", J::Str("msg_1".to_owned())), (60, "usage", u)],
        )
    });
    let error = obj_field(r, |r| {
        let v = vec![
            (60, "type", J::Str("overloaded_error".to_owned())),
            (60, "message", str_field(r)),
        ];
        members(r, v)
    });
    let v = vec![
        (95, "type", kind),
        (85, "index", index(r)),
        (80, "delta", delta),
        (10, "content_block", block),
        (10, "usage", usage),
        (5, "message", message),
        (5, "error", error),
    ];
    members(r, v)
}

/// A well-formed OpenAI chat stream: text, calls with their arguments in
/// fragments, a finish, usage.
pub(super) fn chat_events(r: &mut Rng) -> Vec<(Option<&'static str>, J)> {
    let chunk = |choice: J| {
        obj(vec![
            ("id", s("chatcmpl-1")),
            ("choices", J::Arr(vec![choice])),
        ])
    };
    let choice = |delta: J, finish: J| {
        obj(vec![
            ("index", J::Num("0")),
            ("delta", delta),
            ("finish_reason", finish),
        ])
    };
    let mut out = vec![(
        None,
        chunk(choice(
            obj(vec![("role", s("assistant")), ("content", s(""))]),
            J::Null,
        )),
    )];
    let said = text(r);
    for piece in fragments(r, &said) {
        out.push((
            None,
            chunk(choice(obj(vec![("content", J::Str(piece))]), J::Null)),
        ));
    }
    let calls = r.below(4);
    for i in 0..calls {
        let index = ["0", "1", "2", "3"][i];
        let start = obj(vec![
            ("index", J::Num(index)),
            ("id", J::Str(format!("call_{i}"))),
            ("type", s("function")),
            (
                "function",
                obj(vec![
                    ("name", J::Str(format!("f{i}"))),
                    ("arguments", s("")),
                ]),
            ),
        ]);
        out.push((
            None,
            chunk(choice(
                obj(vec![("tool_calls", J::Arr(vec![start]))]),
                J::Null,
            )),
        ));
        let args = arguments(r);
        for piece in fragments(r, &args) {
            let call = obj(vec![
                ("index", J::Num(index)),
                ("function", obj(vec![("arguments", J::Str(piece))])),
            ]);
            out.push((
                None,
                chunk(choice(
                    obj(vec![("tool_calls", J::Arr(vec![call]))]),
                    J::Null,
                )),
            ));
        }
    }
    let finish = if calls > 0 { "tool_calls" } else { "stop" };
    out.push((None, chunk(choice(obj(Vec::new()), s(finish)))));
    if r.chance(50) {
        out.push((
            None,
            obj(vec![
                ("choices", J::Arr(Vec::new())),
                (
                    "usage",
                    obj(vec![
                        ("prompt_tokens", J::Num("3")),
                        ("completion_tokens", J::Num("9")),
                    ]),
                ),
            ]),
        ));
    }
    out
}

/// A well-formed Anthropic stream: a text block and tool blocks, their deltas
/// in fragments, pings, the message's end.
pub(super) fn anthropic_events(r: &mut Rng) -> Vec<(Option<&'static str>, J)> {
    let usage = |n: &'static str| {
        obj(vec![
            ("input_tokens", J::Num("10")),
            ("output_tokens", J::Num(n)),
        ])
    };
    let mut out = vec![(
        Some("message_start"),
        obj(vec![
            ("type", s("message_start")),
            (
                "message",
                obj(vec![
                    ("id", s("msg_1")),
                    ("role", s("assistant")),
                    ("content", J::Arr(Vec::new())),
                    ("usage", usage("1")),
                ]),
            ),
        ]),
    )];
    let mut block = 0;
    let index = ["0", "1", "2", "3", "4"];
    let delta = |i: usize, d: J| {
        (
            Some("content_block_delta"),
            obj(vec![
                ("type", s("content_block_delta")),
                ("index", J::Num(index[i])),
                ("delta", d),
            ]),
        )
    };
    let stop = |i: usize| {
        (
            Some("content_block_stop"),
            obj(vec![
                ("type", s("content_block_stop")),
                ("index", J::Num(index[i])),
            ]),
        )
    };
    if r.chance(60) {
        out.push((
            Some("content_block_start"),
            obj(vec![
                ("type", s("content_block_start")),
                ("index", J::Num(index[block])),
                (
                    "content_block",
                    obj(vec![("type", s("text")), ("text", s(""))]),
                ),
            ]),
        ));
        let said = text(r);
        for piece in fragments(r, &said) {
            out.push(delta(
                block,
                obj(vec![("type", s("text_delta")), ("text", J::Str(piece))]),
            ));
        }
        out.push(stop(block));
        block += 1;
    }
    for i in 0..r.below(4) {
        out.push((
            Some("content_block_start"),
            obj(vec![
                ("type", s("content_block_start")),
                ("index", J::Num(index[block])),
                (
                    "content_block",
                    obj(vec![
                        ("type", s("tool_use")),
                        ("id", J::Str(format!("toolu_{i}"))),
                        ("name", J::Str(format!("f{i}"))),
                        ("input", obj(Vec::new())),
                    ]),
                ),
            ]),
        ));
        let args = arguments(r);
        for piece in fragments(r, &args) {
            out.push(delta(
                block,
                obj(vec![
                    ("type", s("input_json_delta")),
                    ("partial_json", J::Str(piece)),
                ]),
            ));
            if r.chance(3) {
                out.push((Some("ping"), obj(vec![("type", s("ping"))])));
            }
        }
        out.push(stop(block));
        block += 1;
    }
    out.push((
        Some("message_delta"),
        obj(vec![
            ("type", s("message_delta")),
            (
                "delta",
                obj(vec![
                    ("stop_reason", s("tool_use")),
                    ("stop_sequence", J::Null),
                ]),
            ),
            ("usage", obj(vec![("output_tokens", J::Num("20"))])),
        ]),
    ));
    out.push((Some("message_stop"), obj(vec![("type", s("message_stop"))])));
    out
}
