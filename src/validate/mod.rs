//! The strict boundary before a tool is executed: parse the complete input
//! strictly ([`parse_strict`]), then check it against the tool's JSON Schema
//! ([`CompiledSchema`]).
//!
//! # Strict parsing
//!
//! A completed call's input is parsed with no repair (quirk Q11, docs/quirks.md): duplicate
//! object keys at any depth, anything after the value, lone UTF-16 surrogate
//! escapes and numbers `serde_json` cannot represent are errors, each with the
//! byte offset into the input. Empty or whitespace-only input means `{}`
//! (quirk Q13: providers send no-argument calls either way). Nesting is
//! bounded by [`MAX_DEPTH`]; the parser keeps its stack on the heap, so hostile
//! nesting is a clear error, never a stack overflow. It is the state machine
//! of [`crate::partial`] in strict mode, so what the live display shows and
//! what is executed are parsed by the same grammar.
//!
//! The guard's check, which wants a verdict and no value, reads most inputs
//! without the strict parse ([`CompiledSchema::check_arguments`]): `serde_json`
//! parses them once into what the validator reads in place, borrowing their
//! strings; an input that parse refuses, with a duplicate key, or with a number
//! that needs the exact pass goes to the strict parse, so every verdict and
//! error is the strict parse's.
//!
//! # Why the `jsonschema` crate
//!
//! Schemas are checked with the [`jsonschema`] crate (Stranger6667/jsonschema):
//! it is actively maintained and released, passes the official JSON Schema
//! test suite for drafts 4, 6, 7, 2019-09 and 2020-12 (providers use draft-07
//! and 2020-12), compiles a schema once into a validator that is cheap to run
//! many times and safe to share between threads, and iterates over *every*
//! failure with its instance and schema locations as JSON pointers, which is
//! what `ToolSchemaError` reports. Alternatives were weaker here: `boon` has a
//! smaller user base and no maintained error iteration API of this shape,
//! `valico` is unmaintained and stops at draft 4.
//!
//! It is built without default features, so it has no HTTP or file resolver;
//! on top of that every external reference goes to a retriever that refuses
//! it, so a schema `$ref` to a remote URL fails to compile with a clear error
//! and nothing is ever fetched. Known meta-schemas are bundled in the crate.

mod exact;
mod grammar;
mod schema;
mod sorted;
mod strict;

pub use grammar::{GrammarError, RegexGrammar};
pub use schema::{CompiledSchema, SchemaCompileError, SchemaFailure};
pub use strict::{
    parse_strict, parse_strict_bytes, parse_strict_ordered, several_values, InputError, MAX_DEPTH,
};
