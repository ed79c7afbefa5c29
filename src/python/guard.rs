//! `_Guard`: the core's [`Guard`](crate::guard::Guard) for Python. The Python
//! class `toolstitch.guard.Guard` wraps it (the toolset, the records' shapes).
//!
//! The check is a Python callable given each call a client may now act on (a
//! `ToolUseBlock`); it raises to refuse it. It runs with the GIL, once per call,
//! never per event.

use std::sync::{Mutex, TryLockError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use super::convert::tool_use_to_py;
use super::errors::from_providers;
use super::output::message_to_py;
use crate::framing::{self, FramingLimits, Transport};
use crate::guard::{self, Blocked, CallCheck, Encoding, Guard, GuardLimits, InflateLimits, Step};
use crate::providers::{AssemblerLimits, Dialect, ToolUse};

/// Calls the Python check; anything it raises refuses the call.
struct PyCheck<'py> {
    py: Python<'py>,
    check: &'py Bound<'py, PyAny>,
}

impl CallCheck for PyCheck<'_> {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        run_check(self.py, self.check, call)
    }
}

/// Runs the Python check on one call: `Err` (why) when it raised.
pub(crate) fn run_check(
    py: Python<'_>,
    check: &Bound<'_, PyAny>,
    call: &ToolUse,
) -> Result<(), String> {
    let block = tool_use_to_py(py, &call.block).map_err(|e| e.to_string())?;
    match check.call1((block,)) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

fn transport_named(name: Option<&str>) -> PyResult<Option<Transport>> {
    Ok(match name {
        None => None,
        Some("sse") => Some(Transport::Sse),
        Some("json") => Some(Transport::JsonLines),
        Some("eventstream") => Some(Transport::EventStream),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "transport must be 'sse', 'json', 'eventstream' or None, not {other:?}"
            )))
        }
    })
}

fn transport_name(t: Transport) -> &'static str {
    match t {
        Transport::Sse => "sse",
        Transport::JsonLines => "json",
        Transport::EventStream => "eventstream",
    }
}

fn blocked_to_py<'py>(py: Python<'py>, b: &Blocked) -> PyResult<Bound<'py, PyTuple>> {
    let headers = PyList::empty(py);
    for (k, v) in &b.headers {
        headers.append((k, v))?;
    }
    (
        b.cause.name(),
        &b.reason,
        b.choice,
        b.call_id.as_deref(),
        b.tool_name.as_deref(),
        PyBytes::new(py, &b.tail),
        b.status,
        headers,
        PyBytes::new(py, &b.body),
    )
        .into_pyobject(py)
}

fn step_to_py<'py>(py: Python<'py>, step: &Step) -> PyResult<Bound<'py, PyTuple>> {
    let blocked = match &step.blocked {
        Some(b) => blocked_to_py(py, b)?.into_any(),
        None => py.None().into_bound(py),
    };
    (PyBytes::new(py, &step.forward), blocked).into_pyobject(py)
}

/// Guards one response (see `toolstitch.guard.Guard`).
#[pyclass(module = "toolstitch._toolstitch", name = "_Guard", frozen)]
pub struct PyGuard {
    guard: Mutex<Guard>,
    check: Py<PyAny>,
}

impl PyGuard {
    fn with<R>(&self, f: impl FnOnce(&mut Guard) -> R) -> PyResult<R> {
        match self.guard.try_lock() {
            Ok(mut g) => Ok(f(&mut g)),
            Err(TryLockError::Poisoned(p)) => Ok(f(&mut p.into_inner())),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "the guard is in use (by its own check, or another thread)",
            )),
        }
    }
}

#[cfg(feature = "relay")]
impl PyGuard {
    /// The check it runs.
    pub(crate) fn check(&self) -> &Py<PyAny> {
        &self.check
    }

    /// `feed` without the GIL (`check` takes it for each call), into `step`
    /// (kept by the caller between reads): false when the guard is in use
    /// elsewhere.
    pub(crate) fn feed_detached(
        &self,
        data: &[u8],
        check: &mut dyn CallCheck,
        step: &mut Step,
    ) -> bool {
        self.with(|g| g.feed_into(data, check, step)).is_ok()
    }

    /// `finish` without the GIL.
    pub(crate) fn finish_detached(&self, check: &mut dyn CallCheck) -> Option<Step> {
        self.with(|g| g.finish(check)).ok()
    }

    /// `outcome` without the GIL.
    pub(crate) fn outcome_detached(&self) -> Option<crate::guard::Outcome> {
        self.with(|g| g.outcome()).ok()
    }

    /// The dialect without the GIL: `None` until known (or while the guard is
    /// in use elsewhere).
    pub(crate) fn dialect_detached(&self) -> Option<Dialect> {
        self.with(|g| g.assembler().dialect()).ok().flatten()
    }
}

#[pymethods]
impl PyGuard {
    #[new]
    #[pyo3(signature = (
        check,
        *,
        provider = "auto",
        error_provider = None,
        transport = None,
        encoding = "identity",
        max_calls = crate::accumulate::DEFAULT_MAX_ENTRIES,
        max_input_bytes = crate::accumulate::DEFAULT_MAX_INPUT_BYTES,
        max_total_bytes = crate::accumulate::DEFAULT_MAX_TOTAL_BYTES,
        max_event_bytes = framing::DEFAULT_MAX_EVENT_BYTES,
        max_line_bytes = framing::DEFAULT_MAX_LINE_BYTES,
        max_held_bytes = None,
        max_decoded_bytes = None,
        max_ratio = None,
        max_check_bytes = None,
    ), text_signature = "(check, *, provider='auto', error_provider=None, transport=None, encoding='identity', max_calls=4096, max_input_bytes=8388608, max_total_bytes=67108864, max_event_bytes=16777216, max_line_bytes=16777216, max_held_bytes=None, max_decoded_bytes=None, max_ratio=None, max_check_bytes=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        check: Bound<'_, PyAny>,
        provider: &str,
        error_provider: Option<&str>,
        transport: Option<&str>,
        encoding: &str,
        max_calls: usize,
        max_input_bytes: usize,
        max_total_bytes: usize,
        max_event_bytes: usize,
        max_line_bytes: usize,
        max_held_bytes: Option<usize>,
        max_decoded_bytes: Option<u64>,
        max_ratio: Option<u64>,
        max_check_bytes: Option<usize>,
    ) -> PyResult<Self> {
        if !check.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "check must be a callable that raises to refuse a call",
            ));
        }
        let dialect = Dialect::parse_provider(provider).map_err(|e| from_providers(py, &e))?;
        let error_dialect = match error_provider {
            Some(p) => Dialect::parse_provider(p).map_err(|e| from_providers(py, &e))?,
            None => None,
        };
        let encoding = Encoding::parse(encoding).ok_or_else(|| {
            PyValueError::new_err(format!(
                "encoding must be 'identity', 'gzip' or 'deflate', not {encoding:?}"
            ))
        })?;
        let assembler = AssemblerLimits {
            max_calls,
            max_input_bytes,
            max_total_bytes,
            max_event_bytes,
            ..AssemblerLimits::default()
        };
        let framing = FramingLimits {
            max_line_bytes,
            max_event_bytes,
            ..FramingLimits::default()
        };
        let defaults = InflateLimits::default();
        let guard_defaults = GuardLimits::default();
        let limits = GuardLimits {
            max_check_bytes: max_check_bytes.unwrap_or(guard_defaults.max_check_bytes),
            max_held_bytes: max_held_bytes
                .unwrap_or_else(|| max_event_bytes.saturating_add(max_line_bytes)),
            inflate: InflateLimits {
                max_decoded_bytes: max_decoded_bytes.unwrap_or(defaults.max_decoded_bytes),
                max_ratio: max_ratio.unwrap_or(defaults.max_ratio),
            },
        };
        let guard = Guard::new(
            dialect,
            assembler,
            framing,
            limits,
            transport_named(transport)?,
            encoding,
            error_dialect,
        );
        Ok(Self {
            guard: Mutex::new(guard),
            check: check.unbind(),
        })
    }

    /// The next bytes of the body: `(bytes to forward now, blocked or None)`.
    fn feed<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
        let check = self.check.bind(py);
        let step = self.with(|g| g.feed(data, &mut PyCheck { py, check }))?;
        step_to_py(py, &step)
    }

    /// The end of the body: `(bytes to forward now, blocked or None)`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let check = self.check.bind(py);
        let step = self.with(|g| g.finish(&mut PyCheck { py, check }))?;
        step_to_py(py, &step)
    }

    /// The client stopped reading before the body ended: the verdict, given now
    /// when the response had already reached its own end with nothing held
    /// back, else `"open"` (see `Guard.client_left`).
    fn client_left(&self, py: Python<'_>) -> PyResult<&'static str> {
        let check = self.check.bind(py);
        self.with(|g| g.client_left(&mut PyCheck { py, check }).name())
    }

    /// `"open"`, `"passed"`, `"blocked"` or `"unchecked"`.
    #[getter]
    fn outcome(&self) -> PyResult<&'static str> {
        self.with(|g| g.outcome().name())
    }

    #[getter]
    fn blocked<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let b = self.with(|g| g.blocked().cloned())?;
        b.map(|b| blocked_to_py(py, &b)).transpose()
    }

    #[getter]
    fn unchecked_reason(&self) -> PyResult<Option<String>> {
        self.with(|g| g.unchecked_reason().map(str::to_owned))
    }

    #[getter]
    fn dialect(&self) -> PyResult<Option<&'static str>> {
        self.with(|g| g.assembler().dialect().map(Dialect::name))
    }

    #[getter]
    fn transport(&self) -> PyResult<Option<&'static str>> {
        self.with(|g| g.transport().map(transport_name))
    }

    /// Bytes released so far.
    #[getter]
    fn released(&self) -> PyResult<u64> {
        self.with(|g| g.released())
    }

    /// Bytes held back now.
    #[getter]
    fn held(&self) -> PyResult<usize> {
        self.with(|g| g.held())
    }

    /// The assembled messages so far (as `Assembler.messages()` gives them).
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let (messages, dialect) =
            self.with(|g| (g.messages(), g.assembler().dialect().map(Dialect::name)))?;
        let list = PyList::empty(py);
        for m in &messages {
            list.append(message_to_py(py, m, dialect)?)?;
        }
        Ok(list)
    }
}

/// A whole error response in a provider's shape: `(status, headers, body)`.
#[pyfunction]
#[pyo3(signature = (provider, message))]
fn _error_response<'py>(
    py: Python<'py>,
    provider: Option<&str>,
    message: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let dialect = match provider {
        Some(p) => Dialect::parse_provider(p).map_err(|e| from_providers(py, &e))?,
        None => None,
    };
    let (status, headers, body) = guard::error_response(dialect, message);
    (status, headers, PyBytes::new(py, &body)).into_pyobject(py)
}

/// The dialect a request path speaks, by the dialects' declarations.
#[pyfunction]
fn _dialect_for_path(path: &str) -> Option<&'static str> {
    Dialect::for_path(path).map(Dialect::name)
}

/// The provider's name in OpenTelemetry's GenAI convention.
#[pyfunction]
fn _provider_name(py: Python<'_>, dialect: &str) -> PyResult<&'static str> {
    let d: Dialect = dialect.parse().map_err(|e| from_providers(py, &e))?;
    Ok(d.provider_name())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGuard>()?;
    m.add_function(wrap_pyfunction!(_error_response, m)?)?;
    m.add_function(wrap_pyfunction!(_dialect_for_path, m)?)?;
    m.add_function(wrap_pyfunction!(_provider_name, m)?)?;
    Ok(())
}
