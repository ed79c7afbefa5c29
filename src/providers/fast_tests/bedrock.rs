//! Bedrock's fast path (`scan_payload`) against the general decode: any
//! payload text, and whole event-stream bodies cut anywhere, give the same
//! with the fast path as without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use proptest::prelude::*;

use super::gen::{
    event_text, index, junk, members, obj_field, render, str_field, Rng, Spelling, J,
};
use super::{arguments, fast_is_general, fragments, memo_case_of, obj, s};
use crate::framing::{EventStreamMessage, FramingLimits, HeaderValue};
use crate::providers::{
    bedrock, Assembler, AssemblerLimits, BytesAssembler, BytesError, Dialect, LiveEvent,
};

/// A payload of any shape: mostly the bare events of a stream, with every
/// member the typed decode reads present now and then.
fn payload(r: &mut Rng) -> J {
    let tool_use = obj_field(r, |r| {
        let input = str_field(r);
        members(r, vec![(90, "input", input)])
    });
    let delta = obj_field(r, |r| {
        let reasoning = obj_field(r, |r| {
            let t = str_field(r);
            members(r, vec![(80, "text", t)])
        });
        let v = vec![
            (45, "text", str_field(r)),
            (55, "toolUse", tool_use),
            (5, "reasoningContent", reasoning),
            (3, "toolResult", junk(r, 2)),
        ];
        members(r, v)
    });
    let start = obj_field(r, |r| {
        let tool = obj_field(r, |r| {
            let v = vec![(80, "toolUseId", str_field(r)), (80, "name", str_field(r))];
            members(r, v)
        });
        members(r, vec![(90, "toolUse", tool)])
    });
    let wrapped = obj_field(r, |r| {
        let v = vec![(80, "contentBlockIndex", index(r)), (50, "p", str_field(r))];
        members(r, v)
    });
    let wrapper = r
        .pick(&[
            "contentBlockDelta",
            "messageStop",
            "metadata",
            "throttlingException",
        ])
        .to_owned();
    let v = vec![
        (85, "contentBlockIndex", index(r)),
        (70, "delta", delta),
        (70, "p", str_field(r)),
        (10, "stopReason", str_field(r)),
        (10, "role", str_field(r)),
        (8, "start", start),
        (4, "usage", junk(r, 2)),
        (3, "message", str_field(r)),
    ];
    let mut j = members(r, v);
    if r.chance(5) {
        if let J::Obj(m) = &mut j {
            m.push((wrapper, wrapped));
        }
    }
    j
}

/// A well-formed ConverseStream body: event-stream frames, each with its
/// `:event-type`, `:content-type` and `:message-type` headers, and (for some
/// seeds) a few payloads of any shape among them.
fn messages(r: &mut Rng) -> Vec<EventStreamMessage> {
    let pad = |r: &mut Rng| J::Str("abcdefghijklmnop"[..1 + r.below(15)].to_owned());
    let mut events: Vec<(&str, J)> = vec![(
        "messageStart",
        obj(vec![("p", pad(r)), ("role", s("assistant"))]),
    )];
    let mut block = 0;
    let num = ["0", "1", "2", "3", "4"];
    if r.chance(50) {
        let said = super::gen::text(r);
        for piece in fragments(r, &said) {
            let delta = obj(vec![("text", J::Str(piece))]);
            let p = pad(r);
            let e = obj(vec![
                ("contentBlockIndex", J::Num(num[block])),
                ("delta", delta),
                ("p", p),
            ]);
            events.push(("contentBlockDelta", e));
        }
        events.push((
            "contentBlockStop",
            obj(vec![("contentBlockIndex", J::Num(num[block]))]),
        ));
        block += 1;
    }
    for i in 0..r.below(4) {
        let tool = obj(vec![
            ("toolUseId", J::Str(format!("t{i}"))),
            ("name", J::Str(format!("f{i}"))),
        ]);
        let start = obj(vec![("toolUse", tool)]);
        events.push((
            "contentBlockStart",
            obj(vec![
                ("contentBlockIndex", J::Num(num[block])),
                ("start", start),
            ]),
        ));
        let args = arguments(r);
        for piece in fragments(r, &args) {
            let delta = obj(vec![("toolUse", obj(vec![("input", J::Str(piece))]))]);
            let p = pad(r);
            let e = obj(vec![
                ("contentBlockIndex", J::Num(num[block])),
                ("delta", delta),
                ("p", p),
            ]);
            events.push(("contentBlockDelta", e));
        }
        events.push((
            "contentBlockStop",
            obj(vec![("contentBlockIndex", J::Num(num[block]))]),
        ));
        block += 1;
    }
    events.push((
        "messageStop",
        obj(vec![("stopReason", s("tool_use")), ("p", pad(r))]),
    ));
    if r.chance(40) {
        for _ in 0..=r.below(3) {
            let at = r.below(events.len() + 1);
            let name = r.pick(&[
                "contentBlockDelta",
                "contentBlockStop",
                "messageStop",
                "metadata",
            ]);
            events.insert(at, (name, payload(r)));
        }
    }
    let mut out = Vec::new();
    for (name, j) in &events {
        let text = if r.chance(2) {
            event_text(r, j)
        } else {
            let mut t = String::new();
            render(r, j, Spelling::Clean, &mut t);
            t
        };
        out.push(EventStreamMessage {
            headers: vec![
                header(":event-type", name),
                header(":content-type", "application/json"),
                header(":message-type", "event"),
            ],
            payload: text.into_bytes(),
        });
    }
    out
}

fn header(name: &str, value: &str) -> (String, HeaderValue) {
    (name.to_owned(), HeaderValue::String(value.to_owned()))
}

fn stream(r: &mut Rng) -> Vec<u8> {
    let messages = messages(r);
    messages.iter().flat_map(|m| m.encode().unwrap()).collect()
}

/// The payloads a memo takes as templates: a block's text or tool-input
/// delta, padded, sometimes with other members.
fn delta_payload(r: &mut Rng) -> J {
    let piece = str_field(r);
    let delta = if r.chance(50) {
        members(r, vec![(95, "text", piece)])
    } else {
        let tool = members(r, vec![(95, "input", piece)]);
        members(r, vec![(95, "toolUse", tool)])
    };
    let pad = J::Str("abcdefghijklmnop"[..1 + r.below(15)].to_owned());
    let v = vec![
        (90, "contentBlockIndex", index(r)),
        (95, "delta", delta),
        (80, "p", pad),
        (3, "stopReason", str_field(r)),
    ];
    members(r, v)
}

fn check_stream(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng::new(seed);
    let bytes = stream(&mut r);
    fast_is_general(&mut r, Dialect::Bedrock, &bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A Bedrock payload of any shape: the fast decode is the general one,
    /// or leaves the payload to it.
    #[test]
    fn fast_and_general_decoders_agree_on_bedrock_payloads(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let j = payload(&mut r);
        let text = event_text(&mut r, &j);
        prop_assert!(bedrock::fast_path_agrees(&text).is_ok(), "{:?}: {:?}", text, bedrock::fast_path_agrees(&text));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// A payload made from a template the memo took: what the memo gives is
    /// the general decode, or it leaves the payload to the scanner.
    #[test]
    fn the_memo_and_the_general_decoder_agree_on_bedrock_payloads(seed in any::<u64>()) {
        if let Some((template, event)) = memo_case_of(seed, delta_payload, bedrock::memo_parts) {
            let agrees = bedrock::memo_agrees(&template, &event);
            prop_assert!(agrees.is_ok(), "template {:?}, event {:?}: {:?}", template, event, agrees);
        }
    }
}

/// A payload made from a template the memo took, as bytes, with (for some
/// seeds) bytes that are no UTF-8 put in: the memo of the bytes unchecked
/// takes them exactly when the memo of the bytes checked whole does, and
/// gives the same. Gives whether it took them.
fn memo_bytes_case(seed: u64) -> Result<bool, String> {
    let Some((template, event)) = memo_case_of(seed, delta_payload, bedrock::memo_parts) else {
        return Ok(false);
    };
    let mut r = Rng::new(seed ^ 0x5eed);
    let mut bytes = event.into_bytes();
    if r.chance(20) && !bytes.is_empty() {
        // One byte replaced: the same length, other text.
        let at = r.below(bytes.len());
        bytes[at] = r.pick(b"}]\",a \\");
    }
    if r.chance(30) {
        for _ in 0..=r.below(2) {
            let at = r.below(bytes.len() + 1);
            let bad: &[u8] = r.pick(&[
                &b"\xff"[..],
                b"\xc3",
                b"\xe2\x82",
                b"\xed\xa0\x80",
                b"\xc3\xa9",
            ]);
            bytes.splice(at..at, bad.iter().copied());
        }
    }
    bedrock::memo_bytes_agree(&template, &bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// See [`memo_bytes_case`].
    #[test]
    fn the_memo_of_unchecked_bytes_is_the_memo_of_checked_text(seed in any::<u64>()) {
        let agrees = memo_bytes_case(seed);
        prop_assert!(agrees.is_ok(), "seed {}: {:?}", seed, agrees);
    }
}

/// The cases above are taken often enough not to hold vacuously.
#[test]
fn the_memo_of_unchecked_bytes_takes_a_share_of_the_cases() {
    let taken = (0..2000_u64)
        .filter(|&seed| memo_bytes_case(seed) == Ok(true))
        .count();
    assert!(taken > 300, "taken {taken} of 2000");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A whole Bedrock body, cut anywhere: the same reads, errors, live events
    /// and messages with the fast path as without it.
    #[test]
    fn fast_and_general_paths_agree_on_bedrock_streams(seed in any::<u64>()) {
        check_stream(seed)?;
    }
}

/// The fast path serves the events that make up a stream, and leaves to the
/// general path what it does not read itself.
#[test]
fn the_bedrock_fast_path_serves_the_usual_payloads() {
    let served = [
        r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\": \"\\u00e9\\n\""}},"p":"abcd"}"#,
        r#"{"contentBlockIndex":0,"delta":{"text":"héllo"},"p":"ab"}"#,
        r#"{"contentBlockIndex":0,"p":"abc"}"#,
        r#"{"p":"abcdefgh","role":"assistant"}"#,
        r#"{"p":"abc","stopReason":"tool_use"}"#,
        r#"{"contentBlockIndex":null,"delta":null}"#,
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}"#,
        r#"{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"t","name":"f","type":"server_tool_use"},"x":1},"p":"a"}"#,
        r#"{"contentBlockIndex":0,"start":{"toolUse":null}}"#,
        r#"{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3},"metrics":{"latencyMs":5},"p":"ab"}"#,
    ];
    for text in served {
        assert_eq!(bedrock::fast_path_agrees(text), Ok(true), "{text}");
    }
    // The common deltas are templates; the memo serves the next one.
    let template = r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a"}},"p":"abcd"}"#;
    let (prefix, suffix) = bedrock::memo_parts(template).unwrap();
    assert_eq!(
        prefix,
        r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"#
    );
    assert_eq!(suffix, r#"}},"p":"abcd"}"#);
    let next = r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\u00e9\n"}},"p":"abcd"}"#;
    assert_eq!(bedrock::memo_agrees(template, next), Ok(true));
    let text = r#"{"contentBlockIndex":0,"delta":{"text":"h"},"p":"ab"}"#;
    assert!(bedrock::memo_parts(text).is_some());
    let stop = r#"{"contentBlockIndex":0,"p":"ab"}"#;
    assert!(bedrock::memo_parts(stop).is_none());
    let left = [
        r#"{"contentBlockIndex":0,"start":{"toolResult":{"toolUseId":"t"}}}"#,
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"name":"f","name":"g"}}}"#,
        r#"{"contentBlockIndex":0,"start":{"toolUse":{"name":1}}}"#,
        r#"{"contentBlockIndex":0,"start":[{"toolUseId":"t"}]}"#,
        r#"{"usage":{"inputTokens":1.5}}"#,
        r#"{"usage":[1]}"#,
        r#"{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"hi"}}}"#,
        r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"r"}}}"#,
        r#"{"contentBlockIndex":0,"contentBlockIndex":1}"#,
        r#"{"contentBlockIndex":-1,"delta":{"text":"x"}}"#,
        r#"{"contentBlockIndex":1.0,"delta":{"text":"x"}}"#,
        r#"{"contentBlockIndex":"1","delta":{"text":"x"}}"#,
        r#"{"delta":{"toolUse":{"input":"a","input":"b"}}}"#,
        r#"{"delta":{"text":"a"}} x"#,
        r#"{"message":"throttled"}"#,
    ];
    for text in left {
        assert_eq!(bedrock::fast_path_agrees(text), Ok(false), "{text}");
    }
}

/// A stream's frames as a reader may meet them: now and then an exception
/// or error frame, a frame without its name or with its name of another
/// type, its headers in another order or repeated, a byte changed (a CRC
/// refused) or its end cut.
fn odd_frames(r: &mut Rng) -> Vec<u8> {
    let mut frames = messages(r);
    for m in &mut frames {
        match r.below(40) {
            0 => m.headers.retain(|(n, _)| n != ":event-type"),
            1 => m.headers.reverse(),
            2 => m.headers.insert(0, header(":event-type", "metadata")),
            3 => m.headers[0].1 = HeaderValue::Int(7),
            4 => m.headers[2].1 = HeaderValue::String("exception".to_owned()),
            5 => m.headers.push(header(":message-type", "error")),
            _ => {}
        }
    }
    if r.chance(20) {
        let at = r.below(frames.len() + 1);
        let (kind, name) = r.pick(&[
            ("exception", "throttlingException"),
            ("exception", "validationException"),
            ("error", "InternalFailure"),
        ]);
        frames.insert(
            at,
            EventStreamMessage {
                headers: vec![
                    header(":exception-type", name),
                    header(":error-code", name),
                    header(":message-type", kind),
                ],
                payload: br#"{"message":"slow down"}"#.to_vec(),
            },
        );
    }
    let mut bytes: Vec<u8> = frames.iter().flat_map(|m| m.encode().unwrap()).collect();
    if r.chance(10) && !bytes.is_empty() {
        let at = r.below(bytes.len());
        bytes[at] ^= 0x20;
    }
    if r.chance(10) {
        bytes.truncate(r.below(bytes.len() + 1));
    }
    bytes
}

/// What a reader made of a stream: each read's outcome and live events, the
/// close's, the messages and the events seen.
type Reading = (
    Vec<(Result<(), BytesError>, Vec<LiveEvent>)>,
    Result<(), BytesError>,
    Vec<LiveEvent>,
    String,
    u64,
);

fn read_frames(
    dialect: Option<Dialect>,
    captures: bool,
    bytes: &[u8],
    cuts: &[usize],
    borrowed: bool,
) -> Reading {
    let mut b = BytesAssembler::new(
        Assembler::new(dialect, AssemblerLimits::default()),
        FramingLimits::default(),
    );
    if captures {
        b.read_captures();
    }
    let mut reads = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let piece = bytes.get(from..cut).unwrap_or_default();
        from = cut.max(from);
        let mut live = Vec::new();
        let read = if borrowed {
            b.feed_bytes(piece, Some(&mut live))
        } else {
            b.feed_bytes_copied(piece, Some(&mut live))
        };
        reads.push((read, live));
    }
    let mut close_live = Vec::new();
    let close = b.close(Some(&mut close_live));
    let messages = format!(
        "{:?}",
        b.responses()
            .iter()
            .map(|a| a.messages())
            .collect::<Vec<_>>()
    );
    (reads, close, close_live, messages, b.core().events_seen())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Event-stream frames read with their payload borrowed (the decoder's
    /// `event_frame`) and copied into their message first (`feed_frame`):
    /// the same reads, errors, live events, close and messages, told
    /// dialect or `auto`, in capture mode or not.
    #[test]
    fn frames_read_borrowed_are_frames_read_copied(seed in any::<u64>()) {
        let mut r = Rng::new(seed);
        let bytes = odd_frames(&mut r);
        let cuts = super::cuts(&mut r, bytes.len());
        let dialect = if r.chance(30) { None } else { Some(Dialect::Bedrock) };
        let captures = r.chance(20);
        let borrowed = read_frames(dialect, captures, &bytes, &cuts, true);
        let copied = read_frames(dialect, captures, &bytes, &cuts, false);
        prop_assert_eq!(borrowed, copied, "cut at {:?}", cuts);
    }
}

/// Exception and error frames among the events, read both ways: the same.
#[test]
fn exception_frames_read_borrowed_are_read_copied() {
    let mut r = Rng::new(7);
    let mut frames = messages(&mut r);
    for (kind, name) in [
        ("exception", "throttlingException"),
        ("error", "InternalFailure"),
    ] {
        frames.insert(
            1,
            EventStreamMessage {
                headers: vec![
                    header(":exception-type", name),
                    header(":error-code", name),
                    header(":message-type", kind),
                ],
                payload: br#"{"message":"slow down"}"#.to_vec(),
            },
        );
        let bytes: Vec<u8> = frames.iter().flat_map(|m| m.encode().unwrap()).collect();
        for dialect in [None, Some(Dialect::Bedrock)] {
            let borrowed = read_frames(dialect, false, &bytes, &[], true);
            let copied = read_frames(dialect, false, &bytes, &[], false);
            assert_eq!(borrowed, copied, "{kind}");
        }
    }
}
