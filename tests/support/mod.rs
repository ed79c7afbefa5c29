//! What the Rust integration tests share: reading the recordings and
//! cassettes under `tests/fixtures/real/`, cutting bytes, a fresh assembler.
//! Each `tests/rust_*.rs` declares `mod support;` and takes what it needs.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use _toolstitch::providers::{Assembler, AssemblerLimits, Dialect};

/// The folder of the real recordings.
pub const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real/");

/// A recording's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{REAL}{name}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A recording's text.
pub fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(format!("{REAL}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The bytes cut into pieces of 1, 2, 3, … `max` bytes, cycling.
pub fn ragged(bytes: &[u8], max: usize) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = bytes;
    let mut size = 1;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at_checked(size).unwrap_or((rest, &[]));
        pieces.push(piece);
        rest = tail;
        size = size % max + 1;
    }
    pieces
}

/// Standard base64 (padding and line breaks ignored); anything else panics.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' | b' ' => continue,
            other => panic!("not base64: {other:#04x}"),
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xFF) as u8);
        }
    }
    out
}

/// Standard base64 with padding: the tests' one encoder.
pub fn base64_encode(raw: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in raw.chunks(3) {
        let mut n = 0u32;
        for (i, b) in group.iter().enumerate() {
            n |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The `!!binary` response bodies of a VCR cassette, decoded.
pub fn cassette_bodies(yaml: &str) -> Vec<Vec<u8>> {
    let mut bodies = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() != "string: !!binary |" {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut encoded = String::new();
        while let Some(next) = lines.peek() {
            if next.len() - next.trim_start().len() <= indent {
                break;
            }
            encoded.push_str(next.trim());
            lines.next();
        }
        bodies.push(base64_decode(&encoded));
    }
    bodies
}

/// A fresh assembler with the default limits.
pub fn assembler(d: Option<Dialect>) -> Assembler {
    Assembler::new(d, AssemblerLimits::default())
}

/// OpenAI chat streams built from JSON values, for the long-tail and edge tests:
/// chunks, calls, the end, and what a message's notes and inputs are.
pub mod chat {
    use _toolstitch::providers::{
        AssembledMessage, Assembler, AssemblerLimits, Dialect, Error, NoteKind,
    };
    use serde_json::{json, Value};

    pub fn chat() -> Assembler {
        Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default())
    }

    /// Feeds every event and closes, returning the message of choice 0 and the errors.
    pub fn run(a: &mut Assembler, events: &[Value]) -> (AssembledMessage, Vec<Error>) {
        let mut errors = Vec::new();
        for e in events {
            if let Err(err) = a.feed_json(None, e.to_string().as_bytes(), None) {
                errors.push(err);
            }
        }
        if let Err(err) = a.close(None) {
            errors.push(err);
        }
        (a.messages().remove(0), errors)
    }

    pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    pub fn call(index: i64, id: Option<&str>, name: Option<&str>, args: Value) -> Value {
        let mut f = serde_json::Map::new();
        if let Some(n) = name {
            f.insert("name".into(), json!(n));
        }
        f.insert("arguments".into(), args);
        let mut c = json!({"index": index, "function": f});
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        chunk(json!({"tool_calls": [c]}), None)
    }

    pub fn end() -> Value {
        chunk(json!({}), Some("tool_calls"))
    }

    pub fn notes(m: &AssembledMessage) -> Vec<NoteKind> {
        m.notes.iter().map(|n| n.kind).collect()
    }

    pub fn inputs(m: &AssembledMessage) -> Vec<&str> {
        m.tool_uses.iter().map(|t| t.block.input.as_str()).collect()
    }
}
