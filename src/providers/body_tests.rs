//! The direct readers of whole bodies against the reference path (a body's
//! events, each dispatched): on generated bodies, odd and malformed ones
//! included, and on the hand-written ones of `tests/rust_bodies.rs`, both give
//! the same outcome, messages, live events and assembler state.

use proptest::prelude::*;

use crate::providers::body_harness::{self, list, lit, members_with, obj, Agree};
use crate::providers::Dialect;

/// Both paths on one body, alone and after an unrelated event.
const fn agree(dialect: Dialect) -> Agree {
    Agree {
        dialect,
        tight_total_bytes: 40,
        prefixes: &[&[], &["{\"choices\":[]}"]],
        typed: true,
    }
}

// ---------------------------------------------------------------- generators

const ALWAYS: &[&str] = &[
    "message",
    "choices",
    "object",
    "function",
    "role",
    "finish_reason",
];

/// Members, each present or not (the members bodies always have, nearly
/// always), now and then the first twice.
fn members(
    list: Vec<(&'static str, BoxedStrategy<String>)>,
) -> BoxedStrategy<Vec<(&'static str, String)>> {
    members_with(
        list,
        |k| if ALWAYS.contains(&k) { 0.95 } else { 0.6 },
        false,
    )
}

fn odd_or(wild: bool, usual: BoxedStrategy<String>) -> BoxedStrategy<String> {
    body_harness::odd_or(wild, 16, usual)
}

fn text() -> BoxedStrategy<String> {
    body_harness::text_or(&["\"message\""])
}

fn arguments() -> BoxedStrategy<String> {
    prop_oneof![
        lit(&[
            "\"{\\\"city\\\":\\\"Paris\\\"}\"",
            "\"{}\"",
            "\"\"",
            "{\"b\": 1, \"a\": [2, 3.50]}",
            "\"{\\\"x\\\": \"",
        ]),
        text(),
    ]
    .boxed()
}

fn call(wild: bool) -> BoxedStrategy<String> {
    let function = members(vec![
        (
            "name",
            odd_or(wild, lit(&["\"get_weather\"", "\"f\"", "\"\""])),
        ),
        ("arguments", odd_or(wild, arguments())),
    ])
    .prop_map(obj)
    .boxed();
    let custom = members(vec![
        ("name", lit(&["\"grammar\"", "\"\""])),
        ("input", text()),
    ])
    .prop_map(obj)
    .boxed();
    let call = members(vec![
        (
            "index",
            if wild {
                lit(&["0", "1", "null", "\"1\"", "-1", "2.0", "\"x\""])
            } else {
                lit(&["", "", "", "0", "1", "\"1\"", "-1", "2.0"])
            },
        ),
        (
            "id",
            odd_or(wild, lit(&["\"call_a\"", "\"call_b\"", "\"\""])),
        ),
        ("type", lit(&["\"function\"", "\"custom\""])),
        ("function", odd_or(wild, function)),
        ("custom", custom),
        (
            "extra_content",
            lit(&["{\"google\":{\"thought_signature\":\"s\"}}"]),
        ),
    ])
    .prop_map(obj);
    if !wild {
        return call.boxed();
    }
    prop_oneof![30 => call, 1 => lit(&["5", "[]", "null"])].boxed()
}

fn content() -> BoxedStrategy<String> {
    let part = members(vec![
        ("type", lit(&["\"text\"", "\"thinking\"", "\"image\""])),
        ("text", text()),
    ])
    .prop_map(obj)
    .boxed();
    prop_oneof![4 => text(), 1 => list(part, 2)].boxed()
}

fn message(wild: bool) -> BoxedStrategy<String> {
    members(vec![
        ("role", odd_or(wild, lit(&["\"assistant\""]))),
        ("reasoning_content", odd_or(wild, text())),
        ("reasoning", odd_or(wild, text())),
        ("content", odd_or(wild, content())),
        ("refusal", odd_or(wild, text())),
        ("tool_calls", odd_or(wild, list(call(wild), 3))),
        (
            "function_call",
            odd_or(
                wild,
                members(vec![
                    ("name", lit(&["\"lookup\""])),
                    ("arguments", arguments()),
                ])
                .prop_map(obj)
                .boxed(),
            ),
        ),
    ])
    .prop_map(obj)
    .boxed()
}

fn choice(wild: bool) -> BoxedStrategy<String> {
    let choice = members(vec![
        (
            "index",
            if wild {
                lit(&["0", "1", "null", "\"1\"", "1.0", "-3", "\"x\"", "1.5"])
            } else {
                lit(&["0", "1", "null", "\"1\"", "1.0", "-3"])
            },
        ),
        ("message", odd_or(wild, message(wild))),
        (
            "finish_reason",
            odd_or(
                wild,
                lit(&["\"stop\"", "\"tool_calls\"", "\"length\"", "\"\""]),
            ),
        ),
        ("logprobs", lit(&["null"])),
        ("delta", lit(&["", "", "", "", "", "{}"])),
    ])
    .prop_map(obj)
    .boxed();
    if !wild {
        return choice;
    }
    prop_oneof![30 => choice, 1 => lit(&["5", "[0, {}, \"stop\"]"])].boxed()
}

fn chat_body(wild: bool) -> BoxedStrategy<String> {
    members(vec![
        ("id", odd_or(wild, lit(&["\"chatcmpl-1\""]))),
        (
            "object",
            odd_or(
                wild,
                lit(&[
                    "\"chat.completion\"",
                    "\"chat.completion\"",
                    "\"chat.completion\"",
                    "\"chat.completion\"",
                    "\"chat.completion.chunk\"",
                ]),
            ),
        ),
        ("type", lit(&["", "", "", "", "", "\"message\""])),
        ("created", odd_or(wild, lit(&["1741570283"]))),
        ("model", lit(&["\"gpt-4o\"", "\"m\\u00e9\""])),
        ("system_fingerprint", lit(&["\"fp\"", "null"])),
        ("choices", odd_or(wild, list(choice(wild), 3))),
        (
            "usage",
            odd_or(
                wild,
                lit(&[
                    "{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}",
                    "{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}",
                    "{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}",
                    "{\"total_tokens\":1e400}",
                ]),
            ),
        ),
    ])
    .prop_map(obj)
    .boxed()
}

#[test]
fn chat_bodies_agree() {
    // Usual members of usual types (a third broken or cut: see `maybe_broken`),
    // then members of any type, twice over, not objects. About 30 % are read
    // directly (142 to 160 of 500 over repeated runs); the bar sits below that.
    agree(Dialect::OpenAiChat).on(chat_body(false), 500, 0.15);
    agree(Dialect::OpenAiChat).on(chat_body(true), 500, 0.0);
}

fn anthropic_block(wild: bool) -> BoxedStrategy<String> {
    let text_block = members(vec![
        ("type", lit(&["\"text\""])),
        ("text", odd_or(wild, text())),
        (
            "citations",
            odd_or(wild, lit(&["null", "[]", "[{\"type\":\"char_location\"}]"])),
        ),
    ]);
    let thinking = members(vec![
        ("type", lit(&["\"thinking\""])),
        ("thinking", odd_or(wild, text())),
        ("signature", odd_or(wild, lit(&["\"sig\"", "\"\"", "null"]))),
    ]);
    let tool = members(vec![
        (
            "type",
            lit(&["\"tool_use\"", "\"tool_use\"", "\"server_tool_use\""]),
        ),
        (
            "id",
            odd_or(wild, lit(&["\"toolu_1\"", "\"toolu_2\"", "\"\""])),
        ),
        ("name", odd_or(wild, lit(&["\"get_weather\"", "\"\""]))),
        (
            "input",
            lit(&[
                "{}",
                "{\"b\": 1, \"a\": [2, 3.50]}",
                "{\"city\":\"Paris \\u00e9\"}",
                "{\"n\":1e400}",
                "\"text\"",
                "null",
            ]),
        ),
        ("cache_control", lit(&["null", "{\"type\":\"ephemeral\"}"])),
    ]);
    let other = lit(&[
        "{\"type\":\"redacted_thinking\",\"data\":\"x\"}",
        "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"s\",\"content\":[]}",
        "{\"type\":\"later_kind\"}",
        "{\"text\":\"no type\"}",
    ]);
    let known = prop_oneof![4 => text_block, 2 => thinking, 4 => tool, 1 => Just(Vec::new())]
        .prop_map(obj)
        .boxed();
    if !wild {
        return prop_oneof![20 => known, 1 => other].boxed();
    }
    prop_oneof![20 => known, 3 => other, 1 => lit(&["5"])].boxed()
}

fn anthropic_body(wild: bool) -> BoxedStrategy<String> {
    members(vec![
        ("id", odd_or(wild, lit(&["\"msg_1\""]))),
        (
            "type",
            odd_or(
                wild,
                lit(&["\"message\"", "\"message\"", "\"message\"", "\"m\""]),
            ),
        ),
        ("role", odd_or(wild, lit(&["\"assistant\""]))),
        ("model", lit(&["\"claude\"", "1e400"])),
        ("content", odd_or(wild, list(anthropic_block(wild), 4))),
        (
            "stop_reason",
            odd_or(
                wild,
                lit(&["\"tool_use\"", "\"end_turn\"", "\"max_tokens\"", "null"]),
            ),
        ),
        ("stop_sequence", odd_or(wild, lit(&["null", "\"###\""]))),
        (
            "usage",
            odd_or(
                wild,
                lit(&["{\"input_tokens\":3,\"output_tokens\":4}", "null"]),
            ),
        ),
        ("object", lit(&["", "", "", "", "\"chat.completion\""])),
    ])
    .prop_map(obj)
    .boxed()
}

#[test]
fn anthropic_bodies_agree() {
    // About 18 % of the usual bodies are read directly (the rest are cut, broken
    // or hold what only the reference path reads); the bar sits well below that
    // spread (75 to 101 of 500 over repeated runs) so an unlucky draw never fails.
    agree(Dialect::Anthropic).on(anthropic_body(false), 500, 0.08);
    agree(Dialect::Anthropic).on(anthropic_body(true), 500, 0.0);
}

fn cohere_body(wild: bool) -> BoxedStrategy<String> {
    let part = members(vec![
        (
            "type",
            odd_or(wild, lit(&["\"text\"", "\"text\"", "\"thinking\"", "null"])),
        ),
        ("text", odd_or(wild, text())),
        ("thinking", odd_or(wild, text())),
    ])
    .prop_map(obj)
    .boxed();
    let function = members(vec![
        ("name", odd_or(wild, lit(&["\"get_weather\"", "\"\""]))),
        ("arguments", odd_or(wild, arguments())),
    ])
    .prop_map(obj)
    .boxed();
    let call = members(vec![
        ("id", odd_or(wild, lit(&["\"call_1\"", "\"\""]))),
        ("type", lit(&["\"function\""])),
        ("function", odd_or(wild, function)),
    ])
    .prop_map(obj)
    .boxed();
    let message = members(vec![
        ("role", lit(&["\"assistant\""])),
        ("tool_plan", odd_or(wild, text())),
        ("content", odd_or(wild, list(part, 3))),
        ("tool_calls", odd_or(wild, list(call, 3))),
        (
            "citations",
            odd_or(wild, lit(&["[]", "[{\"start\":0,\"end\":2}]", "null"])),
        ),
    ])
    .prop_map(obj)
    .boxed();
    members(vec![
        ("id", odd_or(wild, lit(&["\"c_1\""]))),
        (
            "finish_reason",
            odd_or(
                wild,
                lit(&["\"TOOL_CALL\"", "\"COMPLETE\"", "\"MAX_TOKENS\"", "null"]),
            ),
        ),
        ("message", odd_or(wild, message)),
        (
            "usage",
            odd_or(wild, lit(&["{\"tokens\":{\"output_tokens\":1}}", "null"])),
        ),
        ("type", lit(&["", "", "", "", "", "\"x\""])),
        ("object", lit(&["", "", "", "", "\"x\"", "5"])),
    ])
    .prop_map(obj)
    .boxed()
}

#[test]
fn cohere_bodies_agree() {
    agree(Dialect::Cohere).on(cohere_body(false), 500, 0.15);
    agree(Dialect::Cohere).on(cohere_body(true), 500, 0.0);
}

/// The hand-written bodies of `tests/rust_bodies.rs` (Anthropic and Cohere).
#[test]
fn anthropic_and_cohere_fixtures_agree() {
    let bodies = [
        (
            Dialect::Anthropic,
            false,
            r#"{
          "id": "msg_01AbC", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
          "content": [
            {"type": "thinking", "thinking": "Let me search first.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "weather Paris"}},
            {"type": "text", "text": "It is sunny."},
            {"type": "tool_use", "id": "toolu_02", "name": "book", "input": {"zone": "CET", "city": "Paris", "when": {"day": 2, "at": "09:00"}}}
          ],
          "stop_reason": "tool_use", "stop_sequence": null,
          "usage": {"input_tokens": 2095, "output_tokens": 503, "server_tool_use": {"web_search_requests": 1}}
        }"#,
        ),
        (
            Dialect::Anthropic,
            true,
            r#"{"type":"message","role":"assistant","content":[
          {"type":"thinking","thinking":"Plan.","signature":"EqQB"},{"type":"text","text":"Hi"},
          {"type":"tool_use","id":"t1","name":"f","input":{"b":1,"a":[2, 3.50]}}],"stop_reason":"tool_use","usage":{}}"#,
        ),
        (
            Dialect::Anthropic,
            true,
            r#"{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"now","input":{}}],"stop_reason":"tool_use","usage":{}}"#,
        ),
        (
            Dialect::Anthropic,
            true,
            r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Long"}],"stop_reason":"max_tokens","usage":{}}"#,
        ),
        (
            // A block that fails (a second call with the id of the first):
            // nothing after it is applied, and its error is the outcome.
            Dialect::Anthropic,
            true,
            r#"{"type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{}},{"type":"tool_use","id":"t","name":"b","input":{"x":1}},{"type":"text","text":"after"}],"stop_reason":"tool_use","usage":{}}"#,
        ),
        (
            Dialect::Cohere,
            true,
            r#"{"id": "d1f0", "finish_reason": "COMPLETE",
          "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Short answer."}, {"type": "text", "text": "Paris."}]},
          "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 3}, "tokens": {"input_tokens": 70, "output_tokens": 9}}}"#,
        ),
        (
            Dialect::Cohere,
            true,
            r#"{"id":"c","finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"p",
          "content":[{"type":"text","text":"hi"}],"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}},
          {"id":"u","type":"function","function":{"name":"g","arguments":"null"}}],"citations":[{"start":0}]},
          "usage":{"tokens":{"output_tokens":1}}}"#,
        ),
    ];
    for (d, read_directly, body) in bodies {
        assert_eq!(agree(d).read_directly(body), read_directly, "{body}");
    }
    // A long body whose `finish_reason` comes before its message is read too.
    let text = "a".repeat(600);
    let first = format!(
        r#"{{"id":"l","finish_reason":"COMPLETE","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"usage":{{}}}}"#
    );
    assert!(agree(Dialect::Cohere).read_directly(&first));
}

#[test]
fn chat_fixtures_agree() {
    let bodies = [
        r#"{"id":"chatcmpl-9xYz","object":"chat.completion","created":1741570283,"model":"deepseek-reasoner",
           "choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"The user wants weather.",
             "content":"Checking both cities.","refusal":null,"tool_calls":[
               {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
               {"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
             "logprobs":null,"finish_reason":"tool_calls"},
             {"index":1,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},
              "logprobs":null,"finish_reason":"stop"}],
           "usage":{"prompt_tokens":41,"completion_tokens":37,"total_tokens":78,
             "completion_tokens_details":{"reasoning_tokens":6}}}"#,
        r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,
            "function_call":{"name":"lookup","arguments":"{\"q\":\"x\"}"}},"finish_reason":"function_call"}]}"#,
        r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon"},"finish_reason":"length"}]}"#,
        r#"{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[
            {"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},
            {"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[{"message":{"content":"hi","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"b":1,"a":2}}}]},"finish_reason":""}]}"#,
        r#"{"type":"message","role":"assistant","content":[],"stop_reason":"end_turn"}"#,
    ];
    for (i, body) in bodies.iter().enumerate() {
        // All are read directly (the last, an Anthropic body, as one when
        // named chat: a wrong dialect, which only the reference reports).
        assert!(
            agree(Dialect::OpenAiChat).read_directly(body),
            "{i}: {body}"
        );
    }
}

#[test]
fn overflow_is_looked_for_outside_strings() {
    use super::may_overflow;
    assert!(!may_overflow(
        r#"{"id":"msg_01e5","n":[1,2.5,-3],"t":true}"#
    ));
    assert!(!may_overflow(r#"{"s":"a \"1e400\" b\\","n":0}"#));
    assert!(may_overflow(r#"{"n":1e400}"#));
    assert!(may_overflow(r#"{"n":-2.5E-3}"#));
    assert!(may_overflow(&format!(r#"{{"n":{}}}"#, "9".repeat(300))));
    assert!(!may_overflow(&format!(r#"{{"s":"{}"}}"#, "9".repeat(300))));
}

/// A stream's first JSON line is read whole as a body (the framing's check
/// that the line is one value spared) exactly as the framing and the usual
/// path read it, whatever follows it on the line or after it; a body its
/// scanner does not certify (nested deeper than the framing allows, with a
/// closing and an opening bracket in a string) is left to the framing.
#[test]
fn lines_read_whole_agree() {
    use crate::providers::body_harness::agree_as_bytes;
    use crate::providers::AssemblerLimits;
    let read = |d: Dialect, body: &str| {
        let mut n = 0;
        for named in [Some(d), None] {
            match agree_as_bytes(named, AssemblerLimits::default(), body) {
                Ok(k) => n += k,
                Err(e) => panic!("{e}"),
            }
        }
        n
    };
    let chat = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a} {b ]\n[","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":[1,{}]}"}}]},"finish_reason":"tool_calls"}],"usage":{"total_tokens":3}}"#;
    let cohere = r#"{"id":"c","finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"p","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"usage":{"tokens":{"output_tokens":1}}}"#;
    let anthropic = r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"f","input":{"b":1,"a":2}}],"stop_reason":"tool_use","usage":{"output_tokens":3}}"#;
    for (d, body) in [
        (Dialect::OpenAiChat, chat),
        (Dialect::Cohere, cohere),
        (Dialect::Anthropic, anthropic),
    ] {
        assert!(read(d, body) > 0, "{body}");
    }
    // Deeper than the framing allows, which it finds only when a string
    // holds `} {`: the scanner gives up, and so the line is not read whole.
    let deep = format!(
        r#"{{"object":"chat.completion","choices":[{{"index":0,"message":{{"content":"a}} {{b"}},"logprobs":{}1{},"finish_reason":"stop"}}]}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    assert_eq!(read(Dialect::OpenAiChat, &deep), 0);
    // Cohere's marker is not looked for: a body without it as a key (none,
    // or one escaped) is no body its scanner certifies.
    for unmarked in [
        r#"{"id":"c","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"id":"c","finish\u005freason":"COMPLETE","message":{"role":"assistant"}}"#,
    ] {
        assert_eq!(read(Dialect::Cohere, unmarked), 0, "{unmarked}");
    }
    // Two bodies on a line, an array, a line that is no body.
    for other in [
        format!("{chat}{chat}"),
        format!("[{chat}]"),
        r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#.to_owned(),
    ] {
        assert_eq!(read(Dialect::OpenAiChat, &other), 0, "{other}");
    }
}
