//! InvokeModel's fast path (`scan_frame`, the `{"bytes": …}` payload of a
//! frame) against the general decode: any payload text, and whole
//! event-stream bodies of base64-wrapped Anthropic events cut anywhere, give
//! the same with the fast path as without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use ::base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use ::base64::Engine;
use proptest::prelude::*;

use super::events::{anthropic_event, anthropic_events};
use super::gen::{event_text, junk, members, obj_field, render, str_field, Rng, Spelling, J};
use super::{cuts, limits, run};
use crate::framing::{EventStreamMessage, HeaderValue};
use crate::providers::{bedrock_invoke, Dialect};

/// Base64 text of any kind: valid (padded or not), or with a byte outside
/// the alphabet, or not a string at all.
fn bytes_field(r: &mut Rng) -> J {
    if r.chance(70) {
        let event = anthropic_event(r);
        let mut inner = String::new();
        render(r, &event, Spelling::Clean, &mut inner);
        let engine = if r.chance(50) {
            STANDARD
        } else {
            STANDARD_NO_PAD
        };
        J::Str(engine.encode(inner))
    } else {
        str_field(r)
    }
}

/// A frame's payload of any shape: mostly `{"bytes": …, "p": …}`.
fn payload(r: &mut Rng) -> J {
    let chunk = obj_field(r, |r| {
        let b = bytes_field(r);
        members(r, vec![(90, "bytes", b)])
    });
    let v = vec![
        (90, "bytes", bytes_field(r)),
        (60, "p", str_field(r)),
        (8, "chunk", chunk),
        (4, "amazon-bedrock-invocationMetrics", junk(r, 2)),
    ];
    members(r, v)
}

/// A well-formed InvokeModel stream of Claude: each Anthropic event in a
/// `chunk` frame as base64, the padding `"p"` beside it; for some seeds a few
/// payloads of any shape among them.
fn stream(r: &mut Rng) -> Vec<u8> {
    let mut payloads: Vec<String> = anthropic_events(r)
        .into_iter()
        .map(|(_, j)| {
            let mut inner = String::new();
            render(r, &j, Spelling::Clean, &mut inner);
            let b64 = STANDARD.encode(inner);
            let pad = &"abcdefghijklmnop"[..1 + r.below(15)];
            if r.chance(50) {
                format!(r#"{{"bytes":"{b64}","p":"{pad}"}}"#)
            } else {
                format!(r#"{{"p":"{pad}","bytes":"{b64}"}}"#)
            }
        })
        .collect();
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(payloads.len() + 1);
            let j = payload(r);
            payloads.insert(at, event_text(r, &j));
        }
    }
    let mut out = Vec::new();
    for text in payloads {
        let header = |n: &str, v: &str| (n.to_owned(), HeaderValue::String(v.to_owned()));
        let message = EventStreamMessage {
            headers: vec![
                header(":event-type", "chunk"),
                header(":content-type", "application/json"),
                header(":message-type", "event"),
            ],
            payload: text.into_bytes(),
        };
        out.extend(message.encode().unwrap());
    }
    out
}

fn check_stream(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let bytes = stream(&mut r);
    let cuts = cuts(&mut r, bytes.len());
    let limits = limits(&mut r);
    let fast = run(Some(Dialect::BedrockInvoke), limits, &bytes, &cuts, true);
    let general = run(Some(Dialect::BedrockInvoke), limits, &bytes, &cuts, false);
    prop_assert_eq!(fast, general, "{} bytes cut at {:?}", bytes.len(), cuts);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A frame's payload of any shape: the fast decode is the general one,
    /// or leaves the payload to it.
    #[test]
    fn fast_and_general_decoders_agree_on_invoke_payloads(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = payload(&mut r);
        let text = event_text(&mut r, &j);
        let agrees = bedrock_invoke::frame_agrees(&text);
        prop_assert!(agrees.is_ok(), "{:?}: {:?}", text, agrees);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    /// A whole InvokeModel body, cut anywhere: the same reads, errors, live
    /// events and messages with the fast path as without it.
    #[test]
    fn fast_and_general_paths_agree_on_invoke_streams(seed in any::<u64>()) {
        check_stream(seed)?;
    }
}

/// The fast path serves the payload of a frame, and leaves to the general
/// path what it does not read itself.
#[test]
fn the_invoke_fast_path_serves_the_usual_payloads() {
    let served = [
        r#"{"bytes":"eyJ0eXBlIjoicGluZyJ9","p":"abcd"}"#,
        r#"{"p":"ab","bytes":"eyJ0eXBlIjoicGluZyJ9"}"#,
        r#"{"bytes":"eyJ0eXBlIjoicGluZyJ9","amazon-bedrock-invocationMetrics":{"a":[1,{}]}}"#,
        r#"{"bytes":null,"chunk":null}"#,
        r#"{"bytes":"\u0065yJ0eXBlIjoicGluZyJ9"}"#,
        r#"{}"#,
    ];
    for text in served {
        assert_eq!(bedrock_invoke::frame_agrees(text), Ok(true), "{text}");
    }
    let left = [
        r#"{"chunk":{"bytes":"eyJ0eXBlIjoicGluZyJ9"}}"#,
        r#"{"bytes":"eyJ0","bytes":"eyJ0"}"#,
        r#"{"bytes":1}"#,
        r#"{"bytes":"eyJ0"} x"#,
        r#"{"bytes":"eyJ0""#,
        r#"["bytes"]"#,
    ];
    for text in left {
        assert_eq!(bedrock_invoke::frame_agrees(text), Ok(false), "{text}");
    }
}
