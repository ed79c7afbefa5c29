//! The first event of an SSE body's head, so that a reader that looks for a
//! few facts in the head's first events (a response's id and model) frames
//! that event alone before it frames the rest.

use memchr::memmem;

use super::{classify, Detection, Transport};

/// Where the first event of `head` ends (just past its blank line), when
/// `head` is SSE by [`classify`] and holds a blank line (`\n\n`): the frames a
/// fresh [`Decoder`](super::Decoder) gives for `head[..end]` (pushed, then,
/// when the push succeeded, finished) are the first frames it gives for the
/// whole `head`. `None` for any other head.
///
/// A `\n\n` is always a line's end followed by an empty line (a line holds no
/// `\n`; `\r\n\n` is a line ended by `\r\n`, then an empty one), so the event
/// is dispatched there and nothing of it is left for `finish`; the transport
/// is told from the same first bytes.
#[must_use]
pub fn first_sse_event_end(head: &[u8]) -> Option<usize> {
    if classify(head) != Detection::Transport(Transport::Sse) {
        return None;
    }
    memmem::find(head, b"\n\n").map(|at| at.saturating_add(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{Decoder, Frame, FramingLimits};
    use proptest::prelude::*;

    /// What `providers::response_facts` frames of a head.
    fn frames(head: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        let mut decoder = Decoder::new(FramingLimits::default());
        if decoder.push(head, &mut out).is_ok() {
            let _ = decoder.finish(&mut out);
        }
        out
    }

    fn holds(head: &[u8]) {
        let Some(end) = first_sse_event_end(head) else {
            return;
        };
        let first = frames(head.get(..end).unwrap());
        let all = frames(head);
        assert!(
            all.starts_with(&first),
            "{:?}: {first:?} is not the start of {all:?}",
            String::from_utf8_lossy(head)
        );
    }

    #[test]
    fn the_first_event_ends_after_its_blank_line() {
        let head = b"data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"}\n\n";
        assert_eq!(first_sse_event_end(head), Some(18));
        assert_eq!(
            frames(head.get(..18).unwrap()).len(),
            1,
            "the first event alone"
        );
        assert_eq!(first_sse_event_end(b"data: {}\r\n\ndata: x"), Some(11));
        assert_eq!(first_sse_event_end(b"data: {\"id\":\"a\"}\n"), None);
        assert_eq!(first_sse_event_end(b"{\"id\":\"a\"}\n\n{}"), None);
        assert_eq!(first_sse_event_end(b"dat"), None);
        assert_eq!(first_sse_event_end(b""), None);
        holds(head);
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"data: {\"id\":\"chatcmpl-1\",\"model\":\"m\"}".to_vec()),
            Just(b"data: {\"model\":\"m2\"}".to_vec()),
            Just(b"data: [DONE]".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"data".to_vec()),
            Just(b"event: message_start".to_vec()),
            Just(b"id: 7".to_vec()),
            Just(b"retry: 10".to_vec()),
            Just(b": ping".to_vec()),
            Just(b"\xEF\xBB\xBF".to_vec()),
            Just(b"\xFF\xFE".to_vec()),
            Just(b"{\"id\":\"x\"}".to_vec()),
            Just(b" ".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n\n".to_vec()),
            Just(b"\r\n\r\n".to_vec()),
            Just(b"\r\r".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The frames of the head cut after its first event are the first
        /// frames of the whole head, whatever follows (other events, broken
        /// UTF-8, a cut event, bytes no transport reads).
        #[test]
        fn the_first_event_frames_as_the_start_of_the_whole(
            pieces in proptest::collection::vec(piece(), 0..16),
        ) {
            holds(&pieces.concat());
        }
    }
}
