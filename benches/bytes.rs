//! The raw-bytes path alone, without Python: SSE bytes of OpenAI chat and
//! Anthropic streams (tool-call arguments cut in fragments of 1-8 characters,
//! with escapes and non-ASCII, as `benches/compare.py` builds them) through the
//! framing and the assembler, in 64 KiB reads. Prints ns per fragment and MB/s.
//! For profiling (`perf record`, `valgrind --tool=callgrind`) as much as timing:
//! `cargo bench --bench bytes -- [openai|anthropic|big] [seconds]`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::type_complexity)]

use std::time::{Duration, Instant};

use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{Assembler, AssemblerLimits, BytesAssembler, Dialect};
use serde_json::json;

const READ: usize = 64 * 1024;
const ALPHABET: &str = "abcdefgh ijk\"\\:{},0123456789\n\t\u{e9}\u{65e5}\u{1f980}";

/// A small deterministic generator (xorshift64*), so that runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + usize::try_from(self.next() % u64::try_from(hi - lo + 1).unwrap()).unwrap()
    }
}

fn arguments(rng: &mut Rng, size: usize) -> String {
    let alphabet: Vec<char> = ALPHABET.chars().collect();
    let mut words = Vec::new();
    let mut len = 0;
    loop {
        let n = rng.range(3, 12);
        let word: String = (0..n)
            .map(|_| alphabet[rng.range(0, alphabet.len() - 1)])
            .collect();
        len += word.len() + 1;
        words.push(word);
        // Serialised only once the words could fill it (not once per word).
        if len < size {
            continue;
        }
        let out = json!({"query": words.join(" "), "limit": 10, "exact": false}).to_string();
        if out.len() >= size {
            return out;
        }
    }
}

fn pieces(rng: &mut Rng, text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let n = rng.range(1, 8).min(chars.len() - at);
        out.push(chars[at..at + n].iter().collect());
        at += n;
    }
    out
}

struct Workload {
    name: &'static str,
    dialect: Dialect,
    streams: Vec<Vec<u8>>,
    fragments: usize,
}

fn openai(rng: &mut Rng, response: usize, calls: usize, out: &mut Vec<u8>) -> usize {
    let mut fragments = 0;
    let mut event = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = json!({
            "id": format!("chatcmpl-{response}"),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_0123456789",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(chunk.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
    };
    event(json!({"role": "assistant", "content": null}), None);
    for i in 0..calls {
        let args = arguments(rng, 2048);
        event(
            json!({"tool_calls": [{"index": i, "id": format!("call_{response}_{i}"), "type": "function",
                "function": {"name": format!("tool_{i}"), "arguments": ""}}]}),
            None,
        );
        for piece in pieces(rng, &args) {
            event(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            );
            fragments += 1;
        }
    }
    event(json!({}), Some("tool_calls"));
    out.extend_from_slice(b"data: [DONE]\n\n");
    fragments
}

fn anthropic(rng: &mut Rng, response: usize, calls: usize, out: &mut Vec<u8>) -> usize {
    let mut fragments = 0;
    let mut event = |kind: &str, mut body: serde_json::Value| {
        body["type"] = json!(kind);
        out.extend_from_slice(format!("event: {kind}\ndata: ").as_bytes());
        out.extend_from_slice(body.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
    };
    event(
        "message_start",
        json!({"message": {"id": format!("msg_{response}"), "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 412, "output_tokens": 1}}}),
    );
    for i in 0..calls {
        let args = arguments(rng, 2048);
        event(
            "content_block_start",
            json!({"index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{response}_{i}"),
                "name": format!("tool_{i}"), "input": {}}}),
        );
        for piece in pieces(rng, &args) {
            event(
                "content_block_delta",
                json!({"index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
            fragments += 1;
        }
        event("content_block_stop", json!({"index": i}));
    }
    event(
        "message_delta",
        json!({"delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 900}}),
    );
    event("message_stop", json!({}));
    fragments
}

fn workload(name: &'static str, target: usize) -> Workload {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (dialect, calls, make): (
        Dialect,
        usize,
        fn(&mut Rng, usize, usize, &mut Vec<u8>) -> usize,
    ) = match name {
        "openai" => (Dialect::OpenAiChat, 4, openai),
        "anthropic" => (Dialect::Anthropic, 4, anthropic),
        // One response, one large argument: the throughput of one call.
        "big" => (Dialect::OpenAiChat, 1, openai),
        _ => panic!("unknown workload {name}"),
    };
    let mut streams = Vec::new();
    let mut fragments = 0;
    while fragments < target {
        let mut out = Vec::new();
        if name == "big" {
            // arguments of ~1 MB in one call
            let mut rng2 = Rng(rng.next() | 1);
            fragments += big(&mut rng2, &mut out, target);
        } else {
            fragments += make(&mut rng, streams.len(), calls, &mut out);
        }
        streams.push(out);
    }
    Workload {
        name,
        dialect,
        streams,
        fragments,
    }
}

fn big(rng: &mut Rng, out: &mut Vec<u8>, fragments: usize) -> usize {
    let args = arguments(rng, fragments * 4);
    let mut n = 0;
    let head = |out: &mut Vec<u8>| {
        out.extend_from_slice(b"data: {\"id\":\"chatcmpl-big\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,");
    };
    head(out);
    out.extend_from_slice(b"\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"tool\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    for piece in pieces(rng, &args) {
        head(out);
        out.extend_from_slice(b"\"function\":{\"arguments\":");
        out.extend_from_slice(serde_json::to_string(&piece).unwrap().as_bytes());
        out.extend_from_slice(b"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        n += 1;
    }
    out.extend_from_slice(b"data: {\"id\":\"chatcmpl-big\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    n
}

/// What `Assembler.feed_bytes` runs for each read, then `close()`.
#[inline(never)]
fn feed_stream(dialect: Dialect, data: &[u8]) -> BytesAssembler {
    let core = Assembler::new(Some(dialect), AssemblerLimits::default());
    let mut asm = BytesAssembler::new(core, FramingLimits::default());
    for read in data.chunks(READ) {
        asm.feed_bytes(read, None).unwrap();
    }
    asm.close(None).unwrap();
    asm
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let names: Vec<&'static str> = match args.first().map(String::as_str) {
        Some("openai") => vec!["openai"],
        Some("anthropic") => vec!["anthropic"],
        Some("big") => vec!["big"],
        _ => vec!["openai", "anthropic", "big"],
    };
    let seconds: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    for name in names {
        let w = workload(name, 100_000);
        let bytes: usize = w.streams.iter().map(Vec::len).sum();
        // Check once that every call is complete.
        for s in &w.streams {
            let asm = feed_stream(w.dialect, s);
            let m = asm.core().messages();
            assert!(m.iter().all(|m| m.complete), "{name}: incomplete message");
        }
        let mut best = Duration::MAX;
        let start = Instant::now();
        let mut rounds = 0;
        while start.elapsed().as_secs_f64() < seconds || rounds < 2 {
            let t0 = Instant::now();
            for s in &w.streams {
                std::hint::black_box(feed_stream(w.dialect, s));
            }
            best = best.min(t0.elapsed());
            rounds += 1;
        }
        let secs = best.as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let (frags, mb) = (w.fragments as f64, bytes as f64 / 1e6);
        println!(
            "{:10} {:>8} fragments {:6.1} MB: {:7.1} ns/fragment {:8.1} MB/s (best of {rounds})",
            w.name,
            w.fragments,
            mb,
            secs / frags * 1e9,
            mb / secs,
        );
    }
}
