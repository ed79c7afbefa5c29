//! Best-effort values of incomplete JSON, for live display of tool arguments
//! while they stream in.
//!
//! [`PartialJson`] is an incremental parser: a byte-at-a-time state machine
//! with an explicit stack that keeps the tree built so far and only ever
//! looks at new bytes. Feeding `n` bytes in any number of fragments costs
//! `O(n)` in total; nothing is re-parsed from the start (the official SDKs
//! re-parse the whole buffer on every fragment, which is quadratic in the
//! argument size). [`PartialJson::value`] assembles the tree so far in time
//! proportional to its size, independent of how the bytes were fragmented.
//!
//! What is shown for a piece that is still arriving:
//!
//! - an unfinished string shows its text so far when
//!   [`PartialOptions::partial_strings`] is set, without any held-back bytes
//!   (an incomplete UTF-8 sequence, a `\uXXXX` escape still being written, the
//!   first half of a surrogate pair waiting for its second half);
//! - an unfinished number shows the longest prefix of its text that is itself
//!   a valid number (`12` for `12.`, `1` for `1e+`, nothing for `-`);
//! - an unfinished keyword (`tr`, `nu`) shows nothing;
//! - an object member appears only once its value shows something: a key
//!   still being written, or a key whose value has not started, is not shown.
//!
//! A duplicate object key replaces the earlier value in place (the last value
//! wins, at the first key's position), as `JSON.parse` and Python's `json` do.
//! A lone UTF-16 surrogate escape is shown as U+FFFD. The strict parser used at
//! the tool boundary ([`crate::validate::parse_strict`]) shares this state
//! machine but rejects both.
//!
//! This is for rendering only; a tool is executed on the strict parse of the
//! complete input, never on a partial value.

mod parser;

#[cfg(test)]
pub(crate) mod tests;

use std::fmt;

pub use parser::PartialJson;

/// Default bound on nesting depth.
pub const DEFAULT_MAX_DEPTH: usize = 128;
/// Default bound on the bytes one parser takes in.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;
/// Hard ceiling on [`PartialOptions::max_depth`]: larger settings are lowered
/// to it, so that cloning, converting and dropping a tree (which recurse over
/// its depth) stay far from any thread's stack size.
pub const MAX_DEPTH_CEILING: usize = 1024;

/// How a [`PartialJson`] parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartialOptions {
    /// Show an unfinished string's text so far (default `true`); when false,
    /// a string appears only once its closing quote has arrived.
    pub partial_strings: bool,
    /// Deepest nesting of arrays and objects accepted (default 128, at most
    /// [`MAX_DEPTH_CEILING`]); one level deeper is an [`Error::Limit`].
    pub max_depth: usize,
    /// Most bytes accepted over the parser's life (default 64 MiB); a fragment
    /// that would cross it is rejected whole with an [`Error::Limit`].
    pub max_bytes: usize,
}

impl Default for PartialOptions {
    fn default() -> Self {
        Self {
            partial_strings: true,
            max_depth: DEFAULT_MAX_DEPTH,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A JSON value as far as it has arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum PartialValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number's text exactly as received: the whole number, or (while it is
    /// still arriving) its longest prefix that is a valid number. Never `-`,
    /// `1.` or `1e`.
    Number(String),
    /// A string, complete or (with `partial_strings`) its text so far.
    String(String),
    /// An array's elements so far.
    Array(Vec<PartialValue>),
    /// An object's members so far, in the order their keys first appeared.
    Object(Vec<(String, PartialValue)>),
}

impl PartialValue {
    /// The value as a `serde_json::Value`. Numbers are converted as
    /// `serde_json` parses them; a number `serde_json` cannot represent
    /// (such as `1e400`) becomes `null`. Object keys follow `serde_json`'s map
    /// order (sorted, unless its `preserve_order` feature is on).
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            PartialValue::Null => Value::Null,
            PartialValue::Bool(b) => Value::Bool(*b),
            PartialValue::Number(text) => text
                .parse::<serde_json::Number>()
                .map_or(Value::Null, Value::Number),
            PartialValue::String(s) => Value::String(s.clone()),
            PartialValue::Array(items) => {
                Value::Array(items.iter().map(PartialValue::to_json).collect())
            }
            PartialValue::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// [`to_json`](Self::to_json), taking the value: its strings and keys are
    /// moved, not copied.
    #[must_use]
    pub fn into_json(self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            PartialValue::Null => Value::Null,
            PartialValue::Bool(b) => Value::Bool(b),
            PartialValue::Number(text) => text
                .parse::<serde_json::Number>()
                .map_or(Value::Null, Value::Number),
            PartialValue::String(s) => Value::String(s),
            PartialValue::Array(items) => {
                Value::Array(items.into_iter().map(PartialValue::into_json).collect())
            }
            PartialValue::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, v.into_json()))
                    .collect(),
            ),
        }
    }
}

/// A container still open, borrowed from a [`PartialJson`] (see
/// [`PartialJson::open_containers`]). Its finished children come first; the
/// child being built (the next open container, or the [`OpenScalar`]) is not
/// among them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpenContainer<'a> {
    /// An array and its finished elements.
    Array {
        /// Unique to this container over the parser's life.
        serial: u64,
        /// The finished elements.
        items: &'a [PartialValue],
    },
    /// An object and its finished members.
    Object {
        /// Unique to this container over the parser's life.
        serial: u64,
        /// The finished members, in the order their keys first appeared.
        members: &'a [(String, PartialValue)],
        /// Positions of members replaced by a duplicate key, in order (a
        /// position may appear more than once).
        replaced: &'a [usize],
        /// The key whose value is being built, and the position of the earlier
        /// member it replaces (a duplicate key), if any. The value shows under
        /// it once something of it is showable.
        key: Option<(&'a str, Option<usize>)>,
    },
}

impl OpenContainer<'_> {
    /// The container's serial number.
    #[must_use]
    pub fn serial(&self) -> u64 {
        match self {
            OpenContainer::Array { serial, .. } | OpenContainer::Object { serial, .. } => *serial,
        }
    }
}

/// What is shown of a scalar still arriving (see [`PartialJson::open_scalar`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenScalar<'a> {
    /// An unfinished string's text so far.
    String(&'a str),
    /// The longest prefix of an unfinished number that is a valid number.
    Number(&'a str),
}

/// Why a [`PartialJson`] stopped. Errors are sticky: once a parser has
/// failed, every later `feed` returns the same error, and the value parsed
/// before the failure stays readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input is not JSON (or not UTF-8) at byte `offset`, counted from the
    /// first byte ever fed.
    Syntax {
        /// Byte offset of the offending byte.
        offset: usize,
        /// What was wrong, for a human.
        message: String,
    },
    /// A limit was crossed.
    Limit {
        /// The option's name: `max_depth` or `max_bytes`.
        limit: &'static str,
        /// The limit's value.
        max: usize,
        /// Byte offset where it was crossed (for `max_bytes`, the first byte
        /// of the rejected fragment).
        offset: usize,
    },
}

impl Error {
    /// Byte offset of the failure, counted from the first byte ever fed.
    #[must_use]
    pub fn offset(&self) -> usize {
        match self {
            Error::Syntax { offset, .. } | Error::Limit { offset, .. } => *offset,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Syntax { offset, message } => {
                write!(f, "invalid JSON at byte {offset}: {message}")
            }
            Error::Limit {
                limit: "max_depth",
                max,
                offset,
            } => write!(
                f,
                "nesting deeper than {max} levels at byte {offset} (limit max_depth); \
                 parsing stopped and the value so far is kept"
            ),
            Error::Limit { limit, max, offset } => write!(
                f,
                "input longer than {max} bytes: the fragment starting at byte {offset} \
                 was rejected (limit {limit}); parsing stopped and the value so far is kept"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// One-shot form of [`PartialJson`]: the best-effort value of `text`, or
/// `None` when no value has started (or nothing of it is showable yet).
///
/// # Errors
///
/// [`Error::Syntax`] when `text` is not a prefix of valid JSON (followed by
/// whitespace only), [`Error::Limit`] when it is too deep or too long.
pub fn parse_partial(text: &[u8], opts: PartialOptions) -> Result<Option<PartialValue>, Error> {
    let mut parser = PartialJson::new(opts);
    parser.feed(text)?;
    Ok(parser.value())
}
