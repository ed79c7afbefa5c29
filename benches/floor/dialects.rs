//! The floor of every dialect, on a corpus written by `benches/corpus.py` (or
//! any directory with the same `.manifest.json`): for each dialect its own
//! generic reader, and toolstitch's `BytesAssembler` beside it on the same
//! bytes.
//!
//! A floor frames the transport with no checks (`memchr` over SSE or JSON
//! lines in reads of `READ` bytes, a line cut by a read carried over; the AWS
//! event-stream prelude's two lengths, no CRC), parses each event once with
//! sonic-rs (the fastest or within 2% of it on every workload of this file's
//! first tables but the one-large-argument ones) into typed structs that
//! borrow their strings, and appends to a `BTreeMap` by index. Calls sent
//! whole (Gemini, Ollama, whole bodies) re-serialise their arguments object
//! compactly, as toolstitch does (`sonic_rs::Value`, then `to_string`). Bedrock's InvokeModel frames carry base64:
//! the floor decodes it with a table (no crate) and parses the Anthropic event
//! inside. No floor accumulates text. Gzipped files are left out (decompression
//! is not `feed_bytes`' work). Every floor must rebuild exactly the calls
//! toolstitch rebuilds, on every file, before anything is timed.

use super::bodies::body;
use super::typed::{apply_chunk, apply_event, frame, Call, Chunk, Event, Function, Map};
use super::{median, READ};
use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{Assembler, AssemblerLimits, BytesAssembler, Dialect};
use serde::Deserialize;
use std::borrow::Cow;
use std::path::Path;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Transport {
    Sse,
    Lines,
    EventStream,
    Body,
}

pub struct File {
    pub dialect: Dialect,
    pub transport: Transport,
    /// The response's number in the corpus: a body and its twin stream (the
    /// same message streamed) share it.
    pub number: u32,
    pub data: Vec<u8>,
}

#[derive(Deserialize)]
struct Manifest {
    files: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    path: String,
    dialect: String,
    transport: String,
    gzip: bool,
}

/// The files of a corpus directory, gzipped ones left out; only those of
/// `dialect` (its name) when one is given.
pub fn load(dir: &Path, dialect: Option<&str>) -> Vec<File> {
    let text = std::fs::read_to_string(dir.join(".manifest.json")).unwrap();
    let manifest: Manifest = serde_json::from_str(&text).unwrap();
    manifest
        .files
        .into_iter()
        .filter(|e| !e.gzip && dialect.is_none_or(|d| d == e.dialect))
        .map(|e| File {
            dialect: Dialect::parse_provider(&e.dialect).unwrap().unwrap(),
            transport: match e.transport.as_str() {
                "sse" => Transport::Sse,
                "jsonl" => Transport::Lines,
                "eventstream" => Transport::EventStream,
                _ => Transport::Body,
            },
            number: e
                .path
                .rsplit('/')
                .next()
                .and_then(|n| n.split('-').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(u32::MAX),
            data: std::fs::read(dir.join(&e.path)).unwrap(),
        })
        .collect()
}

// ------------------------------------------------------------------ framing

/// Every non-empty line (JSON lines) in reads of `READ` bytes.
#[inline(always)]
fn lines(data: &[u8], mut on_line: impl FnMut(&[u8])) {
    let mut carry: Vec<u8> = Vec::new();
    for read in data.chunks(READ) {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', read) {
            if carry.is_empty() {
                if nl > start {
                    on_line(&read[start..nl]);
                }
            } else {
                carry.extend_from_slice(&read[start..nl]);
                on_line(&carry);
                carry.clear();
            }
            start = nl + 1;
        }
        carry.extend_from_slice(&read[start..]);
    }
}

/// The payload of every AWS event-stream message: the prelude's total and
/// header lengths, nothing checked.
#[inline(always)]
fn frames(data: &[u8], mut on_payload: impl FnMut(&[u8])) {
    let mut at = 0;
    while at + 12 <= data.len() {
        let total = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let headers = u32::from_be_bytes(data[at + 4..at + 8].try_into().unwrap()) as usize;
        on_payload(&data[at + 12 + headers..at + total - 4]);
        at += total;
    }
}

const B64: [u8; 256] = {
    let mut t = [0xFF_u8; 256];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Standard base64 (padding ignored), appended to `out`; nothing checked.
fn base64(text: &[u8], out: &mut Vec<u8>) {
    let mut acc = 0_u32;
    let mut bits = 0;
    for &c in text {
        let v = B64[c as usize];
        if v == 0xFF {
            continue;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
}

// ------------------------------------------------------------------ events

pub(crate) fn new_call(id: Cow<'_, str>, name: Cow<'_, str>) -> Call {
    Call {
        id: id.into_owned(),
        name: name.into_owned(),
        args: String::new(),
    }
}

/// A call sent whole: the next index, a minted id (as toolstitch mints them).
fn whole_call(map: &mut Map, name: &str, args: &str) {
    let n = map.len() as u64;
    map.insert(
        n,
        Call {
            id: format!("call_0_{n}"),
            name: name.to_owned(),
            args: args.to_owned(),
        },
    );
}

#[derive(Deserialize)]
struct ResponsesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    item: Option<ResponsesItem<'a>>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct ResponsesItem<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

fn apply_responses(map: &mut Map, e: ResponsesEvent<'_>) {
    match (&*e.kind, e.output_index) {
        ("response.function_call_arguments.delta", Some(i)) => {
            if let (Some(call), Some(piece)) = (map.get_mut(&i), e.delta) {
                call.args.push_str(&piece);
            }
        }
        ("response.output_item.added", Some(i)) => {
            if let Some(item) = e.item.filter(|t| t.kind == "function_call") {
                let (id, name) = (
                    item.call_id.unwrap_or_default(),
                    item.name.unwrap_or_default(),
                );
                map.insert(i, new_call(id, name));
            }
        }
        _ => {}
    }
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockEvent<'a> {
    #[serde(default)]
    contentBlockIndex: Option<u64>,
    #[serde(borrow, default)]
    start: Option<BedrockStart<'a>>,
    #[serde(borrow, default)]
    delta: Option<BedrockDelta<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockStart<'a> {
    #[serde(borrow, default)]
    toolUse: Option<BedrockToolStart<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockToolStart<'a> {
    #[serde(borrow)]
    toolUseId: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockDelta<'a> {
    #[serde(borrow, default)]
    toolUse: Option<BedrockToolDelta<'a>>,
}

#[derive(Deserialize)]
struct BedrockToolDelta<'a> {
    #[serde(borrow)]
    input: Cow<'a, str>,
}

fn apply_bedrock(map: &mut Map, e: BedrockEvent<'_>) {
    let Some(i) = e.contentBlockIndex else { return };
    if let Some(t) = e.start.and_then(|s| s.toolUse) {
        map.insert(i, new_call(t.toolUseId, t.name));
    } else if let Some(t) = e.delta.and_then(|d| d.toolUse) {
        if let Some(call) = map.get_mut(&i) {
            call.args.push_str(&t.input);
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct GeminiChunk<'a> {
    #[serde(borrow, default)]
    candidates: Vec<GeminiCandidate<'a>>,
}

#[derive(Deserialize)]
struct GeminiCandidate<'a> {
    #[serde(borrow, default)]
    content: Option<GeminiContent<'a>>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(borrow, default)]
    parts: Vec<GeminiPart<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct GeminiPart<'a> {
    #[serde(borrow, default)]
    functionCall: Option<WholeCall<'a>>,
}

/// A call sent whole: `{"name": ..., "args" | "arguments": {...}}`. Its
/// arguments are the object re-serialised compactly, keys in arrival order (as
/// toolstitch gives them: the text as sent may have spaces or `\u` escapes).
#[derive(Deserialize)]
struct WholeCall<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, alias = "arguments")]
    args: Option<sonic_rs::Value>,
}

pub(crate) fn compact(args: Option<&sonic_rs::Value>) -> String {
    args.map_or_else(|| "{}".to_owned(), |v| sonic_rs::to_string(v).unwrap())
}

pub(crate) fn apply_gemini(map: &mut Map, chunk: GeminiChunk<'_>) {
    for part in chunk
        .candidates
        .into_iter()
        .filter_map(|c| c.content)
        .flat_map(|c| c.parts)
    {
        if let Some(f) = part.functionCall {
            whole_call(map, &f.name, &compact(f.args.as_ref()));
        }
    }
}

#[derive(Deserialize)]
struct CohereEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<CohereDelta<'a>>,
}

#[derive(Deserialize)]
struct CohereDelta<'a> {
    #[serde(borrow, default)]
    message: Option<CohereMessage<'a>>,
}

#[derive(Deserialize)]
struct CohereMessage<'a> {
    #[serde(borrow, default)]
    tool_calls: Option<CohereToolCall<'a>>,
}

#[derive(Deserialize)]
struct CohereToolCall<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<Function<'a>>,
}

fn apply_cohere(map: &mut Map, e: CohereEvent<'_>) {
    let (Some(i), Some(tc)) = (
        e.index,
        e.delta.and_then(|d| d.message).and_then(|m| m.tool_calls),
    ) else {
        return;
    };
    let f = tc.function;
    match &*e.kind {
        "tool-call-start" => {
            let name = f.as_ref().and_then(|f| f.name.clone()).unwrap_or_default();
            map.insert(i, new_call(tc.id.unwrap_or_default(), name));
        }
        "tool-call-delta" => {
            if let (Some(call), Some(piece)) = (map.get_mut(&i), f.and_then(|f| f.arguments)) {
                call.args.push_str(&piece);
            }
        }
        _ => {}
    }
}

#[derive(Deserialize)]
struct OllamaChunk<'a> {
    #[serde(borrow, default)]
    message: Option<OllamaMessage<'a>>,
}

#[derive(Deserialize)]
struct OllamaMessage<'a> {
    #[serde(borrow, default)]
    tool_calls: Option<Vec<OllamaToolCall<'a>>>,
}

#[derive(Deserialize)]
struct OllamaToolCall<'a> {
    #[serde(borrow)]
    function: WholeCall<'a>,
}

fn apply_ollama(map: &mut Map, chunk: OllamaChunk<'_>) {
    for tc in chunk
        .message
        .and_then(|m| m.tool_calls)
        .into_iter()
        .flatten()
    {
        let f = tc.function;
        whole_call(map, &f.name, &compact(f.args.as_ref()));
    }
}

#[derive(Deserialize)]
struct InvokeFrame<'a> {
    #[serde(borrow)]
    bytes: Cow<'a, str>,
}

#[derive(Deserialize)]
struct InteractionEvent<'a> {
    #[serde(borrow)]
    event_type: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    step: Option<InteractionStep<'a>>,
    #[serde(borrow, default)]
    delta: Option<InteractionDelta<'a>>,
}

#[derive(Deserialize)]
struct InteractionStep<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct InteractionDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

fn apply_interaction(map: &mut Map, e: InteractionEvent<'_>) {
    let Some(i) = e.index else { return };
    match &*e.event_type {
        "step.start" => {
            if let Some(s) = e.step.filter(|s| s.kind == "function_call") {
                map.insert(
                    i,
                    new_call(s.id.unwrap_or_default(), s.name.unwrap_or_default()),
                );
            }
        }
        "step.delta" => {
            if let Some(d) = e.delta.filter(|d| d.kind == "arguments_delta") {
                if let (Some(call), Some(piece)) = (map.get_mut(&i), d.arguments) {
                    call.args.push_str(&piece);
                }
            }
        }
        _ => {}
    }
}

/// The floor of one file.
#[inline(never)]
pub fn floor(f: &File) -> Map {
    let mut map = Map::new();
    let data = &f.data[..];
    match (f.dialect, f.transport) {
        (d, Transport::Body) => body(&mut map, d, data),
        (Dialect::OpenAiChat, Transport::Sse) => {
            frame(data, |p| {
                apply_chunk(&mut map, sonic_rs::from_slice::<Chunk<'_>>(p).unwrap())
            });
        }
        (Dialect::Anthropic, Transport::Sse) => {
            frame(data, |p| {
                apply_event(&mut map, sonic_rs::from_slice::<Event<'_>>(p).unwrap())
            });
        }
        (Dialect::OpenAiResponses, Transport::Sse) => {
            frame(data, |p| {
                apply_responses(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::Cohere, Transport::Sse) => {
            frame(data, |p| {
                apply_cohere(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::Gemini, Transport::Sse) => {
            frame(data, |p| {
                apply_gemini(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::Gemini, Transport::Lines) => {
            lines(data, |p| {
                apply_gemini(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::Ollama, Transport::Lines) => {
            lines(data, |p| {
                apply_ollama(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::GeminiInteractions, Transport::Lines) => {
            lines(data, |p| {
                apply_interaction(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::Bedrock, Transport::EventStream) => {
            frames(data, |p| {
                apply_bedrock(&mut map, sonic_rs::from_slice(p).unwrap())
            });
        }
        (Dialect::BedrockInvoke, Transport::EventStream) => {
            let mut decoded = Vec::new();
            frames(data, |p| {
                let frame: InvokeFrame<'_> = sonic_rs::from_slice(p).unwrap();
                decoded.clear();
                base64(frame.bytes.as_bytes(), &mut decoded);
                apply_event(
                    &mut map,
                    sonic_rs::from_slice::<Event<'_>>(&decoded).unwrap(),
                );
            });
        }
        (d, t) => panic!("no floor for {} over {t:?}", d.name()),
    }
    map
}

/// What `Assembler.feed_bytes` runs for each read, then `close()`.
#[inline(never)]
pub fn toolstitch(f: &File) -> BytesAssembler {
    let core = Assembler::new(Some(f.dialect), AssemblerLimits::default());
    let mut asm = BytesAssembler::new(core, FramingLimits::default());
    for read in f.data.chunks(READ) {
        asm.feed_bytes(read, None).unwrap();
    }
    asm.close(None).unwrap();
    asm
}

type Calls = Vec<(String, String, String)>;

fn calls_of_toolstitch(asm: &BytesAssembler) -> Calls {
    let messages = asm.core().messages();
    assert!(messages.iter().all(|m| m.complete), "incomplete message");
    messages
        .into_iter()
        .flat_map(|m| m.tool_uses)
        .map(|t| (t.block.id, t.block.name, t.block.input))
        .collect()
}

/// Events of a file: `data:` lines, JSON lines, frames, or one body.
pub fn events(f: &File) -> usize {
    match f.transport {
        Transport::Sse => memchr::memmem::find_iter(&f.data, b"data: ").count(),
        Transport::Lines => memchr::memchr_iter(b'\n', &f.data).count(),
        Transport::EventStream => {
            let mut n = 0;
            frames(&f.data, |_| n += 1);
            n
        }
        Transport::Body => 1,
    }
}

pub struct Group<'c> {
    pub dialect: Dialect,
    pub body: bool,
    pub files: Vec<&'c File>,
}

/// The files by dialect and form (streams, bodies), in the registry's order.
pub fn groups(files: &[File]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for d in Dialect::ALL {
        for body in [false, true] {
            let of: Vec<&File> = files
                .iter()
                .filter(|f| f.dialect == d && (f.transport == Transport::Body) == body)
                .collect();
            if !of.is_empty() {
                out.push(Group {
                    dialect: d,
                    body,
                    files: of,
                });
            }
        }
    }
    out
}

/// The streams of the same messages as a group of bodies (gzipped ones are
/// not loaded, so a body may have none).
pub fn twins<'c>(g: &Group<'_>, files: &'c [File]) -> Vec<&'c File> {
    files
        .iter()
        .filter(|f| {
            f.dialect == g.dialect
                && f.transport != Transport::Body
                && g.files.iter().any(|b| b.number == f.number)
        })
        .collect()
}

/// `[toolstitch seconds, floor seconds, toolstitch seconds on the twin
/// streams]`, medians of interleaved rounds, after checking that the floor
/// rebuilds toolstitch's calls on every file.
pub fn measure(g: &Group<'_>, twins: &[&File], rounds: usize) -> [f64; 3] {
    for f in &g.files {
        let want = calls_of_toolstitch(&toolstitch(f));
        let got: Calls = floor(f)
            .into_values()
            .map(|c| (c.id, c.name, c.args))
            .collect();
        assert_eq!(
            got,
            want,
            "the {} floor rebuilt different calls",
            g.dialect.name()
        );
    }
    // A small group is run several times per round, so that each timing
    // spans at least 50 ms (a few scheduler slices on a shared machine).
    let reps = |files: &[&File]| {
        let t0 = Instant::now();
        for f in files {
            drop(std::hint::black_box(toolstitch(f)));
        }
        let once = t0.elapsed().as_secs_f64().max(1e-6);
        (0.05 / once).ceil().max(1.0) as usize
    };
    let (reps, twin_reps) = (reps(&g.files), reps(twins));
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        let t0 = Instant::now();
        for _ in 0..reps {
            for f in &g.files {
                drop(std::hint::black_box(toolstitch(f)));
            }
        }
        times[0].push(t0.elapsed().as_secs_f64() / reps as f64);
        let t0 = Instant::now();
        for _ in 0..reps {
            for f in &g.files {
                drop(std::hint::black_box(floor(f)));
            }
        }
        times[1].push(t0.elapsed().as_secs_f64() / reps as f64);
        if !twins.is_empty() {
            let t0 = Instant::now();
            for _ in 0..twin_reps {
                for f in twins {
                    drop(std::hint::black_box(toolstitch(f)));
                }
            }
            times[2].push(t0.elapsed().as_secs_f64() / twin_reps as f64);
        }
    }
    let [a, b, c] = times;
    [
        median(a),
        median(b),
        if c.is_empty() { 0.0 } else { median(c) },
    ]
}
