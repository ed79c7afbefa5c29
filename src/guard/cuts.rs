//! Where the guard may cut a body: the points after which the framing holds
//! no part of an event, so that the bytes before them can be released once
//! the events they complete are judged.
//!
//! The body is pushed to the framing one piece at a time, each piece ending
//! at such a point; the framing dispatches an event only at the end of a
//! piece, so every byte the guard releases belongs to events it has judged
//! (and never to the start of one it has not):
//!
//! - SSE: just past each blank line (an event is dispatched, or a run of
//!   comments ends, only there; a CR LF is kept together within a read);
//! - JSON lines (and a JSON body or array): just past every `\n`, `}` and `]`,
//!   the only bytes at which a value can end;
//! - AWS event-stream: at each frame's end, from the total length in its prelude.

use memchr::{memchr2_iter, memchr3_iter};

use crate::framing::Transport;

/// The state of the cutter of one body.
#[derive(Debug, Clone)]
pub(crate) enum Cutter {
    Sse {
        /// The current line has bytes (not only its terminator so far).
        line_has_bytes: bool,
        /// The last read ended with a CR (an LF first in the next completes it).
        after_cr: bool,
        /// The last read ended with the CR of a blank line: its cut waits for the
        /// next byte (past an LF that completes it), so that where reads end
        /// never changes where the cuts are.
        deferred: bool,
    },
    Lines,
    Events {
        /// Bytes of the current frame seen so far.
        seen: u64,
        /// The frame's total length, once its first four bytes are in.
        total: Option<u64>,
        /// The first bytes of the frame's prelude while it is cut.
        prelude: [u8; 4],
    },
}

impl Cutter {
    pub(crate) fn new(transport: Transport) -> Self {
        match transport {
            Transport::Sse => Cutter::Sse {
                line_has_bytes: false,
                after_cr: false,
                deferred: false,
            },
            Transport::JsonLines => Cutter::Lines,
            Transport::EventStream => Cutter::Events {
                seen: 0,
                total: None,
                prelude: [0; 4],
            },
        }
    }

    /// The cut points in `bytes` (offsets just past each), in order.
    pub(crate) fn cuts(&mut self, bytes: &[u8], out: &mut Vec<usize>) {
        match self {
            Cutter::Sse {
                line_has_bytes,
                after_cr,
                deferred,
            } => {
                if bytes.is_empty() {
                    return;
                }
                let first = out.len();
                if std::mem::take(deferred) {
                    out.push(usize::from(bytes.first() == Some(&b'\n')));
                }
                // Where the current line starts in `bytes`.
                let mut line_start = 0;
                let mut has = *line_has_bytes;
                // An LF right after a CR is the second half of one line end.
                let mut lf_joins = *after_cr;
                for at in memchr2_iter(b'\n', b'\r', bytes) {
                    let byte = bytes.get(at).copied();
                    if lf_joins && byte == Some(b'\n') && at == line_start {
                        lf_joins = false;
                        line_start = at + 1;
                        // A blank line's cut moves past its whole CR LF.
                        if let Some(last) = out.last_mut().filter(|last| **last == at) {
                            *last = at + 1;
                        }
                        continue;
                    }
                    if !has && at == line_start {
                        out.push(at + 1);
                    }
                    has = false;
                    line_start = at + 1;
                    lf_joins = byte == Some(b'\r');
                }
                *line_has_bytes = has || line_start < bytes.len();
                *after_cr = lf_joins && line_start == bytes.len();
                if out.len() > first
                    && out.last() == Some(&bytes.len())
                    && bytes.last() == Some(&b'\r')
                {
                    out.pop();
                    *deferred = true;
                }
            }
            Cutter::Lines => out.extend(memchr3_iter(b'\n', b'}', b']', bytes).map(|at| at + 1)),
            Cutter::Events {
                seen,
                total,
                prelude,
            } => {
                let mut at = 0usize;
                while at < bytes.len() {
                    if total.is_none() {
                        while *seen < 4 && at < bytes.len() {
                            if let (Some(slot), Some(b)) = (
                                prelude.get_mut(usize::try_from(*seen).unwrap_or(4)),
                                bytes.get(at),
                            ) {
                                *slot = *b;
                            }
                            *seen += 1;
                            at += 1;
                        }
                        if *seen < 4 {
                            return;
                        }
                        let length = u64::from(u32::from_be_bytes(*prelude));
                        if length < 16 {
                            // Not a frame the framing reads: it refuses it, and
                            // no cut is made from here on.
                            *total = Some(u64::MAX);
                        } else {
                            *total = Some(length);
                        }
                    }
                    let left = total.unwrap_or(u64::MAX).saturating_sub(*seen);
                    let here = u64::try_from(bytes.len() - at).unwrap_or(u64::MAX);
                    if left > here {
                        *seen += here;
                        return;
                    }
                    at += usize::try_from(left).unwrap_or(usize::MAX);
                    out.push(at);
                    *seen = 0;
                    *total = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuts(transport: Transport, pieces: &[&[u8]]) -> Vec<usize> {
        let mut cutter = Cutter::new(transport);
        let mut all = Vec::new();
        let mut base = 0;
        for p in pieces {
            let mut out = Vec::new();
            cutter.cuts(p, &mut out);
            all.extend(out.into_iter().map(|c| c + base));
            base += p.len();
        }
        all
    }

    #[test]
    fn sse_cuts_after_blank_lines_only() {
        let s: &[u8] = b"data: a\n\n: ping\n\nevent: x\ndata: b\r\n\r\ndata: c\r\rdata: d";
        assert_eq!(cuts(Transport::Sse, &[s]), vec![9, 17, 37, 46]);
        // Cut anywhere, the same points (a blank line's CR at the end of a read waits
        // for the next byte).
        for at in 0..=s.len() {
            let (a, b) = s.split_at(at);
            let got = cuts(Transport::Sse, &[a, b]);
            assert_eq!(got, vec![9, 17, 37, 46], "cut at {at}");
        }
    }

    #[test]
    fn json_lines_cut_after_every_possible_value_end() {
        assert_eq!(
            cuts(Transport::JsonLines, &[b"{\"a\":[1]}\n"]),
            vec![8, 9, 10]
        );
    }

    #[test]
    fn event_stream_cuts_at_frame_ends() {
        let mut frame = 20u32.to_be_bytes().to_vec();
        frame.resize(20, 0);
        let two = [frame.clone(), frame].concat();
        assert_eq!(cuts(Transport::EventStream, &[&two]), vec![20, 40]);
        for at in 0..=two.len() {
            let (a, b) = two.split_at(at);
            assert_eq!(
                cuts(Transport::EventStream, &[a, b]),
                vec![20, 40],
                "cut at {at}"
            );
        }
        // A length no frame has: no cut from there on (the framing refuses it).
        assert_eq!(
            cuts(Transport::EventStream, &[&[0, 0, 0, 3, 1, 2, 3, 4, 5]]),
            Vec::<usize>::new()
        );
    }
}
