//! Python names the binding uses (classes, a helper function), each imported
//! from its module once, on first use.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::type_object::PyTypeCheck;

/// `N` names of one module; a caller's enum gives each its slot.
pub(crate) struct Imports<T, const N: usize> {
    module: &'static str,
    names: [&'static str; N],
    cells: [PyOnceLock<Py<T>>; N],
}

impl<T: PyTypeCheck, const N: usize> Imports<T, N> {
    pub(crate) const fn new(module: &'static str, names: [&'static str; N]) -> Self {
        Self {
            module,
            names,
            cells: [const { PyOnceLock::new() }; N],
        }
    }

    /// The name in `slot`, imported the first time it is asked for.
    pub(crate) fn get<'py>(&self, py: Python<'py>, slot: usize) -> PyResult<&Bound<'py, T>> {
        match (self.cells.get(slot), self.names.get(slot)) {
            (Some(cell), Some(name)) => cell.import(py, self.module, name),
            _ => Err(PyTypeError::new_err(format!(
                "no name in slot {slot} of {}",
                self.module
            ))),
        }
    }
}
