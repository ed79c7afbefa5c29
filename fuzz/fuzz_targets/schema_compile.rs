//! JSON Schema compilation and validation, and custom tools' regex grammars.
//!
//! The input is split at its first 0xFF byte into a schema and an instance
//! (JSON both) or, per the header, a regex pattern and a text. Checks: no
//! panic and no hang; `is_valid` agrees with `validate`; failures carry
//! their paths; a compiled grammar matches whole inputs only, and a pattern
//! that is an escaped literal matches exactly that literal.
#![no_main]

use _toolstitch::validate::{CompiledSchema, RegexGrammar};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolstitch_fuzz::Header;

fn split(body: &[u8]) -> (&[u8], &[u8]) {
    match body.iter().position(|b| *b == 0xFF) {
        Some(at) => (&body[..at], &body[at + 1..]),
        None => (body, b"null"),
    }
}

fuzz_target!(|data: &[u8]| {
    let (h, body) = Header::split(data);
    let (a, b) = split(body);
    if h.structured {
        let (Ok(pattern), Ok(text)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
            return;
        };
        if let Ok(g) = RegexGrammar::compile(pattern) {
            let whole = g.matches(text);
            if whole {
                // Anchored: nothing may be added around a match unless the
                // pattern matches that too.
                let _ = g.matches(&format!("{text}{text}"));
            }
        }
        let literal = RegexGrammar::compile(&regex::escape(text))
            .unwrap_or_else(|e| panic!("an escaped literal does not compile: {e}"));
        assert!(literal.matches(text), "a literal does not match itself");
        assert!(
            !literal.matches(&format!("{text}x")),
            "a literal matches more than itself"
        );
        assert!(
            !literal.matches(&format!("x{text}")),
            "a literal matches more than itself"
        );
        return;
    }
    let Ok(schema) = serde_json::from_slice::<Value>(a) else {
        return;
    };
    let Ok(compiled) = CompiledSchema::compile(&schema) else {
        return;
    };
    assert!(["draft-04", "draft-06", "draft-07", "2019-09", "2020-12"].contains(&compiled.draft()));
    let instance = serde_json::from_slice::<Value>(b).unwrap_or(Value::Null);
    let valid = compiled.is_valid(&instance);
    match compiled.validate(&instance) {
        Ok(()) => assert!(valid, "validate passes what is_valid refuses"),
        Err(failures) => {
            assert!(!valid, "validate refuses what is_valid passes");
            assert!(!failures.is_empty());
            for f in &failures {
                assert!(f.instance_path.is_empty() || f.instance_path.starts_with('/'));
                assert!(!f.message.is_empty());
            }
        }
    }
});
