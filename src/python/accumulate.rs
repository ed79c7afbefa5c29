//! The accumulators and their chunk classes.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyString, PyTuple};
use pyo3::{intern, Borrowed};

use super::convert::{image_to_py, index_from_py, text_to_py, thinking_to_py, tool_use_to_py};
use super::errors::from_accumulate;
use super::Locked;
use crate::accumulate::{
    self as core, ThinkingFragment, ToolUseLimits, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_IMAGE_BYTES,
    DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_TOTAL_BYTES,
};

// The `text_signature`s below spell the default limits as numbers, so that
// `help()` and `inspect.signature` show them (PyO3 shows `...` for a constant);
// the build fails if a default changes without them.
const _: () = assert!(
    DEFAULT_MAX_ENTRIES == 4096
        && DEFAULT_MAX_INPUT_BYTES == 8_388_608
        && DEFAULT_MAX_TOTAL_BYTES == 67_108_864
        && DEFAULT_MAX_IMAGE_BYTES == 268_435_456
);

fn wrong_chunk(obj: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    let got = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    PyTypeError::new_err(format!("expected a {expected}, not {got}"))
}

/// One saved entry of `ToolUses` or `Thinking`: the index, four strings and the
/// provider state with its format.
type SavedEntry = (i64, String, String, String, Option<String>, String);

fn or_empty(s: Option<String>) -> String {
    s.unwrap_or_default()
}

// ------------------------------------------------------------------ tool calls

/// One fragment of one tool call. `None` for a string field means absent (`""`).
#[pyclass(module = "toolstitch", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ToolUseChunk {
    #[pyo3(get)]
    index: i64,
    #[pyo3(get)]
    id: String,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    input_json: String,
    #[pyo3(get)]
    provider_state: Option<String>,
    #[pyo3(get)]
    provider_state_format: String,
}

#[pymethods]
impl ToolUseChunk {
    #[new]
    #[pyo3(signature = (index, id=None, name=None, input_json=None, provider_state=None, provider_state_format=None))]
    fn new(
        index: &Bound<'_, PyAny>,
        id: Option<String>,
        name: Option<String>,
        input_json: Option<String>,
        provider_state: Option<String>,
        provider_state_format: Option<String>,
    ) -> PyResult<Self> {
        Ok(Self {
            index: index_from_py(index)?,
            id: or_empty(id),
            name: or_empty(name),
            input_json: or_empty(input_json),
            provider_state,
            provider_state_format: or_empty(provider_state_format),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolUseChunk(index={}, id={:?}, name={:?}, input_json={:?}, provider_state={:?}, provider_state_format={:?})",
            self.index, self.id, self.name, self.input_json, self.provider_state, self.provider_state_format
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let c = slf.get();
        let args = (
            c.index,
            &c.id,
            &c.name,
            &c.input_json,
            c.provider_state.as_deref(),
            &c.provider_state_format,
        )
            .into_pyobject(slf.py())?;
        Ok((slf.get_type().into_any(), args))
    }
}

/// Accumulates tool-call fragments by the provider's index into `ToolUseBlock`s.
///
/// The index is a map key: any int in the signed 64-bit range (negative, sparse
/// and huge included). The last non-empty id and name win (an empty one never
/// clears a value); `input_json` is appended verbatim, never parsed; provider
/// state is replaced only when both it and its format are non-empty. `blocks()`
/// gives one block per index seen, in ascending index order.
///
/// A fragment that would cross a limit (calls, bytes of one call's input, bytes
/// taken in overall; UTF-8 bytes) raises `LimitError` and is rejected whole:
/// everything before it stays readable. Safe to share between threads;
/// `copy.copy`, `copy.deepcopy` and pickle give independent accumulators.
#[pyclass(module = "toolstitch", frozen)]
pub struct ToolUses {
    inner: Locked<core::ToolUses>,
}

/// An optional `str` argument or tuple item; `None` means absent. The empty
/// string (one shared object in CPython) is recognised by identity, an exact
/// `str` by one pointer compare before its UTF-8 is read, and no error object is
/// built on the way: a per-fragment call notices each of these.
fn opt_str<'a>(item: Borrowed<'a, '_, PyAny>, what: &str) -> PyResult<&'a str> {
    if item.is(intern!(item.py(), "")) || item.is_none() {
        return Ok("");
    }
    if item.is_instance_of::<PyString>() {
        return item.extract::<&'a str>();
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a str or None"
    )))
}

fn tuple_str<'a>(item: &'a Bound<'_, PyAny>, what: &str) -> PyResult<&'a str> {
    opt_str(item.as_borrowed(), what)
}

/// An optional `str` argument of a per-fragment method (see [`opt_str`]): the
/// exact `str` read through the `Bound` it arrived as, with no second type check.
fn arg_str<'a>(item: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<&'a str> {
    let Some(item) = item else {
        return Ok("");
    };
    if item.is(intern!(item.py(), "")) {
        return Ok("");
    }
    if let Ok(s) = item.cast_exact::<PyString>() {
        return s.to_str();
    }
    tuple_str(item, what)
}

impl ToolUses {
    /// One item of `extend`: a `ToolUseChunk` or an `(index, id, name, input_json)` tuple.
    fn add_item(&self, item: &Bound<'_, PyAny>) -> PyResult<()> {
        let Ok(t) = item.cast_exact::<PyTuple>() else {
            return self.add_chunk(item);
        };
        if t.len() != 4 {
            return Err(PyTypeError::new_err(format!(
                "a fragment tuple is (index, id, name, input_json), not {} items",
                t.len()
            )));
        }
        let (index, id, name, input) = (
            t.get_item(0)?,
            t.get_item(1)?,
            t.get_item(2)?,
            t.get_item(3)?,
        );
        let index = index_from_py(&index)?;
        self.inner
            .lock(item.py())?
            .add(
                index,
                tuple_str(&id, "id")?,
                tuple_str(&name, "name")?,
                tuple_str(&input, "input_json")?,
                None,
                "",
            )
            .map_err(|e| from_accumulate(item.py(), &e))
    }

    fn add_chunk(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = chunk
            .cast::<ToolUseChunk>()
            .map_err(|_| wrong_chunk(chunk, "ToolUseChunk"))?
            .get();
        self.inner
            .lock(chunk.py())?
            .add(
                c.index,
                &c.id,
                &c.name,
                &c.input_json,
                c.provider_state.as_deref(),
                &c.provider_state_format,
            )
            .map_err(|e| from_accumulate(chunk.py(), &e))
    }

    /// `extend` over a list or tuple: the lock is taken once for every run of
    /// items that can be read without running Python code (fragment tuples of an
    /// exact `int` and `str`s or `None`, `ToolUseChunk`s); any other item is
    /// added on its own with the lock released, since reading it may run
    /// Python code that uses this accumulator.
    fn extend_fast<'py>(&self, items: impl Iterator<Item = Bound<'py, PyAny>>) -> PyResult<()> {
        let mut guard = None;
        for item in items {
            let py = item.py();
            if let Some(t) = plain_fragment(&item) {
                let (index, id, name, input) = t?;
                if guard.is_none() {
                    guard = Some(self.inner.lock(py)?);
                }
                if let Some(g) = guard.as_mut() {
                    g.add(index, id, name, input, None, "")
                        .map_err(|e| from_accumulate(py, &e))?;
                }
            } else if item.is_instance_of::<ToolUseChunk>() {
                let c = item
                    .cast::<ToolUseChunk>()
                    .map_err(|_| wrong_chunk(&item, "ToolUseChunk"))?
                    .get();
                if guard.is_none() {
                    guard = Some(self.inner.lock(py)?);
                }
                if let Some(g) = guard.as_mut() {
                    g.add(
                        c.index,
                        &c.id,
                        &c.name,
                        &c.input_json,
                        c.provider_state.as_deref(),
                        &c.provider_state_format,
                    )
                    .map_err(|e| from_accumulate(py, &e))?;
                }
            } else {
                guard = None;
                self.add_item(&item)?;
            }
        }
        Ok(())
    }
}

/// The four fields of a fragment tuple `(int, str | None, str | None, str | None)`
/// read without running any Python code; `None` for any other item.
fn plain_fragment<'a>(
    item: &'a Bound<'_, PyAny>,
) -> Option<PyResult<(i64, &'a str, &'a str, &'a str)>> {
    let t = item.cast_exact::<PyTuple>().ok()?;
    if t.len() != 4 {
        return None;
    }
    let index = t.get_borrowed_item(0).ok()?;
    if !index.is_exact_instance_of::<PyInt>() {
        return None;
    }
    let index = index.extract::<i64>().ok()?;
    let mut texts = [""; 3];
    for ((slot, at), what) in texts.iter_mut().zip(1..).zip(["id", "name", "input_json"]) {
        // Borrowed from the tuple, which holds the str for as long as `item` lives.
        let field = t.get_borrowed_item(at).ok()?;
        if !field.is_none() && !field.is_instance_of::<PyString>() {
            return None;
        }
        match opt_str(field, what) {
            Ok(s) => *slot = s,
            Err(e) => return Some(Err(e)),
        }
    }
    let [id, name, input] = texts;
    Some(Ok((index, id, name, input)))
}

#[pymethods]
impl ToolUses {
    #[new]
    #[pyo3(
        signature = (max_calls=DEFAULT_MAX_ENTRIES, max_input_bytes=DEFAULT_MAX_INPUT_BYTES, max_total_bytes=DEFAULT_MAX_TOTAL_BYTES),
        text_signature = "(max_calls=4096, max_input_bytes=8388608, max_total_bytes=67108864)"
    )]
    fn new(max_calls: usize, max_input_bytes: usize, max_total_bytes: usize) -> Self {
        Self {
            inner: Locked::new(core::ToolUses::new(ToolUseLimits {
                max_calls,
                max_input_bytes,
                max_total_bytes,
            })),
        }
    }

    /// Adds one `ToolUseChunk` (anything else is a `TypeError`).
    fn add(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        self.add_chunk(chunk)
    }

    /// Adds one fragment without building a chunk object: the same as
    /// `add(ToolUseChunk(index, id, name, input_json))`, faster.
    #[pyo3(signature = (index, id=None, name=None, input_json=None))]
    fn add_fragment(
        &self,
        index: &Bound<'_, PyAny>,
        id: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
        input_json: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let at = index_from_py(index)?;
        let id = arg_str(id, "id")?;
        let name = arg_str(name, "name")?;
        let input = arg_str(input_json, "input_json")?;
        self.inner
            .lock(index.py())?
            .add(at, id, name, input, None, "")
            .map_err(|e| from_accumulate(index.py(), &e))
    }

    /// Adds every item of an iterable, in order: `ToolUseChunk`s or
    /// `(index, id, name, input_json)` tuples; stops at the first error (the items
    /// before it are kept).
    fn extend(&self, chunks: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(list) = chunks.cast_exact::<PyList>() {
            return self.extend_fast(list.iter());
        }
        if let Ok(tuple) = chunks.cast_exact::<PyTuple>() {
            return self.extend_fast(tuple.iter());
        }
        for chunk in chunks.try_iter()? {
            self.add_item(&chunk?)?;
        }
        Ok(())
    }

    /// A fresh list of `ToolUseBlock`, one per index seen, in ascending index order.
    fn blocks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let blocks = self.inner.lock(py)?.blocks();
        let items = blocks
            .iter()
            .map(|b| tool_use_to_py(py, b))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// True until the first add.
    #[getter]
    fn empty(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.inner.lock(py)?.is_empty())
    }

    #[getter]
    fn max_calls(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.limits().max_calls)
    }

    #[getter]
    fn max_input_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.limits().max_input_bytes)
    }

    #[getter]
    fn max_total_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.limits().max_total_bytes)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.inner.lock(py)?.len())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("ToolUses(<{} calls>)", self.__len__(py)?))
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        let copy = self.inner.lock(py)?.clone();
        Ok(Self {
            inner: Locked::new(copy),
        })
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__copy__(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let t = slf.get().inner.lock(slf.py())?.clone();
        let limits = t.limits();
        let entries = t
            .iter()
            .map(|(i, b)| {
                (
                    i,
                    &b.id,
                    &b.name,
                    &b.input,
                    b.provider_state.as_deref(),
                    &b.provider_state_format,
                )
                    .into_pyobject(py)
                    .map(Bound::into_any)
            })
            .collect::<PyResult<Vec<_>>>()?;
        (
            slf.get_type(),
            (
                limits.max_calls,
                limits.max_input_bytes,
                limits.max_total_bytes,
            ),
            (entries, t.total_bytes()),
        )
            .into_pyobject(py)
    }

    fn __setstate__(&self, py: Python<'_>, state: (Vec<SavedEntry>, usize)) -> PyResult<()> {
        let (entries, total) = state;
        let mut fresh = core::ToolUses::new(self.inner.lock(py)?.limits());
        for (i, id, name, input, ps, psf) in &entries {
            fresh
                .add(*i, id, name, input, ps.as_deref(), psf)
                .map_err(|e| from_accumulate(py, &e))?;
        }
        fresh.restore_total_bytes(total);
        *self.inner.lock(py)? = fresh;
        Ok(())
    }
}

// ------------------------------------------------------------------ text and refusals

macro_rules! appender_class {
    ($chunk:ident, $acc:ident, $what:literal, $refusal:literal, $doc:literal) => {
        #[doc = concat!("One fragment of ", $what, ".")]
        #[pyclass(module = "toolstitch", frozen, eq, hash)]
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub struct $chunk {
            #[pyo3(get)]
            text: String,
        }

        #[pymethods]
        impl $chunk {
            #[new]
            #[pyo3(signature = (text=None))]
            fn new(text: Option<String>) -> Self {
                Self {
                    text: or_empty(text),
                }
            }

            fn __repr__(&self) -> String {
                format!(concat!(stringify!($chunk), "(text={:?})"), self.text)
            }

            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
                (slf.get_type(), (&slf.get().text,)).into_pyobject(slf.py())
            }
        }

        #[doc = $doc]
        #[pyclass(module = "toolstitch", frozen)]
        pub struct $acc {
            inner: Locked<core::Appender>,
        }

        impl $acc {
            fn add_text(&self, py: Python<'_>, text: &str) -> PyResult<()> {
                self.inner
                    .lock(py)?
                    .add(text)
                    .map_err(|e| from_accumulate(py, &e))
            }

            fn add_chunk(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
                let c = chunk
                    .cast::<$chunk>()
                    .map_err(|_| wrong_chunk(chunk, stringify!($chunk)))?;
                self.add_text(chunk.py(), &c.get().text)
            }
        }

        #[pymethods]
        impl $acc {
            #[new]
            #[pyo3(signature = (max_bytes=DEFAULT_MAX_TOTAL_BYTES), text_signature = "(max_bytes=67108864)")]
            fn new(max_bytes: usize) -> Self {
                Self {
                    inner: Locked::new(core::Appender::new($what, max_bytes)),
                }
            }

            #[doc = concat!("Appends one `", stringify!($chunk), "`.")]
            fn add(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
                self.add_chunk(chunk)
            }

            /// Appends text without building a chunk object.
            fn add_fragment(&self, py: Python<'_>, text: &str) -> PyResult<()> {
                self.add_text(py, text)
            }

            /// Appends every chunk of an iterable; stops at the first error.
            fn extend(&self, chunks: &Bound<'_, PyAny>) -> PyResult<()> {
                for chunk in chunks.try_iter()? {
                    self.add_chunk(&chunk?)?;
                }
                Ok(())
            }

            /// The block so far, or None before the first add.
            fn block<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
                let text = self.inner.lock(py)?.block().map(str::to_owned);
                text.map(|t| text_to_py(py, &t, $refusal)).transpose()
            }

            #[getter]
            fn empty(&self, py: Python<'_>) -> PyResult<bool> {
                Ok(self.inner.lock(py)?.block().is_none())
            }

            #[getter]
            fn max_bytes(&self, py: Python<'_>) -> PyResult<usize> {
                Ok(self.inner.lock(py)?.max_bytes())
            }

            fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
                Ok(usize::from(!self.empty(py)?))
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let used = self.inner.lock(py)?.block().map_or(0, str::len);
                Ok(format!(concat!(stringify!($acc), "(<{} bytes>)"), used))
            }

            fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
                let copy = self.inner.lock(py)?.clone();
                Ok(Self {
                    inner: Locked::new(copy),
                })
            }

            fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
                self.__copy__(py)
            }

            fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
                let a = slf.get().inner.lock(slf.py())?.clone();
                (
                    slf.get_type(),
                    (a.max_bytes(),),
                    (a.block(), a.bytes_used()),
                )
                    .into_pyobject(slf.py())
            }

            fn __setstate__(&self, py: Python<'_>, state: (Option<String>, usize)) -> PyResult<()> {
                let mut fresh = core::Appender::new($what, self.inner.lock(py)?.max_bytes());
                if let Some(text) = &state.0 {
                    fresh.add(text).map_err(|e| from_accumulate(py, &e))?;
                }
                fresh.restore_bytes_used(state.1);
                *self.inner.lock(py)? = fresh;
                Ok(())
            }
        }
    };
}

appender_class!(
    TextChunk,
    Text,
    "text",
    false,
    "Appends text fragments into one `TextBlock`.\n\n`block()` is `None` until the first add (an add of empty text still makes a block).\nGoing over `max_bytes` (UTF-8) raises `LimitError` and rejects the fragment whole.\nSafe to share between threads; copy and pickle give independent accumulators."
);
appender_class!(
    RefusalChunk,
    Refusal,
    "refusal",
    true,
    "Appends refusal fragments into one `RefusalBlock`.\n\n`block()` is `None` until the first add (an add of empty text still makes a block).\nGoing over `max_bytes` (UTF-8) raises `LimitError` and rejects the fragment whole.\nSafe to share between threads; copy and pickle give independent accumulators."
);

// ------------------------------------------------------------------ thinking and images

/// The Python class of an indexed accumulator (`Thinking`, `Images`): `$class`
/// over the core `$core`, taking `$chunk` objects (each class has its own
/// `add_chunk`), its blocks turned into Python objects by `$to_py`; the
/// constructor's signature as `help()` shows it is `$text_signature`; the
/// methods that differ (`__reduce__`, `__setstate__`) come in `$extra`.
macro_rules! indexed_class {
    (
        $(#[doc = $doc:literal])*
        $class:ident($core:ty, $chunk:literal, $to_py:path, $noun:literal),
        ($entries:ident, $default_bytes:expr, $text_signature:literal),
        { $($extra:tt)* }
    ) => {
        $(#[doc = $doc])*
        #[pyclass(module = "toolstitch", frozen)]
        pub struct $class {
            inner: Locked<$core>,
        }

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3(signature = ($entries=DEFAULT_MAX_ENTRIES, max_bytes=$default_bytes), text_signature = $text_signature)]
            fn new($entries: usize, max_bytes: usize) -> Self {
                Self {
                    inner: Locked::new(<$core>::new($entries, max_bytes)),
                }
            }

            #[doc = concat!("Adds one `", $chunk, "`.")]
            fn add(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
                self.add_chunk(chunk)
            }

            /// Adds every chunk of an iterable; stops at the first error.
            fn extend(&self, chunks: &Bound<'_, PyAny>) -> PyResult<()> {
                for chunk in chunks.try_iter()? {
                    self.add_chunk(&chunk?)?;
                }
                Ok(())
            }

            /// A fresh list of blocks, in ascending index order.
            fn blocks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let blocks = self.inner.lock(py)?.blocks();
                let items = blocks
                    .iter()
                    .map(|b| $to_py(py, b))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)
            }

            #[getter]
            fn empty(&self, py: Python<'_>) -> PyResult<bool> {
                Ok(self.inner.lock(py)?.is_empty())
            }

            fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
                Ok(self.inner.lock(py)?.len())
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                Ok(format!(concat!(stringify!($class), "(<{} ", $noun, ">)"), self.__len__(py)?))
            }

            fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
                let copy = self.inner.lock(py)?.clone();
                Ok(Self {
                    inner: Locked::new(copy),
                })
            }

            fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
                self.__copy__(py)
            }

            $($extra)*
        }
    };
}

/// One fragment of reasoning at `index`.
#[pyclass(module = "toolstitch", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ThinkingChunk {
    #[pyo3(get)]
    index: i64,
    #[pyo3(get)]
    thinking: String,
    #[pyo3(get)]
    signature: String,
    #[pyo3(get)]
    signature_format: String,
    #[pyo3(get)]
    provider_state: Option<String>,
    #[pyo3(get)]
    provider_state_format: String,
}

impl ThinkingChunk {
    fn fragment(&self) -> ThinkingFragment<'_> {
        ThinkingFragment {
            thinking: &self.thinking,
            signature: &self.signature,
            signature_format: &self.signature_format,
            provider_state: self.provider_state.as_deref(),
            provider_state_format: &self.provider_state_format,
        }
    }
}

#[pymethods]
impl ThinkingChunk {
    #[new]
    #[pyo3(signature = (index, thinking=None, signature=None, signature_format=None, provider_state=None, provider_state_format=None))]
    fn new(
        index: &Bound<'_, PyAny>,
        thinking: Option<String>,
        signature: Option<String>,
        signature_format: Option<String>,
        provider_state: Option<String>,
        provider_state_format: Option<String>,
    ) -> PyResult<Self> {
        Ok(Self {
            index: index_from_py(index)?,
            thinking: or_empty(thinking),
            signature: or_empty(signature),
            signature_format: or_empty(signature_format),
            provider_state,
            provider_state_format: or_empty(provider_state_format),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ThinkingChunk(index={}, thinking={:?}, signature={:?}, signature_format={:?}, provider_state={:?}, provider_state_format={:?})",
            self.index, self.thinking, self.signature, self.signature_format, self.provider_state, self.provider_state_format
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let c = slf.get();
        let args = (
            c.index,
            &c.thinking,
            &c.signature,
            &c.signature_format,
            c.provider_state.as_deref(),
            &c.provider_state_format,
        );
        (slf.get_type(), args).into_pyobject(slf.py())
    }
}

indexed_class!(
    /// Accumulates reasoning fragments by index into `ThinkingBlock`s.
    ///
    /// Text is appended; the last non-empty signature wins, together with its
    /// format; provider state is replaced only when it and its format are both
    /// non-empty. `blocks()` gives one block per index, ascending. Going over a
    /// limit raises `LimitError` and rejects the fragment whole. Safe to share
    /// between threads; copy and pickle give independent accumulators.
    Thinking(core::Thinking, "ThinkingChunk", thinking_to_py, "blocks"),
    (max_blocks, DEFAULT_MAX_TOTAL_BYTES, "(max_blocks=4096, max_bytes=67108864)"),
    {
        fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
            let py = slf.py();
            let t = slf.get().inner.lock(slf.py())?.clone();
            let entries = t
                .iter()
                .map(|(i, b)| {
                    (
                        i,
                        &b.thinking,
                        &b.signature,
                        &b.signature_format,
                        b.provider_state.as_deref(),
                        &b.provider_state_format,
                    )
                        .into_pyobject(py)
                        .map(Bound::into_any)
                })
                .collect::<PyResult<Vec<_>>>()?;
            (slf.get_type(), t.limits(), (entries, t.bytes_used())).into_pyobject(py)
        }

        fn __setstate__(&self, py: Python<'_>, state: (Vec<SavedEntry>, usize)) -> PyResult<()> {
            let (max_blocks, max_bytes) = self.inner.lock(py)?.limits();
            let mut fresh = core::Thinking::new(max_blocks, max_bytes);
            for (i, thinking, signature, signature_format, ps, psf) in &state.0 {
                let f = ThinkingFragment {
                    thinking,
                    signature,
                    signature_format,
                    provider_state: ps.as_deref(),
                    provider_state_format: psf,
                };
                fresh.add(*i, f).map_err(|e| from_accumulate(py, &e))?;
            }
            fresh.restore_bytes_used(state.1);
            *self.inner.lock(py)? = fresh;
            Ok(())
        }
    }
);

impl Thinking {
    fn add_chunk(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = chunk
            .cast::<ThinkingChunk>()
            .map_err(|_| wrong_chunk(chunk, "ThinkingChunk"))?
            .get();
        self.inner
            .lock(chunk.py())?
            .add(c.index, c.fragment())
            .map_err(|e| from_accumulate(chunk.py(), &e))
    }
}

/// One fragment of the image at `index`.
#[pyclass(module = "toolstitch", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ImageChunk {
    #[pyo3(get)]
    index: i64,
    #[pyo3(get)]
    media_type: String,
    #[pyo3(get)]
    url: String,
    #[pyo3(get)]
    data: String,
}

#[pymethods]
impl ImageChunk {
    #[new]
    #[pyo3(signature = (index, media_type=None, url=None, data=None))]
    fn new(
        index: &Bound<'_, PyAny>,
        media_type: Option<String>,
        url: Option<String>,
        data: Option<String>,
    ) -> PyResult<Self> {
        Ok(Self {
            index: index_from_py(index)?,
            media_type: or_empty(media_type),
            url: or_empty(url),
            data: or_empty(data),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ImageChunk(index={}, media_type={:?}, url={:?}, data=<{} chars>)",
            self.index,
            self.media_type,
            self.url,
            self.data.len()
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let c = slf.get();
        (slf.get_type(), (c.index, &c.media_type, &c.url, &c.data)).into_pyobject(slf.py())
    }
}

indexed_class!(
    /// Accumulates image fragments by index into `ImageBlock`s.
    ///
    /// A URL replaces the image and clears its data; data is appended and clears
    /// the URL (a chunk with both: the URL first, so the data wins); the last
    /// non-empty media type wins. `blocks()` gives one block per index,
    /// ascending. Going over a limit raises `LimitError` and rejects the
    /// fragment whole. Safe to share between threads; copy and pickle give
    /// independent accumulators.
    Images(core::Images, "ImageChunk", image_to_py, "images"),
    (max_images, DEFAULT_MAX_IMAGE_BYTES, "(max_images=4096, max_bytes=268435456)"),
    {
        fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
            let py = slf.py();
            let t = slf.get().inner.lock(slf.py())?.clone();
            let entries: Vec<_> = t
                .iter()
                .map(|(i, b)| (i, b.media_type.clone(), b.url.clone(), b.data.clone()))
                .collect();
            (slf.get_type(), t.limits(), (entries, t.bytes_used())).into_pyobject(py)
        }

        fn __setstate__(
            &self,
            py: Python<'_>,
            state: (Vec<(i64, String, String, String)>, usize),
        ) -> PyResult<()> {
            let (max_images, max_bytes) = self.inner.lock(py)?.limits();
            let mut fresh = core::Images::new(max_images, max_bytes);
            for (i, media_type, url, data) in &state.0 {
                fresh
                    .add(*i, media_type, url, data)
                    .map_err(|e| from_accumulate(py, &e))?;
            }
            fresh.restore_bytes_used(state.1);
            *self.inner.lock(py)? = fresh;
            Ok(())
        }
    }
);

impl Images {
    fn add_chunk(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = chunk
            .cast::<ImageChunk>()
            .map_err(|_| wrong_chunk(chunk, "ImageChunk"))?
            .get();
        self.inner
            .lock(chunk.py())?
            .add(c.index, &c.media_type, &c.url, &c.data)
            .map_err(|e| from_accumulate(chunk.py(), &e))
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ToolUseChunk>()?;
    m.add_class::<ToolUses>()?;
    m.add_class::<TextChunk>()?;
    m.add_class::<Text>()?;
    m.add_class::<RefusalChunk>()?;
    m.add_class::<Refusal>()?;
    m.add_class::<ThinkingChunk>()?;
    m.add_class::<Thinking>()?;
    m.add_class::<ImageChunk>()?;
    m.add_class::<Images>()?;
    Ok(())
}
