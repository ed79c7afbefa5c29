//! The fast path and the memo of a Bedrock payload against the general
//! decode, for the tests that compare them.

use super::{scan, scan_payload, Payload};

/// See [`scan::memo_parts`].
pub(in crate::providers) fn memo_parts(template: &str) -> Option<(String, String)> {
    scan::memo_parts::<Payload<'_>>(template)
}

/// See [`scan::memo_agrees`].
pub(in crate::providers) fn memo_agrees(template: &str, text: &str) -> Result<bool, String> {
    scan::memo_agrees::<Payload<'_>>(template, text)
}

/// After the fast path read `template`, the memo of `bytes` unchecked
/// ([`scan::Memo::fill_bytes`]) against the memo of the same bytes checked
/// whole as UTF-8 first: `Ok(true)` when both take them and give the same,
/// `Ok(false)` when neither does, `Err` otherwise.
pub(in crate::providers) fn memo_bytes_agree(template: &str, bytes: &[u8]) -> Result<bool, String> {
    let mut memo = scan::Memo::default();
    scan::scan_text(&mut memo, template, &mut Payload::default());
    let checked = std::str::from_utf8(bytes).ok().and_then(|t| memo.fill(t));
    let unchecked = memo.fill_bytes(bytes);
    // With a buffer lent that holds a string of before.
    let mut spare = String::from("before");
    let lent = memo.fill_bytes_in(bytes, Some(&mut spare));
    if lent != unchecked {
        return Err(format!("lent {lent:?}, unchecked {unchecked:?}"));
    }
    match (checked, unchecked) {
        (None, None) => Ok(false),
        (Some(a), Some(b)) if a == b => Ok(true),
        (a, b) => Err(format!("checked whole {a:?}, unchecked {b:?}")),
    }
}

/// See [`scan::fast_path_agrees`].
pub(in crate::providers) fn fast_path_agrees(text: &str) -> Result<bool, String> {
    scan::fast_path_agrees(scan_payload, text)
}
