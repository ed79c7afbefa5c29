//! What the replay tooling reads of the core's framing: the transport a file's
//! first bytes show (a directory walk tells captures by their content), and the
//! frames of one stream with the byte offset each starts at (`toolstitch replay
//! --events`). Nothing here assembles: the events' outcomes are the
//! `Assembler`'s, joined by their ordinals in Python.

use pyo3::prelude::*;

use crate::framing::{classify, Decoder, Detection, FrameRef, FramingLimits, Transport};

/// The name a transport is shown by.
fn transport_name(transport: Transport) -> &'static str {
    match transport {
        Transport::Sse => "sse",
        Transport::JsonLines => "json",
        Transport::EventStream => "eventstream",
    }
}

/// The transport the first bytes of a stream show (`"sse"`, `"json"`,
/// `"eventstream"`), or `None` when they show none or are too few to tell.
#[pyfunction]
fn _transport_of(head: &[u8]) -> Option<&'static str> {
    match classify(head) {
        Detection::Transport(transport) => Some(transport_name(transport)),
        Detection::NeedMore | Detection::Unrecognized { .. } => None,
    }
}

/// One frame: the offset of its first byte, its event name (SSE `event:`, an
/// event-stream frame's `:event-type` or `:exception-type`), its data as text
/// (a binary payload decoded lossily).
type Traced = (u64, Option<String>, String);

fn traced(frame: FrameRef<'_>, start: u64) -> Traced {
    match frame {
        FrameRef::Sse(e) => (start, e.event.map(str::to_owned), e.data.to_owned()),
        FrameRef::Line(line) => (start, None, line.to_owned()),
        FrameRef::EventStream(m) => (
            start,
            m.event_type()
                .or_else(|| m.exception_type())
                .map(str::to_owned),
            String::from_utf8_lossy(&m.payload).into_owned(),
        ),
    }
}

/// The frames of a whole stream as `Assembler.feed_bytes` frames them, in
/// order (the Nth is the core's event N), with the transport and the framing
/// error that stopped them, if one did. The bytes are pushed one at a time so
/// that each frame's first byte is known: a debugging aid, linear in the
/// stream's length, bounded by the same framing limits as a replay.
#[pyfunction]
#[pyo3(signature = (data, *, max_event_bytes, max_line_bytes))]
fn _frames(
    py: Python<'_>,
    data: &[u8],
    max_event_bytes: usize,
    max_line_bytes: usize,
) -> (Vec<Traced>, Option<&'static str>, Option<String>) {
    py.detach(|| {
        let limits = FramingLimits {
            max_line_bytes,
            max_event_bytes,
            ..FramingLimits::default()
        };
        let mut decoder = Decoder::new(limits);
        let mut frames: Vec<Traced> = Vec::new();
        let mut failed: Option<String> = None;
        let mut offset: u64 = 0;
        for byte in data.chunks(1) {
            let start = decoder.unfinished_from().unwrap_or(offset);
            if let Err(e) = decoder.push_borrowed(byte, |f| frames.push(traced(f, start))) {
                failed = Some(e.to_string());
                break;
            }
            offset = offset.saturating_add(1);
        }
        let transport = decoder.transport().map(transport_name);
        if failed.is_none() {
            let start = decoder.unfinished_from().unwrap_or(offset);
            if let Err(e) = decoder.finish_borrowed(|f| frames.push(traced(f, start))) {
                failed = Some(e.to_string());
            }
        }
        (frames, transport, failed)
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_transport_of, m)?)?;
    m.add_function(wrap_pyfunction!(_frames, m)?)?;
    Ok(())
}
