//! The chat stream's per-event path allocates nothing in the steady state: a
//! call's later argument fragments (escapes and all) and a message's later
//! text deltas, each in a read of its own, through the bytes assembler alone
//! and through the guard (its structural live events, one step kept per
//! response). What grows — a call's input, the message's text — grows by
//! doubling: a few reallocations over hundreds of events, no allocation per
//! event.
//!
//! The heap is counted by a global allocator that wraps the system's, so this
//! file holds one test (the harness runs nothing beside it). Run with
//! `--nocapture` for the figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::framing::FramingLimits;
use _toolstitch::guard::{CallCheck, Encoding, Guard, GuardLimits, Outcome, Step};
use _toolstitch::providers::{Assembler, AssemblerLimits, BytesAssembler, Dialect, ToolUse};
use serde_json::{json, Value};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Events of a warm-up: the first ones of a kind open what the later ones
/// only add to (the choice, the call, the memo's template, the buffers).
const WARM: usize = 20;

/// One SSE event of a chat stream, as `benches/bench_proxy.py` generates them;
/// with `nonce`, as OpenAI sends them now: `"usage": null` and a per-event
/// `obfuscation` string (so that no two events differ in one string only).
fn chunk(delta: &Value, finish: Option<&str>, nonce: Option<usize>) -> Vec<u8> {
    let mut body = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    if let Some(n) = nonce {
        body["usage"] = Value::Null;
        // 1 to 16 characters, as OpenAI's are (the longer ones are kept to
        // tell a replay: a set that grows by doubling).
        let nonce = format!(
            "{:016x}",
            (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        );
        body["obfuscation"] = json!(nonce.get(..1 + n % 16).unwrap());
    }
    format!("data: {body}\n\n").into_bytes()
}

/// The stream's events in three parts: text deltas; the call's first event;
/// its argument fragments (1-8 bytes each, JSON with quotes and `\u` escapes,
/// so that most fragments have escapes in the event's text); then the end.
struct Stream {
    texts: Vec<Vec<u8>>,
    call: Vec<u8>,
    fragments: Vec<Vec<u8>>,
    end: Vec<u8>,
}

fn stream(nonces: bool) -> Stream {
    let mut events = 0..;
    let mut chunk = |delta: &Value, finish| chunk(delta, finish, events.next().filter(|_| nonces));
    // Every third piece of text with an escape (a line's end, a quote).
    let texts = (0..300)
        .map(|i| {
            let end = ["\n", " ", "\""][i % 3];
            chunk(&json!({"content": format!("word{i}{end}")}), None)
        })
        .collect();
    let items: Vec<Value> = (0..120)
        .map(|n| json!({"n": n, "text": "\u{e9}\"x"}))
        .collect();
    // `\u00e9` as Python's `json.dumps` writes it (ASCII only).
    let arguments = json!({ "items": items })
        .to_string()
        .replace('\u{e9}', "\\u00e9");
    let mut fragments = Vec::new();
    let (mut at, mut step) = (0, 0);
    while at < arguments.len() {
        step = step % 8 + 1;
        let piece = arguments.get(at..(at + step).min(arguments.len())).unwrap();
        let delta = json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]});
        fragments.push(chunk(&delta, None));
        at += step;
    }
    let call = json!({"tool_calls": [{"index": 0, "id": "call_bench", "type": "function",
        "function": {"name": "store", "arguments": ""}}]});
    let mut end = chunk(&json!({}), Some("tool_calls"));
    end.extend_from_slice(b"data: [DONE]\n\n");
    Stream {
        texts,
        call: chunk(&call, None),
        fragments,
        end,
    }
}

/// Allocations and reallocations while `feed` takes each of `events`.
fn counted(events: &[Vec<u8>], mut feed: impl FnMut(&[u8])) -> (usize, usize) {
    let region = Region::new(GLOBAL);
    for e in events {
        feed(e);
    }
    let stats = region.change();
    (stats.allocations, stats.reallocations)
}

/// Passes every call.
struct Pass;

impl CallCheck for Pass {
    fn check(&mut self, _call: &ToolUse) -> Result<(), String> {
        Ok(())
    }
}

/// The counts of the steady state: the text deltas and the argument fragments
/// after their first [`WARM`] events, through `feed`; then the end, and the
/// message the stream makes is checked.
fn steady(s: &Stream, mut feed: impl FnMut(&[u8])) -> [(usize, usize); 2] {
    for e in s.texts.get(..WARM).unwrap() {
        feed(e);
    }
    let text = counted(s.texts.get(WARM..).unwrap(), &mut feed);
    feed(&s.call);
    for e in s.fragments.get(..WARM).unwrap() {
        feed(e);
    }
    let args = counted(s.fragments.get(WARM..).unwrap(), &mut feed);
    feed(&s.end);
    [text, args]
}

/// At most `events / 25` allocations (none per event: what is left is the
/// growth of what is accumulated) and a logarithmic number of reallocations.
fn assert_steady(what: &str, events: usize, (allocations, reallocations): (usize, usize)) {
    println!("{what}: {allocations} allocations, {reallocations} reallocations in {events} events");
    assert!(
        allocations * 25 <= events,
        "{what}: {allocations} allocations in {events} events"
    );
    assert!(
        reallocations <= 24,
        "{what}: {reallocations} reallocations in {events} events"
    );
}

#[test]
fn the_chat_stream_per_event_path_allocates_nothing_in_the_steady_state() {
    // Each event's fragment in the place of the one before (the memo's
    // template), then each event with a nonce of its own (the scanner).
    for nonces in [false, true] {
        println!("with nonces: {nonces}");
        steady_stream(&stream(nonces));
    }
}

fn steady_stream(s: &Stream) {
    let (texts, fragments) = (s.texts.len() - WARM, s.fragments.len() - WARM);
    assert!(fragments > 400, "{fragments} fragments");
    let escaped = s.fragments.iter().filter(|e| e.contains(&b'\\')).count();
    assert!(
        escaped * 2 > s.fragments.len(),
        "{escaped} fragments with escapes"
    );

    // The bytes assembler alone, no live events (the `checking` side copy).
    let core = Assembler::new(Some(Dialect::OpenAiChat), AssemblerLimits::default());
    let mut asm = BytesAssembler::new(core, FramingLimits::default());
    let [text, args] = steady(s, |e| asm.feed_bytes(e, None).unwrap());
    asm.close(None).unwrap();
    let m = asm.core().messages();
    assert_eq!(m.len(), 1);
    assert!(m[0].complete);
    let input: Value = serde_json::from_str(&m[0].tool_uses[0].block.input).unwrap();
    assert_eq!(input["items"][119]["text"], "\u{e9}\"x");
    assert_steady("assembler, text deltas", texts, text);
    assert_steady("assembler, argument fragments", fragments, args);

    // The guard, one step kept for the response (the Rust relay's way).
    let mut guard = Guard::new(
        Some(Dialect::OpenAiChat),
        AssemblerLimits::default(),
        FramingLimits::default(),
        GuardLimits::default(),
        None,
        Encoding::Identity,
        None,
    );
    let mut step = Step::default();
    let mut forwarded = Vec::new();
    let [text, args] = steady(s, |e| {
        guard.feed_into(e, &mut Pass, &mut step);
        assert!(step.blocked.is_none(), "{:?}", step.blocked);
        forwarded.extend_from_slice(&step.forward);
    });
    let last = guard.finish(&mut Pass);
    forwarded.extend_from_slice(&last.forward);
    assert_eq!(guard.outcome(), Outcome::Passed);
    let sent: Vec<u8> = [
        &s.texts,
        &[s.call.clone()][..],
        &s.fragments,
        &[s.end.clone()][..],
    ]
    .concat()
    .concat();
    assert_eq!(forwarded, sent);
    assert_steady("guard, text deltas", texts, text);
    assert_steady("guard, argument fragments", fragments, args);
}
