//! Inputs the fuzz targets (`fuzz/`, docs/fuzzing.md) found breaking an
//! invariant, minimised, kept as ordinary tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::providers::{Assembler, AssemblerLimits, Dialect};
use serde_json::json;

fn feed(a: &mut Assembler, event: &serde_json::Value) {
    a.feed_json(None, event.to_string().as_bytes(), None)
        .unwrap_or_else(|e| panic!("{event}: {e}"));
}

/// A prompt blocked while a Gemini call was still streaming (`willContinue`)
/// ends the message; the open call ends with it, so `close()` has nothing
/// left to rebuild and does not report the message as ended twice.
#[test]
fn gemini_block_reason_closes_a_streaming_call() {
    let mut a = Assembler::new(Some(Dialect::Gemini), AssemblerLimits::default());
    feed(
        &mut a,
        &json!({"candidates": [{"content": {"parts": [{"functionCall":
            {"name": "f", "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}], "willContinue": true}}]}}]}),
    );
    feed(
        &mut a,
        &json!({"promptFeedback": {"blockReason": "SAFETY"}}),
    );
    assert_eq!(a.close(None), Ok(()));
    let m = a.messages().remove(0);
    assert_eq!(m.tool_uses.len(), 1);
    assert_eq!(m.tool_uses[0].block.input, r#"{"a":"x"}"#);
    assert!(m.tool_uses[0].finished);
    assert_eq!(m.finish_reason.as_deref(), Some("SAFETY"));
    assert!(!m.complete);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
}

/// `[DONE]` (accepted as an end marker under `auto`) while a Gemini call was
/// still streaming: the open call is rebuilt at `[DONE]`, as at any end of
/// its stream, so nothing changes after it and `close()` has nothing to
/// refuse; with no finish reason ever sent, the message is not complete.
#[test]
fn gemini_call_still_streaming_at_done_is_rebuilt_at_done() {
    let mut a = Assembler::new(None, AssemblerLimits::default());
    feed(
        &mut a,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall":
            {"name": "getWeather", "willContinue": true}}]}}]}),
    );
    feed(
        &mut a,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall":
            {"partialArgs": [{"jsonPath": "$.location", "stringValue": "Paris", "willContinue": true}],
             "willContinue": true}}]}}]}),
    );
    a.feed_json(None, b"[DONE]", None).expect("[DONE]");
    let at_done = a.messages();
    assert_eq!(
        at_done[0].tool_uses[0].block.input,
        r#"{"location":"Paris"}"#
    );
    assert_eq!(a.close(None), Ok(()));
    assert_eq!(
        a.messages(),
        at_done,
        "close() changed a message after [DONE]"
    );
    let m = a.messages().remove(0);
    assert_eq!(m.tool_uses.len(), 1);
    assert_eq!(m.tool_uses[0].block.name, "getWeather");
    assert_eq!(m.tool_uses[0].block.input, r#"{"location":"Paris"}"#);
    assert!(m.tool_uses[0].finished);
    assert!(!m.complete);
    // Content the stream sends after [DONE] is still refused.
    assert!(a
        .feed_json(
            None,
            br#"{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}"#,
            None
        )
        .is_err());
}
