//! The direct reader of Bedrock `Converse` bodies (`direct.rs`) against the
//! reference path (`body.rs`: the body's events, each dispatched): on
//! generated bodies, usual, wild, cut and with one byte changed, and on
//! hand-written ones, both give the same outcome, messages, live events and
//! assembler state.

use proptest::prelude::*;

use crate::providers::body_harness::{self, lit, list, members_with, obj, Agree};
use crate::providers::Dialect;

/// Both paths on one body, alone and after a stream's first events.
const AGREE: Agree = Agree {
    dialect: Dialect::Bedrock,
    tight_total_bytes: 40,
    prefixes: &[
        &[],
        &[
            r#"{"role":"assistant"}"#,
            r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t0","name":"f"}}}"#,
        ],
        &[r#"{"stopReason":"end_turn"}"#],
    ],
    typed: true,
};

// ---------------------------------------------------------------- generators

/// Members, each present or not (`often` nearly always), now and then the
/// first given twice.
fn members(
    list: Vec<(&'static str, BoxedStrategy<String>)>,
    often: &'static [&'static str],
) -> BoxedStrategy<String> {
    let weight = |k: &str| if often.contains(&k) { 0.95 } else { 0.5 };
    members_with(list, weight, false).prop_map(obj).boxed()
}

fn odd_or(wild: bool, usual: BoxedStrategy<String>) -> BoxedStrategy<String> {
    body_harness::odd_or(wild, 12, usual)
}

fn text() -> BoxedStrategy<String> {
    body_harness::text_or(&["\"output\"", "null"])
}

fn tool_use(wild: bool) -> BoxedStrategy<String> {
    members(
        vec![
            (
                "toolUseId",
                odd_or(wild, lit(&["\"tooluse_1\"", "\"tooluse_2\"", "\"\""])),
            ),
            ("name", odd_or(wild, lit(&["\"get_weather\"", "\"\""]))),
            (
                "input",
                lit(&[
                    "{}",
                    "{\"b\": 1, \"a\": [2, 3.50]}",
                    "{\"city\":\"Paris \\u00e9\",\"n\":12345678901234567890123}",
                    "{\"n\":1e400}",
                    "{\"x\": -0.0, \"y\": 1E2, \"z\": [true, null, {\"q\": \"\\\"\"}]}",
                    "\"text\"",
                    "null",
                    "[1, 2]",
                ]),
            ),
            (
                "type",
                odd_or(wild, lit(&["\"server_tool_use\"", "\"tool_use\""])),
            ),
            ("extra", lit(&["1", "{\"k\":[]}"])),
        ],
        &["toolUseId", "name", "input"],
    )
}

fn block(wild: bool) -> BoxedStrategy<String> {
    let text_block = members(vec![("text", odd_or(wild, text()))], &["text"]);
    let tool = members(
        vec![("toolUse", odd_or(wild, tool_use(wild)))],
        &["toolUse"],
    );
    let reasoning_text = members(
        vec![
            ("text", odd_or(wild, text())),
            ("signature", odd_or(wild, lit(&["\"sig\"", "\"\"", "null"]))),
        ],
        &["text", "signature"],
    );
    let reasoning = members(
        vec![(
            "reasoningContent",
            odd_or(
                wild,
                members(
                    vec![
                        ("reasoningText", odd_or(wild, reasoning_text)),
                        ("redactedContent", lit(&["\"AAAA\"", "null"])),
                    ],
                    &["reasoningText"],
                ),
            ),
        )],
        &["reasoningContent"],
    );
    let other = lit(&[
        "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":\"AA==\"}}}",
        "{\"citationsContent\":{\"content\":[{\"text\":\"c\"}],\"citations\":[{\"title\":\"t\"}]}}",
        "{\"toolResult\":{\"toolUseId\":\"t\",\"content\":[{\"text\":\"r\"}],\"status\":\"success\"}}",
        "{\"text\":\"both\",\"toolUse\":{\"toolUseId\":\"t9\",\"name\":\"g\",\"input\":{}}}",
        "{\"text\":\"x\",\"citationsContent\":null}",
        "{}",
    ]);
    if !wild {
        return prop_oneof![6 => text_block, 6 => tool, 3 => reasoning, 1 => other].boxed();
    }
    prop_oneof![6 => text_block, 6 => tool, 3 => reasoning, 2 => other, 1 => lit(&["5", "[\"hi\"]", "null"])]
        .boxed()
}

fn converse_body(wild: bool) -> BoxedStrategy<String> {
    let message = members(
        vec![
            ("role", odd_or(wild, lit(&["\"assistant\""]))),
            ("content", odd_or(wild, list(block(wild), 4))),
        ],
        &["role", "content"],
    );
    let output = members(
        vec![("message", odd_or(wild, message))],
        &["message"],
    );
    members(
        vec![
            ("output", odd_or(wild, output)),
            (
                "stopReason",
                odd_or(
                    wild,
                    lit(&["\"tool_use\"", "\"end_turn\"", "\"max_tokens\"", "null"]),
                ),
            ),
            (
                "usage",
                odd_or(
                    wild,
                    lit(&[
                        "{\"inputTokens\":3,\"outputTokens\":4,\"totalTokens\":7}",
                        "{\"inputTokens\":3,\"cacheReadInputTokens\":2}",
                        "null",
                    ]),
                ),
            ),
            ("metrics", odd_or(wild, lit(&["{\"latencyMs\":120}", "null"]))),
            ("trace", lit(&["{\"guardrail\":{}}", "null"])),
            ("performanceConfig", lit(&["{\"latency\":\"standard\"}"])),
            (
                "additionalModelResponseFields",
                lit(&["{\"stop_sequence\":\"###\"}", "null", "[1e400]"]),
            ),
            ("type", lit(&["\"message\"", "null"])),
            ("object", lit(&["\"response\"", "5"])),
        ],
        &["output", "stopReason", "usage"],
    )
}

#[test]
fn converse_bodies_agree() {
    // Usual members of usual types (a fifth cut or changed: see
    // `maybe_broken`), then members of any type, twice over, not objects.
    AGREE.on(converse_body(false), 500, 0.15);
    AGREE.on(converse_body(true), 500, 0.0);
}

#[test]
fn converse_fixtures_agree() {
    let bodies = [
        (
            true,
            r#"{"output":{"message":{"role":"assistant","content":[
              {"reasoningContent":{"reasoningText":{"text":"Check the weather.","signature":"EqQB"}}},
              {"text":"Looking it up."},
              {"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris","days":[1, 2.50]}}},
              {"toolUse":{"toolUseId":"tooluse_2","name":"now","input":{}}}]}},
              "stopReason":"tool_use","usage":{"inputTokens":12,"outputTokens":30,"totalTokens":42},
              "metrics":{"latencyMs":410}}"#,
        ),
        (
            true,
            r#"{"output":{"message":{"role":"assistant","content":[{"text":"Done."}]}},"stopReason":"end_turn"}"#,
        ),
        (
            true,
            r#"{"output":{"message":null},"stopReason":"max_tokens","usage":{"outputTokens":1}}"#,
        ),
        (
            false,
            r#"{"output":{"message":{"role":"assistant","content":[{"image":{"format":"png"}}]}},"stopReason":"end_turn"}"#,
        ),
        (
            false,
            r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"redactedContent":"AAAA"}}]}},"stopReason":"end_turn"}"#,
        ),
    ];
    for (read_directly, body) in bodies {
        assert_eq!(AGREE.read_directly(body), read_directly, "{body}");
    }
}
