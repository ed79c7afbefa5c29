//! What the direct readers' scanners of whole bodies share: a body's small
//! objects (its `usage`) read by the scanner of `providers/scan` into the
//! `Map` the typed decode gives, with no second pass over their text; the
//! members they skip; the numbers a float may not hold.

use serde_json::{Map, Value};

use crate::providers::scan::Scan;

/// How deep [`scanned_map`] reads objects in objects before it gives up.
const MAP_DEPTH: usize = 4;

/// A small JSON object (a body's `usage`) read by a body's scanner into the
/// very `Map` that `serde_json` decodes it into, when it holds only strings,
/// non-negative integers (each the `u64` that `serde_json` reads), booleans,
/// `null` and such objects, a key twice kept last as there; `None` (the
/// reader gives up, for the typed decode) on anything else: an array, a
/// number with a sign, fraction or exponent or past `u64`, objects nested
/// deeper than [`MAP_DEPTH`], what the scanner itself refuses.
pub(crate) fn scanned_map(p: &mut Scan<'_>) -> Option<Map<String, Value>> {
    map_at(p, 0)
}

fn map_at(p: &mut Scan<'_>, depth: usize) -> Option<Map<String, Value>> {
    if depth >= MAP_DEPTH || p.peek_token()? != b'{' {
        return None;
    }
    let mut map = Map::new();
    p.object(|p, key| {
        let value = match p.peek_token()? {
            b'"' => Value::String(p.opt_str()??.0.into_owned()),
            b'n' => p.null()?.then_some(Value::Null)?,
            b't' | b'f' => Value::Bool(p.opt_bool()??),
            b'{' => Value::Object(map_at(p, depth + 1)?),
            b'0'..=b'9' => Value::from(p.opt_u64()??),
            _ => return None,
        };
        map.insert(key.to_owned(), value);
        Some(())
    })?;
    Some(map)
}

/// Whether the JSON `text` may hold a number a float cannot hold (an
/// exponent, or 300 digits in a row, outside strings), which the reference's
/// values refuse.
pub(crate) fn may_overflow(text: &str) -> bool {
    let mut run = 0_u32;
    outside_strings(text.as_bytes(), |b| {
        if matches!(b, b'e' | b'E') && run > 0 {
            return true;
        }
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= 300
    })
}

/// A member a body's scanner (`providers/scan`) skips, or reads as a value
/// the typed decode drops: checked as that decode checks it, a number a float
/// may not hold refused (noted by the scanner as it passes, in one pass).
pub(crate) fn scanned_value(p: &mut Scan<'_>) -> Option<()> {
    p.skip_narrow()
}

/// Hands `look` each byte of the JSON `text` outside its strings, and each
/// string's opening quote, until it answers `true` (then `true`). Strings
/// are passed over with `memchr`: their closing quote is the first one no
/// backslash escapes (a string left open ends the text).
#[inline]
pub(crate) fn outside_strings(text: &[u8], mut look: impl FnMut(u8) -> bool) -> bool {
    let mut at = 0;
    while let Some(&b) = text.get(at) {
        if look(b) {
            return true;
        }
        at += 1;
        if b == b'"' {
            loop {
                let Some(rest) = text.get(at..) else {
                    return false;
                };
                let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                    return false;
                };
                at += i + 1;
                if rest.get(i) == Some(&b'"') {
                    break;
                }
                // The byte after a backslash, whatever it is.
                at += 1;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    use crate::providers::scan::Scan;

    /// Members of a small object: every kind the reader takes, and the ones
    /// it gives up on (left to the typed decode).
    fn member() -> impl Strategy<Value = String> {
        let key = prop_oneof![Just("a"), Just("b"), Just("tokens"), Just("k\\u0065y")];
        let leaf = prop_oneof![
            4 => "(0|[1-9][0-9]{0,20})",
            1 => "-[0-9]{1,3}",
            1 => "[0-9]\\.[0-9]",
            1 => "1e[0-9]",
            1 => "0[0-9]",
            2 => Just("null".to_owned()),
            2 => Just("true".to_owned()),
            1 => Just("false".to_owned()),
            2 => "\"[a-z\u{e9} ]{0,6}\"",
            1 => Just("\"a\\nb\\u00e9\"".to_owned()),
            1 => Just("[1]".to_owned()),
            1 => Just("\"\u{1}\"".to_owned()),
        ];
        let value = leaf.prop_recursive(5, 24, 4, |inner| {
            proptest::collection::vec((Just("x"), inner), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            })
        });
        (key, value, prop_oneof![Just(""), Just(" "), Just("\n")])
            .prop_map(|(k, v, ws)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}"))
    }

    proptest! {
        /// What the reader gives is the `Map` of the typed decode; where it
        /// gives up the text goes to that decode. It reads the usual usage.
        #[test]
        fn small_objects_read_as_serde_json_reads_them(
            members in proptest::collection::vec(member(), 0..6),
            after in prop_oneof![Just(""), Just(",\"n\":1}"), Just("x")],
        ) {
            let object = format!("{{{}}}", members.join(","));
            let text = format!("{object}{after}");
            let scanned = super::scanned_map(&mut Scan::new(&text));
            let typed = serde_json::from_str::<Map<String, Value>>(&object).ok();
            if scanned.is_some() {
                prop_assert_eq!(&scanned, &typed, "{:?}", text);
            }
        }
    }

    #[test]
    fn reads_the_usual_usage() {
        for usage in [
            r#"{"prompt_tokens":812,"completion_tokens":97,"total_tokens":909,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":null},"service_tier":"default","flag":true}"#,
            r#"{"a":1,"a":2}"#,
            "{ }",
        ] {
            let typed = serde_json::from_str::<Map<String, Value>>(usage).ok();
            assert!(typed.is_some());
            assert_eq!(super::scanned_map(&mut Scan::new(usage)), typed, "{usage}");
        }
        for odd in [
            r#"{"a":[1]}"#,
            r#"{"a":-1}"#,
            r#"{"a":1.5}"#,
            "[1]",
            r#"{"a":{"b":{"c":{"d":{}}}}}"#,
        ] {
            assert_eq!(super::scanned_map(&mut Scan::new(odd)), None, "{odd}");
        }
    }
}
