//! The fast paths of the hottest events (`scan_chunk` for OpenAI chat,
//! `scan_event` for Anthropic) against the general `serde_json` decode.
//!
//! Two properties: for any event text, a fast path gives exactly the event the
//! typed decode gives, or leaves the text to the general path (so it never
//! accepts what the general path refuses); and a whole stream fed as raw bytes,
//! cut anywhere, gives the same results, errors, live events and messages with
//! the fast paths as without them.
//!
//! The texts are generated from a seed: events of both dialects with every
//! field the fast paths read, strings with escapes, surrogate pairs and
//! non-ASCII, extra keys, nulls, values of the wrong type, indexes in every
//! spelling, duplicate keys, escaped keys, then (for some) mutated bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::scan::GENERAL_ONLY;
use super::{
    anthropic, openai_chat, AssembledMessage, Assembler, AssemblerLimits, BytesAssembler,
    BytesError, Dialect, LiveEvent,
};
use crate::framing::FramingLimits;

mod bedrock;
mod carrying;
mod cohere;
mod delta;
mod events;
mod responses;
mod whole;
use events::{anthropic_event, anthropic_events, chat_chunk, chat_events};

mod gen;
mod interactions;
mod invoke;
mod nonce;
mod served;
mod stamps;
use gen::{
    event_text, index, junk, members, mutate, obj_field, render, str_field, string, text, Rng,
    Spelling, J,
};

// ---------------------------------------------------------------- streams

/// A tool call's arguments: a JSON object of strings, rendered.
fn arguments(r: &mut Rng) -> String {
    let members: Vec<(String, J)> = (0..=r.below(3))
        .map(|i| (format!("k{i}"), J::Str(text(r))))
        .collect();
    let mut out = String::new();
    render(r, &J::Obj(members), Spelling::Clean, &mut out);
    out
}

/// `s` cut into pieces of 1-8 characters.
fn fragments(r: &mut Rng, s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let n = (1 + r.below(8)).min(chars.len() - at);
        out.push(chars[at..at + n].iter().collect());
        at += n;
    }
    out
}

fn obj(members: Vec<(&str, J)>) -> J {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn s(v: &str) -> J {
    J::Str(v.to_owned())
}

/// The SSE bytes of a stream: the well-formed events, with (for some seeds) a
/// few replaced by or interleaved with events of any shape.
fn sse_stream(r: &mut Rng, chat: bool) -> Vec<u8> {
    let mut events = if chat {
        chat_events(r)
    } else {
        anthropic_events(r)
    };
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(events.len() + 1);
            let any = if chat {
                chat_chunk(r)
            } else {
                anthropic_event(r)
            };
            let name = if chat {
                None
            } else {
                Some("content_block_delta")
            };
            if r.chance(50) && at < events.len() {
                events[at] = (events[at].0, any);
            } else {
                events.insert(at, (name, any));
            }
        }
    }
    sse(r, &events, chat)
}

/// The SSE bytes of `events`, each named (or not) as given, with comments
/// among them now and then; a `[DONE]` at the end for most seeds when `done`.
fn sse(r: &mut Rng, events: &[(Option<&str>, J)], done: bool) -> Vec<u8> {
    let mut out = String::new();
    let eol = if r.chance(20) { "\r\n" } else { "\n" };
    for (name, j) in events {
        if r.chance(3) {
            out.push_str(": keep-alive");
            out.push_str(eol);
        }
        if let Some(name) = name {
            out.push_str("event: ");
            out.push_str(name);
            out.push_str(eol);
        }
        let text = if r.chance(2) {
            event_text(r, j)
        } else {
            let mut t = String::new();
            render(r, j, Spelling::Clean, &mut t);
            t
        };
        // A data line cannot hold a line break: the rest is another line.
        for line in text.split(['\n', '\r']) {
            out.push_str(if r.chance(10) { "data:" } else { "data: " });
            out.push_str(line);
            out.push_str(eol);
        }
        out.push_str(eol);
    }
    if done && r.chance(90) {
        out.push_str("data: [DONE]");
        out.push_str(eol);
        out.push_str(eol);
    }
    out.into_bytes()
}

/// Everything a run leaves that the other run must match.
#[derive(Debug, PartialEq)]
struct Run {
    reads: Vec<(Result<(), BytesError>, Vec<LiveEvent>)>,
    close: Result<(), BytesError>,
    close_live: Vec<LiveEvent>,
    messages: Vec<AssembledMessage>,
    events_seen: u64,
    /// Where the clients' readings first differ.
    divergence: Option<String>,
}

/// Feeds `bytes` cut at `cuts`, with the fast paths on or off.
fn run(
    dialect: Option<Dialect>,
    limits: AssemblerLimits,
    bytes: &[u8],
    cuts: &[usize],
    fast: bool,
) -> Run {
    GENERAL_ONLY.with(|g| g.set(!fast));
    let mut b = BytesAssembler::new(Assembler::new(dialect, limits), FramingLimits::default());
    let mut reads = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let piece = bytes.get(from..cut).unwrap_or_default();
        from = cut;
        let mut live = Vec::new();
        reads.push((b.feed_bytes(piece, Some(&mut live)), live));
    }
    let mut close_live = Vec::new();
    let close = b.close(Some(&mut close_live));
    GENERAL_ONLY.with(|g| g.set(false));
    Run {
        reads,
        close,
        close_live,
        messages: b.core().messages(),
        events_seen: b.core().events_seen(),
        divergence: b.core().divergence().map(str::to_owned),
    }
}

/// Cut points: anywhere in the bytes (in a UTF-8 character too), or every
/// 1-8 bytes as a slow connection delivers them.
fn cuts(r: &mut Rng, len: usize) -> Vec<usize> {
    let mut out = Vec::new();
    if r.chance(30) {
        let mut at = 0;
        loop {
            at += 1 + r.below(8);
            if at >= len {
                break;
            }
            out.push(at);
        }
    } else {
        for _ in 0..r.below(12) {
            out.push(r.below(len + 1));
        }
        out.sort_unstable();
    }
    out
}

fn limits(r: &mut Rng) -> AssemblerLimits {
    if r.chance(80) {
        return AssemblerLimits::default();
    }
    AssemblerLimits {
        max_calls: 2,
        max_input_bytes: 40,
        max_total_bytes: 300,
        max_event_bytes: 200,
        ..AssemblerLimits::default()
    }
}

/// `bytes` cut anywhere, fed with the fast paths and without, to `named`
/// (or, three times in ten, to `auto`), with default or tight limits: the
/// same reads, live events, close, messages and events seen.
fn fast_is_general(r: &mut Rng, named: Dialect, bytes: &[u8]) -> Result<(), TestCaseError> {
    let cuts = cuts(r, bytes.len());
    let dialect = if r.chance(30) { None } else { Some(named) };
    let limits = limits(r);
    let fast = run(dialect, limits, bytes, &cuts, true);
    let general = run(dialect, limits, bytes, &cuts, false);
    prop_assert_eq!(
        fast,
        general,
        "stream {:?} cut at {:?}",
        String::from_utf8_lossy(bytes),
        cuts
    );
    Ok(())
}

fn check_stream(seed: u64, chat: bool) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let bytes = sse_stream(&mut r, chat);
    let cuts = cuts(&mut r, bytes.len());
    let dialect = match r.below(3) {
        0 => None,
        _ if chat => Some(Dialect::OpenAiChat),
        _ => Some(Dialect::Anthropic),
    };
    let limits = limits(&mut r);
    let fast = run(dialect, limits, &bytes, &cuts, true);
    let general = run(dialect, limits, &bytes, &cuts, false);
    prop_assert_eq!(
        fast,
        general,
        "stream {:?} cut at {:?}",
        String::from_utf8_lossy(&bytes),
        cuts
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// An OpenAI chat chunk of any shape: the fast decode is the general one,
    /// or leaves the chunk to it.
    #[test]
    fn fast_and_general_decoders_agree_on_openai_chat_chunks(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = chat_chunk(&mut r);
        let text = event_text(&mut r, &j);
        prop_assert!(openai_chat::fast_path_agrees(&text).is_ok(), "{:?}: {:?}", text, openai_chat::fast_path_agrees(&text));
    }

    /// An Anthropic event of any shape: the same.
    #[test]
    fn fast_and_general_decoders_agree_on_anthropic_events(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = anthropic_event(&mut r);
        let text = event_text(&mut r, &j);
        prop_assert!(anthropic::fast_path_agrees(&text).is_ok(), "{:?}: {:?}", text, anthropic::fast_path_agrees(&text));
    }
}

/// An OpenAI chat chunk of the common event's shape (one choice whose delta
/// is one call's argument fragment, or one piece of text or of reasoning),
/// with other members around it.
fn fragment_chunk(r: &mut Rng) -> J {
    let delta = if r.chance(40) {
        let piece = J::Str(text(r));
        let name = if r.chance(50) {
            "content"
        } else if r.chance(50) {
            "reasoning_content"
        } else {
            "reasoning"
        };
        // DeepSeek sends `"content": null` beside its reasoning.
        let beside = if name == "content" {
            "refusal"
        } else {
            "content"
        };
        members(r, vec![(100, name, piece), (10, beside, J::Null)])
    } else {
        let arguments = J::Str(text(r));
        let function = members(r, vec![(100, "arguments", arguments)]);
        let call_index = index(r);
        let call = members(
            r,
            vec![
                (90, "index", call_index),
                (100, "function", function),
                (30, "type", s("function")),
            ],
        );
        members(r, vec![(100, "tool_calls", J::Arr(vec![call]))])
    };
    let choice_index = index(r);
    let choice = members(
        r,
        vec![
            (90, "index", choice_index),
            (100, "delta", delta),
            (40, "logprobs", J::Null),
            (60, "finish_reason", J::Null),
        ],
    );
    let v = vec![
        (50, "id", s("chatcmpl-1")),
        (40, "object", s("chat.completion.chunk")),
        (100, "choices", J::Arr(vec![choice])),
        (20, "usage", J::Null),
    ];
    members(r, v)
}

/// An Anthropic delta event of the common shape: one string of a text,
/// input or thinking delta, with other members around it.
fn delta_event(r: &mut Rng) -> J {
    let (kind, field) = r.pick(&[
        ("input_json_delta", "partial_json"),
        ("text_delta", "text"),
        ("thinking_delta", "thinking"),
    ]);
    let piece = J::Str(text(r));
    let delta = members(r, vec![(95, "type", s(kind)), (100, field, piece)]);
    let at = index(r);
    let v = vec![
        (95, "type", s("content_block_delta")),
        (90, "index", at),
        (100, "delta", delta),
    ];
    members(r, v)
}

/// A template event of the common shape and another event made from it: the
/// memo's text around the template's string with another string (any
/// spelling, hostile for some seeds) in its place, mutated for some. `None`
/// when the memo did not take the template.
fn memo_case(seed: u64, chat: bool) -> Option<(String, String)> {
    if chat {
        memo_case_of(seed, fragment_chunk, openai_chat::memo_parts)
    } else {
        memo_case_of(seed, delta_event, anthropic::memo_parts)
    }
}

/// A template made by `event` and rendered, and, when the memo took it
/// (`parts` gives what it keeps around its string), an event made from
/// those parts with another string in the hole, sometimes mutated.
fn memo_case_of(
    seed: u64,
    event: fn(&mut Rng) -> J,
    parts: fn(&str) -> Option<(String, String)>,
) -> Option<(String, String)> {
    let mut r = Rng::new(seed);
    let j = event(&mut r);
    let template = event_text(&mut r, &j);
    let (prefix, suffix) = parts(&template)?;
    // Some values long enough for the block decode of a long event.
    let value = if r.chance(30) {
        (0..20 + r.below(60)).map(|_| text(&mut r)).collect()
    } else {
        text(&mut r)
    };
    let hostile = r.chance(30);
    let mut event = prefix;
    string(&mut r, &value, hostile, false, &mut event);
    event.push_str(&suffix);
    if r.chance(15) {
        event = mutate(&mut r, &event);
    }
    Some((template, event))
}

fn memo_agrees(seed: u64, chat: bool) -> Result<bool, String> {
    let Some((template, event)) = memo_case(seed, chat) else {
        return Ok(false);
    };
    let agrees = if chat {
        openai_chat::memo_agrees(&template, &event)
    } else {
        anthropic::memo_agrees(&template, &event)
    };
    agrees.map_err(|e| format!("template {template:?}, event {event:?}: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// An OpenAI chat chunk made from a template the memo took: what the memo
    /// gives is the general decode, or it leaves the chunk to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_openai_chat_chunks(seed in any::<u64>()) {
        let agrees = memo_agrees(seed, true);
        prop_assert!(agrees.is_ok(), "{:?}", agrees);
    }

    /// An Anthropic event made from a template the memo took: the same.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_anthropic_events(seed in any::<u64>()) {
        let agrees = memo_agrees(seed, false);
        prop_assert!(agrees.is_ok(), "{:?}", agrees);
    }
}

/// A chunk whose delta is one piece of text is the memo's template as an
/// argument fragment is (a role beside it is read by neither path); text
/// beside a call's fragment or a refusal is not (it is not the common event).
#[test]
fn the_memo_takes_a_piece_of_text_as_its_template() {
    let template = r#"{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": "word0 "}, "finish_reason": null}]}"#;
    let (prefix, suffix) = openai_chat::memo_parts(template).expect("a text chunk is learned");
    let with = |piece: &str| format!("{prefix}{piece}{suffix}");
    assert_eq!(
        openai_chat::memo_agrees(template, &with(r#""word1 ""#)),
        Ok(true)
    );
    assert_eq!(
        openai_chat::memo_agrees(template, &with(r#""caf\u00e9 \"x\"""#)),
        Ok(true)
    );
    // A piece that is no string, and a content that is null, are the scanner's.
    for other in ["null", "[]", "1"] {
        assert_eq!(
            openai_chat::memo_agrees(template, &with(other)),
            Ok(false),
            "{other}"
        );
    }
    for not_common in [
        r#"{"choices":[{"index":0,"delta":{"content":"a","tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a","refusal":"no"}}]}"#,
    ] {
        assert_eq!(openai_chat::memo_parts(not_common), None, "{not_common}");
    }
}

/// A chunk whose delta is one piece of reasoning (`reasoning_content`, as
/// DeepSeek, Qwen and vLLM send it, or `reasoning`, as OpenRouter and Ollama
/// do) is the memo's template as a piece of text is, served as reasoning;
/// reasoning beside text, beside the other name or beside a call's fragment
/// is not the common event.
#[test]
fn the_memo_takes_a_piece_of_reasoning_as_its_template() {
    for name in ["reasoning_content", "reasoning"] {
        let template = format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":null,"{name}":"step0 "}},"finish_reason":null}}]}}"#
        );
        let (prefix, suffix) =
            openai_chat::memo_parts(&template).expect("a reasoning chunk is learned");
        let with = |piece: &str| format!("{prefix}{piece}{suffix}");
        for piece in [r#""step1 ""#, r#""caf\u00e9 \"x\"\n""#, r#""""#] {
            assert_eq!(
                openai_chat::memo_agrees(&template, &with(piece)),
                Ok(true),
                "{name} {piece}"
            );
        }
        for other in ["null", "[]", "1"] {
            assert_eq!(
                openai_chat::memo_agrees(&template, &with(other)),
                Ok(false),
                "{name} {other}"
            );
        }
        for not_common in [
            format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"a","{name}":"b"}}}}]}}"#),
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"{name}":"b","tool_calls":[{{"index":0,"function":{{"arguments":"{{"}}}}]}}}}]}}"#
            ),
            format!(r#"{{"choices":[{{"index":0,"delta":{{"{name}":"b","refusal":"no"}}}}]}}"#),
        ] {
            assert_eq!(openai_chat::memo_parts(&not_common), None, "{not_common}");
        }
    }
    let both = r#"{"choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"a"}}]}"#;
    assert_eq!(openai_chat::memo_parts(both), None);
}

/// The memo serves events made from its templates (many generated templates
/// are hostile or mutated, so not all), and refuses those
/// the general decode refuses (else the properties above would hold
/// vacuously).
#[test]
fn the_memo_serves_the_common_events_and_refuses_bad_ones() {
    for chat in [true, false] {
        let served = (0..2000_u64)
            .filter(|&seed| memo_agrees(seed, chat) == Ok(true))
            .count();
        assert!(served > 50, "chat {chat}: the memo served {served} of 2000");
    }
    let template = r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\""}}]},"finish_reason":null}]}"#;
    let (prefix, suffix) = openai_chat::memo_parts(template).unwrap();
    let with = |piece: &str| format!("{prefix}{piece}{suffix}");
    let escaped = with(r#""caf\u00e9 \\ \ud83e\udd80""#);
    assert_eq!(openai_chat::memo_agrees(template, &escaped), Ok(true));
    // A long one, decoded in blocks, with each bad piece in its middle too.
    let long = r#"the \"stream\" of caf\u00e9 \t\\n \ud83e\udd80 \u65e5\/"#.repeat(20);
    assert_eq!(
        openai_chat::memo_agrees(template, &with(&format!("\"{long}\""))),
        Ok(true)
    );
    for bad in [
        r#"\x"#,
        "\u{1}",
        r#"\ud800"#,
        r#"\udc00"#,
        r#"\ud800\u0041"#,
        r#"\u12"#,
    ] {
        let event = with(&format!("\"{long}{bad}{long}\""));
        assert_eq!(
            openai_chat::memo_agrees(template, &event),
            Ok(false),
            "{bad}"
        );
    }
    for bad in [
        r#""a\x""#,
        "\"a\u{1}\"",
        r#""\ud800""#,
        "null",
        r#"{"a":1}"#,
        r#""a"x"#,
    ] {
        assert_eq!(
            openai_chat::memo_agrees(template, &with(bad)),
            Ok(false),
            "{bad}"
        );
    }
    let trailing = with(r#""a""#) + "x";
    assert_eq!(openai_chat::memo_agrees(template, &trailing), Ok(false));
    let other_call = with(r#""a""#).replacen(r#""index":1"#, r#""index":2"#, 1);
    assert_eq!(openai_chat::memo_agrees(template, &other_call), Ok(false));
    // A chunk that is not the common event is no template.
    let finish = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}}]},"finish_reason":"stop"}]}"#;
    assert_eq!(openai_chat::memo_parts(finish), None);
    let named = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"a","function":{"name":"f","arguments":""}}]}}]}"#;
    assert_eq!(openai_chat::memo_parts(named), None);
    let two = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","thinking":"b"}}"#;
    assert_eq!(anthropic::memo_parts(two), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole OpenAI chat stream as SSE bytes, cut anywhere: the same
    /// results, errors, live events and messages with the fast path as with
    /// the general decoder alone.
    #[test]
    fn fast_and_general_decoders_agree_on_openai_chat_streams(seed in any::<u64>()) {
        check_stream(seed, true)?;
    }

    /// A whole Anthropic stream as SSE bytes, cut anywhere: the same.
    #[test]
    fn fast_and_general_decoders_agree_on_anthropic_streams(seed in any::<u64>()) {
        check_stream(seed, false)?;
    }
}

/// The fast paths serve the usual events (else the properties above would
/// hold vacuously): strings with every escape, non-ASCII, extra keys and nulls.
#[test]
fn the_fast_paths_serve_the_usual_events() {
    let chat = [
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"caf\u00e9 \\\\ \ud83e\udd80\n\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}"#,
        r#" { "choices" : [ { "index" : 1 , "delta" : { "content" : "日本\/\t" } , "finish_reason" : "stop" } ] , "extra" : {"a":[1,-2.5e3,true,null]} } "#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
        r#"{"choices":[],"obfuscation":"x"}"#,
    ];
    for text in chat {
        assert_eq!(openai_chat::fast_path_agrees(text), Ok(true), "{text}");
    }
    let anthropic = [
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":\"\u00e9"}}"#,
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"hi 🦀\n"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"message_stop"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"},"usage":null}"#,
    ];
    for text in anthropic {
        assert_eq!(anthropic::fast_path_agrees(text), Ok(true), "{text}");
    }
}

/// What the typed decode refuses, the fast paths leave to it; what they cannot
/// certify too.
#[test]
fn the_fast_paths_leave_what_they_cannot_certify() {
    let chat = [
        // Duplicate fields: a `duplicate field` error of the typed decode.
        r#"{"choices":[],"choices":[]}"#,
        r#"{"choices":[{"index":0,"index":1}]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":null}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","name":"b"}}]}}]}"#,
        // Escaped keys, indexes as strings or floats, surrogates alone.
        r#"{"choic\u0065s":[]}"#,
        r#"{"choices":[{"index":"0"}]}"#,
        r#"{"choices":[{"index":1.0}]}"#,
        r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
        // Not JSON, or JSON that is not a chunk.
        r#"{"choices":[{"index":01}]}"#,
        "{\"choices\":[]}\u{c}",
        r#"{"choices":[],}"#,
        r#"["choices"]"#,
        r#"{"choices":[{"delta":{"content":"a\u0001"}}]}x"#,
    ];
    for text in chat {
        assert_eq!(openai_chat::fast_path_agrees(text), Ok(false), "{text}");
    }
    let anthropic = [
        r#"{"type":"ping","type":"ping"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"text":"a","text":"b"}}"#,
        r#"{"type":"content_block_delta","index":-1,"delta":{}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"text":"\x"}}"#,
    ];
    for text in anthropic {
        assert_eq!(anthropic::fast_path_agrees(text), Ok(false), "{text}");
    }
}
