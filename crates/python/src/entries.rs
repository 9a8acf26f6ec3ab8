//! Iteration from Python in chunks: each crossing into Rust (with the GIL released) reads a
//! batch of entries, so a Python loop does not pay for a crossing per entry.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// Entries fetched per crossing, at most.
const CHUNK_ENTRIES: usize = 1024;

/// Bytes of keys and values fetched per crossing, at most (one entry more if it is larger).
const CHUNK_BYTES: usize = 1 << 20;

/// One entry as the iterators hand them over.
pub type Entry = (Vec<u8>, Vec<u8>);

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

/// Where the entries of an iterator come from, a chunk at a time.
pub trait ChunkSource: Send {
    /// The next entries in order; empty at the end.
    fn next_chunk(&mut self) -> PyResult<Vec<Entry>>;
}

/// Takes entries from `entries` until a chunk is full.
pub fn take_chunk<E>(
    entries: impl Iterator<Item = Result<Entry, E>>,
    error: impl Fn(E) -> PyErr,
) -> PyResult<Vec<Entry>> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for entry in entries {
        let (k, v) = entry.map_err(&error)?;
        bytes = bytes.saturating_add(k.len()).saturating_add(v.len());
        out.push((k, v));
        if out.len() >= CHUNK_ENTRIES || bytes >= CHUNK_BYTES {
            break;
        }
    }
    Ok(out)
}

struct State {
    source: Box<dyn ChunkSource>,
    buffer: VecDeque<Entry>,
    done: bool,
}

/// An iterator over entries in key order, yielding `(key, value)` tuples, keys or values.
#[pyclass(frozen, module = "leveltable")]
pub struct Entries {
    mode: Mode,
    state: Mutex<State>,
}

impl Entries {
    /// An iterator over what `source` gives.
    pub fn new(source: impl ChunkSource + 'static, mode: Mode) -> Entries {
        Entries {
            mode,
            state: Mutex::new(State {
                source: Box::new(source),
                buffer: VecDeque::new(),
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
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        if state.buffer.is_empty() && !state.done {
            let source = &mut state.source;
            match py.detach(|| source.next_chunk()) {
                Ok(chunk) if chunk.is_empty() => state.done = true,
                Ok(chunk) => state.buffer.extend(chunk),
                Err(e) => {
                    state.done = true;
                    return Err(e);
                }
            }
        }
        let Some((key, value)) = state.buffer.pop_front() else {
            return Ok(None);
        };
        drop(guard);
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
