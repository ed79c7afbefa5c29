//! The registry of dialects and the bounds of the core, as module constants:
//! Python reads them here instead of retyping them.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::errors::{error, Kind};
use super::imports::Imports;
use crate::providers::{self, Dialect, Problem, ProblemKind, AUTO};

static PROBLEM: Imports<PyAny, 1> = Imports::new("toolstitch.messages", ["Problem"]);

/// A message's problems as `toolstitch.Problem`s: the message as the text, and
/// every field beside it.
pub(super) fn problems_to_py<'py>(
    py: Python<'py>,
    problems: &[Problem],
) -> PyResult<Bound<'py, PyTuple>> {
    let class = PROBLEM.get(py, 0)?;
    let items = problems
        .iter()
        .map(|p| {
            let call_id = (!p.id.is_empty()).then_some(p.id.as_str());
            class.call1((
                &p.message,
                p.kind.name(),
                p.choice,
                p.call,
                call_id,
                p.event,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// `{dialect name: the strings of one table}` for every dialect.
fn by_dialect<'py>(
    py: Python<'py>,
    table: fn(Dialect) -> &'static [&'static str],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for d in Dialect::ALL {
        out.set_item(d.name(), PyTuple::new(py, table(d))?)?;
    }
    Ok(out)
}

/// `(id, model)`: what the head of a `dialect` response's (decoded) body says
/// of the response, each `None` when it does not (only the first
/// `_RESPONSE_HEAD_BYTES` bytes are read).
#[pyfunction]
fn _response_facts(
    py: Python<'_>,
    dialect: &str,
    head: &Bound<'_, PyBytes>,
) -> PyResult<(Option<String>, Option<String>)> {
    let dialect: Dialect = dialect
        .parse()
        .map_err(|e: providers::Error| error(py, Kind::UnknownProvider, e.to_string()))?;
    Ok(head_facts(dialect, head.as_bytes()))
}

/// `response_facts`, which frames the whole head (up to 64 KiB) before it looks
/// at the first events, tried first on an SSE head's first event alone: those
/// frames are the first of the whole head's (`framing::first_sse_event_end`),
/// so when both facts are in them, the whole head's search stops there with the
/// same two; else the whole head is read, as before. (`response_facts` reads
/// the first `HEAD_BYTES` of either, so an event that ends past them is cut in
/// both.)
fn head_facts(dialect: Dialect, head: &[u8]) -> (Option<String>, Option<String>) {
    if let Some(first) = crate::framing::first_sse_event_end(head).and_then(|end| head.get(..end)) {
        if let Some((id, model)) = both_facts(dialect, first) {
            return (Some(id), Some(model));
        }
    }
    let facts = providers::response_facts(dialect, head);
    (facts.id, facts.model)
}

/// Both facts of `head`, when it says both: then `head_facts` reads no more of
/// a head whose first event is `head` (the Rust relay keeps no more of it).
pub(crate) fn both_facts(dialect: Dialect, head: &[u8]) -> Option<(String, String)> {
    let facts = providers::response_facts(dialect, head);
    facts.id.zip(facts.model)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(_response_facts, m)?)?;
    m.add("_RESPONSE_HEAD_BYTES", providers::HEAD_BYTES)?;
    let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.name()).collect();
    m.add("DIALECTS", PyTuple::new(py, names)?)?;
    m.add("AUTO", AUTO)?;
    m.add("STATE_FORMATS", by_dialect(py, Dialect::state_formats)?)?;
    m.add("CLIENT_ITEMS", by_dialect(py, Dialect::client_items)?)?;
    m.add("SERVER_ITEMS", by_dialect(py, Dialect::server_items)?)?;
    m.add(
        "APPROVAL_KINDS",
        PyTuple::new(py, crate::blocks::APPROVAL_KINDS)?,
    )?;
    let kinds: Vec<&str> = ProblemKind::ALL.iter().map(|k| k.name()).collect();
    m.add("PROBLEM_KINDS", PyTuple::new(py, kinds)?)?;
    let depth = PyDict::new(py);
    // JSON values of `feed_bytes` (the framing's parser).
    depth.set_item("json", crate::framing::MAX_JSON_DEPTH)?;
    // Python data read as an event (dicts, lists).
    depth.set_item("event", super::event_tree::MAX_DEPTH)?;
    // Tool schemas and the arguments validated against them.
    depth.set_item("schema", crate::validate::MAX_DEPTH)?;
    // `PartialJson`'s default.
    depth.set_item("partial", crate::partial::DEFAULT_MAX_DEPTH)?;
    // The wire format of blocks and messages.
    depth.set_item("wire", crate::wire::MAX_DEPTH)?;
    m.add("DEPTH_BOUNDS", depth)?;
    Ok(())
}
