//! The SSE decoder's tests.

use super::*;
use crate::framing::testutil::{bytewise, split_at_cuts};
use proptest::prelude::*;

fn limits(line: usize, event: usize) -> FramingLimits {
    FramingLimits {
        max_line_bytes: line,
        max_event_bytes: event,
        ..FramingLimits::default()
    }
}

fn decode_pieces(limits: FramingLimits, pieces: &[&[u8]]) -> Result<Vec<SseEvent>, Error> {
    let mut decoder = SseDecoder::new(limits);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

fn decode(input: &[u8]) -> Result<Vec<SseEvent>, Error> {
    decode_pieces(FramingLimits::default(), &[input])
}

fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
    SseEvent {
        event: event.map(str::to_owned),
        data: data.to_owned(),
        id: id.map(str::to_owned),
    }
}

fn data(data: &str) -> SseEvent {
    ev(None, data, None)
}

#[test]
fn data_lines_dispatch_on_a_blank_line() {
    assert_eq!(
        decode(b"data: {\"a\":1}\n\ndata: 2\n\n"),
        Ok(vec![data("{\"a\":1}"), data("2")])
    );
}

#[test]
fn every_line_ending_works() {
    let expected = Ok(vec![data("a"), data("b")]);
    assert_eq!(decode(b"data: a\r\n\r\ndata: b\r\n\r\n"), expected);
    assert_eq!(decode(b"data: a\n\ndata: b\n\n"), expected);
    assert_eq!(decode(b"data: a\r\rdata: b\r\r"), expected);
    assert_eq!(decode(b"data: a\r\n\ndata: b\r\r\n"), expected);
}

#[test]
fn cr_then_lf_across_pushes_is_one_line_end() {
    let input: &[u8] = b"data: a\r\n\r\ndata: b\r\n\r\n";
    for cut in 0..=input.len() {
        let pieces = split_at_cuts(input, &[cut]);
        assert_eq!(
            decode_pieces(FramingLimits::default(), &pieces),
            Ok(vec![data("a"), data("b")]),
            "cut at {cut}"
        );
    }
}

#[test]
fn comments_are_ignored() {
    assert_eq!(
        decode(b": ping\n:\ndata: x\n: inside\n\n: OPENROUTER PROCESSING\n\n"),
        Ok(vec![data("x")])
    );
}

#[test]
fn multi_line_data_joins_with_newline() {
    assert_eq!(
        decode(b"data: a\ndata:b\ndata\ndata:  c\n\n"),
        Ok(vec![data("a\nb\n\n c")])
    );
}

#[test]
fn only_one_space_after_the_colon_is_stripped() {
    assert_eq!(
        decode(b"data:x\n\ndata:  x\n\ndata:\tx\n\n"),
        Ok(vec![data("x"), data(" x"), data("\tx")])
    );
}

#[test]
fn event_and_id_fields() {
    let got =
        decode(b"event: message_start\nid: 7\ndata: {}\n\nevent:\ndata: 1\n\nid\ndata: 2\n\n");
    assert_eq!(
        got,
        Ok(vec![
            ev(Some("message_start"), "{}", Some("7")),
            // the event name resets, the id persists
            ev(None, "1", Some("7")),
            ev(None, "2", None),
        ])
    );
}

#[test]
fn id_with_nul_is_ignored() {
    assert_eq!(
        decode(b"id: 1\n\nid: a\0b\ndata: x\n\n"),
        Ok(vec![ev(None, "x", Some("1"))])
    );
}

#[test]
fn unknown_fields_and_retry_are_ignored() {
    assert_eq!(
        decode(b"retry: 1000\nfoo: bar\nDATA: no\ndata : no\ndata: yes\n\n"),
        Ok(vec![data("yes")])
    );
}

#[test]
fn event_without_data_is_not_dispatched() {
    assert_eq!(decode(b"event: ping\n\nid: 3\n\n\n\n"), Ok(vec![]));
    // but an empty data line is data
    assert_eq!(decode(b"data\n\ndata:\n\n"), Ok(vec![data(""), data("")]));
}

#[test]
fn event_name_does_not_leak_into_the_next_event() {
    assert_eq!(decode(b"event: a\n\ndata: x\n\n"), Ok(vec![data("x")]));
}

#[test]
fn leading_bom_is_skipped_even_split() {
    let input: &[u8] = b"\xEF\xBB\xBFdata: x\n\n";
    assert_eq!(
        decode_pieces(FramingLimits::default(), &bytewise(input)),
        Ok(vec![data("x")])
    );
    // a BOM later in the stream is text (and here part of an unknown field)
    assert_eq!(
        decode(b"data: x\n\n\xEF\xBB\xBFdata: y\n\n"),
        Ok(vec![data("x")])
    );
}

#[test]
fn done_passes_through() {
    assert_eq!(decode(b"data: [DONE]\n\n"), Ok(vec![data("[DONE]")]));
}

#[test]
fn utf8_split_across_pushes() {
    let input = "data: {\"t\":\"h\u{e9}llo \u{1f600} \u{4e16}\"}\n\n".as_bytes();
    let expected = Ok(vec![data("{\"t\":\"h\u{e9}llo \u{1f600} \u{4e16}\"}")]);
    assert_eq!(
        decode_pieces(FramingLimits::default(), &bytewise(input)),
        expected
    );
    for cut in 0..=input.len() {
        assert_eq!(
            decode_pieces(FramingLimits::default(), &split_at_cuts(input, &[cut])),
            expected
        );
    }
}

#[test]
fn invalid_utf8_is_an_error_with_its_offset() {
    let err = decode(b"data: ok\n\ndata: a\xFFb\n\n");
    assert_eq!(
        err,
        Err(Error::Utf8 {
            offset: 17,
            what: "SSE line",
            start: 10
        })
    );
    // a truncated sequence at the end of a line is invalid too
    assert!(matches!(
        decode(b"data: \xE2\x82\n\n"),
        Err(Error::Utf8 { offset: 6, .. })
    ));
    // and in a comment
    assert!(matches!(
        decode(b":\xC0\n"),
        Err(Error::Utf8 { offset: 1, .. })
    ));
}

#[test]
fn errors_are_sticky_until_reset() {
    let mut decoder = SseDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    let first = decoder.push(b"data: 1\n\ndata: \xFF\n\ndata: 2\n\n", &mut out);
    assert!(matches!(first, Err(Error::Utf8 { .. })));
    assert_eq!(out, vec![data("1")], "events before the error are kept");
    assert_eq!(decoder.push(b"data: 3\n\n", &mut out), first);
    assert_eq!(decoder.finish(&mut out), first);
    decoder.reset();
    assert_eq!(decoder.push(b"data: 3\n\n", &mut out), Ok(()));
    assert_eq!(out, vec![data("1"), data("3")]);
}

#[test]
fn line_limit_is_checked_while_bytes_arrive() {
    let mut decoder = SseDecoder::new(limits(16, 1024));
    let mut out = Vec::new();
    assert_eq!(decoder.push(b"data: 1\n\n", &mut out), Ok(()));
    assert_eq!(decoder.push(b"data: 0123456789", &mut out), Ok(()));
    let err = decoder.push(b"x", &mut out);
    assert_eq!(
        err,
        Err(Error::Limit {
            limit: "max_line_bytes",
            max: 16,
            offset: 9,
            what: "SSE line"
        })
    );
    // comments count too: nothing is buffered without bound
    assert!(matches!(
        decode_pieces(limits(16, 1024), &[b": 0123456789abcdefgh"]),
        Err(Error::Limit {
            limit: "max_line_bytes",
            ..
        })
    ));
}

#[test]
fn event_limit_is_checked_per_data_line() {
    // 3 lines of 4 bytes joined by 2 newlines: 14 bytes
    let input: &[u8] = b"data: aaaa\ndata: bbbb\ndata: cccc\n\n";
    assert_eq!(
        decode_pieces(limits(64, 14), &[input]),
        Ok(vec![data("aaaa\nbbbb\ncccc")])
    );
    let err = decode_pieces(limits(64, 13), &[input]);
    assert_eq!(
        err,
        Err(Error::Limit {
            limit: "max_event_bytes",
            max: 13,
            offset: 0,
            what: "SSE event data"
        })
    );
    // the limit is per event, not per stream
    let many = b"data: aaaa\n\n".repeat(10);
    assert_eq!(
        decode_pieces(limits(64, 4), &[&many]).map(|e| e.len()),
        Ok(10)
    );
}

#[test]
fn finish_dispatches_a_last_complete_json_event() {
    assert_eq!(decode(b"data: {\"a\":1}"), Ok(vec![data("{\"a\":1}")]));
    assert_eq!(decode(b"data: {\"a\":1}\n"), Ok(vec![data("{\"a\":1}")]));
    assert_eq!(decode(b"data: {\"a\":1}\r"), Ok(vec![data("{\"a\":1}")]));
    assert_eq!(
        decode(b"event: stop\ndata: [1,\ndata: 2]"),
        Ok(vec![ev(Some("stop"), "[1,\n2]", None)])
    );
    assert_eq!(
        decode(b"data: 1\n\ndata: [DONE]"),
        Ok(vec![data("1"), data("[DONE]")])
    );
}

#[test]
fn finish_refuses_a_partial_event() {
    let err = decode(b"data: 1\n\ndata: {\"a\":");
    assert_eq!(
        err,
        Err(Error::Truncated {
            offset: 9,
            what: "an SSE event whose data is neither complete JSON nor [DONE] and no closing blank line"
                .to_owned()
        })
    );
    assert!(matches!(
        decode(b"data: [DONE"),
        Err(Error::Truncated { offset: 0, .. })
    ));
    assert!(matches!(
        decode(b"data: hello\n"),
        Err(Error::Truncated { offset: 0, .. })
    ));
    assert!(matches!(
        decode(b"data: 1\n\nevent: x\n"),
        Err(Error::Truncated { offset: 9, .. })
    ));
    // cut inside a field name
    assert!(matches!(
        decode(b"data: 1\n\nda"),
        Err(Error::Truncated { offset: 9, .. })
    ));
}

#[test]
fn finish_accepts_clean_endings() {
    assert_eq!(decode(b""), Ok(vec![]));
    assert_eq!(
        decode(b"data: 1\n\n: trailing comment"),
        Ok(vec![data("1")])
    );
    assert_eq!(decode(b"data: 1\n\nid: 4"), Ok(vec![data("1")]));
    assert_eq!(decode(b"data: 1\n\nretry: 10\n"), Ok(vec![data("1")]));
}

#[test]
fn finish_makes_the_decoder_fresh() {
    let mut decoder = SseDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    assert_eq!(
        decoder.push(b"id: 1\ndata: a\n\nevent: x\ndata: {}", &mut out),
        Ok(())
    );
    assert_eq!(decoder.finish(&mut out), Ok(()));
    assert_eq!(decoder.offset(), 0);
    assert_eq!(decoder.finish(&mut out), Ok(()));
    assert_eq!(decoder.push(b"data: b\n\n", &mut out), Ok(()));
    assert_eq!(
        out,
        vec![
            ev(None, "a", Some("1")),
            ev(Some("x"), "{}", Some("1")),
            data("b")
        ]
    );
}

/// One event of a generated stream and how to write it.
#[derive(Debug, Clone)]
struct GenEvent {
    event: Option<String>,
    id: Option<String>,
    data: Vec<String>,
    comment: bool,
    endings: Vec<u8>,
}

fn gen_event() -> impl Strategy<Value = GenEvent> {
    (
        proptest::option::of("[a-z_]{1,12}"),
        proptest::option::of("[a-zA-Z0-9\u{e9}\u{4e16}]{1,8}"),
        proptest::collection::vec("[^\r\n]{0,24}", 1..4),
        any::<bool>(),
        proptest::collection::vec(0u8..3, 8),
    )
        .prop_map(|(event, id, data, comment, endings)| GenEvent {
            event,
            id,
            data,
            comment,
            endings,
        })
}

/// The wire bytes, with a line ending chosen per line, and the events a
/// correct decoder must give.
fn encode(events: &[GenEvent], bom: bool) -> (Vec<u8>, Vec<SseEvent>) {
    let mut bytes = Vec::new();
    if bom {
        bytes.extend_from_slice(b"\xEF\xBB\xBF");
    }
    let mut expected = Vec::new();
    let mut last_id: Option<String> = None;
    let mut previous_was_cr = false;
    for e in events {
        let mut lines: Vec<String> = Vec::new();
        if e.comment {
            lines.push(": keep-alive".to_owned());
        }
        if let Some(name) = &e.event {
            lines.push(format!("event: {name}"));
        }
        if let Some(id) = &e.id {
            lines.push(format!("id:{id}"));
            last_id = Some(id.clone());
        }
        lines.extend(e.data.iter().map(|d| format!("data: {d}")));
        lines.push(String::new());
        for (i, line) in lines.iter().enumerate() {
            bytes.extend_from_slice(line.as_bytes());
            let choice = e
                .endings
                .get(i % e.endings.len().max(1))
                .copied()
                .unwrap_or(0);
            // A lone CR before an empty line ended by LF would read as CRLF.
            let ending: &[u8] = match choice {
                0 if previous_was_cr && line.is_empty() => b"\r",
                0 => b"\n",
                1 => b"\r\n",
                _ => b"\r",
            };
            previous_was_cr = ending == b"\r";
            bytes.extend_from_slice(ending);
        }
        expected.push(SseEvent {
            event: e.event.clone(),
            data: e.data.join("\n"),
            id: last_id.clone(),
        });
    }
    (bytes, expected)
}

proptest! {
    #[test]
    fn any_split_gives_the_same_events(
        events in proptest::collection::vec(gen_event(), 0..6),
        bom in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let (bytes, expected) = encode(&events, bom);
        let whole = decode(&bytes);
        prop_assert_eq!(&whole, &Ok(expected));
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let whole = decode_pieces(limits(64, 64), &[&bytes]);
        prop_assert_eq!(decode_pieces(limits(64, 64), &split_at_cuts(&bytes, &cuts)), whole);
    }
}
