//! Iteration from Python in chunks: each crossing into Rust (with the GIL released) reads a
//! batch of entries, so a Python loop does not pay for a crossing per entry.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

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

/// Entries fetched in one crossing, stored end to end in one buffer: filling a chunk
/// allocates nothing per entry, and handing an entry to Python copies it once, into its
/// `bytes` objects.
#[derive(Debug, Default)]
pub struct Chunk {
    bytes: Vec<u8>,
    /// Per entry: where its key ends and where its value ends in `bytes`.
    ends: Vec<(usize, usize)>,
    /// Entries before this one were handed out.
    next: usize,
}

impl Chunk {
    /// Appends an entry.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    /// Whether the chunk holds enough for one crossing.
    pub fn full(&self) -> bool {
        self.ends.len() >= CHUNK_ENTRIES || self.bytes.len() >= CHUNK_BYTES
    }

    /// The key of the entry pushed last.
    pub fn last_key(&self) -> Option<&[u8]> {
        let i = self.ends.len().checked_sub(1)?;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        Some(&self.bytes[start..self.ends[i].0])
    }

    fn is_empty(&self) -> bool {
        self.next >= self.ends.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.next = 0;
    }

    /// The next entry not handed out yet.
    fn pop(&mut self) -> Option<(&[u8], &[u8])> {
        let i = self.next;
        let &(key_end, end) = self.ends.get(i)?;
        self.next += 1;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        Some((&self.bytes[start..key_end], &self.bytes[key_end..end]))
    }
}

/// Where the entries of an iterator come from, a chunk at a time.
pub trait ChunkSource: Send {
    /// Appends the next entries in order to `chunk` until it is full; none at the end.
    fn fill(&mut self, chunk: &mut Chunk) -> PyResult<()>;
}

/// Appends entries of `entries` to `chunk` until it is full.
pub fn fill_from<E>(
    chunk: &mut Chunk,
    entries: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), E>>,
    error: impl Fn(E) -> PyErr,
) -> PyResult<()> {
    for entry in entries {
        let (k, v) = entry.map_err(&error)?;
        chunk.push(&k, &v);
        if chunk.full() {
            break;
        }
    }
    Ok(())
}

struct State {
    source: Box<dyn ChunkSource>,
    chunk: Chunk,
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
                chunk: Chunk::default(),
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
        state.refill(py)?;
        let Some((key, value)) = state.chunk.pop() else {
            return Ok(None);
        };
        self.item(py, key, value).map(Some)
    }

    /// The entries not handed out yet of the current chunk (a new chunk if it is used up),
    /// as a list; empty at the end. [`iterate`] builds Python's loops on it.
    fn next_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *guard;
        state.refill(py)?;
        let list = PyList::empty(py);
        while let Some((key, value)) = state.chunk.pop() {
            list.append(self.item(py, key, value)?)?;
        }
        Ok(list)
    }
}

impl State {
    /// Reads the next chunk, with the GIL released, if the current one is used up.
    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        if !self.chunk.is_empty() || self.done {
            return Ok(());
        }
        let (source, chunk) = (&mut self.source, &mut self.chunk);
        chunk.clear();
        if let Err(e) = py.detach(|| source.fill(chunk)) {
            self.done = true;
            return Err(e);
        }
        self.done = chunk.is_empty();
        Ok(())
    }
}

impl Entries {
    /// One entry as this iterator yields it.
    fn item(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<Py<PyAny>> {
        Ok(match self.mode {
            Mode::Items => {
                let pair = [PyBytes::new(py, key), PyBytes::new(py, value)];
                PyTuple::new(py, pair)?.into_any().unbind()
            }
            Mode::Keys => PyBytes::new(py, key).into_any().unbind(),
            Mode::Values => PyBytes::new(py, value).into_any().unbind(),
        })
    }
}

/// A plain Python iterator over `entries`: `itertools.chain.from_iterable(iter(
/// entries.next_chunk, []))`. A loop over it crosses into Rust once per chunk, not once per
/// entry, and takes each entry from a list at the speed of Python's own iterators. It holds
/// a chunk ahead, so it suits the loops over a whole `Db` or `Table`, whose iterator the
/// caller never holds; explicit iterators stay [`Entries`], whose `next` is exact.
pub fn iterate<'py>(py: Python<'py>, entries: Entries) -> PyResult<Bound<'py, PyAny>> {
    let entries = Bound::new(py, entries)?;
    let next_chunk = entries.getattr("next_chunk")?;
    let chunks = py
        .import("builtins")?
        .getattr("iter")?
        .call1((next_chunk, PyList::empty(py)))?;
    py.import("itertools")?
        .getattr("chain")?
        .getattr("from_iterable")?
        .call1((chunks,))
}
