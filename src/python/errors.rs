//! Raising the exception classes of `toolstitch.errors` from Rust.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

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
}

static CLASSES: [PyOnceLock<Py<PyType>>; 6] = [
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
    PyOnceLock::new(),
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Limit => "LimitError",
            Kind::IndexRange => "IndexRangeError",
            Kind::BlockDecode => "BlockDecodeError",
            Kind::BlockEncode => "BlockEncodeError",
            Kind::BlockLimit => "BlockLimitError",
            Kind::UnknownBlockType => "UnknownBlockTypeError",
        }
    }
}

/// A Python exception of `kind` carrying `message`.
pub(crate) fn error(py: Python<'_>, kind: Kind, message: impl Into<String>) -> PyErr {
    let message = message.into();
    let cell = CLASSES.get(kind as usize);
    match cell.map(|c| c.import(py, "toolstitch.errors", kind.name())) {
        Some(Ok(class)) => PyErr::from_type(class.clone(), message),
        Some(Err(e)) => e,
        None => pyo3::exceptions::PyValueError::new_err(message),
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
