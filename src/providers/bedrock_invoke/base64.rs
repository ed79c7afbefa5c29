//! The standard base64 alphabet (RFC 4648 §4) that a `chunk`'s `bytes` uses,
//! decoded strictly: any other byte, whitespace included, is an error naming
//! its offset. The closing `=` padding may be left out; a lone sixth bit
//! group (a length of 4n + 1) cannot encode anything and is an error.

use ::base64::engine::general_purpose::GeneralPurposeConfig;
use ::base64::engine::DecodePaddingMode;
use ::base64::{DecodeError, Engine};

/// The text once its `=`s are taken off and its length checked here: only
/// alphabet bytes, and the bits a last group holds beyond its bytes ignored
/// (as a lenient decoder does; the bytes are the same).
const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::RequireNone)
    .with_decode_allow_trailing_bits(true);

/// The engine: with the SIMD instructions the machine has (told once), where
/// the crate has them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static BODY: std::sync::LazyLock<::base64::engine::Simd> =
    std::sync::LazyLock::new(|| ::base64::engine::Simd::standard(CONFIG));

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
static BODY: ::base64::engine::GeneralPurpose =
    ::base64::engine::GeneralPurpose::new(&::base64::alphabet::STANDARD, CONFIG);

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
    BODY.decode(body).map_err(|e| {
        // With the length checked, only a byte outside the alphabet is left
        // (a `=` inside the text is one); its offset, whatever the crate says.
        let at = match e {
            DecodeError::InvalidByte(at, _) => at,
            _ => body
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/'))
                .unwrap_or(body.len()),
        };
        let b = body.get(at).copied().unwrap_or(b'=');
        format!("byte {at} ({:?}) is not in the base64 alphabet", char::from(b))
    })
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
        let e = decode("YQ==YQ==").err().unwrap_or_default();
        assert!(e.contains("byte 2 ('=')"), "{e}");
    }

    /// What the rules say of a text: accepted, and how many bytes it holds.
    fn expected(text: &[u8]) -> Option<usize> {
        let body = text
            .strip_suffix(b"==")
            .or_else(|| text.strip_suffix(b"="))
            .unwrap_or(text);
        let in_alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
        let padded = body.len() != text.len();
        (!(padded && text.len() % 4 != 0) && body.len() % 4 != 1 && body.iter().all(in_alphabet))
            .then_some(body.len() * 3 / 4)
    }

    proptest::proptest! {
        /// Any bytes, encoded padded or not, decode to themselves.
        #[test]
        fn round_trips(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            use ::base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
            use ::base64::Engine;
            for engine in [STANDARD, STANDARD_NO_PAD] {
                proptest::prop_assert_eq!(decode(&engine.encode(&bytes)), Ok(bytes.clone()));
            }
        }

        /// Any text of alphabet bytes, padding and a few others is accepted
        /// exactly when the rules say, with as many bytes as they say.
        #[test]
        fn accepts_what_the_rules_accept(text in "[A-Za-z0-9+/]{0,20}(=|==)?[A-Z=+ \n*-]{0,2}") {
            let got = decode(&text);
            proptest::prop_assert_eq!(got.as_ref().ok().map(Vec::len), expected(text.as_bytes()), "{:?}: {:?}", text, got);
        }
    }
}
