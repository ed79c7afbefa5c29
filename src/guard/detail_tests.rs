//! The guard's assembler makes its live events in the structural detail (no
//! text deltas, no strings in a call's events): these tests hold that it
//! drops no event the guard decides on, and that the guard decides every
//! conformance case as it does on the full events.

use super::*;
use crate::validate::parse_strict;
use std::collections::BTreeMap;

/// A conformance case: its stream and how it is declared.
struct Case {
    id: String,
    dialect: Dialect,
    transport: Transport,
    body: Vec<u8>,
}

fn walk(dir: &std::path::Path, out: &mut Vec<Case>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("conformance cases")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.ends_with(".case.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("case");
        let case: serde_json::Value = serde_json::from_str(&text).expect("case JSON");
        let field = |k: &str| {
            case.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned()
        };
        let transport = match field("transport").as_str() {
            "sse" => Transport::Sse,
            "eventstream" => Transport::EventStream,
            _ => Transport::JsonLines,
        };
        let stream = path.with_file_name(field("stream"));
        out.push(Case {
            id: field("id"),
            dialect: field("dialect").parse().expect("a dialect"),
            transport,
            body: std::fs::read(&stream).expect("the case's stream"),
        });
    }
}

/// Every case of `conformance/cases`: real recordings, quirks, violations
/// and hostile streams of every dialect.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance/cases");
    walk(std::path::Path::new(root), &mut out);
    out
}

/// What the structural detail keeps of a full event. Exhaustive on purpose:
/// a new kind of live event must be placed here, as in [`Guard::judge_now`].
fn structural(ev: &LiveEvent) -> Option<LiveEvent> {
    match ev {
        LiveEvent::ToolCallStarted { choice, index, .. } => Some(LiveEvent::ToolCallStarted {
            choice: *choice,
            index: *index,
            id: String::new(),
            name: String::new(),
        }),
        LiveEvent::ToolInputDelta {
            choice,
            index,
            replaces,
            ..
        } => Some(LiveEvent::ToolInputDelta {
            choice: *choice,
            index: *index,
            fragment: String::new(),
            replaces: *replaces,
        }),
        LiveEvent::ToolCallFinished { .. } | LiveEvent::MessageDone { .. } => Some(ev.clone()),
        LiveEvent::TextDelta { .. }
        | LiveEvent::ThinkingDelta { .. }
        | LiveEvent::RefusalDelta { .. } => None,
    }
}

/// The live events and messages of `case` read whole in `detail`.
fn read(case: &Case, detail: LiveDetail) -> (Vec<LiveEvent>, Vec<AssembledMessage>) {
    let mut core = Assembler::new(Some(case.dialect), AssemblerLimits::default());
    core.set_live_detail(detail);
    let mut asm = BytesAssembler::new(core, FramingLimits::default());
    asm.decoder = Some(Decoder::with_transport(
        case.transport,
        FramingLimits::default(),
    ));
    let mut live = Vec::new();
    for piece in case.body.chunks(97) {
        let _ = asm.feed_bytes(piece, Some(&mut live));
    }
    let _ = asm.close(Some(&mut live));
    (live, asm.core().messages())
}

#[test]
fn the_structural_detail_keeps_every_event_the_guard_decides_on() {
    let cases = cases();
    assert!(cases.len() > 500, "{} conformance cases", cases.len());
    // How often each kind came, full and structural: (started, input,
    // finished, done, text).
    let mut kinds = [0usize; 5];
    for case in &cases {
        let (full, full_messages) = read(case, LiveDetail::Full);
        let (kept, messages) = read(case, LiveDetail::Structural);
        let expected: Vec<LiveEvent> = full.iter().filter_map(structural).collect();
        assert_eq!(kept, expected, "{}", case.id);
        assert_eq!(messages, full_messages, "{}", case.id);
        for ev in &full {
            let k = match ev {
                LiveEvent::ToolCallStarted { .. } => 0,
                LiveEvent::ToolInputDelta { .. } => 1,
                LiveEvent::ToolCallFinished { .. } => 2,
                LiveEvent::MessageDone { .. } => 3,
                _ => 4,
            };
            kinds[k] += 1;
        }
    }
    // The corpus holds every kind, so a kind the detail dropped would show.
    assert!(kinds.iter().all(|&n| n > 0), "{kinds:?}");
}

/// Accepts a call whose input is empty or one JSON object; notes every call.
#[derive(Default)]
struct Seen(Vec<(String, String, String)>);

impl CallCheck for Seen {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        let b = &call.block;
        self.0.push((b.id.clone(), b.name.clone(), b.input.clone()));
        match parse_strict(if b.input.is_empty() { "{}" } else { &b.input }) {
            Ok(serde_json::Value::Object(_)) => Ok(()),
            Ok(_) => Err("not an object".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// What the guard gives for `case` in reads of `piece` bytes.
type Verdict = (
    Vec<u8>,
    Option<Blocked>,
    Outcome,
    Vec<(String, String, String)>,
);

fn guarded(case: &Case, detail: LiveDetail, piece: usize) -> Verdict {
    let mut g = Guard::new(
        None,
        AssemblerLimits::default(),
        FramingLimits::default(),
        GuardLimits::default(),
        Some(case.transport),
        Encoding::Identity,
        Some(case.dialect),
    );
    g.asm.core_mut().set_live_detail(detail);
    let mut seen = Seen::default();
    let mut out = Vec::new();
    let mut blocked = None;
    for read in case.body.chunks(piece) {
        let step = g.feed(read, &mut seen);
        out.extend_from_slice(&step.forward);
        blocked = blocked.or(step.blocked);
    }
    let step = g.finish(&mut seen);
    out.extend_from_slice(&step.forward);
    (out, blocked.or(step.blocked), g.outcome(), seen.0)
}

#[test]
fn the_guard_decides_every_conformance_case_as_on_the_full_events() {
    let mut outcomes = BTreeMap::new();
    for case in &cases() {
        for piece in [case.body.len().max(1), 61] {
            let full = guarded(case, LiveDetail::Full, piece);
            let kept = guarded(case, LiveDetail::Structural, piece);
            assert_eq!(kept, full, "{} in reads of {piece} bytes", case.id);
            *outcomes.entry(kept.2.name()).or_insert(0usize) += 1;
        }
    }
    // Both ways of ending a response are among the cases compared.
    assert!(
        outcomes.get("passed").is_some_and(|&n| n > 100),
        "{outcomes:?}"
    );
    assert!(
        outcomes.get("blocked").is_some_and(|&n| n > 100),
        "{outcomes:?}"
    );
}
