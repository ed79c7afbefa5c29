//! The incremental partial JSON parser against the strict parser (and
//! serde_json).
//!
//! Checks: the partial parser never panics, whatever it is fed; fed whole,
//! cut where the input says, or byte by byte it reaches the same value, the
//! same error and the same completeness; on any input the strict parser
//! accepts, the partial parser (in any cuts) ends complete with the same
//! value; the strict parser accepts exactly what serde_json accepts, less
//! duplicate keys and nesting past its depth bound, and gives the same value.
#![no_main]

use _toolstitch::partial::{PartialJson, PartialOptions, PartialValue};
use _toolstitch::validate::{parse_strict_bytes, MAX_DEPTH};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolstitch_fuzz::{cuts, Header};

#[derive(Debug, Clone, PartialEq)]
struct Run {
    values: Option<PartialValue>,
    error: Option<String>,
    complete: bool,
    finish: Result<(), String>,
    fed: usize,
    value_after_finish: Option<PartialValue>,
}

fn run(opts: PartialOptions, pieces: &[&[u8]]) -> Run {
    let mut p = PartialJson::new(opts);
    let mut error = None;
    for piece in pieces {
        let generation = p.generation();
        let r = p.feed(piece);
        // The value so far is always readable.
        let _ = p.value();
        if let Err(e) = r {
            assert_eq!(p.error(), Some(&e), "the error is kept");
            assert_eq!(p.feed(b"1"), Err(e.clone()), "errors are sticky");
            error = Some(e.to_string());
            break;
        }
        if !piece.is_empty() {
            assert_ne!(
                p.generation(),
                generation,
                "a fragment moves the generation"
            );
        }
    }
    let values = p.value();
    let complete = p.is_complete();
    let fed = p.bytes_fed();
    let finish = p.finish().map_err(|e| e.to_string());
    Run {
        values,
        error,
        complete,
        finish,
        fed,
        value_after_finish: p.value(),
    }
}

/// Two runs agree; `bytes_fed` counts the whole fragment that hit an error,
/// so it is compared only when there was none.
fn same(a: &Run, b: &Run, what: &str) {
    if a.error.is_some() {
        assert_eq!(
            Run {
                fed: 0,
                ..a.clone()
            },
            Run {
                fed: 0,
                ..b.clone()
            },
            "{what}"
        );
    } else {
        assert_eq!(a, b, "{what}");
    }
}

/// Deepest nesting of a value.
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let (h, body) = Header::split(data);
    let opts = PartialOptions {
        partial_strings: !h.small_limits,
        max_depth: if h.structured { 8 } else { 128 },
        max_bytes: if h.transport == 3 { 64 } else { usize::MAX },
    };
    let whole = run(opts, &[body]);
    let pieces = cuts::pieces(body, h.cuts, h.seed);
    let cut = run(opts, &pieces);
    if opts.max_bytes < usize::MAX {
        // A fragment crossing max_bytes is rejected whole, so the value kept
        // depends on the cuts; whether the limit is hit does not.
        let over = body.len() > opts.max_bytes;
        let limited = |r: &Run| r.error.as_deref().is_some_and(|e| e.contains("max_bytes"));
        assert_eq!(
            limited(&whole),
            over,
            "one fragment over max_bytes is rejected"
        );
        assert!(
            !over || cut.error.is_some(),
            "input over max_bytes accepted"
        );
        assert!(over || !limited(&cut), "max_bytes hit below the limit");
    } else {
        same(&whole, &cut, "whole vs cut");
        if body.len() <= 512 {
            same(
                &whole,
                &run(opts, &cuts::bytewise(body)),
                "whole vs bytewise",
            );
        }
    }
    let blank = body
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    let strict = parse_strict_bytes(body);
    let serde = serde_json::from_slice::<Value>(body);
    match (&strict, &serde) {
        (Ok(s), Ok(v)) => assert_eq!(s, v, "strict and serde_json values differ"),
        (Ok(s), Err(e)) => assert!(
            blank && *s == Value::Object(Default::default()),
            "strict accepts what serde_json refuses ({e})"
        ),
        (Err(e), Ok(v)) => assert!(
            e.message.contains("duplicate") || depth(v) >= MAX_DEPTH,
            "strict refuses what serde_json accepts: {e}"
        ),
        (Err(_), Err(_)) => {}
    }
    if let (Ok(v), false) = (&strict, blank) {
        if opts.max_bytes == usize::MAX && depth(v) <= opts.max_depth {
            let strict_opts = PartialOptions {
                partial_strings: false,
                ..opts
            };
            for r in [&whole, &run(strict_opts, &pieces)] {
                assert_eq!(r.error, None, "the partial parser refused strict JSON");
                assert_eq!(
                    r.finish,
                    Ok(()),
                    "the partial parser did not finish strict JSON"
                );
                let got = r.value_after_finish.as_ref().map(PartialValue::to_json);
                assert_eq!(got.as_ref(), Some(v), "partial and strict values differ");
            }
        }
    }
});
