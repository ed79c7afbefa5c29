//! `Assembler`: one streamed provider response, from decoded events or raw
//! transport bytes, into `AssembledMessage`s and live events.
//!
//! The state (`feed.rs`) is a lock over the core assembler, the framing decoder
//! (made on the first `feed_bytes`) and the partial-JSON parsers of
//! `partial_calls()`. `feed_bytes` and `close` decode and assemble with the GIL
//! released; Python objects (live events, messages: `output.rs`) are built
//! afterwards, with the lock released.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView};

use super::errors::{error, from_providers, Kind};
use super::feed::{bytes_error, feed_event, Partial, State};
use super::live::Numbers;
use super::output::{live_result, message_to_py, LiveEvents, LiveMode};
use super::Locked;
use crate::framing::{self, FramingLimits};
use crate::partial::PartialOptions;
use crate::providers::{self, AssemblerLimits, BytesAssembler, Dialect, TreeBuilder};

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
    /// How feeds return live events, a [`LiveMode`] code (changed only by unpickling).
    live: AtomicU8,
}

/// The format of a pickled Assembler's state; bumped when it changes shape.
const SAVED_STATE_VERSION: u32 = 1;

#[derive(serde::Serialize)]
struct SavedState<'a> {
    version: u32,
    live: bool,
    /// Whether live deltas are coalesced (`live="coalesced"`).
    coalesced: bool,
    core: &'a providers::Assembler,
    decoder: Option<&'a framing::Decoder>,
    framing_limits: FramingLimits,
    last_framing_error: Option<&'a str>,
}

#[derive(serde::Deserialize)]
struct LoadedState {
    version: u32,
    live: bool,
    /// Absent in states saved before `live="coalesced"` existed.
    #[serde(default)]
    coalesced: bool,
    core: providers::Assembler,
    decoder: Option<framing::Decoder>,
    framing_limits: FramingLimits,
    last_framing_error: Option<String>,
}

impl PyAssembler {
    fn mode(&self) -> LiveMode {
        LiveMode::from_code(self.live.load(Ordering::Relaxed))
    }

    /// `bytes` decoded and fed with the GIL released; the live events as a tuple.
    fn run_bytes<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let mode = self.mode();
        let live = mode.collects();
        let (result, events) = py.detach(|| {
            let mut events = Vec::new();
            let mut st = match self.state.lock_detached() {
                Ok(st) => st,
                Err(e) => return (Err(e), events),
            };
            let sink = if live { Some(&mut events) } else { None };
            (Ok(st.asm.feed_bytes(bytes, sink)), events)
        });
        result?.map_err(|e| bytes_error(py, &e))?;
        live_result(py, events, mode)
    }
}

/// Why a feed from the relay failed (made a Python error once the GIL is held).
#[cfg(feature = "relay")]
pub(crate) enum FeedError {
    Bytes(providers::BytesError),
    Reentered(super::Reentered),
}

#[cfg(feature = "relay")]
impl FeedError {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            FeedError::Bytes(e) => bytes_error(py, &e),
            FeedError::Reentered(e) => e.into(),
        }
    }
}

#[cfg(feature = "relay")]
impl PyAssembler {
    /// `feed_bytes` from a thread that does not hold the GIL (no live events).
    pub(crate) fn feed_detached(&self, bytes: &[u8]) -> Result<(), FeedError> {
        let mut st = self.state.lock_detached().map_err(FeedError::Reentered)?;
        st.asm.feed_bytes(bytes, None).map_err(FeedError::Bytes)
    }

    /// The dialect from a thread that does not hold the GIL: `None` until known
    /// (or while the assembler is in use elsewhere).
    pub(crate) fn dialect_detached(&self) -> Option<Dialect> {
        self.state.lock_detached().ok()?.asm.core.dialect()
    }
}

#[pymethods]
impl PyAssembler {
    #[new]
    #[pyo3(signature = (
        provider = "auto",
        *,
        live = None,
        max_calls = crate::accumulate::DEFAULT_MAX_ENTRIES,
        max_input_bytes = crate::accumulate::DEFAULT_MAX_INPUT_BYTES,
        max_total_bytes = crate::accumulate::DEFAULT_MAX_TOTAL_BYTES,
        max_event_bytes = framing::DEFAULT_MAX_EVENT_BYTES,
        max_choices = DEFAULT_MAX_CHOICES,
        max_line_bytes = framing::DEFAULT_MAX_LINE_BYTES,
        max_output_tokens = None,
        split_concatenated = false,
    ), text_signature = "(provider='auto', *, live=True, max_calls=4096, max_input_bytes=8388608, max_total_bytes=67108864, max_event_bytes=16777216, max_choices=128, max_line_bytes=16777216, max_output_tokens=None, split_concatenated=False)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        provider: &str,
        live: Option<&Bound<'_, PyAny>>,
        max_calls: usize,
        max_input_bytes: usize,
        max_total_bytes: usize,
        max_event_bytes: usize,
        max_choices: usize,
        max_line_bytes: usize,
        max_output_tokens: Option<u64>,
        split_concatenated: bool,
    ) -> PyResult<Self> {
        // `None` is the default of the signature `help()` shows (`live=True`).
        let live = live.map_or(Ok(LiveMode::Each), LiveMode::from_py)?;
        let dialect = Dialect::parse_provider(provider).map_err(|e| from_providers(py, &e))?;
        let limits = AssemblerLimits {
            max_calls,
            max_input_bytes,
            max_total_bytes,
            max_event_bytes,
            max_choices,
            max_output_tokens,
            split_concatenated,
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
                partials: BTreeMap::new(),
                tree: TreeBuilder::default(),
                strs: Vec::new(),
                texts: Vec::new(),
                memo: super::memo::Memo::default(),
            }),
            live: AtomicU8::new(live.code()),
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
        let mode = self.mode();
        let sink = if mode.collects() {
            Some(&mut events)
        } else {
            None
        };
        feed_event(&self.state, event, event_type, sink)?;
        live_result(py, events, mode)
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
            let sink = if self.mode().collects() {
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
            None => live_result(py, live, self.mode()),
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
        let mode = self.mode();
        let live = mode.collects();
        let (result, events) = py.detach(|| {
            let mut events = Vec::new();
            let sink = if live { Some(&mut events) } else { None };
            let r = self.state.lock_detached().map(|mut st| st.close(sink));
            (r, events)
        });
        result?.map_err(|e| bytes_error(py, &e))?;
        live_result(py, events, mode)
    }

    /// One `AssembledMessage` per choice, in ascending choice index.
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let (messages, dialect) = {
            let st = self.state.lock(py)?;
            (
                st.asm.core.messages(),
                st.asm.core.dialect().map(Dialect::name),
            )
        };
        let items = messages
            .iter()
            .map(|m| message_to_py(py, m, dialect))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The `AssembledMessage` of one choice (choice 0 always exists); `KeyError` for a
    /// choice the stream has not had.
    #[pyo3(signature = (choice = 0))]
    fn message<'py>(&self, py: Python<'py>, choice: i64) -> PyResult<Bound<'py, PyAny>> {
        let (messages, dialect) = {
            let st = self.state.lock(py)?;
            (
                st.asm.core.messages(),
                st.asm.core.dialect().map(Dialect::name),
            )
        };
        match messages.iter().find(|m| m.choice == choice) {
            Some(m) => message_to_py(py, m, dialect),
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

    /// How feeds return live events: `True`, `False` or `"coalesced"`.
    #[getter]
    fn live<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.mode().to_py(py)
    }

    /// The whole state as bytes, for pickle (and `copy`): a stream can stop in one
    /// process and go on in another. The partial-JSON parsers of `partial_calls()`
    /// are not kept; they are rebuilt from the inputs on the next call.
    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let st = self.state.lock(py)?;
        let saved = SavedState {
            version: SAVED_STATE_VERSION,
            live: self.mode().collects(),
            coalesced: self.mode() == LiveMode::Coalesced,
            core: &st.asm.core,
            decoder: st.asm.decoder.as_ref(),
            framing_limits: st.asm.framing_limits,
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
            partials: BTreeMap::new(),
            tree: TreeBuilder::default(),
            strs: Vec::new(),
            texts: Vec::new(),
            memo: super::memo::Memo::default(),
        };
        // The old state (its Python strings and partial values) is dropped after
        // the lock is released.
        let old = std::mem::replace(&mut *self.state.lock(py)?, fresh);
        drop(old);
        let mode = match (loaded.live, loaded.coalesced) {
            (false, _) => LiveMode::Off,
            (true, false) => LiveMode::Each,
            (true, true) => LiveMode::Coalesced,
        };
        self.live.store(mode.code(), Ordering::Relaxed);
        Ok(())
    }

    /// Whether `close()` was called.
    /// How many events the memo of decoded events served, `(dicts, SDK
    /// objects)`: for the tests and benchmarks that check it is used.
    #[getter]
    fn _memo_served(&self, py: Python<'_>) -> PyResult<(u64, u64)> {
        let memo = &self.state.lock(py)?.memo;
        Ok((memo.dicts.served, memo.objects.served))
    }

    /// Capture mode (Q62, for `replay`): the bytes may hold several responses
    /// one after another; each is read by an assembler of its own.
    fn _read_captures(&self, py: Python<'_>) -> PyResult<()> {
        self.state.lock(py)?.asm.read_captures();
        Ok(())
    }

    /// The messages of each response read, in order (one response unless in
    /// capture mode).
    fn _responses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let groups: Vec<_> = {
            let st = self.state.lock(py)?;
            st.asm
                .responses()
                .into_iter()
                .map(|a| (a.messages(), a.dialect().map(Dialect::name)))
                .collect()
        };
        let mut out = Vec::with_capacity(groups.len());
        for (messages, dialect) in &groups {
            let items = messages
                .iter()
                .map(|m| message_to_py(py, m, *dialect))
                .collect::<PyResult<Vec<_>>>()?;
            out.push(PyList::new(py, items)?);
        }
        PyList::new(py, out)
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.state.lock(py)?.asm.core.is_closed())
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
            if st.asm.core.is_closed() {
                "True"
            } else {
                "False"
            }
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
