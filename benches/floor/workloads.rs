//! The synthetic workloads of the floor bench: compare.py's 4-call OpenAI chat and
//! Anthropic responses and the one-large-argument ones, with the calls each
//! response carries.

use std::io::Write as _;

use _toolstitch::providers::Dialect;

const ARG_BYTES: usize = 2048;
const TARGET_FRAGMENTS: usize = 200_000;
const CALLS: usize = 4;
const ALPHABET: &str = "abcdefgh ijk\"\\:{},0123456789\n\t\u{e9}\u{65e5}\u{1f980}";

/// A small deterministic generator (xorshift64*), so that runs are comparable.
pub(crate) struct Rng(u64);

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

pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// compare.py's `arguments`: `json.dumps` (its `", "` and `": "` separators,
/// non-ASCII kept) of a query of random words, once it reaches `size` bytes.
pub(crate) fn arguments(rng: &mut Rng, size: usize) -> String {
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
pub(crate) fn pieces(rng: &mut Rng, text: &str) -> Vec<String> {
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

pub(crate) type Calls = Vec<(String, String, String)>;

/// What a workload's responses hold: how many calls, their arguments, and how
/// those are cut into fragments (one event each).
pub(crate) struct Shape {
    pub(crate) calls: usize,
    pub(crate) arguments: fn(&mut Rng) -> String,
    pub(crate) pieces: fn(&mut Rng, &str) -> Vec<String>,
}

/// compare.py's 4-call workloads.
pub(crate) const FOUR_CALLS: Shape = Shape {
    calls: CALLS,
    arguments: |rng| arguments(rng, ARG_BYTES),
    pieces,
};

/// One call whose arguments are one large string (a document's content: lines
/// of words with quotes, tabs and non-ASCII now and then), cut in fragments of
/// 1-16 KiB: what the framing and the string scan cost per byte, with the
/// per-event work spread thin.
pub(crate) const LARGE_ARGUMENT: Shape = Shape {
    calls: 1,
    arguments: |rng| large_arguments(rng, LARGE_ARG_BYTES),
    pieces: large_pieces,
};

/// The size of the large argument of one response.
pub(crate) const LARGE_ARG_BYTES: usize = 6 << 20;
/// Responses of the large-argument workload.
pub(crate) const LARGE_RESPONSES: usize = 4;

/// `{"path": …, "content": …}` with `content` about `size` bytes of a
/// document: lines of words, now and then a quoted one, a tab or non-ASCII.
pub(crate) fn large_arguments(rng: &mut Rng, size: usize) -> String {
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
pub(crate) fn large_pieces(rng: &mut Rng, text: &str) -> Vec<String> {
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

pub(crate) struct Workload {
    pub(crate) name: &'static str,
    pub(crate) dialect: Dialect,
    pub(crate) streams: Vec<Vec<u8>>,
    pub(crate) expected: Vec<Calls>,
    pub(crate) fragments: usize,
    pub(crate) events: usize,
}

/// compare.py's `openai_stream`, byte for byte in shape (orjson's compact output).
pub(crate) fn openai_stream(
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
pub(crate) fn anthropic_stream(
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
pub(crate) type MakeStream = fn(&Shape, &mut Rng, usize, &mut Vec<u8>, &mut Calls) -> usize;

/// The workloads, by name: the dialect, the shape of a response, and whether
/// responses are made until [`TARGET_FRAGMENTS`] (else [`LARGE_RESPONSES`]).
pub(crate) const WORKLOADS: [&str; 4] = ["openai", "anthropic", "openai-large", "anthropic-large"];

pub(crate) fn workload(name: &'static str) -> Workload {
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
