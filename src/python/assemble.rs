//! `Assembler`: one streamed provider response, from decoded events or raw
//! transport bytes, into `AssembledMessage`s and live events.
//!
//! The state is a `Mutex` over the core assembler, the framing decoder (made on
//! the first `feed_bytes`) and the partial-JSON parsers of `partial_calls()`.
//! `feed_bytes` and `close` decode and assemble with the GIL released; Python
//! objects (live events, messages) are built afterwards, with the lock released.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyList, PyMemoryView, PyString,
    PyTuple,
};
use serde_json::{Map, Value};

use super::convert::{block_to_py, tool_use_to_py};
use super::errors::{error, from_framing, from_providers, Kind};
use super::event_tree::{self, NotJson};
use super::imports::Imports;
use super::live::{LiveValue, Numbers};
use super::{Locked, Reentered};
use crate::blocks::{Block, ToolUseBlock};
use crate::framing::{self, FramingLimits};
use crate::partial::{self, PartialOptions};
use crate::providers::{
    self, AssemblerLimits, BytesAssembler, BytesError, DecodeKind, Dialect, EventRef, LiveEvent,
    TreeBuilder,
};

// ------------------------------------------------------------ Python classes

#[derive(Clone, Copy)]
enum Class {
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
    "toolstitch.assemble",
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

/// A class (or function) of `toolstitch.assemble`, imported once.
fn class(py: Python<'_>, c: Class) -> PyResult<&Bound<'_, PyAny>> {
    NAMES.get(py, c as usize)
}

fn live_to_py<'py>(py: Python<'py>, event: &LiveEvent) -> PyResult<Bound<'py, PyAny>> {
    match event {
        LiveEvent::ToolCallStarted {
            choice,
            index,
            id,
            name,
        } => class(py, Class::ToolCallStarted)?.call1((*choice, *index, id, name)),
        LiveEvent::ToolInputDelta {
            choice,
            index,
            fragment,
        } => class(py, Class::ToolInputDelta)?.call1((*choice, *index, fragment)),
        LiveEvent::ToolCallFinished { choice, index } => {
            class(py, Class::ToolCallFinished)?.call1((*choice, *index))
        }
        LiveEvent::TextDelta { choice, text } => {
            class(py, Class::TextDelta)?.call1((*choice, text))
        }
        LiveEvent::ThinkingDelta { choice, text } => {
            class(py, Class::ThinkingDelta)?.call1((*choice, text))
        }
        LiveEvent::RefusalDelta { choice, text } => {
            class(py, Class::RefusalDelta)?.call1((*choice, text))
        }
        LiveEvent::MessageDone {
            choice,
            finish_reason,
            complete,
        } => class(py, Class::MessageDone)?.call1((*choice, finish_reason.as_deref(), *complete)),
    }
}

fn live_tuple<'py>(py: Python<'py>, events: &[LiveEvent]) -> PyResult<Bound<'py, PyTuple>> {
    let items = events
        .iter()
        .map(|e| live_to_py(py, e))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// The live events of one call, turned into Python objects only when read, so
/// that callers who ignore them pay for no objects; `()` when there are none.
fn live_result(py: Python<'_>, events: Vec<LiveEvent>) -> PyResult<Bound<'_, PyAny>> {
    if events.is_empty() {
        return Ok(PyTuple::empty(py).into_any());
    }
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

fn message_to_py<'py>(
    py: Python<'py>,
    m: &providers::AssembledMessage,
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

// ------------------------------------------------------------------ the state

/// The partial-JSON parser of one open call, the input text it was fed, and
/// the converter of its value (which reuses what is finished between reads).
struct Partial {
    parser: partial::PartialJson,
    /// How many bytes of the input the parser was fed, at which revision.
    fed: usize,
    revision: Option<u64>,
    value: LiveValue,
}

impl Partial {
    fn new(input: &str, revision: Option<u64>, opts: PartialOptions) -> Self {
        let mut parser = partial::PartialJson::new(opts);
        // A syntax error stops the parser; the value so far stays.
        let _ = parser.feed(input.as_bytes());
        Self {
            parser,
            fed: input.len(),
            revision,
            value: LiveValue::default(),
        }
    }
}

struct State {
    /// The core assembler and the framing decoder of `feed_bytes` (made on the
    /// first one, which detects the transport).
    asm: BytesAssembler,
    closed: bool,
    partials: BTreeMap<(i64, i64), Partial>,
    /// Buffers of `feed(dict)`, reused from event to event: the tree's nodes, its
    /// strings, and (empty between events) their UTF-8 texts.
    tree: TreeBuilder,
    strs: Vec<Py<PyString>>,
    texts: Vec<&'static str>,
}

type Sink<'a> = Option<&'a mut Vec<LiveEvent>>;

fn bytes_error(py: Python<'_>, e: &BytesError) -> PyErr {
    match e {
        BytesError::Framing(e) => from_framing(py, e),
        BytesError::Core(e) => from_providers(py, e),
    }
}

impl State {
    /// Ends the stream (once): flushes the framing, closes the core.
    fn close(&mut self, live: Sink<'_>) -> Result<(), BytesError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let r = self.asm.close(live);
        self.partials.clear();
        r
    }

    /// The error for a feed after `close()`, left as a problem on the messages.
    fn closed_error(&mut self) -> providers::Error {
        let e = providers::Error::Closed {
            event: EventRef {
                ordinal: self.asm.core.events_seen().saturating_add(1),
                event_type: String::new(),
            },
        };
        self.asm.core.note_not_applied(&e);
        e
    }
}

/// Runs `f` on the bytes of a `str` (UTF-8; a lone surrogate gives invalid UTF-8,
/// which the core reports) or bytes-like event; `None` for other types.
fn with_event_bytes<T>(
    event: &Bound<'_, PyAny>,
    f: impl FnOnce(&[u8]) -> T,
) -> PyResult<Option<T>> {
    if let Ok(s) = event.cast::<PyString>() {
        return Ok(Some(match s.to_str() {
            Ok(text) => f(text.as_bytes()),
            Err(_) => {
                let encoded = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
                f(encoded.cast::<PyBytes>()?.as_bytes())
            }
        }));
    }
    if let Ok(b) = event.cast::<PyBytes>() {
        return Ok(Some(f(b.as_bytes())));
    }
    if let Ok(b) = event.cast::<PyByteArray>() {
        return Ok(Some(f(&b.to_vec())));
    }
    if event.cast::<PyMemoryView>().is_ok() {
        let copied = event.py().get_type::<PyBytes>().call1((event,))?;
        return Ok(Some(f(copied.cast::<PyBytes>()?.as_bytes())));
    }
    Ok(None)
}

/// `providers::Error` for an event that is not JSON data (a dict holding a set,
/// a NaN, ...), numbered as the event it would have been.
fn not_json(
    core: &mut providers::Assembler,
    event_type: Option<&str>,
    e: &NotJson,
) -> providers::Error {
    core.refuse(event_type, DecodeKind::MalformedJson, e.to_string())
}

/// Feeds one decoded dict, read in place as a tree (the buffers are the state's,
/// reused from event to event).
fn feed_dict(
    st: &mut State,
    dict: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> Result<(), providers::Error> {
    let py = dict.py();
    let State {
        asm,
        tree,
        strs,
        texts: spare,
        ..
    } = st;
    let core = &mut asm.core;
    tree.clear();
    strs.clear();
    if let Err(e) = event_tree::build(dict, tree, strs) {
        strs.clear();
        return Err(not_json(core, event_type, &e));
    }
    let mut texts: Vec<&str> = std::mem::take(spare);
    let result = match event_tree::texts_into(py, strs, &mut texts)
        .and_then(|()| event_tree::tree(tree, &texts))
    {
        Ok(t) => core.feed_tree(event_type, t, sink),
        Err(e) => Err(not_json(core, event_type, &e)),
    };
    // The buffer goes back without its borrowed strings (same layout: no allocation).
    texts.clear();
    *spare = texts.into_iter().map(|_| "").collect();
    strs.clear();
    result
}

/// Feeds one event of any form `feed` takes. The lock is taken only around work
/// that runs no Python code: an SDK object's `to_dict()` (or a `str` subclass's
/// `encode`) runs before it, so that neither code calling back into this
/// assembler nor another thread waiting for it while holding the GIL can deadlock.
fn feed_event(
    state: &Locked<State>,
    event: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> PyResult<()> {
    let py = event.py();
    let in_dict = |st: &mut State, dict: &Bound<'_, PyAny>, sink: Sink<'_>| {
        if st.closed {
            return Err(st.closed_error());
        }
        feed_dict(st, dict, event_type, sink)
    };
    let result = if event.cast::<PyDict>().is_ok() {
        in_dict(&mut *state.lock(py)?, event, sink)
    } else {
        let mut sink = sink;
        let text = with_event_bytes(event, |b| {
            let mut st = state.lock(py)?;
            if st.closed {
                return Ok(Err(st.closed_error()));
            }
            Ok::<_, Reentered>(st.asm.core.feed_json(event_type, b, sink.take()))
        })?;
        match text {
            Some(r) => r?,
            None => {
                // An SDK object (or another mapping): its plain data, read like a dict.
                let plain = class(py, Class::EventPlain)?.call1((event,))?;
                in_dict(&mut *state.lock(py)?, &plain, sink)
            }
        }
    };
    result.map_err(|e| from_providers(py, &e))
}

// `help(Assembler)` shows the default limits as numbers (see `text_signature`);
// the build fails if a default changes without them.
const _: () = assert!(
    crate::accumulate::DEFAULT_MAX_ENTRIES == 4096
        && crate::accumulate::DEFAULT_MAX_INPUT_BYTES == 8_388_608
        && crate::accumulate::DEFAULT_MAX_TOTAL_BYTES == 67_108_864
        && framing::DEFAULT_MAX_EVENT_BYTES == 16_777_216
        && framing::DEFAULT_MAX_LINE_BYTES == 16_777_216
);

/// Assembles one streamed provider response. `toolstitch.Assembler` is the Python
/// subclass users see (`python/toolstitch/streams.py`): it adds the context manager,
/// `feed_all` and `afeed_all`, and a signature whose defaults are these.
#[pyclass(
    module = "toolstitch._toolstitch",
    name = "Assembler",
    frozen,
    subclass
)]
pub struct PyAssembler {
    state: Locked<State>,
    /// Whether feeds return live events (changed only by unpickling).
    live: AtomicBool,
}

/// The format of a pickled Assembler's state; bumped when it changes shape.
const SAVED_STATE_VERSION: u32 = 1;

#[derive(serde::Serialize)]
struct SavedState<'a> {
    version: u32,
    live: bool,
    core: &'a providers::Assembler,
    decoder: Option<&'a framing::Decoder>,
    framing_limits: FramingLimits,
    closed: bool,
    last_framing_error: Option<&'a str>,
}

#[derive(serde::Deserialize)]
struct LoadedState {
    version: u32,
    live: bool,
    core: providers::Assembler,
    decoder: Option<framing::Decoder>,
    framing_limits: FramingLimits,
    closed: bool,
    last_framing_error: Option<String>,
}

impl PyAssembler {
    /// `bytes` decoded and fed with the GIL released; the live events as a tuple.
    fn run_bytes<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live.load(Ordering::Relaxed);
        let (result, events) = py.detach(|| {
            let mut events = Vec::new();
            let mut st = match self.state.lock_detached() {
                Ok(st) => st,
                Err(e) => return (Err(e), events),
            };
            if st.closed {
                let e = st.closed_error();
                return (Ok(Err(BytesError::Core(e))), events);
            }
            let sink = if live { Some(&mut events) } else { None };
            (Ok(st.asm.feed_bytes(bytes, sink)), events)
        });
        result?.map_err(|e| bytes_error(py, &e))?;
        live_result(py, events)
    }
}

#[pymethods]
impl PyAssembler {
    #[new]
    #[pyo3(signature = (
        provider = "auto",
        *,
        live = true,
        max_calls = crate::accumulate::DEFAULT_MAX_ENTRIES,
        max_input_bytes = crate::accumulate::DEFAULT_MAX_INPUT_BYTES,
        max_total_bytes = crate::accumulate::DEFAULT_MAX_TOTAL_BYTES,
        max_event_bytes = framing::DEFAULT_MAX_EVENT_BYTES,
        max_choices = DEFAULT_MAX_CHOICES,
        max_line_bytes = framing::DEFAULT_MAX_LINE_BYTES,
        max_output_tokens = None,
    ), text_signature = "(provider='auto', *, live=True, max_calls=4096, max_input_bytes=8388608, max_total_bytes=67108864, max_event_bytes=16777216, max_choices=128, max_line_bytes=16777216, max_output_tokens=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        provider: &str,
        live: bool,
        max_calls: usize,
        max_input_bytes: usize,
        max_total_bytes: usize,
        max_event_bytes: usize,
        max_choices: usize,
        max_line_bytes: usize,
        max_output_tokens: Option<u64>,
    ) -> PyResult<Self> {
        let dialect = Dialect::parse_provider(provider).map_err(|e| from_providers(py, &e))?;
        let limits = AssemblerLimits {
            max_calls,
            max_input_bytes,
            max_total_bytes,
            max_event_bytes,
            max_choices,
            max_output_tokens,
            ..AssemblerLimits::default()
        };
        let framing_limits = FramingLimits {
            max_line_bytes,
            max_event_bytes,
            // A frame carries one event's payload plus its prelude, headers and CRCs.
            max_frame_bytes: max_event_bytes.saturating_add(64 * 1024),
        };
        Ok(Self {
            state: Locked::new(State {
                asm: BytesAssembler::new(
                    providers::Assembler::new(dialect, limits),
                    framing_limits,
                ),
                closed: false,
                partials: BTreeMap::new(),
                tree: TreeBuilder::default(),
                strs: Vec::new(),
                texts: Vec::new(),
            }),
            live: AtomicBool::new(live),
        })
    }

    /// Feeds one decoded event: a dict, JSON text (`str` / `bytes`), or a provider SDK
    /// object; a whole non-streamed response is taken as the events it stands for, and a
    /// list (a JSON array) as its events one by one. Returns the live events it caused
    /// (always `()` with `live=False`).
    #[pyo3(signature = (event, *, event_type = None))]
    fn feed<'py>(
        &self,
        event: &Bound<'py, PyAny>,
        event_type: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = event.py();
        let mut events = Vec::new();
        let sink = if self.live.load(Ordering::Relaxed) {
            Some(&mut events)
        } else {
            None
        };
        feed_event(&self.state, event, event_type, sink)?;
        live_result(py, events)
    }

    /// Feeds every event of an iterable (each as `feed` takes it), crossing into
    /// Rust once for the batch. Returns the live events of the whole batch. An
    /// event that fails is not applied, the ones after it are (as in a read of
    /// `feed_bytes`), and the first error is raised at the end; every failure
    /// has left a problem on the messages.
    #[pyo3(signature = (events, *, event_type = None))]
    fn feed_many<'py>(
        &self,
        events: &Bound<'py, PyAny>,
        event_type: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = events.py();
        let mut live = Vec::new();
        // One event at a time, the lock released in between: pulling the next item
        // may run Python code (a generator), which must not find the lock held.
        let mut first: Option<PyErr> = None;
        for event in events.try_iter()? {
            let sink = if self.live.load(Ordering::Relaxed) {
                Some(&mut live)
            } else {
                None
            };
            if let Err(e) = feed_event(&self.state, &event?, event_type, sink) {
                // A Python error that is no error of the stream (a TypeError for an
                // item feed() does not take) stops the batch at once.
                if !e.is_instance_of::<PyValueError>(py) {
                    return Err(e);
                }
                first.get_or_insert(e);
            }
        }
        match first {
            Some(e) => Err(e),
            None => live_result(py, live),
        }
    }

    /// Feeds raw transport bytes (SSE, JSON lines or AWS event-stream, told from the
    /// first bytes), cut anywhere. Decoding runs in Rust without the GIL.
    fn feed_bytes<'py>(&self, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = data.py();
        if let Ok(b) = data.cast::<PyBytes>() {
            return self.run_bytes(py, b.as_bytes());
        }
        if let Ok(b) = data.cast::<PyByteArray>() {
            // Copied: a bytearray could change while the GIL is released.
            return self.run_bytes(py, &b.to_vec());
        }
        if data.cast::<PyMemoryView>().is_ok() {
            let copied = py.get_type::<PyBytes>().call1((data,))?;
            return self.run_bytes(py, copied.cast::<PyBytes>()?.as_bytes());
        }
        Err(PyTypeError::new_err(format!(
            "feed_bytes() takes bytes, bytearray or memoryview, not {}; use feed() for \
             decoded events",
            data.get_type().name()?
        )))
    }

    /// Ends the stream: flushes an event left unterminated at the end of the bytes,
    /// closes every open call and decides completeness. Returns the live events.
    /// Closing twice does nothing.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let live = self.live.load(Ordering::Relaxed);
        let (result, events) = py.detach(|| {
            let mut events = Vec::new();
            let sink = if live { Some(&mut events) } else { None };
            let r = self.state.lock_detached().map(|mut st| st.close(sink));
            (r, events)
        });
        result?.map_err(|e| bytes_error(py, &e))?;
        live_result(py, events)
    }

    /// One `AssembledMessage` per choice, in ascending choice index.
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let messages = self.state.lock(py)?.asm.core.messages();
        let items = messages
            .iter()
            .map(|m| message_to_py(py, m))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The `AssembledMessage` of one choice (choice 0 always exists); `KeyError` for a
    /// choice the stream has not had.
    #[pyo3(signature = (choice = 0))]
    fn message<'py>(&self, py: Python<'py>, choice: i64) -> PyResult<Bound<'py, PyAny>> {
        let messages = self.state.lock(py)?.asm.core.messages();
        match messages.iter().find(|m| m.choice == choice) {
            Some(m) => message_to_py(py, m),
            None => {
                let seen: Vec<String> = messages.iter().map(|m| m.choice.to_string()).collect();
                Err(PyKeyError::new_err(format!(
                    "no choice {choice} in this stream (choices: {})",
                    seen.join(", ")
                )))
            }
        }
    }

    /// The dialect: the one given, or the one `auto` detected; `None` until known.
    #[getter]
    fn dialect(&self, py: Python<'_>) -> PyResult<Option<&'static str>> {
        Ok(self.state.lock(py)?.asm.core.dialect().map(Dialect::name))
    }

    /// Whether `feed` returns live events.
    #[getter]
    fn live(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }

    /// The whole state as bytes, for pickle (and `copy`): a stream can stop in one
    /// process and go on in another. The partial-JSON parsers of `partial_calls()`
    /// are not kept; they are rebuilt from the inputs on the next call.
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let st = self.state.lock(py)?;
        let saved = SavedState {
            version: SAVED_STATE_VERSION,
            live: self.live.load(Ordering::Relaxed),
            core: &st.asm.core,
            decoder: st.asm.decoder.as_ref(),
            framing_limits: st.asm.framing_limits,
            closed: st.closed,
            last_framing_error: st.asm.last_framing_error.as_deref(),
        };
        let bytes = serde_json::to_vec(&saved);
        drop(st);
        let bytes =
            bytes.map_err(|e| PyValueError::new_err(format!("cannot save the assembler: {e}")))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Restores a state `__getstate__` gave (unpickling).
    fn __setstate__(&self, py: Python<'_>, state: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = state.cast::<PyBytes>().map_err(|_| {
            PyTypeError::new_err("an Assembler's state is the bytes __getstate__ gave")
        })?;
        let loaded: LoadedState = serde_json::from_slice(bytes.as_bytes()).map_err(|e| {
            error(
                py,
                Kind::StreamDecode,
                format!("not a saved Assembler state: {e}"),
            )
        })?;
        if loaded.version != SAVED_STATE_VERSION {
            return Err(error(
                py,
                Kind::StreamDecode,
                format!(
                    "a saved Assembler state of format {}, this version reads format \
                     {SAVED_STATE_VERSION}",
                    loaded.version
                ),
            ));
        }
        let mut asm = BytesAssembler::new(loaded.core, loaded.framing_limits);
        asm.decoder = loaded.decoder;
        asm.last_framing_error = loaded.last_framing_error;
        let fresh = State {
            asm,
            closed: loaded.closed,
            partials: BTreeMap::new(),
            tree: TreeBuilder::default(),
            strs: Vec::new(),
            texts: Vec::new(),
        };
        // The old state (its Python strings and partial values) is dropped after
        // the lock is released.
        let old = std::mem::replace(&mut *self.state.lock(py)?, fresh);
        drop(old);
        self.live.store(loaded.live, Ordering::Relaxed);
        Ok(())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.state.lock(py)?.closed)
    }

    /// `{(choice, index): value}` for every call not finished yet: the best-effort
    /// value of its input so far (`None` when nothing is showable), for display only.
    fn partial_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut st = self.state.lock(py)?;
        let State { asm, partials, .. } = &mut *st;
        let core = &asm.core;
        let open = core.partial_input_texts();
        let opts = PartialOptions {
            max_bytes: usize::MAX,
            ..PartialOptions::default()
        };
        let keys: Vec<(i64, i64)> = open.iter().map(|(c, k, _, _)| (*c, *k)).collect();
        partials.retain(|key, _| keys.contains(key));
        let out = PyDict::new(py);
        for (c, k, input, revision) in open {
            let p = match partials.entry((c, k)) {
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let p = e.get_mut();
                    // The same revision means the input only grew at its end.
                    let grown = revision.is_some()
                        && p.revision == revision
                        && input.len() >= p.fed
                        && input.is_char_boundary(p.fed);
                    if grown {
                        // Only the new bytes are parsed: the parser keeps its state.
                        let rest = input.get(p.fed..).unwrap_or_default();
                        if !rest.is_empty() {
                            // A syntax error stops the parser; the value so far stays.
                            let _ = p.parser.feed(rest.as_bytes());
                            p.fed = input.len();
                        }
                    } else {
                        // The input was replaced (a Responses `done` text that
                        // disagrees, a Gemini object rebuilt from its paths).
                        *p = Partial::new(&input, revision, opts);
                    }
                    e.into_mut()
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(Partial::new(&input, revision, opts))
                }
            };
            let value = p
                .value
                .read(py, &p.parser, Numbers::Display)?
                .unwrap_or_else(|| py.None().into_bound(py));
            out.set_item((c, k), value)?;
        }
        Ok(out)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let st = self.state.lock(py)?;
        Ok(format!(
            "Assembler(provider={:?}, events={}, closed={})",
            st.asm.core.dialect().map_or("auto", Dialect::name),
            st.asm.core.events_seen(),
            if st.closed { "True" } else { "False" }
        ))
    }
}

/// Choices (n > 1) / candidates one stream may have unless told otherwise.
const DEFAULT_MAX_CHOICES: usize = 128;

/// The default of every limit keyword of `Assembler`, by name: the Python subclass
/// writes them into its own signature, so `help()` shows the values.
fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("max_calls", crate::accumulate::DEFAULT_MAX_ENTRIES)?;
    d.set_item(
        "max_input_bytes",
        crate::accumulate::DEFAULT_MAX_INPUT_BYTES,
    )?;
    d.set_item(
        "max_total_bytes",
        crate::accumulate::DEFAULT_MAX_TOTAL_BYTES,
    )?;
    d.set_item("max_event_bytes", framing::DEFAULT_MAX_EVENT_BYTES)?;
    d.set_item("max_choices", DEFAULT_MAX_CHOICES)?;
    d.set_item("max_line_bytes", framing::DEFAULT_MAX_LINE_BYTES)?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAssembler>()?;
    m.add("_ASSEMBLER_DEFAULTS", defaults(m.py())?)?;
    m.add_class::<LiveEvents>()?;
    Ok(())
}
