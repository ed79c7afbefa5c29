//! JSON text read as it was sent: a value compacted without going through a
//! `Value` (numbers as their text, Q42), and an event's top-level object for
//! telling what it is even when a number of it fits no float.

/// A JSON value's text without the whitespace between its tokens, its
/// strings written as [`push_json_string`] writes them (an escape such as
/// `\u00fc` is a legitimate variation of `ü`, so it never changes the text),
/// and everything else byte for byte: numbers as sent, however long (no float
/// on the way, Q42), keys in their order. `raw` is one valid JSON value.
pub(crate) fn compact_raw(raw: &str) -> String {
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
                // The literal's end: the next quote that no backslash escapes.
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

/// Appends `s` as a JSON string literal, escaped the way `serde_json` does.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(s.get(start..i).unwrap_or_default());
        match esc {
            Some(e) => out.push_str(e),
            None => out.push_str(&format!("\\u{b:04x}")),
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}
