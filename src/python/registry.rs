//! The registry of dialects and the bounds of the core, as module constants:
//! Python reads them here instead of retyping them.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::providers::{Dialect, AUTO};

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

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.name()).collect();
    m.add("DIALECTS", PyTuple::new(py, names)?)?;
    m.add("AUTO", AUTO)?;
    m.add("STATE_FORMATS", by_dialect(py, Dialect::state_formats)?)?;
    m.add("CLIENT_ITEMS", by_dialect(py, Dialect::client_items)?)?;
    m.add("SERVER_ITEMS", by_dialect(py, Dialect::server_items)?)?;
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
