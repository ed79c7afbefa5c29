//! Strict parsing of a completed call's input.

use std::fmt;

use serde_json::Value;

use crate::partial::{Error as PartialError, PartialJson, PartialValue};

/// Deepest nesting of arrays and objects a tool input may have.
pub const MAX_DEPTH: usize = 128;

/// A tool input that is not strictly valid JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Byte offset into the input of the offending byte (for a truncated
    /// input, its length).
    pub offset: usize,
    /// What was wrong, for a human.
    pub message: String,
}

/// How many complete JSON values `input` holds one after another, when it holds
/// two or more and nothing else (`{"q":"A"}{"q":"B"}`, Q40); `None` otherwise.
#[must_use]
pub fn several_values(input: &[u8]) -> Option<usize> {
    let mut n = 0_usize;
    for value in serde_json::Deserializer::from_slice(input).into_iter::<serde::de::IgnoredAny>() {
        value.ok()?;
        n = n.saturating_add(1);
    }
    (n >= 2).then_some(n)
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid JSON input at byte {}: {}",
            self.offset, self.message
        )
    }
}

impl std::error::Error for InputError {}

impl From<PartialError> for InputError {
    fn from(error: PartialError) -> Self {
        match error {
            PartialError::Syntax { offset, message } => Self { offset, message },
            PartialError::Limit { limit, max, offset } => Self {
                offset,
                message: if limit == "max_depth" {
                    format!("nesting deeper than {max} levels")
                } else {
                    format!("input longer than {max} bytes")
                },
            },
        }
    }
}

/// Parses a completed call's input strictly.
///
/// Empty or whitespace-only input is `{}`.
///
/// # Errors
///
/// [`InputError`] with the byte offset for invalid JSON, a truncated value,
/// a duplicate object key (at the key's opening quote), anything but
/// whitespace after the value, a lone surrogate escape, a number out of
/// `f64` range, or nesting deeper than [`MAX_DEPTH`].
pub fn parse_strict(input: &str) -> Result<Value, InputError> {
    parse_strict_bytes(input.as_bytes())
}

/// [`parse_strict`] for raw bytes: invalid UTF-8 is an error too.
///
/// # Errors
///
/// As [`parse_strict`], plus invalid UTF-8 (with its offset).
pub fn parse_strict_bytes(input: &[u8]) -> Result<Value, InputError> {
    if input
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let mut parser = PartialJson::new_strict(MAX_DEPTH);
    parser.feed(input)?;
    parser.finish()?;
    parser
        .take_complete()
        .map(|value| value.to_json())
        .ok_or_else(|| InputError {
            offset: input.len(),
            message: "no complete JSON value".to_owned(),
        })
}

/// The strict parse of a completed call's input, keeping members in arrival
/// order ([`parse_strict`] gives the same verdicts, as a `serde_json::Value`
/// whose objects are sorted by key); several values one after another (Q40)
/// are named as such.
///
/// # Errors
///
/// As [`parse_strict_bytes`].
pub fn parse_strict_ordered(input: &[u8]) -> Result<PartialValue, InputError> {
    if input
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(PartialValue::Object(Vec::new()));
    }
    let mut parser = PartialJson::new_strict(MAX_DEPTH);
    let parsed = parser.feed(input).and_then(|()| parser.finish());
    if let Err(e) = parsed {
        let mut e = InputError::from(e);
        // Q40: a server that joined several calls' arguments into one input.
        if let Some(n) = several_values(input) {
            e.message = format!(
                "{n} JSON values in one input, one after another (a server joined several \
                 calls' arguments into one call); it is not executed as one call"
            );
        }
        return Err(e);
    }
    parser.take_complete().ok_or_else(|| InputError {
        offset: input.len(),
        message: "no complete JSON value".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn error_at(input: &str) -> Option<usize> {
        parse_strict(input).err().map(|e| e.offset)
    }

    #[test]
    fn empty_input_is_an_empty_object() -> TestResult {
        assert_eq!(parse_strict("")?, json!({}));
        Ok(())
    }

    #[test]
    fn whitespace_only_input_is_an_empty_object() -> TestResult {
        assert_eq!(parse_strict(" \n\t\r ")?, json!({}));
        // Non-JSON whitespace is not whitespace here.
        assert_eq!(error_at("\u{a0}"), Some(0));
        Ok(())
    }

    #[test]
    fn valid_input_parses_like_serde_json() -> TestResult {
        let text = r#" {"city": "Z\u00fcrich", "days": [1, -2.5e3, 1e-7, 18446744073709551615],
                       "u": null, "t": true, "emoji": "\ud83d\ude00", "nested": {"a": {"b": []}}} "#;
        assert_eq!(parse_strict(text)?, serde_json::from_str::<Value>(text)?);
        assert_eq!(parse_strict("[]")?, json!([]));
        assert_eq!(parse_strict("\"s\"")?, json!("s"));
        assert_eq!(parse_strict(" 42")?, json!(42));
        assert_eq!(parse_strict("-0.5")?, json!(-0.5));
        assert_eq!(parse_strict("null")?, Value::Null);
        Ok(())
    }

    #[test]
    fn duplicate_top_level_key_is_an_error_at_the_key() {
        let err = parse_strict(r#"{"a": 1, "a": 2}"#).err();
        assert_eq!(err.as_ref().map(|e| e.offset), Some(9));
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("duplicate object key \"a\""), "{message}");
        assert!(message.contains("byte 9"), "{message}");
    }

    #[test]
    fn duplicate_nested_key_is_an_error_at_the_key() {
        assert_eq!(error_at(r#"{"a": {"b": 1, "c": 2, "b": 3}}"#), Some(23));
        assert_eq!(
            error_at(r#"[{"x": 1}, {"y": [{"z": 0, "z": 0}]}]"#),
            Some(27)
        );
        // The same key in sibling objects is fine.
        assert!(parse_strict(r#"[{"a": 1}, {"a": 2}, {"a": {"a": 3}}]"#).is_ok());
        // Keys equal after unescaping are duplicates.
        assert_eq!(error_at(r#"{"é": 1, "\u00e9": 2}"#), Some(10));
    }

    #[test]
    fn duplicate_key_in_a_large_object_is_found() {
        let mut text = String::from("{");
        for i in 0..1000 {
            text.push_str(&format!("\"k{i}\": {i}, "));
        }
        let at = text.len();
        text.push_str("\"k500\": 0}");
        assert_eq!(error_at(&text), Some(at));
    }

    #[test]
    fn several_values_are_counted_and_anything_else_is_not() {
        assert_eq!(several_values(br#"{"q":"A"}{"q":"B"}"#), Some(2));
        assert_eq!(several_values(b"{} [1] \n {\"a\": 2}"), Some(3));
        assert_eq!(several_values(br#"{"q":"A"}"#), None);
        assert_eq!(several_values(br#"{"q":"A"}{"q":"#), None);
        assert_eq!(several_values(br#"{"q":"A"} x"#), None);
    }

    #[test]
    fn trailing_garbage_is_an_error_with_its_offset() {
        assert_eq!(error_at(r#"{"a": 1}x"#), Some(8));
        assert_eq!(error_at(r#"{"a": 1} {"b": 2}"#), Some(9));
        assert_eq!(error_at(r#"{"a": 1}}"#), Some(8));
        assert_eq!(error_at("1 2"), Some(2));
        assert_eq!(error_at("[] ,"), Some(3));
        assert!(parse_strict("{\"a\": 1}\n\n").is_ok());
    }

    #[test]
    fn invalid_json_reports_its_offset() {
        assert_eq!(error_at(r#"{"a": 1,}"#), Some(8));
        assert_eq!(error_at(r#"{"a": tru}"#), Some(9));
        assert_eq!(error_at(r#"{"a": 01}"#), Some(7));
        assert_eq!(error_at("{'a': 1}"), Some(1));
        assert_eq!(error_at(r#"{"a": "\q"}"#), Some(8));
        assert_eq!(error_at("{\"a\": \"x\ty\"}"), Some(8));
        assert_eq!(error_at(r#"{"a": NaN}"#), Some(6));
    }

    #[test]
    fn truncated_input_reports_the_end() {
        assert_eq!(error_at(r#"{"a": "#), Some(6));
        assert_eq!(error_at(r#"{"a": "xy"#), Some(9));
        assert_eq!(error_at(r#"{"a": [1, 2"#), Some(11));
        assert_eq!(error_at("[1."), Some(3));
        assert_eq!(error_at("tr"), Some(2));
    }

    #[test]
    fn lone_surrogates_are_errors() {
        assert_eq!(error_at(r#"{"a": "x\ud800y"}"#), Some(8));
        assert_eq!(error_at(r#"{"a": "\udc00"}"#), Some(7));
        assert_eq!(error_at(r#"["\ud800\u0041"]"#), Some(2));
        assert!(parse_strict(r#"["\ud800\udc00"]"#).is_ok());
    }

    #[test]
    fn out_of_range_numbers_are_errors() {
        assert_eq!(error_at(r#"{"n": 1e400}"#), Some(6));
        assert!(parse_strict("[1e308, -1e308, 123456789012345678901234567890]").is_ok());
    }

    #[test]
    fn invalid_utf8_bytes_are_errors() {
        let err = parse_strict_bytes(b"{\"a\": \"\xFF\"}").err();
        assert_eq!(err.map(|e| e.offset), Some(7));
        let err = parse_strict_bytes(b"{\"a\": \"\xE2\x82\"}").err();
        assert_eq!(err.map(|e| e.offset), Some(7));
    }

    proptest::proptest! {
        /// On valid documents the strict parse is `serde_json`'s; on mangled
        /// ones it accepts only what `serde_json` accepts (and refuses what
        /// `serde_json` accepts only for a duplicate key).
        #[test]
        fn agrees_with_serde_json(
            text in crate::partial::tests::json_text(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prelude::any::<u8>(),
        ) {
            let expected: Value = serde_json::from_str(&text)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(parse_strict(&text).ok(), Some(expected));

            let mut mangled = text.into_bytes();
            let i = at.index(mangled.len());
            if let Some(b) = mangled.get_mut(i) {
                *b = byte;
            }
            if mangled.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            let ours = parse_strict_bytes(&mangled);
            let theirs = serde_json::from_slice::<Value>(&mangled);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Ok(a), Err(e)) => proptest::prop_assert!(false, "accepted {:?}, serde_json: {}", a, e),
                (Err(e), Ok(_)) => proptest::prop_assert!(e.message.contains("duplicate"), "{}", e),
                (Err(e), Err(_)) => proptest::prop_assert!(e.offset <= mangled.len()),
            }
        }
    }

    #[test]
    fn deep_nesting_is_a_clear_error() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_strict(&ok).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let err = parse_strict(&deep).err();
        assert_eq!(err.as_ref().map(|e| e.offset), Some(MAX_DEPTH));
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("nesting deeper than 128"), "{message}");
        // Hostile depth: no stack overflow.
        let hostile = "{\"a\":[".repeat(500_000);
        assert!(parse_strict(&hostile).is_err());
    }
}
