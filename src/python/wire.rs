//! The wire codec's Python functions.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use super::convert::{block_from_py, block_to_py, message_from_py, message_to_py};
use super::errors::from_wire;
use crate::wire;

/// The bytes of a `str` or bytes-like argument.
fn with_data<T>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> T + Send) -> PyResult<T>
where
    T: Send,
{
    let py = data.py();
    if let Ok(s) = data.cast::<PyString>() {
        let s = s.to_str()?;
        Ok(py.detach(|| f(s.as_bytes())))
    } else if let Ok(b) = data.cast::<PyBytes>() {
        let b = b.as_bytes();
        Ok(py.detach(|| f(b)))
    } else if let Ok(b) = data.extract::<Vec<u8>>() {
        Ok(py.detach(|| f(&b)))
    } else {
        Err(PyTypeError::new_err(format!(
            "expected str or bytes, not {}",
            data.get_type().name()?
        )))
    }
}

/// Encodes one block as JSON text: one object with a `"type"` tag and snake_case
/// fields; a `tool_use` embeds its input byte for byte (empty input as `null`).
/// Raises `BlockEncodeError` (partial or invalid input or provider state, naming
/// the call) or `BlockLimitError`; anything but a block is a `TypeError`.
#[pyfunction]
fn marshal_block(py: Python<'_>, block: &Bound<'_, PyAny>) -> PyResult<String> {
    let block = block_from_py(block, 1)?;
    wire::marshal_block(&block).map_err(|e| from_wire(py, &e))
}

/// Decodes one block from JSON text (`str` or `bytes`). Keys match ignoring case
/// and underscores; unknown fields are ignored. Raises `UnknownBlockTypeError`
/// (missing, empty or unknown `"type"`), `BlockDecodeError` (malformed JSON,
/// invalid UTF-8, a field of the wrong type) or `BlockLimitError` (over 8 MiB,
/// 10,000 blocks or 100 levels of nesting).
#[pyfunction]
fn unmarshal_block<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let block = with_data(data, wire::unmarshal_block)?.map_err(|e| from_wire(py, &e))?;
    block_to_py(py, &block)
}

/// Encodes an iterable of blocks as a JSON array (errors as for `marshal_block`).
#[pyfunction]
fn marshal_blocks(py: Python<'_>, blocks: &Bound<'_, PyAny>) -> PyResult<String> {
    let blocks = blocks
        .try_iter()?
        .map(|b| block_from_py(&b?, 2))
        .collect::<PyResult<Vec<_>>>()?;
    wire::marshal_blocks(&blocks).map_err(|e| from_wire(py, &e))
}

/// Decodes a JSON array of blocks into a list (errors as for `unmarshal_block`).
#[pyfunction]
fn unmarshal_blocks<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let blocks = with_data(data, wire::unmarshal_blocks)?.map_err(|e| from_wire(py, &e))?;
    let items = blocks
        .iter()
        .map(|b| block_to_py(py, b))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Encodes a `Message` (`{"role", "content"}`) or a `ToolResultMessage` (`{"role":
/// "tool", "tool_use_id", "content", "is_error"}`) as JSON text.
#[pyfunction]
fn marshal_message(py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<String> {
    let message = message_from_py(message)?;
    wire::marshal_message(&message).map_err(|e| from_wire(py, &e))
}

/// Decodes a message: one with a `tool_use_id` or the role `tool` is a
/// `ToolResultMessage`, any other a `Message`; blocks may be under `content` or
/// `blocks` (errors as for `unmarshal_block`).
#[pyfunction]
fn unmarshal_message<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let message = with_data(data, wire::unmarshal_message)?.map_err(|e| from_wire(py, &e))?;
    message_to_py(py, &message)
}

/// The deepest bracket nesting of a JSON text (strings skipped); linear, no recursion.
#[pyfunction]
#[pyo3(name = "_json_depth")]
fn json_depth(text: &str) -> usize {
    wire::json_depth(text.as_bytes())
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("_WIRE_MAX_DEPTH", wire::MAX_DEPTH)?;
    m.add_function(wrap_pyfunction!(json_depth, m)?)?;
    m.add_function(wrap_pyfunction!(marshal_block, m)?)?;
    m.add_function(wrap_pyfunction!(unmarshal_block, m)?)?;
    m.add_function(wrap_pyfunction!(marshal_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(unmarshal_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(marshal_message, m)?)?;
    m.add_function(wrap_pyfunction!(unmarshal_message, m)?)?;
    Ok(())
}
