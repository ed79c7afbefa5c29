//! Shared harness of the fuzz targets: how an input is cut into pieces, the
//! byte pipeline the Python binding runs (framing, then the assembler), the
//! invariants checked on every assembled message, and structured generators
//! of plausible event sequences for each dialect.
//!
//! Everything here panics on a broken invariant: that is how libFuzzer learns
//! of a bug.

pub mod cuts;
pub mod gen;
pub mod model;
pub mod pipeline;
pub mod render;

/// The input of the assembler targets: a 4-byte header, then the body.
///
/// - `flags` (byte 0): bit 0 picks the structured interpretation of the body
///   (an event sequence built from the dialect's vocabulary) over raw
///   transport bytes; bit 1 runs with small limits, so that every limit error
///   is reached; bits 2-3 pick the transport of structured events; bit 4
///   turns `split_concatenated` on (Q40's opt-in).
/// - `cuts` (byte 1) and `seed` (bytes 2-3): how the transport bytes are cut
///   (see [`cuts::pieces`]).
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub structured: bool,
    pub small_limits: bool,
    pub transport: u8,
    pub split: bool,
    pub cuts: u8,
    pub seed: u16,
}

impl Header {
    /// Splits `data` into its header and body (a short input is all header,
    /// zero-padded).
    #[must_use]
    pub fn split(data: &[u8]) -> (Header, &[u8]) {
        let byte = |i: usize| data.get(i).copied().unwrap_or(0);
        let header = Header {
            structured: byte(0) & 1 == 1,
            small_limits: byte(0) & 2 == 2,
            transport: (byte(0) >> 2) & 3,
            split: byte(0) & 16 == 16,
            cuts: byte(1),
            seed: u16::from_le_bytes([byte(2), byte(3)]),
        };
        (header, data.get(4..).unwrap_or_default())
    }
}

use _toolstitch::providers::{AssemblerLimits, Dialect};

use pipeline::{comparable, run_bytes, run_events, run_production, Mode, Outcome};

/// Two runs of the same events agree on everything observable.
fn assert_same(what: &str, a: &Outcome, b: &Outcome) {
    assert_eq!(a.errors, b.errors, "{what}: errors differ");
    assert_eq!(a.framing, b.framing, "{what}: framing errors differ");
    assert_eq!(a.events_seen, b.events_seen, "{what}: event counts differ");
    assert_eq!(
        a.partial_before_close, b.partial_before_close,
        "{what}: partial inputs differ"
    );
    assert_eq!(a.close, b.close, "{what}: close differs");
    assert_eq!(a.messages, b.messages, "{what}: messages differ");
    if let (Some(x), Some(y)) = (&a.live, &b.live) {
        assert_eq!(x, y, "{what}: live events differ");
    }
}

/// Inputs shorter than this are also fed one byte at a time.
const BYTEWISE_MAX: usize = 256;

/// One assembler fuzz input (see [`Header`]): raw transport bytes, or a
/// structured event sequence rendered to a transport. `dialect: None` is
/// `auto` (a structured input's first body byte then picks the dialect the
/// events are built from).
///
/// Checks: every invariant of [`pipeline`] after every event; the bytes fed
/// whole, cut where the input says, and (when short, and the cut seed is
/// odd) byte by byte give the same messages, errors, partial inputs and live events; structured events
/// fed as JSON text and as values give the same messages and error kinds.
pub fn assembler(dialect: Option<Dialect>, data: &[u8]) {
    let (h, body) = Header::split(data);
    let mut limits = pipeline::limits(h.small_limits);
    limits.0.split_concatenated = h.split;
    let mut events = None;
    let bytes = if h.structured {
        let (d, body) = match dialect {
            Some(d) => (d, body),
            None => {
                let pick = body.first().copied().unwrap_or(0);
                let d = Dialect::ALL[usize::from(pick) % Dialect::ALL.len()];
                (d, body.get(1..).unwrap_or_default())
            }
        };
        let list = gen::events(d, body);
        let bytes = match (d, h.transport) {
            (Dialect::Bedrock | Dialect::BedrockInvoke, 0..=2) => render::event_stream(&list),
            (_, 3) | (Dialect::Gemini | Dialect::Cohere | Dialect::Ollama, 1) => {
                render::jsonl(&list)
            }
            _ => render::sse(&list),
        };
        events = Some(list);
        bytes
    } else {
        body.to_vec()
    };
    let checked = Mode {
        checked: true,
        live: true,
    };
    let whole = run_bytes(dialect, limits, &[&bytes], checked);
    let pieces = cuts::pieces(&bytes, h.cuts, h.seed);
    let cut = run_bytes(
        dialect,
        limits,
        &pieces,
        Mode {
            checked: false,
            live: false,
        },
    );
    assert_same("whole vs cut", &whole, &cut);
    assert_eq!(
        run_production(dialect, limits, &pieces),
        cut.messages,
        "the binding's glue (borrowed frames, fast paths) vs frame by frame: messages differ"
    );
    if bytes.len() <= BYTEWISE_MAX && h.seed & 1 == 1 {
        let bytewise = run_bytes(
            dialect,
            limits,
            &cuts::bytewise(&bytes),
            Mode {
                checked: false,
                live: true,
            },
        );
        assert_same("whole vs bytewise", &whole, &bytewise);
    }
    if let Some(list) = events {
        // `max_event_bytes` bounds an event's JSON text; a value has none.
        let limits = (
            AssemblerLimits {
                max_event_bytes: AssemblerLimits::default().max_event_bytes,
                ..limits.0
            },
            limits.1,
        );
        let unchecked = Mode {
            checked: false,
            live: false,
        };
        let as_json = run_events(dialect, limits.0, &list, false, unchecked);
        let as_value = run_events(dialect, limits.0, &list, true, unchecked);
        assert_eq!(
            comparable(&as_json),
            comparable(&as_value),
            "feed_json and feed_value disagree"
        );
    }
}
