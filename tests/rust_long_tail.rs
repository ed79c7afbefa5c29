//! The long tail (QUIRKS Q36 onward): shapes of OpenAI-compatible servers that
//! a narrow rule accepts, each with a note on the message, and beside each the
//! neighbouring attack shape, still refused. One test per side, named after its row.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, Dialect, Error, NoteKind, ProblemKind, Rule,
};
use serde_json::{json, Value};

mod support;

use support::chat::{call, chat, chunk, end, inputs, notes, run};

#[test]
fn q36_incomplete_arguments_then_the_whole_arguments_give_the_object_once() {
    for (held, whole) in [
        (
            r#"{"date": "2025-03-26", "income_type": "支出""#,
            r#"{"date": "2025-03-26", "income_type": "支出"}"#,
        ),
        ("{", r#"{"city": "Paris"}"#),
    ] {
        let (m, errors) = run(
            &mut chat(),
            &[
                call(0, Some("call_a"), Some("f"), json!(held)),
                call(0, None, None, json!(whole)),
                end(),
            ],
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(inputs(&m), [whole]);
        assert_eq!(notes(&m), [NoteKind::ArgumentsRestated]);
        assert!(m.complete && m.problems.is_empty());
        assert_eq!(m.notes[0].call, Some(0));
    }
}

#[test]
fn q36_twin_a_continuation_is_still_an_append() {
    // Q10's shape: the second fragment continues the first.
    let (m, _) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!(r#"{"a":"#)),
            call(0, None, None, json!("1}")),
            end(),
        ],
    );
    assert_eq!(inputs(&m), [r#"{"a":1}"#]);
    assert!(m.notes.is_empty());
    // A whole value that does not start with what is held is appended, and stays invalid.
    let (m, _) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!(r#"{"a": 1, "#)),
            call(0, None, None, json!(r#"{"b": 2}"#)),
            end(),
        ],
    );
    assert_eq!(inputs(&m), [r#"{"a": 1, {"b": 2}"#]);
    assert!(m.notes.is_empty());
}

#[test]
fn q41_empty_object_then_the_real_arguments_replace_it() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("{}")),
            call(0, None, None, json!(r#"{"q": "x"}"#)),
            end(),
        ],
    );
    assert!(errors.is_empty());
    assert_eq!(inputs(&m), [r#"{"q": "x"}"#]);
    assert_eq!(notes(&m), [NoteKind::EmptyArgumentsReplaced]);
    assert!(m.complete);
}

#[test]
fn q41_twin_a_real_object_then_another_is_not_replaced() {
    let (m, _) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!(r#"{"q": "a"}"#)),
            call(0, None, None, json!(r#"{"q": "b"}"#)),
            end(),
        ],
    );
    assert_eq!(inputs(&m), [r#"{"q": "a"}{"q": "b"}"#]);
    assert!(m.notes.is_empty());
}

#[test]
fn q42_arguments_as_an_object_become_its_compact_text() {
    // Fed as text: the keys stay in the order sent.
    let mut a = chat();
    a.feed_json(
        None,
        br#"{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": {"z": 1, "a": [true, null]}}}]}}]}"#,
        None,
    )
    .unwrap();
    let (m, errors) = run(&mut a, &[end()]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), [r#"{"z":1,"a":[true,null]}"#]);
    assert_eq!(notes(&m), [NoteKind::ArgumentsObject]);
    assert!(m.complete);
}

#[test]
fn q42_twin_a_second_object_for_the_same_call_is_refused() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!({"a": 1})),
            call(0, None, None, json!({"b": 2})),
            end(),
        ],
    );
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].to_string().contains("already has arguments"),
        "{}",
        errors[0]
    );
    assert!(!m.complete && !m.problems.is_empty());
    assert_eq!(inputs(&m), [r#"{"a":1}"#]);
}

#[test]
fn q38_two_parallel_calls_with_one_id_are_both_kept() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(
                0,
                Some("call_x"),
                Some("get_weather"),
                json!(r#"{"city": "Paris"}"#),
            ),
            call(
                1,
                Some("call_x"),
                Some("get_weather"),
                json!(r#"{"city": "#),
            ),
            call(1, Some("call_x"), None, json!(r#""Rome"}"#)),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let ids: Vec<&str> = m.tool_uses.iter().map(|t| t.block.id.as_str()).collect();
    assert_eq!(ids, ["call_x", "call_x_2"]);
    assert_eq!(inputs(&m), [r#"{"city": "Paris"}"#, r#"{"city": "Rome"}"#]);
    assert!(m.tool_uses[1].id_minted && !m.tool_uses[0].id_minted);
    assert_eq!(notes(&m), [NoteKind::DuplicateIdRenamed]);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q38_twin_two_identical_calls_with_one_id_stay_a_problem() {
    // Whole at once: refused at the feed, as one id on two calls (Q25).
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_x"), Some("f"), json!(r#"{"a": 1}"#)),
            call(1, Some("call_x"), Some("f"), json!(r#"{"a": 1}"#)),
            end(),
        ],
    );
    assert!(matches!(
        errors.as_slice(),
        [Error::Protocol {
            rule: Rule::DuplicateId,
            ..
        }]
    ));
    assert!(!m.complete);
    // Streamed in pieces: the same call again is a problem of the message.
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_x"), Some("f"), json!(r#"{"a": 1}"#)),
            call(1, Some("call_x"), Some("f"), json!(r#"{"a""#)),
            call(1, Some("call_x"), None, json!(": 1}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!m.complete);
    assert!(m
        .problems
        .iter()
        .any(|p| p.message.contains("the same call")));
}

#[test]
fn q38_twin_other_dialects_keep_refusing_one_id_on_two_calls() {
    let mut a = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
    let start = |i: i64| {
        json!({"type": "content_block_start", "index": i,
               "content_block": {"type": "tool_use", "id": "toolu_x", "name": "f", "input": {}}})
    };
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}),
        start(0),
        json!({"type": "content_block_stop", "index": 0}),
        start(1),
    ];
    let mut errors = Vec::new();
    for e in &events {
        if let Err(err) = a.feed_json(None, e.to_string().as_bytes(), None) {
            errors.push(err);
        }
    }
    assert!(matches!(
        errors.as_slice(),
        [Error::Protocol {
            rule: Rule::DuplicateId,
            ..
        }]
    ));
    assert!(a.messages()[0].notes.is_empty());
}

#[test]
fn q39_a_later_different_finish_reason_alone_is_ignored_with_a_note() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("{}")),
            end(),
            chunk(json!({}), Some("stop")),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(notes(&m), [NoteKind::LaterFinishReasonIgnored]);
    assert!(m.complete);
}

#[test]
fn q39_twin_content_after_the_end_is_still_refused() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("{}")),
            end(),
            chunk(json!({"content": "more"}), Some("stop")),
        ],
    );
    assert!(matches!(
        errors.as_slice(),
        [Error::Protocol {
            rule: Rule::AfterEnd | Rule::EndedTwice,
            ..
        }]
    ));
    assert!(!m.complete);
}

#[test]
fn q43_arguments_at_another_index_go_to_the_one_open_call() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("")),
            call(1, None, None, json!(r#"{"k": "#)),
            call(1, None, None, json!("2}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), [r#"{"k": 2}"#]);
    assert_eq!(notes(&m), [NoteKind::FragmentRerouted]);
    assert!(m.complete);
}

#[test]
fn q43_twin_with_two_open_calls_nothing_is_rerouted() {
    let (m, _) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("")),
            call(1, Some("call_b"), Some("g"), json!("")),
            call(2, None, None, json!(r#"{"k": 2}"#)),
            end(),
        ],
    );
    assert_eq!(m.tool_uses.len(), 3);
    assert!(m.notes.is_empty());
    assert!(!m.complete, "an unnamed call is not executable (Q7)");
}

#[test]
fn q43_twin_a_rerouted_index_that_names_another_call_is_refused() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("")),
            call(1, None, None, json!(r#"{"k": 2}"#)),
            call(1, Some("call_b"), Some("g"), json!("")),
            end(),
        ],
    );
    assert!(!errors.is_empty());
    assert!(!m.complete);
}

#[test]
fn q45_two_entries_of_one_choice_in_one_chunk_apply_in_order() {
    let two = json!({"object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": "{\"a\""}}]}},
        {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}
    ]});
    let (m, errors) = run(&mut chat(), &[two, end()]);
    assert!(errors.is_empty());
    assert_eq!(inputs(&m), [r#"{"a": 1}"#]);
    assert!(m.complete);
}

#[test]
fn q49_typed_content_parts_give_reasoning_and_text_in_order() {
    let parts = json!([
        {"type": "thinking", "thinking": [{"type": "text", "text": "Let me think."}]},
        {"type": "text", "text": "Hello"}
    ]);
    let (m, errors) = run(
        &mut chat(),
        &[
            chunk(json!({"content": parts}), None),
            chunk(json!({"content": " world"}), Some("stop")),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.text, "Hello world");
    let thinking: Vec<String> = m
        .blocks
        .iter()
        .filter_map(|b| match b {
            _toolstitch::blocks::Block::Thinking(t) => Some(t.thinking.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, ["Let me think."]);
    assert_eq!(notes(&m), [NoteKind::ContentParts]);
    assert!(m.complete);
}

#[test]
fn q49_twin_a_content_of_another_type_is_still_refused() {
    let (m, errors) = run(
        &mut chat(),
        &[
            chunk(json!({"content": 5}), None),
            chunk(json!({}), Some("stop")),
        ],
    );
    assert_eq!(errors.len(), 1);
    assert!(!m.complete);
}

#[test]
fn q51_a_legacy_completions_stream_is_read_as_text() {
    let piece = |t: &str, f: Value| json!({"object": "text_completion", "choices": [{"index": 0, "text": t, "finish_reason": f}]});
    let (m, errors) = run(
        &mut Assembler::new(None, AssemblerLimits::default()),
        &[piece("Hello", Value::Null), piece(", world", json!("stop"))],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.text, "Hello, world");
    assert!(m.complete);
}

#[test]
fn q48_gemini_function_call_id_is_kept() {
    let mut a = Assembler::new(Some(Dialect::Gemini), AssemblerLimits::default());
    let event = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc_7x", "name": "f", "args": {"a": 1}}},
        {"functionCall": {"name": "g", "args": {}}}
    ]}, "finishReason": "STOP"}]});
    let (m, errors) = run(&mut a, &[event]);
    assert!(errors.is_empty(), "{errors:?}");
    let ids: Vec<&str> = m.tool_uses.iter().map(|t| t.block.id.as_str()).collect();
    assert_eq!(ids[0], "fc_7x");
    assert!(!m.tool_uses[0].id_minted && m.tool_uses[1].id_minted);
    assert!(m.complete);
}

fn cut_stream(a: &mut Assembler, completion_tokens: u64) -> AssembledMessage {
    let usage = json!({"object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens}});
    run(
        a,
        &[
            call(0, Some("call_a"), Some("f"), json!(r#"{"a": "abc"}"#)),
            end(),
            usage,
        ],
    )
    .0
}

#[test]
fn q46_a_cut_reported_as_a_normal_end_at_the_output_limit_is_not_complete() {
    let limits = AssemblerLimits {
        max_output_tokens: Some(256),
        ..AssemblerLimits::default()
    };
    let m = cut_stream(&mut Assembler::new(Some(Dialect::OpenAiChat), limits), 256);
    assert!(!m.complete);
    assert!(m
        .problems
        .iter()
        .any(|p| p.kind == ProblemKind::Cut && p.message.contains("256 output tokens")));
}

#[test]
fn q46_twin_below_the_limit_or_without_one_the_message_stays_complete() {
    let limits = AssemblerLimits {
        max_output_tokens: Some(256),
        ..AssemblerLimits::default()
    };
    assert!(cut_stream(&mut Assembler::new(Some(Dialect::OpenAiChat), limits), 255).complete);
    assert!(cut_stream(&mut chat(), 256).complete);
}

#[test]
fn q37_extra_content_is_kept_whole_as_the_calls_provider_state() {
    let signature = json!({"google": {"thought_signature": "c2ln"}});
    let mut opener = call(0, Some("call_a"), Some("f"), json!(""));
    opener["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = signature.clone();
    let (m, errors) = run(
        &mut chat(),
        &[opener, call(0, None, None, json!("{}")), end()],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let block = &m.tool_uses[0].block;
    assert_eq!(block.provider_state_format, "openai-chat");
    let kept: Value = serde_json::from_str(block.provider_state.as_deref().unwrap()).unwrap();
    assert_eq!(kept, signature);
    assert!(m.complete);
}

#[test]
fn q37_twin_without_extra_content_there_is_no_state() {
    let (m, _) = run(
        &mut chat(),
        &[call(0, Some("call_a"), Some("f"), json!("{}")), end()],
    );
    assert!(m.tool_uses[0].block.provider_state.is_none());
}

#[test]
fn q40_several_values_in_one_input_are_counted_and_one_value_with_text_is_not() {
    use _toolstitch::validate::several_values;
    assert_eq!(several_values(br#"{"query":"A"}{"query":"B"}"#), Some(2));
    assert_eq!(several_values(br#"{"query":"A"} trailing"#), None);
}

// ----------------------------------------------------------------- Ollama native

const OLLAMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/ollama/chat-stream-tool-calls.jsonl"
);

fn ollama_stream() -> Vec<Value> {
    std::fs::read_to_string(OLLAMA)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Feeds the recording's lines as they are written (keys in their order).
fn run_lines(a: &mut Assembler) -> (AssembledMessage, Vec<Error>) {
    let mut errors = Vec::new();
    for line in std::fs::read_to_string(OLLAMA).unwrap().lines() {
        if let Err(e) = a.feed_json(None, line.as_bytes(), None) {
            errors.push(e);
        }
    }
    if let Err(e) = a.close(None) {
        errors.push(e);
    }
    (a.messages().remove(0), errors)
}

#[test]
fn ollama_native_chat_stream_gives_its_calls_reasoning_and_usage() {
    for dialect in [Some(Dialect::Ollama), None] {
        let mut a = Assembler::new(dialect, AssemblerLimits::default());
        let (m, errors) = run_lines(&mut a);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(a.dialect(), Some(Dialect::Ollama));
        let calls: Vec<(&str, &str)> = m
            .tool_uses
            .iter()
            .map(|t| (t.block.name.as_str(), t.block.input.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "get_current_weather",
                    r#"{"location":"Toronto","format":"celsius"}"#
                ),
                (
                    "get_current_weather",
                    r#"{"location":"Ottawa","format":"celsius"}"#
                ),
            ]
        );
        assert!(m.tool_uses[0].id_minted);
        assert_eq!(m.tool_uses[1].block.id, "call_4k2m");
        assert_eq!(m.finish_reason.as_deref(), Some("stop"));
        assert_eq!(m.finish, Some(_toolstitch::providers::Finish::ToolCalls));
        assert_eq!(
            (m.tokens.input_tokens, m.tokens.output_tokens),
            (Some(219), Some(56))
        );
        assert!(m.complete, "{:?}", m.problems);
    }
}

#[test]
fn ollama_native_fails_closed() {
    let events = ollama_stream();
    // No done line: cut.
    let mut a = Assembler::new(Some(Dialect::Ollama), AssemblerLimits::default());
    let (m, _) = run(&mut a, &events[..3]);
    assert!(!m.complete);
    // Content after the done line.
    let mut a = Assembler::new(Some(Dialect::Ollama), AssemblerLimits::default());
    let mut after = events.clone();
    after.push(events[1].clone());
    let (m, errors) = run(&mut a, &after);
    assert!(!errors.is_empty());
    assert!(!m.complete);
    // The same id twice is one id on two calls (Q25).
    let mut a = Assembler::new(Some(Dialect::Ollama), AssemblerLimits::default());
    let twice = [events[2].clone(), events[2].clone(), events[3].clone()];
    let (m, errors) = run(&mut a, &twice);
    assert!(matches!(
        errors.as_slice(),
        [Error::Protocol {
            rule: Rule::DuplicateId,
            ..
        }]
    ));
    assert!(!m.complete);
    // An error line is a provider error.
    let mut a = Assembler::new(Some(Dialect::Ollama), AssemblerLimits::default());
    let (m, errors) = run(&mut a, &[json!({"error": "model 'x' not found"})]);
    assert!(matches!(errors.as_slice(), [Error::Provider { .. }]));
    assert!(!m.complete);
}

/// The two `executed_tools` entries of Groq's compound web search (the shape of
/// `tests/fixtures/long_tail/groq_compound-web-search-stream.vcr.yaml`).
fn groq_search(output: Option<&str>) -> Value {
    let mut entry = json!({
        "index": 0,
        "type": "search",
        "arguments": "{\"query\": \"What is the weather in San Francisco today?\"}",
        "search_results": {"results": []},
    });
    if let Some(o) = output {
        entry["output"] = json!(o);
    }
    chunk(json!({"executed_tools": [entry]}), None)
}

#[test]
fn q50_executed_tools_are_server_side_calls_with_minted_ids_and_results() {
    let (m, errors) = run(
        &mut chat(),
        &[
            chunk(json!({"reasoning": "<think>search</think>"}), None),
            groq_search(None),
            groq_search(Some("Title: Weather in San Francisco")),
            chunk(json!({"content": "It is 17 °C."}), None),
            chunk(json!({}), Some("stop")),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete && m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.tool_uses.len(), 1);
    let t = &m.tool_uses[0];
    assert!(t.server_side && t.block.server_side && t.id_minted && t.finished);
    assert_eq!(t.block.name, "search");
    assert_eq!(t.block.kind, "executed_tool");
    assert_eq!(
        t.block.input,
        r#"{"query": "What is the weather in San Francisco today?"}"#
    );
    let result = m
        .blocks
        .iter()
        .find_map(|b| match b {
            _toolstitch::blocks::Block::ToolResult(r) => Some(r),
            _ => None,
        })
        .expect("a result block");
    assert_eq!(result.tool_use_id, t.block.id);
    assert_eq!(result.kind, "executed_tool");
    assert_eq!(
        result.content,
        [_toolstitch::blocks::Block::Text(
            "Title: Weather in San Francisco".into()
        )]
    );
    let state: Value = serde_json::from_str(result.provider_state.as_deref().unwrap()).unwrap();
    assert_eq!(state["search_results"], json!({"results": []}));
    assert_eq!(m.text, "It is 17 °C.");
}

#[test]
fn q50_an_index_less_client_fragment_never_continues_an_executed_tool() {
    let (m, errors) = run(
        &mut chat(),
        &[
            groq_search(None),
            chunk(
                json!({"tool_calls": [{"id": "call_a", "function": {"name": "f", "arguments": "{}"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"function": {"arguments": ""}}]}),
                None,
            ),
            groq_search(Some("done")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let client: Vec<_> = m.tool_uses.iter().filter(|t| !t.server_side).collect();
    assert_eq!(client.len(), 1);
    assert_eq!(client[0].block.id, "call_a");
    assert_eq!(m.tool_uses.len(), 2);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q50_twin_other_arguments_or_a_second_output_for_one_entry_are_refused() {
    let mut other = groq_search(None);
    other["choices"][0]["delta"]["executed_tools"][0]["arguments"] = json!("{\"query\": \"B\"}");
    let (m, errors) = run(&mut chat(), &[groq_search(None), other, end()]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].to_string().contains("other arguments"),
        "{}",
        errors[0]
    );
    assert!(!m.complete);

    let (m, errors) = run(
        &mut chat(),
        &[groq_search(Some("one")), groq_search(Some("two")), end()],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(!m.complete);

    let mut no_index = groq_search(None);
    no_index["choices"][0]["delta"]["executed_tools"][0]
        .as_object_mut()
        .unwrap()
        .remove("index");
    let (m, errors) = run(&mut chat(), &[no_index, end()]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].to_string().contains("executed_tools[0].index"),
        "{}",
        errors[0]
    );
    assert!(!m.complete);
}

fn responses() -> Assembler {
    Assembler::new(Some(Dialect::OpenAiResponses), AssemblerLimits::default())
}

fn ev(kind: &str, mut fields: Value) -> Value {
    fields["type"] = json!(kind);
    fields
}

fn added(args: &str) -> Value {
    ev(
        "response.output_item.added",
        json!({"output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": args}}),
    )
}

fn args_delta(delta: &str) -> Value {
    ev(
        "response.function_call_arguments.delta",
        json!({"output_index": 0, "item_id": "fc_1", "delta": delta}),
    )
}

fn args_done(args: &str) -> Value {
    ev(
        "response.function_call_arguments.done",
        json!({"output_index": 0, "item_id": "fc_1", "arguments": args}),
    )
}

fn item_done(args: &str) -> Value {
    ev(
        "response.output_item.done",
        json!({"output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": args}}),
    )
}

fn completed() -> Value {
    ev(
        "response.completed",
        json!({"response": {"status": "completed"}}),
    )
}

const PARIS: &str = r#"{"city":"Paris"}"#;

/// The error is Q25's: content for a call after its block stopped.
fn assert_after_stop(e: &Error) {
    assert!(
        matches!(
            e,
            Error::Protocol {
                rule: Rule::AfterStop,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn q44_arguments_done_before_the_item_was_added_give_the_call_as_done_says() {
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            args_done(PARIS),
            added(""),
            item_done(PARIS),
            completed(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete && m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(inputs(&m), [PARIS]);
    assert_eq!(m.tool_uses[0].block.id, "call_1");
    assert_eq!(m.tool_uses[0].block.name, "get_weather");
    assert_eq!(notes(&m), [NoteKind::ArgumentsDoneEarly]);
}

#[test]
fn q44_deltas_after_done_that_replay_its_text_are_skipped_with_a_note() {
    // Before the item was announced, and after it; and the ordinary order with
    // the last delta sent again after `done`.
    for events in [
        vec![
            args_done(PARIS),
            added(""),
            args_delta(r#"{"city":"#),
            args_delta(r#""Paris"}"#),
            item_done(PARIS),
        ],
        vec![
            args_done(PARIS),
            args_delta(r#"{"city""#),
            added(""),
            args_delta(r#":"Paris"}"#),
        ],
        vec![
            added(""),
            args_delta(r#"{"city":"#),
            args_delta(r#""Paris"}"#),
            args_done(PARIS),
            args_delta(PARIS),
            item_done(PARIS),
        ],
    ] {
        let mut all = vec![ev("response.created", json!({}))];
        all.extend(events);
        all.push(completed());
        let (m, errors) = run(&mut responses(), &all);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(m.complete && m.problems.is_empty(), "{:?}", m.problems);
        assert_eq!(inputs(&m), [PARIS]);
        assert!(
            notes(&m).contains(&NoteKind::StaleDeltaSkipped),
            "{:?}",
            m.notes
        );
        assert_eq!(
            m.notes
                .iter()
                .filter(|n| n.kind == NoteKind::StaleDeltaSkipped)
                .count(),
            1
        );
    }
}

#[test]
fn q44_twin_a_delta_with_new_text_after_done_is_refused() {
    for late in [r#"{"city":"Rome"}"#, "}", r#"{"city":"Paris"}{"#] {
        let (m, errors) = run(
            &mut responses(),
            &[
                ev("response.created", json!({})),
                added(""),
                args_delta(PARIS),
                args_done(PARIS),
                args_delta(late),
                item_done(PARIS),
                completed(),
            ],
        );
        assert_eq!(errors.len(), 1, "{late}: {errors:?}");
        assert_after_stop(&errors[0]);
        assert!(!m.complete, "{late}");
        assert_eq!(inputs(&m), [PARIS]);
    }
}

#[test]
fn q44_twin_a_delta_after_output_item_done_stays_refused() {
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            args_done(PARIS),
            added(""),
            item_done(PARIS),
            args_delta(r#"{"city":"#),
            completed(),
        ],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_after_stop(&errors[0]);
    assert!(!m.complete);
}

#[test]
fn q44_twin_an_added_item_with_other_arguments_than_the_early_done_is_refused() {
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            args_done(PARIS),
            added(r#"{"city":"Rome"}"#),
            item_done(PARIS),
            completed(),
        ],
    );
    assert!(!errors.is_empty());
    assert!(
        errors[0].to_string().contains("other arguments"),
        "{}",
        errors[0]
    );
    assert!(!m.complete);
}

fn long_tail_fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/long_tail/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

fn xai_stream(model: &str) -> Vec<Value> {
    long_tail_fixture("xai-x-search-tool.chunks.txt")
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["response"]["model"].is_string() {
                v["response"]["model"] = json!(model);
            }
            v
        })
        .collect()
}

#[test]
fn q47_xai_server_tools_sent_as_custom_tool_calls_are_server_side() {
    let (m, errors) = run(&mut responses(), &xai_stream("grok-4-fast-reasoning"));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete && m.problems.is_empty(), "{:?}", m.problems);
    let custom: Vec<_> = m
        .tool_uses
        .iter()
        .filter(|t| t.block.kind == "custom_tool_call")
        .collect();
    let names: Vec<&str> = custom.iter().map(|t| t.block.name.as_str()).collect();
    assert_eq!(names, ["x_keyword_search", "view_x_video"]);
    assert!(custom.iter().all(|t| t.server_side && t.block.server_side));
    assert_eq!(
        custom[0].block.input,
        r#"{"query":"from:xai filter:media","limit":20,"mode":"Latest"}"#
    );
    assert_eq!(custom[0].block.id, "xs_call_24148162");
    // Nothing is left for the client to run.
    assert!(m.tool_uses.iter().all(|t| t.server_side));
    assert_eq!(
        notes(&m),
        [NoteKind::XaiServerTool, NoteKind::XaiServerTool]
    );
}

#[test]
fn q47_twin_the_same_items_from_another_model_or_another_name_stay_client_calls() {
    let (m, errors) = run(&mut responses(), &xai_stream("gpt-5"));
    assert!(errors.is_empty(), "{errors:?}");
    let client: Vec<_> = m.tool_uses.iter().filter(|t| !t.server_side).collect();
    assert_eq!(client.len(), 2);
    assert!(m.notes.is_empty());

    // A grok model's custom tool of the client's own stays the client's.
    let mut events = xai_stream("grok-4");
    for e in &mut events {
        if e["item"]["name"] == "view_x_video" {
            e["item"]["name"] = json!("my_grammar_tool");
        }
        // The final snapshot restates it (issue 34: it must agree with the stream).
        if let Some(output) = e["response"]["output"].as_array_mut() {
            for item in output {
                if item["name"] == "view_x_video" {
                    item["name"] = json!("my_grammar_tool");
                }
            }
        }
    }
    let (m, errors) = run(&mut responses(), &events);
    assert!(errors.is_empty(), "{errors:?}");
    let client: Vec<&str> = m
        .tool_uses
        .iter()
        .filter(|t| !t.server_side)
        .map(|t| t.block.name.as_str())
        .collect();
    assert_eq!(client, ["my_grammar_tool"]);
}

#[test]
fn q47_xai_search_call_items_of_a_whole_response_are_server_side() {
    let body = long_tail_fixture("xai-x-search-tool.1.json");
    let mut a = responses();
    a.feed_json(None, body.as_bytes(), None).unwrap();
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert!(m.complete, "{:?}", m.problems);
    let search: Vec<_> = m
        .tool_uses
        .iter()
        .filter(|t| t.block.kind == "x_search_call")
        .collect();
    assert!(!search.is_empty());
    assert!(search.iter().all(|t| t.server_side));
    assert!(m.tool_uses.iter().all(|t| t.server_side));
}

fn split_chat() -> Assembler {
    Assembler::new(
        Some(Dialect::OpenAiChat),
        AssemblerLimits {
            split_concatenated: true,
            ..AssemblerLimits::default()
        },
    )
}

#[test]
fn q40_split_concatenated_gives_one_call_per_object_with_derived_ids() {
    let (m, errors) = run(
        &mut split_chat(),
        &[
            call(0, Some("call_a"), Some("search"), json!(r#"{"query":"A"}"#)),
            call(0, None, None, json!(r#"{"query":"B"}"#)),
            call(1, Some("call_b"), Some("search"), json!(r#"{"query":"C"}"#)),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete && m.problems.is_empty(), "{:?}", m.problems);
    let calls: Vec<(&str, &str, &str)> = m
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
        calls,
        [
            ("call_a_1", "search", r#"{"query":"A"}"#),
            ("call_a_2", "search", r#"{"query":"B"}"#),
            ("call_b", "search", r#"{"query":"C"}"#),
        ]
    );
    assert!(m.tool_uses[0].id_minted && m.tool_uses[1].id_minted && !m.tool_uses[2].id_minted);
    assert_eq!(m.tool_uses[0].sent_id.as_deref(), Some("call_a"));
    assert_eq!(notes(&m), [NoteKind::ConcatenatedSplit]);
    assert!(m.notes[0].message.contains("call_a_1, call_a_2"));
    let in_blocks = m
        .blocks
        .iter()
        .filter(|b| matches!(b, _toolstitch::blocks::Block::ToolUse(_)))
        .count();
    assert_eq!(in_blocks, 3);
}

#[test]
fn q40_twin_without_the_option_or_with_a_piece_that_is_no_object_nothing_is_split() {
    let whole = r#"{"query":"A"}{"query":"B"}"#;
    let (m, _) = run(
        &mut chat(),
        &[call(0, Some("call_a"), Some("f"), json!(whole)), end()],
    );
    assert_eq!(inputs(&m), [whole]);
    assert!(m.notes.is_empty());
    for input in [
        r#"{"query":"A"}[1]"#,
        r#"{"query":"A"} x"#,
        r#"{"query":"A"}"#,
    ] {
        let (m, _) = run(
            &mut split_chat(),
            &[call(0, Some("call_a"), Some("f"), json!(input)), end()],
        );
        assert_eq!(inputs(&m), [input], "{input}");
        assert_eq!(m.tool_uses[0].block.id, "call_a");
        assert!(m.notes.is_empty());
    }
    // A call still open (the stream cut) is not split: it is not finished.
    let mut a = split_chat();
    a.feed_json(
        None,
        call(0, Some("call_a"), Some("f"), json!(whole))
            .to_string()
            .as_bytes(),
        None,
    )
    .unwrap();
    let m = a.messages().remove(0);
    assert_eq!(inputs(&m), [whole]);
}

#[test]
fn q47_a_whole_xai_response_with_custom_tool_calls_gives_server_side_calls() {
    // The recording's final `response`, fed as a non-streamed body (Q31).
    let body = xai_stream("grok-4-fast-reasoning").pop().unwrap()["response"].clone();
    let mut a = responses();
    a.feed_json(None, body.to_string().as_bytes(), None)
        .unwrap();
    a.close(None).unwrap();
    let m = a.messages().remove(0);
    assert!(m.complete, "{:?}", m.problems);
    let custom: Vec<_> = m
        .tool_uses
        .iter()
        .filter(|t| t.block.kind == "custom_tool_call")
        .collect();
    assert_eq!(custom.len(), 2);
    assert!(m.tool_uses.iter().all(|t| t.server_side));
    assert_eq!(
        notes(&m),
        [NoteKind::XaiServerTool, NoteKind::XaiServerTool]
    );
}
