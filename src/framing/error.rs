use std::fmt;

/// Which of an AWS event-stream frame's two checksums failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CrcKind {
    /// The CRC32 of the 8-byte prelude (total length and headers length).
    Prelude,
    /// The CRC32 of the whole frame before its last 4 bytes.
    Message,
}

impl fmt::Display for CrcKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CrcKind::Prelude => "prelude",
            CrcKind::Message => "message",
        })
    }
}

/// What the framing layer refuses. Offsets count bytes from the decoder's
/// start (or its last `finish()` / `reset()`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Error {
    /// A line, an event or a frame crossed a limit of [`super::FramingLimits`].
    Limit {
        /// The limit's field name (`max_line_bytes`, `max_event_bytes`,
        /// `max_frame_bytes`).
        #[serde(with = "crate::statics")]
        limit: crate::statics::Name,
        /// The limit's value.
        max: usize,
        /// Where the oversized item starts.
        offset: u64,
        /// What crossed it (`SSE line`, `SSE event data`, …).
        #[serde(with = "crate::statics")]
        what: crate::statics::Name,
    },
    /// Bytes that are not UTF-8 where text is required.
    Utf8 {
        /// The first byte that is not valid UTF-8.
        offset: u64,
        /// What the text was (`SSE line`, `JSON line`, …).
        #[serde(with = "crate::statics")]
        what: crate::statics::Name,
        /// Where that text starts.
        start: u64,
    },
    /// The stream ended inside something unfinished.
    Truncated {
        /// Where the unfinished item starts.
        offset: u64,
        /// What it was, with details (`an AWS event-stream frame (20 of 144
        /// bytes)`).
        what: String,
    },
    /// An AWS event-stream checksum does not match the bytes.
    Crc {
        /// Which checksum.
        crc: CrcKind,
        /// Where the frame starts.
        offset: u64,
        /// The checksum the frame carries.
        expected: u32,
        /// The checksum of the bytes received.
        computed: u32,
    },
    /// An AWS event-stream frame whose structure is wrong (lengths that do
    /// not fit, an unknown header value type, a header running past its end).
    Malformed {
        /// Where the problem is: the frame's start or the bad header's start.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// JSON values (or a JSON array of events) whose structure is wrong where
    /// the framing can tell: text between values, a missing `,` or `]` in the
    /// array, nesting deeper than the parser's bound.
    Json {
        /// The offending byte (or the start of the value that nests too deep).
        offset: u64,
        /// What is wrong, and what was expected there.
        reason: String,
    },
    /// The first bytes are none of SSE, JSON lines or AWS event-stream.
    UnknownTransport {
        /// The byte that decided it.
        offset: u64,
        /// Its value.
        byte: u8,
    },
    /// An [`super::EventStreamMessage`] that the format cannot carry.
    Encode {
        /// Which field is out of range.
        reason: String,
    },
}

impl Error {
    /// The byte offset the error names, if it names one.
    #[must_use]
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Limit { offset, .. }
            | Error::Utf8 { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::Crc { offset, .. }
            | Error::Malformed { offset, .. }
            | Error::Json { offset, .. }
            | Error::UnknownTransport { offset, .. } => Some(*offset),
            Error::Encode { .. } => None,
        }
    }

    /// True for [`Error::Limit`].
    #[must_use]
    pub fn is_limit(&self) -> bool {
        matches!(self, Error::Limit { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Limit {
                limit,
                max,
                offset,
                what,
            } => write!(
                f,
                "the {what} starting at byte {offset} is larger than {limit} ({max} bytes); \
                 raise {limit} if the stream is genuine"
            ),
            Error::Utf8 {
                offset,
                what,
                start,
            } => write!(
                f,
                "invalid UTF-8 at byte {offset}, in the {what} starting at byte {start}; \
                 the stream must be UTF-8"
            ),
            Error::Truncated { offset, what } => write!(
                f,
                "the stream ended inside {what}, which started at byte {offset}; \
                 the response was cut short"
            ),
            Error::Crc {
                crc,
                offset,
                expected,
                computed,
            } => write!(
                f,
                "bad {crc} CRC32 in the AWS event-stream frame at byte {offset}: the frame says \
                 {expected:#010x}, its bytes give {computed:#010x}; the stream is corrupted or \
                 is not AWS event-stream"
            ),
            Error::Malformed { offset, reason } => {
                write!(
                    f,
                    "malformed AWS event-stream frame at byte {offset}: {reason}"
                )
            }
            Error::Json { offset, reason } => {
                write!(f, "malformed JSON stream at byte {offset}: {reason}")
            }
            Error::UnknownTransport { offset, byte } => write!(
                f,
                "cannot tell the stream's transport: byte {offset} is {byte:#04x}, which starts \
                 neither SSE (`data:`, `event:`, `id:`, `retry:`, `:`), JSON (`{{`, `[`) \
                 nor an AWS event-stream prelude"
            ),
            Error::Encode { reason } => {
                write!(f, "cannot encode the AWS event-stream message: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_offset_limit_and_problem() {
        let limit = Error::Limit {
            limit: "max_line_bytes",
            max: 10,
            offset: 42,
            what: "SSE line",
        };
        let text = limit.to_string();
        assert!(text.contains("byte 42") && text.contains("max_line_bytes") && text.contains("10"));
        assert!(limit.is_limit());
        assert_eq!(limit.offset(), Some(42));

        let crc = Error::Crc {
            crc: CrcKind::Message,
            offset: 7,
            expected: 1,
            computed: 2,
        };
        let text = crc.to_string();
        assert!(
            text.contains("message CRC32")
                && text.contains("byte 7")
                && text.contains("0x00000001")
        );
        assert!(!crc.is_limit());

        let utf8 = Error::Utf8 {
            offset: 9,
            what: "SSE line",
            start: 3,
        };
        assert!(
            utf8.to_string().contains("byte 9") && utf8.to_string().contains("starting at byte 3")
        );

        let unknown = Error::UnknownTransport {
            offset: 0,
            byte: b'<',
        };
        assert!(unknown.to_string().contains("0x3c"));
        assert_eq!(
            Error::Encode {
                reason: String::new()
            }
            .offset(),
            None
        );
    }
}
