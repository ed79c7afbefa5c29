//! The benchmarks' floor: a pyclass whose methods take the arguments of the
//! per-fragment calls and do nothing. Built only with the `bench-baseline`
//! feature (`make release`), never part of a released wheel.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

/// Methods with the signatures of `ToolUses.add_fragment` that do nothing.
#[pyclass(module = "toolstitch", name = "_CallBaseline", frozen)]
pub struct CallBaseline;

#[pymethods]
impl CallBaseline {
    #[new]
    fn new() -> Self {
        Self
    }

    /// `add_fragment`'s signature, the arguments taken as they come: the cost of
    /// the call alone.
    #[pyo3(signature = (index, id=None, name=None, input_json=None))]
    #[allow(clippy::unused_self)]
    fn noop4(
        &self,
        index: &Bound<'_, PyAny>,
        id: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
        input_json: Option<&Bound<'_, PyAny>>,
    ) {
        let _ = (index, id, name, input_json);
    }

    /// The same, with the argument conversions `add_fragment` does (an `int`
    /// index, three `str`s as UTF-8): the call and the conversions, no work.
    #[pyo3(signature = (index, id=None, name=None, input_json=None))]
    #[allow(clippy::unused_self)]
    fn noop4_converted(
        &self,
        index: i64,
        id: Option<&str>,
        name: Option<&str>,
        input_json: Option<&str>,
    ) {
        let _ = (index, id, name, input_json);
    }

    /// Reads every value of each event of a list (see `visit`): the floor of
    /// `feed_many` on dicts or SDK objects.
    #[allow(clippy::unused_self)]
    fn visit_all(&self, events: &Bound<'_, PyList>) -> usize {
        events.iter().map(|e| visit(&e)).sum()
    }

    /// Reads every value of one event (see `visit`): the floor of `feed`.
    #[allow(clippy::unused_self)]
    fn visit(&self, event: &Bound<'_, PyAny>) -> usize {
        visit(event)
    }
}

/// Every value of a decoded event read as the memo of decoded events reads
/// it (each member of each dict and list, each string's UTF-8; an SDK model's
/// `__dict__`, fields set and extra fields) and nothing done with it: what
/// any strict reader of the whole event pays. Gives how many values it read.
fn visit(v: &Bound<'_, PyAny>) -> usize {
    if let Ok(s) = v.cast_exact::<PyString>() {
        return usize::from(s.to_str().is_ok());
    }
    if let Ok(d) = v.cast_exact::<PyDict>() {
        return d.iter().map(|(k, v)| visit(&k) + visit(&v)).sum::<usize>() + 1;
    }
    if let Ok(l) = v.cast_exact::<PyList>() {
        return l.iter().map(|item| visit(&item)).sum::<usize>() + 1;
    }
    if v.is_none()
        || v.is_instance_of::<pyo3::types::PyInt>()
        || v.is_instance_of::<pyo3::types::PyFloat>()
    {
        return 1;
    }
    let py = v.py();
    let parts = (
        v.getattr(pyo3::intern!(py, "__dict__")),
        v.getattr(pyo3::intern!(py, "__pydantic_fields_set__")),
        v.getattr(pyo3::intern!(py, "__pydantic_extra__")),
    );
    match parts {
        (Ok(d), Ok(set), Ok(extra)) => {
            visit(&d) + set.len().unwrap_or_default() + usize::from(extra.is_none())
        }
        _ => 0,
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallBaseline>()
}
