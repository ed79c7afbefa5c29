//! Raising the exception classes of `toolstitch.errors` from Rust.

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use super::imports::Imports;
use crate::{accumulate, wire};

/// The error classes, each imported once from `toolstitch.errors`.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Limit,
    IndexRange,
    BlockDecode,
    BlockEncode,
    BlockLimit,
    UnknownBlockType,
    ToolInput,
    ToolSchema,
    ToolDefinition,
    UnknownProvider,
    StreamDecode,
    Provider,
    Framing,
    Crc,
    StreamClosed,
    Protocol,
    DialectMismatch,
}

static CLASSES: Imports<PyType, 17> = Imports::new(
    "toolstitch.errors",
    [
        "LimitError",
        "IndexRangeError",
        "BlockDecodeError",
        "BlockEncodeError",
        "BlockLimitError",
        "UnknownBlockTypeError",
        "ToolInputError",
        "ToolSchemaError",
        "ToolDefinitionError",
        "UnknownProviderError",
        "StreamDecodeError",
        "ProviderError",
        "FramingError",
        "CrcError",
        "StreamClosedError",
        "ProtocolError",
        "DialectMismatchError",
    ],
);

/// The class of `kind`, imported once.
fn class(py: Python<'_>, kind: Kind) -> PyResult<&Bound<'_, PyType>> {
    CLASSES.get(py, kind as usize)
}

/// A Python exception of `kind` carrying `message`.
pub(crate) fn error(py: Python<'_>, kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    match class(py, kind) {
        Ok(class) => PyErr::from_type(class.clone(), message),
        Err(e) => e,
    }
}

/// A Python exception of `kind` built by calling its class with `args` (and
/// `kwargs`), for the classes that carry attributes (`offset`, `failures`).
pub(crate) fn error_instance<'py, A>(
    py: Python<'py>,
    kind: Kind,
    args: A,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyErr
where
    A: PyCallArgs<'py>,
{
    let class = match class(py, kind) {
        Ok(class) => class,
        Err(e) => return e,
    };
    match class.call(args, kwargs) {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

pub(crate) fn from_accumulate(py: Python<'_>, e: &accumulate::Error) -> PyErr {
    error(py, Kind::Limit, e.to_string())
}

pub(crate) fn from_wire(py: Python<'_>, e: &wire::Error) -> PyErr {
    let kind = match e {
        wire::Error::Decode { .. } => Kind::BlockDecode,
        wire::Error::Encode { .. } => Kind::BlockEncode,
        wire::Error::Limit { .. } => Kind::BlockLimit,
        wire::Error::UnknownType { .. } => Kind::UnknownBlockType,
    };
    error(py, kind, e.to_string())
}

/// `{name: value}` keyword arguments for an error class, or `None` if building them failed.
fn error_kwargs<'py>(
    py: Python<'py>,
    items: &[(&str, Bound<'py, PyAny>)],
) -> Option<Bound<'py, PyDict>> {
    let kwargs = PyDict::new(py);
    for (name, value) in items {
        kwargs.set_item(*name, value).ok()?;
    }
    Some(kwargs)
}

fn py_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyAny> {
    pyo3::types::PyString::new(py, s).into_any()
}

fn py_int(py: Python<'_>, n: u64) -> Bound<'_, PyAny> {
    pyo3::types::PyInt::new(py, n).into_any()
}

/// A provider-stream error as its `toolstitch.errors` class: `UnknownProviderError`,
/// `StreamDecodeError` (an unreadable event, or a shape `auto` cannot place),
/// `ProviderError`, `LimitError` or `StreamClosedError`.
pub(crate) fn from_providers(py: Python<'_>, e: &crate::providers::Error) -> PyErr {
    use crate::providers::Error as E;
    let message = e.to_string();
    let event = e.event();
    let ordinal = event.map_or(0, |ev| ev.ordinal);
    let event_type = event.map_or("", |ev| ev.event_type.as_str());
    match e {
        E::UnknownDialect { .. } => error(py, Kind::UnknownProvider, message),
        E::Limit { .. } => error(py, Kind::Limit, message),
        E::Closed { .. } => error(py, Kind::StreamClosed, message),
        E::Decode { .. } | E::UnknownShape { .. } => {
            let kwargs = error_kwargs(
                py,
                &[
                    ("event_index", py_int(py, ordinal)),
                    ("event_type", py_str(py, event_type)),
                ],
            );
            error_instance(py, Kind::StreamDecode, (message,), kwargs.as_ref())
        }
        E::Provider {
            error_type, raw, ..
        } => {
            let kwargs = error_kwargs(
                py,
                &[
                    ("event_index", py_int(py, ordinal)),
                    ("event_type", py_str(py, event_type)),
                    ("error_type", py_str(py, error_type)),
                    ("raw", py_str(py, raw.as_deref().unwrap_or_default())),
                ],
            );
            error_instance(py, Kind::Provider, (message,), kwargs.as_ref())
        }
        E::Protocol { rule, target, .. } => {
            let kwargs = error_kwargs(
                py,
                &[
                    ("event_index", py_int(py, ordinal)),
                    ("event_type", py_str(py, event_type)),
                    ("rule", py_str(py, rule.name())),
                    ("target", py_str(py, target.as_deref().unwrap_or_default())),
                ],
            );
            error_instance(py, Kind::Protocol, (message,), kwargs.as_ref())
        }
        E::WrongDialect {
            expected,
            looks_like,
            ..
        } => {
            let kwargs = error_kwargs(
                py,
                &[
                    ("event_index", py_int(py, ordinal)),
                    ("event_type", py_str(py, event_type)),
                    ("expected", py_str(py, expected.name())),
                    ("looks_like", py_str(py, looks_like.name())),
                ],
            );
            error_instance(py, Kind::DialectMismatch, (message,), kwargs.as_ref())
        }
    }
}

/// A framing error as its `toolstitch.errors` class: `LimitError`, `CrcError`, or
/// `FramingError` (with the byte offset it names).
pub(crate) fn from_framing(py: Python<'_>, e: &crate::framing::Error) -> PyErr {
    use crate::framing::Error as E;
    let message = e.to_string();
    match e {
        E::Limit { .. } => error(py, Kind::Limit, message),
        E::Crc { .. } => error_instance(py, Kind::Crc, (message, e.offset()), None),
        _ => error_instance(py, Kind::Framing, (message, e.offset()), None),
    }
}
