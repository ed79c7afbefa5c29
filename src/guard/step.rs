//! What the guard gives: where a response stands, why it was blocked, what one
//! read releases, and the guard's own bounds.

use super::inflate::InflateLimits;
use crate::framing::FramingLimits;

/// Where a guarded response stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still arriving.
    Open,
    /// Ended, every call checked and passed, every message complete.
    Passed,
    /// Blocked: see [`Guard::blocked`](super::Guard::blocked).
    Blocked,
    /// Ended, released whole without a check: empty, or no dialect answers in
    /// it (see [`Guard::unchecked_reason`](super::Guard::unchecked_reason)).
    Unchecked,
}

impl Outcome {
    /// The outcome as records spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Open => "open",
            Outcome::Passed => "passed",
            Outcome::Blocked => "blocked",
            Outcome::Unchecked => "unchecked",
        }
    }
}

/// Why a response was blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A call failed the check.
    InvalidCall,
    /// A message with calls ended without a normal end (cut, `length`, an
    /// error), or the stream was cut: its calls may be truncated.
    Incomplete,
    /// Bytes or an event the guard cannot read or apply (framing, JSON, the
    /// protocol), or events before the first one a dialect reads.
    Unreadable,
    /// A limit of the assembler, the framing or the guard.
    Limit,
    /// A content coding the guard cannot decode within its bounds.
    Encoding,
    /// Clients may read the response otherwise than the guard, or than one
    /// another ([`Assembler::divergence`](crate::providers::Assembler::divergence)): which calls they take cannot be
    /// told.
    Ambiguous,
}

impl Cause {
    /// The cause as records spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Cause::InvalidCall => "invalid-call",
            Cause::Incomplete => "incomplete",
            Cause::Unreadable => "unreadable",
            Cause::Limit => "limit",
            Cause::Encoding => "encoding",
            Cause::Ambiguous => "ambiguous",
        }
    }
}

/// A blocked response: why, and how to end it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub cause: Cause,
    /// One line, naming the call (id and name) and why.
    pub reason: String,
    /// The call concerned, when one is.
    pub choice: Option<i64>,
    pub call_id: Option<String>,
    pub tool_name: Option<String>,
    /// The bytes that end the stream after what was released, in the
    /// provider's own error shape (an SSE error event, an event-stream
    /// exception frame, an error line or array element).
    pub tail: Vec<u8>,
    /// A whole error response in the provider's shape, for when nothing of
    /// the body was released yet: its status, headers and JSON body.
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What one read (or the end) gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// The bytes that may be forwarded now, in order.
    pub forward: Vec<u8>,
    /// `forward` is exactly the bytes of the read fed (nothing was held
    /// before it, all of it went out, and the body is not compressed), so a
    /// caller that keeps the read may send it instead, without comparing.
    pub whole_read: bool,
    /// Set on the step that blocked the response (forward its `forward`, then
    /// the tail, and nothing else).
    pub blocked: Option<Blocked>,
}

/// Bounds of the guard itself (the assembler's and the framing's apply too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardLimits {
    /// Bytes held back at once (an event not yet whole, or a JSON body).
    pub max_held_bytes: usize,
    /// Bytes of messages rebuilt to check their calls, in all (each check reads
    /// its message whole: a stream of thousands of calls would otherwise cost
    /// time quadratic in its size).
    pub max_check_bytes: usize,
    /// The bounds on a compressed body.
    pub inflate: InflateLimits,
}

impl Default for GuardLimits {
    fn default() -> Self {
        let framing = FramingLimits::default();
        Self {
            max_held_bytes: framing
                .max_event_bytes
                .saturating_add(framing.max_line_bytes),
            max_check_bytes: 256 << 20,
            inflate: InflateLimits::default(),
        }
    }
}
