//! The fast paths of the dialects that send calls whole (`gemini/fast.rs`,
//! `ollama/fast.rs`) against the general decode: any chunk or line text, and
//! whole streams cut anywhere, give the same with the fast path as without it
//! (an arguments object written compactly the same way on both paths).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::gen::{
    event_text, index, junk, members, obj_field, render, str_field, text, Rng, Spelling, J,
};
use super::{fast_is_general, fragments, memo_case_of, obj, s};
use crate::providers::{gemini, ollama, Dialect};

/// Mostly a boolean, sometimes any value.
fn boolish(r: &mut Rng) -> J {
    if r.chance(85) {
        J::Bool(r.chance(50))
    } else {
        junk(r, 1)
    }
}

/// A call's arguments: mostly an object (strings with escapes and non-ASCII,
/// numbers in every spelling, nested values), sometimes a string or any value.
fn args(r: &mut Rng) -> J {
    match r.below(10) {
        0 => J::Str(text(r)),
        1 => junk(r, 3),
        _ => J::Obj(
            (0..r.below(5))
                .map(|i| {
                    let v = match r.below(4) {
                        0 => junk(r, 2),
                        1 => {
                            J::Num(r.pick(&["1", "-2.5", "1e400", "0", "12345678901234567890123"]))
                        }
                        _ => J::Str(text(r)),
                    };
                    (format!("k{i}"), v)
                })
                .collect(),
        ),
    }
}

fn list(r: &mut Rng, n: usize, element: impl Fn(&mut Rng) -> J) -> J {
    if r.chance(90) {
        J::Arr((0..n).map(|_| element(r)).collect())
    } else {
        junk(r, 2)
    }
}

fn gemini_part(r: &mut Rng) -> J {
    let call = obj_field(r, |r| {
        let v = vec![
            (40, "id", str_field(r)),
            (90, "name", str_field(r)),
            (85, "args", args(r)),
            (10, "willContinue", boolish(r)),
            (4, "partialArgs", junk(r, 2)),
        ];
        members(r, v)
    });
    let v = vec![
        (60, "text", str_field(r)),
        (10, "thought", boolish(r)),
        (10, "thoughtSignature", str_field(r)),
        (30, "functionCall", call),
        (4, "executableCode", junk(r, 2)),
        (4, "codeExecutionResult", junk(r, 2)),
    ];
    members(r, v)
}

/// A Gemini chunk of any shape: mostly candidates with text and call parts.
fn gemini_chunk(r: &mut Rng) -> J {
    let n = 1 + r.below(2);
    let m = r.below(3);
    let candidates = list(r, m, |r| {
        let content = obj_field(r, |r| {
            let parts = list(r, n, gemini_part);
            members(r, vec![(90, "parts", parts), (50, "role", s("model"))])
        });
        let reason = if r.chance(80) { str_field(r) } else { index(r) };
        let v = vec![
            (70, "index", index(r)),
            (90, "content", content),
            (10, "finishReason", reason),
        ];
        members(r, v)
    });
    let usage = obj_field(r, |r| {
        let v = vec![
            (80, "promptTokenCount", index(r)),
            (50, "totalTokenCount", junk(r, 1)),
        ];
        members(r, v)
    });
    let v = vec![
        (92, "candidates", candidates),
        (15, "usageMetadata", usage),
        (3, "promptFeedback", junk(r, 2)),
        (3, "error", junk(r, 1)),
        (40, "modelVersion", str_field(r)),
    ];
    members(r, v)
}

/// The chunks a memo takes as templates: one candidate with one text part,
/// sometimes with other members.
fn gemini_text_chunk(r: &mut Rng) -> J {
    let piece = str_field(r);
    let v = vec![(97, "text", piece), (3, "thought", boolish(r))];
    let part = members(r, v);
    let parts = if r.chance(95) {
        J::Arr(vec![part])
    } else {
        junk(r, 2)
    };
    let content = members(r, vec![(97, "parts", parts), (70, "role", s("model"))]);
    let v = vec![(97, "content", content), (80, "index", index(r))];
    let candidate = members(r, v);
    let v = vec![
        (97, "candidates", J::Arr(vec![candidate])),
        (60, "modelVersion", s("gemini-2.5-flash")),
        (5, "usageMetadata", junk(r, 2)),
    ];
    members(r, v)
}

/// An Ollama line of the common shape: text or thinking alone, with the
/// members every line has around it.
fn ollama_text_line(r: &mut Rng) -> J {
    let field = if r.chance(80) { "content" } else { "thinking" };
    let piece = str_field(r);
    let message = members(r, vec![(50, "role", s("assistant")), (100, field, piece)]);
    let (done, count) = (boolish(r), junk(r, 1));
    let v = vec![
        (90, "model", s("qwen3")),
        (90, "created_at", s("2026-12-01T10:00:00.000000Z")),
        (97, "message", message),
        (90, "done", done),
        (3, "eval_count", count),
    ];
    members(r, v)
}

/// An Ollama line of any shape: mostly text, calls now and then, counts.
fn ollama_line(r: &mut Rng) -> J {
    let message = obj_field(r, |r| {
        let n = 1 + r.below(2);
        let calls = list(r, n, |r| {
            let function = obj_field(r, |r| {
                let v = vec![
                    (20, "index", index(r)),
                    (90, "name", str_field(r)),
                    (85, "arguments", args(r)),
                ];
                members(r, v)
            });
            let v = vec![(20, "id", str_field(r)), (90, "function", function)];
            members(r, v)
        });
        let v = vec![
            (80, "content", str_field(r)),
            (10, "thinking", str_field(r)),
            (30, "tool_calls", calls),
            (50, "role", s("assistant")),
        ];
        members(r, v)
    });
    let v = vec![
        (90, "message", message),
        (80, "done", boolish(r)),
        (10, "done_reason", str_field(r)),
        (3, "error", str_field(r)),
        (10, "eval_count", index(r)),
        (10, "prompt_eval_count", index(r)),
        (5, "total_duration", index(r)),
        (50, "model", s("m")),
    ];
    members(r, v)
}

/// A well-formed stream's events (text, then calls, then the end), with
/// (for some seeds) events of any shape among them.
fn stream_events(r: &mut Rng, gemini: bool) -> Vec<J> {
    let mut events = Vec::new();
    let said = text(r);
    for piece in fragments(r, &said) {
        events.push(if gemini {
            let part = obj(vec![("text", J::Str(piece))]);
            let content = obj(vec![("parts", J::Arr(vec![part])), ("role", s("model"))]);
            obj(vec![(
                "candidates",
                J::Arr(vec![obj(vec![
                    ("content", content),
                    ("index", J::Num("0")),
                ])]),
            )])
        } else {
            let m = obj(vec![("role", s("assistant")), ("content", J::Str(piece))]);
            obj(vec![
                ("model", s("m")),
                ("message", m),
                ("done", J::Bool(false)),
            ])
        });
    }
    for i in 0..r.below(3) {
        let name = J::Str(format!("f{i}"));
        events.push(if gemini {
            let call = obj(vec![("name", name), ("args", args(r))]);
            let part = obj(vec![("functionCall", call)]);
            let content = obj(vec![("parts", J::Arr(vec![part]))]);
            obj(vec![(
                "candidates",
                J::Arr(vec![obj(vec![("content", content)])]),
            )])
        } else {
            let f = obj(vec![("name", name), ("arguments", args(r))]);
            let calls = J::Arr(vec![obj(vec![("function", f)])]);
            let m = obj(vec![("content", s("")), ("tool_calls", calls)]);
            obj(vec![("message", m), ("done", J::Bool(false))])
        });
    }
    events.push(if gemini {
        let c = obj(vec![("finishReason", s("STOP")), ("index", J::Num("0"))]);
        obj(vec![("candidates", J::Arr(vec![c]))])
    } else {
        obj(vec![
            ("done", J::Bool(true)),
            ("done_reason", s("stop")),
            ("eval_count", J::Num("12")),
        ])
    });
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(events.len() + 1);
            let j = if gemini {
                gemini_chunk(r)
            } else {
                ollama_line(r)
            };
            events.insert(at, j);
        }
    }
    events
}

/// The events as SSE (Gemini, for some seeds) or JSON lines.
fn encode(r: &mut Rng, events: &[J], sse: bool) -> Vec<u8> {
    let mut out = String::new();
    for j in events {
        let text = if r.chance(3) {
            event_text(r, j)
        } else {
            let mut t = String::new();
            render(r, j, Spelling::Clean, &mut t);
            t
        };
        let text = text.replace(['\n', '\r'], " ");
        if sse {
            out.push_str("data: ");
            out.push_str(&text);
            out.push_str("\n\n");
        } else {
            out.push_str(&text);
            out.push('\n');
        }
    }
    out.into_bytes()
}

fn check_stream(seed: u64, gemini: bool) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let events = stream_events(&mut r, gemini);
    let sse = gemini && r.chance(50);
    let bytes = encode(&mut r, &events, sse);
    fast_is_general(
        &mut r,
        if gemini {
            Dialect::Gemini
        } else {
            Dialect::Ollama
        },
        &bytes,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A Gemini chunk of any shape: the fast decode is the general one, or
    /// leaves the chunk to it.
    #[test]
    fn fast_and_general_decoders_agree_on_gemini_chunks(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = gemini_chunk(&mut r);
        let text = event_text(&mut r, &j);
        prop_assert!(gemini::fast_path_agrees(&text).is_ok(), "{:?}: {:?}", text, gemini::fast_path_agrees(&text));
    }

    /// An Ollama line of any shape: the fast decode is the general one, or
    /// leaves the line to it.
    #[test]
    fn fast_and_general_decoders_agree_on_ollama_lines(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = ollama_line(&mut r);
        let text = event_text(&mut r, &j);
        prop_assert!(ollama::fast_path_agrees(&text).is_ok(), "{:?}: {:?}", text, ollama::fast_path_agrees(&text));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A Gemini chunk made from a template the memo took: what the memo gives
    /// is the general decode, or it leaves the chunk to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_gemini_chunks(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case_of(seed, gemini_text_chunk, gemini::memo_parts) {
            let agrees = gemini::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }

    /// An Ollama line made from a template the memo took: what the memo
    /// gives is the general decode, or it leaves the line to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_ollama_lines(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case_of(seed, ollama_text_line, ollama::memo_parts) {
            let agrees = ollama::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole Gemini stream (SSE or JSON lines), cut anywhere: the same
    /// reads, errors, live events and messages with the fast path as without it.
    #[test]
    fn fast_and_general_paths_agree_on_gemini_streams(seed in any::<u64>()) {
        check_stream(seed, true)?;
    }

    /// A whole Ollama stream, cut anywhere: the same with the fast path as
    /// without it.
    #[test]
    fn fast_and_general_paths_agree_on_ollama_streams(seed in any::<u64>()) {
        check_stream(seed, false)?;
    }
}

/// The fast paths serve the usual chunks and lines (calls with arguments
/// objects included), and leave to the general path what they do not read.
#[test]
fn the_whole_call_fast_paths_serve_the_usual_events() {
    let served = [
        r#"{"candidates":[{"content":{"parts":[{"text":"Th\u00e9"}],"role":"model"},"index":0}],"modelVersion":"g"}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a" : "\u00fc\/", "n":1e400}}}]}}]}"#,
        r#"{"candidates":[{"finishReason":"STOP","index":0}]}"#,
    ];
    for text in served {
        assert_eq!(gemini::fast_path_agrees(text), Ok(true), "{text}");
    }
    let (prefix, suffix) = gemini::memo_parts(served[0]).unwrap();
    assert!(prefix.ends_with(r#"[{"text":"#), "{prefix}");
    assert_eq!(
        suffix,
        r#"}],"role":"model"},"index":0}],"modelVersion":"g"}"#
    );
    let next = r#"{"candidates":[{"content":{"parts":[{"text":"\"x"}],"role":"model"},"index":0}],"modelVersion":"g"}"#;
    assert_eq!(gemini::memo_agrees(served[0], next), Ok(true));
    assert!(gemini::memo_parts(served[1]).is_none(), "a call");
    let usage = r#"{"candidates":[],"usageMetadata":{"totalTokenCount":3,"x":[1.5e3,{"a":null}]}}"#;
    assert_eq!(gemini::fast_path_agrees(usage), Ok(true));
    let left = [
        r#"{"candidates":[],"usageMetadata":[1]}"#,
        r#"{"candidates":[],"promptFeedback":{"blockReason":"SAFETY"}}"#,
        r#"{"candidates":[{"index":"0"}]}"#,
        r#"{"candidates":[{"finishReason":1}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[]}}]}}]}"#,
        r#"{"candidates":[],"candidates":[]}"#,
    ];
    for text in left {
        assert_eq!(gemini::fast_path_agrees(text), Ok(false), "{text}");
    }
    let served = [
        r#"{"model":"m","message":{"role":"assistant","content":"h\u00e9"},"done":false}"#,
        r#"{"message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":{"x": [1, {"y":"\t"}]}}}]},"done":false}"#,
        r#"{"message":{"tool_calls":[{"function":{"index":1,"name":"f","arguments":"{}"}}]}}"#,
        r#"{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":"b c","n":[1,2.5e3,{}]}}}]}}"#,
        r#"{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":"q\"\\\n\t\b\f\r"}}}]}}"#,
        r#"{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":"\/\u00e9\u000a"}}}]}}"#,
        r#"{"done":true,"done_reason":"stop","eval_count":12,"total_duration":99}"#,
    ];
    for text in served {
        assert_eq!(ollama::fast_path_agrees(text), Ok(true), "{text}");
    }
    // A line of text alone is a template; the memo serves the next one.
    let (prefix, suffix) = ollama::memo_parts(served[0]).unwrap();
    assert_eq!(
        prefix,
        r#"{"model":"m","message":{"role":"assistant","content":"#
    );
    assert_eq!(suffix, r#"},"done":false}"#);
    let next = r#"{"model":"m","message":{"role":"assistant","content":"\"x\u00e9"},"done":false}"#;
    assert_eq!(ollama::memo_agrees(served[0], next), Ok(true));
    let thinking = r#"{"model":"m","message":{"thinking":"a"}}"#;
    assert!(ollama::memo_parts(thinking).is_some());
    for text in &served[1..] {
        assert!(ollama::memo_parts(text).is_none(), "{text}");
    }
    let left = [
        r#"{"error":{"message":"x"}}"#,
        r#"{"eval_count":1.0}"#,
        r#"{"message":{"tool_calls":[{"function":{"arguments":[1]}}]}}"#,
        r#"{"done":true,"done":false}"#,
    ];
    for text in left {
        assert_eq!(ollama::fast_path_agrees(text), Ok(false), "{text}");
    }
}
