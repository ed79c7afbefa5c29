//! The heap allocations of the guard's check of one call: its arguments read in
//! place (`CompiledSchema::check_arguments`), against the strict parse and its
//! copy into a `serde_json::Value` for the validator (what the check did
//! before, and still does for an input it refuses or whose numbers need the
//! exact pass). Allocation counts do not depend on the machine's load.
//!
//! The heap is counted by a global allocator that wraps the system's, so this
//! file holds one test. Run with `--nocapture` for the figures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use _toolstitch::validate::{parse_strict_ordered, CompiledSchema};
use serde_json::{json, Value};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations of `f`, run after a warm-up run (the in-place validator is
/// compiled on first use).
fn allocations(mut f: impl FnMut() -> bool) -> usize {
    assert!(f() || !f());
    let region = Region::new(GLOBAL);
    let ok = f();
    let n = region.change().allocations;
    std::hint::black_box(ok);
    n
}

#[test]
fn the_check_reads_the_parse_in_place() {
    // `benches/bench_proxy.py`'s load: one call of 60 items, its tool's schema.
    let items: Vec<Value> = (0..60).map(|i| json!({"n": i, "text": "é\"x"})).collect();
    let load = json!({ "items": items }).to_string();
    let load_schema = json!({"type": "object", "properties": {"items": {"type": "array"}}});
    // A schema that reaches every item: types, bounds, an enum, required keys.
    let full_schema = json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}, "text": {"enum": ["é\"x", "y"]}},
            "required": ["n", "text"],
            "additionalProperties": false,
        }}},
        "required": ["items"],
    });
    for (name, schema) in [("load", load_schema), ("full", full_schema)] {
        let schema = CompiledSchema::compile(&schema).unwrap();
        let input = load.as_bytes();
        let parse_only = allocations(|| parse_strict_ordered(input).is_ok());
        let copied = allocations(|| {
            let value = parse_strict_ordered(input).unwrap();
            schema.validate(&value.into_json()).is_ok()
        });
        let in_place = allocations(|| schema.check_arguments(input) == Some(Ok(())));
        println!(
            "{name}: strict parse {parse_only}, strict parse + copy + validate {copied}, \
             read in place + validate {in_place} allocations"
        );
        // Per item, the copy's map node, the keys, the number's text and the
        // string without an escape are gone: what is left is a vector per
        // object and the string with an escape.
        assert!(in_place * 2 < copied, "{name}: {in_place} vs {copied}");
    }
}
