//! A key order given as a Python callable (plyvel's `comparator=` and `comparator_name=`):
//! `comparator(a, b)` returns a negative number, zero or a positive number as `a` sorts
//! before, with or after `b`.

use std::cmp::Ordering;
use std::io::Write as _;
use std::sync::Arc;

use leveltable_table::Comparator;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A comparator calling a Python function. LevelDB records `name` in the MANIFEST, and
/// refuses to open the database with a comparator of another name.
pub struct PyComparator {
    name: String,
    compare: Py<PyAny>,
}

/// The comparator `comparator` and `comparator_name` give, as plyvel checks them: both or
/// neither (`ValueError`), a callable (`TypeError`) and a `bytes` or `str` name
/// (`TypeError`; `ValueError` unless UTF-8).
pub fn from_keywords(
    comparator: Option<&Bound<'_, PyAny>>,
    name: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Arc<dyn Comparator>>> {
    let Some(comparator) = comparator.filter(|c| !c.is_none()) else {
        if name.is_some_and(|n| !n.is_none()) {
            return Err(PyValueError::new_err(
                "comparator_name is given without a comparator",
            ));
        }
        return Ok(None);
    };
    let Some(name) = name.filter(|n| !n.is_none()) else {
        return Err(PyValueError::new_err(
            "a comparator needs a comparator_name, the name LevelDB records for it",
        ));
    };
    if !comparator.is_callable() {
        return Err(PyTypeError::new_err("comparator must be callable"));
    }
    let name = if let Ok(s) = name.cast::<PyString>() {
        s.to_cow()?.into_owned()
    } else if let Ok(b) = name.cast::<PyBytes>() {
        String::from_utf8(b.as_bytes().to_vec())
            .map_err(|_| PyValueError::new_err("comparator_name must be UTF-8"))?
    } else {
        return Err(PyTypeError::new_err("comparator_name must be bytes or str"));
    };
    Ok(Some(Arc::new(PyComparator {
        name,
        compare: comparator.clone().unbind(),
    })))
}

impl Comparator for PyComparator {
    fn name(&self) -> &str {
        &self.name
    }

    /// Calls the function with the GIL. An exception, or a result that is not an integer,
    /// is printed and aborts the process, as plyvel does: keys kept in an order that
    /// failed would be lost to every later read.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        Python::attach(|py| {
            let result = self
                .compare
                .call1(py, (PyBytes::new(py, a), PyBytes::new(py, b)))
                .and_then(|r| r.extract::<i64>(py));
            match result {
                Ok(n) => n.cmp(&0),
                Err(e) => {
                    e.write_unraisable(py, Some(self.compare.bind(py)));
                    // Not `eprintln!`, which panics if standard error is closed, and the
                    // panic would unwind through the engine instead of ending the process.
                    let _ = writeln!(
                        std::io::stderr(),
                        "leveltable: the comparator {:?} failed; aborting",
                        self.name
                    );
                    std::process::abort();
                }
            }
        })
    }

    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}

    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}
