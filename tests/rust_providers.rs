//! Provider adapters: every docs/quirks.md row (a test named after it), each dialect's
//! happy path, completeness (Q15), errors, and the real recordings in
//! `tests/fixtures/real`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;
use support::{assembler, base64_decode, fixture_text as fixture};

use _toolstitch::blocks::Block;
use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, DecodeKind, Dialect, Error, Limit, LiveEvent,
    ProblemKind,
};
use serde_json::{json, Value};

/// Feeds every event (as JSON values turned to text), then closes.
fn run(d: Option<Dialect>, events: &[Value]) -> Assembler {
    let mut a = assembler(d);
    for (i, e) in events.iter().enumerate() {
        a.feed_json(None, e.to_string().as_bytes(), None)
            .unwrap_or_else(|err| panic!("event {i}: {err}"));
    }
    a.close(None).unwrap();
    a
}

fn chat(events: &[Value]) -> AssembledMessage {
    run(Some(Dialect::OpenAiChat), events).messages().remove(0)
}

/// One chat chunk with one choice.
fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn calls(delta_calls: Value) -> Value {
    chunk(json!({ "tool_calls": delta_calls }), None)
}

/// (id, name, input) of every call.
fn triples(m: &AssembledMessage) -> Vec<(String, String, String)> {
    m.tool_uses
        .iter()
        .map(|t| {
            (
                t.block.id.clone(),
                t.block.name.clone(),
                t.block.input.clone(),
            )
        })
        .collect()
}

fn t(id: &str, name: &str, input: &str) -> (String, String, String) {
    (id.to_owned(), name.to_owned(), input.to_owned())
}

/// Feeds JSON lines, one event per non-empty line.
fn feed_lines(d: Option<Dialect>, text: &str) -> Assembler {
    let mut a = assembler(d);
    for (i, line) in text.lines().enumerate() {
        if !line.trim().is_empty() {
            a.feed_json(None, line.as_bytes(), None)
                .unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        }
    }
    a.close(None).unwrap();
    a
}

/// Splits SSE text into (event name, data) pairs: the test's own minimal framing.
fn sse_events(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in text.replace("\r\n", "\n").split("\n\n") {
        let mut name = None;
        let mut data: Vec<&str> = Vec::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if !data.is_empty() {
            out.push((name, data.join("\n")));
        }
    }
    out
}

fn feed_sse(d: Option<Dialect>, text: &str, live: Option<&mut Vec<LiveEvent>>) -> Assembler {
    let mut a = assembler(d);
    let mut sink = Vec::new();
    for (i, (name, data)) in sse_events(text).into_iter().enumerate() {
        a.feed_json(name.as_deref(), data.as_bytes(), Some(&mut sink))
            .unwrap_or_else(|e| panic!("event {}: {e}", i + 1));
    }
    a.close(Some(&mut sink)).unwrap();
    if let Some(l) = live {
        *l = sink;
    }
    a
}

fn parsed(s: &str) -> Value {
    if s.is_empty() {
        json!({})
    } else {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }
}

// ---------------------------------------------------------------- real recordings

#[test]
fn real_openai_chat_parallel_two_tools() {
    let mut live = Vec::new();
    let a = feed_sse(
        Some(Dialect::OpenAiChat),
        &fixture("openai_chat-completions-parallel-two-tools.sse"),
        Some(&mut live),
    );
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![
            t(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#
            ),
            t(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#
            ),
        ]
    );
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
    assert!(m.complete);
    assert!(m
        .usage
        .as_ref()
        .is_some_and(|u| u.contains_key("total_tokens")));
    assert!(m.tool_uses.iter().all(|t| t.finished && !t.id_minted));
    // Live: the fragments of each call concatenate to its input.
    let joined: String = live
        .iter()
        .filter_map(|e| match e {
            LiveEvent::ToolInputDelta {
                index: 1, fragment, ..
            } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(joined, r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#);
    assert!(live.contains(&LiveEvent::MessageDone {
        choice: 0,
        finish_reason: Some("tool_calls".into()),
        complete: true
    }));
}

#[test]
fn real_openai_chat_parallel_two_tools_auto() {
    let a = feed_sse(
        None,
        &fixture("openai_chat-completions-parallel-two-tools.sse"),
        None,
    );
    assert_eq!(a.dialect(), Some(Dialect::OpenAiChat));
    assert_eq!(a.messages()[0].tool_uses.len(), 2);
}

#[test]
fn real_anthropic_text_then_tool_use() {
    for d in [Some(Dialect::Anthropic), None] {
        let a = feed_sse(
            d,
            &fixture("anthropic_messages-text-then-tool-use.sse"),
            None,
        );
        assert_eq!(a.dialect(), Some(Dialect::Anthropic));
        let m = a.messages().remove(0);
        assert_eq!(m.text, "I'll check the current weather in Paris for you.");
        assert_eq!(
            triples(&m),
            vec![t(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                r#"{"location": "Paris"}"#
            )]
        );
        assert_eq!(m.blocks.len(), 2);
        assert!(matches!(m.blocks[0], Block::Text(_)));
        assert!(matches!(m.blocks[1], Block::ToolUse(_)));
        assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
        assert!(m.complete);
        let u = m.usage.unwrap();
        assert_eq!(
            (u["input_tokens"].as_i64(), u["output_tokens"].as_i64()),
            (Some(377), Some(65))
        );
    }
}

#[test]
fn real_mistral_single_chunk_tool_call() {
    let a = feed_lines(None, &fixture("mistral_chat-single-chunk-tool-call.jsonl"));
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![t(
            "gSIMJiOkT",
            "weather",
            r#"{"location": "San Francisco"}"#
        )]
    );
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
    assert!(m.complete);
    let u = m.usage.unwrap();
    assert_eq!(
        (u["prompt_tokens"].as_i64(), u["completion_tokens"].as_i64()),
        (Some(124), Some(22))
    );
}

/// Every vercel-ai recording against its EXPECTED.json entry, fed with `auto`.
#[test]
fn real_vercel_ai_recordings_match_expected() {
    let expected: Value = serde_json::from_str(&fixture("vercel-ai/EXPECTED.json")).unwrap();
    let entries = expected.as_object().unwrap();
    assert!(entries.len() >= 12);
    for (file, exp) in entries {
        let a = feed_lines(None, &fixture(&format!("vercel-ai/{file}")));
        let m = a.messages().remove(0);
        let want = exp["expected_tool_calls"].as_array().unwrap();
        assert_eq!(m.tool_uses.len(), want.len(), "{file}: {:?}", triples(&m));
        for (got, w) in m.tool_uses.iter().zip(want) {
            assert_eq!(got.block.name, w["name"].as_str().unwrap(), "{file}");
            match w["id"].as_str() {
                Some(id) => assert_eq!(got.block.id, id, "{file}"),
                None => assert!(
                    got.id_minted && got.block.id.starts_with("call_0_"),
                    "{file}"
                ),
            }
            assert_eq!(parsed(&got.block.input), w["arguments"], "{file}");
            if let Some(raw) = w["arguments_raw"].as_str() {
                assert_eq!(got.block.input, raw, "{file}: raw input");
            }
            if let Some(item) = w["item_id"].as_str() {
                assert_eq!(
                    got.block.provider_state.as_deref(),
                    Some(format!("\"{item}\"").as_str()),
                    "{file}"
                );
                assert_eq!(
                    got.block.provider_state_format, "openai-responses",
                    "{file}"
                );
            }
            assert!(got.finished, "{file}");
        }
        let reason = exp["finish_reason"]
            .as_str()
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert_eq!(m.finish_reason.as_deref(), Some(reason), "{file}");
        assert!(m.complete, "{file}");
        assert!(m.problems.is_empty(), "{file}");
        assert!(m.usage.is_some(), "{file}");
    }
}

// ---------------------------------------------------------------- docs/quirks.md rows

#[test]
fn q1_index_missing_matches_by_id_or_continues_latest() {
    let m = chat(&[
        calls(json!([{"id": "a", "function": {"name": "f", "arguments": "{\"x\":"}}])),
        calls(json!([{"function": {"arguments": "1}"}}])),
        calls(json!([{"id": "b", "function": {"name": "g", "arguments": "{\"y\":"}}])),
        calls(json!([{"id": "a", "function": {"arguments": ""}}])),
        calls(json!([{"function": {"arguments": "2}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    // The id-only fragment for `a` adds nothing; the next index-less fragment
    // continues the latest call opened, `b`.
    assert_eq!(
        triples(&m),
        vec![t("a", "f", "{\"x\":1}"), t("b", "g", "{\"y\":2}")]
    );
    assert!(m.complete);
}

#[test]
fn q2_parallel_calls_at_index_zero_with_distinct_ids() {
    let m = chat(&[
        calls(
            json!([{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]),
        ),
        calls(
            json!([{"index": 0, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"y\""}}]),
        ),
        calls(json!([{"index": 0, "function": {"arguments": ":2}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        triples(&m),
        vec![t("a", "f", "{\"x\":1}"), t("b", "g", "{\"y\":2}")]
    );
    assert_eq!(m.tool_uses[1].provider_index, Some(0));
    assert_eq!((m.tool_uses[0].index, m.tool_uses[1].index), (0, 1));
}

#[test]
fn q3_sparse_negative_and_huge_indexes_are_opaque_keys() {
    let m = chat(&[
        calls(json!([{"index": 7, "id": "c7", "function": {"name": "f", "arguments": "{}"}}])),
        calls(json!([{"index": -3, "id": "cm3", "function": {"name": "g", "arguments": "{}"}}])),
        calls(
            json!([{"index": i64::MAX, "id": "cmax", "function": {"name": "h", "arguments": "{}"}}]),
        ),
        calls(
            json!([{"index": i64::MIN, "id": "cmin", "function": {"name": "k", "arguments": "{}"}}]),
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let ids: Vec<_> = m.tool_uses.iter().map(|t| t.block.id.as_str()).collect();
    assert_eq!(ids, ["cmin", "cm3", "c7", "cmax"]);
    // Blocks stay in stream order.
    let order: Vec<_> = m
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse(u) => Some(u.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["c7", "cm3", "cmax", "cmin"]);
    // An index beyond i64 is a clear error, not a wrap.
    let mut a = assembler(Some(Dialect::OpenAiChat));
    let e = a
        .feed_json(
            None,
            br#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":18446744073709551615}]}}]}"#,
            None,
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("out of the signed 64-bit range"),
        "{e}"
    );
}

#[test]
fn q4_id_name_type_repeated_on_every_chunk_set_once() {
    let frag = |args: &str| {
        calls(
            json!([{"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": args}}]),
        )
    };
    let m = chat(&[
        frag("{\"q\""),
        frag(":\"x\""),
        frag("}"),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(triples(&m), vec![t("call_1", "lookup", "{\"q\":\"x\"}")]);
}

#[test]
fn q5_empty_string_id_name_type_mean_absent() {
    let m = chat(&[
        calls(
            json!([{"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": ""}}]),
        ),
        calls(
            json!([{"index": 0, "id": "", "type": "", "function": {"name": "", "arguments": "{\"q\":1}"}}]),
        ),
        chunk(json!({}), Some("stop")),
    ]);
    assert_eq!(triples(&m), vec![t("call_1", "lookup", "{\"q\":1}")]);
}

#[test]
fn q6_type_missing_null_or_late_is_never_required() {
    let m = chat(&[
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}])),
        calls(json!([{"index": 0, "type": null, "function": {"arguments": "}"}}])),
        calls(json!([{"index": 0, "type": "function"}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(triples(&m), vec![t("c", "f", "{}")]);
}

#[test]
fn q7_name_after_arguments_and_unnamed_at_close_is_a_call_error() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    let mut live = Vec::new();
    for e in [
        calls(json!([{"index": 0, "id": "c0", "function": {"arguments": "{\"a\":"}}])),
        calls(json!([{"index": 0, "function": {"name": "late", "arguments": "1}"}}])),
        calls(json!([{"index": 1, "id": "c1", "function": {"arguments": "{}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ] {
        a.feed_json(None, e.to_string().as_bytes(), Some(&mut live))
            .unwrap();
    }
    a.close(Some(&mut live)).unwrap();
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![t("c0", "late", "{\"a\":1}"), t("c1", "", "{}")]
    );
    assert_eq!(m.problems.len(), 1);
    assert_eq!(
        (m.problems[0].call, m.problems[0].kind),
        (Some(1), ProblemKind::Unnamed)
    );
    assert!(m.problems[0].message.contains("c1"));
    // Announced without a name, then once more when the name came.
    let started: Vec<_> = live
        .iter()
        .filter_map(|e| match e {
            LiveEvent::ToolCallStarted { index: 0, name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["", "late"]);
}

#[test]
fn q8_no_id_mints_a_stable_flagged_id() {
    let a = run(
        Some(Dialect::OpenAiChat),
        &[
            calls(json!([{"index": 0, "function": {"name": "f", "arguments": "{}"}}])),
            calls(json!([{"index": 1, "function": {"name": "g", "arguments": "{}"}}])),
            chunk(json!({}), Some("tool_calls")),
        ],
    );
    let m = a.messages().remove(0);
    let ids: Vec<_> = m
        .tool_uses
        .iter()
        .map(|t| (t.block.id.as_str(), t.id_minted))
        .collect();
    assert_eq!(ids, [("call_0_0", true), ("call_0_1", true)]);
    assert_eq!(a.messages(), a.messages());
}

#[test]
fn q9_whole_call_in_one_chunk_with_the_finish_reason() {
    let m = chat(&[
        json!({"choices": [{"index": 0, "delta": {"content": null, "tool_calls": [
        {"id": "gSIMJiOkT", "function": {"name": "weather", "arguments": "{\"location\": \"SF\"}"}}
    ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 1}}),
    ]);
    assert_eq!(
        triples(&m),
        vec![t("gSIMJiOkT", "weather", "{\"location\": \"SF\"}")]
    );
    assert!(m.complete && m.tool_uses[0].finished);
}

#[test]
fn q10_cumulative_resend_only_once_input_is_complete_json() {
    // An equal resend after the input is complete is dropped; a longer one adds its tail.
    let m = chat(&[
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "1}"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "{\"a\":1}"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "{\"a\":1}\n"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(triples(&m), vec![t("c", "f", "{\"a\":1}\n")]);
    // While the input is incomplete, a fragment that repeats it is just more input.
    let m = chat(&[
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "{\"a\":1}}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(triples(&m), vec![t("c", "f", "{\"a\":{\"a\":1}}")]);
}

#[test]
fn q11_server_side_json_corruption_is_kept_verbatim() {
    let bad = "{\"a\": 1,, \"b\": }";
    let m = chat(&[
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": bad}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(m.tool_uses[0].block.input, bad);
    assert!(serde_json::from_str::<Value>(&m.tool_uses[0].block.input).is_err());
}

#[test]
fn q12_escape_and_utf8_split_across_fragments_is_kept_verbatim() {
    let m = chat(&[
        calls(
            json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"s\":\"\\u00"}}]),
        ),
        calls(json!([{"index": 0, "function": {"arguments": "e9 \\ud83d"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "\\ude00 ü"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "日本\"}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let input = &m.tool_uses[0].block.input;
    assert_eq!(input, "{\"s\":\"\\u00e9 \\ud83d\\ude00 ü日本\"}");
    assert_eq!(parsed(input), json!({"s": "é 😀 ü日本"}));
}

#[test]
fn q13_no_argument_tool_keeps_empty_raw_input() {
    let a = run(
        Some(Dialect::Anthropic),
        &[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "now", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ],
    );
    let m = a.messages().remove(0);
    assert_eq!(triples(&m), vec![t("t", "now", "")]);
    assert!(m.complete && m.tool_uses[0].finished);
}

#[test]
fn q14_tool_calls_ending_with_finish_reason_stop_are_emitted() {
    let m = chat(&[
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}])),
        chunk(json!({}), Some("stop")),
    ]);
    assert_eq!(m.tool_uses.len(), 1);
    assert_eq!(m.finish_reason.as_deref(), Some("stop"));
    assert!(m.complete);
}

#[test]
fn q15_complete_only_after_an_explicit_normal_end() {
    let call = calls(
        json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\":1}"}}]),
    );
    // No end at all: the JSON parses, but the message is not complete.
    let m = chat(std::slice::from_ref(&call));
    assert!(!m.complete && m.finish_reason.is_none());
    assert!(m.tool_uses[0].finished, "close() finishes open calls");
    for (reason, complete) in [
        ("length", false),
        ("content_filter", false),
        ("stop", true),
        ("tool_calls", true),
        ("function_call", true),
    ] {
        let m = chat(&[call.clone(), chunk(json!({}), Some(reason))]);
        assert_eq!(m.complete, complete, "{reason}");
        assert_eq!(m.finish_reason.as_deref(), Some(reason));
    }
    // Before close, complete follows the end signal already.
    let mut a = assembler(Some(Dialect::OpenAiChat));
    a.feed_json(
        None,
        chunk(json!({"content": "hi"}), Some("stop"))
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    assert!(a.messages()[0].complete);
    // Anthropic: max_tokens, or no message_stop, is not complete.
    let anth = |reason: &str, stop: bool| {
        let mut ev = vec![
            json!({"type": "message_start", "message": {"usage": {}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "x"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}}),
        ];
        if stop {
            ev.push(json!({"type": "message_stop"}));
        }
        run(Some(Dialect::Anthropic), &ev).messages()[0].complete
    };
    assert!(anth("end_turn", true));
    assert!(anth("stop_sequence", true));
    assert!(!anth("max_tokens", true));
    assert!(!anth("end_turn", false));
}

#[test]
fn q16_empty_choices_no_delta_usage_only_and_filter_chunks_are_skipped() {
    let m = chat(&[
        json!({"choices": [], "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]}),
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0}]}),
        json!({"choices": [{"index": 0, "delta": {}, "content_filter_results": {"hate": {"filtered": false}}}]}),
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "ok"}), Some("stop")),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
        json!({"choices": [], "usage": null}),
    ]);
    assert_eq!(m.blocks, vec![Block::Text("ok".into())]);
    assert_eq!(m.usage.unwrap()["prompt_tokens"], json!(5));
    assert!(m.complete);
}

#[test]
fn q17_n_choices_are_kept_apart() {
    let two = |d0: Value, d1: Value, f: Option<&str>| json!({"choices": [{"index": 0, "delta": d0, "finish_reason": f}, {"index": 1, "delta": d1, "finish_reason": f}]});
    let a = run(
        Some(Dialect::OpenAiChat),
        &[
            two(
                json!({"tool_calls": [{"index": 0, "id": "a0", "function": {"name": "f", "arguments": "{\"c\":"}}]}),
                json!({"content": "hello"}),
                None,
            ),
            json!({"choices": [{"index": 1, "delta": {"tool_calls": [{"index": 0, "id": "b0", "function": {"name": "g", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "0}"}}]}}]}),
            two(json!({}), json!({}), Some("tool_calls")),
        ],
    );
    let ms = a.messages();
    assert_eq!(ms.len(), 2);
    assert_eq!(triples(&ms[0]), vec![t("a0", "f", "{\"c\":0}")]);
    assert_eq!(triples(&ms[1]), vec![t("b0", "g", "{}")]);
    assert_eq!((ms[0].text.as_str(), ms[1].text.as_str()), ("", "hello"));
    assert!(ms.iter().all(|m| m.complete));
    assert_eq!(a.message(1).unwrap().choice, 1);
}

#[test]
fn q18_several_fragments_of_one_index_inside_one_delta_fold_in_order() {
    let m = chat(&[
        calls(json!([
            {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}},
            {"index": 0, "function": {"arguments": "\"a\":1"}},
            {"index": 1, "id": "d", "function": {"name": "g", "arguments": "{}"}},
            {"index": 0, "function": {"arguments": "}"}}
        ])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        triples(&m),
        vec![t("c", "f", "{\"a\":1}"), t("d", "g", "{}")]
    );
}

#[test]
fn q19_index_sent_as_a_string_is_normalised() {
    let m = chat(&[
        calls(json!([{"index": "0", "id": "c", "function": {"name": "f", "arguments": "{"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "}"}}])),
        json!({"choices": [{"index": "0", "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    assert_eq!(triples(&m), vec![t("c", "f", "{}")]);
    assert_eq!(m.tool_uses[0].provider_index, Some(0));
    assert!(m.complete);
}

#[test]
fn q20_two_identical_calls_are_never_deduplicated() {
    // Without ids or indexes: the name with a new JSON value after a complete input opens a call.
    let whole = calls(json!([{"function": {"name": "ping", "arguments": "{\"h\":1}"}}]));
    let m = chat(&[whole.clone(), whole, chunk(json!({}), Some("tool_calls"))]);
    assert_eq!(
        triples(&m),
        vec![
            t("call_0_0", "ping", "{\"h\":1}"),
            t("call_0_1", "ping", "{\"h\":1}")
        ]
    );
    // With distinct ids (same index), both kept.
    let m = chat(&[
        calls(
            json!([{"index": 0, "id": "a", "function": {"name": "ping", "arguments": "{\"h\":1}"}}]),
        ),
        calls(
            json!([{"index": 0, "id": "b", "function": {"name": "ping", "arguments": "{\"h\":1}"}}]),
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        triples(&m),
        vec![t("a", "ping", "{\"h\":1}"), t("b", "ping", "{\"h\":1}")]
    );
    // A fragment with the name but empty input never opens a call.
    let m = chat(&[
        calls(json!([{"function": {"name": "ping", "arguments": "{\"h\":1}"}}])),
        calls(json!([{"function": {"name": "ping", "arguments": ""}}])),
        chunk(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(m.tool_uses.len(), 1);
}

// ---------------------------------------------------------------- chat details

#[test]
fn openai_chat_text_reasoning_refusal_and_legacy_function_call() {
    let m = chat(&[
        chunk(
            json!({"role": "assistant", "reasoning_content": "think "}),
            None,
        ),
        chunk(
            json!({"reasoning_content": "more", "reasoning": "more"}),
            None,
        ),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo"}), None),
        chunk(json!({"refusal": "no"}), None),
        chunk(
            json!({"function_call": {"name": "legacy", "arguments": "{\"a\""}}),
            None,
        ),
        chunk(json!({"function_call": {"arguments": ":1}"}}), None),
        chunk(json!({}), Some("function_call")),
    ]);
    assert_eq!(m.text, "Hello");
    assert!(matches!(&m.blocks[0], Block::Thinking(b) if b.thinking == "think more"));
    assert_eq!(m.blocks[1], Block::Text("Hello".into()));
    assert_eq!(m.blocks[2], Block::Refusal("no".into()));
    assert_eq!(triples(&m), vec![t("call_0_0", "legacy", "{\"a\":1}")]);
    assert!(m.complete);
}

#[test]
fn done_marker_and_empty_payloads_are_skipped() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    a.feed_json(None, b"[DONE]", None).unwrap();
    a.feed_json(None, b"  ", None).unwrap();
    a.feed_value(None, &json!("[DONE]"), None).unwrap();
    assert_eq!(a.messages()[0].blocks.len(), 0);
}

#[test]
fn feed_value_gives_the_same_result_as_feed_json() {
    let events = [
        chunk(json!({"content": "a\"b"}), None),
        calls(
            json!([{"index": "1", "id": "c", "function": {"name": "f", "arguments": "{\"k\": \"v\\n\"}"}}]),
        ),
        chunk(json!({}), Some("tool_calls")),
        json!({"choices": [], "usage": {"total_tokens": 3}}),
    ];
    let by_json = run(Some(Dialect::OpenAiChat), &events);
    let mut by_value = assembler(Some(Dialect::OpenAiChat));
    for e in &events {
        by_value.feed_value(None, e, None).unwrap();
    }
    by_value.close(None).unwrap();
    assert_eq!(by_json.messages(), by_value.messages());
}

// ---------------------------------------------------------------- anthropic details

#[test]
fn anthropic_thinking_signature_redacted_and_server_tools() {
    let a = run(
        None,
        &[
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "XYZ"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"query\":\"x\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "web_search_tool_result", "tool_use_id": "srv", "content": []}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "cli", "name": "f", "input": {"pre": 1}}}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "some_future_event", "index": "weird"}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
            json!({"type": "message_stop"}),
        ],
    );
    let m = a.messages().remove(0);
    match (&m.blocks[0], &m.blocks[1]) {
        (Block::Thinking(th), Block::Thinking(red)) => {
            assert_eq!(
                (
                    th.thinking.as_str(),
                    th.signature.as_str(),
                    th.signature_format.as_str()
                ),
                ("hmm", "SIG", "anthropic")
            );
            assert_eq!(red.provider_state.as_deref(), Some("\"XYZ\""));
            assert_eq!(red.provider_state_format, "anthropic-redacted");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.tool_uses.len(), 2);
    assert!(m.tool_uses[0].server_side);
    assert_eq!(m.tool_uses[0].block.input, "{\"query\":\"x\"}");
    // A start `input` that is not `{}`, with no delta, is the input.
    assert_eq!(m.tool_uses[1].block.input, "{\"pre\":1}");
    assert!(!m.tool_uses[1].server_side);
    assert!(m.complete);
    assert_eq!(m.usage.unwrap()["output_tokens"], json!(7));
}

// ---------------------------------------------------------------- errors

fn assert_kept_after_error(a: &Assembler) {
    let m = a.messages().remove(0);
    assert_eq!(m.tool_uses.len(), 1, "accumulated state survives the error");
}

#[test]
fn wrong_field_type_is_an_error_naming_the_event_and_field() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    a.feed_json(
        None,
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}]))
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    let e = a
        .feed_json(None, br#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":5}}]}}]}"#, None)
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::WrongType,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        msg.contains("event #2") && msg.contains("chat.completion.chunk"),
        "{msg}"
    );
    assert!(
        msg.contains("choices[0].delta.tool_calls[0].function.arguments"),
        "{msg}"
    );
    assert_eq!(e.event().unwrap().ordinal, 2);
    assert_kept_after_error(&a);
    assert_eq!(a.messages()[0].tool_uses[0].block.input, "{");
}

#[test]
fn malformed_and_non_object_events_are_errors() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    a.feed_json(
        None,
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]))
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    let e = a.feed_json(None, b"{\"choices\": [", None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::MalformedJson,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("event #2"), "{e}");
    let e = a.feed_json(None, b"[1,2]", None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::NotAnObject,
                ..
            }
        ),
        "{e:?}"
    );
    let e = a.feed_json(None, b"\xff\xfe", None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::MalformedJson,
                ..
            }
        ),
        "{e:?}"
    );
    let e = a.feed_value(None, &json!(5), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::NotAnObject,
                ..
            }
        ),
        "{e:?}"
    );
    assert_kept_after_error(&a);
    // Still usable afterwards, but (Q30) what the bad events carried is missing:
    // the message ends, and is not complete; each event left a problem.
    a.feed_json(
        None,
        chunk(json!({}), Some("tool_calls")).to_string().as_bytes(),
        None,
    )
    .unwrap();
    let m = &a.messages()[0];
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
    assert!(!m.complete);
    assert_eq!(m.problems.len(), 4, "{:?}", m.problems);
    assert!(m
        .problems
        .iter()
        .all(|p| p.kind == ProblemKind::NotApplied && p.event.is_some()));
}

#[test]
fn provider_error_events_are_errors_and_the_message_is_incomplete() {
    let mut a = assembler(Some(Dialect::Anthropic));
    for e in [
        json!({"type": "message_start", "message": {"usage": {}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
    ] {
        a.feed_json(None, e.to_string().as_bytes(), None).unwrap();
    }
    let e = a
        .feed_json(
            Some("error"),
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { error_type, message, .. } if error_type == "overloaded_error" && message == "Overloaded"),
        "{e:?}"
    );
    assert!(e.to_string().contains("event #4 (error)"), "{e}");
    a.feed_json(None, br#"{"type":"message_stop"}"#, None)
        .unwrap();
    a.close(None).unwrap();
    assert_kept_after_error(&a);
    assert!(!a.messages()[0].complete);
    // An OpenAI-compatible error chunk.
    let mut a = assembler(None);
    let e = a
        .feed_json(
            None,
            br#"{"error":{"message":"rate limited","type":"rate_limit","code":429}}"#,
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { message, .. } if message == "rate limited"),
        "{e:?}"
    );
}

#[test]
fn limits_reject_the_fragment_and_keep_the_rest() {
    let limits = AssemblerLimits {
        max_calls: 1,
        max_input_bytes: 8,
        max_event_bytes: 400,
        max_choices: 1,
        ..AssemblerLimits::default()
    };
    let mut a = Assembler::new(Some(Dialect::OpenAiChat), limits);
    a.feed_json(
        None,
        calls(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}]))
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    let e = a
        .feed_json(
            None,
            calls(json!([{"index": 0, "function": {"arguments": "12345"}}]))
                .to_string()
                .as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxInputBytes,
                ..
            }
        ),
        "{e:?}"
    );
    let e = a
        .feed_json(
            None,
            calls(json!([{"index": 1, "id": "d", "function": {"name": "g"}}]))
                .to_string()
                .as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxCalls,
                ..
            }
        ),
        "{e:?}"
    );
    let e = a
        .feed_json(
            None,
            json!({"choices": [{"index": 1, "delta": {"content": "x"}}]})
                .to_string()
                .as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxChoices,
                ..
            }
        ),
        "{e:?}"
    );
    let big = chunk(json!({"content": "x".repeat(500)}), None).to_string();
    let e = a.feed_json(None, big.as_bytes(), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxEventBytes,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("max_event_bytes"));
    assert_eq!(a.messages()[0].tool_uses[0].block.input, "{\"a\":");
}

#[test]
fn total_bytes_limit_covers_the_whole_stream() {
    let limits = AssemblerLimits {
        max_total_bytes: 10,
        ..AssemblerLimits::default()
    };
    let mut a = Assembler::new(Some(Dialect::OpenAiChat), limits);
    a.feed_json(
        None,
        chunk(json!({"content": "12345"}), None)
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    let e = a
        .feed_json(
            None,
            chunk(json!({"content": "123456"}), None)
                .to_string()
                .as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxTotalBytes,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(a.messages()[0].text, "12345");
}

#[test]
fn dialect_names_and_auto() {
    for d in Dialect::ALL {
        assert_eq!(d.name().parse::<Dialect>().unwrap(), d);
        assert_eq!(Dialect::parse_provider(d.name()).unwrap(), Some(d));
    }
    assert_eq!(Dialect::parse_provider("auto").unwrap(), None);
    let e = "openai".parse::<Dialect>().unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("\"openai\"") && msg.contains("openai-chat") && msg.contains("cohere"),
        "{msg}"
    );
    // auto: an event that fits no dialect is an error.
    let mut a = assembler(None);
    let e = a
        .feed_json(None, br#"{"hello":"world"}"#, None)
        .unwrap_err();
    assert!(matches!(e, Error::UnknownShape { .. }), "{e:?}");
    assert_eq!(a.dialect(), None);
}

#[test]
fn feeding_after_close_is_an_error_and_close_is_idempotent() {
    let mut a = run(
        Some(Dialect::OpenAiChat),
        &[chunk(json!({"content": "x"}), Some("stop"))],
    );
    a.close(None).unwrap();
    let e = a
        .feed_json(
            None,
            chunk(json!({"content": "y"}), None).to_string().as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Closed { .. }));
    assert_eq!(a.messages()[0].text, "x");
}

// ---------------------------------------------------------------- more recordings

#[test]
fn real_google_vertex_four_streamed_calls() {
    let mut a = assembler(None);
    let mut live = Vec::new();
    for line in fixture("google_vertex-stream-function-call-args-4-calls.jsonl").lines() {
        if !line.trim().is_empty() {
            a.feed_json(None, line.as_bytes(), Some(&mut live)).unwrap();
        }
    }
    a.close(Some(&mut live)).unwrap();
    assert_eq!(a.dialect(), Some(Dialect::Gemini));
    let m = a.messages().remove(0);
    let got: Vec<_> = m
        .tool_uses
        .iter()
        .map(|t| {
            (
                t.block.id.as_str(),
                t.block.name.as_str(),
                t.block.input.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("call_0_0", "read_theme", "{}"),
            ("call_0_1", "read_screen", "{\"id\":\"A\"}"),
            ("call_0_2", "read_screen", "{\"id\":\"B\"}"),
            ("call_0_3", "read_screen", "{\"id\":\"C\"}"),
        ]
    );
    assert!(m.tool_uses.iter().all(|t| t.id_minted && t.finished));
    let sig = m.tool_uses[0].block.provider_state.as_deref().unwrap();
    assert_eq!(serde_json::from_str::<String>(sig).unwrap().len(), 1060);
    assert_eq!(m.tool_uses[0].block.provider_state_format, "gemini");
    assert!(m.tool_uses[1..]
        .iter()
        .all(|t| t.block.provider_state.is_none()));
    assert!(
        matches!(&m.blocks[0], Block::Thinking(th) if th.thinking.starts_with("**Processing User Requests**"))
    );
    assert_eq!(m.blocks.len(), 5);
    assert_eq!(m.finish_reason.as_deref(), Some("STOP"));
    assert!(m.complete);
    assert_eq!(m.usage.unwrap()["promptTokenCount"], json!(249));
    // Each streamed call's input goes out once its call closes.
    let deltas: Vec<_> = live
        .iter()
        .filter_map(|e| match e {
            LiveEvent::ToolInputDelta {
                index, fragment, ..
            } => Some((*index, fragment.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [
            (0, "{}"),
            (1, "{\"id\":\"A\"}"),
            (2, "{\"id\":\"B\"}"),
            (3, "{\"id\":\"C\"}")
        ]
    );
}

/// The lines of a YAML block scalar that starts after `marker`, dedented.
fn yaml_blocks(text: &str, marker: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end().ends_with(marker) {
            let mut body = Vec::new();
            let mut indent = None;
            i += 1;
            while i < lines.len() {
                let l = lines[i];
                let lead = l.len() - l.trim_start().len();
                if !l.trim().is_empty() {
                    let ind = *indent.get_or_insert(lead);
                    if lead < ind {
                        break;
                    }
                }
                body.push(l.get(indent.unwrap_or(0)..).unwrap_or(""));
                i += 1;
            }
            out.push(body.join("\n"));
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn real_openai_responses_cassette() {
    let blocks = yaml_blocks(
        &fixture("openai_responses-function-call.vcr.yaml"),
        "string: |+",
    );
    assert_eq!(blocks.len(), 2);
    let a = feed_sse(None, &blocks[0], None);
    assert_eq!(a.dialect(), Some(Dialect::OpenAiResponses));
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![t(
            "call_kL0PCQV7M2WMoVX8V8OtYSAL",
            "get_capital",
            "{\"country\":\"France\"}"
        )]
    );
    assert_eq!(
        m.tool_uses[0].block.provider_state.as_deref(),
        Some("\"fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2\"")
    );
    assert_eq!(m.finish_reason.as_deref(), Some("completed"));
    assert!(m.complete && m.usage.is_some());
    // Interaction 2: a plain-text answer.
    let m = feed_sse(Some(Dialect::OpenAiResponses), &blocks[1], None)
        .messages()
        .remove(0);
    assert!(
        m.tool_uses.is_empty() && m.text.contains("Paris") && m.complete,
        "{m:?}"
    );
}

/// AWS event-stream frames as (`:event-type`, payload): the test's own minimal decoder.
fn event_stream(mut bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let mut out = Vec::new();
    while bytes.len() >= 16 {
        let (total, headers_len) = (be(&bytes[0..]), be(&bytes[4..]));
        let mut h = &bytes[12..12 + headers_len];
        let mut event_type = String::new();
        while !h.is_empty() {
            let n = h[0] as usize;
            let name = std::str::from_utf8(&h[1..1 + n]).unwrap().to_owned();
            assert_eq!(h[1 + n], 7, "string header");
            let len = u16::from_be_bytes([h[2 + n], h[3 + n]]) as usize;
            let value = std::str::from_utf8(&h[4 + n..4 + n + len]).unwrap();
            if name == ":event-type" {
                event_type = value.to_owned();
            }
            h = &h[4 + n + len..];
        }
        out.push((event_type, bytes[12 + headers_len..total - 4].to_vec()));
        bytes = &bytes[total..];
    }
    out
}

#[test]
fn real_bedrock_converse_stream_cassette() {
    let blocks = yaml_blocks(
        &fixture("bedrock_converse-stream-nova-tool-use.vcr.yaml"),
        "string: !!binary |",
    );
    assert_eq!(blocks.len(), 2);
    let frames = event_stream(&base64_decode(&blocks[0]));
    assert!(frames.len() > 5);
    assert!(frames
        .iter()
        .all(|(_, p)| std::str::from_utf8(p).unwrap().contains("\"p\":")));
    // As named payloads (what the event-stream framing gives), and with auto.
    for d in [Some(Dialect::Bedrock), None] {
        let mut a = assembler(d);
        for (name, payload) in &frames {
            a.feed_json(Some(name), payload, None).unwrap();
        }
        a.close(None).unwrap();
        let m = a.messages().remove(0);
        assert_eq!(
            triples(&m),
            vec![t(
                "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
                "get_temperature",
                "{\"city\":\"Paris\"}"
            )]
        );
        assert_eq!(m.tool_uses[0].provider_index, Some(1));
        assert!(m.text.starts_with("<thinking>"), "{}", m.text);
        assert_eq!(m.finish_reason.as_deref(), Some("tool_use"));
        assert!(m.complete);
        assert!(
            m.usage
                .as_ref()
                .is_some_and(|u| u.contains_key("inputTokens")),
            "Q22: usage after stop"
        );
    }
    // As boto3 yields them: wrapped, no name.
    let mut a = assembler(None);
    for (name, payload) in &frames {
        let inner: Value = serde_json::from_slice(payload).unwrap();
        a.feed_value(None, &json!({ name.as_str(): inner }), None)
            .unwrap();
    }
    a.close(None).unwrap();
    assert_eq!(a.dialect(), Some(Dialect::Bedrock));
    assert_eq!(
        a.messages()[0].tool_uses[0].block.input,
        "{\"city\":\"Paris\"}"
    );
    // Interaction 2: text only.
    let mut a = assembler(Some(Dialect::Bedrock));
    for (name, payload) in event_stream(&base64_decode(&blocks[1])) {
        a.feed_json(Some(&name), &payload, None).unwrap();
    }
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert!(m.tool_uses.is_empty() && !m.text.is_empty() && m.complete);
}

// ---------------------------------------------------------------- Q21–Q23

fn gem_part(part: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
}

fn gem_finish(reason: &str) -> Value {
    json!({"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": reason}], "usageMetadata": {"totalTokenCount": 3}})
}

fn partial(path: &str, value: Value, more: bool) -> Value {
    let mut arg = json!({"jsonPath": path});
    for (k, v) in value.as_object().unwrap() {
        arg[k] = v.clone();
    }
    gem_part(json!({"functionCall": {"partialArgs": [arg], "willContinue": more}}))
}

#[test]
fn q21_gemini_partial_args_rebuilt_by_path_and_open_call_closed_at_end() {
    let a = run(
        Some(Dialect::Gemini),
        &[
            gem_part(
                json!({"functionCall": {"name": "plan", "willContinue": true}, "thoughtSignature": "c2ln"}),
            ),
            partial(
                "$.title",
                json!({"stringValue": "Hel", "willContinue": true}),
                true,
            ),
            partial("$.title", json!({"stringValue": "lo \"x\""}), true),
            partial("$.steps[0].n", json!({"numberValue": 1}), true),
            partial("$.steps[0].ok", json!({"boolValue": true}), true),
            partial("$.steps[1]['odd key']", json!({"nullValue": null}), true),
            partial("$.steps[1].w", json!({"numberValue": 0.25}), true),
            partial("$[\"tags\"][0]", json!({"stringValue": "a"}), true),
            gem_part(json!({"functionCall": {}})),
            // A second call whose stream simply ends: closed by the end of the stream.
            gem_part(json!({"functionCall": {"name": "second", "willContinue": true}})),
            partial("$.q", json!({"stringValue": "z"}), true),
        ],
    );
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![
            t(
                "call_0_0",
                "plan",
                r#"{"title":"Hello \"x\"","steps":[{"n":1,"ok":true},{"odd key":null,"w":0.25}],"tags":["a"]}"#
            ),
            t("call_0_1", "second", r#"{"q":"z"}"#),
        ]
    );
    assert_eq!(
        m.tool_uses[0].block.provider_state.as_deref(),
        Some("\"c2ln\"")
    );
    assert!(m.tool_uses.iter().all(|t| t.finished));
    assert!(!m.complete, "no finishReason");
    // A part without willContinue closes the call; finishReason closes an open one too.
    let a = run(
        Some(Dialect::Gemini),
        &[
            gem_part(json!({"functionCall": {"name": "f", "willContinue": true}})),
            gem_part(
                json!({"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 2}]}}),
            ),
            gem_part(json!({"functionCall": {"name": "g", "willContinue": true}})),
            partial("$.b", json!({"stringValue": "x"}), true),
            gem_finish("STOP"),
        ],
    );
    let m = a.messages().remove(0);
    assert_eq!(
        triples(&m),
        vec![
            t("call_0_0", "f", "{\"a\":2}"),
            t("call_0_1", "g", "{\"b\":\"x\"}")
        ]
    );
    assert!(m.complete);
    // Before close, the open call shows what was rebuilt so far.
    let mut a = assembler(Some(Dialect::Gemini));
    for e in [
        gem_part(json!({"functionCall": {"name": "f", "willContinue": true}})),
        partial("$.a", json!({"stringValue": "x"}), true),
    ] {
        a.feed_json(None, e.to_string().as_bytes(), None).unwrap();
    }
    assert_eq!(a.partial_inputs(), vec![(0, 0, "{\"a\":\"x\"}".to_owned())]);
    // A bad path is an error naming the event; the call stays open and readable.
    let e = a
        .feed_json(
            None,
            partial("a.b", json!({"stringValue": "x"}), true)
                .to_string()
                .as_bytes(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Decode {
                kind: DecodeKind::BadValue,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("event #3") && e.to_string().contains("jsonPath"),
        "{e}"
    );
    for bad in ["$.a[", "$.a[x]", "$..a", "$['a", "$.a[99999]"] {
        assert!(
            a.feed_json(
                None,
                partial(bad, json!({"stringValue": "x"}), true)
                    .to_string()
                    .as_bytes(),
                None
            )
            .is_err(),
            "{bad}"
        );
    }
    a.close(None).unwrap();
    assert_eq!(a.messages()[0].tool_uses[0].block.input, "{\"a\":\"x\"}");
}

#[test]
fn q22_bedrock_padding_ignored_and_usage_after_stop_recorded() {
    let mut a = assembler(Some(Dialect::Bedrock));
    for (name, payload) in [
        (
            "messageStart",
            json!({"role": "assistant", "p": "abcdefgh"}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}, "p": "abcdefghijklmnop"}),
        ),
        (
            "contentBlockStop",
            json!({"contentBlockIndex": 0, "p": "ab"}),
        ),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tu", "name": "f"}}, "p": "abc"}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"x\":1}"}}, "p": "abcd"}),
        ),
        (
            "contentBlockStop",
            json!({"contentBlockIndex": 1, "p": "abcde"}),
        ),
        (
            "messageStop",
            json!({"stopReason": "tool_use", "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"}),
        ),
        (
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "metrics": {"latencyMs": 1}, "p": "abc"}),
        ),
    ] {
        a.feed_json(Some(name), payload.to_string().as_bytes(), None)
            .unwrap();
    }
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert_eq!(m.text, "Hi");
    assert_eq!(triples(&m), vec![t("tu", "f", "{\"x\":1}")]);
    assert!(m.complete);
    assert_eq!(m.usage.unwrap()["totalTokens"], json!(15));
}

#[test]
fn q23_responses_call_id_is_the_id_and_item_id_is_provider_state() {
    let mut live = Vec::new();
    let mut a = assembler(Some(Dialect::OpenAiResponses));
    for e in [
        json!({"type": "response.created", "response": {"status": "in_progress", "usage": null}}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "f", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 3, "delta": "{\"a\""}),
        // Keyed by item id only.
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": ":1}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 3, "arguments": "{\"a\":1}"}),
        json!({"type": "response.output_item.done", "output_index": 3, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "f", "arguments": "{\"a\":1}"}}),
        json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 4, "output_tokens": 2}}}),
    ] {
        a.feed_json(None, e.to_string().as_bytes(), Some(&mut live))
            .unwrap();
    }
    a.close(Some(&mut live)).unwrap();
    let m = a.messages().remove(0);
    assert_eq!(triples(&m), vec![t("call_A", "f", "{\"a\":1}")]);
    let u = &m.tool_uses[0];
    assert_eq!(
        (
            u.block.provider_state.as_deref(),
            u.block.provider_state_format.as_str()
        ),
        (Some("\"fc_1\""), "openai-responses")
    );
    assert_eq!(u.provider_index, Some(3));
    assert!(m.complete && u.finished);
    let started = live
        .iter()
        .filter(|e| matches!(e, LiveEvent::ToolCallStarted { .. }))
        .count();
    assert_eq!(started, 1);
    // Q10 for Responses: `done` text that disagrees with the deltas wins.
    let a = run(
        Some(Dialect::OpenAiResponses),
        &[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_B", "name": "g", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 0, "delta": "{\"b\":"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 0, "arguments": "{\"b\":2}"}),
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ],
    );
    assert_eq!(a.messages()[0].tool_uses[0].block.input, "{\"b\":2}");
}

// ---------------------------------------------------------------- other dialects' details

#[test]
fn responses_text_reasoning_refusal_and_ends() {
    let a = run(
        None,
        &[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "one"}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "two"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC"}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hi", "obfuscation": "zz"}),
            json!({"type": "response.refusal.delta", "output_index": 1, "content_index": 1, "delta": "nope"}),
            json!({"type": "response.some_new_event", "delta": {"unexpected": "object"}}),
            json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"output_tokens": 9}}}),
        ],
    );
    let m = a.messages().remove(0);
    match &m.blocks[0] {
        Block::Thinking(th) => {
            assert_eq!(th.thinking, "one\n\ntwo");
            assert_eq!(
                (th.signature.as_str(), th.signature_format.as_str()),
                ("ENC", "openai-responses")
            );
            assert_eq!(th.provider_state.as_deref(), Some("\"rs_1\""));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.blocks[1], Block::Text("Hi".into()));
    assert_eq!(m.blocks[2], Block::Refusal("nope".into()));
    assert_eq!(m.finish_reason.as_deref(), Some("max_output_tokens"));
    assert!(!m.complete);
    // response.failed and error events are provider errors.
    let mut a = assembler(Some(Dialect::OpenAiResponses));
    let e = a
        .feed_json(None, br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#, None)
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { error_type, message, .. } if error_type == "server_error" && message == "boom"),
        "{e:?}"
    );
    assert_eq!(a.messages()[0].finish_reason.as_deref(), Some("failed"));
    assert!(!a.messages()[0].complete);
    let mut a = assembler(None);
    let e = a
        .feed_json(
            Some("error"),
            br#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { message, .. } if message == "slow down"),
        "{e:?}"
    );
}

#[test]
fn gemini_text_thoughts_whole_calls_and_key_order() {
    // Raw text for the last event: `json!` would sort the keys, and the args must
    // keep the order they arrive in.
    let last = r#"{"candidates": [{"content": {"parts": [
        {"text": "Calling."},
        {"functionCall": {"name": "f", "args": {"z": 1, "a": {"y": [true, null, "s"], "b": 1.5}}}, "thoughtSignature": "SIG"},
        {"functionCall": {"id": "given", "name": "g"}}
    ]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 1}}"#;
    let mut a = assembler(None);
    for e in [
        gem_part(json!({"text": "let me think", "thought": true})).to_string(),
        gem_part(json!({"text": "Sure. "})).to_string(),
        last.to_owned(),
    ] {
        a.feed_json(None, e.as_bytes(), None).unwrap();
    }
    a.close(None).unwrap();
    assert_eq!(a.dialect(), Some(Dialect::Gemini));
    let m = a.messages().remove(0);
    assert!(matches!(&m.blocks[0], Block::Thinking(th) if th.thinking == "let me think"));
    assert_eq!(m.text, "Sure. Calling.");
    assert_eq!(
        triples(&m),
        vec![
            t(
                "call_0_0",
                "f",
                r#"{"z":1,"a":{"y":[true,null,"s"],"b":1.5}}"#
            ),
            t("given", "g", "{}"),
        ]
    );
    assert!(!m.tool_uses[1].id_minted);
    assert!(m.complete);
    // Not normal ends.
    for reason in ["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL"] {
        let a = run(
            Some(Dialect::Gemini),
            &[gem_part(json!({"text": "x"})), gem_finish(reason)],
        );
        assert!(!a.messages()[0].complete, "{reason}");
    }
    // A blocked prompt: no candidates, a block reason.
    let a = run(
        Some(Dialect::Gemini),
        &[json!({"promptFeedback": {"blockReason": "SAFETY"}})],
    );
    assert_eq!(a.messages()[0].finish_reason.as_deref(), Some("SAFETY"));
    assert!(!a.messages()[0].complete);
    // n > 1 candidates.
    let a = run(
        Some(Dialect::Gemini),
        &[json!({"candidates": [
            {"index": 0, "content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"},
            {"index": 1, "content": {"parts": [{"functionCall": {"name": "h", "args": {}}}]}, "finishReason": "STOP"}
        ]})],
    );
    let ms = a.messages();
    assert_eq!(
        (ms[0].text.as_str(), ms[1].tool_uses[0].block.id.as_str()),
        ("a", "call_1_0")
    );
}

#[test]
fn cohere_text_thinking_plan_and_ends() {
    let a = run(
        None,
        &[
            json!({"type": "message-start", "id": "x", "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}}}),
            json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will "}}}),
            json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "look."}}}),
            json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}}),
            json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "hmm"}}}}),
            json!({"type": "content-end", "index": 0}),
            json!({"type": "content-start", "index": 1, "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
            json!({"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": "Answer"}}}}),
            json!({"type": "citation-start", "index": 0, "delta": {"message": {"citations": {"start": 0}}}}),
            json!({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": "now_1", "type": "function", "function": {"name": "now", "arguments": ""}}}}}),
            json!({"type": "tool-call-end", "index": 0}),
            json!({"type": "message-end", "delta": {"finish_reason": "MAX_TOKENS", "usage": {"tokens": {"output_tokens": 3}}}}),
        ],
    );
    assert_eq!(a.dialect(), Some(Dialect::Cohere));
    let m = a.messages().remove(0);
    let thinking: Vec<_> = m
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Thinking(th) => Some(th.thinking.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, ["I will look.", "hmm"]);
    assert_eq!(m.text, "Answer");
    assert_eq!(
        triples(&m),
        vec![t("now_1", "now", "")],
        "Q13: empty raw input kept"
    );
    assert_eq!(m.finish_reason.as_deref(), Some("MAX_TOKENS"));
    assert!(!m.complete);
    // Event type from the SSE event name when the JSON has none.
    let mut a = assembler(Some(Dialect::Cohere));
    a.feed_json(
        Some("content-delta"),
        br#"{"index":0,"delta":{"message":{"content":{"text":"hi"}}}}"#,
        None,
    )
    .unwrap();
    a.feed_json(
        Some("message-end"),
        br#"{"delta":{"finish_reason":"COMPLETE"}}"#,
        None,
    )
    .unwrap();
    assert!(a.messages()[0].complete && a.messages()[0].text == "hi");
}

#[test]
fn bedrock_bare_payloads_without_names_reasoning_and_exceptions() {
    let a = run(
        None,
        &[
            json!({"role": "assistant", "p": "ab"}),
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think"}}, "p": "x"}),
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "S"}}}),
            json!({"contentBlockIndex": 0}),
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{}"}}}),
            json!({"contentBlockIndex": 1}),
            json!({"stopReason": "max_tokens"}),
            json!({"usage": {"inputTokens": 1}, "metrics": {}}),
        ],
    );
    assert_eq!(a.dialect(), Some(Dialect::Bedrock));
    let m = a.messages().remove(0);
    assert!(
        matches!(&m.blocks[0], Block::Thinking(th) if th.thinking == "think" && th.signature == "S" && th.signature_format == "bedrock")
    );
    assert_eq!(triples(&m), vec![t("t1", "f", "{}")]);
    assert!(!m.complete, "max_tokens");
    assert!(m.usage.is_some());
    let mut a = assembler(Some(Dialect::Bedrock));
    let e = a
        .feed_json(
            Some("throttlingException"),
            br#"{"message":"Too many requests"}"#,
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { error_type, message, .. } if error_type == "throttlingException" && message == "Too many requests"),
        "{e:?}"
    );
    let e = a
        .feed_value(
            None,
            &json!({"modelStreamErrorException": {"message": "bad"}}),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::Provider { error_type, .. } if error_type == "modelStreamErrorException"),
        "{e:?}"
    );
}

#[test]
fn unknown_event_types_are_skipped_in_every_dialect() {
    let cases: [(Dialect, Value); 5] = [
        (
            Dialect::Anthropic,
            json!({"type": "content_block_future", "index": {"odd": 1}}),
        ),
        (
            Dialect::OpenAiResponses,
            json!({"type": "response.audio.delta", "delta": 5}),
        ),
        (Dialect::Cohere, json!({"type": "debug", "delta": 5})),
        (Dialect::Bedrock, json!({"somethingNew": {"x": 1}})),
        (
            Dialect::Gemini,
            json!({"modelVersion": "x", "responseId": "y"}),
        ),
    ];
    for (d, e) in cases {
        let mut a = assembler(Some(d));
        a.feed_json(None, e.to_string().as_bytes(), None)
            .unwrap_or_else(|err| panic!("{d}: {err}"));
    }
}

#[test]
fn wrong_types_of_known_events_are_errors_in_every_dialect() {
    let cases: [(Dialect, Value, &str); 6] = [
        (
            Dialect::Anthropic,
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": 5}}),
            "delta.partial_json",
        ),
        (
            Dialect::OpenAiResponses,
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": 5}),
            "delta",
        ),
        (
            Dialect::Cohere,
            json!({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": 5}}}}}),
            "arguments",
        ),
        (
            Dialect::Bedrock,
            json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": 5}}}}),
            "input",
        ),
        (
            Dialect::Gemini,
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": 5}}]}}]}),
            "functionCall.name",
        ),
        (
            Dialect::OpenAiChat,
            json!({"choices": [{"index": 0, "finish_reason": 5}]}),
            "finish_reason",
        ),
    ];
    for (d, e, field) in cases {
        let mut a = assembler(Some(d));
        let err = a
            .feed_json(None, e.to_string().as_bytes(), None)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(
                err,
                Error::Decode {
                    kind: DecodeKind::WrongType,
                    ..
                }
            ),
            "{d}: {err:?}"
        );
        assert!(
            msg.contains(field) && msg.contains("event #1"),
            "{d}: {msg}"
        );
    }
}

#[test]
fn q15_other_dialects_complete_only_on_a_normal_end() {
    let anth_stop = |reason: &str| {
        run(
            Some(Dialect::Anthropic),
            &[
                json!({"type": "message_delta", "delta": {"stop_reason": reason}}),
                json!({"type": "message_stop"}),
            ],
        )
        .messages()[0]
            .complete
    };
    assert!(anth_stop("end_turn"));
    // `tool_use` is normal, but says the client has calls to run: without one
    // the message lost them (Q65).
    assert!(!anth_stop("tool_use"));
    assert!(!anth_stop("refusal"));
    assert!(!anth_stop("pause_turn"));
    let bedrock = |reason: &str| {
        run(
            Some(Dialect::Bedrock),
            &[json!({"messageStop": {"stopReason": reason}})],
        )
        .messages()[0]
            .complete
    };
    assert!(bedrock("end_turn") && bedrock("stop_sequence"));
    assert!(!bedrock("guardrail_intervened") && !bedrock("content_filtered"));
    let cohere = |reason: &str| {
        run(
            Some(Dialect::Cohere),
            &[json!({"type": "message-end", "delta": {"finish_reason": reason}})],
        )
        .messages()[0]
            .complete
    };
    assert!(cohere("COMPLETE") && cohere("STOP_SEQUENCE"));
    assert!(!cohere("TOOL_CALL"), "Q65: a finish for calls over no call");
    assert!(!cohere("ERROR") && !cohere("TIMEOUT"));
    // Cut streams: no end at all.
    let cut = run(
        Some(Dialect::Bedrock),
        &[json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "x"}}})],
    );
    assert!(!cut.messages()[0].complete);
    let cut = run(
        Some(Dialect::OpenAiResponses),
        &[json!({"type": "response.output_text.delta", "output_index": 0, "delta": "x"})],
    );
    assert!(!cut.messages()[0].complete);
}
