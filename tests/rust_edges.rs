//! The edges of issue 25: the opt-in split bounded, ids of our own making
//! distinct, object arguments kept as sent, `item_id` checked, and the last
//! long-tail shapes (QUIRKS Q52–Q54). Each shape beside its twin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, Dialect, Error, NoteKind, ProblemKind,
};
use serde_json::{json, Value};

mod support;

use support::chat::{call, chat, chunk, end, inputs, notes, run};

fn with(dialect: Dialect, limits: AssemblerLimits) -> Assembler {
    Assembler::new(Some(dialect), limits)
}

fn ids(m: &AssembledMessage) -> Vec<&str> {
    m.tool_uses.iter().map(|t| t.block.id.as_str()).collect()
}

// ------------------------------------------------------------ Q40: the split

fn split(max_calls: usize) -> Assembler {
    with(
        Dialect::OpenAiChat,
        AssemblerLimits {
            split_concatenated: true,
            max_calls,
            ..AssemblerLimits::default()
        },
    )
}

#[test]
fn q40_split_of_60_kb_of_empty_objects_is_bounded_by_max_calls() {
    let bomb = "{}".repeat(30_000);
    let (m, errors) = run(
        &mut split(4096),
        &[call(0, Some("call_a"), Some("f"), json!(bomb)), end()],
    );
    assert!(errors.is_empty(), "{errors:?}");
    // Not split: one call, as sent, and a problem naming the limit.
    assert_eq!(m.tool_uses.len(), 1);
    assert_eq!(m.tool_uses[0].block.input, bomb);
    assert!(!m.complete);
    let p = m
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::NotApplied);
    let p = p.expect("a problem naming the limit");
    assert!(p.message.contains("max_calls (4096)"), "{}", p.message);
    assert_eq!(p.call, Some(0));
    assert!(m.notes.is_empty());
}

#[test]
fn q40_twin_a_split_within_max_calls_gives_every_object_once() {
    let pieces = 30_000;
    let bomb = "{}".repeat(pieces);
    let (m, errors) = run(
        &mut split(pieces + 1),
        &[
            call(0, Some("call_a"), Some("f"), json!(bomb)),
            call(1, Some("call_b"), Some("g"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses.len(), pieces + 1);
    assert!(m.tool_uses[..pieces].iter().all(|t| t.block.input == "{}"));
    assert_eq!(m.tool_uses[0].block.id, "call_a_1");
    assert_eq!(m.tool_uses[pieces - 1].block.id, format!("call_a_{pieces}"));
    // One note, its list of ids cut short.
    assert_eq!(notes(&m), [NoteKind::ConcatenatedSplit]);
    assert!(m.notes[0].message.len() < 400, "{}", m.notes[0].message);
    assert!(m.notes[0].message.contains("and 29992 more"));
    // One call over the bound is refused by name as well.
    let (m, _) = run(
        &mut split(pieces),
        &[
            call(0, Some("call_a"), Some("f"), json!(bomb)),
            call(1, Some("call_b"), Some("g"), json!("{}")),
            end(),
        ],
    );
    assert_eq!(m.tool_uses.len(), 2);
    assert!(!m.complete);
}

#[test]
fn q40_split_ids_skip_ids_the_message_already_has() {
    let (m, errors) = run(
        &mut split(4096),
        &[
            call(0, Some("a"), Some("f"), json!(r#"{"q":1}{"q":2}"#)),
            call(1, Some("a_1"), Some("f"), json!(r#"{"q":3}"#)),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(ids(&m), ["a_2", "a_3", "a_1"]);
    assert!(m.complete, "{:?}", m.problems);
}

// ------------------------------------------------ ids of our own making (Q8, Q38)

#[test]
fn q8_a_sent_call_0_1_then_an_id_less_call_gives_two_ids() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_0_1"), Some("f"), json!("{}")),
            call(1, None, Some("g"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(ids(&m), ["call_0_1", "call_0_1_2"]);
    assert!(!m.tool_uses[0].id_minted && m.tool_uses[1].id_minted);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q8_a_minted_call_0_0_then_the_same_id_sent_keeps_the_sent_one() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, None, Some("f"), json!("{}")),
            call(1, Some("call_0_0"), Some("g"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    // The sent id passes as sent; the minted one moves aside.
    assert_eq!(ids(&m), ["call_0_0_2", "call_0_0"]);
    assert!(m.tool_uses[0].id_minted && !m.tool_uses[1].id_minted);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q8_twin_without_a_clash_minted_ids_keep_their_form() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, None, Some("f"), json!("{}")),
            call(1, Some("call_9"), Some("g"), json!("{}")),
            call(2, None, Some("h"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(ids(&m), ["call_0_0", "call_9", "call_0_2"]);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q38_a_rename_and_a_third_calls_minted_id_never_meet() {
    // `call_0` twice: the second is renamed `call_0_2`, which is also the id
    // Q8 mints for the third call (choice 0, index 2).
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_0"), Some("f"), json!(r#"{"a":1}"#)),
            call(1, Some("call_0"), Some("f"), json!(r#"{"a":2}"#)),
            call(2, None, Some("g"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let got = ids(&m);
    assert_eq!(got, ["call_0", "call_0_2", "call_0_2_2"]);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q38_a_rename_then_the_same_id_sent_keeps_the_sent_one() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("x"), Some("f"), json!(r#"{"a":1}"#)),
            call(1, Some("x"), Some("f"), json!(r#"{"a":2}"#)),
            call(2, Some("x_2"), Some("g"), json!("{}")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(ids(&m), ["x", "x_3", "x_2"]);
    assert_eq!(m.tool_uses[1].sent_id.as_deref(), Some("x"));
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q38_twin_a_repeated_segment_with_one_id_is_still_refused() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("x"), Some("f"), json!(r#"{"a":1}"#)),
            call(1, Some("x"), Some("f"), json!(r#"{"a":1}"#)),
            end(),
        ],
    );
    assert!(!errors.is_empty());
    assert!(!m.complete);
}

// ------------------------------------------- Q42: object arguments exactly as sent

/// A chat chunk whose call's `arguments` is the JSON object text `object`.
fn object_call(object: &str) -> String {
    format!(
        r#"{{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_a","function":{{"name":"f","arguments":{object}}}}}]}},"finish_reason":null}}]}}"#
    )
}

fn feed_texts(a: &mut Assembler, events: &[String]) -> (AssembledMessage, Vec<Error>) {
    let mut errors = Vec::new();
    for e in events {
        if let Err(err) = a.feed_json(None, e.as_bytes(), None) {
            errors.push(err);
        }
    }
    if let Err(err) = a.close(None) {
        errors.push(err);
    }
    (a.messages().remove(0), errors)
}

const EXACT: [(&str, &str); 4] = [
    (
        r#"{"n": 123456789012345678901234567890}"#,
        r#"{"n":123456789012345678901234567890}"#,
    ),
    (r#"{"x": 1e400, "y": -0.0}"#, r#"{"x":1e400,"y":-0.0}"#),
    (
        r#"{"b": 1, "a": {"d": 2.50, "c": [1E2]}}"#,
        r#"{"b":1,"a":{"d":2.50,"c":[1E2]}}"#,
    ),
    (
        r#"{ "s" : "a \" b\\" , "t":"\u00e9" }"#,
        r#"{"s":"a \" b\\","t":"é"}"#,
    ),
];

#[test]
fn q42_object_arguments_keep_every_number_and_key_as_sent_in_a_stream() {
    for (sent, kept) in EXACT {
        let (m, errors) = feed_texts(&mut chat(), &[object_call(sent), end().to_string()]);
        assert!(errors.is_empty(), "{sent}: {errors:?}");
        assert_eq!(inputs(&m), [kept], "{sent}");
        assert_eq!(notes(&m), [NoteKind::ArgumentsObject]);
        assert!(m.complete, "{:?}", m.problems);
    }
}

#[test]
fn q42_twin_a_second_different_object_is_still_refused() {
    let (m, errors) = feed_texts(
        &mut chat(),
        &[
            object_call(r#"{"n": 1}"#),
            object_call(r#"{"n": 2}"#),
            end().to_string(),
        ],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(!m.complete);
    // The same object again, however spaced, is the same call.
    let (m, errors) = feed_texts(
        &mut chat(),
        &[
            object_call(r#"{"n": 10000000000000000000001}"#),
            object_call(r#"{"n":10000000000000000000001}"#),
            end().to_string(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), [r#"{"n":10000000000000000000001}"#]);
}

fn chat_body(arguments: &str) -> String {
    format!(
        r#"{{"object":"chat.completion","id":"x","choices":[{{"index":0,"message":{{"role":"assistant","tool_calls":[{{"id":"call_a","type":"function","function":{{"name":"f","arguments":{arguments}}}}}]}},"finish_reason":"tool_calls"}}]}}"#
    )
}

#[test]
fn q42_a_whole_chat_body_agrees_with_the_stream_on_object_arguments() {
    for (sent, kept) in EXACT {
        let (m, errors) = feed_texts(&mut chat(), &[chat_body(sent)]);
        assert!(errors.is_empty(), "{sent}: {errors:?}");
        assert_eq!(inputs(&m), [kept], "{sent}");
        assert!(m.complete, "{:?}", m.problems);
        let (streamed, _) = feed_texts(&mut chat(), &[object_call(sent), end().to_string()]);
        assert_eq!(inputs(&m), inputs(&streamed), "{sent}");
    }
}

#[test]
fn q42_twin_a_whole_chat_body_keeps_string_arguments_byte_for_byte() {
    let sent = r#"{"b": 1e400, "a": 123456789012345678901234567890}"#;
    let (m, errors) = feed_texts(&mut chat(), &[chat_body(&json!(sent).to_string())]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), [sent]);
    assert!(m.complete, "{:?}", m.problems);
}

#[test]
fn q42_ollama_object_arguments_keep_a_30_digit_integer() {
    let line = r#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"b":123456789012345678901234567890,"a":1e400}}}]},"done":false}"#;
    let last = r#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#;
    let mut a = with(Dialect::Ollama, AssemblerLimits::default());
    let (m, errors) = feed_texts(&mut a, &[line.to_owned(), last.to_owned()]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        inputs(&m),
        [r#"{"b":123456789012345678901234567890,"a":1e400}"#]
    );
}

#[test]
fn q42_a_body_with_1e400_is_still_told_a_body_in_auto() {
    let mut a = Assembler::new(None, AssemblerLimits::default());
    let (m, errors) = feed_texts(&mut a, &[chat_body(r#"{"x": 1e400}"#)]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(a.dialect(), Some(Dialect::OpenAiChat));
    assert_eq!(inputs(&m), [r#"{"x":1e400}"#]);
    assert!(m.complete, "{:?}", m.problems);
}

// ------------------------------------------------------ Responses: item_id checked

fn responses() -> Assembler {
    with(Dialect::OpenAiResponses, AssemblerLimits::default())
}

fn ev(kind: &str, mut fields: Value) -> Value {
    fields["type"] = json!(kind);
    fields
}

fn item(kind: &str, oi: i64, id: &str, call_id: &str, name: &str, args: &str) -> Value {
    ev(
        kind,
        json!({"output_index": oi, "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": args}}),
    )
}

fn args_done(oi: i64, item_id: &str, args: &str) -> Value {
    ev(
        "response.function_call_arguments.done",
        json!({"output_index": oi, "item_id": item_id, "arguments": args}),
    )
}

fn args_delta(oi: i64, item_id: &str, delta: &str) -> Value {
    ev(
        "response.function_call_arguments.delta",
        json!({"output_index": oi, "item_id": item_id, "delta": delta}),
    )
}

fn completed() -> Value {
    ev(
        "response.completed",
        json!({"response": {"status": "completed"}}),
    )
}

fn is_bad_value_naming(e: &Error, what: &str) -> bool {
    matches!(e, Error::Decode { .. }) && e.to_string().contains(what)
}

#[test]
fn responses_an_early_done_for_another_item_is_refused_by_name() {
    // `.done` for fc_1 at output index 0, then output index 0 announced as fc_2.
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            args_done(0, "fc_1", r#"{"city":"Paris"}"#),
            item(
                "response.output_item.added",
                0,
                "fc_2",
                "call_2",
                "get_time",
                "",
            ),
            item(
                "response.output_item.done",
                0,
                "fc_2",
                "call_2",
                "get_time",
                "{}",
            ),
            completed(),
        ],
    );
    assert!(
        errors
            .iter()
            .any(|e| is_bad_value_naming(e, "\"fc_2\"") && e.to_string().contains("\"fc_1\"")),
        "{errors:?}"
    );
    assert!(!m.complete);
    // fc_2 never took fc_1's arguments.
    assert!(m
        .tool_uses
        .iter()
        .all(|t| !(t.block.name == "get_time" && t.block.input.contains("Paris"))));
}

#[test]
fn responses_a_delta_naming_another_item_than_its_output_index_is_refused() {
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
            item("response.output_item.added", 1, "fc_2", "call_2", "g", ""),
            args_delta(1, "fc_1", r#"{"a":1}"#),
            completed(),
        ],
    );
    assert!(
        errors.iter().any(|e| is_bad_value_naming(e, "fc_1")),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(inputs(&m).iter().all(|i| i.is_empty()));
}

#[test]
fn responses_twin_events_naming_their_own_item_or_none_are_read() {
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
            args_delta(0, "fc_1", r#"{"a":"#),
            ev(
                "response.function_call_arguments.delta",
                json!({"output_index": 0, "delta": "1}"}),
            ),
            args_done(0, "fc_1", r#"{"a":1}"#),
            item(
                "response.output_item.done",
                0,
                "fc_1",
                "call_1",
                "f",
                r#"{"a":1}"#,
            ),
            completed(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"a":1}"#]);
    // The early done for the item its `added` names is still Q44's rule.
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            args_done(0, "fc_1", r#"{"a":1}"#),
            item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
            item(
                "response.output_item.done",
                0,
                "fc_1",
                "call_1",
                "f",
                r#"{"a":1}"#,
            ),
            completed(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(notes(&m), [NoteKind::ArgumentsDoneEarly]);
}

// ------------------------------------- bedrock-invoke: another family refused by name

fn claude_start() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
}

#[test]
fn bedrock_invoke_a_cohere_event_is_refused_by_name_first_or_later() {
    let cohere_v2 = json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "hi"}}}});
    let cohere_v2_start =
        json!({"type": "message-start", "id": "x", "delta": {"message": {"role": "assistant"}}});
    let command = json!({"event_type": "text-generation", "is_finished": false, "text": "hi"});
    let later = |e: &Value| [claude_start(), vec![e.clone()]].concat();
    for events in [
        later(&cohere_v2),
        later(&command),
        vec![cohere_v2_start.clone()],
    ] {
        let mut a = with(Dialect::BedrockInvoke, AssemblerLimits::default());
        let (m, errors) = run(&mut a, &events);
        assert!(
            errors
                .iter()
                .any(|e| matches!(e, Error::Decode { .. })
                    && e.to_string().contains("Cohere Command")),
            "{events:?}: {errors:?}"
        );
        assert!(!m.complete);
        assert_eq!(m.text, "");
        assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    }
}

#[test]
fn bedrock_invoke_twin_an_unknown_claude_event_is_still_skipped() {
    let mut events = claude_start();
    events.push(json!({"type": "some_future_event", "x": 1}));
    events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}));
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}));
    events.push(json!({"type": "message_stop"}));
    let mut a = with(Dialect::BedrockInvoke, AssemblerLimits::default());
    let (m, errors) = run(&mut a, &events);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.text, "hi");
    assert_eq!(m.skipped.len(), 1);
}

// --------------------------- gemini-interactions: a start's arguments are kept

fn interaction(start_args: Value, deltas: &[Value]) -> Vec<Value> {
    let mut events = vec![
        json!({"interaction": {"id": "i1", "status": "in_progress"}, "event_type": "interaction.created"}),
        json!({"index": 0, "step": {"id": "c1", "type": "function_call", "name": "get_weather", "arguments": start_args}, "event_type": "step.start"}),
    ];
    for d in deltas {
        events.push(json!({"index": 0, "delta": {"arguments": d, "type": "arguments_delta"}, "event_type": "step.delta"}));
    }
    events.push(json!({"index": 0, "event_type": "step.stop"}));
    events.push(json!({"interaction": {"id": "i1", "status": "requires_action"}, "event_type": "interaction.completed"}));
    events
}

#[test]
fn gemini_interactions_a_delta_never_overrides_a_starts_arguments() {
    let start = json!({"city": "Paris"});
    let (m, errors) = run(
        &mut with(Dialect::GeminiInteractions, AssemblerLimits::default()),
        &interaction(start, &[json!(r#"{"city":"Rome"}"#)]),
    );
    assert!(
        errors.iter().any(|e| matches!(e, Error::Decode { .. })
            && e.to_string()
                .contains("step 0 started with the arguments {\"city\":\"Paris\"}")),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(inputs(&m).iter().all(|i| !i.contains("Rome")));
}

#[test]
fn gemini_interactions_twin_empty_start_arguments_take_the_deltas_and_a_restatement_passes() {
    let (m, errors) = run(
        &mut with(Dialect::GeminiInteractions, AssemblerLimits::default()),
        &interaction(json!({}), &[json!(r#"{"city":"#), json!(r#""Rome"}"#)]),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"city":"Rome"}"#]);
    // A start with arguments and no delta, or the same arguments again.
    for deltas in [vec![], vec![json!(r#"{"city":"Paris"}"#)]] {
        let (m, errors) = run(
            &mut with(Dialect::GeminiInteractions, AssemblerLimits::default()),
            &interaction(json!({"city": "Paris"}), &deltas),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert!(m.complete, "{:?}", m.problems);
        assert_eq!(inputs(&m), [r#"{"city":"Paris"}"#]);
    }
}

// ------------------------------------------ Q52: an empty custom beside a function

fn q52_call(function: Value, custom: Value, kind: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_a", "type": kind, "function": function, "custom": custom}]}),
        None,
    )
}

fn empty_custom() -> Value {
    json!({"name": "", "input": ""})
}

#[test]
fn q52_a_function_call_with_an_empty_custom_beside_it_is_the_function_call() {
    let (m, errors) = run(
        &mut chat(),
        &[
            q52_call(
                json!({"name": "get_weather", "arguments": "{\"city\":"}),
                empty_custom(),
                "function",
            ),
            q52_call(
                json!({"name": "", "arguments": "\"Paris\"}"}),
                empty_custom(),
                "",
            ),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses.len(), 1);
    let t = &m.tool_uses[0].block;
    assert_eq!(
        (t.name.as_str(), t.input.as_str(), t.kind.as_str()),
        ("get_weather", r#"{"city":"Paris"}"#, "function")
    );
    assert_eq!(notes(&m), [NoteKind::EmptyCustomIgnored]);
    assert_eq!(m.notes[0].call, Some(0));
}

#[test]
fn q52_a_whole_chat_body_with_an_empty_custom_gives_the_function_call() {
    let body = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}, "custom": {"name": "", "input": ""}}
    ]}}]});
    let (m, errors) = run(&mut chat(), &[body]);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.tool_uses[0].block.kind, "function");
    assert_eq!(m.tool_uses[0].block.name, "get_weather");
    assert_eq!(notes(&m), [NoteKind::EmptyCustomIgnored]);
}

#[test]
fn q52_twin_a_filled_custom_with_type_custom_stays_custom() {
    let (m, errors) = run(
        &mut chat(),
        &[
            q52_call(
                json!({"name": "", "arguments": ""}),
                json!({"name": "run_sql", "input": "SELECT 1"}),
                "custom",
            ),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    let t = &m.tool_uses[0].block;
    assert_eq!(
        (t.name.as_str(), t.input.as_str(), t.kind.as_str()),
        ("run_sql", "SELECT 1", "custom_tool_call")
    );
    assert!(m.notes.is_empty());
}

#[test]
fn q52_twin_both_filled_or_type_custom_with_an_empty_custom_is_refused() {
    for (custom, kind) in [
        (json!({"name": "run_sql", "input": "SELECT 1"}), "function"),
        (empty_custom(), "custom"),
    ] {
        let (m, errors) = run(
            &mut chat(),
            &[
                q52_call(
                    json!({"name": "get_weather", "arguments": "{}"}),
                    custom.clone(),
                    kind,
                ),
                end(),
            ],
        );
        assert!(
            errors
                .iter()
                .any(|e| matches!(e, Error::Decode { .. })
                    && e.to_string().contains("cannot be told")),
            "{custom} {kind}: {errors:?}"
        );
        assert!(!m.complete);
    }
}

// ------------------------------------------------- Q53: Cohere `arguments: "null"`

fn cohere_call(id: &str, name: &str, args: &str, ended: bool) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}),
        json!({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": id, "type": "function", "function": {"name": name, "arguments": ""}}}}}),
        json!({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": args}}}}}),
    ];
    if ended {
        events.push(json!({"type": "tool-call-end", "index": 0}));
        events.push(json!({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}));
    }
    events
}

fn cohere() -> Assembler {
    with(Dialect::Cohere, AssemblerLimits::default())
}

#[test]
fn q53_cohere_null_arguments_of_a_complete_call_are_the_empty_object() {
    let (m, errors) = run(&mut cohere(), &cohere_call("c1", "get_time", "null", true));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), ["{}"]);
    assert_eq!(notes(&m), [NoteKind::NullArgumentsEmpty]);
    assert_eq!(m.notes[0].call, Some(0));
    // The whole body says the same.
    let body = json!({"id": "m1", "finish_reason": "TOOL_CALL", "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "null"}}
    ]}});
    let (m, errors) = run(&mut cohere(), &[body]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), ["{}"]);
    assert_eq!(notes(&m), [NoteKind::NullArgumentsEmpty]);
}

#[test]
fn q53_twin_null_stays_null_when_the_call_is_not_otherwise_complete_or_not_cohere() {
    // Cut before the call's end: nothing is interpreted.
    let (m, _) = run(&mut cohere(), &cohere_call("c1", "get_time", "null", false));
    assert_eq!(inputs(&m), ["null"]);
    assert!(m.notes.is_empty() && !m.complete);
    // Without a name.
    let (m, _) = run(&mut cohere(), &cohere_call("c1", "", "null", true));
    assert_eq!(inputs(&m), ["null"]);
    assert!(m.notes.is_empty() && !m.complete);
    // Anything but the whole text `null`.
    let (m, errors) = run(
        &mut cohere(),
        &cohere_call("c1", "get_time", "[null]", true),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), ["[null]"]);
    assert!(m.notes.is_empty());
    // Another dialect keeps `null` as sent.
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("get_time"), json!("null")),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(inputs(&m), ["null"]);
    assert!(m.notes.is_empty());
}

// ------------------------------------------ Q54: two responses spliced in one capture

fn one_response(id: &str, call_id: &str) -> Vec<Value> {
    let mut seq = 0;
    let mut next = |mut e: Value| {
        e["sequence_number"] = json!(seq);
        seq += 1;
        e
    };
    vec![
        next(ev(
            "response.created",
            json!({"response": {"id": id, "status": "in_progress"}}),
        )),
        next(item(
            "response.output_item.added",
            0,
            &format!("fc_{call_id}"),
            call_id,
            "f",
            "",
        )),
        next(args_delta(0, &format!("fc_{call_id}"), "{}")),
        next(item(
            "response.output_item.done",
            0,
            &format!("fc_{call_id}"),
            call_id,
            "f",
            "{}",
        )),
        next(ev(
            "response.completed",
            json!({"response": {"id": id, "status": "completed"}}),
        )),
    ]
}

#[test]
fn q54_a_second_response_in_one_capture_is_a_loud_problem() {
    let events = [
        one_response("resp_1", "call_1"),
        one_response("resp_2", "call_2"),
    ]
    .concat();
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, Error::Protocol { .. }) && e.to_string().contains("resp_2")),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(
        m.problems.iter().any(|p| p.message.contains("resp_2")),
        "{:?}",
        m.problems
    );
    // Never silently: what came after it is not passed off as resent events alone.
    assert_eq!(inputs(&m), ["{}"]);
}

#[test]
fn q54_twin_the_same_response_resent_is_still_q33s_resend() {
    let events = [
        one_response("resp_1", "call_1"),
        one_response("resp_1", "call_1"),
    ]
    .concat();
    let (m, errors) = run(&mut responses(), &events);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), ["{}"]);
    assert_eq!(m.skipped.len(), 5);
}

// ------------------------------------ an error event in another dialect's shape

fn anthropic_start() -> Vec<(Option<&'static str>, Value)> {
    vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        ),
    ]
}

fn run_named(
    a: &mut Assembler,
    events: &[(Option<&str>, Value)],
) -> (AssembledMessage, Vec<Error>) {
    let mut errors = Vec::new();
    for (name, e) in events {
        if let Err(err) = a.feed_json(*name, e.to_string().as_bytes(), None) {
            errors.push(err);
        }
    }
    if let Err(err) = a.close(None) {
        errors.push(err);
    }
    (a.messages().remove(0), errors)
}

fn provider_error_of(errors: &[Error]) -> Option<(String, String)> {
    errors.iter().find_map(|e| match e {
        Error::Provider {
            error_type,
            message,
            ..
        } => Some((error_type.clone(), message.clone())),
        _ => None,
    })
}

#[test]
fn an_openai_shaped_error_ending_an_anthropic_stream_is_a_provider_error() {
    let nested =
        json!({"error": {"code": 500, "message": "Failed to parse input", "type": "server_error"}});
    let top = json!({"code": 500, "message": "Failed to parse input", "type": "server_error"});
    for (name, body) in [
        (Some("error"), nested.clone()),
        (Some("error"), top.clone()),
        (None, top),
        (None, nested),
    ] {
        let mut events = anthropic_start();
        events.push((name, body.clone()));
        let mut a = with(Dialect::Anthropic, AssemblerLimits::default());
        let (m, errors) = run_named(&mut a, &events);
        let got = provider_error_of(&errors);
        assert_eq!(
            got,
            Some((
                "server_error".to_owned(),
                "Failed to parse input".to_owned()
            )),
            "{name:?} {body}: {errors:?}"
        );
        assert!(!m.complete);
        assert!(m.skipped.is_empty(), "{:?}", m.skipped);
        assert!(
            m.problems.iter().any(|p| p.kind == ProblemKind::Provider),
            "{:?}",
            m.problems
        );
    }
}

#[test]
fn twin_an_unknown_event_that_is_no_error_is_still_skipped() {
    let mut events = anthropic_start();
    events.push((
        None,
        json!({"type": "some_future_event", "message": "hello"}),
    ));
    events.push((None, json!({"type": "content_block_stop", "index": 0})));
    events.push((None, json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}})));
    events.push((None, json!({"type": "message_stop"})));
    let mut a = with(Dialect::Anthropic, AssemblerLimits::default());
    let (m, errors) = run_named(&mut a, &events);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(m.skipped.len(), 1);
}

#[test]
fn a_bare_error_object_in_a_chat_stream_is_a_provider_error() {
    let top = json!({"code": 500, "message": "Failed to parse input", "type": "server_error"});
    let (m, errors) = run(
        &mut chat(),
        &[call(0, Some("call_a"), Some("f"), json!("{")), top],
    );
    assert_eq!(
        provider_error_of(&errors),
        Some((
            "server_error".to_owned(),
            "Failed to parse input".to_owned()
        )),
        "{errors:?}"
    );
    assert!(!m.complete);
}

// ------------------------------------------------- Q5: finish_reason "" is absent

#[test]
fn q5_an_empty_finish_reason_on_a_chunk_is_absent_not_the_end() {
    let filled = |delta: Value| chunk(delta, Some(""));
    let (m, errors) = run(
        &mut chat(),
        &[
            filled(json!({"role": "assistant", "content": ""})),
            filled(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{\"a\":"}}]}),
            ),
            filled(
                json!({"tool_calls": [{"index": 0, "id": "", "type": "", "function": {"name": "", "arguments": "1}"}}]}),
            ),
            end(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"a":1}"#]);
    assert_eq!(m.finish_reason.as_deref(), Some("tool_calls"));
}

#[test]
fn q5_twin_a_real_finish_reason_still_ends_the_message() {
    let (m, errors) = run(
        &mut chat(),
        &[
            call(0, Some("call_a"), Some("f"), json!("{\"a\":1}")),
            chunk(json!({}), Some("stop")),
            call(0, None, None, json!("more")),
        ],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(!m.complete);
    assert_eq!(m.finish_reason.as_deref(), Some("stop"));
    // A body whose finish_reason is "" is whole: Q63's rule ends it (every
    // call's input, here none, complete), with its note.
    let body = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "", "message": {"role": "assistant", "content": "hi"}}]});
    let (m, errors) = run(&mut chat(), &[body]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.text, "hi");
    assert!(m.complete && m.finish_reason.as_deref() == Some(""));
    assert_eq!(notes(&m), [NoteKind::EmptyFinishEnded]);
    // Its twin: a call cut short in such a body keeps it not ended.
    let cut = json!({"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "", "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\":"}}]}}]});
    let (m, errors) = run(&mut chat(), &[cut]);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!m.complete && m.finish_reason.is_none() && m.notes.is_empty());
}

// ------------------------------------ Q44: only a replay from the first byte is stale

#[test]
fn q44_a_lone_repeated_tail_after_done_is_refused() {
    let paris = r#"{"city":"Paris"}"#;
    for tail in [r#""Paris"}"#, "}", r#"Paris"}"#] {
        let (m, errors) = run(
            &mut responses(),
            &[
                ev("response.created", json!({})),
                item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
                args_delta(0, "fc_1", r#"{"city":"#),
                args_delta(0, "fc_1", r#""Paris"}"#),
                args_done(0, "fc_1", paris),
                args_delta(0, "fc_1", tail),
                item("response.output_item.done", 0, "fc_1", "call_1", "f", paris),
                completed(),
            ],
        );
        assert_eq!(errors.len(), 1, "{tail}: {errors:?}");
        assert!(
            matches!(errors[0], Error::Protocol { .. }),
            "{:?}",
            errors[0]
        );
        assert!(!m.complete);
        assert_eq!(inputs(&m), [paris]);
    }
}

#[test]
fn q44_twin_the_deltas_replayed_from_the_first_byte_are_skipped() {
    let paris = r#"{"city":"Paris"}"#;
    let (m, errors) = run(
        &mut responses(),
        &[
            ev("response.created", json!({})),
            item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
            args_delta(0, "fc_1", r#"{"city":"#),
            args_delta(0, "fc_1", r#""Paris"}"#),
            args_done(0, "fc_1", paris),
            args_delta(0, "fc_1", r#"{"city":"#),
            args_delta(0, "fc_1", r#""Paris"}"#),
            item("response.output_item.done", 0, "fc_1", "call_1", "f", paris),
            completed(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(notes(&m), [NoteKind::StaleDeltaSkipped]);
}

// ---------------------------------------------- Q47: the xAI model spellings

fn xai_custom_call(model: &str) -> AssembledMessage {
    let custom = |kind: &str| {
        ev(
            kind,
            json!({"output_index": 0, "item": {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c1", "name": "x_keyword_search", "input": "{\"query\":\"a\"}"}}),
        )
    };
    let (m, errors) = run(
        &mut responses(),
        &[
            ev(
                "response.created",
                json!({"response": {"id": "r1", "model": model}}),
            ),
            custom("response.output_item.added"),
            custom("response.output_item.done"),
            completed(),
        ],
    );
    assert!(errors.is_empty(), "{errors:?}");
    m
}

#[test]
fn q47_the_listed_xai_spellings_in_any_case_make_xais_tools_server_side() {
    for model in ["grok-4", "xai/grok-4-fast", "Grok-4", "XAI/Grok-4"] {
        let m = xai_custom_call(model);
        assert!(m.tool_uses[0].server_side, "{model}");
        assert_eq!(notes(&m), [NoteKind::XaiServerTool], "{model}");
    }
}

#[test]
fn q47_twin_other_spellings_stay_client_calls() {
    for model in [
        "grok",
        "openrouter/grok-4",
        "x-ai/grok-4",
        "grok4",
        "gpt-4o",
    ] {
        let m = xai_custom_call(model);
        assert!(!m.tool_uses[0].server_side, "{model}");
        assert!(m.notes.is_empty(), "{model}");
    }
}

// ------------------------------------------------ claims in docs/quirks.md

#[test]
fn quirks_md_names_every_registry_dialect_as_read_and_none_as_not_read() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/quirks.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let section = doc
        .split("## Which dialects these rows reach")
        .nth(1)
        .expect("docs/quirks.md has its section on the dialects read");
    for d in Dialect::ALL {
        assert!(
            section.contains(&format!("`{}`", d.name())),
            "{} is not named as read",
            d.name()
        );
    }
    // No sentence says a dialect (or the API it reads) is not read.
    let flat = doc.replace('\n', " ");
    for sentence in flat.split(". ") {
        let lower = sentence.to_lowercase();
        if lower.contains("not read yet")
            || lower.contains("not yet read")
            || lower.contains("are not read")
        {
            let named = Dialect::ALL.iter().any(|d| lower.contains(d.name()))
                || ["invokemodel", "interactions api", "bedrock", "gemini"]
                    .iter()
                    .any(|n| lower.contains(n));
            assert!(
                !named,
                "docs/quirks.md says a dialect is not read: {sentence}"
            );
        }
    }
}
