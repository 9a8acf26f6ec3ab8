#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod builder;
mod bytes;
mod entries;
mod errors;
mod table;

use pyo3::prelude::*;

/// The native module behind the `leveltable` Python package.
#[pymodule]
fn _leveltable(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<table::Table>()?;
    m.add_class::<entries::Entries>()?;
    m.add_class::<builder::TableBuilder>()?;
    Ok(())
}
