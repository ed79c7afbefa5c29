//! The Gemini Interactions API dialect in Rust: vercel/ai's recordings (what its
//! tests state), every cut of the bytes, whole interactions, the protocol's
//! refusals, and `auto` telling it from native Gemini and the other dialects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;
use support::fixture_text;

use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{
    AssembledMessage, Assembler, AssemblerLimits, BytesAssembler, Dialect, Error, ProblemKind, Rule,
};
use serde_json::{json, Value};

const D: Dialect = Dialect::GeminiInteractions;

fn lines(name: &str) -> Vec<String> {
    fixture_text(&format!("vercel-ai/google-interactions-{name}.chunks.txt"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every event fed as JSON text, then closed: choice 0 and the errors.
fn run(d: Option<Dialect>, events: &[String]) -> (AssembledMessage, Vec<Error>, Option<Dialect>) {
    let mut a = Assembler::new(d, AssemblerLimits::default());
    let mut errors = Vec::new();
    for e in events {
        if let Err(err) = a.feed_json(None, e.as_bytes(), None) {
            errors.push(err);
        }
    }
    if let Err(err) = a.close(None) {
        errors.push(err);
    }
    (a.messages().remove(0), errors, a.dialect())
}

fn sse(events: &[String]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect::<String>()
        .into_bytes()
}

fn check_step1(m: &AssembledMessage) {
    assert_eq!(m.tool_uses.len(), 1);
    let call = &m.tool_uses[0];
    assert_eq!(
        (
            call.block.id.as_str(),
            call.block.name.as_str(),
            call.block.input.as_str()
        ),
        ("61nzpsv4", "getWeather", "{\"location\":\"San Francisco\"}")
    );
    assert!(!call.server_side && call.finished);
    assert_eq!(m.finish_reason.as_deref(), Some("requires_action"));
    let t = m.tokens;
    assert_eq!(
        (
            t.input_tokens,
            t.output_tokens,
            t.reasoning_tokens,
            t.total_tokens
        ),
        (Some(53), Some(15), Some(65), Some(133))
    );
    assert!(m.complete, "{:?}", m.problems);
    assert!(m.problems.is_empty() && m.skipped.is_empty());
}

#[test]
fn the_tool_call_recording_gives_what_vercel_states() {
    let events = lines("tool-call-step1");
    for d in [Some(D), None] {
        let (m, errors, dialect) = run(d, &events);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(dialect, Some(D));
        check_step1(&m);
    }
}

#[test]
fn the_recording_as_sse_cut_at_every_byte() {
    let data = sse(&lines("tool-call-step1"));
    for cut in 0..=data.len() {
        let mut a = BytesAssembler::new(
            Assembler::new(None, AssemblerLimits::default()),
            FramingLimits::default(),
        );
        a.feed_bytes(&data[..cut], None).unwrap();
        a.feed_bytes(&data[cut..], None).unwrap();
        a.close(None).unwrap();
        check_step1(&a.core().messages()[0]);
    }
}

#[test]
fn search_steps_are_server_side_with_their_result() {
    let (m, errors, _) = run(None, &lines("google-search"));
    assert!(errors.is_empty() && m.complete);
    let call = &m.tool_uses[0];
    assert!(call.server_side);
    assert_eq!(
        (call.block.id.as_str(), call.block.name.as_str()),
        ("7xveqyd2", "google_search")
    );
    let queries: Value = serde_json::from_str(&call.block.input).unwrap();
    assert_eq!(queries["queries"].as_array().map(Vec::len), Some(4));
}

#[test]
fn a_whole_interaction_is_its_stream() {
    let body = fixture_text("../gemini_interactions/tool-call-step1.json");
    let (m, errors, dialect) = run(None, &[body]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(dialect, Some(D));
    assert_eq!(m.tool_uses[0].block.id, "zggxzq8r");
    assert_eq!(
        m.tool_uses[0].block.input,
        "{\"location\":\"San Francisco\"}"
    );
    assert_eq!(m.finish_reason.as_deref(), Some("requires_action"));
    assert!(m.complete);
}

fn rule(e: &Error) -> Option<Rule> {
    match e {
        Error::Protocol { rule, .. } => Some(*rule),
        _ => None,
    }
}

fn inserted(at: usize, extra: &Value) -> Vec<String> {
    let mut events = lines("tool-call-step1");
    events.insert(at, extra.to_string());
    events
}

#[test]
fn deltas_for_steps_never_started_or_stopped_are_refused() {
    let cases = [
        (
            inserted(
                5,
                &json!({"event_type": "step.delta", "index": 9, "delta": {"type": "text", "text": "x"}}),
            ),
            Rule::WrongBlock,
        ),
        (
            inserted(
                8,
                &json!({"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": "}"}}),
            ),
            Rule::AfterStop,
        ),
        (
            inserted(8, &json!({"event_type": "step.stop", "index": 1})),
            Rule::AfterStop,
        ),
        (
            inserted(
                6,
                &json!({"event_type": "step.start", "index": 1, "step": {"type": "model_output"}}),
            ),
            Rule::OpenedTwice,
        ),
    ];
    for (events, want) in cases {
        let (m, errors, _) = run(Some(D), &events);
        assert_eq!(errors.iter().map(rule).collect::<Vec<_>>(), [Some(want)]);
        assert!(!m.complete && !m.problems.is_empty());
    }
}

#[test]
fn an_interaction_that_ends_with_a_call_step_open_is_incomplete() {
    let mut events = lines("tool-call-step1");
    events.remove(7); // the call's step.stop
    let (m, errors, _) = run(Some(D), &events);
    assert!(errors.is_empty());
    assert!(!m.complete);
    assert_eq!(m.problems.len(), 1);
    assert_eq!(m.problems[0].kind, ProblemKind::Protocol);
}

#[test]
fn auto_tells_interactions_from_native_gemini_and_the_rest() {
    let created = lines("tool-call-step1").remove(0);
    for (event, want) in [
        (created.clone(), D),
        (
            json!({"event_type": "step.start", "index": 0, "step": {"type": "thought"}})
                .to_string(),
            D,
        ),
        (
            json!({"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}).to_string(),
            Dialect::Gemini,
        ),
        (
            json!({"type": "response.created", "response": {}, "sequence_number": 0}).to_string(),
            Dialect::OpenAiResponses,
        ),
        (
            json!({"type": "message_start", "message": {}}).to_string(),
            Dialect::Anthropic,
        ),
        (
            json!({"object": "chat.completion.chunk", "choices": []}).to_string(),
            Dialect::OpenAiChat,
        ),
    ] {
        let mut a = Assembler::new(None, AssemblerLimits::default());
        a.feed_json(None, event.as_bytes(), None).unwrap();
        assert_eq!(a.dialect(), Some(want), "{event}");
    }
    // An SSE event name alone decides too.
    let mut named = Assembler::new(None, AssemblerLimits::default());
    named
        .feed_json(Some("step.delta"), br#"{"index":0}"#, None)
        .ok();
    assert_eq!(named.dialect(), Some(D));
    // Native Gemini refuses an Interactions event as another dialect's.
    let mut gemini = Assembler::new(Some(Dialect::Gemini), AssemblerLimits::default());
    assert!(matches!(
        gemini.feed_json(None, created.as_bytes(), None),
        Err(Error::WrongDialect { .. })
    ));
}
