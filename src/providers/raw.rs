//! JSON text read as it was sent: a value compacted without going through a
//! `Value` (numbers as their text, Q42), and an event's top-level object for
//! telling what it is even when a number of it fits no float.

/// A JSON value's text without the whitespace between its tokens, its
/// strings written as [`push_json_string`] writes them (an escape such as
/// `\u00fc` is a legitimate variation of `ü`, so it never changes the text),
/// and everything else byte for byte: numbers as sent, however long (no float
/// on the way, Q42), keys in their order. `raw` is one valid JSON value.
///
/// One pass over the text: a string's unescaped runs are copied as they are
/// (found with `memchr`), and each escape is written in its one form where it
/// stands, never the whole string decoded and encoded again. A literal whose
/// escapes do not decode (a lone surrogate, a control character, an unknown
/// escape, no closing quote) is kept byte for byte, as `serde_json` refuses it.
pub(crate) fn compact_raw(raw: &str) -> String {
    if already_compact(raw.as_bytes()) {
        return raw.to_owned();
    }
    let mut out = String::with_capacity(raw.len());
    let bytes = raw.as_bytes();
    let mut at = 0;
    let mut copied = 0;
    while let Some(&b) = bytes.get(at) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(raw.get(copied..at).unwrap_or_default());
                at += 1;
                copied = at;
            }
            b'"' => {
                let body = at + 1;
                // The first quote or backslash: most literals have no escape.
                match memchr::memchr2(b'"', b'\\', bytes.get(body..).unwrap_or_default()) {
                    Some(n) if bytes.get(body + n) == Some(&b'"') => at = body + n + 1,
                    Some(n) => {
                        out.push_str(raw.get(copied..at).unwrap_or_default());
                        let mark = out.len();
                        match escaped_literal(raw, body, body + n, &mut out) {
                            Some(end) => copied = end,
                            None => {
                                // Kept as sent: the literal up to its end as a scan
                                // that skips escaped characters finds it.
                                out.truncate(mark);
                                copied = at;
                                let end = literal_end(bytes, body);
                                out.push_str(raw.get(copied..end).unwrap_or_default());
                                copied = end;
                            }
                        }
                        at = copied;
                    }
                    None => at = bytes.len(),
                }
            }
            _ => at += 1,
        }
    }
    out.push_str(raw.get(copied..).unwrap_or_default());
    out
}

/// Whether [`compact_raw`] would give `raw` back as it is (the usual
/// arguments object): no whitespace between its tokens, and no escape but
/// those written in their one form (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`).
/// Quotes and backslashes are found with `memchr`; only the short stretches
/// between strings are read a byte at a time.
fn already_compact(raw: &[u8]) -> bool {
    let spaced = |from: usize, to: usize| {
        raw.get(from..to)
            .unwrap_or_default()
            .iter()
            .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    };
    let (mut inside, mut at) = (false, 0);
    while let Some(n) = memchr::memchr2(b'"', b'\\', raw.get(at..).unwrap_or_default()) {
        let found = at + n;
        match raw.get(found) {
            Some(b'"') if inside => inside = false,
            Some(b'"') => {
                if spaced(at, found) {
                    return false;
                }
                inside = true;
            }
            _ if inside => {
                let one_form = matches!(
                    raw.get(found + 1),
                    Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f')
                );
                if !one_form {
                    return false;
                }
                at = found + 2;
                continue;
            }
            _ => return false,
        }
        at = found + 1;
    }
    inside || !spaced(at, raw.len())
}

/// The end (past the closing quote) of a literal whose text starts at
/// `body`: the next quote no backslash escapes, or the end of the text.
fn literal_end(bytes: &[u8], body: usize) -> usize {
    let mut end = body;
    let mut escaped = false;
    while let Some(&c) = bytes.get(end) {
        end += 1;
        if escaped {
            escaped = false;
        } else if c == b'\\' {
            escaped = true;
        } else if c == b'"' {
            break;
        }
    }
    end
}

/// Writes the literal whose text starts at `body` (its opening quote is at
/// `body - 1`, its first backslash at `first`) as [`push_json_string`] writes
/// the string it stands for, and gives the end past its closing quote; `None`
/// when `serde_json` would refuse it (then `out` holds a partial write, which
/// the caller takes back).
fn escaped_literal(raw: &str, body: usize, first: usize, out: &mut String) -> Option<usize> {
    let bytes = raw.as_bytes();
    out.push('"');
    let mut run = body;
    let mut at = first;
    loop {
        // The characters before `at` are plain (no quote, no backslash); a
        // control character among them is refused, as `serde_json` refuses it.
        let plain = raw.get(run..at)?;
        if plain.bytes().any(|c| c < 0x20) {
            return None;
        }
        out.push_str(plain);
        match bytes.get(at)? {
            b'"' => {
                out.push('"');
                return Some(at + 1);
            }
            _ => {
                let (c, next) = unescape(bytes, at + 1)?;
                push_char(out, c);
                at = next;
                run = next;
            }
        }
        at += memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
    }
}

/// The character of the escape whose letter is at `at` (past the backslash),
/// and where the text goes on; `None` for an escape `serde_json` refuses.
fn unescape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let c = match *bytes.get(at)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(bytes, at + 1)?;
            if (0xDC00..0xE000).contains(&high) {
                return None;
            }
            if !(0xD800..0xDC00).contains(&high) {
                return Some((char::from_u32(high)?, at + 5));
            }
            // A leading surrogate: a trailing one must follow at once.
            if bytes.get(at + 5..at + 7)? != b"\\u" {
                return None;
            }
            let low = hex4(bytes, at + 7)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(c)?, at + 11));
        }
        _ => return None,
    };
    Some((c, at + 1))
}

/// Four hex digits at `at`.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0u32, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
}

/// Appends one character of a string as [`push_json_string`] writes it.
fn push_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}

/// The top-level object of an event's text for telling what it is (its
/// dialect, a body or not). A number `serde_json` cannot hold as a `Value`
/// (`1e400`) does not hide what the event is: on that failure the text is read
/// again with every number as `0` (the shape never depends on a number's
/// value; the adapters read the text itself).
pub(crate) fn object_for_shape(text: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    use serde_json::Value;
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(m)) => return Some(m),
        Ok(_) => return None,
        Err(e) if e.is_eof() || e.is_io() => return None,
        Err(_) => {}
    }
    let text = std::str::from_utf8(text).ok()?;
    let mut zeroed = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut in_number) = (false, false, false);
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            zeroed.push(c);
            continue;
        }
        let numeric = c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E');
        if in_number && numeric {
            continue;
        }
        in_number = false;
        if c.is_ascii_digit() || c == '-' {
            in_number = true;
            zeroed.push('0');
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        zeroed.push(c);
    }
    match serde_json::from_str::<Value>(&zeroed) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Appends `s` as a JSON string literal, escaped the way `serde_json` does:
/// the runs between the bytes it escapes (`"`, `\`, control characters)
/// found as the scanner finds the end of a plain string, eight bytes at a
/// time, and copied whole.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut rest = s;
    while let Some(i) = plain_run(rest.as_bytes()) {
        // An ASCII byte: the text on either side of it is whole characters.
        let (Some(run), Some(&b), Some(after)) =
            (rest.get(..i), rest.as_bytes().get(i), rest.get(i + 1..))
        else {
            break;
        };
        out.push_str(run);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => out.push_str(&format!("\\u{b:04x}")),
        }
        rest = after;
    }
    out.push_str(rest);
    out.push('"');
}

/// Where the plain run at the start of `b` ends: the first `"`, `\` or
/// control character (`None` when there is none). The first bytes are looked
/// at eight at a time (keys and most fragments end there); a longer run is
/// left to [`long_run`].
#[inline]
pub(crate) fn plain_run(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // A high bit for each byte of `x` below `n` (n <= 128); the lowest one
    // flagged is always exact, which is all that is used.
    #[inline]
    fn below(x: u64, n: u64) -> u64 {
        x.wrapping_sub(LO.wrapping_mul(n)) & !x & HI
    }
    let mut i = 0;
    while let Some(eight) = b.get(i..i + 8) {
        let mut w = [0_u8; 8];
        w.copy_from_slice(eight);
        let w = u64::from_le_bytes(w);
        let hit = below(w ^ (LO * u64::from(b'"')), 1)
            | below(w ^ (LO * u64::from(b'\\')), 1)
            | below(w, 0x20);
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
        if i == LONG_RUN {
            return long_run(b.get(i..)?).map(|p| i + p);
        }
    }
    b.get(i..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

/// Bytes of a run looked at eight at a time before [`long_run`] takes over.
const LONG_RUN: usize = 32;

/// [`plain_run`] for the rest of a long run (a large argument's text): the
/// next `"` or `\` found with SIMD, then the run up to it checked for control
/// characters 32 bytes at a time (a loop the compiler vectorises).
fn long_run(b: &[u8]) -> Option<usize> {
    let end = memchr::memchr2(b'"', b'\\', b);
    let run = b.get(..end.unwrap_or(b.len()))?;
    for (k, chunk) in run.chunks(32).enumerate() {
        if chunk.iter().fold(false, |hit, &c| hit | (c < 0x20)) {
            return chunk.iter().position(|&c| c < 0x20).map(|p| k * 32 + p);
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{compact_raw, push_json_string};

    /// `compact_raw` as it was first written: every literal with a backslash
    /// decoded whole by `serde_json` and encoded again (kept when that fails).
    fn decoded_and_encoded(raw: &str) -> String {
        let mut out = String::with_capacity(raw.len());
        let bytes = raw.as_bytes();
        let mut at = 0;
        let mut copied = 0;
        while let Some(&b) = bytes.get(at) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    out.push_str(raw.get(copied..at).unwrap_or_default());
                    at += 1;
                    copied = at;
                }
                b'"' => {
                    let mut end = at + 1;
                    let mut escaped = false;
                    while let Some(&c) = bytes.get(end) {
                        end += 1;
                        if escaped {
                            escaped = false;
                        } else if c == b'\\' {
                            escaped = true;
                        } else if c == b'"' {
                            break;
                        }
                    }
                    let literal = raw.get(at..end).unwrap_or_default();
                    if literal.contains('\\') {
                        if let Ok(text) = serde_json::from_str::<String>(literal) {
                            out.push_str(raw.get(copied..at).unwrap_or_default());
                            push_json_string(&mut out, &text);
                            copied = end;
                        }
                    }
                    at = end;
                }
                _ => at += 1,
            }
        }
        out.push_str(raw.get(copied..).unwrap_or_default());
        out
    }

    /// Pieces of JSON text, escapes valid and not among them.
    const PIECES: &[&str] = &[
        "\"",
        "\\",
        "\\\"",
        "\\\\",
        "\\/",
        "\\n",
        "\\t",
        "\\b",
        "\\f",
        "\\r",
        "\\u00fc",
        "\\u00FC",
        "\\u0022",
        "\\u005c",
        "\\u0001",
        "\\u001f",
        "\\u007f",
        "\\ud83d\\ude00",
        "\\uD83D\\uDE00",
        "\\ud83d",
        "\\udc00",
        "\\ud83d\\u0041",
        "\\ud83dx",
        "\\u00",
        "\\u12g4",
        "\\x",
        "\\",
        " ",
        "\n",
        "\t",
        "\u{1}",
        "\u{7f}",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "a",
        "ü",
        "日本",
        "😀",
        "1e400",
        "-0.0",
        "null",
        "\\u2028",
    ];

    fn texts() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|p| p.concat())
    }

    /// Valid JSON values written with escapes chosen at random.
    fn values() -> impl Strategy<Value = String> {
        let chars = prop::collection::vec(
            (any::<char>(), any::<bool>()).prop_map(|(c, escape)| {
                if escape {
                    let mut units = [0u16; 2];
                    c.encode_utf16(&mut units)
                        .iter()
                        .map(|u| format!("\\u{u:04X}"))
                        .collect::<String>()
                } else {
                    let mut s = String::new();
                    push_json_string(&mut s, &c.to_string());
                    s.trim_matches('"').to_owned()
                }
            }),
            0..12,
        )
        .prop_map(|c| format!("\"{}\"", c.concat()));
        prop::collection::vec(chars, 1..5).prop_map(|strings| {
            let members: Vec<String> = strings
                .chunks(2)
                .map(|kv| format!("{} : {}", kv[0], kv.get(1).map_or("1", |v| v.as_str())))
                .collect();
            format!("{{ {} }}", members.join(" , "))
        })
    }

    proptest! {
        /// Any text (quotes, backslashes, every control character, long
        /// plain runs, other scripts) is written as `serde_json` writes it.
        #[test]
        fn strings_are_written_as_serde_json_writes_them(
            text in "([\"\\\\\u{0}-\u{1f}\u{7f}a-z é東😀]{0,12}|[a-z]{30,80}){0,4}",
        ) {
            let mut out = String::from("kept");
            push_json_string(&mut out, &text);
            let json = serde_json::to_string(&text).unwrap_or_default();
            prop_assert_eq!(out, format!("kept{json}"));
        }

        #[test]
        fn one_pass_gives_what_decoding_and_encoding_gave(raw in texts()) {
            prop_assert_eq!(compact_raw(&raw), decoded_and_encoded(&raw));
        }

        #[test]
        fn escaped_values_compact_as_before(raw in values()) {
            let compact = compact_raw(&raw);
            prop_assert_eq!(&compact, &decoded_and_encoded(&raw));
            // And the value is the same value.
            let before: serde_json::Value = serde_json::from_str(&raw).unwrap_or_default();
            let after: serde_json::Value = serde_json::from_str(&compact).unwrap_or_default();
            prop_assert_eq!(before, after);
        }
    }
}
