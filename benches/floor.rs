//! The floor of stream reassembly: how fast the 4-call OpenAI chat and Anthropic
//! workloads of `benches/compare.py` can be rebuilt with no library structure in
//! the way, against toolstitch's raw-bytes path on the same bytes.
//!
//! The workloads have compare.py's shape exactly (its key order, its compact
//! JSON, its argument generator: 2 KB of arguments per call with quotes,
//! backslashes, control characters and non-ASCII, cut in fragments of 1-8
//! characters, one SSE event per fragment, about 200,000 fragments, each
//! response fed in 64 KiB reads); only the random sequence differs. Each floor
//! frames lines with `memchr`, parses each `data:` payload once into typed
//! structs that borrow their strings (`Cow<str>`) with one of `serde_json`,
//! `sonic-rs` or `simd-json`, and appends the fragments to a `BTreeMap` by
//! index: no checks, no protocol, nothing more. On OpenAI chat a fourth floor
//! skips the derived structs' `Vec` of choices and of tool calls per event: a
//! serde visitor over sonic-rs applies each tool call to the map as it is read.
//! Every floor must rebuild exactly the calls toolstitch rebuilds before
//! anything is timed.
//!
//! The contenders alternate within each round; the figures are medians of the
//! rounds. Writes `benches/results/floor.json` and `floor.md`
//! (`benches/compare.py --floor benches/results/floor.json` then adds the
//! Python `feed_bytes` row to both):
//! `cargo bench --bench floor -- [rounds] [--no-write]`.
//!
//! Two more workloads, one call per response whose arguments are one 6 MiB
//! string cut in fragments of 1-16 KiB, measure what a byte costs when the
//! per-event work is spread thin (the framing, the string scan, the append).
//! `cargo bench --bench floor -- --profile openai 5` runs toolstitch alone on
//! one workload for about 5 seconds, for `perf record`.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_precision_loss
)]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Instant;

use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{Assembler, AssemblerLimits, BytesAssembler, Dialect};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

// Every dialect's floor on a corpus of `benches/corpus.py` (`--corpus NAME=DIR`).
#[path = "floor/dialects.rs"]
mod dialects;
// One group alone, for a profiler or for counting instructions.
#[path = "floor/count.rs"]
mod count;

const READ: usize = 64 * 1024;
const ARG_BYTES: usize = 2048;
const TARGET_FRAGMENTS: usize = 200_000;
const CALLS: usize = 4;
const ALPHABET: &str = "abcdefgh ijk\"\\:{},0123456789\n\t\u{e9}\u{65e5}\u{1f980}";

// ------------------------------------------------------------------ workloads

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

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// compare.py's `arguments`: `json.dumps` (its `", "` and `": "` separators,
/// non-ASCII kept) of a query of random words, once it reaches `size` bytes.
fn arguments(rng: &mut Rng, size: usize) -> String {
    let alphabet: Vec<char> = ALPHABET.chars().collect();
    let mut query = String::new();
    loop {
        if !query.is_empty() {
            query.push(' ');
        }
        for _ in 0..rng.range(3, 12) {
            query.push(alphabet[rng.range(0, alphabet.len() - 1)]);
        }
        let out = format!(
            r#"{{"query": {}, "limit": 10, "exact": false}}"#,
            quote(&query)
        );
        if out.len() >= size {
            return out;
        }
    }
}

/// compare.py's `pieces`: 1-8 characters each.
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

type Calls = Vec<(String, String, String)>;

/// What a workload's responses hold: how many calls, their arguments, and how
/// those are cut into fragments (one event each).
struct Shape {
    calls: usize,
    arguments: fn(&mut Rng) -> String,
    pieces: fn(&mut Rng, &str) -> Vec<String>,
}

/// compare.py's 4-call workloads.
const FOUR_CALLS: Shape = Shape {
    calls: CALLS,
    arguments: |rng| arguments(rng, ARG_BYTES),
    pieces,
};

/// One call whose arguments are one large string (a document's content: lines
/// of words with quotes, tabs and non-ASCII now and then), cut in fragments of
/// 1-16 KiB: what the framing and the string scan cost per byte, with the
/// per-event work spread thin.
const LARGE_ARGUMENT: Shape = Shape {
    calls: 1,
    arguments: |rng| large_arguments(rng, LARGE_ARG_BYTES),
    pieces: large_pieces,
};

/// The size of the large argument of one response.
const LARGE_ARG_BYTES: usize = 6 << 20;
/// Responses of the large-argument workload.
const LARGE_RESPONSES: usize = 4;

/// `{"path": …, "content": …}` with `content` about `size` bytes of a
/// document: lines of words, now and then a quoted one, a tab or non-ASCII.
fn large_arguments(rng: &mut Rng, size: usize) -> String {
    const WORDS: [&str; 16] = [
        "the",
        "stream",
        "of",
        "tool",
        "calls",
        "is",
        "reassembled",
        "as",
        "it",
        "arrives",
        "\"quoted\"",
        "caf\u{e9}",
        "\u{65e5}\u{672c}",
        "and",
        "a\tb",
        "bytes,",
    ];
    let mut content = String::with_capacity(size + 64);
    while content.len() < size {
        for w in 0..rng.range(6, 16) {
            if w > 0 {
                content.push(' ');
            }
            content.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
        }
        content.push('\n');
    }
    format!(
        r#"{{"path": "docs/large.md", "content": {}}}"#,
        quote(&content)
    )
}

/// Fragments of 1-16 KiB, cut on character boundaries.
fn large_pieces(rng: &mut Rng, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + rng.range(1024, 16 * 1024)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(text[at..end].to_owned());
        at = end;
    }
    out
}

struct Workload {
    name: &'static str,
    dialect: Dialect,
    streams: Vec<Vec<u8>>,
    expected: Vec<Calls>,
    fragments: usize,
    events: usize,
}

/// compare.py's `openai_stream`, byte for byte in shape (orjson's compact output).
fn openai_stream(
    shape: &Shape,
    rng: &mut Rng,
    r: usize,
    out: &mut Vec<u8>,
    calls: &mut Calls,
) -> usize {
    let mut fragments = 0;
    let mut event = |delta: &str, finish: &str| {
        write!(
            out,
            r#"data: {{"id":"chatcmpl-{r}","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_0123456789","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]}}"#
        )
        .unwrap();
        out.extend_from_slice(b"\n\n");
    };
    event(r#"{"role":"assistant","content":null}"#, "null");
    for i in 0..shape.calls {
        let (id, name) = (format!("call_{r}_{i}"), format!("tool_{i}"));
        let args = (shape.arguments)(rng);
        event(
            &format!(
                r#"{{"tool_calls":[{{"index":{i},"id":"{id}","type":"function","function":{{"name":"{name}","arguments":""}}}}]}}"#
            ),
            "null",
        );
        for piece in (shape.pieces)(rng, &args) {
            event(
                &format!(
                    r#"{{"tool_calls":[{{"index":{i},"function":{{"arguments":{}}}}}]}}"#,
                    quote(&piece)
                ),
                "null",
            );
            fragments += 1;
        }
        calls.push((id, name, args));
    }
    event("{}", r#""tool_calls""#);
    out.extend_from_slice(b"data: [DONE]\n\n");
    fragments
}

/// compare.py's `anthropic_stream`.
fn anthropic_stream(
    shape: &Shape,
    rng: &mut Rng,
    r: usize,
    out: &mut Vec<u8>,
    calls: &mut Calls,
) -> usize {
    let mut fragments = 0;
    let mut event = |kind: &str, body: &str| {
        let sep = if body.is_empty() { "" } else { "," };
        write!(
            out,
            "event: {kind}\ndata: {{\"type\":\"{kind}\"{sep}{body}}}\n\n"
        )
        .unwrap();
    };
    event(
        "message_start",
        &format!(
            r#""message":{{"id":"msg_{r}","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":412,"output_tokens":1}}}}"#
        ),
    );
    for i in 0..shape.calls {
        let (id, name) = (format!("toolu_{r}_{i}"), format!("tool_{i}"));
        let args = (shape.arguments)(rng);
        event(
            "content_block_start",
            &format!(
                r#""index":{i},"content_block":{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}"#
            ),
        );
        for piece in (shape.pieces)(rng, &args) {
            event(
                "content_block_delta",
                &format!(
                    r#""index":{i},"delta":{{"type":"input_json_delta","partial_json":{}}}"#,
                    quote(&piece)
                ),
            );
            fragments += 1;
        }
        event("content_block_stop", &format!(r#""index":{i}"#));
        calls.push((id, name, args));
    }
    event(
        "message_delta",
        r#""delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":900}"#,
    );
    event("message_stop", "");
    fragments
}

/// One response: its bytes into `out`, its calls into `calls`; returns its fragments.
type MakeStream = fn(&Shape, &mut Rng, usize, &mut Vec<u8>, &mut Calls) -> usize;

/// The workloads, by name: the dialect, the shape of a response, and whether
/// responses are made until [`TARGET_FRAGMENTS`] (else [`LARGE_RESPONSES`]).
const WORKLOADS: [&str; 4] = ["openai", "anthropic", "openai-large", "anthropic-large"];

fn workload(name: &'static str) -> Workload {
    let (dialect, make): (Dialect, MakeStream) = if name.starts_with("openai") {
        (Dialect::OpenAiChat, openai_stream)
    } else {
        (Dialect::Anthropic, anthropic_stream)
    };
    let large = name.ends_with("-large");
    let shape = if large { &LARGE_ARGUMENT } else { &FOUR_CALLS };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut streams, mut expected, mut fragments) = (Vec::new(), Vec::new(), 0);
    while if large {
        streams.len() < LARGE_RESPONSES
    } else {
        fragments < TARGET_FRAGMENTS
    } {
        let (mut out, mut calls) = (Vec::new(), Vec::new());
        fragments += make(shape, &mut rng, streams.len(), &mut out, &mut calls);
        streams.push(out);
        expected.push(calls);
    }
    let events = streams
        .iter()
        .map(|s| memchr::memmem::find_iter(s, b"data: ").count())
        .sum();
    Workload {
        name,
        dialect,
        streams,
        expected,
        fragments,
        events,
    }
}

// ------------------------------------------------------------------ the floor

/// One `data:` line's payload of each SSE line in reads of `READ` bytes; a line
/// cut by a read is carried over. `[DONE]` is skipped.
#[inline(always)]
fn frame(data: &[u8], mut on_data: impl FnMut(&[u8])) {
    let mut carry: Vec<u8> = Vec::new();
    let mut line_of = |line: &[u8]| {
        if let Some(payload) = line.strip_prefix(b"data: ") {
            if payload != b"[DONE]" {
                on_data(payload);
            }
        }
    };
    for read in data.chunks(READ) {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', read) {
            if carry.is_empty() {
                line_of(&read[start..nl]);
            } else {
                carry.extend_from_slice(&read[start..nl]);
                line_of(&carry);
                carry.clear();
            }
            start = nl + 1;
        }
        carry.extend_from_slice(&read[start..]);
    }
}

#[derive(Default, Debug, PartialEq)]
struct Call {
    id: String,
    name: String,
    args: String,
}

type Map = BTreeMap<u64, Call>;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    index: u64,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    content_block: Option<Block<'a>>,
    #[serde(borrow, default)]
    delta: Option<EventDelta<'a>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct EventDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

fn apply_chunk(map: &mut Map, chunk: Chunk<'_>) {
    for choice in chunk.choices {
        for tc in choice.delta.tool_calls.into_iter().flatten() {
            let call = map.entry(tc.index).or_default();
            if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
                call.id = id.into_owned();
            }
            if let Some(f) = tc.function {
                if let Some(name) = f.name.filter(|s| !s.is_empty()) {
                    call.name = name.into_owned();
                }
                if let Some(piece) = f.arguments {
                    call.args.push_str(&piece);
                }
            }
        }
    }
}

fn apply_event(map: &mut Map, event: Event<'_>) {
    match (&*event.kind, event.index) {
        ("content_block_delta", Some(i)) => {
            if let Some(d) = event.delta {
                if d.kind.as_deref() == Some("input_json_delta") {
                    if let (Some(call), Some(piece)) = (map.get_mut(&i), d.partial_json) {
                        call.args.push_str(&piece);
                    }
                }
            }
        }
        ("content_block_start", Some(i)) => {
            if let Some(b) = event.content_block.filter(|b| b.kind == "tool_use") {
                map.insert(
                    i,
                    Call {
                        id: b.id.unwrap_or_default().into_owned(),
                        name: b.name.unwrap_or_default().into_owned(),
                        args: String::new(),
                    },
                );
            }
        }
        _ => {}
    }
}

// The same OpenAI reassembly without the per-event `Vec`s of the derived structs:
// a visitor walks the chunk and applies each tool call to the map as it is read.

/// An object key, borrowed unless it holds escapes.
#[derive(Deserialize)]
#[serde(transparent)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

fn apply_tool_call(map: &mut Map, tc: ToolCall<'_>) {
    let call = map.entry(tc.index).or_default();
    if let Some(id) = tc.id.filter(|s| !s.is_empty()) {
        call.id = id.into_owned();
    }
    if let Some(f) = tc.function {
        if let Some(name) = f.name.filter(|s| !s.is_empty()) {
            call.name = name.into_owned();
        }
        if let Some(piece) = f.arguments {
            call.args.push_str(&piece);
        }
    }
}

/// What a visitor does at one level of the chunk: which key it descends into.
#[derive(Clone, Copy)]
enum Level {
    Chunk,
    Choices,
    Choice,
    Delta,
    ToolCalls,
}

struct Walk<'m>(&'m mut Map, Level);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.1 {
            Level::Chunk | Level::Choice | Level::Delta => d.deserialize_map(self),
            Level::Choices => d.deserialize_seq(self),
            Level::ToolCalls => d.deserialize_option(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an OpenAI chat chunk")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<(), A::Error> {
        let (want, next) = match self.1 {
            Level::Chunk => ("choices", Level::Choices),
            Level::Choice => ("delta", Level::Delta),
            _ => ("tool_calls", Level::ToolCalls),
        };
        while let Some(key) = access.next_key::<Key<'de>>()? {
            if key.0 == want {
                access.next_value_seed(Walk(&mut *self.0, next))?;
            } else {
                access.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Level::Choices = self.1 {
            while seq
                .next_element_seed(Walk(&mut *self.0, Level::Choice))?
                .is_some()
            {}
        } else {
            while let Some(tc) = seq.next_element::<ToolCall<'de>>()? {
                apply_tool_call(self.0, tc);
            }
        }
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Parser {
    SerdeJson,
    SonicRs,
    SimdJson,
    SonicWalk,
}

/// The floor: memchr framing, one typed parse per event, a `BTreeMap` by index.
#[inline(never)]
fn floor(parser: Parser, dialect: Dialect, data: &[u8]) -> Map {
    let mut map = Map::new();
    let mut scratch: Vec<u8> = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    let openai = dialect == Dialect::OpenAiChat;
    frame(data, |payload| match parser {
        Parser::SonicWalk if openai => {
            let mut de = sonic_rs::Deserializer::from_slice(payload);
            Walk(&mut map, Level::Chunk).deserialize(&mut de).unwrap();
            de.end().unwrap();
        }
        Parser::SonicWalk => apply_event(&mut map, sonic_rs::from_slice(payload).unwrap()),
        Parser::SerdeJson => {
            if openai {
                apply_chunk(&mut map, serde_json::from_slice(payload).unwrap());
            } else {
                apply_event(&mut map, serde_json::from_slice(payload).unwrap());
            }
        }
        Parser::SonicRs => {
            if openai {
                apply_chunk(&mut map, sonic_rs::from_slice(payload).unwrap());
            } else {
                apply_event(&mut map, sonic_rs::from_slice(payload).unwrap());
            }
        }
        Parser::SimdJson => {
            // simd-json unescapes in place: a mutable copy of the payload.
            scratch.clear();
            scratch.extend_from_slice(payload);
            if openai {
                let chunk =
                    simd_json::serde::from_slice_with_buffers(&mut scratch, &mut buffers).unwrap();
                apply_chunk(&mut map, chunk);
            } else {
                let event =
                    simd_json::serde::from_slice_with_buffers(&mut scratch, &mut buffers).unwrap();
                apply_event(&mut map, event);
            }
        }
    });
    map
}

fn calls_of_map(map: Map) -> Calls {
    map.into_values().map(|c| (c.id, c.name, c.args)).collect()
}

// ------------------------------------------------------------------ toolstitch

/// What `Assembler.feed_bytes` runs for each read, then `close()` (as
/// `benches/bytes.rs`).
#[inline(never)]
fn toolstitch(dialect: Dialect, data: &[u8]) -> BytesAssembler {
    let core = Assembler::new(Some(dialect), AssemblerLimits::default());
    let mut asm = BytesAssembler::new(core, FramingLimits::default());
    for read in data.chunks(READ) {
        asm.feed_bytes(read, None).unwrap();
    }
    asm.close(None).unwrap();
    asm
}

fn calls_of_toolstitch(asm: &BytesAssembler) -> Calls {
    let messages = asm.core().messages();
    assert!(messages.iter().all(|m| m.complete), "incomplete message");
    messages
        .into_iter()
        .flat_map(|m| m.tool_uses)
        .map(|t| (t.block.id, t.block.name, t.block.input))
        .collect()
}

// ------------------------------------------------------------------ timing

const CONTENDERS: [(&str, &str, Option<Parser>); 5] = [
    (
        "toolstitch",
        "toolstitch `BytesAssembler` (feed_bytes + close)",
        None,
    ),
    (
        "serde_json",
        "floor: memchr + serde_json (borrowed `Cow<str>`)",
        Some(Parser::SerdeJson),
    ),
    (
        "sonic_rs",
        "floor: memchr + sonic-rs (borrowed `Cow<str>`)",
        Some(Parser::SonicRs),
    ),
    (
        "simd_json",
        "floor: memchr + simd-json (in place, reused buffers)",
        Some(Parser::SimdJson),
    ),
    (
        "sonic_rs_walk",
        "floor: memchr + sonic-rs, a visitor straight into the map (no `Vec` per event)",
        Some(Parser::SonicWalk),
    ),
];

/// The contenders of a dialect: the visitor is for OpenAI chat alone (the
/// Anthropic structs hold no `Vec`, so there it would be the sonic-rs row again).
fn contenders(dialect: Dialect) -> &'static [(&'static str, &'static str, Option<Parser>)] {
    let n = if dialect == Dialect::OpenAiChat { 5 } else { 4 };
    &CONTENDERS[..n]
}

fn run(contender: Option<Parser>, w: &Workload, stream: &[u8]) {
    match contender {
        None => drop(std::hint::black_box(toolstitch(w.dialect, stream))),
        Some(p) => drop(std::hint::black_box(floor(p, w.dialect, stream))),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn measure(w: &Workload, rounds: usize) -> Vec<f64> {
    let cs = contenders(w.dialect);
    // Every contender rebuilds exactly the expected calls before it is timed.
    for (s, expected) in w.streams.iter().zip(&w.expected) {
        assert_eq!(
            &calls_of_toolstitch(&toolstitch(w.dialect, s)),
            expected,
            "toolstitch"
        );
        for (key, _, p) in cs.iter().skip(1) {
            let got = calls_of_map(floor(p.unwrap(), w.dialect, s));
            assert_eq!(
                &got, expected,
                "{key} rebuilt different calls on {}",
                w.name
            );
        }
    }
    let mut times = vec![Vec::new(); cs.len()];
    for _ in 0..rounds {
        for (n, (_, _, p)) in cs.iter().enumerate() {
            let t0 = Instant::now();
            for s in &w.streams {
                run(*p, w, s);
            }
            times[n].push(t0.elapsed().as_secs_f64());
        }
    }
    times.into_iter().map(median).collect()
}

fn title(name: &str) -> &'static str {
    match name {
        "openai" => "OpenAI chat, 4 calls per response",
        "anthropic" => "Anthropic, 4 calls per response",
        "openai-large" => "OpenAI chat, one large argument (6 MiB in fragments of 1-16 KiB)",
        _ => "Anthropic, one large argument (6 MiB in fragments of 1-16 KiB)",
    }
}

/// `--profile NAME [SECONDS] [CONTENDER]`: only one contender (toolstitch by
/// default) on one workload, for about SECONDS (5), for a profiler.
fn profile(args: &[String]) {
    let name = WORKLOADS
        .into_iter()
        .find(|w| args.first().is_some_and(|a| a == w))
        .unwrap_or("openai");
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5.0);
    let w = workload(name);
    let contender = args.get(2).and_then(|key| {
        CONTENDERS
            .iter()
            .find(|(k, _, _)| k == key)
            .and_then(|c| c.2)
    });
    let t0 = Instant::now();
    let mut passes = 0_u32;
    while t0.elapsed().as_secs_f64() < seconds {
        for s in &w.streams {
            run(contender, &w, s);
        }
        passes += 1;
    }
    let per_event = t0.elapsed().as_secs_f64() / f64::from(passes) / w.events as f64 * 1e9;
    println!("{name}: {passes} passes, {per_event:.1} ns/event");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if let Some(at) = args.iter().position(|a| a == "--profile-corpus") {
        count::profile_corpus(&args[at + 1..]);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--profile") {
        profile(&args[at + 1..]);
        return;
    }
    let write = !args.iter().any(|a| a == "--no-write");
    let corpora: Vec<(String, std::path::PathBuf)> = args
        .iter()
        .zip(args.iter().skip(1))
        .filter(|(flag, _)| *flag == "--corpus")
        .map(|(_, v)| {
            let (name, dir) = v.split_once('=').unwrap();
            (name.to_owned(), dir.into())
        })
        .collect();
    let corpora_only = args.iter().any(|a| a == "--corpora-only");
    let rounds: usize = args
        .iter()
        .filter(|a| !a.contains('='))
        .find_map(|a| a.parse().ok())
        .unwrap_or(11)
        .max(3);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_owned();
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let intro = if corpora_only {
        format!(
            "Produced by `cargo bench --bench floor -- --corpora-only --corpus NAME=DIR ...` \
             (release build), medians of {rounds} interleaved rounds, load average at start \
             {load}, {cpus} CPUs: each dialect's own floor beside toolstitch on the corpora \
             below (`benches/README.md` describes the floors; the 4-call and \
             one-large-argument workloads are left out of such a run). \
             `benches/floor_instructions.py` adds the instruction counts."
        )
    } else {
        format!(
            "Produced by `cargo bench --bench floor` (release build), medians of {rounds} \
             interleaved rounds, load average at start {load}, {cpus} CPUs. The workloads are \
             the 4-call OpenAI chat and Anthropic workloads of `benches/compare.py` (same \
             shape, own random sequence); every floor rebuilt exactly the calls toolstitch \
             rebuilt before it was timed. A floor frames lines with `memchr`, parses each \
             event once into typed structs that borrow their strings (derived `Deserialize`; \
             the lists of choices and tool calls are a `Vec` per event), and appends to a \
             `BTreeMap` by index: no checks, no protocol. The one-large-argument \
             workloads have one call per response whose arguments are one 6 MiB string \
             (a document: words, quotes, tabs, non-ASCII) cut in fragments of 1-16 KiB. \
             Through Python: \
             `benches/compare.py --floor benches/results/floor.json` (release build) adds \
             its section below."
        )
    };
    let mut md = vec![
        "# The floor of stream reassembly".to_owned(),
        String::new(),
        intro,
        String::new(),
    ];
    let mut json = serde_json::Map::new();
    json.insert("rounds".into(), rounds.into());
    json.insert("load_average".into(), load.clone().into());
    for (name, dir) in &corpora {
        corpus_section(name, dir, rounds, &mut md, &mut json);
    }
    for name in WORKLOADS {
        if corpora_only {
            break;
        }
        let w = workload(name);
        let bytes: usize = w.streams.iter().map(Vec::len).sum();
        let times = measure(&w, rounds);
        let cs = contenders(w.dialect);
        let best = (1..cs.len())
            .min_by(|&a, &b| times[a].total_cmp(&times[b]))
            .unwrap();
        let title = title(name);
        println!(
            "{title}: {} events ({} fragments), {} responses, {:.1} MB",
            w.events,
            w.fragments,
            w.streams.len(),
            bytes as f64 / 1e6
        );
        md.push(format!("## {title}"));
        md.push(String::new());
        md.push(format!(
            "{} events ({} argument fragments) in {} responses, {:.1} MB of SSE.",
            w.events,
            w.fragments,
            w.streams.len(),
            bytes as f64 / 1e6
        ));
        md.push(String::new());
        md.push("| contender | ns / event | ns / fragment | MB/s of SSE | vs best floor |".into());
        md.push("|---|---:|---:|---:|---:|".into());
        let mut entry = serde_json::Map::new();
        entry.insert("events".into(), w.events.into());
        entry.insert("fragments".into(), w.fragments.into());
        entry.insert("sse_bytes".into(), bytes.into());
        entry.insert("best_floor".into(), cs[best].0.into());
        for (n, (key, label, _)) in cs.iter().enumerate() {
            let secs = times[n];
            let (per_event, per_fragment) = (
                secs / w.events as f64 * 1e9,
                secs / w.fragments as f64 * 1e9,
            );
            let mbs = bytes as f64 / 1e6 / secs;
            let ratio = secs / times[best];
            println!(
                "  {label:78} {per_event:7.1} ns/event {mbs:7.1} MB/s {ratio:5.2}x best floor"
            );
            md.push(format!(
                "| {label} | {per_event:.0} | {per_fragment:.0} | {mbs:.0} | {ratio:.2}x |"
            ));
            entry.insert(
                (*key).into(),
                serde_json::json!({
                    "seconds": secs, "ns_per_event": per_event,
                    "ns_per_fragment": per_fragment, "mb_per_s": mbs, "vs_best_floor": ratio,
                }),
            );
        }
        md.push(String::new());
        json.insert(name.into(), entry.into());
    }
    if write {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/results");
        std::fs::create_dir_all(&dir).unwrap();
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(json)).unwrap();
        std::fs::write(dir.join("floor.json"), text + "\n").unwrap();
        std::fs::write(dir.join("floor.md"), md.join("\n") + "\n").unwrap();
        println!("wrote {}", dir.join("floor.json").display());
    }
}

/// One corpus's section: every dialect and form, toolstitch beside its floor.
fn corpus_section(
    name: &str,
    dir: &std::path::Path,
    rounds: usize,
    md: &mut Vec<String>,
    json: &mut serde_json::Map<String, serde_json::Value>,
) {
    let files = dialects::load(dir, None);
    let groups = dialects::groups(&files);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_owned();
    md.push(format!("## Every dialect, the {name} corpus"));
    md.push(String::new());
    md.push(format!(
        "`{name}` corpus (`benches/bench_dialects.py` wrote it; gzipped files left out), \
         medians of {rounds} interleaved rounds, load average {load} when the section \
         started. \"vs floor\" is toolstitch's time over its dialect's floor's on the same \
         files; \"vs OpenAI chat\" is toolstitch's time over its time on OpenAI chat's \
         files of the same form, which carry the same calls; \"vs streamed\" (bodies) is \
         toolstitch's time per body over its time per stream on the same messages \
         streamed (each body's twin stream in the corpus, gzipped twins left out), \
         timed in the same rounds."
    ));
    md.push(String::new());
    md.push(
        "| dialect | form | files | events | MB | toolstitch MB/s | ns / event | floor MB/s \
         | vs floor | vs OpenAI chat | vs streamed |"
            .into(),
    );
    md.push("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|".into());
    let mut entry = serde_json::Map::new();
    entry.insert("load_average".into(), load.into());
    let mut chat: [Option<f64>; 2] = [None, None];
    for g in &groups {
        let twins = if g.body {
            dialects::twins(g, &files)
        } else {
            Vec::new()
        };
        let [ts, fl, tw] = dialects::measure(g, &twins, rounds);
        // A body's time over its message streamed, per file (the twin streams
        // present: gzipped ones are left out).
        let vs_streamed = (!twins.is_empty() && tw > 0.0)
            .then(|| (ts / g.files.len() as f64) / (tw / twins.len() as f64));
        let bytes: usize = g.files.iter().map(|f| f.data.len()).sum();
        let events: usize = g.files.iter().map(|f| dialects::events(f)).sum();
        let form = if g.body { "body" } else { "stream" };
        let slot = usize::from(g.body);
        if g.dialect == Dialect::OpenAiChat {
            chat[slot] = Some(ts);
        }
        let vs_chat = chat[slot].map(|c| ts / c);
        let mb = bytes as f64 / 1e6;
        let line = format!(
            "| {} | {form} | {} | {events} | {mb:.1} | {:.0} | {:.0} | {:.0} | {:.2}x | {} | {} |",
            g.dialect.name(),
            g.files.len(),
            mb / ts,
            ts / events as f64 * 1e9,
            mb / fl,
            ts / fl,
            vs_chat.map_or("-".to_owned(), |r| format!("{r:.2}x")),
            vs_streamed.map_or("-".to_owned(), |r| format!("{r:.2}x")),
        );
        println!("{name}: {line}");
        md.push(line);
        entry.insert(
            format!("{}/{form}", g.dialect.name()),
            serde_json::json!({
                "files": g.files.len(), "events": events, "bytes": bytes,
                "toolstitch_seconds": ts, "floor_seconds": fl, "vs_floor": ts / fl,
                "vs_openai_chat": vs_chat, "twin_streams": twins.len(),
                "twin_streams_seconds": tw, "vs_streamed": vs_streamed,
            }),
        );
    }
    md.push(String::new());
    json.insert(format!("corpus:{name}"), entry.into());
}
