//! Telling the transport from a stream's first bytes.

use super::BOM;

/// The three transports LLM providers stream over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Transport {
    /// `text/event-stream`.
    Sse,
    /// JSON: newline-delimited (`application/x-ndjson`, `application/jsonl`),
    /// or documents pretty-printed or run together (`application/json`: a
    /// whole response body), or one JSON array whose elements are the events
    /// (a stream that starts with `[`). [`super::JsonLinesDecoder`] reads all of them.
    JsonLines,
    /// AWS `application/vnd.amazon.eventstream` binary frames.
    EventStream,
}

/// What the first bytes say, with the difference [`detect`] folds away
/// between "not yet" and "never".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// The transport is known.
    Transport(Transport),
    /// More bytes are needed to decide.
    NeedMore,
    /// No transport starts like this: `byte` at `offset` decided it.
    Unrecognized {
        /// Offset of the deciding byte.
        offset: usize,
        /// Its value.
        byte: u8,
    },
}

/// The transport the first bytes of a stream show, or `None` while they
/// cannot decide (too few bytes, or bytes no transport starts with: see
/// [`classify`] to tell these apart).
///
/// A UTF-8 BOM and leading ASCII whitespace are skipped; then `{` is JSON
/// values and `[` a JSON array of events (both [`Transport::JsonLines`]), and `data:`, `event:`, `id:`, `retry:` or `:` is SSE (a field
/// name may also end the line, as SSE allows). A first byte that is neither
/// printable ASCII nor whitespace starts a binary AWS event-stream frame when
/// its prelude is plausible: total length (bytes 0..4, big-endian) at least
/// 16 and headers length (bytes 4..8) at most the total length less 16.
#[must_use]
pub fn detect(first_bytes: &[u8]) -> Option<Transport> {
    match classify(first_bytes) {
        Detection::Transport(transport) => Some(transport),
        Detection::NeedMore | Detection::Unrecognized { .. } => None,
    }
}

/// [`detect`], telling "not enough bytes yet" from "not a known transport".
#[must_use]
pub fn classify(first_bytes: &[u8]) -> Detection {
    classify_from(first_bytes, 0).0
}

const SSE_FIELDS: [&[u8]; 4] = [b"data", b"event", b"id", b"retry"];

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// [`classify`], resuming at `resume`: a position an earlier call on a prefix
/// of the same bytes returned with [`Detection::NeedMore`], so that leading
/// whitespace arriving a byte at a time is scanned once.
pub(crate) fn classify_from(bytes: &[u8], resume: usize) -> (Detection, usize) {
    let mut pos = resume;
    if pos == 0 {
        let Some(&first) = bytes.first() else {
            return (Detection::NeedMore, 0);
        };
        if bytes.len() < BOM.len() && BOM.starts_with(bytes) {
            return (Detection::NeedMore, 0);
        }
        if bytes.starts_with(BOM) {
            pos = BOM.len();
        } else if !(first.is_ascii_graphic() || is_space(first)) {
            return (binary_prelude(bytes), 0);
        }
    }
    let rest = bytes.get(pos..).unwrap_or_default();
    let spaces = rest.iter().take_while(|b| is_space(**b)).count();
    pos = pos.saturating_add(spaces);
    let rest = rest.get(spaces..).unwrap_or_default();
    let Some(&first) = rest.first() else {
        return (Detection::NeedMore, pos);
    };
    if matches!(first, b'{' | b'[') {
        return (Detection::Transport(Transport::JsonLines), pos);
    }
    if first == b':' {
        return (Detection::Transport(Transport::Sse), pos);
    }
    let mut could_be = false;
    for field in SSE_FIELDS {
        match rest.strip_prefix(field) {
            Some([b':' | b'\r' | b'\n', ..]) => return (Detection::Transport(Transport::Sse), pos),
            Some([]) => could_be = true,
            _ => could_be |= field.starts_with(rest),
        }
    }
    if could_be {
        return (Detection::NeedMore, pos);
    }
    (
        Detection::Unrecognized {
            offset: pos,
            byte: first,
        },
        pos,
    )
}

fn binary_prelude(bytes: &[u8]) -> Detection {
    let (Some(total), Some(headers)) = (be_u32(bytes, 0), be_u32(bytes, 4)) else {
        return Detection::NeedMore;
    };
    if total >= 16 && headers <= total.saturating_sub(16) {
        Detection::Transport(Transport::EventStream)
    } else {
        Detection::Unrecognized {
            offset: 0,
            byte: bytes.first().copied().unwrap_or_default(),
        }
    }
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let chunk: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines() {
        assert_eq!(detect(b"{"), Some(Transport::JsonLines));
        assert_eq!(detect(b"[{\"candidates\""), Some(Transport::JsonLines));
        assert_eq!(detect(b"\xEF\xBB\xBF \r\n\t{}"), Some(Transport::JsonLines));
    }

    #[test]
    fn sse() {
        for input in [
            b"data: {}".as_slice(),
            b"data:{}",
            b"event: ping",
            b"id: 1",
            b"retry: 100",
            b": comment",
            b":",
            b"\n\ndata:",
            b"\xEF\xBB\xBFevent:",
            b"data\n",
            b"data\r\n",
        ] {
            assert_eq!(detect(input), Some(Transport::Sse), "{input:?}");
        }
    }

    #[test]
    fn too_few_bytes_is_none() {
        for input in [
            b"".as_slice(),
            b"\xEF",
            b"\xEF\xBB",
            b"\xEF\xBB\xBF",
            b"   \n",
            b"d",
            b"dat",
            b"data",
            b"ev",
            b"i",
            b"id",
            b"r",
            b"retr",
            b"\0\0\0",
            b"\0\0\0\x90\0\0\0",
        ] {
            assert_eq!(classify(input), Detection::NeedMore, "{input:?}");
            assert_eq!(detect(input), None);
        }
    }

    #[test]
    fn event_stream_prelude() {
        assert_eq!(
            detect(b"\0\0\0\x90\0\0\0\x52"),
            Some(Transport::EventStream)
        );
        assert_eq!(detect(b"\0\0\0\x10\0\0\0\0"), Some(Transport::EventStream));
        // total under 16, or headers that cannot fit
        assert_eq!(
            classify(b"\0\0\0\x0F\0\0\0\0"),
            Detection::Unrecognized { offset: 0, byte: 0 }
        );
        assert_eq!(
            classify(b"\0\0\0\x20\0\0\0\x11"),
            Detection::Unrecognized { offset: 0, byte: 0 }
        );
    }

    #[test]
    fn unknown_starts() {
        assert_eq!(
            classify(b"<html>"),
            Detection::Unrecognized {
                offset: 0,
                byte: b'<'
            }
        );
        assert_eq!(
            classify(b"\n\nhello"),
            Detection::Unrecognized {
                offset: 2,
                byte: b'h'
            }
        );
        assert_eq!(
            classify(b"dato:"),
            Detection::Unrecognized {
                offset: 0,
                byte: b'd'
            }
        );
        assert_eq!(
            classify(b"data :"),
            Detection::Unrecognized {
                offset: 0,
                byte: b'd'
            }
        );
        assert_eq!(
            classify(b"\xEF\xBB\xBF\0\0\0\x20\0\0\0\0"),
            Detection::Unrecognized { offset: 3, byte: 0 }
        );
        assert_eq!(detect(b"Data: x"), None);
    }

    #[test]
    fn resuming_after_whitespace_agrees_with_a_fresh_scan() {
        let input = b"\xEF\xBB\xBF \n \r\n\tevent: x";
        let mut resume = 0;
        for end in 0..=input.len() {
            let prefix = input.get(..end).unwrap_or_default();
            let (detection, next) = classify_from(prefix, resume);
            assert_eq!(detection, classify(prefix), "prefix of {end}");
            resume = next;
        }
    }
}
