//! The events a dialect's memo serves are applied before the body check
//! (`Assembler::served`, which spares them the search for the dialect's body
//! marker): the same reads, errors, live events and messages as the general
//! path, with the marker as the served string itself, and after `[DONE]`
//! (where the memo serves nothing: the event is the error it always was).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::cell::Cell;

use super::{run, Run};
use crate::framing::{EventStreamMessage, HeaderValue};
use crate::providers::{AssemblerLimits, BytesError, Dialect, SERVED};

/// `bytes` fed whole and in 7-byte reads, with the fast paths and without, to
/// `dialect` and to `auto`: the same runs. Gives the fast run of the whole
/// bytes to `dialect`, and how many events the memo served in it.
pub(super) fn both(dialect: Dialect, bytes: &[u8]) -> (Run, usize) {
    both_within(dialect, AssemblerLimits::default(), bytes)
}

/// [`both`] under `limits`.
fn both_within(dialect: Dialect, limits: AssemblerLimits, bytes: &[u8]) -> (Run, usize) {
    let sevens: Vec<usize> = (7..bytes.len()).step_by(7).collect();
    let mut out = None;
    for named in [Some(dialect), None] {
        for cuts in [&[][..], &sevens] {
            SERVED.with(|n| n.set(0));
            let fast = run(named, limits, bytes, cuts, true);
            let served = SERVED.with(Cell::get);
            let general = run(named, limits, bytes, cuts, false);
            assert_eq!(
                SERVED.with(Cell::get),
                served,
                "the general path serves none"
            );
            assert_eq!(fast, general, "{:?}", String::from_utf8_lossy(bytes));
            out.get_or_insert((fast, served));
        }
    }
    out.unwrap()
}

/// A Responses stream of text deltas, one of them the body marker
/// `"response"` itself, with (`done`) a `[DONE]` and one more delta after it.
fn responses_stream(done: bool) -> Vec<u8> {
    let delta = |d: &str| {
        format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\
             \"item_id\":\"msg_0\",\"output_index\":0,\"content_index\":0,\"delta\":\"{d}\"}}\n\n"
        )
    };
    let mut out = String::from(
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":\
         {\"id\":\"resp_0\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n\
         event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\
         \"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_0\",\"role\":\"assistant\",\
         \"content\":[]}}\n\n",
    );
    for d in ["Th", "response", "e ", "response", "!"] {
        out.push_str(&delta(d));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
        out.push_str(&delta("late"));
    }
    out.into_bytes()
}

/// A Bedrock event stream of text deltas, one of them the body marker
/// `"output"` itself, with (`done`) a payload `[DONE]` and one more delta
/// after it.
fn bedrock_stream(done: bool) -> Vec<u8> {
    bedrock_deltas(&["Th", "output", "e ", "output", "!"], done)
}

/// A Bedrock event stream of these text deltas (see [`bedrock_stream`]).
fn bedrock_deltas(deltas: &[&str], done: bool) -> Vec<u8> {
    bedrock_payloads(
        &deltas
            .iter()
            .map(|d| bedrock_delta(d.as_bytes()))
            .collect::<Vec<_>>(),
        done,
    )
}

/// A text delta's payload, its text the bytes given (UTF-8 or not).
fn bedrock_delta(text: &[u8]) -> Vec<u8> {
    let mut out = b"{\"contentBlockIndex\":0,\"delta\":{\"text\":\"".to_vec();
    out.extend_from_slice(text);
    out.extend_from_slice(b"\"},\"p\":\"abcd\"}");
    out
}

/// A Bedrock event stream of these `contentBlockDelta` payloads (see
/// [`bedrock_stream`]).
fn bedrock_payloads(payloads: &[Vec<u8>], done: bool) -> Vec<u8> {
    let frame = |name: &str, payload: Vec<u8>| {
        let header = |n: &str, v: &str| (n.to_owned(), HeaderValue::String(v.to_owned()));
        EventStreamMessage {
            headers: vec![
                header(":event-type", name),
                header(":content-type", "application/json"),
                header(":message-type", "event"),
            ],
            payload,
        }
        .encode()
        .unwrap()
    };
    let mut out = frame(
        "messageStart",
        b"{\"p\":\"abcdefgh\",\"role\":\"assistant\"}".to_vec(),
    );
    for p in payloads {
        out.extend(frame("contentBlockDelta", p.clone()));
    }
    if done {
        out.extend(frame("contentBlockDelta", b"[DONE]".to_vec()));
        out.extend(frame("contentBlockDelta", bedrock_delta(b"late")));
    }
    out
}

/// A dialect's stream of deltas, with or without `[DONE]` and a delta after it.
type Stream = fn(bool) -> Vec<u8>;

/// Each dialect's stream (see [`responses_stream`], [`bedrock_stream`]) and
/// the text of its message.
const STREAMS: [(Dialect, Stream, &str); 2] = [
    (
        Dialect::OpenAiResponses,
        responses_stream,
        "Thresponsee response!",
    ),
    (Dialect::Bedrock, bedrock_stream, "Thoutpute output!"),
];

/// The events of a stream of [`STREAMS`] served besides its deltas: a
/// Responses stream's `response.created` (`responses/carrying.rs`).
fn carrying(dialect: Dialect) -> usize {
    usize::from(dialect == Dialect::OpenAiResponses)
}

#[test]
fn a_delta_served_by_the_memo_is_applied_as_the_general_path_applies_it() {
    for (dialect, stream, text) in STREAMS {
        let (fast, served) = both(dialect, &stream(false));
        // The first delta is the template; the four after it are served
        // (and Responses' `response.created`, read before the body check).
        assert_eq!(served, carrying(dialect) + 4, "{dialect:?}");
        assert_eq!(fast.messages[0].text, text);
        assert!(fast.reads.iter().all(|(r, _)| r.is_ok()), "{dialect:?}");
    }
}

#[test]
fn a_delta_after_done_is_not_served() {
    for (dialect, stream, _) in STREAMS {
        let (fast, served) = both(dialect, &stream(true));
        assert_eq!(served, carrying(dialect) + 4, "{dialect:?}");
        assert!(
            matches!(&fast.reads[0].0, Err(BytesError::Core(e)) if e.to_string().contains("[DONE]")),
            "{:?}",
            fast.reads[0].0
        );
        assert!(!fast.messages[0].text.contains("late"));
    }
}

#[test]
fn a_bedrock_payload_served_by_the_memo_has_its_string_checked_as_utf8() {
    // Text that is UTF-8 beyond ASCII is served.
    let (fast, served) = both(
        Dialect::Bedrock,
        &bedrock_deltas(&["Th", "é", "🦀", "\\u00e9"], false),
    );
    assert_eq!(served, 3);
    assert_eq!(fast.messages[0].text, "Thé🦀é");
    // Bytes that are no UTF-8 in the string, or a payload that is the
    // template's runs around more than one string: not served, and the same
    // errors as the general path's.
    let payloads = [
        bedrock_delta(b"Th"),
        bedrock_delta(b"a\xff"),
        bedrock_delta(b"\xc3"),
        bedrock_delta(b"\xed\xa0\x80"),
        bedrock_delta(b"a\",\"x\":\"b"),
        bedrock_delta(b"a\"}},\"p\":\"abcd\"} {\"a\":\"b"),
        // The template's length, not its text, after the string.
        b"{\"contentBlockIndex\":0,\"delta\":{\"text\":\"q\"},\"p\":\"abcd\"]".to_vec(),
        bedrock_delta(b"ok"),
        bedrock_delta(b"ay"),
    ];
    let (fast, served) = both(Dialect::Bedrock, &bedrock_payloads(&payloads, false));
    // The one after the last template ("ok", the scanner's) only.
    assert_eq!(served, 1);
    assert!(
        matches!(fast.reads[0].0, Err(BytesError::Core(_))),
        "{:?}",
        fast.reads[0].0
    );
    assert!(
        fast.messages[0].text.ends_with("okay"),
        "{:?}",
        fast.messages[0].text
    );
}

#[test]
fn a_bedrock_payload_over_the_event_limit_is_not_served() {
    let limits = AssemblerLimits {
        max_event_bytes: 60,
        ..AssemblerLimits::default()
    };
    let (fast, served) = both_within(
        Dialect::Bedrock,
        limits,
        &bedrock_deltas(&["Th", "e", "a longer piece of text"], false),
    );
    assert_eq!(served, 1);
    assert!(
        matches!(&fast.reads[0].0, Err(BytesError::Core(e)) if e.to_string().contains("max_event_bytes")),
        "{:?}",
        fast.reads[0].0
    );
    assert_eq!(fast.messages[0].text, "The");
}

/// A Bedrock event stream of these frames, each its event type (none when
/// empty) and its payload.
fn bedrock_frames(frames: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, payload) in frames {
        let mut headers = vec![(
            ":message-type".to_owned(),
            HeaderValue::String("event".to_owned()),
        )];
        if !name.is_empty() {
            headers.insert(
                0,
                (
                    ":event-type".to_owned(),
                    HeaderValue::String((*name).to_owned()),
                ),
            );
        }
        let frame = EventStreamMessage {
            headers,
            payload: payload.clone(),
        };
        out.extend(frame.encode().unwrap());
    }
    out
}

/// A served delta is applied under the event type its frame names: none
/// (the payload's fields tell a delta), the delta's own, or another (whose
/// arm reads the payload as that event), text and tool input alike.
#[test]
fn a_bedrock_delta_served_is_read_under_the_name_its_frame_gives() {
    let start =
        b"{\"contentBlockIndex\":1,\"start\":{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"f\"}}}";
    let input = |s: &str| {
        format!("{{\"contentBlockIndex\":1,\"delta\":{{\"toolUse\":{{\"input\":\"{s}\"}}}},\"p\":\"ab\"}}")
            .into_bytes()
    };
    let frames = [
        ("messageStart", b"{\"role\":\"assistant\"}".to_vec()),
        ("contentBlockDelta", bedrock_delta(b"Th")),
        ("", bedrock_delta(b"e ")),
        ("contentBlockDelta", bedrock_delta(b"end")),
        ("contentBlockStop", bedrock_delta(b"!")),
        ("", bedrock_delta(b"?")),
        ("contentBlockStop", b"{\"contentBlockIndex\":0}".to_vec()),
        ("contentBlockStart", start.to_vec()),
        ("contentBlockDelta", input("{\\\"a\\\"")),
        ("", input(":1")),
        ("contentBlockDelta", input("}")),
        ("messageStop", input("x")),
        ("contentBlockStop", b"{\"contentBlockIndex\":1}".to_vec()),
        ("messageStop", b"{\"stopReason\":\"tool_use\"}".to_vec()),
    ];
    let (fast, served) = both(Dialect::Bedrock, &bedrock_frames(&frames));
    assert!(served >= 5, "served {served}");
    // A served delta makes its block the current one for the clients that
    // keep one (a delta after its block's stop, refused, then another
    // block: a divergence on both paths).
    let frames = [
        ("messageStart", b"{\"role\":\"assistant\"}".to_vec()),
        ("contentBlockDelta", bedrock_delta(b"a")),
        ("contentBlockStop", b"{\"contentBlockIndex\":0}".to_vec()),
        ("contentBlockDelta", bedrock_delta(b"b")),
        ("contentBlockStart", start.to_vec()),
    ];
    let (after_stop, served) = both(Dialect::Bedrock, &bedrock_frames(&frames));
    assert_eq!(served, 1);
    assert!(after_stop.divergence.is_some(), "{after_stop:?}");
    // A delta after the message's end is refused as the protocol says.
    let frames = [
        ("messageStart", b"{\"role\":\"assistant\"}".to_vec()),
        ("contentBlockDelta", bedrock_delta(b"a")),
        ("contentBlockDelta", bedrock_delta(b"b")),
        ("messageStop", b"{\"stopReason\":\"end_turn\"}".to_vec()),
        ("contentBlockDelta", bedrock_delta(b"c")),
    ];
    let (after_end, served) = both(Dialect::Bedrock, &bedrock_frames(&frames));
    assert_eq!(served, 2);
    assert!(after_end.reads[0].0.is_err(), "{after_end:?}");
    assert!(
        fast.messages[0].text.starts_with("The end"),
        "{:?}",
        fast.messages[0].text
    );
    assert_eq!(fast.messages[0].tool_uses[0].block.input, "{\"a\":1}");
}
