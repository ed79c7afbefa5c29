//! The seed contract: accumulators keyed by the provider's index.
//!
//! Every accumulator keys its entries by an `i64` in a `BTreeMap`, never a slice,
//! so any index a provider sends (negative, sparse, huge) is an opaque key that
//! can neither panic nor make us allocate in proportion to its value. Output is
//! always in ascending index order. Every accumulator takes limits; a fragment
//! that would cross one is rejected whole and what came before stays readable.

mod images;
mod indexed;
mod text;
mod thinking;
mod tool_uses;

use std::fmt;

pub use images::Images;
pub use indexed::Indexed;
pub use text::Appender;
pub use thinking::{Thinking, ThinkingFragment};
pub use tool_uses::{ToolUseLimits, ToolUses};

/// Default bound on the number of distinct indexes one accumulator holds.
pub const DEFAULT_MAX_ENTRIES: usize = 4096;
/// Default bound on one tool call's input: the wire codec's block limit.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;
/// Default bound on all bytes one accumulator takes in over its life.
pub const DEFAULT_MAX_TOTAL_BYTES: usize = 64 * 1024 * 1024;
/// Default bound on all bytes an image accumulator takes in (base64 is large).
pub const DEFAULT_MAX_IMAGE_BYTES: usize = 256 * 1024 * 1024;

/// What an accumulator refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A fragment would cross a limit; it was rejected and nothing changed.
    Limit {
        /// The limit's name, as the constructor spells it (`max_calls`, …).
        limit: &'static str,
        /// The limit's value.
        max: usize,
        /// What the fragment would have made the count.
        would_be: usize,
        /// Which entry the fragment was for (`tool call at index 3`, `text`).
        target: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Limit {
                limit,
                max,
                would_be,
                target,
            } => write!(
                f,
                "{target}: the fragment would make {limit} {would_be}, over the limit of {max}; \
                 it was rejected and everything before it is kept"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A running byte count that refuses to pass `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Budget {
    pub(crate) used: usize,
    pub(crate) max: usize,
    #[serde(with = "crate::statics")]
    pub(crate) name: crate::statics::Name,
}

impl Budget {
    pub(crate) const fn new(name: &'static str, max: usize) -> Self {
        Self { used: 0, max, name }
    }

    /// What the count would become after `more` bytes, or the limit error.
    pub(crate) fn check(
        &self,
        more: usize,
        target: impl FnOnce() -> String,
    ) -> Result<usize, Error> {
        match self.used.checked_add(more) {
            Some(n) if n <= self.max => Ok(n),
            other => Err(Error::Limit {
                limit: self.name,
                max: self.max,
                would_be: other.unwrap_or(usize::MAX),
                target: target(),
            }),
        }
    }
}

/// The error for a fragment that would open one entry too many.
pub(crate) fn too_many(limit: &'static str, max: usize, target: String) -> Error {
    Error::Limit {
        limit,
        max,
        would_be: max.saturating_add(1),
        target,
    }
}
