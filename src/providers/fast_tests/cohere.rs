//! Cohere's fast path and memo (`cohere/fast.rs`) against the general
//! decode: any event text, events made from a template the memo took, and
//! whole SSE streams cut anywhere give the same with the fast path as without.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::gen::{event_text, index, junk, members, obj_field, str_field, text, Rng, J};
use super::{arguments, fast_is_general, fragments, memo_case_of, obj, s, sse};
use crate::providers::{cohere, Dialect};

/// An event of any shape: mostly the deltas of a stream, with every member
/// the typed decode reads present now and then.
fn event(r: &mut Rng) -> J {
    let function = obj_field(r, |r| {
        let v = vec![(30, "name", str_field(r)), (90, "arguments", str_field(r))];
        members(r, v)
    });
    let call = obj_field(r, |r| {
        let v = vec![(30, "id", str_field(r)), (90, "function", function)];
        members(r, v)
    });
    let part = obj_field(r, |r| {
        let v = vec![
            (40, "type", str_field(r)),
            (80, "text", str_field(r)),
            (15, "thinking", str_field(r)),
        ];
        members(r, v)
    });
    let message = obj_field(r, |r| {
        let content = if r.chance(10) { J::Arr(vec![]) } else { part };
        let v = vec![
            (40, "tool_calls", call),
            (30, "tool_plan", str_field(r)),
            (30, "content", content),
        ];
        members(r, v)
    });
    let delta = obj_field(r, |r| {
        let v = vec![
            (90, "message", message),
            (10, "finish_reason", str_field(r)),
            (5, "usage", junk(r, 2)),
        ];
        members(r, v)
    });
    let kind = J::Str(
        r.pick(&[
            "tool-call-delta",
            "tool-plan-delta",
            "content-delta",
            "tool-call-start",
            "message-end",
            "x",
        ])
        .to_owned(),
    );
    let kind = if r.chance(90) { kind } else { str_field(r) };
    let v = vec![
        (95, "type", kind),
        (70, "index", index(r)),
        (90, "delta", delta),
    ];
    members(r, v)
}

fn message(m: Vec<(&str, J)>) -> J {
    obj(vec![("message", obj(m))])
}

/// The events of a well-formed stream: a plan, then calls, then text, each
/// in fragments.
fn events(r: &mut Rng) -> Vec<(Option<&'static str>, J)> {
    let mut out = vec![(
        Some("message-start"),
        obj(vec![
            ("id", s("c-1")),
            ("type", s("message-start")),
            (
                "delta",
                message(vec![
                    ("role", s("assistant")),
                    ("content", J::Arr(vec![])),
                    ("tool_plan", s("")),
                    ("tool_calls", J::Arr(vec![])),
                ]),
            ),
        ]),
    )];
    let typed = |kind: &'static str, index: Option<usize>, delta: J| {
        let mut m = vec![("type", s(kind))];
        if let Some(i) = index {
            m.push(("index", J::Num(["0", "1", "2", "3"][i])));
        }
        m.push(("delta", delta));
        (Some(kind), obj(m))
    };
    if r.chance(60) {
        let plan = text(r);
        for piece in fragments(r, &plan) {
            out.push(typed(
                "tool-plan-delta",
                None,
                message(vec![("tool_plan", J::Str(piece))]),
            ));
        }
    }
    let calls = r.below(4);
    for i in 0..calls {
        let function = obj(vec![
            ("name", J::Str(format!("f{i}"))),
            ("arguments", s("")),
        ]);
        let call = obj(vec![
            ("id", J::Str(format!("t{i}"))),
            ("type", s("function")),
            ("function", function),
        ]);
        out.push(typed(
            "tool-call-start",
            Some(i),
            message(vec![("tool_calls", call)]),
        ));
        let args = arguments(r);
        for piece in fragments(r, &args) {
            let f = obj(vec![("function", obj(vec![("arguments", J::Str(piece))]))]);
            out.push(typed(
                "tool-call-delta",
                Some(i),
                message(vec![("tool_calls", f)]),
            ));
        }
        out.push(typed("tool-call-end", Some(i), J::Null));
    }
    if r.chance(50) {
        let start = obj(vec![("type", s("text")), ("text", s(""))]);
        out.push(typed(
            "content-start",
            Some(calls),
            message(vec![("content", start)]),
        ));
        let said = text(r);
        for piece in fragments(r, &said) {
            let part = obj(vec![("text", J::Str(piece))]);
            out.push(typed(
                "content-delta",
                Some(calls),
                message(vec![("content", part)]),
            ));
        }
        out.push(typed("content-end", Some(calls), J::Null));
    }
    let end = obj(vec![("finish_reason", s("TOOL_CALL"))]);
    out.push(typed("message-end", None, end));
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(out.len() + 1);
            out.insert(at, (Some("tool-call-delta"), event(r)));
        }
    }
    out
}

fn check_stream(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let events = events(&mut r);
    let bytes = sse(&mut r, &events, false);
    fast_is_general(&mut r, Dialect::Cohere, &bytes)
}

/// See [`super::memo_case_of`].
fn memo_case(seed: u64) -> Option<(String, String)> {
    memo_case_of(seed, event, cohere::memo_parts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A Cohere event of any shape: the fast decode is the general one, or
    /// leaves the event to it.
    #[test]
    fn fast_and_general_decoders_agree_on_cohere_events(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = event(&mut r);
        let text = event_text(&mut r, &j);
        let agrees = cohere::fast_path_agrees(&text);
        prop_assert!(agrees.is_ok(), "{:?}: {:?}", text, agrees);
    }

    /// A Cohere event made from a template the memo took: what the memo
    /// gives is the general decode, or it leaves the event to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_cohere_events(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case(seed) {
            let agrees = cohere::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole Cohere stream, cut anywhere: the same reads, errors, live
    /// events and messages with the fast path as without it.
    #[test]
    fn fast_and_general_paths_agree_on_cohere_streams(seed in any::<u64>()) {
        check_stream(seed)?;
    }
}

/// The fast path and the memo serve the events that make up a stream, and
/// leave to the general path what they do not read themselves.
#[test]
fn the_cohere_fast_path_serves_the_usual_events() {
    let call = r#"{"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"{\"a\": \"\\u00e9\\n\""}}}}}"#;
    let served = [
        call,
        r#"{"type":"tool-plan-delta","delta":{"message":{"tool_plan":"héllo"}}}"#,
        r#"{"type":"content-delta","index":1,"delta":{"message":{"content":{"text":"x"}}}}"#,
        r#"{"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"t","type":"function","function":{"name":"f","arguments":""}}}}}"#,
        r#"{"type":"tool-call-end","index":0}"#,
        r#"{"type":"message-end","delta":{"finish_reason":"TOOL_CALL","usage":null}}"#,
    ];
    for text in served {
        assert_eq!(cohere::fast_path_agrees(text), Ok(true), "{text}");
    }
    let left = [
        r#"{"id":"c","type":"message-start","delta":{"message":{"content":[],"tool_calls":[]}}}"#,
        r#"{"type":"message-end","delta":{"usage":{"tokens":{"output_tokens":1}}}}"#,
        r#"{"type":"tool-call-delta","type":"content-delta"}"#,
        r#"{"type":"tool-call-delta","index":-1}"#,
        r#"{"type":"tool-call-delta","index":"1"}"#,
        r#"{"type":"tool-call-delta","delta":{"message":{"tool_calls":{"function":{"arguments":1}}}}}"#,
        r#"{"type":"tool-call-delta"} x"#,
    ];
    for text in left {
        assert_eq!(cohere::fast_path_agrees(text), Ok(false), "{text}");
    }
    let next = call.replace(r#"{\"a\": \"\\u00e9\\n\""#, "xyz");
    assert_eq!(cohere::memo_agrees(call, &next), Ok(true), "{next}");
    // Each common event is served from its template.
    for (template, next) in [
        (served[1], served[1].replace("héllo", "a\\nb")),
        (served[2], served[2].replace(r#""x""#, r#""yz""#)),
        (
            r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"a"}}}}"#,
            r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"bc"}}}}"#.to_owned(),
        ),
    ] {
        assert_eq!(cohere::memo_agrees(template, &next), Ok(true), "{next}");
    }
    let other = next.replace(r#""index":0"#, r#""index":1"#);
    assert_eq!(cohere::memo_agrees(call, &other), Ok(false), "{other}");
}
