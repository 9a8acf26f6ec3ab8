//! Iteration from Python in chunks: each crossing into Rust (with the GIL released) reads a
//! batch of entries, so a Python loop does not pay for a crossing per entry.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::table_error;
use crate::table::OpenTable;

/// Entries fetched per crossing, at most.
const CHUNK_ENTRIES: usize = 1024;

/// Bytes of keys and values fetched per crossing, at most (one entry more if it is larger).
const CHUNK_BYTES: usize = 1 << 20;

/// What an iterator yields.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// `(key, value)` tuples.
    Items,
    /// Keys.
    Keys,
    /// Values.
    Values,
}

/// Where the entries come from.
pub enum Source {
    /// A table file.
    Table(Arc<OpenTable>),
}

impl Source {
    /// Up to a chunk of entries in `(start, stop)`, in order.
    fn fetch(
        &self,
        start: &Bound<Vec<u8>>,
        stop: &Bound<Vec<u8>>,
    ) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
        match self {
            Source::Table(open) => {
                let mut out = Vec::new();
                let mut bytes = 0usize;
                for entry in open.table.range((start.clone(), stop.clone())) {
                    let (k, v) = entry.map_err(|e| table_error(&open.path, e))?;
                    bytes = bytes.saturating_add(k.len()).saturating_add(v.len());
                    out.push((k, v));
                    if out.len() >= CHUNK_ENTRIES || bytes >= CHUNK_BYTES {
                        break;
                    }
                }
                Ok(out)
            }
        }
    }
}

struct State {
    buffer: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// Where the next chunk starts: after the last key handed out.
    start: Bound<Vec<u8>>,
    done: bool,
}

/// An iterator over entries in key order, yielding `(key, value)` tuples, keys or values.
#[pyclass(frozen, module = "leveltable")]
pub struct Entries {
    source: Source,
    stop: Bound<Vec<u8>>,
    mode: Mode,
    state: Mutex<State>,
}

impl Entries {
    /// Entries of `source` in `(start, stop)`.
    pub fn new(source: Source, start: Bound<Vec<u8>>, stop: Bound<Vec<u8>>, mode: Mode) -> Entries {
        Entries {
            source,
            stop,
            mode,
            state: Mutex::new(State {
                buffer: VecDeque::new(),
                start,
                done: false,
            }),
        }
    }
}

#[pymethods]
impl Entries {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.buffer.is_empty() && !state.done {
            let start = state.start.clone();
            let chunk = py.detach(|| self.source.fetch(&start, &self.stop));
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    state.done = true;
                    return Err(e);
                }
            };
            match chunk.last() {
                Some((last, _)) => state.start = Bound::Excluded(last.clone()),
                None => state.done = true,
            }
            state.buffer.extend(chunk);
        }
        let Some((key, value)) = state.buffer.pop_front() else {
            return Ok(None);
        };
        drop(state);
        let item = match self.mode {
            Mode::Items => {
                let pair = [PyBytes::new(py, &key), PyBytes::new(py, &value)];
                PyTuple::new(py, pair)?.into_any().unbind()
            }
            Mode::Keys => PyBytes::new(py, &key).into_any().unbind(),
            Mode::Values => PyBytes::new(py, &value).into_any().unbind(),
        };
        Ok(Some(item))
    }
}
