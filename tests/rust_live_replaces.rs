//! A call's input restated with text that does not extend it comes once more,
//! whole, as a `ToolInputDelta` marked `replaces` (Q10/Q44's Responses `.done`,
//! Q41's `{}` then the object), so that a consumer never has to guess it from
//! the text; beside each, the twin that extends the input and is no replacement.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::providers::{Assembler, AssemblerLimits, Dialect, LiveEvent};
use serde_json::{json, Value};

/// Feeds every event and closes: the input deltas (fragment, replaces) and the
/// call's final input.
fn run(dialect: Dialect, events: &[Value]) -> (Vec<(String, bool)>, String) {
    let mut a = Assembler::new(Some(dialect), AssemblerLimits::default());
    let mut live = Vec::new();
    for e in events {
        a.feed_json(None, e.to_string().as_bytes(), Some(&mut live))
            .unwrap();
    }
    a.close(Some(&mut live)).unwrap();
    let deltas = live
        .into_iter()
        .filter_map(|e| match e {
            LiveEvent::ToolInputDelta {
                fragment, replaces, ..
            } => Some((fragment, replaces)),
            _ => None,
        })
        .collect();
    let m = a.messages().remove(0);
    assert!(m.complete, "{:?}", m.problems);
    (deltas, m.tool_uses[0].block.input.clone())
}

/// The text a consumer builds: appended, or started over at a replacing delta.
fn rebuilt(deltas: &[(String, bool)]) -> String {
    let mut text = String::new();
    for (fragment, replaces) in deltas {
        if *replaces {
            text.clear();
        }
        text.push_str(fragment);
    }
    text
}

fn responses(deltas: &[&str], done: &str) -> Vec<Value> {
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"});
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}}),
    ];
    for d in deltas {
        events.push(json!({"type": "response.function_call_arguments.delta",
                           "output_index": 0, "item_id": "fc_1", "delta": d}));
    }
    let mut whole = item;
    whole["arguments"] = json!(done);
    events.push(json!({"type": "response.function_call_arguments.done",
                       "output_index": 0, "item_id": "fc_1", "arguments": done}));
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": whole}));
    events.push(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}),
    );
    for (n, e) in events.iter_mut().enumerate() {
        e["sequence_number"] = json!(n);
    }
    events
}

fn chat(pieces: &[&str]) -> Vec<Value> {
    let mut events: Vec<Value> = pieces
        .iter()
        .enumerate()
        .map(|(n, p)| {
            let mut call = json!({"index": 0, "function": {"arguments": p}});
            if n == 0 {
                call["id"] = json!("call_1");
                call["function"]["name"] = json!("f");
            }
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
        })
        .collect();
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    events
}

#[test]
fn a_done_that_parses_as_the_deltas_continuation_is_marked_as_replacing() {
    // Joined, `{"a":` and `{"b":1}` parse as `{"a":{"b":1}`: only the flag tells.
    let (deltas, input) = run(
        Dialect::OpenAiResponses,
        &responses(&[r#"{"a":"#], r#"{"b":1}"#),
    );
    assert_eq!(
        deltas,
        vec![
            (r#"{"a":"#.to_owned(), false),
            (r#"{"b":1}"#.to_owned(), true)
        ]
    );
    assert_eq!(rebuilt(&deltas), input);
    assert_eq!(input, r#"{"b":1}"#);
}

#[test]
fn twin_a_done_that_extends_the_deltas_sends_only_its_tail() {
    let (deltas, input) = run(
        Dialect::OpenAiResponses,
        &responses(&[r#"{"a":"#], r#"{"a":1}"#),
    );
    assert_eq!(
        deltas,
        vec![(r#"{"a":"#.to_owned(), false), ("1}".to_owned(), false)]
    );
    assert_eq!(rebuilt(&deltas), input);
}

#[test]
fn q41_the_real_object_after_an_empty_one_is_marked_as_replacing() {
    let (deltas, input) = run(Dialect::OpenAiChat, &chat(&["{}", r#"{"city": "Paris"}"#]));
    assert_eq!(
        deltas,
        vec![
            ("{}".to_owned(), false),
            (r#"{"city": "Paris"}"#.to_owned(), true)
        ]
    );
    assert_eq!(rebuilt(&deltas), input);
}

#[test]
fn twin_q36_and_plain_appends_are_never_marked() {
    for pieces in [
        &["{", r#"{"city": "Paris"}"#][..],
        &[r#"{"city": "#, r#""Paris"}"#][..],
    ] {
        let (deltas, input) = run(Dialect::OpenAiChat, &chat(pieces));
        assert!(deltas.iter().all(|(_, replaces)| !replaces), "{deltas:?}");
        assert_eq!(rebuilt(&deltas), input);
    }
}
