//! Responses streams read as their providers mean them (issue 36 items 5–9,
//! issue 34 class 1): rotated ids (Q59), approval requests (Q60), replayed
//! events told by their nonce (Q61) and final snapshots checked against the
//! stream. Each shape beside its twin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::providers::{AssembledMessage, Assembler, Dialect, Error, NoteKind, ProblemKind};
use serde_json::{json, Value};

mod support;

use support::chat::{inputs, notes, run};
use support::{assembler, fixture_text};

fn responses() -> Assembler {
    assembler(Some(Dialect::OpenAiResponses))
}

fn ev(kind: &str, mut fields: Value) -> Value {
    fields["type"] = json!(kind);
    fields
}

/// Numbers the events from 0, as a Responses stream does.
fn numbered(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .enumerate()
        .map(|(n, mut e)| {
            e["sequence_number"] = json!(n);
            e
        })
        .collect()
}

fn response(kind: &str, id: &str, status: &str) -> Value {
    ev(kind, json!({"response": {"id": id, "status": status}}))
}

fn fc_item(kind: &str, oi: i64, id: &str, call_id: &str, name: &str, args: &str) -> Value {
    ev(
        kind,
        json!({"output_index": oi, "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": args}}),
    )
}

fn delta(oi: i64, item_id: &str, d: &str) -> Value {
    ev(
        "response.function_call_arguments.delta",
        json!({"output_index": oi, "item_id": item_id, "delta": d}),
    )
}

fn args_done(oi: i64, item_id: &str, args: &str) -> Value {
    ev(
        "response.function_call_arguments.done",
        json!({"output_index": oi, "item_id": item_id, "arguments": args}),
    )
}

fn feed_lines(text: &str) -> (AssembledMessage, Vec<Error>) {
    let mut a = assembler(None);
    let mut errors = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Err(e) = a.feed_json(None, line.as_bytes(), None) {
            errors.push(e);
        }
    }
    if let Err(e) = a.close(None) {
        errors.push(e);
    }
    (a.messages().remove(0), errors)
}

// ------------------------------------------------- Q59: rotated ids (Copilot)

#[test]
fn q59_the_copilot_recording_is_one_complete_response_with_a_note() {
    let (m, errors) = feed_lines(&fixture_text(
        "vercel-ai/github-copilot-id-rotation.1.chunks.txt",
    ));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    // vercel/ai's test states the text, delta by delta.
    assert_eq!(
        m.text,
        "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**."
    );
    assert!(m.tool_uses.is_empty());
    assert_eq!(notes(&m), [NoteKind::ResponseIdRotated]);
    assert!(m.notes[0].message.contains("capture-id-1"));
}

/// A Copilot-shaped function call: every event names a new response id and a
/// new item id, the output index stays.
fn rotated_call() -> Vec<Value> {
    numbered(vec![
        response("response.created", "r1", "in_progress"),
        response("response.in_progress", "r2", "in_progress"),
        fc_item(
            "response.output_item.added",
            0,
            "i1",
            "call_1",
            "get_weather",
            "",
        ),
        delta(0, "i2", r#"{"city":"#),
        delta(0, "i3", r#""Paris"}"#),
        args_done(0, "i4", r#"{"city":"Paris"}"#),
        fc_item(
            "response.output_item.done",
            0,
            "i5",
            "call_1",
            "get_weather",
            r#"{"city":"Paris"}"#,
        ),
        response("response.completed", "r3", "completed"),
    ])
}

#[test]
fn q59_a_call_whose_item_id_rotates_on_every_event_is_one_call_with_a_note() {
    let (m, errors) = run(&mut responses(), &rotated_call());
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"city":"Paris"}"#]);
    assert_eq!(m.tool_uses[0].block.id, "call_1");
    // The item id kept is the one the item was announced with.
    assert_eq!(
        m.tool_uses[0].block.provider_state.as_deref(),
        Some("\"i1\"")
    );
    assert_eq!(
        notes(&m),
        [NoteKind::ResponseIdRotated, NoteKind::ItemIdRotated]
    );
    assert_eq!(m.notes[1].call, Some(0));
}

#[test]
fn q59_twin_an_item_id_naming_another_known_item_stays_refused() {
    let events = numbered(vec![
        response("response.created", "r1", "in_progress"),
        fc_item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
        fc_item("response.output_item.added", 1, "fc_2", "call_2", "g", ""),
        // fc_1's arguments sent at fc_2's output index: misrouting, not rotation.
        delta(1, "fc_1", r#"{"a":1}"#),
        response("response.completed", "r1", "completed"),
    ]);
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, Error::Decode { .. }) && e.to_string().contains("fc_1")),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(inputs(&m).iter().all(|i| i.is_empty()));
}

#[test]
fn q59_twin_a_fresh_item_id_after_the_item_is_done_stays_refused() {
    let events = numbered(vec![
        response("response.created", "r1", "in_progress"),
        fc_item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
        args_done(0, "fc_1", "{}"),
        fc_item("response.output_item.done", 0, "fc_1", "call_1", "f", "{}"),
        // No item is open at output index 0 any more.
        delta(0, "fc_9", r#"{"a":1}"#),
        response("response.completed", "r1", "completed"),
    ]);
    let (m, errors) = run(&mut responses(), &events);
    assert!(!errors.is_empty());
    assert!(!m.complete);
    assert_eq!(inputs(&m), ["{}"]);
    assert!(!notes(&m).contains(&NoteKind::ItemIdRotated));
}

#[test]
fn q59_twin_a_second_response_created_with_another_id_is_still_q54() {
    let mut events = rotated_call();
    let mut second = rotated_call();
    second[0]["response"]["id"] = json!("other");
    events.extend(second);
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, Error::Protocol { .. }) && e.to_string().contains("other")),
        "{errors:?}"
    );
    assert!(!m.complete);
}

#[test]
fn q59_twin_another_id_when_the_numbering_starts_over_is_a_second_response() {
    // No second response.created, but the sequence numbers start over.
    let mut events = rotated_call();
    let mut second = rotated_call();
    second.remove(0);
    for e in &mut second {
        if e.get("response").is_some() {
            e["response"]["id"] = json!("other");
        }
    }
    events.extend(second);
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors.iter().any(|e| matches!(e, Error::Protocol { .. })),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(m.problems.iter().any(|p| p.kind == ProblemKind::Protocol));
}

#[test]
fn q59_twin_another_response_id_in_an_unnumbered_stream_stays_q54() {
    let events: Vec<Value> = rotated_call()
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("sequence_number");
            e
        })
        .collect();
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors.iter().any(|e| matches!(e, Error::Protocol { .. })),
        "{errors:?}"
    );
    assert!(!m.complete);
}

// ------------------------------ issue 34 class 1: the final snapshot checked

fn snapshot_call(call_id: &str, name: &str, args: &str) -> Value {
    json!({"type": "function_call", "id": "fc_1", "call_id": call_id, "name": name, "arguments": args, "status": "completed"})
}

/// One call `f` with `{"path":"/tmp/x"}`, then `response.completed` whose
/// `output` holds `output`.
fn with_snapshot(output: Value) -> Vec<Value> {
    let args = r#"{"path":"/tmp/x"}"#;
    numbered(vec![
        response("response.created", "r1", "in_progress"),
        fc_item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
        delta(0, "fc_1", args),
        args_done(0, "fc_1", args),
        fc_item("response.output_item.done", 0, "fc_1", "call_1", "f", args),
        ev(
            "response.completed",
            json!({"response": {"id": "r1", "status": "completed", "output": output}}),
        ),
    ])
}

fn snapshot_refused(events: &[Value]) -> AssembledMessage {
    let (m, errors) = run(&mut responses(), events);
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, Error::Protocol { .. }) && e.to_string().contains("snapshot")),
        "{errors:?}"
    );
    assert!(!m.complete);
    assert!(m
        .problems
        .iter()
        .any(|p| p.kind == ProblemKind::Protocol && p.message.contains("snapshot")));
    m
}

#[test]
fn snapshot_with_other_arguments_is_refused() {
    let m = snapshot_refused(&with_snapshot(json!([snapshot_call(
        "call_1",
        "f",
        r#"{"path":"/etc/passwd"}"#
    )])));
    // The stream's call stays as the stream sent it.
    assert_eq!(inputs(&m), [r#"{"path":"/tmp/x"}"#]);
}

#[test]
fn snapshot_with_another_name_is_refused() {
    snapshot_refused(&with_snapshot(json!([snapshot_call(
        "call_1",
        "delete_file",
        r#"{"path":"/tmp/x"}"#
    )])));
}

#[test]
fn snapshot_with_an_extra_call_is_refused() {
    snapshot_refused(&with_snapshot(json!([
        snapshot_call("call_1", "f", r#"{"path":"/tmp/x"}"#),
        snapshot_call("call_2", "f", r#"{"path":"/etc/passwd"}"#),
    ])));
    // Also when the stream itself assembled no call at all.
    let events = numbered(vec![
        response("response.created", "r1", "in_progress"),
        ev(
            "response.completed",
            json!({"response": {"id": "r1", "status": "completed", "output": [snapshot_call("call_9", "f", "{}")]}}),
        ),
    ]);
    snapshot_refused(&events);
}

#[test]
fn snapshot_with_a_custom_call_of_other_input_is_refused() {
    snapshot_refused(&with_snapshot(json!([
        snapshot_call("call_1", "f", r#"{"path":"/tmp/x"}"#),
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_7", "name": "f", "input": "rm -rf /"},
    ])));
}

#[test]
fn a_call_inside_an_event_this_dialect_does_not_read_is_refused() {
    let mut events = with_snapshot(json!([snapshot_call(
        "call_1",
        "f",
        r#"{"path":"/tmp/x"}"#
    )]));
    let unknown = ev(
        "response.done",
        json!({"sequence_number": 99, "response": {"id": "r1", "status": "completed", "output": [snapshot_call("call_1", "f", r#"{"path":"/etc/passwd"}"#)]}}),
    );
    events.insert(4, unknown);
    let (m, errors) = run(&mut responses(), &events);
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("response.done")),
        "{errors:?}"
    );
    assert!(!m.complete);
}

#[test]
fn snapshot_twin_the_same_calls_restated_with_other_key_order_and_spacing_pass() {
    let (m, errors) = run(
        &mut responses(),
        &with_snapshot(json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            snapshot_call("call_1", "f", "{ \"path\" : \"/tmp/x\" }"),
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ])),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"path":"/tmp/x"}"#]);
}

#[test]
fn snapshot_twin_fewer_calls_than_the_stream_is_read_as_before() {
    // Real recordings do this (an empty output after a call): no new call for anyone.
    let (m, errors) = run(&mut responses(), &with_snapshot(json!([])));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(m.complete, "{:?}", m.problems);
    assert_eq!(inputs(&m), [r#"{"path":"/tmp/x"}"#]);
}

// ------------------------------------ Q61: a replayed event told by its nonce

fn chat_fragment(args: &str, nonce: Option<&str>) -> Value {
    let mut c = support::chat::call(0, None, None, json!(args));
    if let Some(n) = nonce {
        c["obfuscation"] = json!(n);
    }
    c
}

fn chat_stream(nonces: [Option<&str>; 3]) -> Vec<Value> {
    let mut opener = support::chat::call(0, Some("call_1"), Some("f"), json!(""));
    if let Some(n) = nonces[0] {
        opener["obfuscation"] = json!(n);
    }
    vec![
        opener,
        chat_fragment(r#"{"city":"Edin"#, nonces[1]),
        chat_fragment(r#"{"city":"Edin"#, nonces[2]),
        support::chat::end(),
    ]
}

#[test]
fn q61_a_chat_event_sent_again_with_its_nonce_is_a_problem_not_applied_twice() {
    let (m, errors) = run(
        &mut support::chat::chat(),
        &chat_stream([Some("a1b2c3d4"), Some("Xy7Qp2Lm"), Some("Xy7Qp2Lm")]),
    );
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, Error::Protocol { .. }) && e.to_string().contains("Xy7Qp2Lm")),
        "{errors:?}"
    );
    assert_eq!(inputs(&m), [r#"{"city":"Edin"#]);
    assert!(!m.complete);
    assert!(m.problems.iter().any(|p| p.message.contains("nonce")));
}

#[test]
fn q61_twin_identical_fragments_without_a_nonce_or_with_their_own_are_two_fragments() {
    // A short nonce is padding too short to tell a replay: a real recording
    // sends `"x"` twice in one honest stream.
    for nonces in [
        [None, None, None],
        [Some("a1b2c3d4"), Some("b2c3d4e5"), Some("c3d4e5f6")],
        [Some("a1b2c3d4"), Some("x"), Some("x")],
        [Some("a1b2c3d4"), Some("Xy7Qp2L"), Some("Xy7Qp2L")],
    ] {
        let (m, errors) = run(&mut support::chat::chat(), &chat_stream(nonces));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(inputs(&m), [r#"{"city":"Edin{"city":"Edin"#]);
        assert!(m.complete, "{:?}", m.problems);
    }
}

fn responses_with_nonces(second: &str) -> Vec<Value> {
    let mut d1 = delta(0, "fc_1", r#"{"city":"Edin"#);
    d1["obfuscation"] = json!("n1n1n1n1");
    let mut d2 = delta(0, "fc_1", r#"{"city":"Edin"#);
    d2["obfuscation"] = json!(second);
    numbered(vec![
        response("response.created", "r1", "in_progress"),
        fc_item("response.output_item.added", 0, "fc_1", "call_1", "f", ""),
        d1,
        d2,
        response("response.completed", "r1", "completed"),
    ])
}

#[test]
fn q61_a_responses_delta_renumbered_but_with_its_nonce_is_a_problem() {
    let (m, errors) = run(&mut responses(), &responses_with_nonces("n1n1n1n1"));
    assert!(
        errors.iter().any(|e| matches!(e, Error::Protocol { .. })),
        "{errors:?}"
    );
    assert_eq!(inputs(&m), [r#"{"city":"Edin"#]);
    assert!(!m.complete);
}

#[test]
fn q61_twin_responses_deltas_with_their_own_nonces_are_two_fragments() {
    let (m, errors) = run(&mut responses(), &responses_with_nonces("n2n2n2n2"));
    assert!(
        errors.iter().all(|e| !e.to_string().contains("nonce")),
        "{errors:?}"
    );
    assert_eq!(inputs(&m), [r#"{"city":"Edin{"city":"Edin"#]);
}

#[test]
fn q61_twin_a_responses_resend_with_its_own_sequence_number_stays_q33s() {
    let mut events = responses_with_nonces("n2n2n2n2");
    let again = events[2].clone(); // the same event, its sequence number again
    events.insert(4, again);
    let (m, errors) = run(&mut responses(), &events);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(m.skipped.len(), 1);
}
