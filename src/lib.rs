//! toolstitch: reassembles the tool calls (and the text, reasoning and refusals
//! around them) that LLM providers stream in fragments.
//!
//! Layers, each usable on its own:
//! - [`framing`]: transport bytes cut anywhere (SSE, JSON lines, AWS event-stream) into events;
//! - [`providers`]: one adapter per wire dialect, turning events into messages;
//! - [`accumulate`]: the seed contract, accumulators keyed by the provider's index;
//! - [`blocks`]: the provider-neutral block model;
//! - [`wire`]: the exact JSON wire codec for blocks and messages;
//! - [`partial`] and [`validate`]: the tool-loop boundary (partial JSON for display,
//!   strict parsing and JSON Schema before execution);
//! - [`guard`]: the same boundary on live traffic: a response's bytes released only
//!   once every call they complete has been checked;
//! - `python` (feature `python`): the PyO3 binding, the only code that names pyo3.

#![cfg_attr(
    test,
    allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod accumulate;
pub mod blocks;
pub mod framing;
pub mod guard;
pub mod partial;
pub mod providers;
mod statics;
pub mod validate;
pub mod wire;

#[cfg(feature = "python")]
mod python;
