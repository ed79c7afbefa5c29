//! The Interactions API's fast path and memo (`gemini_interactions/fast.rs`)
//! against the general decode: any event text, events made from a template
//! the memo took, and whole JSON-lines streams cut anywhere give the same
//! with the fast path as without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::gen::{
    event_text, index, junk, members, obj_field, render, str_field, text, Rng, Spelling, J,
};
use super::{arguments, fast_is_general, fragments, memo_case_of, obj, s};
use crate::providers::{gemini_interactions as interactions, Dialect};

/// An event of any shape: mostly the deltas and stops of a stream, with
/// every member the typed decode reads present now and then.
fn event(r: &mut Rng) -> J {
    let delta = obj_field(r, |r| {
        let kind = J::Str(
            r.pick(&[
                "text",
                "arguments_delta",
                "thought_signature",
                "function_call",
                "x",
            ])
            .to_owned(),
        );
        let kind = if r.chance(85) { kind } else { str_field(r) };
        let arguments = if r.chance(10) {
            junk(r, 2)
        } else {
            str_field(r)
        };
        let v = vec![
            (95, "type", kind),
            (50, "text", str_field(r)),
            (40, "arguments", arguments),
            (10, "signature", str_field(r)),
            (10, "id", str_field(r)),
            (10, "name", str_field(r)),
            (5, "call_id", str_field(r)),
            (4, "content", junk(r, 2)),
            (4, "result", junk(r, 2)),
            (4, "is_error", junk(r, 1)),
        ];
        members(r, v)
    });
    let kind = J::Str(
        r.pick(&[
            "step.delta",
            "step.stop",
            "step.start",
            "interaction.completed",
            "content.delta",
            "content.stop",
            "content.start",
        ])
        .to_owned(),
    );
    let kind = if r.chance(90) { kind } else { str_field(r) };
    let v = vec![
        (95, "event_type", kind),
        (85, "index", index(r)),
        (80, "delta", delta),
        (5, "step", junk(r, 2)),
        (5, "content", junk(r, 2)),
        (5, "interaction", junk(r, 2)),
        (3, "error", junk(r, 2)),
    ];
    members(r, v)
}

/// The events of a well-formed interaction: text, then calls, each in
/// fragments.
fn events(r: &mut Rng) -> Vec<J> {
    let interaction = |status: &str| {
        obj(vec![
            ("id", s("v1_1")),
            ("status", s(status)),
            ("object", s("interaction")),
        ])
    };
    let num = ["0", "1", "2", "3", "4"];
    let mut out = vec![obj(vec![
        ("interaction", interaction("in_progress")),
        ("event_type", s("interaction.created")),
    ])];
    let mut step = 0;
    let delta = |i: usize, d: J| {
        obj(vec![
            ("index", J::Num(num[i])),
            ("delta", d),
            ("event_type", s("step.delta")),
        ])
    };
    let stop = |i: usize| {
        obj(vec![
            ("index", J::Num(num[i])),
            ("event_type", s("step.stop")),
        ])
    };
    if r.chance(60) {
        out.push(obj(vec![
            ("index", J::Num(num[0])),
            ("step", obj(vec![("type", s("model_output"))])),
            ("event_type", s("step.start")),
        ]));
        let said = text(r);
        for piece in fragments(r, &said) {
            out.push(delta(
                0,
                obj(vec![("text", J::Str(piece)), ("type", s("text"))]),
            ));
        }
        out.push(stop(0));
        step = 1;
    }
    for k in 0..r.below(4) {
        let i = step + k;
        let start = obj(vec![
            ("id", J::Str(format!("call_{k}"))),
            ("type", s("function_call")),
            ("name", J::Str(format!("f{k}"))),
            ("arguments", obj(vec![])),
        ]);
        out.push(obj(vec![
            ("index", J::Num(num[i])),
            ("step", start),
            ("event_type", s("step.start")),
        ]));
        let args = arguments(r);
        for piece in fragments(r, &args) {
            let d = obj(vec![
                ("arguments", J::Str(piece)),
                ("type", s("arguments_delta")),
            ]);
            out.push(delta(i, d));
        }
        out.push(stop(i));
    }
    out.push(obj(vec![
        ("interaction", interaction("requires_action")),
        ("event_type", s("interaction.completed")),
    ]));
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(out.len() + 1);
            out.insert(at, event(r));
        }
    }
    out
}

/// The events as JSON lines (a raw line break in a rendering becomes a space).
fn lines(r: &mut Rng, events: &[J]) -> Vec<u8> {
    let mut out = String::new();
    for j in events {
        let text = if r.chance(3) {
            event_text(r, j)
        } else {
            let mut t = String::new();
            render(r, j, Spelling::Clean, &mut t);
            t
        };
        out.push_str(&text.replace(['\n', '\r'], " "));
        out.push('\n');
    }
    out.into_bytes()
}

fn check_stream(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let events = events(&mut r);
    let bytes = lines(&mut r, &events);
    fast_is_general(&mut r, Dialect::GeminiInteractions, &bytes)
}

/// See [`super::memo_case_of`].
fn memo_case(seed: u64) -> Option<(String, String)> {
    memo_case_of(seed, event, interactions::memo_parts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// An Interactions event of any shape: the fast decode is the general
    /// one, or leaves the event to it.
    #[test]
    fn fast_and_general_decoders_agree_on_interactions_events(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = event(&mut r);
        let text = event_text(&mut r, &j);
        let agrees = interactions::fast_path_agrees(&text);
        prop_assert!(agrees.is_ok(), "{:?}: {:?}", text, agrees);
    }

    /// An event made from a template the memo took: what the memo gives is
    /// the general decode, or it leaves the event to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_interactions_events(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case(seed) {
            let agrees = interactions::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole interaction, cut anywhere: the same reads, errors, live events
    /// and messages with the fast path as without it.
    #[test]
    fn fast_and_general_paths_agree_on_interactions_streams(seed in any::<u64>()) {
        check_stream(seed)?;
    }
}

/// The fast path and the memo serve the events that make up a stream, and
/// leave to the general path what they do not read themselves.
#[test]
fn the_interactions_fast_path_serves_the_usual_events() {
    let text =
        r#"{"index":0,"delta":{"text":"h\u00e9\n","type":"text"},"event_type":"step.delta"}"#;
    let args = r#"{"index":1,"delta":{"arguments":"{\"a\"","type":"arguments_delta"},"event_type":"step.delta"}"#;
    let served = [
        text,
        args,
        r#"{"index":1,"event_type":"step.stop"}"#,
        r#"{"index":1,"delta":{"type":"thought_signature","signature":"c2ln"},"event_type":"step.delta","step":null}"#,
    ];
    for t in served {
        assert_eq!(interactions::fast_path_agrees(t), Ok(true), "{t}");
    }
    let left = [
        r#"{"index":0,"step":{"type":"model_output"},"event_type":"step.start"}"#,
        r#"{"interaction":{"status":"completed"},"event_type":"interaction.completed"}"#,
        r#"{"index":1,"delta":{"arguments":{"q":1},"type":"google_search_call"},"event_type":"step.delta"}"#,
        r#"{"index":1,"delta":{"result":[1],"type":"google_search_result"},"event_type":"step.delta"}"#,
        r#"{"index":1,"index":2,"event_type":"step.stop"}"#,
        r#"{"index":-1,"event_type":"step.stop"}"#,
        r#"{"event_type":"step.stop"} x"#,
    ];
    for t in left {
        assert_eq!(interactions::fast_path_agrees(t), Ok(false), "{t}");
    }
    for (template, next) in [
        (text, text.replace(r#"h\u00e9\n"#, "xyz")),
        (args, args.replace(r#"{\"a\""#, "1}")),
    ] {
        assert_eq!(
            interactions::memo_agrees(template, &next),
            Ok(true),
            "{next}"
        );
    }
    let other = text.replace(r#""index":0"#, r#""index":1"#);
    assert_eq!(
        interactions::memo_agrees(text, &other),
        Ok(false),
        "{other}"
    );
}
