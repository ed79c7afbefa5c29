//! A string read by comparison with the text a reader expects it to hold
//! (a call's arguments restated by a later event): where the text is that
//! string exactly as `serde_json` writes it, nothing is decoded, allocated or
//! checked as UTF-8 again.

use super::Scan;
use crate::providers::raw::plain_run;

/// Eight bytes of `b` from `at`, zeros past its end.
#[inline(always)]
fn eight(b: &[u8], at: usize) -> u64 {
    let mut w = [0_u8; 8];
    match b.get(at..at.saturating_add(8)) {
        Some(full) => w.copy_from_slice(full),
        None => {
            let rest = b.get(at..).unwrap_or_default();
            w.get_mut(..rest.len())
                .unwrap_or_default()
                .copy_from_slice(rest);
        }
    }
    u64::from_le_bytes(w)
}

/// Whether the `n` bytes of `b` from `at` are the first `n` of `held`:
/// up to eight compared as words, more as slices.
#[inline(always)]
fn same_run(b: &[u8], at: usize, held: &[u8], n: usize) -> bool {
    if n <= 8 {
        let mask = u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0);
        at + n <= b.len() && (eight(b, at) ^ eight(held, 0)) & mask == 0
    } else {
        b.get(at..at + n) == held.get(..n)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether `b` from `at` is the escape `serde_json` writes for the byte
/// `c` (`"`, `\` or a control character), and its length.
#[inline(always)]
fn escape_at(b: &[u8], at: usize, c: u8) -> Option<usize> {
    let short = match c {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0c => b'f',
        _ => {
            let hi = HEX.get(usize::from(c >> 4)).copied()?;
            let lo = HEX.get(usize::from(c & 15)).copied()?;
            let six = [b'\\', b'u', b'0', b'0', hi, lo];
            return (b.get(at..at + 6)? == six).then_some(6);
        }
    };
    (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&short)).then_some(2)
}

/// Where the text goes on after the closing quote of the string whose text
/// starts at `at` in `b`, when that text is `held` written as `serde_json`
/// writes it: each run of `held` up to a byte it must escape (found as
/// [`plain_run`] finds it, with SIMD past a few words) compared at once,
/// then that byte's one escape.
fn same_text(b: &[u8], mut at: usize, held: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        let rest = held.get(i..)?;
        let n = plain_run(rest).unwrap_or(rest.len());
        if !same_run(b, at, rest, n) {
            return None;
        }
        i += n;
        at += n;
        let Some(&c) = held.get(i) else {
            return (b.get(at) == Some(&b'"')).then_some(at + 1);
        };
        at += escape_at(b, at, c)?;
        i += 1;
    }
}

impl<'a> Scan<'a> {
    /// Takes the string value here when its text is `said` (a string's
    /// text, quotes included, that this scanner took before) byte for byte,
    /// and gives it: the same string. Otherwise `None`, and nothing is taken
    /// but the whitespace before it.
    pub(crate) fn string_as(&mut self, said: &str) -> Option<&'a str> {
        if self.next_token()? != b'"' {
            return None;
        }
        let start = self.at;
        let text = self.text.get(start..start.checked_add(said.len())?)?;
        if text != said {
            return None;
        }
        self.at = start + said.len();
        Some(text)
    }

    /// Takes the string value here when its text is exactly `held` as
    /// `serde_json` writes it (`"`, `\`, line feed, carriage return, tab,
    /// backspace and form feed as their two-character escapes, any other
    /// control character as `\u00xx` in lowercase, every other character as
    /// itself), and gives its text, quotes included: a string the typed
    /// decode reads as `held`. Otherwise `None`, and nothing is taken but the
    /// whitespace before it (any other spelling of the same string included:
    /// the caller decodes it instead).
    pub(crate) fn string_is(&mut self, held: &str) -> Option<&'a str> {
        if self.next_token()? != b'"' {
            return None;
        }
        let start = self.at;
        let end = same_text(self.bytes(), start + 1, held.as_bytes())?;
        self.at = end;
        self.text.get(start..end)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Scan;

    /// Strings of the characters that are written escaped, and of others.
    fn held() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                1 => Just('"'),
                1 => Just('\\'),
                1 => Just('/'),
                1 => Just('\n'),
                1 => (0_u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('x')),
                1 => Just('\u{7f}'),
                1 => Just('é'),
                1 => Just('✅'),
                1 => Just('😀'),
                8 => Just('a'),
                4 => Just('{'),
                4 => Just('b'),
            ],
            0..40,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    /// A JSON string spelling `s`: as `serde_json` writes it, or with some
    /// characters in other escapes (`\/`, `\u` in capitals or for any
    /// character).
    fn spelled(s: &str, odd: &[bool]) -> String {
        let mut out = String::from("\"");
        for (n, c) in s.chars().enumerate() {
            if odd.get(n).copied().unwrap_or(false) {
                let mut units = [0_u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04X}"));
                }
            } else if c == '/' && odd.get(n + 1).copied().unwrap_or(false) {
                out.push_str("\\/");
            } else {
                let one = serde_json::to_string(&c.to_string()).unwrap_or_default();
                out.push_str(one.get(1..one.len() - 1).unwrap_or_default());
            }
        }
        out.push('"');
        out
    }

    proptest! {
        /// Taken exactly when the text is the string as `serde_json` writes
        /// it, and then the typed decode reads `held`; else nothing taken.
        #[test]
        fn a_string_is_taken_as_held_only_when_it_is(
            other in held(),
            held in held(),
            // Which string is said: `other`, `held`, or `held` with one
            // character changed.
            which in 0_usize..3,
            changed in 0_usize..40,
            odd in proptest::collection::vec(proptest::bool::weighted(0.1), 40),
            after in prop_oneof![Just(""), Just(","), Just(" }"), Just("\"")],
            cut in 0_usize..8,
        ) {
            let said: String = match which {
                0 => other,
                1 => held.clone(),
                _ => held
                    .chars()
                    .enumerate()
                    .map(|(n, c)| if n == changed { if c == 'z' { 'y' } else { 'z' } } else { c })
                    .collect(),
            };
            let mut spelled = spelled(&said, &odd);
            if cut > 0 && cut < spelled.len() && spelled.is_char_boundary(spelled.len() - cut) {
                spelled.truncate(spelled.len() - cut);
            }
            let text = format!(" {spelled}{after}");
            let mut p = Scan::new(&text);
            let taken = p.string_is(&held);
            let canonical = serde_json::to_string(&held).unwrap_or_default();
            let is_canonical = text.get(1..).is_some_and(|t| t.starts_with(&canonical));
            prop_assert_eq!(taken.is_some(), is_canonical, "{:?} as {:?}", text, held);
            match taken {
                Some(quoted) => {
                    prop_assert_eq!(quoted, canonical.as_str());
                    prop_assert_eq!(serde_json::from_str::<String>(quoted).ok(), Some(held));
                    prop_assert_eq!(p.at, 1 + quoted.len());
                }
                None => prop_assert_eq!(p.at, 1),
            }
        }
    }

    /// The usual case: a call's arguments restated as the deltas built them.
    #[test]
    fn restated_arguments_are_taken_and_others_left() {
        let held = "{\"q\":\"a/b\\tc\u{1}é\"}";
        let text = serde_json::to_string(held).unwrap_or_default();
        assert_eq!(Scan::new(&text).string_is(held), Some(text.as_str()));
        for other in [
            text.replace("a/b", "a\\/b"),
            text.replace("\\u0001", "\\u0002"),
            text.replace("\\u0001", "\\u0001x"),
            text.replace("a/b", "a/c"),
            text.replace('é', "\\u00e9"),
            format!("{}\"", text.get(..text.len() - 2).unwrap_or_default()),
            "null".to_owned(),
        ] {
            assert_eq!(Scan::new(&other).string_is(held), None, "{other}");
        }
        // A run longer than a word, compared as a slice.
        let long = "{\"note\":\"the health check timed out after 30 seconds\"}";
        let text = serde_json::to_string(long).unwrap_or_default();
        assert_eq!(Scan::new(&text).string_is(long), Some(text.as_str()));
        let other = text.replace("health", "wealth");
        assert_eq!(Scan::new(&other).string_is(long), None, "{other}");
    }
}
