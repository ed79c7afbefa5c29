//! The numbers the scanner skips: checked against the JSON grammar, and those
//! a float may not hold noted as they are passed (an exponent, or 300 digits
//! in a row: what `body::may_overflow` finds in a text), so that a reader
//! that refuses them needs no second pass over what it skipped.

use super::Scan;

/// Digits in a row from which a number is taken for one a float may not
/// hold (as `body::may_overflow` counts them).
const WIDE_RUN: usize = 300;

impl<'a> Scan<'a> {
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    pub(super) fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.wide = true;
            self.at += 1;
            if matches!(self.peek()?, b'+' | b'-') {
                self.at += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        Some(())
    }

    fn digits(&mut self) {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.wide |= self.at - start >= WIDE_RUN;
    }

    /// [`Scan::skip`], giving up also on a value that holds a number a
    /// float may not hold (what `!may_overflow` of its raw text answers).
    pub(crate) fn skip_narrow(&mut self) -> Option<()> {
        self.wide = false;
        self.skip()?;
        (!self.wide).then_some(())
    }

    /// [`Scan::raw`], giving up as [`Scan::skip_narrow`] does.
    pub(crate) fn raw_narrow(&mut self) -> Option<&'a str> {
        self.wide = false;
        let raw = self.raw()?;
        (!self.wide).then_some(raw)
    }

    /// [`Scan::compact`], giving up as [`Scan::skip_narrow`] does.
    pub(crate) fn compact_narrow(&mut self) -> Option<String> {
        self.wide = false;
        let compact = self.compact()?;
        (!self.wide).then_some(compact)
    }
}

#[cfg(test)]
mod tests {
    use super::Scan;
    use crate::providers::body::may_overflow;

    /// A value is refused as wide exactly when `may_overflow` finds its text
    /// holds a number a float may not hold (the second pass it replaces).
    #[test]
    fn narrow_is_what_may_overflow_passes() {
        let long = "9".repeat(300);
        let almost = "9".repeat(299);
        let values = [
            r#"{"a":1,"b":[2.5,-3,0],"c":"1e400"}"#.to_owned(),
            r#"{"n":1e4}"#.to_owned(),
            r#"[0.5E-3]"#.to_owned(),
            r#"-0e0"#.to_owned(),
            r#"{"t":true,"f":false,"n":null}"#.to_owned(),
            format!(r#"{{"n":{long}}}"#),
            format!(r#"{{"n":{almost}}}"#),
            format!(r#"{{"n":1.{long}}}"#),
            format!(r#"{{"n":1.{almost}}}"#),
            format!(r#"{{"s":"{long}"}}"#),
            format!("[{almost}, {almost}]"),
        ];
        for v in &values {
            let skipped = Scan::new(v).skip_narrow();
            assert_eq!(skipped.is_some(), !may_overflow(v), "{v}");
            let raw = Scan::new(v).raw_narrow();
            assert_eq!(raw.is_some(), !may_overflow(v), "{v}");
            let compact = Scan::new(v).compact_narrow();
            assert_eq!(compact.is_some(), !may_overflow(v), "{v}");
        }
        // A wide number met before does not refuse the next value.
        let mut p = Scan::new(r#"1e5 {"a":1}"#);
        assert!(p.skip().is_some());
        assert!(p.skip_narrow().is_some());
    }
}
