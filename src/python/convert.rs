//! Blocks between Rust and the frozen dataclasses of `toolstitch.blocks`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple, PyType};

use super::errors::{error, Kind};
use super::imports::Imports;
use crate::blocks::{
    AnyMessage, AudioBlock, Block, DocumentBlock, ImageBlock, Message, ThinkingBlock,
    ToolResultBlock, ToolResultMessage, ToolUseBlock,
};
use crate::wire;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Text = 0,
    Refusal,
    Thinking,
    Image,
    Audio,
    Document,
    ToolUse,
    ToolResult,
    Message,
    ToolResultMessage,
}

const ALL: [Class; 10] = [
    Class::Text,
    Class::Refusal,
    Class::Thinking,
    Class::Image,
    Class::Audio,
    Class::Document,
    Class::ToolUse,
    Class::ToolResult,
    Class::Message,
    Class::ToolResultMessage,
];

static CLASSES: Imports<PyType, 10> = Imports::new(
    "toolstitch.blocks",
    [
        "TextBlock",
        "RefusalBlock",
        "ThinkingBlock",
        "ImageBlock",
        "AudioBlock",
        "DocumentBlock",
        "ToolUseBlock",
        "ToolResultBlock",
        "Message",
        "ToolResultMessage",
    ],
);

fn class(py: Python<'_>, c: Class) -> PyResult<&Bound<'_, PyType>> {
    CLASSES.get(py, c as usize)
}

fn state(py: Python<'_>, s: Option<&str>) -> Py<PyAny> {
    s.map_or_else(
        || py.None(),
        |s| {
            s.into_pyobject(py)
                .map_or_else(|_| py.None(), |o| o.into_any().unbind())
        },
    )
}

/// A `ToolUseBlock` dataclass.
pub(crate) fn tool_use_to_py<'py>(
    py: Python<'py>,
    b: &ToolUseBlock,
) -> PyResult<Bound<'py, PyAny>> {
    class(py, Class::ToolUse)?.call1((
        &b.id,
        &b.name,
        &b.input,
        state(py, b.provider_state.as_deref()),
        &b.provider_state_format,
        &b.kind,
        b.server_side,
    ))
}

/// A `ThinkingBlock` dataclass.
pub(crate) fn thinking_to_py<'py>(
    py: Python<'py>,
    b: &ThinkingBlock,
) -> PyResult<Bound<'py, PyAny>> {
    class(py, Class::Thinking)?.call1((
        &b.thinking,
        &b.signature,
        &b.signature_format,
        state(py, b.provider_state.as_deref()),
        &b.provider_state_format,
    ))
}

/// An `ImageBlock` dataclass.
pub(crate) fn image_to_py<'py>(py: Python<'py>, b: &ImageBlock) -> PyResult<Bound<'py, PyAny>> {
    class(py, Class::Image)?.call1((&b.media_type, &b.url, &b.data))
}

/// A `TextBlock` (or, with `refusal`, a `RefusalBlock`) dataclass.
pub(crate) fn text_to_py<'py>(
    py: Python<'py>,
    text: &str,
    refusal: bool,
) -> PyResult<Bound<'py, PyAny>> {
    class(py, if refusal { Class::Refusal } else { Class::Text })?.call1((text,))
}

fn blocks_to_py<'py>(py: Python<'py>, blocks: &[Block]) -> PyResult<Bound<'py, PyTuple>> {
    let items = blocks
        .iter()
        .map(|b| block_to_py(py, b))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// The dataclass for any block.
pub(crate) fn block_to_py<'py>(py: Python<'py>, block: &Block) -> PyResult<Bound<'py, PyAny>> {
    match block {
        Block::Text(t) => text_to_py(py, t, false),
        Block::Refusal(t) => text_to_py(py, t, true),
        Block::Thinking(t) => thinking_to_py(py, t),
        Block::Image(i) => image_to_py(py, i),
        Block::Audio(a) => {
            class(py, Class::Audio)?.call1((&a.media_type, &a.url, &a.data, &a.transcript))
        }
        Block::Document(d) => {
            class(py, Class::Document)?.call1((&d.media_type, &d.url, &d.data, &d.title))
        }
        Block::ToolUse(t) => tool_use_to_py(py, t),
        Block::ToolResult(r) => class(py, Class::ToolResult)?.call1((
            &r.tool_use_id,
            blocks_to_py(py, &r.content)?,
            r.is_error,
            &r.kind,
            state(py, r.provider_state.as_deref()),
            &r.provider_state_format,
        )),
    }
}

/// The dataclass for a message.
pub(crate) fn message_to_py<'py>(
    py: Python<'py>,
    message: &AnyMessage,
) -> PyResult<Bound<'py, PyAny>> {
    match message {
        AnyMessage::Message(m) => {
            class(py, Class::Message)?.call1((&m.role, blocks_to_py(py, &m.blocks)?))
        }
        AnyMessage::ToolResult(m) => class(py, Class::ToolResultMessage)?.call1((
            &m.tool_use_id,
            blocks_to_py(py, &m.blocks)?,
            m.is_error,
        )),
    }
}

fn classify(obj: &Bound<'_, PyAny>) -> PyResult<Class> {
    let py = obj.py();
    for c in ALL {
        if obj.is_instance(class(py, c)?)? {
            return Ok(c);
        }
    }
    Err(PyTypeError::new_err(format!(
        "expected a toolstitch block or message, not {}",
        obj.get_type().name()?
    )))
}

fn str_attr(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let value = obj.getattr(name)?;
    value.extract::<String>().map_err(|_| {
        error(
            obj.py(),
            Kind::BlockEncode,
            format!(
                "the field {name:?} must be a str, not {}",
                value
                    .get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string())
            ),
        )
    })
}

fn opt_str_attr(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<String>> {
    let value = obj.getattr(name)?;
    if value.is_none() {
        return Ok(None);
    }
    str_attr(obj, name).map(Some)
}

fn bool_attr(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    let value = obj.getattr(name)?;
    value.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        error(
            obj.py(),
            Kind::BlockEncode,
            format!("the field {name:?} must be a bool"),
        )
    })
}

/// The blocks of a list whose items sit at JSON level `depth` of the wire document.
fn blocks_attr(obj: &Bound<'_, PyAny>, name: &str, depth: usize) -> PyResult<Vec<Block>> {
    obj.getattr(name)?
        .try_iter()?
        .map(|item| block_from_py(&item?, depth))
        .collect()
}

/// The Rust block for a block dataclass whose object sits at JSON level `depth`
/// of the wire document (1 for a lone block, 2 in a list, 3 in a message).
///
/// Nested tool results are refused with `BlockLimitError` before recursing
/// past the wire's depth bound (what decoding refuses), so hostile nesting
/// never reaches the native stack's end.
pub(crate) fn block_from_py(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Block> {
    if depth > wire::MAX_DEPTH {
        return Err(error(
            obj.py(),
            Kind::BlockLimit,
            format!(
                "tool results nest deeper than {} JSON levels, which the wire format refuses; \
                 nothing was written",
                wire::MAX_DEPTH
            ),
        ));
    }
    Ok(match classify(obj)? {
        Class::Text => Block::Text(str_attr(obj, "text")?),
        Class::Refusal => Block::Refusal(str_attr(obj, "text")?),
        Class::Thinking => Block::Thinking(ThinkingBlock {
            thinking: str_attr(obj, "thinking")?,
            signature: str_attr(obj, "signature")?,
            signature_format: str_attr(obj, "signature_format")?,
            provider_state: opt_str_attr(obj, "provider_state")?,
            provider_state_format: str_attr(obj, "provider_state_format")?,
        }),
        Class::Image => Block::Image(ImageBlock {
            media_type: str_attr(obj, "media_type")?,
            url: str_attr(obj, "url")?,
            data: str_attr(obj, "data")?,
        }),
        Class::Audio => Block::Audio(AudioBlock {
            media_type: str_attr(obj, "media_type")?,
            url: str_attr(obj, "url")?,
            data: str_attr(obj, "data")?,
            transcript: str_attr(obj, "transcript")?,
        }),
        Class::Document => Block::Document(DocumentBlock {
            media_type: str_attr(obj, "media_type")?,
            url: str_attr(obj, "url")?,
            data: str_attr(obj, "data")?,
            title: str_attr(obj, "title")?,
        }),
        Class::ToolUse => Block::ToolUse(ToolUseBlock {
            id: str_attr(obj, "id")?,
            name: str_attr(obj, "name")?,
            input: str_attr(obj, "input")?,
            provider_state: opt_str_attr(obj, "provider_state")?,
            provider_state_format: str_attr(obj, "provider_state_format")?,
            kind: str_attr(obj, "kind")?,
            server_side: bool_attr(obj, "server_side")?,
        }),
        Class::ToolResult => Block::ToolResult(ToolResultBlock {
            tool_use_id: str_attr(obj, "tool_use_id")?,
            content: blocks_attr(obj, "content", depth.saturating_add(2))?,
            is_error: bool_attr(obj, "is_error")?,
            kind: str_attr(obj, "kind")?,
            provider_state: opt_str_attr(obj, "provider_state")?,
            provider_state_format: str_attr(obj, "provider_state_format")?,
        }),
        Class::Message | Class::ToolResultMessage => {
            return Err(PyTypeError::new_err(
                "expected a block, not a message (use marshal_message)",
            ))
        }
    })
}

/// The Rust message for a message dataclass.
pub(crate) fn message_from_py(obj: &Bound<'_, PyAny>) -> PyResult<AnyMessage> {
    match classify(obj)? {
        Class::Message => Ok(AnyMessage::Message(Message {
            role: str_attr(obj, "role")?,
            blocks: blocks_attr(obj, "blocks", 3)?,
        })),
        Class::ToolResultMessage => Ok(AnyMessage::ToolResult(ToolResultMessage {
            tool_use_id: str_attr(obj, "tool_use_id")?,
            blocks: blocks_attr(obj, "blocks", 3)?,
            is_error: bool_attr(obj, "is_error")?,
        })),
        _ => Err(PyTypeError::new_err(
            "expected a Message or ToolResultMessage, not a block",
        )),
    }
}

/// A provider index: any int in the signed 64-bit range (bool refused).
#[inline]
pub(crate) fn index_from_py(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    // The hot path: an exact int within range.
    if obj.cast_exact::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(i);
        }
    }
    index_from_py_slow(obj)
}

#[cold]
fn index_from_py_slow(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(int) = obj.cast::<PyInt>() {
        if !obj.is_instance_of::<PyBool>() {
            return int.extract::<i64>().map_err(|_| {
                error(
                    obj.py(),
                    Kind::IndexRange,
                    format!("index {obj} is outside the signed 64-bit range -2**63 ..= 2**63-1; nothing was changed"),
                )
            });
        }
    } else if !obj.is_instance_of::<PyBool>() && obj.hasattr("__index__")? {
        let int = obj.call_method0("__index__")?;
        return index_from_py_slow(&int);
    }
    Err(PyTypeError::new_err(format!(
        "index must be an int, not {}",
        obj.get_type().name()?
    )))
}
