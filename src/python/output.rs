//! The Python forms of what an assembler gives: live events (built only when
//! read) and `AssembledMessage`s, as the classes of `toolstitch.messages`.

use std::collections::HashMap;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

use super::convert::{block_to_py, tool_use_to_py};
use super::imports::Imports;
use crate::blocks::{Block, ToolUseBlock};
use crate::providers::{self, LiveEvent};

// ------------------------------------------------------------ Python classes

#[derive(Clone, Copy)]
pub(crate) enum Class {
    ToolCallStarted = 0,
    ToolInputDelta,
    ToolCallFinished,
    TextDelta,
    ThinkingDelta,
    RefusalDelta,
    MessageDone,
    AssembledMessage,
    EventPlain,
    SkippedEvent,
    TokenUsage,
    Note,
}

static NAMES: Imports<PyAny, 12> = Imports::new(
    "toolstitch.messages",
    [
        "ToolCallStarted",
        "ToolInputDelta",
        "ToolCallFinished",
        "TextDelta",
        "ThinkingDelta",
        "RefusalDelta",
        "MessageDone",
        "AssembledMessage",
        "_event_plain",
        "SkippedEvent",
        "TokenUsage",
        "Note",
    ],
);

/// A class (or function) of `toolstitch.messages`, imported once.
pub(crate) fn class(py: Python<'_>, c: Class) -> PyResult<&Bound<'_, PyAny>> {
    NAMES.get(py, c as usize)
}

/// The fields of each live event class, in order (its `__slots__`).
const LIVE_FIELDS: [&[&str]; 7] = [
    &["choice", "index", "id", "name"],
    &["choice", "index", "fragment", "replaces"],
    &["choice", "index"],
    &["choice", "text"],
    &["choice", "text"],
    &["choice", "text"],
    &["choice", "finish_reason", "complete"],
];

/// How one live event class is instantiated. The classes are frozen slotted
/// dataclasses, whose generated `__init__` sets each field through
/// `object.__setattr__` in Python: most of the cost of an event. When the class is
/// laid out as expected (its `__slots__` are exactly its dataclass fields, in
/// order, each a slot descriptor, and it has no `__post_init__`), an instance is
/// made by `object.__new__` and each slot's descriptor setter instead: the same
/// object, a fraction of the cost. Otherwise the class is called.
struct Maker {
    class: Py<PyAny>,
    fast: Option<Setters>,
}

/// `object.__new__` and each field's slot setter, in field order.
type Setters = (Py<PyAny>, Vec<Py<PyAny>>);

impl Maker {
    fn new(py: Python<'_>, c: Class, fields: &[&str]) -> PyResult<Self> {
        let cls = class(py, c)?;
        Ok(Self {
            class: cls.clone().unbind(),
            fast: Self::setters(py, cls, fields)?,
        })
    }

    fn setters(
        py: Python<'_>,
        cls: &Bound<'_, PyAny>,
        fields: &[&str],
    ) -> PyResult<Option<Setters>> {
        let slots = cls.getattr("__slots__")?;
        let declared: Vec<String> = match cls.getattr("__dataclass_fields__") {
            Ok(d) => d
                .try_iter()?
                .map(|k| k?.extract())
                .collect::<PyResult<_>>()?,
            Err(_) => return Ok(None),
        };
        let slots: Vec<String> = match slots.extract() {
            Ok(s) => s,
            Err(_) => return Ok(None),
        };
        if slots != fields || declared != fields || cls.hasattr("__post_init__")? {
            return Ok(None);
        }
        // Each field's slot descriptor, in the class's own namespace: all of one
        // type, the one CPython names `member_descriptor`.
        let own = cls.getattr("__dict__")?;
        let mut setters = Vec::with_capacity(fields.len());
        let mut kind: Option<Bound<'_, PyAny>> = None;
        for name in fields {
            let descr = own.get_item(name)?;
            let t = descr.get_type().into_any();
            if t.getattr("__name__")?.extract::<String>()? != "member_descriptor" {
                return Ok(None);
            }
            if let Some(k) = &kind {
                if !k.is(&t) {
                    return Ok(None);
                }
            }
            kind = Some(t);
            setters.push(descr.getattr("__set__")?.unbind());
        }
        let new = py.get_type::<PyAny>().getattr("__new__")?.unbind();
        Ok(Some((new, setters)))
    }

    fn make<'py>(
        &self,
        py: Python<'py>,
        values: &[Bound<'py, PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let cls = self.class.bind(py);
        match &self.fast {
            Some((new, setters)) => {
                let obj = new.bind(py).call1((cls,))?;
                for (set, value) in setters.iter().zip(values) {
                    set.bind(py).call1((&obj, value))?;
                }
                Ok(obj)
            }
            None => cls.call1(PyTuple::new(py, values)?),
        }
    }
}

static MAKERS: PyOnceLock<Vec<Maker>> = PyOnceLock::new();

fn makers(py: Python<'_>) -> PyResult<&Vec<Maker>> {
    MAKERS.get_or_try_init(py, || {
        let classes = [
            Class::ToolCallStarted,
            Class::ToolInputDelta,
            Class::ToolCallFinished,
            Class::TextDelta,
            Class::ThinkingDelta,
            Class::RefusalDelta,
            Class::MessageDone,
        ];
        classes
            .iter()
            .zip(LIVE_FIELDS)
            .map(|(c, fields)| Maker::new(py, *c, fields))
            .collect()
    })
}

fn live_to_py<'py>(
    py: Python<'py>,
    makers: &[Maker],
    event: &LiveEvent,
) -> PyResult<Bound<'py, PyAny>> {
    let int = |i: i64| -> PyResult<Bound<'py, PyAny>> { Ok(i.into_pyobject(py)?.into_any()) };
    let text = |s: &str| PyString::new(py, s).into_any();
    let maker = |slot: usize| {
        makers
            .get(slot)
            .ok_or_else(|| PyTypeError::new_err("no live event class"))
    };
    // The values on the stack: no allocation per event beyond its objects.
    match event {
        LiveEvent::ToolCallStarted {
            choice,
            index,
            id,
            name,
        } => maker(0)?.make(py, &[int(*choice)?, int(*index)?, text(id), text(name)]),
        LiveEvent::ToolInputDelta {
            choice,
            index,
            fragment,
            replaces,
        } => maker(1)?.make(
            py,
            &[
                int(*choice)?,
                int(*index)?,
                text(fragment),
                PyBool::new(py, *replaces).to_owned().into_any(),
            ],
        ),
        LiveEvent::ToolCallFinished { choice, index } => {
            maker(2)?.make(py, &[int(*choice)?, int(*index)?])
        }
        LiveEvent::TextDelta { choice, text: t } => maker(3)?.make(py, &[int(*choice)?, text(t)]),
        LiveEvent::ThinkingDelta { choice, text: t } => {
            maker(4)?.make(py, &[int(*choice)?, text(t)])
        }
        LiveEvent::RefusalDelta { choice, text: t } => {
            maker(5)?.make(py, &[int(*choice)?, text(t)])
        }
        LiveEvent::MessageDone {
            choice,
            finish_reason,
            complete,
        } => maker(6)?.make(
            py,
            &[
                int(*choice)?,
                finish_reason
                    .as_deref()
                    .map_or_else(|| py.None().into_bound(py), text),
                PyBool::new(py, *complete).to_owned().into_any(),
            ],
        ),
    }
}

fn live_tuple<'py>(py: Python<'py>, events: &[LiveEvent]) -> PyResult<Bound<'py, PyTuple>> {
    let makers = makers(py)?;
    let items = events
        .iter()
        .map(|e| live_to_py(py, makers, e))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// How an `Assembler` returns live events: `live=True` (one event per change),
/// `live="coalesced"` (consecutive deltas of one call or one choice's text merged
/// within each feed), or `live=False` (none collected).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LiveMode {
    Off,
    Each,
    Coalesced,
}

impl LiveMode {
    /// What `Assembler(live=...)` takes: a bool, or the string `"coalesced"`.
    pub(crate) fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(b) = value.cast_exact::<PyBool>() {
            return Ok(if b.is_true() { Self::Each } else { Self::Off });
        }
        if let Ok(s) = value.cast::<PyString>() {
            if s.to_str()? == "coalesced" {
                return Ok(Self::Coalesced);
            }
            return Err(PyValueError::new_err(format!(
                "live must be True, False or \"coalesced\", not {}",
                value.repr()?
            )));
        }
        Err(PyTypeError::new_err(format!(
            "live must be True, False or \"coalesced\", not {}",
            value.get_type().name()?
        )))
    }

    /// The mode as `Assembler.live` gives it back.
    pub(crate) fn to_py(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            Self::Off => PyBool::new(py, false).to_owned().into_any(),
            Self::Each => PyBool::new(py, true).to_owned().into_any(),
            Self::Coalesced => PyString::new(py, "coalesced").into_any(),
        }
    }

    /// Whether feeds collect live events at all.
    pub(crate) fn collects(self) -> bool {
        self != Self::Off
    }

    /// A number for the saved state: 0 off, 1 each, 2 coalesced.
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Off => 0,
            Self::Each => 1,
            Self::Coalesced => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Self {
        match code {
            0 => Self::Off,
            2 => Self::Coalesced,
            _ => Self::Each,
        }
    }
}

/// Appends `next` to `last` when both are deltas of the same stream of text (one
/// call's input, or one choice's text, reasoning or refusal): what a consumer that
/// concatenates deltas builds is the same either way. A delta that replaces a
/// call's input is never appended to the ones before it (joined, `{}` and
/// `{"city":…}` would read as one text); deltas after it extend it, and the
/// merged delta still replaces.
fn merge_into(last: &mut LiveEvent, next: &LiveEvent) -> bool {
    match (last, next) {
        (
            LiveEvent::ToolInputDelta {
                choice,
                index,
                fragment,
                ..
            },
            LiveEvent::ToolInputDelta {
                choice: c,
                index: i,
                fragment: more,
                replaces: false,
            },
        ) if choice == c && index == i => {
            fragment.push_str(more);
            true
        }
        (
            LiveEvent::TextDelta { choice, text },
            LiveEvent::TextDelta {
                choice: c,
                text: more,
            },
        )
        | (
            LiveEvent::ThinkingDelta { choice, text },
            LiveEvent::ThinkingDelta {
                choice: c,
                text: more,
            },
        )
        | (
            LiveEvent::RefusalDelta { choice, text },
            LiveEvent::RefusalDelta {
                choice: c,
                text: more,
            },
        ) if choice == c => {
            text.push_str(more);
            true
        }
        _ => false,
    }
}

/// The events with every run of consecutive deltas of one call (or of one choice's
/// text, reasoning or refusal) merged into one delta holding their concatenation.
/// Every other event, and the order of all of them, is kept.
pub(crate) fn coalesce(events: Vec<LiveEvent>) -> Vec<LiveEvent> {
    let mut out: Vec<LiveEvent> = Vec::new();
    for event in events {
        if let Some(last) = out.last_mut() {
            if merge_into(last, &event) {
                continue;
            }
        }
        out.push(event);
    }
    out
}

/// The live events of one call in `mode`, turned into Python objects only when
/// read, so that callers who ignore them pay for no objects; `()` when there are
/// none.
pub(crate) fn live_result(
    py: Python<'_>,
    events: Vec<LiveEvent>,
    mode: LiveMode,
) -> PyResult<Bound<'_, PyAny>> {
    if events.is_empty() {
        return Ok(PyTuple::empty(py).into_any());
    }
    let events = if mode == LiveMode::Coalesced {
        coalesce(events)
    } else {
        events
    };
    Ok(Bound::new(
        py,
        LiveEvents {
            events,
            tuple: PyOnceLock::new(),
        },
    )?
    .into_any())
}

/// The live events of one `feed`, `feed_bytes` or `close` (`ToolCallStarted`,
/// `ToolInputDelta`, …): an immutable sequence built lazily, so nothing is
/// converted until it is indexed, iterated or compared. It equals the tuple of
/// the same events. Returned by the `Assembler`, never constructed directly.
#[pyclass(module = "toolstitch", frozen, sequence)]
pub struct LiveEvents {
    events: Vec<LiveEvent>,
    tuple: PyOnceLock<Py<PyTuple>>,
}

impl LiveEvents {
    /// The events, as the core gave them (read by `ArgumentTracker` without
    /// making Python objects).
    pub(crate) fn events(&self) -> &[LiveEvent] {
        &self.events
    }

    fn tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.tuple
            .get_or_try_init(py, || live_tuple(py, &self.events).map(Bound::unbind))
            .map(|t| t.bind(py).clone())
    }
}

#[pymethods]
impl LiveEvents {
    fn __len__(&self) -> usize {
        self.events.len()
    }

    fn __bool__(&self) -> bool {
        !self.events.is_empty()
    }

    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.tuple(key.py())?.as_any().get_item(key)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.tuple(py)?.try_iter()?.into_any())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = other.py();
        match other.cast::<LiveEvents>() {
            Ok(o) => self.tuple(py)?.eq(o.get().tuple(py)?),
            Err(_) => self.tuple(py)?.eq(other),
        }
    }

    fn __add__<'py>(&self, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = other.py();
        let other = py.get_type::<PyTuple>().call1((other,))?;
        self.tuple(py)?.as_any().add(other)
    }

    fn __radd__<'py>(&self, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = other.py();
        let other = py.get_type::<PyTuple>().call1((other,))?;
        other.add(self.tuple(py)?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("LiveEvents{}", self.tuple(py)?.repr()?))
    }
}

/// A JSON value (a usage object) as plain Python data.
fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => map_to_py(py, map)?.into_any(),
    })
}

fn map_to_py<'py>(py: Python<'py>, map: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in map {
        dict.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(dict)
}

/// `dialect` is the assembler's (the one named, or the one `auto` detected): a
/// render into the same dialect keeps the message's ids as sent (Q55).
pub(crate) fn message_to_py<'py>(
    py: Python<'py>,
    m: &providers::AssembledMessage,
    dialect: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let tool_uses = m
        .tool_uses
        .iter()
        .map(|t| tool_use_to_py(py, &t.block))
        .collect::<PyResult<Vec<_>>>()?;
    // A call is in `blocks` and in `tool_uses`: one Python object serves both, so a
    // large input is not built twice.
    let mut shared: HashMap<&str, (&ToolUseBlock, &Bound<'py, PyAny>)> = HashMap::new();
    for (t, obj) in m.tool_uses.iter().zip(&tool_uses) {
        shared.insert(t.block.id.as_str(), (&t.block, obj));
    }
    let blocks = m
        .blocks
        .iter()
        .map(|b| match b {
            Block::ToolUse(call) => match shared.get(call.id.as_str()) {
                Some((same, obj)) if *same == call => Ok((*obj).clone()),
                _ => block_to_py(py, b),
            },
            other => block_to_py(py, other),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let problems = super::registry::problems_to_py(py, &m.problems)?;
    let minted: Vec<&str> = m
        .tool_uses
        .iter()
        .filter(|t| t.id_minted)
        .map(|t| t.block.id.as_str())
        .collect();
    let server_side: Vec<&str> = m
        .tool_uses
        .iter()
        .filter(|t| t.server_side)
        .map(|t| t.block.id.as_str())
        .collect();
    let usage = match &m.usage {
        Some(u) => map_to_py(py, u)?.into_any(),
        None => py.None().into_bound(py),
    };
    let skipped_class = class(py, Class::SkippedEvent)?;
    let skipped = m
        .skipped
        .iter()
        .map(|s| skipped_class.call1((s.ordinal, &s.event_type)))
        .collect::<PyResult<Vec<_>>>()?;
    let t = &m.tokens;
    let tokens = class(py, Class::TokenUsage)?.call1((
        t.input_tokens,
        t.output_tokens,
        t.total_tokens,
        t.reasoning_tokens,
        t.cached_input_tokens,
    ))?;
    let note_class = class(py, Class::Note)?;
    let notes = m
        .notes
        .iter()
        .map(|n| {
            let id = n.call.and_then(|k| {
                m.tool_uses
                    .iter()
                    .find(|t| t.index == k)
                    .map(|t| t.block.id.as_str())
            });
            note_class.call1((n.kind.name(), n.choice, id, n.event, &n.message))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let more = PyDict::new(py);
    more.set_item("notes", PyTuple::new(py, notes)?)?;
    more.set_item("skipped", PyTuple::new(py, skipped)?)?;
    more.set_item("finish", m.finish.map(providers::Finish::name))?;
    more.set_item("tokens", tokens)?;
    more.set_item("dialect", dialect)?;
    class(py, Class::AssembledMessage)?.call(
        (
            m.choice,
            PyTuple::new(py, blocks)?,
            PyTuple::new(py, tool_uses)?,
            &m.text,
            m.finish_reason.as_deref(),
            usage,
            m.complete,
            problems,
            PyFrozenSet::new(py, minted)?,
            PyFrozenSet::new(py, server_side)?,
        ),
        Some(&more),
    )
}
