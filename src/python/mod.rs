//! The binding layer: the only code that names pyo3.
//!
//! Accumulators are frozen pyclasses holding a `Mutex`, so they are safe to share
//! between threads; block values cross into Python as the frozen dataclasses of
//! `toolstitch.blocks`, and errors as the classes of `toolstitch.errors`.

mod accumulate;
mod assemble;
mod convert;
mod errors;
mod imports;
mod tools;
mod wire;

use pyo3::prelude::*;

#[pymodule]
fn _toolstitch(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    accumulate::register(m)?;
    assemble::register(m)?;
    wire::register(m)?;
    tools::register(m)?;
    Ok(())
}
