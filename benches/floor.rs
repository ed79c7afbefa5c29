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

use std::time::Instant;

use _toolstitch::framing::FramingLimits;
use _toolstitch::providers::{Assembler, AssemblerLimits, BytesAssembler, Dialect};

// Every dialect's floor on a corpus of `benches/corpus.py` (`--corpus NAME=DIR`).
#[path = "floor/dialects.rs"]
mod dialects;
// One group alone, for a profiler or for counting instructions.
#[path = "floor/count.rs"]
mod count;
// The synthetic workloads, and their floor.
#[path = "floor/typed.rs"]
mod typed;
// Whole bodies' floor (the dialects' corpora hold bodies beside streams).
#[path = "floor/bodies.rs"]
mod bodies;
#[path = "floor/workloads.rs"]
mod workloads;

use typed::{calls_of_map, floor, Parser};
use workloads::{workload, Calls, Workload, WORKLOADS};

const READ: usize = 64 * 1024;

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
