//! The usual event read whole, without going line by line.
//!
//! Nearly every event of a provider's stream has one shape: an optional
//! `event: NAME` line, one `data: TEXT` line, a blank line, each ended by LF.
//! When such an event lies whole in the pushed bytes and the decoder holds
//! nothing of an event, it is found with two `memchr` and handed on borrowed,
//! with exactly what the line-by-line reading would give. Anything else (CR,
//! comments, `id:`, several `data:` lines, no space after the colon, bytes that
//! are not UTF-8, a line or data over its bound, an event cut by the end of
//! the read) is left to that reading, which also gives its errors.

use memchr::{memchr2, memmem};

use super::{SseDecoder, SseEventRef};
use crate::framing::{advance, Checked};

const EVENT: &[u8] = b"event: ";
const DATA: &[u8] = b"data: ";

/// The length (LF excluded) of the line at the start of `rest` when it
/// begins with `prefix`, ends with LF (no CR before it) and is at most `max`
/// bytes long.
#[inline]
fn lf_line(rest: &[u8], prefix: &[u8], max: usize) -> Option<usize> {
    let after = rest.strip_prefix(prefix)?;
    let end = memchr2(b'\n', b'\r', after)?;
    if after.get(end) != Some(&b'\n') {
        return None;
    }
    let len = prefix.len().saturating_add(end);
    (len <= max).then_some(len)
}

/// Where the line-by-line reading of `rest` may stop for the usual shape to
/// be looked for again: after the next blank line that follows an LF (the end
/// of an event), else at the end of the read.
pub(super) fn event_end(rest: &[u8]) -> usize {
    memmem::find(rest, b"\n\n").map_or(rest.len(), |at| at.saturating_add(2))
}

impl SseDecoder {
    /// Reads the event at the start of `rest` when it has the usual shape and
    /// the decoder is between events; gives the bytes it took.
    #[inline]
    pub(super) fn whole_event<S: FnMut(SseEventRef<'_>)>(
        &mut self,
        rest: &[u8],
        checked: &Checked<'_>,
        emit: &mut S,
    ) -> Option<usize> {
        if !self.lines.at_line_start() || !self.builder.is_clean() {
            return None;
        }
        let max_line = self.lines.max_line_bytes();
        let offset = self.lines.offset();
        let (name, at) = if rest.starts_with(EVENT) {
            let len = lf_line(rest, EVENT, max_line)?;
            let text = checked.text(rest.get(..len)?, offset)?;
            (Some(text.get(EVENT.len()..)?), len.saturating_add(1))
        } else {
            (None, 0)
        };
        let tail = rest.get(at..)?;
        let len = lf_line(tail, DATA, max_line)?;
        if tail.get(len.saturating_add(1)) != Some(&b'\n') {
            return None;
        }
        let text = checked.text(tail.get(..len)?, advance(offset, at))?;
        let data = text.get(DATA.len()..)?;
        if data.len() > self.builder.max_event_bytes {
            return None;
        }
        let taken = at.saturating_add(len).saturating_add(2);
        self.lines.skip(taken);
        emit(SseEventRef {
            event: name.filter(|e| !e.is_empty()),
            data,
            id: Some(self.builder.last_id.as_str()).filter(|id| !id.is_empty()),
        });
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::super::SseEvent;
    use crate::framing::testutil::split_at_cuts;
    use crate::framing::{Error, FramingLimits, SseDecoder};
    use proptest::prelude::*;

    /// Every event and the outcome, read with the usual shape taken whole
    /// (`whole`) or only line by line, in the pieces given.
    fn read(
        limits: FramingLimits,
        pieces: &[&[u8]],
        whole: bool,
    ) -> (Vec<SseEvent>, Result<(), Error>, u64) {
        let mut decoder = SseDecoder::new(limits);
        let mut out = Vec::new();
        let mut result = Ok(());
        for piece in pieces {
            result = decoder.push_inner(piece, &mut |e| out.push(e.to_event()), whole);
            if result.is_err() {
                break;
            }
        }
        let offset = decoder.offset();
        if result.is_ok() {
            result = decoder.finish(&mut out);
        }
        (out, result, offset)
    }

    fn both_agree(limits: FramingLimits, bytes: &[u8], cuts: &[usize]) {
        let pieces = split_at_cuts(bytes, cuts);
        let general = read(limits, &pieces, false);
        assert_eq!(
            read(limits, &pieces, true),
            general,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(read(limits, &[bytes], true), read(limits, &[bytes], false));
    }

    fn limits(line: usize, event: usize) -> FramingLimits {
        FramingLimits {
            max_line_bytes: line,
            max_event_bytes: event,
            ..FramingLimits::default()
        }
    }

    #[test]
    fn the_usual_shape_is_read_whole_and_borrowed() {
        let mut decoder = SseDecoder::new(FramingLimits::default());
        let bytes: &[u8] = b"event: ping\ndata: {\"a\":1}\n\ndata: 2\n\n";
        let mut borrowed = Vec::new();
        let pushed = decoder.push_with(bytes, &mut |e| {
            borrowed.push(bytes.as_ptr_range().contains(&e.data.as_ptr()));
        });
        assert_eq!(pushed, Ok(()));
        assert_eq!(borrowed, [true, true]);
        assert_eq!(decoder.offset(), 36);
    }

    #[test]
    fn shapes_next_to_the_usual_one_read_as_line_by_line() {
        let cases: &[&[u8]] = &[
            b"event: a\ndata: {}\n\n",
            b"event: a\r\ndata: {}\n\n",
            b"event: a\ndata: {}\r\n\n",
            b"event: a\ndata: {}\n\r\n",
            b"event: a\ndata: {}\ndata: 2\n\n",
            b"event:a\ndata: {}\n\n",
            b"event: a\ndata:{}\n\n",
            b"event: \ndata: {}\n\n",
            b"event: a\n: c\ndata: {}\n\n",
            b"id: 7\ndata: {}\n\ndata: 1\n\n",
            b"event: a\nevent: b\ndata: {}\n\n",
            b"data: {}\nevent: a\n\n",
            b"\xEF\xBB\xBFdata: {}\n\n",
            b"event: a\ndata: {}\n",
            b"data: \xFF\n\n",
            b"event: \xC3\ndata: {}\n\n",
            b"data: \xE4\xB8\n\n",
        ];
        for bytes in cases {
            for cut in 0..=bytes.len() {
                both_agree(FramingLimits::default(), bytes, &[cut]);
                both_agree(limits(8, 4), bytes, &[cut]);
            }
        }
    }

    #[test]
    fn bounds_refuse_the_usual_shape_as_they_refuse_any_line() {
        let bytes: &[u8] = b"event: a\ndata: {\"abc\":1}\n\n";
        let over_line = read(limits(12, 1024), &[bytes], true);
        assert!(
            matches!(
                over_line.1,
                Err(Error::Limit {
                    limit: "max_line_bytes",
                    offset: 9,
                    ..
                })
            ),
            "{over_line:?}"
        );
        let over_event = read(limits(1024, 8), &[bytes], true);
        assert!(
            matches!(
                over_event.1,
                Err(Error::Limit {
                    limit: "max_event_bytes",
                    offset: 0,
                    ..
                })
            ),
            "{over_event:?}"
        );
        let bad = read(
            FramingLimits::default(),
            &[b"event: a\ndata: {\xFF}\n\n"],
            true,
        );
        assert!(
            matches!(bad.1, Err(Error::Utf8 { offset: 16, .. })),
            "{bad:?}"
        );
        assert_eq!(bad.0, Vec::new());
    }

    /// A line as the generator writes it: usual fields, odd ones, odd endings.
    fn gen_line() -> impl Strategy<Value = Vec<u8>> {
        let value = proptest::collection::vec(
            prop_oneof![
                4 => proptest::char::range('a', 'z').prop_map(|c| c.to_string().into_bytes()),
                1 => Just(b"{\"k\":1}".to_vec()),
                1 => Just("\u{e9}".as_bytes().to_vec()),
                1 => Just(vec![0xFF]),
                1 => Just(b":".to_vec()),
                1 => Just(b" ".to_vec()),
            ],
            0..6,
        )
        .prop_map(|parts| parts.concat());
        let field = prop_oneof![
            4 => Just(b"data: ".to_vec()),
            3 => Just(b"event: ".to_vec()),
            1 => Just(b"data:".to_vec()),
            1 => Just(b"id: ".to_vec()),
            1 => Just(b": ".to_vec()),
            1 => Just(Vec::new()),
        ];
        let ending = prop_oneof![8 => Just(b"\n".to_vec()), 1 => Just(b"\r\n".to_vec()), 1 => Just(b"\r".to_vec())];
        (field, value, ending).prop_map(|(f, v, e)| [f, v, e].concat())
    }

    proptest! {
        #[test]
        fn whole_events_agree_with_line_by_line(
            lines in proptest::collection::vec(gen_line(), 0..24),
            cuts in proptest::collection::vec(any::<usize>(), 0..6),
            small in any::<bool>(),
        ) {
            let bytes = lines.concat();
            let limits = if small { limits(12, 10) } else { FramingLimits::default() };
            let pieces = split_at_cuts(&bytes, &cuts);
            prop_assert_eq!(read(limits, &pieces, true), read(limits, &pieces, false));
            prop_assert_eq!(read(limits, &[&bytes], true), read(limits, &[&bytes], false));
        }
    }
}
