//! The binding layer: the only code that names pyo3.
//!
//! Accumulators are frozen pyclasses holding a `Mutex`, so they are safe to share
//! between threads; block values cross into Python as the frozen dataclasses of
//! `toolstitch.blocks`, and errors as the classes of `toolstitch.errors`.

mod accumulate;
mod assemble;
#[cfg(feature = "bench-baseline")]
mod baseline;
mod convert;
mod errors;
mod event_tree;
mod imports;
mod live;
mod registry;
mod tools;
mod wire;

use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;

/// The lock of an accumulator or assembler. Nothing panics while holding one,
/// so a poisoned lock still holds valid data.
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// [`locked`] for a lock that Python code may wait on with the GIL held: the
/// GIL is released while waiting, so a holder that needs the GIL can finish.
fn locked_attached<'a, T>(py: Python<'_>, m: &'a Mutex<T>) -> MutexGuard<'a, T> {
    use pyo3::sync::MutexExt;
    m.lock_py_attached(py)
        .unwrap_or_else(PoisonError::into_inner)
}

#[pymodule]
fn _toolstitch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    accumulate::register(m)?;
    assemble::register(m)?;
    wire::register(m)?;
    tools::register(m)?;
    registry::register(m)?;
    #[cfg(feature = "bench-baseline")]
    baseline::register(m)?;
    Ok(())
}
