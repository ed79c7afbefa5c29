//! The state behind an `Assembler` and how one event of any form `feed` takes
//! reaches the core: dicts read in place as a tree, JSON text, SDK objects.
//! The lock is taken only around work that runs no Python code of the caller's
//! (the rule is `Locked`'s, in `mod.rs`).

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::{
    PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple, PyType,
};

use super::errors::{from_framing, from_providers};
use super::event_tree::{self, NotJson};
use super::live::LiveValue;
use super::memo::{first, Filled, Memo, Of, Template};
use super::output::{class, Class};
use super::sdk;
use super::{Locked, Reentered};
use crate::partial::{self, PartialOptions};
use crate::providers::{
    self, BytesAssembler, BytesError, Common, DecodeKind, LiveEvent, TreeBuilder,
};

// ------------------------------------------------------------------ the state

/// The partial-JSON parser of one open call, the input text it was fed, and
/// the converter of its value (which reuses what is finished between reads).
pub(crate) struct Partial {
    pub(crate) parser: partial::PartialJson,
    /// How many bytes of the input the parser was fed, at which revision.
    pub(crate) fed: usize,
    pub(crate) revision: Option<u64>,
    pub(crate) value: LiveValue,
}

impl Partial {
    pub(crate) fn new(input: &str, revision: Option<u64>, opts: PartialOptions) -> Self {
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

pub(crate) struct State {
    /// The core assembler and the framing decoder of `feed_bytes` (made on the
    /// first one, which detects the transport).
    pub(crate) asm: BytesAssembler,
    pub(crate) partials: BTreeMap<(i64, i64), Partial>,
    /// Buffers of `feed(dict)`, reused from event to event: the tree's nodes, its
    /// strings, and (empty between events) their UTF-8 texts.
    pub(crate) tree: TreeBuilder,
    pub(crate) strs: Vec<Py<PyString>>,
    pub(crate) texts: Vec<&'static str>,
    /// The last common events of dicts and SDK objects (`memo.rs`).
    pub(crate) memo: Memo,
}

pub(crate) type Sink<'a> = Option<&'a mut Vec<LiveEvent>>;

pub(crate) fn bytes_error(py: Python<'_>, e: &BytesError) -> PyErr {
    match e {
        BytesError::Framing(e) => from_framing(py, e),
        BytesError::Core(e) => from_providers(py, e),
    }
}

impl State {
    /// Ends the stream (the core closes once): flushes the framing, closes the
    /// core; the partial-JSON parsers of open calls go.
    pub(crate) fn close(&mut self, live: Sink<'_>) -> Result<(), BytesError> {
        let r = self.asm.close(live);
        self.partials.clear();
        r
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

/// Feeds one decoded dict: the memo's common event when it is one, else read
/// in place as a tree, which the memo may learn.
fn feed_dict(
    st: &mut State,
    dict: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    mut sink: Sink<'_>,
) -> Result<(), providers::Error> {
    let State { asm, memo, .. } = st;
    if memo.dicts.compares() {
        let found = memo.dicts.find(dict, event_type);
        let served = serve(&mut asm.core, found, event_type, sink.as_deref_mut());
        memo.dicts.tried(served.is_some());
        if let Some(r) = served {
            return r;
        }
    }
    if let Some(common) = feed_tree(st, dict, event_type, sink)? {
        if st.memo.dicts.learning() {
            if let Some(t) = Template::learn(dict, event_type, common, Of::Dicts) {
                st.memo.dicts.keep(t);
            }
        }
    }
    Ok(())
}

/// Feeds one decoded dict read in place as a tree (the buffers are the
/// state's, reused from event to event); gives the common event it was, if any.
fn feed_tree(
    st: &mut State,
    dict: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> Result<Option<Common>, providers::Error> {
    if st.asm.core.is_closed() {
        return Err(st.asm.core.refuse_after_close());
    }
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
        if e.big_int {
            // A number no tree holds exactly: the event's JSON text (Python's
            // json writes ints exactly) goes the text path, which keeps it as sent.
            if let Some(text) = json_text(dict) {
                return core
                    .feed_json(event_type, text.as_bytes(), sink)
                    .map(|()| None);
            }
        }
        return Err(not_json(core, event_type, &e));
    }
    let mut texts: Vec<&str> = std::mem::take(spare);
    let result = match event_tree::texts_into(py, strs, &mut texts)
        .and_then(|()| event_tree::tree(tree, &texts))
    {
        Ok(t) => core.feed_tree_learning(event_type, t, sink),
        Err(e) => Err(not_json(core, event_type, &e)),
    };
    // The buffer goes back without its borrowed strings (same layout: no allocation).
    texts.clear();
    *spare = texts.into_iter().map(|_| "").collect();
    strs.clear();
    result
}

/// How many SDK classes one event may have looked at before it takes the
/// general path (each class is looked at once per process).
const MAX_LEARNED_PER_EVENT: usize = 16;

/// What reading an event as SDK objects in place came to.
enum Sdk {
    /// Read and fed: what the core said (and the common event it was).
    Fed(Result<Option<Common>, providers::Error>),
    /// A class not looked at yet.
    Learn(Py<PyType>),
    /// Not read here: the general path.
    General,
}

/// Reads `event` (SDK objects of the classes `sdk.rs` knows, lists and plain
/// data) in place as a tree and feeds it; the core is not touched unless the
/// whole event was read.
fn feed_sdk(
    st: &mut State,
    event: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> Sdk {
    if st.asm.core.is_closed() {
        return Sdk::Fed(Err(st.asm.core.refuse_after_close()));
    }
    let py = event.py();
    let State {
        asm,
        tree,
        strs,
        texts: spare,
        ..
    } = st;
    tree.clear();
    strs.clear();
    if let Err(e) = event_tree::build_sdk(event, tree, strs) {
        strs.clear();
        return e.learn.map_or(Sdk::General, Sdk::Learn);
    }
    let mut texts: Vec<&str> = std::mem::take(spare);
    let outcome = match event_tree::texts_into(py, strs, &mut texts)
        .and_then(|()| event_tree::tree(tree, &texts))
    {
        Ok(t) => Sdk::Fed(asm.core.feed_tree_learning(event_type, t, sink)),
        Err(_) => Sdk::General,
    };
    texts.clear();
    *spare = texts.into_iter().map(|_| "").collect();
    strs.clear();
    outcome
}

/// `json.dumps(value)`, or `None` when it fails.
fn json_text(value: &Bound<'_, PyAny>) -> Option<String> {
    let py = value.py();
    let dumps = py.import("json").ok()?.getattr("dumps").ok()?;
    dumps.call1((value,)).ok()?.extract::<String>().ok()
}

/// Feeds one event of any form `feed` takes. The lock is taken only around work
/// that runs no Python code: an SDK object's `to_dict()` (or a `str` subclass's
/// `encode`) runs before it, so that neither code calling back into this
/// assembler nor another thread waiting for it while holding the GIL can deadlock.
pub(crate) fn feed_event(
    state: &Locked<State>,
    event: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> PyResult<()> {
    let py = event.py();
    let result = if event.cast::<PyDict>().is_ok() {
        let wire = boto3_chunk(event)?;
        let dict = wire.as_ref().map_or(event, |w| w.as_any());
        feed_dict(&mut *state.lock(py)?, dict, event_type, sink)
    } else {
        let mut sink = sink;
        let text = with_event_bytes(event, |b| {
            let mut st = state.lock(py)?;
            if st.asm.core.is_closed() {
                return Ok(Err(st.asm.core.refuse_after_close()));
            }
            Ok::<_, Reentered>(st.asm.core.feed_json(event_type, b, sink.take()))
        })?;
        match text {
            Some(r) => r?,
            None => feed_object(state, event, event_type, sink)?,
        }
    };
    result.map_err(|e| from_providers(py, &e))
}

/// Feeds an SDK object (or another mapping): the memo's common event when it
/// is one, else its plain data read like a dict, which the memo may learn.
/// The object is compared with the template, and its plain data made, outside
/// the lock: both may run Python code.
fn feed_object(
    state: &Locked<State>,
    event: &Bound<'_, PyAny>,
    event_type: Option<&str>,
    mut sink: Sink<'_>,
) -> PyResult<Result<(), providers::Error>> {
    let py = event.py();
    let templates = {
        let mut st = state.lock(py)?;
        if st.memo.objects.compares() {
            st.memo.objects.shared()
        } else {
            None
        }
    };
    if let Some(templates) = templates {
        let found = first(&templates, event, event_type);
        let mut st = state.lock(py)?;
        let served = serve(&mut st.asm.core, found, event_type, sink.as_deref_mut());
        st.memo.objects.tried(served.is_some());
        if let Some(r) = served {
            return Ok(r);
        }
    }
    // The objects of the SDK classes `sdk.rs` knows are read in place; a class
    // not looked at yet is looked at (outside the lock) and the event read again.
    // Only objects and lists: a bare scalar or a tuple is no event (the general
    // path refuses it with a `TypeError`, as it always did).
    let in_place = event.is_instance_of::<PyList>()
        || !(event.is_none()
            || event.is_instance_of::<PyInt>()
            || event.is_instance_of::<PyFloat>()
            || event.is_instance_of::<PyTuple>());
    for _ in 0..if in_place { MAX_LEARNED_PER_EVENT } else { 0 } {
        let outcome = feed_sdk(
            &mut *state.lock(py)?,
            event,
            event_type,
            sink.as_deref_mut(),
        );
        match outcome {
            Sdk::Fed(Err(e)) => return Ok(Err(e)),
            Sdk::Fed(Ok(learned)) => {
                if let Some(common) = learned {
                    if state.lock(py)?.memo.objects.learning() {
                        if let Some(t) = Template::learn(event, event_type, common, Of::Objects) {
                            state.lock(py)?.memo.objects.keep(t);
                        }
                    }
                }
                return Ok(Ok(()));
            }
            Sdk::Learn(ty) => sdk::learn(ty.bind(py)),
            Sdk::General => break,
        }
    }
    // Kept until the template is learned: its string is found by address.
    let plain = class(py, Class::EventPlain)?.call1((event,))?;
    // A list (of SDK objects: a JSON array of events) learns nothing.
    let learned = match feed_tree(&mut *state.lock(py)?, &plain, event_type, sink) {
        Ok(learned) => learned,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(common) = learned {
        if state.lock(py)?.memo.objects.learning() {
            if let Some(t) = Template::learn(event, event_type, common, Of::Objects) {
                state.lock(py)?.memo.objects.keep(t);
            }
        }
    }
    drop(plain);
    Ok(Ok(()))
}

/// Applies the common event of the template an event was found to be, with
/// the string in its hole; `None` when none was found, the string is not
/// UTF-8 (the general path refuses it), or the core cannot serve it.
fn serve(
    core: &mut providers::Assembler,
    found: Option<(&Template, Filled<'_>)>,
    event_type: Option<&str>,
    sink: Sink<'_>,
) -> Option<Result<(), providers::Error>> {
    let (t, filled) = found?;
    let piece = filled.piece.as_ref()?.to_str().ok()?;
    core.feed_common(event_type, &t.common, piece, filled.stamp()?, sink)
}

/// An event of boto3's `invoke_model_with_response_stream(...)["body"]`,
/// `{"chunk": {"bytes": b"…"}}`: boto3 decoded the payload from the base64
/// text the service sent. Given back in that wire form (which the
/// `bedrock-invoke` dialect reads, and which names no other dialect), so that
/// the events can be fed as boto3 yields them. Only exactly that shape: any
/// other `bytes` in a dict stays refused as not JSON data. Runs before the
/// lock (a dict lookup may run a key's `__eq__`).
fn boto3_chunk<'py>(event: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = event.py();
    let one = |d: &Bound<'py, PyAny>,
               key: &Bound<'py, PyString>|
     -> PyResult<Option<Bound<'py, PyAny>>> {
        match d.cast_exact::<PyDict>() {
            Ok(d) if d.len() == 1 => d.get_item(key),
            _ => Ok(None),
        }
    };
    let Some(chunk) = one(event, pyo3::intern!(py, "chunk"))? else {
        return Ok(None);
    };
    let Some(payload) = one(&chunk, pyo3::intern!(py, "bytes"))? else {
        return Ok(None);
    };
    if payload.cast_exact::<PyBytes>().is_err() {
        return Ok(None);
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("newline", false)?;
    let text = py
        .import("binascii")?
        .call_method("b2a_base64", (payload,), Some(&kwargs))?
        .call_method1("decode", ("ascii",))?;
    let inner = PyDict::new(py);
    inner.set_item("bytes", text)?;
    let wire = PyDict::new(py);
    wire.set_item("chunk", inner)?;
    Ok(Some(wire))
}
