//! The direct reader of Bedrock `Converse` bodies (`direct.rs`) against the
//! reference path (`body.rs`: the body's events, each dispatched): on
//! generated bodies, usual, wild, cut and with one byte changed, and on
//! hand-written ones, both give the same outcome, messages, live events and
//! assembler state.

use proptest::prelude::*;

use crate::providers::body::{with_reference, DIRECT_READS};
use crate::providers::{Assembler, AssemblerLimits, Dialect};

/// Everything a feed leaves observable: the results of the feeds and of the
/// close, the live events, the messages and the whole serialised state.
fn outcome(d: Option<Dialect>, limits: AssemblerLimits, body: &str, prefix: &[&str]) -> String {
    let mut a = Assembler::new(d, limits);
    let mut live = Vec::new();
    let mut out = Vec::new();
    for event in prefix {
        out.push(format!("{:?}", a.feed_text(None, event, Some(&mut live))));
    }
    out.push(format!("{:?}", a.feed_text(None, body, Some(&mut live))));
    // Once more as bytes: the same body after itself.
    out.push(format!(
        "{:?}",
        a.feed_json(None, body.as_bytes(), Some(&mut live))
    ));
    out.push(format!("{:?}", a.close(Some(&mut live))));
    out.push(format!("{live:?}"));
    out.push(format!("{:?}", a.messages()));
    out.push(serde_json::to_string(&a).unwrap_or_default());
    out.join("\n")
}

/// Bodies read directly while `f` ran.
fn direct_reads(f: impl FnOnce()) -> usize {
    let before = DIRECT_READS.with(std::cell::Cell::get);
    f();
    DIRECT_READS.with(std::cell::Cell::get) - before
}

/// Both paths on one body, named and `auto`, with default and tight limits,
/// alone and after a stream's first events.
fn agree(body: &str) -> Result<(), TestCaseError> {
    let tight = AssemblerLimits {
        max_calls: 1,
        max_total_bytes: 40,
        ..AssemblerLimits::default()
    };
    let started: &[&str] = &[
        r#"{"role":"assistant"}"#,
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t0","name":"f"}}}"#,
    ];
    for named in [Some(Dialect::Bedrock), None] {
        for limits in [AssemblerLimits::default(), tight] {
            for prefix in [&[][..], started, &[r#"{"stopReason":"end_turn"}"#][..]] {
                let direct = outcome(named, limits, body, prefix);
                let reference = with_reference(|| outcome(named, limits, body, prefix));
                prop_assert_eq!(&direct, &reference, "{:?} {:?} {}", named, limits, body);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- generators

/// A JSON object's text from its members, duplicates and order kept (an
/// empty value: the member is left out).
fn obj(members: Vec<(&'static str, String)>) -> String {
    let inner: Vec<String> = members
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(k)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Members, each present or not (`often` nearly always), now and then one
/// given twice.
fn members(
    list: Vec<(&'static str, BoxedStrategy<String>)>,
    often: &'static [&'static str],
) -> BoxedStrategy<String> {
    let parts: Vec<BoxedStrategy<Option<(&'static str, String)>>> = list
        .into_iter()
        .map(|(k, s)| {
            let p = if often.contains(&k) { 0.95 } else { 0.5 };
            proptest::option::weighted(p, s.prop_map(move |v| (k, v))).boxed()
        })
        .collect();
    (parts, 0..40_usize)
        .prop_map(|(ms, dup)| {
            let mut ms: Vec<(&'static str, String)> = ms.into_iter().flatten().collect();
            if dup == 0 {
                if let Some(first) = ms.first().cloned() {
                    ms.push(first);
                }
            }
            obj(ms)
        })
        .boxed()
}

fn lit(options: &[&'static str]) -> BoxedStrategy<String> {
    proptest::sample::select(options.to_vec())
        .prop_map(str::to_owned)
        .boxed()
}

/// Values of an unusual kind, for any member.
const ODD: &[&str] = &[
    "null", "\"\"", "5", "1e400", "-1", "1.5", "true", "[]", "{}", "[1,2]",
];

fn odd_or(wild: bool, usual: BoxedStrategy<String>) -> BoxedStrategy<String> {
    if !wild {
        return usual;
    }
    prop_oneof![12 => usual, 1 => lit(ODD)].boxed()
}

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z \"\\\\é日🦀\n]{0,12}".prop_map(|s| serde_json::Value::from(s).to_string()),
        lit(&["\"output\"", "\"\\u00e9\\n\"", "\"\"", "null"]),
    ]
    .boxed()
}

fn list(item: BoxedStrategy<String>, max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(item, 0..=max)
        .prop_map(|v| format!("[{}]", v.join(",")))
        .boxed()
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

/// A body, now and then cut short or with one byte changed.
fn maybe_broken(body: BoxedStrategy<String>) -> BoxedStrategy<String> {
    (body, 0..10_usize, any::<prop::sample::Index>(), 0..4_usize)
        .prop_map(|(b, how, at, byte)| {
            let cut = at.index(b.len().max(1));
            let cut = (0..=cut)
                .rev()
                .find(|&i| b.is_char_boundary(i))
                .unwrap_or(0);
            let (head, tail) = b.split_at(cut);
            match how {
                0 => head.to_owned(),
                1 => format!("{head}{}{tail}", ["\"", "}", ",", " "].get(byte).unwrap_or(&"")),
                _ => b,
            }
        })
        .boxed()
}

/// Runs `agree` on `cases` generated bodies; at least `share` of them must
/// be read directly (else the comparison proves little).
fn agree_on(bodies: BoxedStrategy<String>, cases: u32, share: f64) {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    let (direct, total) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let r = runner.run(&maybe_broken(bodies), |body| {
        total.set(total.get() + 1);
        let mut r = Ok(());
        let read = direct_reads(|| r = agree(&body));
        direct.set(direct.get() + usize::from(read > 0));
        r
    });
    let (direct, total) = (direct.get(), total.get());
    if let Err(e) = r {
        panic!("{e}");
    }
    #[allow(clippy::cast_precision_loss)]
    let enough = direct as f64 >= share * total as f64;
    assert!(enough, "{direct} of {total} bodies read directly");
}

#[test]
fn converse_bodies_agree() {
    // Usual members of usual types (a fifth cut or changed: see
    // `maybe_broken`), then members of any type, twice over, not objects.
    agree_on(converse_body(false), 500, 0.15);
    agree_on(converse_body(true), 500, 0.0);
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
        let mut r = Ok(());
        let direct = direct_reads(|| r = agree(body));
        if let Err(e) = r {
            panic!("{e}");
        }
        assert_eq!(direct > 0, read_directly, "{body}");
    }
}
