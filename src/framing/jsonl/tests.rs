//! The JSON values decoder's tests.

use super::*;
use crate::framing::testutil::{bytewise, split_at_cuts};
use proptest::prelude::*;

fn decode_pieces(limits: FramingLimits, pieces: &[&[u8]]) -> Result<Vec<String>, Error> {
    let mut decoder = JsonLinesDecoder::new(limits);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

fn decode(input: &[u8]) -> Result<Vec<String>, Error> {
    decode_pieces(FramingLimits::default(), &[input])
}

fn strings(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn one_string_per_line() {
    assert_eq!(
        decode(b"{\"a\":1}\n[2]\n"),
        Ok(strings(&["{\"a\":1}", "[2]"]))
    );
}

#[test]
fn blank_lines_are_skipped_and_surrounding_whitespace_dropped() {
    assert_eq!(
        decode(b"\n{\"a\":1}\r\n\r\n  \t\n{\"b\":2}\n\n"),
        Ok(strings(&["{\"a\":1}", "{\"b\":2}"]))
    );
    assert_eq!(
        decode(b"  {\"a\":\"x\ry\"} \r\n"),
        Ok(strings(&["{\"a\":\"x\ry\"}"]))
    );
}

#[test]
fn a_line_comes_out_at_its_newline_and_a_scanned_value_at_its_bracket() {
    let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    assert_eq!(decoder.push(b"{\"a\":1}\n{\"b\"", &mut out), Ok(()));
    assert_eq!(out, strings(&["{\"a\":1}"]));
    assert_eq!(decoder.push(b":2}", &mut out), Ok(()));
    assert_eq!(out.len(), 1, "a line waits for its newline (or the end)");
    assert_eq!(decoder.finish(&mut out), Ok(()));
    assert_eq!(out, strings(&["{\"a\":1}", "{\"b\":2}"]));
    // pretty-printed: out as soon as the closing bracket arrives
    assert_eq!(decoder.push(b"{\n  \"c\": 3\n", &mut out), Ok(()));
    assert_eq!(out.len(), 2);
    assert_eq!(decoder.push(b"}", &mut out), Ok(()));
    assert_eq!(out.len(), 3);
    assert_eq!(decode(b"{}\n  \r"), Ok(strings(&["{}"])));
    assert_eq!(decode(b""), Ok(strings(&[])));
}

#[test]
fn a_whole_line_is_not_scanned() {
    // The line is taken as it is; the event parser refuses what is not one
    // JSON value. A scanned layout names the stray byte instead.
    assert_eq!(decode(b"{},{}\n"), Ok(strings(&["{},{}"])));
    assert!(matches!(
        decode(b"{\n},{}"),
        Err(Error::Json { offset: 3, .. })
    ));
    // A first line ending in its bracket is the whole value, so a value
    // laid out like this comes out cut (and the parser refuses it).
    assert_eq!(
        decode(b"{\"a\": {\"b\": 1}\n, \"c\": 2}"),
        Err(Error::Json {
            offset: 15,
            reason: "`,` where a JSON object or array was expected".to_owned()
        })
    );
}

#[test]
fn pretty_printed_and_concatenated_values() {
    let input =
        b"{\n  \"a\": {\n    \"b\": [1, {\"c\": \"}]{[\"}]\n  }\n}{\"d\":\"\\\"}\"}  [\n]\n";
    assert_eq!(
        decode(input),
        Ok(strings(&[
            "{\n  \"a\": {\n    \"b\": [1, {\"c\": \"}]{[\"}]\n  }\n}",
            "{\"d\":\"\\\"}\"}",
            "[\n]",
        ]))
    );
    // escapes: an escaped backslash before the closing quote
    assert_eq!(
        decode(b"{\"e\":\"\\\\\"}{\"f\":\"\\u005c\"}"),
        Ok(strings(&["{\"e\":\"\\\\\"}", "{\"f\":\"\\u005c\"}"]))
    );
}

#[test]
fn a_top_level_array_gives_its_elements() {
    let input = b"[{\"a\":1}\n,\r\n{\"b\":[2,3]}\r\n,\r\n  {\n \"c\": \"],\"\n}\r\n]\r\n";
    assert_eq!(
        decode(input),
        Ok(strings(&[
            "{\"a\":1}",
            "{\"b\":[2,3]}",
            "{\n \"c\": \"],\"\n}"
        ]))
    );
    assert_eq!(decode(b" [ ] "), Ok(strings(&[])));
    assert_eq!(decode(b"\xEF\xBB\xBF[{}]"), Ok(strings(&["{}"])));
    // A later array is a value, not a stream of elements.
    assert_eq!(decode(b"{}[{},{}]"), Ok(strings(&["{}", "[{},{}]"])));
}

#[test]
fn array_syntax_errors_name_their_offset() {
    let err = |input: &[u8]| decode(input).err();
    assert!(matches!(
        err(b"[{}{}]"),
        Some(Error::Json { offset: 3, .. })
    ));
    assert!(matches!(err(b"[{},]"), Some(Error::Json { offset: 4, .. })));
    assert!(matches!(err(b"[,{}]"), Some(Error::Json { offset: 1, .. })));
    assert!(matches!(
        err(b"[{}] {}"),
        Some(Error::Json { offset: 5, .. })
    ));
    assert!(matches!(err(b"[1]"), Some(Error::Json { offset: 1, .. })));
    let text = err(b"[{} x").map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("byte 4") && text.contains("`x`") && text.contains("`,` or `]`"),
        "{text}"
    );
    assert!(matches!(
        err(b"[{},\n{}"),
        Some(Error::Truncated { offset: 0, .. })
    ));
    assert!(matches!(
        err(b"  [{},\n{\"a\":"),
        Some(Error::Truncated { offset: 7, .. })
    ));
}

#[test]
fn garbage_between_values_is_an_error() {
    let garbage = decode(b"{}\n<html>");
    assert!(
        matches!(garbage, Err(Error::Json { offset: 3, .. })),
        "{garbage:?}"
    );
    assert!(matches!(
        decode(b"{}\n\xFF"),
        Err(Error::Json { offset: 3, .. })
    ));
    assert!(matches!(
        decode(b"data: {}"),
        Err(Error::Json { offset: 0, .. })
    ));
    assert!(matches!(
        decode(b"\"text\""),
        Err(Error::Json { offset: 0, .. })
    ));
    // a BOM anywhere but first, or cut short
    assert!(matches!(
        decode(b" \xEF\xBB\xBF{}"),
        Err(Error::Json { offset: 1, .. })
    ));
    assert!(matches!(
        decode(b"\xEF\xBB{}"),
        Err(Error::Json { offset: 0, .. })
    ));
    assert!(matches!(
        decode(b"\xEF\xBB"),
        Err(Error::Truncated { offset: 0, .. })
    ));
}

#[test]
fn bom_is_skipped_even_when_split() {
    assert_eq!(
        decode_pieces(FramingLimits::default(), &bytewise(b"\xEF\xBB\xBF{}\n")),
        Ok(strings(&["{}"]))
    );
}

#[test]
fn invalid_utf8_names_its_offset() {
    assert_eq!(
        decode(b"{}\n{\"a\":\"\xF0\x9F\"}\n"),
        Err(Error::Utf8 {
            offset: 9,
            what: "JSON value",
            start: 3
        })
    );
}

#[test]
fn truncated_value() {
    let err = decode(b"{}\n {\"a\": [\"x");
    assert!(
        matches!(&err, Err(Error::Truncated { offset: 4, what }) if what.contains("inside a string")),
        "{err:?}"
    );
}

#[test]
fn value_limit_is_checked_as_bytes_arrive() {
    let limits = FramingLimits {
        max_event_bytes: 8,
        ..FramingLimits::default()
    };
    assert_eq!(
        decode_pieces(limits, &[b"{\"a\":12}\n"]),
        Ok(strings(&["{\"a\":12}"]))
    );
    let over = Err(Error::Limit {
        limit: "max_event_bytes",
        max: 8,
        offset: 3,
        what: "JSON value",
    });
    assert_eq!(decode_pieces(limits, &[b"{}\n{\"a\":", b"1234"]), over);
    assert_eq!(decode_pieces(limits, &[b"{}\n{\"a\":123}"]), over);
    // whitespace between values is not held, so it is not bounded
    let spaces = vec![b' '; 100];
    assert_eq!(
        decode_pieces(limits, &[b"{}", &spaces, b"{}"]),
        Ok(strings(&["{}", "{}"]))
    );
}

#[test]
fn a_value_over_the_limit_is_a_limit_error_before_deeper_nesting_past_it() {
    // 8 bytes allowed; the nesting limit is crossed only far past them.
    let limits = FramingLimits {
        max_event_bytes: 8,
        ..FramingLimits::default()
    };
    let text = format!("[{}", "[x".repeat(200));
    let whole = decode_pieces(limits, &[text.as_bytes()]);
    let bytewise: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
    assert_eq!(decode_pieces(limits, &bytewise), whole);
    assert!(
        matches!(
            whole,
            Err(Error::Limit {
                limit: "max_event_bytes",
                offset: 1,
                ..
            })
        ),
        "{whole:?}"
    );
}

#[test]
fn depth_limit() {
    let deep = |n: usize| [vec![b'['; n], vec![b'\n'], vec![b']'; n]].concat();
    let ok = deep(MAX_JSON_DEPTH as usize);
    assert_eq!(
        decode(&[b"{}", ok.as_slice()].concat()).map(|v| v.len()),
        Ok(2)
    );
    let too_deep = deep(MAX_JSON_DEPTH as usize + 1);
    let err = decode(&[b"{} ", too_deep.as_slice()].concat());
    assert!(
        matches!(&err, Err(Error::Json { offset: 3, reason }) if reason.contains("128")),
        "{err:?}"
    );
}

#[test]
fn errors_are_sticky() {
    let mut decoder = JsonLinesDecoder::new(FramingLimits::default());
    let mut out = Vec::new();
    let err = decoder.push(b"\xFF\n", &mut out);
    assert!(err.is_err());
    assert_eq!(decoder.push(b"{}\n", &mut out), err);
    assert_eq!(decoder.finish(&mut out), err);
    decoder.reset();
    assert_eq!(decoder.push(b"{}\n", &mut out), Ok(()));
    assert_eq!(out, strings(&["{}"]));
}

/// A JSON object whose strings hold the characters that trip scanners.
fn value_strategy() -> impl Strategy<Value = serde_json::Value> {
    let text = "[a-z{}\\[\\]\",:\\\\ é\u{1F600}\n\t\u{1}]{0,12}";
    let leaf = prop_oneof![
        text.prop_map(serde_json::Value::String),
        any::<i32>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ];
    let tree = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z\"{]{1,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::collection::btree_map("[a-z]{1,5}", tree, 0..4)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

fn render(value: &serde_json::Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    text.unwrap_or_default()
}

/// The scanner one byte at a time, as the word-wise one must agree with.
fn bytewise_scan(scan: &mut Scan, s: &[u8]) -> Result<Option<usize>, TooDeep> {
    for (k, &b) in s.iter().enumerate() {
        if scan.step(b)? {
            return Ok(Some(k + 1));
        }
    }
    Ok(None)
}

#[test]
fn word_masks_are_exact() {
    let word = u64::from_le_bytes(*b"{\"}\x00\x80[]\\");
    assert_eq!(bytes_equal(word, b'{'), 0x80);
    assert_eq!(bytes_equal(word, b'"'), 0x80 << 8);
    assert_eq!(bytes_equal(word, 0), 0x80 << 24);
    assert_eq!(bytes_equal(word, 0x80), 0x80 << 32);
    let folded = word | 0x2020_2020_2020_2020;
    assert_eq!(bytes_equal(folded, b'{'), 0x80 | (0x80 << 40));
    assert_eq!(bytes_equal(folded, b'}'), (0x80 << 16) | (0x80 << 48));
    assert_eq!(bytes_equal(word, b'\\'), 0x80 << 56);
}

proptest! {
    #[test]
    fn word_scan_agrees_with_bytewise(
        bytes in proptest::collection::vec(prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
            Just(b'a'), Just(b' '), any::<u8>(),
        ], 0..80),
        in_string in any::<bool>(),
        escaped in any::<bool>(),
        depth in 0u32..4,
    ) {
        let start = Scan { depth, in_string, escaped: escaped && in_string };
        let (mut words, mut bytes_only) = (start, start);
        let by_words = words.advance(&bytes).map_err(|TooDeep| ());
        let by_bytes = bytewise_scan(&mut bytes_only, &bytes).map_err(|TooDeep| ());
        prop_assert_eq!(by_words, by_bytes);
        if by_bytes == Ok(None) {
            prop_assert_eq!(words, bytes_only);
        }
    }

    #[test]
    fn any_split_gives_the_same_values(
        values in proptest::collection::vec((value_strategy(), any::<bool>(), 0u8..4), 0..6),
        array in any::<bool>(),
        crlf in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let texts: Vec<String> = values
            .iter()
            .map(|(v, pretty, _)| {
                let text = render(v, *pretty);
                if crlf { text.replace('\n', "\r\n") } else { text }
            })
            .collect();
        let mut bytes = Vec::new();
        if array {
            bytes.extend_from_slice(b"[");
        }
        for (i, (text, (_, _, gap))) in texts.iter().zip(&values).enumerate() {
            if array && i > 0 {
                bytes.extend_from_slice(if crlf { b"\r\n,\r\n".as_slice() } else { b"," });
            }
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(match gap {
                0 => b"".as_slice(),
                1 => b"\n",
                2 => b"\r\n",
                _ => b" \n\t ",
            });
        }
        if array {
            bytes.extend_from_slice(b"]\n");
        }
        let whole = decode(&bytes);
        prop_assert_eq!(&whole, &Ok(texts.clone()));
        for text in &texts {
            prop_assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        }
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_splits_agree(
        bytes in proptest::collection::vec(prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
            Just(b','), Just(b' '), Just(b'\n'), Just(b'a'), any::<u8>(),
        ], 0..64),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = decode(&bytes);
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &split_at_cuts(&bytes, &cuts)), &whole);
        prop_assert_eq!(&decode_pieces(FramingLimits::default(), &bytewise(&bytes)), &whole);
    }
}

#[test]
fn a_value_inside_one_push_is_checked_as_utf8_as_one_held_over_pushes() {
    // The check over the whole push and the value's own check refuse the
    // same bytes at the same offset, whichever way the bytes were cut.
    let input = b"{\"a\":1}\n{\"b\":\"x\xC3\x28\"}\n{\"c\":2}\n";
    let whole = decode(input);
    assert_eq!(
        whole,
        Err(Error::Utf8 {
            offset: 15,
            what: "JSON value",
            start: 8
        })
    );
    assert_eq!(
        decode_pieces(FramingLimits::default(), &bytewise(input)),
        whole
    );
    // a character cut by the end of a push is whole in the next
    let split: &[&[u8]] = &[b"{\"a\":\"\xC3", b"\xA9\"}\n{\"b\":\"\xC3\xA9\"}\n"];
    assert_eq!(
        decode_pieces(FramingLimits::default(), split),
        Ok(strings(&["{\"a\":\"\u{e9}\"}", "{\"b\":\"\u{e9}\"}"]))
    );
}
