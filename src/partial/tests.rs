use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn s(text: &str) -> PartialValue {
    PartialValue::String(text.to_owned())
}

fn n(text: &str) -> PartialValue {
    PartialValue::Number(text.to_owned())
}

fn obj(members: &[(&str, PartialValue)]) -> PartialValue {
    PartialValue::Object(
        members
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

fn arr(items: &[PartialValue]) -> PartialValue {
    PartialValue::Array(items.to_vec())
}

/// Feeds `parts` in order, returning the parser.
fn fed(parts: &[&[u8]]) -> Result<PartialJson, Error> {
    let mut parser = PartialJson::default();
    for part in parts {
        parser.feed(part)?;
    }
    Ok(parser)
}

fn shown(text: &str) -> Result<Option<PartialValue>, Error> {
    parse_partial(text.as_bytes(), PartialOptions::default())
}

/// Every way of cutting `text` in two gives the same final value, and the
/// value after the first half equals the one-shot partial parse of it.
fn check_every_cut(text: &[u8]) -> TestResult {
    let whole = parse_partial(text, PartialOptions::default())?;
    for cut in 0..=text.len() {
        let (a, b) = text.split_at(cut);
        let mut parser = PartialJson::default();
        parser.feed(a)?;
        assert_eq!(
            parser.value(),
            parse_partial(a, PartialOptions::default())?,
            "cut {cut}"
        );
        parser.feed(b)?;
        assert_eq!(parser.value(), whole, "cut {cut}");
    }
    Ok(())
}

// ---------------------------------------------------------------- basics

#[test]
fn nothing_before_a_value_starts() -> TestResult {
    assert_eq!(shown("")?, None);
    assert_eq!(shown(" \n\t\r ")?, None);
    let parser = fed(&[b"  "])?;
    assert!(!parser.is_complete());
    assert_eq!(parser.bytes_fed(), 2);
    Ok(())
}

#[test]
fn complete_values() -> TestResult {
    assert_eq!(shown("true")?, Some(PartialValue::Bool(true)));
    assert_eq!(shown("false")?, Some(PartialValue::Bool(false)));
    assert_eq!(shown("null")?, Some(PartialValue::Null));
    assert_eq!(shown(r#""a\"b""#)?, Some(s("a\"b")));
    assert_eq!(shown("-12.5e+3 ")?, Some(n("-12.5e+3")));
    assert_eq!(
        shown(r#" {"a": [1, {"b": null}], "c": "d"} "#)?,
        Some(obj(&[
            ("a", arr(&[n("1"), obj(&[("b", PartialValue::Null)])])),
            ("c", s("d")),
        ]))
    );
    assert_eq!(shown("[]")?, Some(arr(&[])));
    assert_eq!(shown("{}")?, Some(obj(&[])));
    let parser = fed(&[br#"{"a":1}"#, b" \n"])?;
    assert!(parser.is_complete());
    Ok(())
}

#[test]
fn all_short_escapes_decode() -> TestResult {
    assert_eq!(
        shown(r#""\"\\\/\b\f\n\r\t\u0041\u00e9""#)?,
        Some(s("\"\\/\u{8}\u{c}\n\r\tAé"))
    );
    Ok(())
}

// ---------------------------------------------------------------- keywords

#[test]
fn keyword_split_shows_nothing_until_whole() -> TestResult {
    let mut parser = fed(&[b"tr"])?;
    assert_eq!(parser.value(), None);
    parser.feed(b"ue")?;
    assert_eq!(parser.value(), Some(PartialValue::Bool(true)));
    assert!(parser.is_complete());

    let mut parser = fed(&[b"[1, nu"])?;
    assert_eq!(parser.value(), Some(arr(&[n("1")])));
    parser.feed(b"ll")?;
    assert_eq!(parser.value(), Some(arr(&[n("1"), PartialValue::Null])));
    parser.feed(b", fa")?;
    assert_eq!(parser.value(), Some(arr(&[n("1"), PartialValue::Null])));
    parser.feed(b"lse]")?;
    assert_eq!(
        parser.value(),
        Some(arr(&[
            n("1"),
            PartialValue::Null,
            PartialValue::Bool(false)
        ]))
    );

    let parser = fed(&[br#"{"k": t"#])?;
    assert_eq!(parser.value(), Some(obj(&[])));
    check_every_cut(br#"[true,false,null,{"a":true}]"#)
}

#[test]
fn misspelt_keyword_is_an_error_at_its_byte() {
    let err = shown("[tru3]").err();
    assert!(
        matches!(err, Some(Error::Syntax { offset: 4, .. })),
        "{err:?}"
    );
    let err = shown("nulll").err();
    assert!(
        matches!(err, Some(Error::Syntax { offset: 4, .. })),
        "{err:?}"
    );
}

// ---------------------------------------------------------------- numbers

#[test]
fn number_split_shows_its_valid_prefix() -> TestResult {
    let mut parser = fed(&[b"[12"])?;
    assert_eq!(parser.value(), Some(arr(&[n("12")])));
    parser.feed(b"3.5e")?;
    assert_eq!(parser.value(), Some(arr(&[n("123.5")])));
    parser.feed(b"1")?;
    assert_eq!(parser.value(), Some(arr(&[n("123.5e1")])));
    parser.feed(b"]")?;
    assert_eq!(parser.value(), Some(arr(&[n("123.5e1")])));
    assert!(parser.is_complete());
    Ok(())
}

#[test]
fn unfinished_number_never_shows_an_invalid_text() -> TestResult {
    assert_eq!(shown("-")?, None);
    assert_eq!(shown("[-")?, Some(arr(&[])));
    assert_eq!(shown("1e")?, Some(n("1")));
    assert_eq!(shown("1E+")?, Some(n("1")));
    assert_eq!(shown("0.")?, Some(n("0")));
    assert_eq!(shown("-0.25e-")?, Some(n("-0.25")));
    assert_eq!(shown(r#"{"x": -"#)?, Some(obj(&[])));
    Ok(())
}

#[test]
fn top_level_number_completes_at_a_delimiter_or_finish() -> TestResult {
    let mut parser = fed(&[b"42"])?;
    assert!(!parser.is_complete());
    parser.feed(b"0")?;
    assert_eq!(parser.value(), Some(n("420")));
    parser.finish()?;
    assert!(parser.is_complete());
    assert_eq!(parser.value(), Some(n("420")));
    let parser = fed(&[b"7", b"\n"])?;
    assert!(parser.is_complete());
    Ok(())
}

#[test]
fn malformed_numbers_are_errors_with_offsets() {
    for (text, offset) in [
        ("01", 1),
        ("[1.]", 3),
        ("[1.e5]", 3),
        ("-x", 1),
        ("[1e]", 3),
        ("+1", 0),
        ("[.5]", 1),
        ("12a", 2),
    ] {
        let err = shown(text).err();
        assert!(
            matches!(err, Some(Error::Syntax { offset: o, .. }) if o == offset),
            "{text}: {err:?}"
        );
    }
}

#[test]
fn numbers_survive_every_cut() -> TestResult {
    check_every_cut(b"[0, -0, 12, -3.25, 1e9, 2E-3, 6.02e+23, -0.0e0]")
}

// ---------------------------------------------------------------- strings

#[test]
fn unfinished_string_shows_its_text_so_far() -> TestResult {
    assert_eq!(shown(r#""hel"#)?, Some(s("hel")));
    assert_eq!(shown(r#"["a", "b"#)?, Some(arr(&[s("a"), s("b")])));
    assert_eq!(shown(r#"{"k": "v"#)?, Some(obj(&[("k", s("v"))])));
    assert_eq!(shown(r#""ab\"#)?, Some(s("ab")));
    Ok(())
}

#[test]
fn partial_strings_off_hides_unfinished_strings() -> TestResult {
    let opts = PartialOptions {
        partial_strings: false,
        ..PartialOptions::default()
    };
    assert_eq!(parse_partial(br#""hel"#, opts)?, None);
    assert_eq!(parse_partial(br#"["a", "b"#, opts)?, Some(arr(&[s("a")])));
    assert_eq!(
        parse_partial(br#"{"k": "v", "l": "w"#, opts)?,
        Some(obj(&[("k", s("v"))]))
    );
    assert_eq!(parse_partial(br#""done""#, opts)?, Some(s("done")));
    Ok(())
}

#[test]
fn utf8_split_inside_a_sequence_is_held_back() -> TestResult {
    for ch in ["é", "€", "😀"] {
        let text = format!("[\"a{ch}b\"]");
        let bytes = text.as_bytes();
        let first = 3; // `["a`
        for cut in first + 1..first + ch.len() {
            let (a, b) = bytes.split_at(cut);
            let mut parser = fed(&[a])?;
            assert_eq!(parser.value(), Some(arr(&[s("a")])), "{ch} cut {cut}");
            parser.feed(b)?;
            assert_eq!(parser.value(), Some(arr(&[s(&format!("a{ch}b"))])));
        }
        // One byte at a time, too.
        let mut parser = PartialJson::default();
        for byte in bytes {
            parser.feed(std::slice::from_ref(byte))?;
        }
        assert_eq!(parser.value(), Some(arr(&[s(&format!("a{ch}b"))])));
        check_every_cut(bytes)?;
    }
    Ok(())
}

#[test]
fn unicode_escape_split_is_held_back() -> TestResult {
    let text = br#""a\u00e9b""#;
    for cut in 3..8 {
        let (a, _) = text.split_at(cut);
        let parser = fed(&[a])?;
        assert_eq!(parser.value(), Some(s("a")), "cut {cut}");
    }
    check_every_cut(text)
}

#[test]
fn surrogate_pair_split_between_halves_is_held_back() -> TestResult {
    let text = br#"["x\ud83d\ude00y"]"#;
    // Everything from the first backslash up to the last hex digit shows "x".
    for cut in 4..15 {
        let (a, b) = text.split_at(cut);
        let mut parser = fed(&[a])?;
        assert_eq!(parser.value(), Some(arr(&[s("x")])), "cut {cut}");
        parser.feed(b)?;
        assert_eq!(parser.value(), Some(arr(&[s("x😀y")])));
    }
    check_every_cut(text)?;
    check_every_cut(br#""\uD83D\uDE00\uD83D\uDE00""#)
}

#[test]
fn lone_surrogates_show_as_replacement_character() -> TestResult {
    assert_eq!(shown(r#""a\ud800b""#)?, Some(s("a\u{FFFD}b")));
    assert_eq!(shown(r#""a\ud800\n""#)?, Some(s("a\u{FFFD}\n")));
    assert_eq!(shown(r#""\udc00""#)?, Some(s("\u{FFFD}")));
    assert_eq!(shown(r#""\ud800\u0041""#)?, Some(s("\u{FFFD}A")));
    assert_eq!(shown(r#""\ud800\ud83d\ude00""#)?, Some(s("\u{FFFD}😀")));
    assert_eq!(shown(r#""\ud800""#)?, Some(s("\u{FFFD}")));
    Ok(())
}

#[test]
fn bad_strings_are_errors_with_offsets() {
    for (text, offset) in [
        ("\"a\nb\"", 2),
        (r#""\x""#, 2),
        (r#""\u12g4""#, 5),
        ("[\"\u{1}\"]", 2),
    ] {
        let err = shown(text).err();
        assert!(
            matches!(err, Some(Error::Syntax { offset: o, .. }) if o == offset),
            "{text:?}: {err:?}"
        );
    }
    // Invalid UTF-8: a stray continuation byte, a truncated sequence before
    // the closing quote, an overlong encoding, a byte outside strings.
    for (bytes, offset) in [
        (&b"\"ab\x80\""[..], 3),
        (&b"\"ab\xC3\""[..], 3),
        (&b"\"\xC0\xAF\""[..], 1),
        (&b"[\xC3\xA9]"[..], 1),
    ] {
        let err = parse_partial(bytes, PartialOptions::default()).err();
        assert!(
            matches!(err, Some(Error::Syntax { offset: o, .. }) if o == offset),
            "{bytes:?}: {err:?}"
        );
    }
}

#[test]
fn invalid_utf8_split_across_fragments_is_caught() -> TestResult {
    // 0xE2 0x82 starts a valid 3-byte sequence; 0x41 cannot continue it.
    let mut parser = fed(&[b"\"a\xE2", b"\x82"])?;
    assert_eq!(parser.value(), Some(s("a")));
    let err = parser.feed(b"A\"").err();
    assert!(
        matches!(err, Some(Error::Syntax { offset: 2, .. })),
        "{err:?}"
    );
    Ok(())
}

// ---------------------------------------------------------------- objects

#[test]
fn key_being_written_is_not_shown() -> TestResult {
    assert_eq!(shown(r#"{"a": 1, "ke"#)?, Some(obj(&[("a", n("1"))])));
    assert_eq!(shown(r#"{"a": 1, "key""#)?, Some(obj(&[("a", n("1"))])));
    assert_eq!(shown(r#"{"a": 1, "key": "#)?, Some(obj(&[("a", n("1"))])));
    assert_eq!(
        shown(r#"{"a": 1, "key": ["#)?,
        Some(obj(&[("a", n("1")), ("key", arr(&[]))]))
    );
    Ok(())
}

#[test]
fn duplicate_key_last_wins_in_place() -> TestResult {
    assert_eq!(
        shown(r#"{"a": 1, "b": 2, "a": 3}"#)?,
        Some(obj(&[("a", n("3")), ("b", n("2"))]))
    );
    // The replacement shows in place while it arrives; until it shows
    // anything, the earlier value stays.
    assert_eq!(
        shown(r#"{"a": "old", "b": 2, "a": "ne"#)?,
        Some(obj(&[("a", s("ne")), ("b", n("2"))]))
    );
    assert_eq!(
        shown(r#"{"a": "old", "b": 2, "a": tr"#)?,
        Some(obj(&[("a", s("old")), ("b", n("2"))]))
    );
    Ok(())
}

#[test]
fn duplicate_keys_in_a_large_object_use_the_index() -> TestResult {
    let mut text = String::from("{");
    for i in 0..100 {
        text.push_str(&format!("\"k{i}\": {i}, "));
    }
    text.push_str("\"k7\": \"again\", \"k99\": null}");
    let Some(PartialValue::Object(members)) = shown(&text)? else {
        return Err("not an object".into());
    };
    assert_eq!(members.len(), 100);
    assert_eq!(members.get(7), Some(&("k7".to_owned(), s("again"))));
    assert_eq!(
        members.get(99),
        Some(&("k99".to_owned(), PartialValue::Null))
    );
    assert_eq!(members.get(8), Some(&("k8".to_owned(), n("8"))));
    Ok(())
}

#[test]
fn nested_partial_containers() -> TestResult {
    assert_eq!(
        shown(r#"{"a": [1, {"b": [true, "x"#)?,
        Some(obj(&[(
            "a",
            arr(&[
                n("1"),
                obj(&[("b", arr(&[PartialValue::Bool(true), s("x")]))])
            ])
        )]))
    );
    check_every_cut(
        br#"{"city": "Z\u00fcrich", "days": [1, 2.5, -3e2], "opts": {"u": null, "v": [true, {}]}}"#,
    )
}

// ---------------------------------------------------------------- structure errors

#[test]
fn structural_errors_report_byte_offsets() {
    for (text, offset) in [
        ("[1,]", 3),
        ("[1 2]", 3),
        (r#"{"a" 1}"#, 5),
        (r#"{"a": 1,}"#, 8),
        ("{a: 1}", 1),
        ("{]", 1),
        ("[}", 1),
        ("]", 0),
        ("@", 0),
        (r#"{"a": 1]"#, 7),
        ("\u{feff}{}", 0),
    ] {
        let err = shown(text).err();
        assert!(
            matches!(err, Some(Error::Syntax { offset: o, .. }) if o == offset),
            "{text}: {err:?}"
        );
    }
}

#[test]
fn only_whitespace_may_follow_a_complete_value() -> TestResult {
    let mut parser = fed(&[b"{} \n"])?;
    let err = parser.feed(b"x").err();
    assert!(
        matches!(err, Some(Error::Syntax { offset: 4, .. })),
        "{err:?}"
    );
    assert_eq!(parser.value(), Some(obj(&[])));
    assert!(shown("[] []").is_err());
    assert!(shown("1 2").is_err());
    assert!(shown("true false").is_err());
    Ok(())
}

#[test]
fn errors_are_sticky_and_keep_the_value() -> TestResult {
    let mut parser = fed(&[br#"{"a": [1, 2"#])?;
    let err = parser.feed(b", }").err();
    let Some(Error::Syntax { offset, .. }) = err.clone() else {
        return Err("expected a syntax error".into());
    };
    assert_eq!(offset, 13);
    assert_eq!(parser.error(), err.as_ref());
    assert_eq!(parser.feed(b"3]}").err(), err);
    assert_eq!(parser.value(), Some(obj(&[("a", arr(&[n("1"), n("2")]))])));
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("byte 13"), "{message}");
    Ok(())
}

#[test]
fn finish_reports_incomplete_input() -> TestResult {
    let mut parser = fed(&[br#"{"a": "#])?;
    let err = parser.finish().err();
    assert!(
        matches!(err, Some(Error::Syntax { offset: 6, .. })),
        "{err:?}"
    );
    // Not sticky: more input may still come.
    parser.feed(b"1}")?;
    parser.finish()?;
    let mut parser = PartialJson::default();
    assert!(parser.finish().is_err());
    let mut parser = fed(&[b"-"])?;
    assert!(parser.finish().is_err());
    Ok(())
}

// ---------------------------------------------------------------- limits

#[test]
fn depth_over_the_limit_is_an_error_not_a_stack_overflow() -> TestResult {
    let ok = "[".repeat(DEFAULT_MAX_DEPTH) + &"]".repeat(DEFAULT_MAX_DEPTH);
    assert!(shown(&ok)?.is_some());

    let deep = "[".repeat(DEFAULT_MAX_DEPTH + 1);
    let err = shown(&deep).err();
    assert!(
        matches!(
            err,
            Some(Error::Limit {
                limit: "max_depth",
                max: 128,
                offset: 128
            })
        ),
        "{err:?}"
    );

    // Hostile: a million openers, objects and arrays mixed.
    let mut parser = PartialJson::default();
    let err = parser.feed("[{\"a\":".repeat(1_000_000).as_bytes()).err();
    assert!(matches!(err, Some(Error::Limit { .. })), "{err:?}");
    assert!(parser.value().is_some());

    let opts = PartialOptions {
        max_depth: 2,
        ..PartialOptions::default()
    };
    assert!(parse_partial(b"[[1]]", opts).is_ok());
    assert!(parse_partial(b"[[[", opts).is_err());
    let huge = PartialOptions {
        max_depth: usize::MAX,
        ..PartialOptions::default()
    };
    assert_eq!(
        PartialJson::new(huge).options().max_depth,
        MAX_DEPTH_CEILING
    );
    Ok(())
}

#[test]
fn byte_limit_rejects_the_fragment_whole() -> TestResult {
    let opts = PartialOptions {
        max_bytes: 10,
        ..PartialOptions::default()
    };
    let mut parser = PartialJson::new(opts);
    parser.feed(b"[1, 2, ")?;
    let err = parser.feed(b"3, 4]").err();
    assert_eq!(
        err,
        Some(Error::Limit {
            limit: "max_bytes",
            max: 10,
            offset: 7
        })
    );
    assert_eq!(parser.bytes_fed(), 7);
    assert_eq!(parser.value(), Some(arr(&[n("1"), n("2")])));
    assert_eq!(parser.feed(b"3").err(), err);
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("max_bytes"), "{message}");
    Ok(())
}

// ---------------------------------------------------------------- misc

#[test]
fn generation_changes_with_input() -> TestResult {
    let mut parser = PartialJson::default();
    let g0 = parser.generation();
    parser.feed(b"")?;
    assert_eq!(parser.generation(), g0);
    parser.feed(b"[1")?;
    assert_ne!(parser.generation(), g0);
    Ok(())
}

#[test]
fn converts_to_serde_json() -> TestResult {
    let value = shown(r#"{"b": [1, 2.5, -3e2, "x", null, true], "a": {}}"#)?.map(|v| v.to_json());
    let expected: serde_json::Value =
        serde_json::from_str(r#"{"b": [1, 2.5, -3e2, "x", null, true], "a": {}}"#)?;
    assert_eq!(value, Some(expected));
    assert_eq!(n("1e400").to_json(), serde_json::Value::Null);
    Ok(())
}

#[test]
fn parser_is_send_and_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<PartialJson>();
    check::<PartialValue>();
    check::<Error>();
}

/// A ~1 MB input fed 5 bytes at a time is processed in one pass: the state
/// machine steps over each byte exactly once (no re-parse, no backtracking).
#[test]
fn work_is_linear_in_the_input() -> TestResult {
    let item = r#"{"name": "caf\u00e9 \"☕\" 😀 \ud83d\ude00", "n": -12.5e3, "ok": true, "none": null, "list": [1, 2, [3, {"deep": "x"}]]},"#;
    let mut text = String::from("[");
    while text.len() < 1_000_000 {
        text.push_str(item);
    }
    text.push_str("0]");
    let bytes = text.as_bytes();

    let mut parser = PartialJson::default();
    for (i, chunk) in bytes.chunks(5).enumerate() {
        parser.feed(chunk)?;
        if i % 20_000 == 0 {
            assert!(parser.value().is_some());
        }
    }
    assert!(parser.is_complete());
    assert_eq!(parser.bytes_fed(), bytes.len());
    assert_eq!(parser.bytes_processed(), bytes.len());

    let expected: serde_json::Value = serde_json::from_str(&text)?;
    assert_eq!(parser.value().map(|v| v.to_json()), Some(expected));
    Ok(())
}

// ---------------------------------------------------------------- properties

/// A JSON document to serialise by hand, with number texts as written.
#[derive(Debug, Clone)]
enum Doc {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Doc>),
    Object(std::collections::BTreeMap<String, Doc>),
}

fn doc_strategy() -> impl Strategy<Value = Doc> {
    let leaf = prop_oneof![
        Just(Doc::Null),
        any::<bool>().prop_map(Doc::Bool),
        "-?(0|[1-9][0-9]{0,6})(\\.[0-9]{1,5})?([eE][+-]?[0-9]{1,2})?".prop_map(Doc::Number),
        any::<i64>().prop_map(|i| Doc::Number(i.to_string())),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Doc::Number(serde_json::Value::from(f).to_string())),
        any::<String>().prop_map(Doc::String),
        "[a-z\"\\\\/é€😀\\x00-\\x1f\\x7f\\u{2028}]{0,12}".prop_map(Doc::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Doc::Array),
            prop::collection::btree_map("[a-zé😀\"\\\\]{0,6}", inner, 0..6).prop_map(Doc::Object),
        ]
    })
}

/// Deterministic choices for the serialiser (escape style, whitespace).
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn write_string(out: &mut String, text: &str, choices: &mut Choices) {
    out.push('"');
    for ch in text.chars() {
        let pick = choices.next() % 4;
        let short = match ch {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\t' => Some("\\t"),
            '\r' => Some("\\r"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '/' if pick == 1 => Some("\\/"),
            _ => None,
        };
        let must_escape = short.is_some() || u32::from(ch) < 0x20;
        if let (Some(esc), true) = (short, pick != 3) {
            out.push_str(esc);
        } else if must_escape || pick >= 2 {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                if choices.next() % 2 == 0 {
                    out.push_str(&format!("\\u{unit:04x}"));
                } else {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        } else {
            out.push(ch);
        }
    }
    out.push('"');
}

fn write_ws(out: &mut String, choices: &mut Choices) {
    match choices.next() % 8 {
        0 => out.push(' '),
        1 => out.push_str("\n  "),
        2 => out.push_str("\t\r\n"),
        _ => {}
    }
}

fn write_doc(out: &mut String, doc: &Doc, choices: &mut Choices) {
    write_ws(out, choices);
    match doc {
        Doc::Null => out.push_str("null"),
        Doc::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Doc::Number(text) => out.push_str(text),
        Doc::String(text) => write_string(out, text, choices),
        Doc::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_doc(out, item, choices);
            }
            write_ws(out, choices);
            out.push(']');
        }
        Doc::Object(members) => {
            out.push('{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_ws(out, choices);
                write_string(out, key, choices);
                write_ws(out, choices);
                out.push(':');
                write_doc(out, value, choices);
            }
            write_ws(out, choices);
            out.push('}');
        }
    }
    write_ws(out, choices);
}

/// Random JSON texts: escapes of every kind (including surrogate pairs as
/// `\u` escapes), non-ASCII, exponents, random whitespace. Object keys are
/// unique.
pub(crate) fn json_text() -> impl Strategy<Value = String> {
    (doc_strategy(), any::<u64>()).prop_map(|(doc, seed)| {
        let mut out = String::new();
        write_doc(&mut out, &doc, &mut Choices(seed | 1));
        out
    })
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// `shown` could still become `last`: every string and number is a prefix of
/// its final text, and every member but the last is already final.
fn grows_into(shown: &PartialValue, last: &PartialValue) -> bool {
    match (shown, last) {
        (PartialValue::Null, PartialValue::Null) => true,
        (PartialValue::Bool(a), PartialValue::Bool(b)) => a == b,
        (PartialValue::Number(a), PartialValue::Number(b))
        | (PartialValue::String(a), PartialValue::String(b)) => b.starts_with(a.as_str()),
        (PartialValue::Array(a), PartialValue::Array(b)) => {
            a.len() <= b.len()
                && a.iter().zip(b).enumerate().all(|(i, (x, y))| {
                    if i + 1 < a.len() {
                        x == y
                    } else {
                        grows_into(x, y)
                    }
                })
        }
        (PartialValue::Object(a), PartialValue::Object(b)) => {
            a.len() <= b.len()
                && a.iter().zip(b).enumerate().all(|(i, ((kx, x), (ky, y)))| {
                    kx == ky
                        && if i + 1 < a.len() {
                            x == y
                        } else {
                            grows_into(x, y)
                        }
                })
        }
        _ => false,
    }
}

/// No string anywhere in `shown` is unfinished: each equals its final text.
fn strings_are_whole(shown: &PartialValue, last: &PartialValue) -> bool {
    match (shown, last) {
        (PartialValue::String(a), PartialValue::String(b)) => a == b,
        (PartialValue::Array(a), PartialValue::Array(b)) => {
            a.iter().zip(b).all(|(x, y)| strings_are_whole(x, y))
        }
        (PartialValue::Object(a), PartialValue::Object(b)) => a
            .iter()
            .zip(b)
            .all(|((_, x), (_, y))| strings_are_whole(x, y)),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any fragmentation gives the value `serde_json` parses, and every
    /// intermediate value could still grow into it.
    #[test]
    fn any_split_gives_the_full_parse(
        text in json_text(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let bytes = text.as_bytes();
        let expected: serde_json::Value = serde_json::from_slice(bytes).map_err(fail)?;
        let whole = parse_partial(bytes, PartialOptions::default()).map_err(fail)?;
        let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        positions.sort_unstable();
        positions.push(bytes.len());

        let mut parser = PartialJson::default();
        let mut at = 0;
        for end in positions {
            let piece = bytes.get(at..end).ok_or_else(|| fail("bad cut"))?;
            parser.feed(piece).map_err(fail)?;
            at = end;
            if let (Some(shown), Some(last)) = (parser.value(), &whole) {
                prop_assert!(grows_into(&shown, last), "{:?} vs {:?}", shown, last);
            }
        }
        parser.finish().map_err(fail)?;
        prop_assert!(parser.is_complete());
        prop_assert_eq!(parser.bytes_processed(), bytes.len());
        let value = parser.value();
        prop_assert_eq!(&value, &whole);
        prop_assert_eq!(value.map(|v| v.to_json()), Some(expected));
    }

    /// Byte by byte: at every prefix the value is readable and every shown
    /// string is a prefix of its final string.
    #[test]
    fn every_prefix_grows_into_the_final_value(text in json_text()) {
        let bytes = text.as_bytes();
        let whole = parse_partial(bytes, PartialOptions::default())
            .map_err(fail)?
            .ok_or_else(|| fail("no value"))?;
        let mut parser = PartialJson::default();
        for byte in bytes {
            parser.feed(std::slice::from_ref(byte)).map_err(fail)?;
            if let Some(shown) = parser.value() {
                prop_assert!(grows_into(&shown, &whole), "{:?} vs {:?}", shown, whole);
            }
        }
    }

    /// With `partial_strings` off, no unfinished string is ever shown.
    #[test]
    fn without_partial_strings_only_whole_strings_show(text in json_text()) {
        let opts = PartialOptions { partial_strings: false, ..PartialOptions::default() };
        let bytes = text.as_bytes();
        let whole = parse_partial(bytes, opts).map_err(fail)?.ok_or_else(|| fail("no value"))?;
        let mut parser = PartialJson::new(opts);
        for chunk in bytes.chunks(3) {
            parser.feed(chunk).map_err(fail)?;
            if let Some(shown) = parser.value() {
                prop_assert!(grows_into(&shown, &whole));
                prop_assert!(strings_are_whole(&shown, &whole), "{:?} vs {:?}", shown, whole);
            }
        }
    }

    /// Arbitrary bytes never panic, and an error's offset is within the input.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        seed_text in json_text(),
        cut in any::<prop::sample::Index>(),
    ) {
        for input in [bytes.clone(), {
            let mut mutated = seed_text.into_bytes();
            let i = cut.index(mutated.len().max(1));
            if let Some(b) = mutated.get_mut(i) {
                *b = bytes.first().copied().unwrap_or(b'x');
            }
            mutated
        }] {
            let mut parser = PartialJson::default();
            for chunk in input.chunks(2) {
                if let Err(e) = parser.feed(chunk) {
                    prop_assert!(e.offset() < input.len());
                    break;
                }
                let _ = parser.value();
            }
            let _ = parser.finish();
        }
    }
}

// ---------------------------------------------------------- finished members

/// The keys `finished_members` lists after each prefix of `text`.
fn finished_after_each_byte(text: &[u8]) -> Vec<Vec<String>> {
    let mut parser = PartialJson::new(PartialOptions::default());
    let mut out = Vec::new();
    for byte in text {
        let _ = parser.feed(std::slice::from_ref(byte));
        let keys = parser
            .finished_members()
            .map(|m| m.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        out.push(keys);
    }
    out
}

#[test]
fn a_member_is_finished_once_its_value_closes() -> TestResult {
    let text = br#"{"path": "a.rs", "n": 12, "list": [1, {"x": 2}], "ok": true}"#;
    let seen = finished_after_each_byte(text);
    let first = |key: &str| seen.iter().position(|keys| keys.iter().any(|k| k == key));
    let at = |needle: &str| {
        let hay = std::str::from_utf8(text).unwrap_or_default();
        hay.find(needle).unwrap_or(usize::MAX)
    };
    // The closing quote, the byte after the number, the closing bracket, the last letter.
    assert_eq!(first("path"), Some(at(r#"", "n""#)));
    assert_eq!(first("n"), Some(at(r#", "list""#)));
    assert_eq!(first("list"), Some(at(r#"], "ok""#)));
    assert_eq!(first("ok"), Some(at("true}") + 3));
    let mut parser = PartialJson::new(PartialOptions::default());
    parser.feed(text)?;
    let members = parser.finished_members().unwrap_or_default();
    assert_eq!(members.len(), 4);
    assert_eq!(members.get(1), Some(&("n".to_owned(), n("12"))));
    Ok(())
}

#[test]
fn only_a_top_level_object_has_finished_members() -> TestResult {
    let mut parser = PartialJson::new(PartialOptions::default());
    assert_eq!(parser.finished_members(), None);
    parser.feed(b"[1, 2")?;
    assert_eq!(parser.finished_members(), None);
    let mut parser = PartialJson::new(PartialOptions::default());
    parser.feed(b"{")?;
    assert_eq!(parser.finished_members(), Some(&[][..]));
    Ok(())
}
