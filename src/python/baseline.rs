//! The benchmarks' floor: a pyclass whose methods take the arguments of the
//! per-fragment calls and do nothing. Built only with the `bench-baseline`
//! feature (`make release`), never part of a released wheel.

use pyo3::prelude::*;

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
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallBaseline>()
}
