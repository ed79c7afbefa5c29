//! The guard's check of one call without Python: the arguments of
//! `benches/bench_proxy.py`'s load (one call of 60 items) checked against a
//! schema like its tool's, either read in
//! place (`CompiledSchema::check_arguments`, what the check does now) or
//! through the strict parse and its copy into a `serde_json::Value` (what it
//! did before, and does for an input refused or whose numbers need the exact
//! pass). For instruction counts: run it under
//! `valgrind --tool=callgrind` with 1 and with 1001 passes and take the
//! difference over 1000.
//! `cargo bench --bench validate -- [in-place|strict] [passes]`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Instant;

use _toolstitch::validate::{parse_strict_ordered, CompiledSchema};
use serde_json::{json, Value};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mode = args.first().map_or("in-place", String::as_str);
    let passes: usize = args.get(1).map_or(100_000, |p| p.parse().unwrap());

    let items: Vec<Value> = (0..60).map(|i| json!({"n": i, "text": "é\"x"})).collect();
    let input = json!({ "items": items }).to_string();
    // `required` makes the validator look into the object; the items are
    // not looked into (the load's tool has no schema for them).
    let schema = json!({
        "type": "object",
        "properties": {"items": {"type": "array", "maxItems": 100}},
        "required": ["items"],
    });
    let schema = CompiledSchema::compile(&schema).unwrap();
    let check = |input: &[u8]| -> bool {
        match mode {
            "strict" => {
                let value = parse_strict_ordered(input).unwrap();
                schema.validate_exact_owned(value).is_ok()
            }
            _ => schema.check_arguments(input) == Some(Ok(())),
        }
    };
    assert!(check(input.as_bytes()));
    let start = Instant::now();
    let mut ok = 0_usize;
    for _ in 0..passes {
        ok += usize::from(check(std::hint::black_box(input.as_bytes())));
    }
    let elapsed = start.elapsed();
    assert_eq!(ok, passes);
    println!(
        "{mode}: {passes} checks, {:.2} µs per check",
        elapsed.as_secs_f64() * 1e6 / passes.max(1) as f64
    );
}
