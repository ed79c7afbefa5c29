use std::fmt;

/// Which event an error is about: its ordinal number in the stream (1-based,
/// counting every event fed, skipped ones included) and its type as the event
/// names itself (`content_block_delta`, `response.failed`, the SSE event name,
/// or `chunk` for dialects whose events carry no type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef {
    pub ordinal: u64,
    pub event_type: String,
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.event_type.is_empty() {
            write!(f, "event #{}", self.ordinal)
        } else {
            write!(f, "event #{} ({})", self.ordinal, self.event_type)
        }
    }
}

/// What kind of decoding problem an event had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeKind {
    /// Not JSON at all, or cut short.
    MalformedJson,
    /// JSON, but not an object.
    NotAnObject,
    /// A field of the wrong type (`arguments: 5`), or a value out of range.
    WrongType,
    /// A field whose value breaks the dialect's rules (a bad Gemini `jsonPath`).
    BadValue,
}

/// Everything an [`Assembler`](super::Assembler) refuses. After any error,
/// everything accumulated before the offending event (or fragment) stays readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A dialect name that is not one of the known ones.
    UnknownDialect { name: String },
    /// An event that could not be read.
    Decode {
        event: EventRef,
        kind: DecodeKind,
        detail: String,
    },
    /// The provider reported an error in the stream (Anthropic `error`,
    /// Responses `error` / `response.failed`, an `{"error": …}` chunk, a
    /// Bedrock exception event).
    Provider {
        event: EventRef,
        error_type: String,
        message: String,
    },
    /// A limit would be crossed; the offending fragment was rejected.
    Limit {
        event: EventRef,
        limit: &'static str,
        max: usize,
        would_be: usize,
        target: String,
    },
    /// `auto` could not tell the dialect from an event that fits none.
    UnknownShape { event: EventRef },
    /// An event fed after `close()`.
    Closed { event: EventRef },
}

impl Error {
    /// The event this error is about, if any.
    #[must_use]
    pub fn event(&self) -> Option<&EventRef> {
        match self {
            Error::UnknownDialect { .. } => None,
            Error::Decode { event, .. }
            | Error::Provider { event, .. }
            | Error::Limit { event, .. }
            | Error::UnknownShape { event }
            | Error::Closed { event } => Some(event),
        }
    }
}

impl Error {
    /// The event this error is about, to rename it (an event made from a
    /// whole response body names the body too).
    pub(crate) fn event_mut(&mut self) -> Option<&mut EventRef> {
        match self {
            Error::UnknownDialect { .. } => None,
            Error::Decode { event, .. }
            | Error::Provider { event, .. }
            | Error::Limit { event, .. }
            | Error::UnknownShape { event }
            | Error::Closed { event } => Some(event),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownDialect { name } => write!(
                f,
                "unknown provider {name:?}: expected one of \"openai-chat\", \"openai-responses\", \
                 \"anthropic\", \"bedrock\", \"gemini\", \"cohere\" or \"auto\""
            ),
            Error::Decode { event, kind, detail } => {
                let what = match kind {
                    DecodeKind::MalformedJson => "is not valid JSON",
                    DecodeKind::NotAnObject => "is not a JSON object",
                    DecodeKind::WrongType => "has a field of the wrong type",
                    DecodeKind::BadValue => "has an invalid value",
                };
                write!(f, "{event} {what}: {detail}")
            }
            Error::Provider {
                event,
                error_type,
                message,
            } => {
                if error_type.is_empty() {
                    write!(f, "{event}: the provider reported an error: {message}")
                } else {
                    write!(f, "{event}: the provider reported an error ({error_type}): {message}")
                }
            }
            Error::Limit {
                event,
                limit,
                max,
                would_be,
                target,
            } => write!(
                f,
                "{event}: {target}: the fragment would make {limit} {would_be}, over the limit of {max}; \
                 it was rejected and everything before it is kept"
            ),
            Error::UnknownShape { event } => write!(
                f,
                "{event}: cannot tell the provider from this event (provider \"auto\"); \
                 name the provider explicitly"
            ),
            Error::Closed { event } => {
                write!(f, "{event}: the stream was already closed; start a new Assembler")
            }
        }
    }
}

impl std::error::Error for Error {}
