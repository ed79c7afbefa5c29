//! The scanner's unit and property tests.

use proptest::prelude::*;

use super::memo::utf8_between;
use super::{plain_run, Scan, BLOCK, SHORT_EVENT};

/// Pieces of a string's text: plain runs of every length around a block,
/// every escape, and the ones the general decode refuses.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z \u{e9}\u{65e5}\u{1f980}]{0,40}",
        1 => "[a-z]{14,18}",
        4 => prop_oneof![
            Just("\\\\"), Just("\\\""), Just("\\/"), Just("\\b"), Just("\\f"),
            Just("\\n"), Just("\\r"), Just("\\t"), Just("\\u00e9"), Just("\\u65E5"),
            Just("\\ud83e\\udd80"),
        ].prop_map(str::to_owned),
        1 => prop_oneof![
            Just("\\ud800"), Just("\\udc00"), Just("\\ud800\\u0041"), Just("\\ud800x"),
            Just("\\x"), Just("\\u12"), Just("\\u12g4"), Just("\u{1}"), Just("\n"),
            Just("\u{1f}"), Just("\\"),
        ].prop_map(str::to_owned),
    ]
}

/// An empty span inside a character is UTF-8 (the empty text) when checked
/// alone, though its window is UTF-8 and the span's ends no boundaries of it;
/// wherever the buffer lies.
#[test]
fn an_empty_span_inside_a_character_is_the_empty_text() {
    for shift in 0..8 {
        let mut buffer = vec![b'x'; shift];
        buffer.extend_from_slice("abcdefghijklmnopqrstuvw\u{e9}\u{65e5}xyz".as_bytes());
        let b = &buffer[shift..];
        for at in [24, 26, 27] {
            assert_eq!(utf8_between(b, at, at), Some(""), "shift {shift}, at {at}");
        }
        assert_eq!(utf8_between(b, 23, 28), Some("\u{e9}\u{65e5}"));
        assert_eq!(utf8_between(b, 24, 28), None);
    }
}

proptest! {
    /// A string is what the typed decode makes of it, and the scanner
    /// gives up exactly where that decode refuses it; the text goes on
    /// after its closing quote.
    #[test]
    fn strings_decode_as_serde_json_decodes_them(
        pieces in proptest::collection::vec(piece(), 0..24),
        after in prop_oneof![Just(""), Just("}"), Just(",\"n\":1}]}"), Just("\" ")],
        long in any::<bool>(),
    ) {
        let body = pieces.concat();
        // A long event's strings are decoded in blocks.
        let pad = if long { " ".repeat(SHORT_EVENT) } else { String::new() };
        let text = format!("\"{body}\"{after}{pad}");
        let mut values = serde_json::Deserializer::from_str(&text).into_iter::<String>();
        let general = values.next().and_then(Result::ok);
        let mut p = Scan::new(&text);
        let fast = p.string().map(|s| s.0.into_owned());
        prop_assert_eq!(&fast, &general, "{:?}", text);
        if fast.is_some() {
            prop_assert_eq!(p.at, values.byte_offset());
        }
    }

    /// The block test finds the byte a byte at a time finds.
    #[test]
    fn first_special_finds_the_first_special_byte(b in proptest::array::uniform16(prop_oneof![
        Just(b'"'), Just(b'\\'), 0_u8..0x20, 0x20_u8..=0xff, b'a'..=b'z', b'a'..=b'z', b'a'..=b'z'
    ])) {
        let naive = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).unwrap_or(BLOCK);
        prop_assert_eq!(super::first_special(&b), naive);
    }

    /// And where the first eight bytes are plain, so that the last eight
    /// are tested on their own.
    #[test]
    fn first_special_finds_the_first_special_byte_past_eight(
        plain in proptest::array::uniform8(0x20_u8..=0xff),
        last in proptest::array::uniform8(prop_oneof![
            Just(b'"'), Just(b'\\'), 0_u8..0x20, 0x20_u8..=0xff, b'a'..=b'z', b'a'..=b'z'
        ]),
    ) {
        // The first eight: no quote nor backslash (nor control byte).
        let first = plain.map(|c| if c == b'"' || c == b'\\' { b'a' } else { c });
        let mut block = [0_u8; BLOCK];
        for (to, &from) in block.iter_mut().zip(first.iter().chain(last.iter())) {
            *to = from;
        }
        let naive = block.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).unwrap_or(BLOCK);
        prop_assert!(naive >= 8);
        prop_assert_eq!(super::first_special(&block), naive);
    }

    /// Eight bytes at a time finds the byte a byte at a time finds.
    #[test]
    fn plain_run_finds_the_first_special_byte(b in proptest::collection::vec(prop_oneof![
        Just(b'"'), Just(b'\\'), 0_u8..0x20, 0x20_u8..=0xff, b'a'..=b'z', b'a'..=b'z'
    ], 0..40)) {
        let naive = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        prop_assert_eq!(plain_run(&b), naive);
    }

    /// And on long runs, where the SIMD search takes over.
    #[test]
    fn plain_run_finds_the_first_special_byte_of_a_long_run(
        run in proptest::collection::vec(0x20_u8..=0xff, 0..300),
        special in prop_oneof![Just(b'"'), Just(b'\\'), 0_u8..0x20],
        at in 0_usize..300,
    ) {
        let mut b: Vec<u8> = run.into_iter().filter(|&c| c != b'"' && c != b'\\').collect();
        if at <= b.len() {
            b.insert(at, special);
        }
        let naive = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        prop_assert_eq!(plain_run(&b), naive);
    }

    /// A `u64` is what the typed decode makes of it, and the scanner gives
    /// up exactly where that decode refuses it (a sign, a fraction, an
    /// exponent, a leading zero, more than `u64::MAX`).
    #[test]
    fn u64s_decode_as_serde_json_decodes_them(
        number in prop_oneof![
            "[ ]?-?[0-9]{0,22}(\\.[0-9]{0,2})?([eE][+-]?[0-9]{0,2})?",
            "1844674407370955161[0-9]",
            "[ ]?null",
        ],
        after in prop_oneof![Just(""), Just("}"), Just(","), Just(" ")],
    ) {
        let text = format!("{number}{after}");
        let mut values = serde_json::Deserializer::from_str(&text).into_iter::<Option<u64>>();
        let general = values.next().and_then(Result::ok);
        let mut p = Scan::new(&text);
        let fast = p.opt_u64();
        prop_assert_eq!(fast, general, "{:?}", text);
        if fast.is_some() {
            prop_assert_eq!(p.at, values.byte_offset());
        }
    }

    /// A span of bytes checked in a wider window is exactly the span
    /// checked alone: bytes of every kind (ASCII, whole characters of two to
    /// four bytes, their first bytes alone, bytes never in UTF-8), anywhere
    /// in a buffer (every address modulo eight), any span.
    #[test]
    fn a_span_checked_in_a_window_is_the_span_checked_alone(
        pieces in proptest::collection::vec(prop_oneof![
            4 => "[a-z\"{} ]{1,12}".prop_map(String::into_bytes),
            2 => "[\u{e9}\u{65e5}\u{1f980}]{1,3}".prop_map(String::into_bytes),
            1 => prop_oneof![
                Just(vec![0xc3]), Just(vec![0xe2, 0x82]), Just(vec![0xf0, 0x9f]),
                Just(vec![0xff]), Just(vec![0x80]), Just(vec![0xed, 0xa0, 0x80]),
            ],
        ], 0..12),
        shift in 0_usize..8,
        start in any::<prop::sample::Index>(),
        len in prop_oneof![1 => Just(0_usize), 4 => 0_usize..60],
    ) {
        let mut buffer = vec![b'x'; shift];
        buffer.extend(pieces.concat());
        let b = &buffer[shift..];
        let start = start.index(b.len() + 1);
        let end = (start + len).min(b.len());
        let alone = std::str::from_utf8(&b[start..end]).ok();
        prop_assert_eq!(utf8_between(b, start, end), alone);
    }
}
