use super::*;
use crate::framing::{EventStreamDecoder, EventStreamMessage, FramingLimits, HeaderValue};
use crate::validate::parse_strict;
use proptest::prelude::*;
use std::io::Write;

const CHAT: &[u8] =
    include_bytes!("../../tests/fixtures/real/openai_chat-completions-parallel-two-tools.sse");
const ANTHROPIC: &[u8] =
    include_bytes!("../../tests/fixtures/real/anthropic_messages-text-then-tool-use.sse");
const OLLAMA: &[u8] = include_bytes!("../../tests/fixtures/ollama/chat-stream-tool-calls.jsonl");
const INVOKE: &[u8] =
    include_bytes!("../../tests/fixtures/bedrock_invoke/claude-text-then-tool-use.eventstream");
const INTERACTIONS: &[u8] =
    include_bytes!("../../tests/fixtures/gemini_interactions/tool-call-step1.json");

/// Accepts a call whose name is not refused and whose input is one JSON
/// object without any refused text.
struct Check {
    refuse_names: &'static [&'static str],
    refuse_text: &'static [&'static str],
    seen: Vec<String>,
}

fn check(refuse_names: &'static [&'static str], refuse_text: &'static [&'static str]) -> Check {
    Check {
        refuse_names,
        refuse_text,
        seen: Vec::new(),
    }
}

impl CallCheck for Check {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        self.seen.push(call.block.name.clone());
        if call.block.name.is_empty() || self.refuse_names.contains(&call.block.name.as_str()) {
            return Err(format!("{:?} is not declared", call.block.name));
        }
        if let Some(t) = self
            .refuse_text
            .iter()
            .find(|t| call.block.input.contains(**t))
        {
            return Err(format!("{t} is refused"));
        }
        let input = if call.block.input.is_empty() {
            "{}"
        } else {
            &call.block.input
        };
        match parse_strict(input) {
            Ok(serde_json::Value::Object(_)) => Ok(()),
            Ok(_) => Err("not an object".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn guard(transport: Option<Transport>, encoding: Encoding) -> Guard {
    Guard::new(
        None,
        AssemblerLimits::default(),
        FramingLimits::default(),
        GuardLimits::default(),
        transport,
        encoding,
        None,
    )
}

/// The bytes forwarded for `body` read in pieces cut at `cuts`, and the block.
fn run_with(
    g: &mut Guard,
    body: &[u8],
    cuts: &[usize],
    c: &mut Check,
) -> (Vec<u8>, Option<Blocked>) {
    let mut out = Vec::new();
    let mut blocked = None;
    let mut at = 0;
    let mut points: Vec<usize> = cuts.iter().copied().filter(|&p| p <= body.len()).collect();
    points.sort_unstable();
    points.push(body.len());
    for p in points {
        let step = g.feed(&body[at.min(p)..p], c);
        out.extend_from_slice(&step.forward);
        blocked = blocked.or(step.blocked);
        at = at.max(p);
    }
    let step = g.finish(c);
    out.extend_from_slice(&step.forward);
    (out, blocked.or(step.blocked))
}

fn run(body: &[u8], cuts: &[usize], c: &mut Check) -> (Vec<u8>, Option<Blocked>, Outcome) {
    let mut g = guard(None, Encoding::Identity);
    let (out, blocked) = run_with(&mut g, body, cuts, c);
    (out, blocked, g.outcome())
}

fn position(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

/// The start of the SSE event holding `needle`.
fn event_start(hay: &[u8], needle: &[u8]) -> usize {
    let at = position(hay, needle);
    hay[..at]
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .map_or(0, |p| p + 2)
}

#[test]
fn valid_streams_pass_byte_identical_however_they_are_cut() {
    for body in [CHAT, ANTHROPIC, OLLAMA, INVOKE, INTERACTIONS] {
        for cuts in [
            vec![],
            vec![1],
            vec![7, 8, 9, 10],
            (0..body.len()).step_by(97).collect::<Vec<_>>(),
        ] {
            let (out, blocked, outcome) = run(body, &cuts, &mut check(&[], &[]));
            assert_eq!(blocked, None);
            assert_eq!(outcome, Outcome::Passed);
            assert_eq!(out, body);
        }
    }
    let every: Vec<usize> = (0..CHAT.len()).collect();
    let (out, blocked, _) = run(CHAT, &every, &mut check(&[], &[]));
    assert_eq!((out.as_slice(), blocked), (CHAT, None));
}

#[test]
fn openai_chat_holds_the_chunk_that_opens_the_next_index() {
    let mut c = check(&["GetWeatherArgs"], &[]);
    let (out, blocked, outcome) = run(CHAT, &[], &mut c);
    let blocked = blocked.expect("blocked");
    assert_eq!(outcome, Outcome::Blocked);
    assert_eq!(blocked.cause, Cause::InvalidCall);
    assert_eq!(
        blocked.call_id.as_deref(),
        Some("call_JMW1whyEaYG438VE1OIflxA2")
    );
    assert_eq!(blocked.tool_name.as_deref(), Some("GetWeatherArgs"));
    // Every byte before the chunk that opens index 1, and not one after.
    let next = event_start(CHAT, b"\"index\":1,\"id\"");
    assert_eq!(out, &CHAT[..next]);
    assert!(blocked.tail.starts_with(b"data: {\"error\":"));
    assert!(String::from_utf8_lossy(&blocked.tail).contains("GetWeatherArgs"));
    assert_eq!(blocked.status, 502);
}

#[test]
fn anthropic_never_releases_the_stop_of_an_invalid_call() {
    let (out, blocked, _) = run(ANTHROPIC, &[], &mut check(&["get_weather"], &[]));
    let blocked = blocked.expect("blocked");
    let stop = event_start(ANTHROPIC, b"{\"type\":\"content_block_stop\",\"index\":1}");
    assert_eq!(out, &ANTHROPIC[..stop]);
    assert!(!out.windows(13).any(|w| w == b"message_delta"));
    assert!(blocked.tail.starts_with(b"event: error\ndata: {\"error\":"));
    // The deltas before it went out live: the input was streamed.
    assert!(out.windows(16).any(|w| w == b"input_json_delta"));
}

#[test]
fn an_undecodable_event_blocks_everything_after_it() {
    let at = event_start(CHAT, b"\"index\":1,\"id\"");
    let body = [&CHAT[..at], b"data: {not json\n\n", &CHAT[at..]].concat();
    let (out, blocked, _) = run(&body, &[], &mut check(&[], &[]));
    let blocked = blocked.expect("blocked");
    assert_eq!(blocked.cause, Cause::Unreadable);
    assert_eq!(out, &CHAT[..at]);
}

#[test]
fn a_cut_stream_with_calls_is_blocked_at_its_end() {
    let at = event_start(ANTHROPIC, b"message_delta");
    let (out, blocked, _) = run(&ANTHROPIC[..at], &[], &mut check(&[], &[]));
    let blocked = blocked.expect("blocked");
    assert_eq!(blocked.cause, Cause::Incomplete);
    assert_eq!(out, &ANTHROPIC[..at]);
    // A cut inside an event: the part of it never goes out.
    let (out, blocked, _) = run(&ANTHROPIC[..at + 20], &[], &mut check(&[], &[]));
    assert!(blocked.is_some());
    assert_eq!(out, &ANTHROPIC[..at]);
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_gzip_body_is_decoded_as_it_arrives_and_guarded() {
    let z = gzip(CHAT);
    let mut g = guard(None, Encoding::Gzip);
    let (out, blocked) = run_with(&mut g, &z, &[10, 100, 1000], &mut check(&[], &[]));
    assert_eq!((out.as_slice(), blocked), (CHAT, None));
    let mut g = guard(None, Encoding::Gzip);
    let (out, blocked) = run_with(
        &mut g,
        &z,
        &[10, 100, 1000],
        &mut check(&["get_stock_price"], &[]),
    );
    assert_eq!(blocked.unwrap().cause, Cause::InvalidCall);
    assert!(CHAT.starts_with(&out) && out.len() < CHAT.len());
}

#[test]
fn a_compression_bomb_is_refused_in_bounded_memory() {
    let mut bomb = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
    bomb.resize(200 << 20, b'a');
    let z = gzip(&bomb);
    let mut g = guard(None, Encoding::Gzip);
    let (out, blocked) = run_with(&mut g, &z, &[], &mut check(&[], &[]));
    let blocked = blocked.expect("blocked");
    assert!(
        matches!(blocked.cause, Cause::Encoding | Cause::Limit),
        "{blocked:?}"
    );
    assert!(out.is_empty());
}

#[test]
fn a_whole_json_body_is_held_until_it_is_checked() {
    let body = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"rm","arguments":"{\"path\":\"/\"}"}}]},"finish_reason":"tool_calls"}]}"#;
    let mut g = guard(Some(Transport::JsonLines), Encoding::Identity);
    let (out, blocked) = run_with(&mut g, body, &[5, 50], &mut check(&["rm"], &[]));
    let blocked = blocked.expect("blocked");
    assert!(out.is_empty());
    assert_eq!(blocked.status, 502);
    assert!(String::from_utf8_lossy(&blocked.body).contains("(rm)"));
    let (out, blocked, outcome) = run(body, &[5, 50], &mut check(&[], &[]));
    assert_eq!(
        (out.as_slice(), blocked, outcome),
        (&body[..], None, Outcome::Passed)
    );
}

#[test]
fn a_body_no_dialect_answers_in_passes_unchecked() {
    let body = br#"{"object":"list","data":[{"id":"gpt-x","object":"model"}]}"#;
    let mut g = guard(None, Encoding::Identity);
    let (out, blocked) = run_with(&mut g, body, &[3], &mut check(&[], &[]));
    assert_eq!((out.as_slice(), blocked), (&body[..], None));
    assert_eq!(g.outcome(), Outcome::Unchecked);
    assert!(g.unchecked_reason().unwrap().contains("no dialect"));
    // The same, then a chunk a dialect reads: the first could not be checked.
    let body = [&body[..], b"\n", &CHAT[..position(CHAT, b"\n\n")]].concat();
    let mut g = guard(Some(Transport::JsonLines), Encoding::Identity);
    let (out, blocked) = run_with(&mut g, &body, &[], &mut check(&[], &[]));
    assert!(out.is_empty());
    assert!(blocked.is_some());
}

#[test]
fn bytes_in_no_transport_are_blocked() {
    let (out, blocked, _) = run(b"<html>oops</html>", &[], &mut check(&[], &[]));
    assert!(out.is_empty());
    assert_eq!(blocked.expect("blocked").cause, Cause::Unreadable);
    let (out, blocked, outcome) = run(b"", &[], &mut check(&[], &[]));
    assert_eq!((out.len(), blocked, outcome), (0, None, Outcome::Unchecked));
}

#[test]
fn an_event_stream_block_ends_with_an_exception_frame() {
    let (out, blocked, _) = run(INVOKE, &[], &mut check(&["get_weather"], &[]));
    let blocked = blocked.expect("blocked");
    assert!(INVOKE.starts_with(&out) && out.len() < INVOKE.len());
    let mut d = EventStreamDecoder::new(FramingLimits::default());
    let mut frames = Vec::new();
    d.push(
        &[out.as_slice(), blocked.tail.as_slice()].concat(),
        &mut frames,
    )
    .unwrap();
    d.finish(&mut frames).unwrap();
    let last = frames.last().unwrap();
    assert_eq!(last.message_type(), Some("exception"));
    assert_eq!(last.exception_type(), Some("modelStreamErrorException"));
    assert_eq!(blocked.status, 424);
}

#[test]
fn an_ollama_line_with_an_invalid_whole_call_is_held() {
    let (out, blocked, _) = run(OLLAMA, &[], &mut check(&[], &["Ottawa"]));
    let blocked = blocked.expect("blocked");
    let line = position(OLLAMA, b"Ottawa");
    let start = OLLAMA[..line].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    // The line before went out; its newline waits with the next line.
    assert!(
        out.len() >= start - 1 && out.len() <= start,
        "{} vs {start}",
        out.len()
    );
    assert!(!out.windows(6).any(|w| w == b"Ottawa"));
    assert_eq!(blocked.tail.first(), Some(&b'\n'));
    assert!(String::from_utf8_lossy(&blocked.tail).contains("\"error\""));
}

#[test]
fn a_huge_event_is_refused_by_a_limit() {
    let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".to_vec();
    body.resize(24 << 20, b'x');
    let (out, blocked, _) = run(&body, &[1 << 20, 8 << 20], &mut check(&[], &[]));
    assert!(out.is_empty());
    assert_eq!(blocked.expect("blocked").cause, Cause::Limit);
}

#[test]
fn nothing_goes_out_after_a_block() {
    let mut g = guard(None, Encoding::Identity);
    let mut c = check(&["GetWeatherArgs"], &[]);
    let step = g.feed(CHAT, &mut c);
    assert!(step.blocked.is_some());
    assert_eq!(g.feed(CHAT, &mut c), Step::default());
    assert_eq!(g.finish(&mut c), Step::default());
}

#[test]
fn a_message_ended_abnormally_is_blocked_when_it_has_calls() {
    let finish = position(CHAT, b"\"finish_reason\":\"tool_calls\"");
    let body = [
        &CHAT[..finish],
        b"\"finish_reason\":\"length\"",
        &CHAT[finish + 28..],
    ]
    .concat();
    let (out, blocked, _) = run(&body, &[], &mut check(&[], &[]));
    assert_eq!(blocked.expect("blocked").cause, Cause::Incomplete);
    assert!(!out.windows(8).any(|w| w == b"\"length\""));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_same_bytes_go_out_however_the_reads_are_cut(cuts in prop::collection::vec(0..CHAT.len(), 0..12)) {
        let (out, blocked, _) = run(CHAT, &cuts, &mut check(&[], &[]));
        prop_assert_eq!(out.as_slice(), CHAT);
        prop_assert!(blocked.is_none());
        let next = event_start(CHAT, b"\"index\":1,\"id\"");
        let (out, blocked, _) = run(CHAT, &cuts, &mut check(&["GetWeatherArgs"], &[]));
        prop_assert_eq!(out.as_slice(), &CHAT[..next]);
        prop_assert!(blocked.is_some());
        let stop = event_start(ANTHROPIC, b"{\"type\":\"content_block_stop\",\"index\":1}");
        let (out, _, _) = run(ANTHROPIC, &cuts, &mut check(&["get_weather"], &[]));
        prop_assert_eq!(out.as_slice(), &ANTHROPIC[..stop]);
    }
}

/// Feeds `reads` in turn into one step; for each: whether it said `whole_read`,
/// whether its `forward` was the read's bytes, and the bytes held before it.
fn whole_reads(g: &mut Guard, reads: &[&[u8]], c: &mut Check) -> Vec<(bool, bool, usize)> {
    let mut step = Step::default();
    reads
        .iter()
        .map(|read| {
            let held = g.held();
            g.feed_into(read, c, &mut step);
            (step.whole_read, step.forward == *read, held)
        })
        .collect()
}

#[test]
fn a_read_that_goes_out_as_it_came_is_said_to() {
    let mut c = check(&[], &[]);
    // Event by event: every read goes out as it came.
    let mut events: Vec<&[u8]> = Vec::new();
    let mut at = 0;
    while let Some(end) = CHAT[at..].windows(2).position(|w| w == b"\n\n") {
        events.push(&CHAT[at..at + end + 2]);
        at += end + 2;
    }
    assert_eq!(events.concat(), CHAT);
    let got = whole_reads(&mut guard(None, Encoding::Identity), &events, &mut c);
    assert!(
        got.iter().all(|(whole, same, _)| *whole && *same),
        "{got:?}"
    );
    // Ten bytes held, then a read as long as what it releases: not the read's bytes.
    let first = position(CHAT, b"\n\n") + 2;
    let reads: [&[u8]; 2] = [&CHAT[..10], &CHAT[10..first + 10]];
    let got = whole_reads(&mut guard(None, Encoding::Identity), &reads, &mut c);
    assert_eq!(got, vec![(false, false, 0), (false, false, 10)]);
    // Compressed: what goes out is decoded, never the read.
    let z = gzip(CHAT);
    let got = whole_reads(&mut guard(None, Encoding::Gzip), &[&z], &mut c);
    assert_eq!(got, vec![(false, false, 0)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `whole_read` exactly when the read went out as it came and nothing was
    /// held before it.
    #[test]
    fn whole_read_is_said_of_a_read_that_went_out_as_it_came(
        mut cuts in prop::collection::vec(0..CHAT.len(), 0..12),
    ) {
        cuts.push(0);
        cuts.push(CHAT.len());
        cuts.sort_unstable();
        let reads: Vec<&[u8]> = cuts.windows(2).map(|w| &CHAT[w[0]..w[1]]).collect();
        for (whole, same, held) in whole_reads(
            &mut guard(None, Encoding::Identity),
            &reads,
            &mut check(&[], &[]),
        ) {
            prop_assert_eq!(whole, same && held == 0);
        }
    }
}

#[test]
fn a_json_line_holding_the_start_of_the_next_value_releases_only_the_first() {
    let first = br#"{"model":"m","message":{"role":"assistant","content":"hi"},"done":false}"#;
    let second = br#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"rm","arguments":{}}}]},"done":false}"#;
    let body = [&first[..], &second[..20]].concat();
    let mut g = guard(None, Encoding::Identity);
    let mut c = check(&["rm"], &[]);
    let step = g.feed(&[&body[..], b"\n"].concat(), &mut c);
    assert_eq!(step.forward, first);
    let step = g.feed(&[&second[20..], b"\n"].concat(), &mut c);
    assert!(step.forward.is_empty());
    assert!(step.blocked.is_some());
}

#[test]
fn a_json_array_of_events_ends_as_valid_json_when_blocked() {
    let element = |name: &str, args: &str| {
        format!(
            r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"functionCall":{{"name":"{name}","args":{args}}}}}]}},"index":0}}]}}"#
        )
    };
    let body = format!(
        "[{},\r\n{},\r\n{}]",
        element("ok", "{}"),
        element("rm", r#"{"path":"/"}"#),
        r#"{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}]}"#
    );
    for cuts in [vec![], vec![1, 2, 3], (0..body.len()).step_by(7).collect()] {
        let (out, blocked, _) = run(body.as_bytes(), &cuts, &mut check(&["rm"], &[]));
        let blocked = blocked.expect("blocked");
        let whole = [out.as_slice(), blocked.tail.as_slice()].concat();
        let parsed: serde_json::Value = serde_json::from_slice(&whole).expect("valid JSON");
        let items = parsed.as_array().unwrap();
        assert_eq!(items.len(), 2, "{}", String::from_utf8_lossy(&whole));
        assert!(items[1].get("error").is_some());
        assert!(!out.windows(4).any(|w| w == b"\"rm\""));
    }
    let (out, blocked, _) = run(body.as_bytes(), &[], &mut check(&[], &[]));
    assert_eq!((out.as_slice(), blocked), (body.as_bytes(), None));
}

fn chunk(delta: &str) -> Vec<u8> {
    format!("data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n").into_bytes()
}

fn call_start(index: usize, name: &str, args: &str) -> Vec<u8> {
    let args = serde_json::to_string(args).unwrap();
    chunk(&format!(
        r#"{{"tool_calls":[{{"index":{index},"id":"call_{index}","type":"function","function":{{"name":"{name}","arguments":{args}}}}}]}}"#
    ))
}

fn call_args(index: usize, args: &str) -> Vec<u8> {
    let args = serde_json::to_string(args).unwrap();
    chunk(&format!(
        r#"{{"tool_calls":[{{"index":{index},"function":{{"arguments":{args}}}}}]}}"#
    ))
}

#[test]
fn a_call_that_changes_after_it_passed_blocks() {
    // Interleaved: call 0 is whole when call 1 opens (a client takes it as done),
    // then more of call 0 arrives.
    let body = [
        call_start(0, "a", "{}"),
        call_start(1, "b", "{}"),
        call_args(0, " "),
    ]
    .concat();
    let (out, blocked, _) = run(&body, &[], &mut check(&[], &[]));
    let blocked = blocked.expect("blocked");
    assert!(
        blocked.reason.contains("changed after"),
        "{}",
        blocked.reason
    );
    assert_eq!(
        out,
        [call_start(0, "a", "{}"), call_start(1, "b", "{}")].concat()
    );
}

#[test]
fn checking_many_calls_is_bounded_by_max_check_bytes() {
    let mut body = Vec::new();
    for i in 0..400 {
        body.extend(call_start(
            i,
            "f",
            &format!("{{\"pad\":\"{}\"}}", "x".repeat(1000)),
        ));
    }
    let limits = GuardLimits {
        max_check_bytes: 1 << 20,
        ..GuardLimits::default()
    };
    let mut g = Guard::new(
        None,
        AssemblerLimits::default(),
        FramingLimits::default(),
        limits,
        None,
        Encoding::Identity,
        None,
    );
    let (_, blocked) = run_with(&mut g, &body, &[], &mut check(&[], &[]));
    let blocked = blocked.expect("blocked");
    assert_eq!(blocked.cause, Cause::Limit);
    assert!(blocked.reason.contains("max_check_bytes"));
}

// ------------------------------------------------------------------
// Readings that differ (docs/guard.md): each attack blocked, its valid
// neighbour still passing byte-identical.

/// `body` passes whole, byte-identical, however it is cut.
fn passes(body: &[u8]) {
    for cuts in [vec![], (0..body.len()).step_by(13).collect::<Vec<_>>()] {
        let (out, blocked, outcome) = run(body, &cuts, &mut check(&[], &[]));
        assert_eq!(blocked, None, "{}", String::from_utf8_lossy(body));
        assert_eq!(outcome, Outcome::Passed);
        assert_eq!(out, body);
    }
}

/// `body` is blocked for `cause` whole and read byte by byte, releasing
/// exactly `released` bytes (nothing of the event read otherwise).
fn blocked_as(body: &[u8], cause: Cause, released: usize) -> Blocked {
    let every: Vec<usize> = (0..body.len()).collect();
    let mut first = None;
    for cuts in [vec![], every] {
        let (out, blocked, outcome) = run(body, &cuts, &mut check(&[], &[]));
        let blocked = blocked.expect("blocked");
        assert_eq!(outcome, Outcome::Blocked);
        assert_eq!(blocked.cause, cause, "{}", blocked.reason);
        assert_eq!(out.len(), released, "{}", blocked.reason);
        assert_eq!(out, &body[..released]);
        first.get_or_insert(blocked);
    }
    first.expect("ran")
}

/// ANTHROPIC with the `event:` line of the event holding `needle` replaced.
fn anthropic_renamed(needle: &[u8], line: &str) -> (Vec<u8>, usize) {
    let at = event_start(ANTHROPIC, needle);
    let rest = &ANTHROPIC[at..];
    let eol = position(rest, b"\n") + 1;
    assert!(rest.starts_with(b"event: "));
    (
        [&ANTHROPIC[..at], line.as_bytes(), &rest[eol..]].concat(),
        at,
    )
}

#[test]
fn anthropic_event_without_its_name_is_blocked() {
    // The SDK skips an event with no `event:` line: the guard would check
    // `{"location": "Paris"}` without the middle piece the SDK never sees.
    let (body, at) = anthropic_renamed(b"on\\\": \\\"P", "");
    let blocked = blocked_as(&body, Cause::Ambiguous, at);
    assert!(blocked.reason.contains("has no name"), "{}", blocked.reason);
    // An empty `event:` value is no name either (a browser calls it `message`).
    let (body, at) = anthropic_renamed(b"on\\\": \\\"P", "event:\n");
    blocked_as(&body, Cause::Ambiguous, at);
    // The neighbour: every event named as its type.
    passes(ANTHROPIC);
}

/// A chat stream whose call's `arguments` is a JSON object (Q42): the
/// assembler reads its text, the openai SDKs' helpers do not (one keeps the
/// object, one joins it as a string), so the guard blocks it before the
/// chunk, whatever the object holds (found by `guard_differential`, where a
/// check with no schema passed `{"path":"/etc/passwd"}` that a client read
/// otherwise). The neighbour, the same arguments as a string, passes.
#[test]
fn chat_arguments_as_an_object_are_blocked() {
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let head = chunk(r#"{"role":"assistant","content":null}"#, "null");
    let call = |args: &str| {
        chunk(
            &format!(
                r#"{{"tool_calls":[{{"index":0,"id":"call_1","type":"function","function":{{"name":"read_file","arguments":{args}}}}}]}}"#
            ),
            "null",
        )
    };
    let tail = format!("{}data: [DONE]\n\n", chunk("{}", "\"tool_calls\""));
    let body = |args: &str| format!("{head}{}{tail}", call(args)).into_bytes();
    let blocked = blocked_as(
        &body(r#"{"path":"/tmp/notes.txt"}"#),
        Cause::Ambiguous,
        head.len(),
    );
    assert!(
        blocked.reason.contains("as a JSON object"),
        "{}",
        blocked.reason
    );
    passes(&body(r#""{\"path\":\"/tmp/notes.txt\"}""#));
    // The assembler itself reads on (Q42), with its note.
    let mut bytes = BytesAssembler::new(
        Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default()),
        FramingLimits::default(),
    );
    bytes
        .feed_bytes(&body(r#"{"path":"/tmp/notes.txt"}"#), None)
        .expect("read");
    bytes.close(None).expect("closed");
    let m = &bytes.core().messages()[0];
    assert!(m.complete);
    assert_eq!(m.tool_uses[0].block.input, r#"{"path":"/tmp/notes.txt"}"#);
}

#[test]
fn anthropic_event_named_otherwise_than_its_type_is_blocked() {
    // `ping` is skipped by the SDK whatever its data holds.
    for name in [
        "event: ping\n",
        "event: content_block_stop\n",
        "event: error\n",
    ] {
        let (body, at) = anthropic_renamed(b"on\\\": \\\"P", name);
        let blocked = blocked_as(&body, Cause::Unreadable, at);
        assert!(
            blocked.reason.contains("named") && blocked.reason.contains("content_block_delta"),
            "{}",
            blocked.reason
        );
    }
    // The assembler refuses the event too: a problem on the message.
    let mut asm = Assembler::new(Some(Dialect::Anthropic), AssemblerLimits::default());
    let (body, _) = anthropic_renamed(b"on\\\": \\\"P", "event: ping\n");
    let mut bytes = BytesAssembler::new(asm.clone(), FramingLimits::default());
    assert!(bytes.feed_bytes(&body, None).is_err());
    let _ = bytes.close(None);
    let m = &bytes.core().messages()[0];
    assert!(!m.complete);
    assert!(m.problems.iter().any(|p| p.message.contains("\"ping\"")));
    // A real `ping` event, named and typed `ping`, is read as one.
    asm.feed_text(
        Some("message_start"),
        r#"{"type":"message_start","message":{}}"#,
        None,
    )
    .expect("start");
    asm.feed_text(Some("ping"), r#"{"type": "ping"}"#, None)
        .expect("ping");
    assert_eq!(asm.divergence(), None);
}

fn es_frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    EventStreamMessage {
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), HeaderValue::String((*v).to_owned())))
            .collect(),
        payload: payload.as_bytes().to_vec(),
    }
    .encode()
    .expect("encodes")
}

fn es_event(name: &str, payload: &str) -> Vec<u8> {
    es_frame(
        &[
            (":event-type", name),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload,
    )
}

fn bedrock_tool_start(index: usize, name: &str, kind: Option<&str>) -> Vec<u8> {
    let kind = kind.map_or(String::new(), |k| format!(",\"type\":\"{k}\""));
    es_event(
        "contentBlockStart",
        &format!(
            r#"{{"contentBlockIndex":{index},"start":{{"toolUse":{{"toolUseId":"tooluse_{index}","name":"{name}"{kind}}}}},"p":"abc"}}"#
        ),
    )
}

fn bedrock_input(index: usize, input: &str) -> String {
    let input = serde_json::to_string(input).unwrap();
    format!(
        r#"{{"contentBlockIndex":{index},"delta":{{"toolUse":{{"input":{input}}}}},"p":"abcd"}}"#
    )
}

fn bedrock_delta(index: usize, input: &str) -> Vec<u8> {
    es_event("contentBlockDelta", &bedrock_input(index, input))
}

fn bedrock_stop(index: usize) -> Vec<u8> {
    es_event(
        "contentBlockStop",
        &format!(r#"{{"contentBlockIndex":{index},"p":"a"}}"#),
    )
}

/// A ConverseStream: the message's start, `body`, its end.
fn bedrock(body: &[Vec<u8>]) -> Vec<u8> {
    bedrock_ending(body, "tool_use")
}

fn bedrock_ending(body: &[Vec<u8>], stop_reason: &str) -> Vec<u8> {
    let mut out = es_event("messageStart", r#"{"role":"assistant","p":"abc"}"#);
    for b in body {
        out.extend_from_slice(b);
    }
    out.extend(es_event(
        "messageStop",
        &format!(r#"{{"stopReason":"{stop_reason}","p":"ab"}}"#),
    ));
    out.extend(es_event(
        "metadata",
        r#"{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15},"metrics":{"latencyMs":1},"p":"a"}"#,
    ));
    out
}

fn bedrock_one_call(middle: Vec<u8>) -> (Vec<u8>, usize) {
    let head = bedrock(&[]).len() - bedrock(&[]).len()
        + es_event("messageStart", r#"{"role":"assistant","p":"abc"}"#).len();
    let start = bedrock_tool_start(0, "read_file", None);
    let first = bedrock_delta(0, "{\"path\": \"/tmp");
    let at = head + start.len() + first.len();
    let body = bedrock(&[
        start,
        first,
        middle,
        bedrock_delta(0, "/etc/passwd\"}"),
        bedrock_stop(0),
    ]);
    (body, at)
}

#[test]
fn bedrock_frame_without_its_event_type_is_blocked() {
    // botocore drops a frame without `:event-type`.
    let payload = bedrock_input(0, "\", \"x\": \"");
    let (body, at) = bedrock_one_call(es_frame(
        &[
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        &payload,
    ));
    let blocked = blocked_as(&body, Cause::Ambiguous, at);
    assert!(blocked.reason.contains("has no name"), "{}", blocked.reason);
    // A payload wrapped as boto3 yields it, under a header: botocore parses the
    // wrapper's fields as the header's event and finds none.
    let wrapped = format!(r#"{{"contentBlockDelta":{payload}}}"#);
    let (body, at) = bedrock_one_call(es_event("contentBlockDelta", &wrapped));
    let blocked = blocked_as(&body, Cause::Unreadable, at);
    assert!(blocked.reason.contains("wrapped"), "{}", blocked.reason);
    // The neighbour: the same piece with its header.
    let (body, _) = bedrock_one_call(es_event("contentBlockDelta", &payload));
    passes(&body);
}

#[test]
fn bedrock_interleaved_blocks_are_blocked() {
    // AWS's example reader keeps one current block: the second start makes
    // call 1 current, and call 0's input lands on it.
    let body = bedrock(&[
        bedrock_tool_start(0, "a", None),
        bedrock_tool_start(1, "b", None),
        bedrock_delta(0, "{}"),
        bedrock_stop(0),
        bedrock_delta(1, "{}"),
        bedrock_stop(1),
    ]);
    let at = position(&body, &bedrock_tool_start(1, "b", None));
    let blocked = blocked_as(&body, Cause::Ambiguous, at);
    assert!(
        blocked.reason.contains("current block"),
        "{}",
        blocked.reason
    );
    // The neighbour: the same calls one after the other.
    passes(&bedrock(&[
        bedrock_tool_start(0, "a", None),
        bedrock_delta(0, "{}"),
        bedrock_stop(0),
        bedrock_tool_start(1, "b", None),
        bedrock_delta(1, "{}"),
        bedrock_stop(1),
    ]));
}

#[test]
fn bedrock_server_tool_use_is_checked_like_any_call() {
    // boto3 hands a `toolUse` of type `server_tool_use` to the application.
    let blocks = [
        bedrock_tool_start(0, "delete_file", Some("server_tool_use")),
        bedrock_delta(0, "{}"),
        bedrock_stop(0),
    ];
    let body = bedrock_ending(&blocks, "end_turn");
    let (_, blocked, _) = run(&body, &[], &mut check(&["delete_file"], &[]));
    let blocked = blocked.expect("blocked");
    assert_eq!(blocked.cause, Cause::InvalidCall);
    assert_eq!(blocked.tool_name.as_deref(), Some("delete_file"));
    // The neighbour: a declared name passes.
    passes(&body);
    // Ending with `tool_use` while the message, as assembled, holds no client
    // call is the Q65 safety net's case: the two readings differ, so it blocks.
    let (_, blocked, _) = run(&bedrock(&blocks), &[], &mut check(&[], &[]));
    assert_eq!(blocked.expect("blocked").cause, Cause::Incomplete);
}

#[test]
fn anthropic_server_tool_use_stays_exempt() {
    // The SDK types it as a `ServerToolUseBlock`: the provider ran it.
    let start = event_start(ANTHROPIC, b"message_delta");
    let server = b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n";
    let body = [&ANTHROPIC[..start], &server[..], &ANTHROPIC[start..]].concat();
    let (out, blocked, _) = run(&body, &[], &mut check(&["web_search"], &[]));
    assert_eq!(blocked, None);
    assert_eq!(out, body);
}

#[test]
fn xai_custom_tool_call_named_like_its_tools_is_checked() {
    // Q47: the assembler marks these server-side, but the openai SDK hands a
    // `custom_tool_call` to the application like any other.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/long_tail/xai-x-search-tool.chunks.txt"
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    let body: Vec<u8> = text
        .lines()
        .flat_map(|l| format!("data: {l}\n\n").into_bytes())
        .collect();
    let (_, blocked, _) = run(&body, &[], &mut check(&["x_keyword_search"], &[]));
    let blocked = blocked.expect("blocked");
    assert_eq!(blocked.cause, Cause::InvalidCall);
    assert_eq!(blocked.tool_name.as_deref(), Some("x_keyword_search"));
    // The neighbour: with the names declared it passes.
    let (out, blocked, _) = run(&body, &[], &mut check(&[], &[]));
    assert_eq!(blocked, None);
    assert_eq!(out, body);
}

#[test]
fn sse_bom_is_blocked_before_anything_goes_out() {
    // The SDKs' decoders keep the BOM in the first field name: they ignore
    // the first line, the specification reads it.
    let body = [b"\xEF\xBB\xBF".as_slice(), CHAT].concat();
    let blocked = blocked_as(&body, Cause::Ambiguous, 0);
    assert!(
        blocked.reason.contains("byte order mark"),
        "{}",
        blocked.reason
    );
    passes(CHAT);
}

/// A chat chunk that ends the message.
fn chat_end() -> Vec<u8> {
    b"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n".to_vec()
}

/// A chat stream of `chunks`, ended.
fn chat(chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut out = chunks.concat();
    out.extend(chat_end());
    out
}

#[test]
fn sse_unterminated_last_event_with_call_content_is_blocked() {
    // The SDKs drop a last event without its blank line: here it holds the
    // end of the arguments, so they hold `{"path": "/tmp` and the guard read
    // the whole call.
    let head = call_start(0, "f", "{\"path\": \"/tmp");
    let last = chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]},"finish_reason":"tool_calls""#,
    );
    let last = last.strip_suffix(b"\n\n").expect("ends").to_vec();
    let body = [head.clone(), last.clone()].concat();
    let blocked = blocked_as(&body, Cause::Ambiguous, head.len());
    assert!(
        blocked.reason.contains("no closing blank line"),
        "{}",
        blocked.reason
    );
    // With its blank line it passes.
    passes(&[head.clone(), last.clone(), b"\n\n".to_vec()].concat());
    // The neighbours: a last event that adds no call content (the recorded
    // Anthropic stream ends with `message_stop` and no blank line; `[DONE]`).
    assert!(!ANTHROPIC.ends_with(b"\n"));
    passes(ANTHROPIC);
    passes(CHAT.strip_suffix(b"\n\n").expect("ends"));
}

#[test]
fn sse_variants_the_sdks_read_alike_still_pass() {
    // CRLF and lone CR line ends, comments, multi-line data: the SDKs'
    // decoders read them as the specification does.
    let text = std::str::from_utf8(ANTHROPIC).unwrap();
    passes(text.replace('\n', "\r\n").as_bytes());
    passes(text.replace('\n', "\r").as_bytes());
    passes(
        text.replace("\n\nevent: ", "\n\n: keep-alive\nevent: ")
            .as_bytes(),
    );
    let split = text.replacen(",\"index\":1,", ",\ndata: \"index\":1,", 1);
    assert_ne!(split, text);
    passes(split.as_bytes());
}

#[test]
fn chat_name_fragments_are_blocked() {
    // openai's helper concatenates: `delete_` + `file`.
    let second =
        chunk(r#"{"tool_calls":[{"index":0,"function":{"name":"file","arguments":"{}"}}]}"#);
    let body = [call_start(0, "delete_", ""), second.clone(), chunk(r#"{}"#)].concat();
    let at = call_start(0, "delete_", "").len();
    let blocked = blocked_as(&body, Cause::Ambiguous, at);
    assert!(
        blocked.reason.contains("name fragment"),
        "{}",
        blocked.reason
    );
    // vLLM's repeated full name: the helper holds `ff`.
    let again = chunk(r#"{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"}"}}]}"#);
    let body = [call_start(0, "f", "{"), again].concat();
    blocked_as(&body, Cause::Ambiguous, call_start(0, "f", "{").len());
    // The neighbour: the name once, the arguments in pieces.
    passes(&chat(&[call_start(0, "f", "{"), call_args(0, "}")]));
}

#[test]
fn chat_indexes_clients_read_as_other_positions_are_blocked() {
    let first = call_start(0, "a", "{");
    // -1 is the last call for Python.
    blocked_as(
        &[first.clone(), call_args(usize::MAX, "}")]
            .concat()
            .replace_index_max(),
        Cause::Ambiguous,
        first.len(),
    );
    // Sparse: index 2 with one call is inserted at position 1 by the helper.
    blocked_as(
        &[first.clone(), call_start(2, "b", "{}")].concat(),
        Cause::Ambiguous,
        first.len(),
    );
    // Q2: two calls at index 0 with distinct ids: the helper merges them.
    let other = chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"b","arguments":"{}"}}]}"#,
    );
    let body = [call_start(0, "a", "{}"), other].concat();
    blocked_as(&body, Cause::Ambiguous, call_start(0, "a", "{}").len());
    // The neighbours: 0 then 1, in order; a first call at index 0.
    passes(CHAT);
    passes(&chat(&[call_start(0, "a", "{}"), call_start(1, "b", "{}")]));
}

/// Test helper: turns the `usize::MAX` index written by `call_args` into -1.
trait IndexMax {
    fn replace_index_max(self) -> Vec<u8>;
}

impl IndexMax for Vec<u8> {
    fn replace_index_max(self) -> Vec<u8> {
        String::from_utf8(self)
            .unwrap()
            .replace(&format!("\"index\":{}", usize::MAX), "\"index\":-1")
            .into_bytes()
    }
}

#[test]
fn anthropic_block_indexes_clients_read_as_other_positions_are_blocked() {
    // The SDK appends each started block to a list and reads a delta's index
    // as a position in it: a tool block started at index 2 after one block is
    // at position 1 for it.
    let text = std::str::from_utf8(ANTHROPIC).unwrap();
    let moved = text.replace("\"index\":1", "\"index\":2");
    assert_ne!(moved, text);
    let at = event_start(moved.as_bytes(), b"\"content_block_start\",\"index\":2");
    let blocked = blocked_as(moved.as_bytes(), Cause::Ambiguous, at);
    assert!(blocked.reason.contains("position"), "{}", blocked.reason);
    // A delta at -1 is the last block for it.
    let minus = text.replacen(
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"ar\"}}",
        "{\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"ar\"}}",
        1,
    );
    assert_ne!(minus, text);
    let (_, blocked, _) = run(minus.as_bytes(), &[], &mut check(&[], &[]));
    assert!(blocked.is_some());
    // The neighbour: blocks started at 0, 1 in order.
    passes(ANTHROPIC);
}

#[test]
fn chat_choice_indexes_clients_read_as_other_positions_are_blocked() {
    let first = call_start(0, "a", "{}");
    let minus = String::from_utf8(call_start(0, "b", "{}"))
        .unwrap()
        .replace("\"choices\":[{\"index\":0", "\"choices\":[{\"index\":-1");
    let body = [first.clone(), minus.into_bytes()].concat();
    let blocked = blocked_as(&body, Cause::Ambiguous, first.len());
    assert!(
        blocked.reason.contains("choice index -1"),
        "{}",
        blocked.reason
    );
    // The neighbour: a second choice at index 1 (n = 2).
    let second = String::from_utf8(chat(&[call_start(0, "b", "{}")]))
        .unwrap()
        .replace("\"choices\":[{\"index\":0", "\"choices\":[{\"index\":1");
    passes(
        &[chat(&[first]), second.into_bytes()]
            .concat()
            .replace_done(),
    );
}

trait DoneOnce {
    fn replace_done(self) -> Vec<u8>;
}

impl DoneOnce for Vec<u8> {
    /// Keeps only the last `[DONE]`.
    fn replace_done(self) -> Vec<u8> {
        let text = String::from_utf8(self).unwrap();
        let done = "data: [DONE]\n\n";
        let n = text.matches(done).count();
        text.replacen(done, "", n.saturating_sub(1)).into_bytes()
    }
}

/// Feeds `body` whole, then says the client left: the outcome.
fn left_after(g: &mut Guard, body: &[u8], c: &mut Check) -> (Vec<u8>, Option<Blocked>, Outcome) {
    let step = g.feed(body, c);
    let outcome = g.client_left(c);
    (step.forward, step.blocked, outcome)
}

#[test]
fn a_client_that_leaves_on_the_response_end_has_its_verdict() {
    // The openai SDK closes on `[DONE]`, possibly before the upstream's own end:
    // every message had ended normally, and nothing was held back.
    // (The recorded Anthropic stream's last event lacks the blank line that ends
    // it on the wire: without it the event is still arriving.)
    let anthropic = [ANTHROPIC, b"\n\n"].concat();
    for body in [CHAT, &anthropic, OLLAMA, INVOKE] {
        let mut c = check(&[], &[]);
        let mut g = guard(None, Encoding::Identity);
        let (out, blocked, outcome) = left_after(&mut g, body, &mut c);
        assert!(out == body, "everything went out");
        assert_eq!((blocked, outcome), (None, Outcome::Passed));
        assert!(!c.seen.is_empty());
        // Settled: nothing later changes it.
        assert_eq!(g.client_left(&mut c), Outcome::Passed);
        assert!(g.finish(&mut c).forward.is_empty());
        assert_eq!(g.outcome(), Outcome::Passed);
    }
}

#[test]
fn a_client_that_leaves_before_the_end_leaves_the_response_open() {
    // Before the message's end: no verdict, whatever went out was checked.
    for (body, end) in [
        (CHAT, event_start(CHAT, b"\"finish_reason\":\"tool_calls\"")),
        (ANTHROPIC, event_start(ANTHROPIC, b"message_delta")),
    ] {
        let mut c = check(&[], &[]);
        let mut g = guard(None, Encoding::Identity);
        let (_, blocked, outcome) = left_after(&mut g, &body[..end], &mut c);
        assert_eq!((blocked, outcome), (None, Outcome::Open));
    }
    // The end was read but part of an event after it is still held.
    let mut tail = CHAT.to_vec();
    tail.extend_from_slice(b"data: {\"id\":");
    let mut c = check(&[], &[]);
    let mut g = guard(None, Encoding::Identity);
    let (out, _, outcome) = left_after(&mut g, &tail, &mut c);
    assert!(out == CHAT);
    assert_eq!(outcome, Outcome::Open);
    assert!(g.held() > 0);
    // A compressed body: its coding's own end may be unread.
    let z = gzip(CHAT);
    let mut g = guard(None, Encoding::Gzip);
    let (_, _, outcome) = left_after(&mut g, &z, &mut c);
    assert_eq!(outcome, Outcome::Open);
    // Nothing read yet.
    let mut g = guard(None, Encoding::Identity);
    assert_eq!(g.client_left(&mut c), Outcome::Open);
    // The last event of the stream not yet ended by its blank line.
    let mut g = guard(None, Encoding::Identity);
    let (_, _, outcome) = left_after(&mut g, ANTHROPIC, &mut c);
    assert_eq!(outcome, Outcome::Open);
}

#[test]
fn a_client_that_leaves_never_unblocks_a_refused_call() {
    let mut c = check(&["get_stock_price"], &[]);
    let mut g = guard(None, Encoding::Identity);
    let (_, blocked, outcome) = left_after(&mut g, CHAT, &mut c);
    assert_eq!(blocked.map(|b| b.cause), Some(Cause::InvalidCall));
    assert_eq!(outcome, Outcome::Blocked);
}
