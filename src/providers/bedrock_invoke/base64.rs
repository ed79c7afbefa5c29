//! The standard base64 alphabet (RFC 4648 §4) that a `chunk`'s `bytes` uses,
//! decoded strictly: any other byte, whitespace included, is an error naming
//! its offset. The closing `=` padding may be left out; a lone sixth bit
//! group (a length of 4n + 1) cannot encode anything and is an error.

/// The value of one alphabet byte.
fn sextet(b: u8) -> Option<u32> {
    let v = match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decodes `text`.
///
/// # Errors
/// What is wrong with the text, and where.
pub(super) fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let body = bytes
        .strip_suffix(b"==")
        .or_else(|| bytes.strip_suffix(b"="))
        .unwrap_or(bytes);
    let padded = body.len() != bytes.len();
    if padded && bytes.len() % 4 != 0 {
        return Err(format!(
            "its padding leaves a length of {} characters, not a multiple of 4",
            bytes.len()
        ));
    }
    if body.len() % 4 == 1 {
        return Err(format!(
            "{} characters cannot be base64 (a length of 4n + 1)",
            body.len()
        ));
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for (n, group) in body.chunks(4).enumerate() {
        let mut acc = 0u32;
        for (i, &b) in group.iter().enumerate() {
            let v = sextet(b).ok_or_else(|| {
                format!(
                    "byte {} ({:?}) is not in the base64 alphabet",
                    n * 4 + i,
                    char::from(b)
                )
            })?;
            acc = (acc << 6) | v;
        }
        // Up to three bytes per group, the high ones first.
        let [_, b0, b1, b2] = (acc << (6 * (4 - group.len()))).to_be_bytes();
        let whole = [b0, b1, b2];
        out.extend_from_slice(whole.get(..group.len().saturating_sub(1)).unwrap_or(&whole));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_padded_and_unpadded_text() {
        assert_eq!(decode("").as_deref(), Ok(&b""[..]));
        assert_eq!(decode("eyJ0eXBlIjoicGluZyJ9").as_deref(), Ok(&b"{\"type\":\"ping\"}"[..]));
        assert_eq!(decode("YQ==").as_deref(), Ok(&b"a"[..]));
        assert_eq!(decode("YQ").as_deref(), Ok(&b"a"[..]));
        assert_eq!(decode("YWI=").as_deref(), Ok(&b"ab"[..]));
        assert_eq!(decode("YWJj").as_deref(), Ok(&b"abc"[..]));
        assert_eq!(decode("+/+/").as_deref(), Ok(&[0xfb, 0xff, 0xbf][..]));
    }

    #[test]
    fn refuses_what_is_not_base64() {
        for bad in ["Y", "YQ=", "YQ===", "Y Q==", "YQ==YQ==", "eyJ0*", "-_-_", "YWJj\n"] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
        let e = decode("YW*j").err().unwrap_or_default();
        assert!(e.contains("byte 2"), "{e}");
    }
}
