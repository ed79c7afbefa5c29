//! The binding layer: the only code that names pyo3.
//!
//! Accumulators are frozen pyclasses holding a [`Locked`] state, so they are safe
//! to share between threads (its doc states the one lock rule); block values cross into Python as the frozen dataclasses of
//! `toolstitch.blocks`, and errors as the classes of `toolstitch.errors`.

mod accumulate;
mod assemble;
#[cfg(feature = "bench-baseline")]
mod baseline;
mod convert;
mod errors;
mod event_tree;
mod feed;
mod guard;
mod imports;
mod live;
mod memo;
mod output;
mod registry;
#[cfg(feature = "relay")]
mod relay;
mod sdk;
mod tools;
mod trace;
mod wire;

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The lock of a pyclass's state (an accumulator, an assembler, a partial-JSON
/// parser). Its one rule, which makes a deadlock with the GIL impossible:
///
/// **A thread holds at most one binding lock at a time, and never waits for
/// one while it holds the GIL.**
///
/// [`Locked::lock`] waits with the GIL released (a holder that needs the GIL
/// back can always get it), and [`Locked::lock_detached`] is for code that has
/// released it already (`py.detach`). A deadlock needs a thread that waits
/// while holding something another waiter needs: a thread waiting for a
/// binding lock holds neither the GIL nor another binding lock, and a thread
/// holding the GIL waits for no binding lock, so no cycle can form. A second
/// lock on one thread could only come from Python code that ran while the
/// first was held (a finalizer the garbage collector ran while values were
/// being built); it raises `RuntimeError` instead of waiting for itself.
pub(crate) struct Locked<T>(Mutex<T>);

thread_local! {
    /// Whether this thread holds a binding lock.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// A held binding lock; dropping it releases the lock.
pub(crate) struct Held<'a, T> {
    guard: MutexGuard<'a, T>,
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        HOLDING.with(|h| h.set(false));
    }
}

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Another binding lock is already held by this thread.
#[derive(Debug)]
pub(crate) struct Reentered;

impl From<Reentered> for PyErr {
    fn from(_: Reentered) -> Self {
        PyRuntimeError::new_err(
            "a toolstitch object was used from Python code that ran while another toolstitch \
             call held its lock (a finalizer run by the garbage collector, or a callback); \
             use it outside that code",
        )
    }
}

fn enter() -> Result<(), Reentered> {
    HOLDING.with(|h| {
        if h.replace(true) {
            Err(Reentered)
        } else {
            Ok(())
        }
    })
}

impl<T> Locked<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Mutex::new(value))
    }

    /// The lock, from code that holds the GIL: released while waiting.
    pub(crate) fn lock(&self, py: Python<'_>) -> Result<Held<'_, T>, Reentered> {
        use pyo3::sync::MutexExt;
        enter()?;
        // Nothing panics while holding one, so a poisoned lock still holds valid data.
        let guard = self
            .0
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner);
        Ok(Held { guard })
    }

    /// The lock, from code that has released the GIL (inside `py.detach`).
    pub(crate) fn lock_detached(&self) -> Result<Held<'_, T>, Reentered> {
        enter()?;
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Held { guard })
    }
}

#[pymodule]
fn _toolstitch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    accumulate::register(m)?;
    assemble::register(m)?;
    wire::register(m)?;
    tools::register(m)?;
    guard::register(m)?;
    registry::register(m)?;
    trace::register(m)?;
    #[cfg(feature = "relay")]
    relay::register(m)?;
    #[cfg(feature = "bench-baseline")]
    baseline::register(m)?;
    Ok(())
}
