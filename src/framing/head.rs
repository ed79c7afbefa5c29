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

/// The first bytes of a body, kept for a reader of its head's facts once the
/// body has ended (a response's id and model: `providers::response_facts`),
/// up to the `max` bytes its caller gives; but only up to the end of the first SSE event when that
/// event alone is enough for the reader (`enough`, asked once the event is
/// whole), so that a long stream's head is not copied and kept for a reader
/// that stops at its first event.
#[derive(Debug, Clone, Default)]
pub struct Head {
    bytes: Vec<u8>,
    keep: Keep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// No `\n\n` in the first `searched` bytes.
    Searching { searched: usize },
    /// The first event ends at `end`; whether it is enough is not told yet.
    Found { end: usize },
    /// The first event is enough: the head is that event, and nothing more is kept.
    First,
    /// Every byte up to `max` is kept (not SSE, or its first event is not enough).
    Whole,
}

impl Default for Keep {
    fn default() -> Self {
        Keep::Searching { searched: 0 }
    }
}

impl Head {
    /// More bytes would be kept, in a head of at most `max` bytes.
    #[must_use]
    pub fn open(&self, max: usize) -> bool {
        self.keep != Keep::First && self.bytes.len() < max
    }

    /// The bytes kept.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Keeps the body's next bytes, up to `max` in all. `enough(first)`: whether the head's first
    /// SSE event (`first`, through its blank line: [`first_sse_event_end`]) is
    /// all the reader reads of the head, `None` while that cannot be told yet
    /// (asked again with the next bytes).
    pub fn keep(&mut self, data: &[u8], max: usize, enough: impl FnOnce(&[u8]) -> Option<bool>) {
        if !self.open(max) {
            return;
        }
        let room = max.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
        if let Keep::Searching { searched } = self.keep {
            // A `\n\n` across the previous bytes' end starts at their last byte.
            let from = searched.saturating_sub(1);
            let rest = self.bytes.get(from..).unwrap_or_default();
            self.keep = match memmem::find(rest, b"\n\n") {
                None => Keep::Searching {
                    searched: self.bytes.len(),
                },
                Some(_) => match first_sse_event_end(&self.bytes) {
                    Some(end) => Keep::Found { end },
                    None => Keep::Whole,
                },
            };
        }
        if let Keep::Found { end } = self.keep {
            match enough(self.bytes.get(..end).unwrap_or_default()) {
                None => {}
                Some(true) => {
                    self.bytes.truncate(end);
                    self.keep = Keep::First;
                }
                Some(false) => self.keep = Keep::Whole,
            }
        }
    }
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

    /// The head kept of `body` read in `reads`, `enough` told of each first event.
    fn kept(reads: &[&[u8]], max: usize, enough: impl Fn(&[u8]) -> Option<bool>) -> Vec<u8> {
        let mut head = Head::default();
        for read in reads {
            head.keep(read, max, &enough);
        }
        head.bytes().to_vec()
    }

    #[test]
    fn the_head_stops_at_a_first_event_that_is_enough() {
        let body: &[u8] = b"data: {\"id\":\"a\"}\n\ndata: {\"id\":\"b\"}\n\n";
        let first = body.get(..18).unwrap();
        // Enough: the first event alone is kept, however the body is read.
        for at in 0..=body.len() {
            let (a, b) = body.split_at(at);
            assert_eq!(kept(&[a, b], 64, |_| Some(true)), first, "cut at {at}");
            // Not enough (or not told before the end): every byte up to the bound.
            assert_eq!(kept(&[a, b], 64, |_| Some(false)), body, "cut at {at}");
            assert_eq!(kept(&[a, b], 64, |_| None), body, "cut at {at}");
            assert_eq!(kept(&[a, b], 20, |_| None), body.get(..20).unwrap());
        }
        // `enough` is asked of the first event, once it is whole.
        let asked = std::cell::RefCell::new(Vec::new());
        kept(
            &[body.get(..10).unwrap(), body.get(10..).unwrap()],
            64,
            |e| {
                asked.borrow_mut().push(e.to_vec());
                Some(true)
            },
        );
        assert_eq!(asked.into_inner(), vec![first.to_vec()]);
        // Told only with a later read: the head is cut back to the first event.
        let told = std::cell::Cell::new(0);
        let later = |_: &[u8]| {
            told.set(told.get() + 1);
            (told.get() > 1).then_some(true)
        };
        assert_eq!(kept(&[body, b"data: x\n\n"], 64, later), first);
        // A blank line cut between two reads, the only one.
        let a: &[u8] = b"data: {\"id\":\"a\"}\n";
        assert_eq!(kept(&[a, b"\ndata: x"], 64, |_| Some(true)), first);
        // Not SSE: the whole head, `enough` never asked.
        let lines: &[u8] = b"{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n";
        assert_eq!(kept(&[lines], 64, |_| panic!("asked")), lines);
        // The first event past the bound: the head is the bound's bytes.
        assert_eq!(kept(&[body], 10, |_| Some(true)), body.get(..10).unwrap());
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

        /// Kept in any reads, the head is the body's first `max` bytes, or,
        /// only when it is enough, the first event [`first_sse_event_end`]
        /// finds in them; read at once, it is the first event whenever that
        /// is enough. (In reads, the transport may not be told yet when the
        /// first blank line comes, a blank line first: then the whole head is
        /// kept, which its reader reads the same.)
        #[test]
        fn the_head_is_the_first_bytes_or_the_first_event(
            pieces in proptest::collection::vec(piece(), 0..16),
            max in 0usize..120,
            enough in any::<bool>(),
        ) {
            let body = pieces.concat();
            let whole = body.get(..max.min(body.len())).unwrap_or_default();
            let first = match first_sse_event_end(whole) {
                Some(end) if enough => whole.get(..end),
                _ => None,
            };
            let reads: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
            let got = kept(&reads, max, |_| Some(enough));
            prop_assert!(got == whole || Some(got.as_slice()) == first, "{:?}", got);
            prop_assert_eq!(kept(&[&body], max, |_| Some(enough)), first.unwrap_or(whole));
        }
    }
}
