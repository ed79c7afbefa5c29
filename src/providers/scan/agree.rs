//! The fast paths against the general decode, for the tests that compare
//! them (any dialect's scanner).

use std::fmt::Debug;

use serde::Deserialize;

/// A scanner against the general decode: `Ok(true)` when `scan` took `text`
/// (filling a fresh `E`) and gave exactly what the typed `serde_json` decode
/// gives, `Ok(false)` when it left `text` to the general path, `Err` (both
/// results) otherwise.
pub(crate) fn fast_path_agrees<'a, E, R>(
    scan: impl FnOnce(&'a str, &mut E) -> Option<R>,
    text: &'a str,
) -> Result<bool, String>
where
    E: Default + PartialEq + Debug + Deserialize<'a>,
{
    let mut fast = E::default();
    if scan(text, &mut fast).is_none() {
        return Ok(false);
    }
    match serde_json::from_str::<E>(text) {
        Ok(general) if general == fast => Ok(true),
        Ok(general) => Err(format!("fast path {fast:?}, general path {general:?}")),
        Err(e) => Err(format!("fast path {fast:?}, general path refuses: {e}")),
    }
}
