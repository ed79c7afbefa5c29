//! Fail closed (QUIRKS Q24–Q35; Q31 is in rust_bodies.rs): a message is
//! `complete` only when every event was applied once, in order, under the
//! dialect's protocol. One test per row, named after it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;
use support::assembler;

use _toolstitch::blocks::Block;
use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, Dialect, Error, Finish, LiveEvent, ProblemKind,
    Rule,
};
use serde_json::{json, Value};

const VERCEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/real/vercel-ai/"
);

/// Feeds every event, returning the errors (the stream goes on after each).
fn feed(a: &mut Assembler, events: &[Value]) -> Vec<Error> {
    let mut errors = Vec::new();
    for e in events {
        if let Err(err) = a.feed_json(None, e.to_string().as_bytes(), None) {
            errors.push(err);
        }
    }
    if let Err(err) = a.close(None) {
        errors.push(err);
    }
    errors
}

fn recording(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(format!("{VERCEL}{name}")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn rule(e: &Error) -> Option<Rule> {
    match e {
        Error::Protocol { rule, .. } => Some(*rule),
        _ => None,
    }
}

fn inputs(m: &AssembledMessage) -> Vec<&str> {
    m.tool_uses.iter().map(|t| t.block.input.as_str()).collect()
}

fn refused(m: &AssembledMessage) {
    assert!(!m.complete, "{m:?}");
    assert!(!m.problems.is_empty());
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn call(index: i64, id: &str, name: &str, args: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "function": {"name": name, "arguments": args}}]}),
        None,
    )
}

fn anthropic(stop_reason: Option<&str>) -> Vec<Value> {
    let delta = match stop_reason {
        Some(r) => json!({"stop_reason": r}),
        None => json!({}),
    };
    vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"p\":"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn q24_content_after_done_or_the_finish_reason_is_refused() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    let errors = feed(
        &mut a,
        &[
            call(0, "c1", "f", "{}"),
            chunk(json!({}), Some("tool_calls")),
            call(0, "", "", "X"),
            json!({"choices": [], "usage": {"prompt_tokens": 1}}),
        ],
    );
    assert_eq!(
        errors.iter().map(rule).collect::<Vec<_>>(),
        vec![Some(Rule::AfterEnd)]
    );
    let m = &a.messages()[0];
    assert_eq!(inputs(m), vec!["{}"]);
    refused(m);

    let mut a = assembler(Some(Dialect::OpenAiChat));
    a.feed_json(None, call(0, "c1", "f", "{}").to_string().as_bytes(), None)
        .unwrap();
    a.feed_json(None, b"[DONE]", None).unwrap();
    let e = a
        .feed_json(None, call(0, "", "", "X").to_string().as_bytes(), None)
        .unwrap_err();
    assert_eq!(rule(&e), Some(Rule::AfterDone));
    assert!(e.to_string().starts_with("event #3"), "{e}");
    assert_eq!(inputs(&a.messages()[0]), vec!["{}"]);
}

#[test]
fn q24_a_recording_fed_twice_never_doubles_an_input() {
    for name in [
        "cohere-tool-call.chunks.txt",
        "groq-tool-call.chunks.txt",
        "anthropic-json-tool.1.chunks.txt",
        "google-tool-call.chunks.txt",
    ] {
        let events = recording(name);
        let mut once = assembler(None);
        assert!(feed(&mut once, &events).is_empty(), "{name}");
        let expected: Vec<String> = inputs(&once.messages()[0])
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let mut twice = assembler(None);
        let both: Vec<Value> = events.iter().chain(events.iter()).cloned().collect();
        let errors = feed(&mut twice, &both);
        assert!(
            !errors.is_empty() && errors.iter().all(|e| rule(e).is_some()),
            "{name}: {errors:?}"
        );
        let m = &twice.messages()[0];
        assert_eq!(inputs(m), expected, "{name}");
        refused(m);
    }
}

#[test]
fn q25_a_delta_after_its_block_stopped_and_a_duplicated_start_are_refused() {
    let events = anthropic(Some("tool_use"));
    let mut a = assembler(Some(Dialect::Anthropic));
    let mut live = Vec::new();
    for e in &events[..5] {
        a.feed_json(None, e.to_string().as_bytes(), Some(&mut live))
            .unwrap();
    }
    let late = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "X"}});
    let e = a
        .feed_json(None, late.to_string().as_bytes(), Some(&mut live))
        .unwrap_err();
    assert_eq!(rule(&e), Some(Rule::AfterStop));
    let finished = live
        .iter()
        .position(|l| matches!(l, LiveEvent::ToolCallFinished { .. }))
        .unwrap();
    assert!(!live[finished..]
        .iter()
        .any(|l| matches!(l, LiveEvent::ToolInputDelta { .. })));
    refused(&a.messages()[0]);

    let mut a = assembler(Some(Dialect::Anthropic));
    let dup: Vec<Value> = [&events[..2], &events[1..]].concat();
    let errors = feed(&mut a, &dup);
    assert_eq!(
        errors.iter().map(rule).collect::<Vec<_>>(),
        vec![Some(Rule::OpenedTwice)]
    );
    let m = &a.messages()[0];
    assert_eq!(m.tool_uses.len(), 1);
    assert_eq!(inputs(m), vec!["{\"p\":1}"]);
    refused(m);
}

#[test]
fn q25_a_text_delta_on_a_tool_block_and_two_calls_with_one_id_are_refused() {
    let events = anthropic(Some("tool_use"));
    let text = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}});
    let mut a = assembler(Some(Dialect::Anthropic));
    let with_text: Vec<Value> = [&events[..3], &[text], &events[3..]].concat();
    let errors = feed(&mut a, &with_text);
    assert_eq!(
        errors.iter().map(rule).collect::<Vec<_>>(),
        vec![Some(Rule::WrongBlock)]
    );
    assert_eq!(a.messages()[0].text, "");

    let mut a = assembler(Some(Dialect::OpenAiChat));
    let errors = feed(
        &mut a,
        &[
            call(0, "same", "f", "{}"),
            call(1, "same", "f", "{}"),
            chunk(json!({}), Some("tool_calls")),
        ],
    );
    assert_eq!(
        errors.iter().map(rule).collect::<Vec<_>>(),
        vec![Some(Rule::DuplicateId)]
    );
    refused(&a.messages()[0]);
}

#[test]
fn q26_an_end_without_its_reason_is_not_complete() {
    let mut a = assembler(Some(Dialect::Anthropic));
    assert!(feed(&mut a, &anthropic(None)).is_empty());
    let m = &a.messages()[0];
    assert!(!m.complete);
    assert_eq!(m.finish, Some(Finish::Other));

    let mut events = recording("cohere-tool-call.chunks.txt");
    let last = events.last_mut().unwrap();
    last["delta"]
        .as_object_mut()
        .unwrap()
        .remove("finish_reason");
    let mut a = assembler(Some(Dialect::Cohere));
    assert!(feed(&mut a, &events).is_empty());
    assert!(!a.messages()[0].complete);
}

#[test]
fn q27_hosted_tools_are_server_side_calls_with_their_results() {
    for (name, kind) in [
        ("anthropic-web-search-tool.1.chunks.txt", "server_tool_use"),
        ("anthropic-mcp.1.chunks.txt", "mcp_tool_use"),
        ("openai-file-search-tool.1.chunks.txt", "file_search_call"),
        (
            "azure-web-search-preview-tool.1.chunks.txt",
            "web_search_call",
        ),
        (
            "azure-image-generation-tool.1.chunks.txt",
            "image_generation_call",
        ),
    ] {
        let mut a = assembler(None);
        assert!(feed(&mut a, &recording(name)).is_empty(), "{name}");
        let m = &a.messages()[0];
        assert!(m.complete, "{name}");
        let hosted: Vec<_> = m
            .tool_uses
            .iter()
            .filter(|t| t.block.kind == kind)
            .collect();
        assert!(
            !hosted.is_empty() && hosted.iter().all(|t| t.server_side && t.block.server_side),
            "{name}"
        );
        assert_eq!(
            m.finish,
            Some(Finish::Stop),
            "{name}: a hosted call is no call for the client"
        );
    }
    let mut a = assembler(None);
    feed(&mut a, &recording("anthropic-mcp.1.chunks.txt"));
    let results: Vec<_> = a.messages()[0]
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].kind, "mcp_tool_result");
    assert_eq!(
        results[0].content,
        vec![Block::Text("Tool echo: hello world".into())]
    );
}

#[test]
fn q28_a_custom_tool_call_keeps_its_text_input() {
    let mut a = assembler(None);
    assert!(feed(&mut a, &recording("openai-custom-tool.1.chunks.txt")).is_empty());
    let m = &a.messages()[0];
    let t = &m.tool_uses[0];
    assert_eq!(
        (t.block.kind.as_str(), t.server_side),
        ("custom_tool_call", false)
    );
    assert_eq!(t.block.input, "SELECT * FROM users WHERE age > 25");
    assert_eq!(m.finish, Some(Finish::ToolCalls));
    assert!(m.complete);
}

#[test]
fn q29_unknown_things_are_skipped_and_counted() {
    let events = anthropic(Some("tool_use"));
    let future = [
        json!({"type": "message_thought"}),
        json!({"type": "content_block_start", "index": 7, "content_block": {"type": "hologram", "data": [1]}}),
        json!({"type": "content_block_delta", "index": 7, "delta": {"type": "hologram_delta"}}),
        json!({"type": "content_block_stop", "index": 7}),
    ];
    let mut a = assembler(Some(Dialect::Anthropic));
    let all: Vec<Value> = [&events[..2], &future, &events[2..]].concat();
    assert!(feed(&mut a, &all).is_empty());
    let m = &a.messages()[0];
    assert!(m.complete);
    let types: Vec<&str> = m.skipped.iter().map(|s| s.event_type.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "message_thought",
            "content_block_start:hologram",
            "content_block_delta"
        ]
    );
    assert_eq!(m.skipped[0].ordinal, 3);

    let tool_search = json!({"type": "response.output_item.done", "output_index": 0,
        "item": {"type": "tool_search_call", "id": "ts_1", "arguments": {"q": 1}}});
    let mut a = assembler(Some(Dialect::OpenAiResponses));
    assert!(feed(&mut a, &[tool_search]).is_empty());
    assert_eq!(a.messages()[0].tool_uses[0].block.kind, "tool_search_call");
}

#[test]
fn q30_an_event_lost_to_an_error_leaves_the_message_incomplete() {
    let mut a = Assembler::new(
        Some(Dialect::OpenAiChat),
        AssemblerLimits {
            max_input_bytes: 4,
            ..AssemblerLimits::default()
        },
    );
    let errors = feed(
        &mut a,
        &[
            call(0, "c1", "f", ""),
            call(0, "", "", "{\"a\": 1}"),
            chunk(json!({}), Some("tool_calls")),
        ],
    );
    assert!(
        matches!(errors.as_slice(), [Error::Limit { .. }]),
        "{errors:?}"
    );
    let m = &a.messages()[0];
    assert_eq!(inputs(m), vec![""]);
    refused(m);
    assert_eq!(m.problems[0].kind, ProblemKind::NotApplied);
    assert_eq!(m.problems[0].event, Some(2));
}

#[test]
fn q32_an_event_of_another_dialect_names_it() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    let e = a
        .feed_json(None, anthropic(None)[0].to_string().as_bytes(), None)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongDialect {
                expected: Dialect::OpenAiChat,
                looks_like: Dialect::Anthropic,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("looks like anthropic"), "{e}");
}

#[test]
fn q32_under_auto_a_second_dialect_says_the_stream_mixes_two() {
    // `auto` settled openai-chat on the first event: advising "auto" would
    // mislead, so the message says what is wrong with the stream instead.
    let mut a = assembler(None);
    a.feed_json(None, call(0, "c1", "f", "").to_string().as_bytes(), None)
        .unwrap();
    let e = a
        .feed_json(None, anthropic(None)[0].to_string().as_bytes(), None)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::WrongDialect {
                expected: Dialect::OpenAiChat,
                looks_like: Dialect::Anthropic,
                auto: true,
                ..
            }
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("mixes two dialects"), "{text}");
    assert!(!text.contains("use \"auto\""), "{text}");
}

#[test]
fn q33_resent_events_are_skipped_and_gaps_are_problems() {
    let delta = |n: u64| json!({"type": "response.output_text.delta", "sequence_number": n, "output_index": 0, "content_index": 0, "delta": format!("<{n}>")});
    let created = json!({"type": "response.created", "sequence_number": 0, "response": {}});
    let done = |n: u64| json!({"type": "response.completed", "sequence_number": n, "response": {"status": "completed"}});
    let mut a = assembler(Some(Dialect::OpenAiResponses));
    assert!(feed(
        &mut a,
        &[
            created.clone(),
            delta(1),
            delta(2),
            delta(1),
            delta(3),
            done(4)
        ]
    )
    .is_empty());
    let m = &a.messages()[0];
    assert_eq!(m.text, "<1><2><3>");
    assert!(m.complete);
    assert_eq!(m.skipped.len(), 1);

    let mut a = assembler(Some(Dialect::OpenAiResponses));
    assert!(feed(&mut a, &[created, delta(1), delta(3), delta(2), done(4)]).is_empty());
    let m = &a.messages()[0];
    assert_eq!(m.text, "<1><3>");
    assert_eq!(
        m.problems
            .iter()
            .filter(|p| p.kind == ProblemKind::Sequence)
            .count(),
        2
    );
    refused(m);
}

#[test]
fn q34_usage_is_not_double_counted_and_a_cut_call_is_kept_exactly() {
    let mut a = assembler(None);
    assert!(feed(&mut a, &recording("groq-tool-call.chunks.txt")).is_empty());
    let t = a.messages()[0].tokens;
    assert_eq!(
        (t.input_tokens, t.output_tokens, t.total_tokens),
        (Some(210), Some(15), Some(225))
    );

    let mut events = anthropic(Some("max_tokens"));
    events.drain(3..5);
    let mut a = assembler(Some(Dialect::Anthropic));
    assert!(feed(&mut a, &events).is_empty());
    let m = &a.messages()[0];
    assert_eq!(inputs(m), vec!["{\"p\":"]);
    assert_eq!(m.finish, Some(Finish::Length));
    assert!(!m.complete);
}

#[test]
fn q35_the_most_specific_error_code_is_reported() {
    let mut a = assembler(Some(Dialect::OpenAiChat));
    let e = a
        .feed_json(
            Some("error"),
            br#"{"error":{"message":"Failed to call a function","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<f>"}}"#,
            None,
        )
        .unwrap_err();
    match e {
        Error::Provider {
            error_type,
            message,
            raw,
            ..
        } => {
            assert_eq!(error_type, "tool_use_failed");
            assert_eq!(message, "Failed to call a function");
            assert!(raw.unwrap().contains("failed_generation"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.messages()[0].finish, Some(Finish::Error));
    refused(&a.messages()[0]);
}

/// The streams of every dialect with a per-block stop for one call, with the
/// call's own stop (`with_stop`) or without it: one event lost before a normal end.
fn one_call_stream(d: Dialect, with_stop: bool) -> Vec<(Option<&'static str>, Value)> {
    let mut ev: Vec<(Option<&'static str>, Value)> = match d {
        Dialect::Anthropic => vec![
            (
                None,
                json!({"type": "message_start", "message": {"usage": {}}}),
            ),
            (
                None,
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}),
            ),
            (
                None,
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            ),
            (None, json!({"type": "content_block_stop", "index": 0})),
            (
                None,
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}),
            ),
            (None, json!({"type": "message_stop"})),
        ],
        Dialect::OpenAiResponses => vec![
            (
                None,
                json!({"type": "response.created", "response": {"status": "in_progress"}}),
            ),
            (
                None,
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}}),
            ),
            (
                None,
                json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": "{}"}),
            ),
            (
                None,
                json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}}),
            ),
            (
                None,
                json!({"type": "response.completed", "response": {"status": "completed"}}),
            ),
        ],
        Dialect::Bedrock => vec![
            (Some("messageStart"), json!({"role": "assistant"})),
            (
                Some("contentBlockStart"),
                json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu_1", "name": "f"}}}),
            ),
            (
                Some("contentBlockDelta"),
                json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
            ),
            (Some("contentBlockStop"), json!({"contentBlockIndex": 0})),
            (Some("messageStop"), json!({"stopReason": "tool_use"})),
        ],
        Dialect::Cohere => vec![
            (None, json!({"type": "message-start", "id": "m"})),
            (
                None,
                json!({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": "tc_1", "type": "function", "function": {"name": "f", "arguments": ""}}}}}),
            ),
            (
                None,
                json!({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": "{}"}}}}}),
            ),
            (None, json!({"type": "tool-call-end", "index": 0})),
            (
                None,
                json!({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
            ),
        ],
        _ => Vec::new(),
    };
    if !with_stop {
        let stop = |(name, e): &(Option<&str>, Value)| {
            let kind = name.or_else(|| e["type"].as_str()).unwrap_or_default();
            [
                "content_block_stop",
                "response.output_item.done",
                "contentBlockStop",
                "tool-call-end",
            ]
            .contains(&kind)
        };
        ev.retain(|e| !stop(e));
    }
    ev
}

#[test]
fn a_call_without_its_own_stop_before_a_normal_end_is_not_complete() {
    for d in [
        Dialect::Anthropic,
        Dialect::OpenAiResponses,
        Dialect::Bedrock,
        Dialect::Cohere,
    ] {
        for with_stop in [true, false] {
            let mut a = assembler(Some(d));
            for (name, e) in one_call_stream(d, with_stop) {
                a.feed_json(name, e.to_string().as_bytes(), None)
                    .unwrap_or_else(|err| panic!("{d}: {err}"));
            }
            a.close(None).unwrap();
            let m = &a.messages()[0];
            assert_eq!(m.tool_uses.len(), 1, "{d}");
            assert_eq!(m.complete, with_stop, "{d}, stop {with_stop}: {m:?}");
            if with_stop {
                assert!(m.problems.is_empty(), "{d}: {:?}", m.problems);
                continue;
            }
            let id = m.tool_uses[0].block.id.clone();
            let p = m
                .problems
                .iter()
                .find(|p| p.kind == ProblemKind::Protocol && p.call == Some(0))
                .unwrap_or_else(|| panic!("{d}: {m:?}"));
            assert_eq!(p.id, id, "{d}");
            assert!(p.message.contains(&id), "{d}: {}", p.message);
            assert!(
                p.message.contains("never received its own stop"),
                "{}",
                p.message
            );
            let stop = match d {
                Dialect::Anthropic => "content_block_stop",
                Dialect::OpenAiResponses => "response.output_item.done",
                Dialect::Bedrock => "contentBlockStop",
                _ => "tool-call-end",
            };
            assert!(p.message.contains(stop), "{d}: {} lacks {stop}", p.message);
        }
    }
}
