//! Unit tests of the adapters' internals; the behaviour tests (one per docs/quirks.md
//! row, the real recordings) are in `tests/rust_providers.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::accumulate::{ToolUseLimits, ToolUses};

fn chat_chunk(calls: serde_json::Value) -> Vec<u8> {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
        .to_string()
        .into_bytes()
}

#[test]
fn tool_uses_replace_input_respects_limits() {
    let mut t = ToolUses::new(ToolUseLimits {
        max_calls: 1,
        max_input_bytes: 4,
        max_total_bytes: 10,
    });
    assert!(t.add(0, "i", "n", "ab", None, "").is_ok());
    assert!(t.replace_input(0, "wxyz").is_ok());
    assert_eq!(t.get(0).map(|b| b.input.as_str()), Some("wxyz"));
    assert!(t.replace_input(0, "12345").is_err(), "over max_input_bytes");
    assert!(t.replace_input(1, "").is_err(), "over max_calls");
    assert!(t.replace_input(0, "abc").is_err(), "over max_total_bytes");
    assert_eq!(t.get(0).map(|b| b.input.as_str()), Some("wxyz"));
}

#[test]
fn live_none_and_some_give_the_same_messages() {
    let events = [
        chat_chunk(
            json!([{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"x\":"}}]),
        ),
        chat_chunk(json!([{"index": 0, "function": {"arguments": "1}"}}])),
    ];
    let mut quiet = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
    let mut loud = quiet.clone();
    let mut live = Vec::new();
    for e in &events {
        quiet.feed_json(None, e, None).unwrap();
        loud.feed_json(None, e, Some(&mut live)).unwrap();
    }
    assert_eq!(quiet.messages(), loud.messages());
    assert_eq!(live.len(), 3, "{live:?}");
}

#[test]
fn event_ref_names_the_sse_event_first() {
    let mut a = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
    let e = a
        .feed_json(Some("content_block_delta"), b"{\"type\":", None)
        .unwrap_err();
    assert_eq!(
        e.event(),
        Some(&EventRef {
            ordinal: 1,
            event_type: "content_block_delta".into()
        })
    );
    assert!(matches!(
        e,
        Error::Decode {
            kind: DecodeKind::MalformedJson,
            ..
        }
    ));
}

#[test]
fn an_index_less_event_of_a_block_dialect_is_an_error() {
    let mut a = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
    let e = a
        .feed_json(
            None,
            br#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}"#,
            None,
        )
        .unwrap_err();
    assert!(e.to_string().contains("index"), "{e}");
}

#[test]
fn gemini_node_limit_is_enforced() {
    let limits = AssemblerLimits {
        max_arg_nodes: 3,
        ..AssemblerLimits::default()
    };
    let mut a = Assembler::new(Some(Dialect::Gemini), limits);
    let part =
        |p: serde_json::Value| json!({"candidates": [{"content": {"parts": [p]}}]}).to_string();
    a.feed_json(
        None,
        part(json!({"functionCall": {"name": "f", "willContinue": true}})).as_bytes(),
        None,
    )
    .unwrap();
    let arg = |path: &str| {
        part(
            json!({"functionCall": {"partialArgs": [{"jsonPath": path, "stringValue": "v"}], "willContinue": true}}),
        )
    };
    a.feed_json(None, arg("$.a").as_bytes(), None).unwrap();
    a.feed_json(None, arg("$.b").as_bytes(), None).unwrap();
    let e = a.feed_json(None, arg("$.c").as_bytes(), None).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Limit {
                limit: Limit::MaxArgNodes,
                ..
            }
        ),
        "{e:?}"
    );
    a.close(None).unwrap();
    assert_eq!(
        a.messages()[0].tool_uses[0].block.input,
        "{\"a\":\"v\",\"b\":\"v\"}"
    );
}

#[test]
fn gemini_large_objects_keep_order_and_find_keys() {
    let mut a = Assembler::new(Some(Dialect::Gemini), AssemblerLimits::default());
    let part =
        |p: serde_json::Value| json!({"candidates": [{"content": {"parts": [p]}}]}).to_string();
    a.feed_json(
        None,
        part(json!({"functionCall": {"name": "f", "willContinue": true}})).as_bytes(),
        None,
    )
    .unwrap();
    for round in 0..2 {
        for k in (0..40).rev() {
            let p = part(
                json!({"functionCall": {"partialArgs": [{"jsonPath": format!("$.k{k}"), "stringValue": format!("{round}")}], "willContinue": true}}),
            );
            a.feed_json(None, p.as_bytes(), None).unwrap();
        }
    }
    a.close(None).unwrap();
    let input = a.messages()[0].tool_uses[0].block.input.clone();
    assert!(
        input.starts_with("{\"k39\":\"01\",\"k38\":\"01\""),
        "{input}"
    );
    assert_eq!(input.matches("\"01\"").count(), 40);
}

proptest! {
    /// Any fragmentation of the arguments gives the same call.
    #[test]
    fn fragmentation_does_not_change_the_result(cuts in proptest::collection::vec(0usize..60, 0..12)) {
        let args = r#"{"city": "Zürich \"центр\"", "n": [1, 2.5, {"deep": null}], "t": "\u00e9\n"}"#;
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (args.len() + 1)).filter(|c| args.is_char_boundary(*c)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut a = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
        a.feed_json(None, &chat_chunk(json!([{"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}])), None).unwrap();
        let mut at = 0;
        for c in cuts.into_iter().chain([args.len()]) {
            let piece = &args[at..c];
            a.feed_json(None, &chat_chunk(json!([{"index": 0, "function": {"arguments": piece}}])), None).unwrap();
            at = c;
        }
        a.close(None).unwrap();
        let m = a.messages().remove(0);
        prop_assert_eq!(m.tool_uses.len(), 1);
        prop_assert_eq!(&m.tool_uses[0].block.input, args);
    }

    /// Interleaving fragments of different indexes does not change any call.
    #[test]
    fn interleaving_across_indexes_does_not_matter(order in Just((0..8usize).collect::<Vec<_>>()).prop_shuffle()) {
        // Two calls, four fragments each; fragments of one call keep their relative order.
        let pieces = [["{\"a\"", ":", "1", "}"], ["{\"b\"", ":", "[2]", "}"]];
        let mut next = [0usize; 2];
        let mut a = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
        for i in 0..2i64 {
            a.feed_json(None, &chat_chunk(json!([{"index": i, "id": format!("c{i}"), "function": {"name": "f", "arguments": ""}}])), None).unwrap();
        }
        for o in order {
            let call = o % 2;
            let piece = pieces[call][next[call]];
            next[call] += 1;
            a.feed_json(None, &chat_chunk(json!([{"index": call, "function": {"arguments": piece}}])), None).unwrap();
        }
        let m = a.messages().remove(0);
        let inputs: Vec<_> = m.tool_uses.iter().map(|t| t.block.input.as_str()).collect();
        prop_assert_eq!(inputs, vec!["{\"a\":1}", "{\"b\":[2]}"]);
    }
}
