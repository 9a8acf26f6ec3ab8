//! Iteration from Python in chunks: each crossing into Rust (with the GIL released) reads a
//! batch of entries, so a Python loop does not pay for a crossing per entry.
//!
//! A long iteration reads ahead where the process may run on more than one CPU: from its
//! third chunk on, a thread of the iterator's own reads the next chunk while Python makes
//! objects of the entries of the last one, so the reading (merging, decompressing) and
//! Python's work overlap on two cores instead of taking turns on one.

use std::ops::Range;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::closable::OpenRuns;
use crate::gil_lock;

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
    /// `None` per entry (plyvel's iterator with neither keys nor values).
    Neither,
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

    /// Whether every entry was handed out.
    pub fn is_empty(&self) -> bool {
        self.next >= self.ends.len()
    }

    /// The key of the entry handed out last.
    pub fn popped_key(&self) -> Option<&[u8]> {
        let i = self.next.checked_sub(1)?;
        self.entries(i..i + 1).next().map(|(k, _)| k)
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.next = 0;
    }

    /// The next entry not handed out yet.
    pub fn pop(&mut self) -> Option<(&[u8], &[u8])> {
        let i = self.next;
        if i >= self.ends.len() {
            return None;
        }
        self.next += 1;
        self.entries(i..i + 1).next()
    }

    /// The entries at `at` (those of them the chunk holds), in order.
    fn entries(&self, at: Range<usize>) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        let len = self.ends.len();
        let at = at.start.min(len)..at.end.min(len);
        let mut start = at.start.checked_sub(1).map_or(0, |p| self.ends[p].1);
        self.ends[at].iter().map(move |&(key_end, end)| {
            let entry = (&self.bytes[start..key_end], &self.bytes[key_end..end]);
            start = end;
            entry
        })
    }

    /// Hands out every entry not handed out yet: their positions.
    fn take_rest(&mut self) -> Range<usize> {
        let rest = self.next..self.ends.len().max(self.next);
        self.next = rest.end;
        rest
    }

    /// The entries at `at` as a list of `bytes`: their keys, or their values.
    fn list<'py>(
        &self,
        py: Python<'py>,
        at: Range<usize>,
        keys: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.entries(at)
                .map(|(k, v)| PyBytes::new(py, if keys { k } else { v })),
        )
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

/// Where an iterator's next chunk comes from.
enum Feed {
    /// Read in the calling thread, with the GIL released; `read` chunks so far.
    Here {
        source: Box<dyn ChunkSource>,
        read: usize,
    },
    /// Read ahead by a thread of the iterator's own.
    Ahead(ReadAhead),
    /// The source ended, or failed.
    Ended,
}

/// The two ends of a read-ahead thread. Dropping them ends the thread once it has read the
/// chunk it is reading (its next hand-over fails).
struct ReadAhead {
    /// Filled chunks in order, handed over one at a time; an empty chunk or an error is the
    /// last.
    full: Receiver<PyResult<Chunk>>,
    /// Chunks whose entries were handed out, back to the thread to be filled again.
    used: Sender<Chunk>,
}

/// Chunks an iteration reads in the calling thread before it starts reading ahead: a short
/// iteration never starts a thread.
const CHUNKS_BEFORE_READ_AHEAD: usize = 2;

/// Whether this process may run on more than one CPU (its affinity and CPU quota counted),
/// so that a read-ahead thread can run beside it.
fn more_than_one_cpu() -> bool {
    thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

impl ReadAhead {
    /// Starts a thread that fills chunks from `source`, one ahead of the caller.
    fn start(mut source: Box<dyn ChunkSource>) -> PyResult<ReadAhead> {
        // A rendezvous: the thread hands over a chunk when the caller asks for it, and reads
        // the next one meanwhile.
        let (give, full): (SyncSender<PyResult<Chunk>>, _) = mpsc::sync_channel(0);
        let (used, reuse) = mpsc::channel::<Chunk>();
        thread::Builder::new()
            .name("leveltable-read-ahead".into())
            .spawn(move || {
                loop {
                    let mut chunk = reuse.try_recv().unwrap_or_default();
                    chunk.clear();
                    let filled = source.fill(&mut chunk).map(|()| chunk);
                    let last = !matches!(&filled, Ok(c) if !c.ends.is_empty());
                    if give.send(filled).is_err() || last {
                        return;
                    }
                }
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start a read-ahead thread: {e}")))?;
        Ok(ReadAhead { full, used })
    }
}

struct State {
    feed: Feed,
    chunk: Chunk,
}

/// What an iterator asks before each step: `Err` (such as `ClosedError`) ends it with that
/// error, and drops what it was reading from.
type Check = Box<dyn Fn() -> PyResult<()> + Send + Sync>;

/// An iterator over entries in key order, yielding `(key, value)` tuples, keys or values.
#[pyclass(frozen, module = "leveltable")]
pub struct Entries {
    mode: Mode,
    state: Mutex<State>,
    check: Option<Check>,
    /// Where the lists handed out whole are kept, to be emptied when what the entries
    /// come from closes; this iterator's id there.
    runs: Option<(Arc<OpenRuns>, u64)>,
}

impl Entries {
    /// An iterator over what `source` gives.
    pub fn new(source: impl ChunkSource + 'static, mode: Mode) -> Entries {
        Entries {
            mode,
            state: Mutex::new(State {
                feed: Feed::Here {
                    source: Box::new(source),
                    read: 0,
                },
                chunk: Chunk::default(),
            }),
            check: None,
            runs: None,
        }
    }

    /// The same iterator, its runs (see [`iterate`]) kept in `runs` while Python loops
    /// over them, so that closing what they come from stops the loop at its next entry.
    pub fn emptied_on_close(mut self, runs: &Arc<OpenRuns>) -> Self {
        self.runs = Some((Arc::clone(runs), runs.register()));
        self
    }

    /// The same iterator, calling `check` before each step: once it fails, the iterator
    /// raises its error (and then again, at each step) instead of yielding entries, even
    /// those it has already read.
    pub fn checked(mut self, check: impl Fn() -> PyResult<()> + Send + Sync + 'static) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    /// Runs the check, if any; when it fails, drops the source and the entries read.
    fn check(&self, state: &mut State) -> PyResult<()> {
        let Some(check) = &self.check else {
            return Ok(());
        };
        check().inspect_err(|_| {
            state.feed = Feed::Ended;
            state.chunk.clear();
        })
    }

    /// The state, locked, checked and refilled: its chunk holds the next entries, empty at
    /// the end.
    fn ready(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, State>> {
        let mut guard = gil_lock::lock(py, &self.state);
        self.check(&mut guard)?;
        guard.refill(py)?;
        Ok(guard)
    }
}

#[pymethods]
impl Entries {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut state = self.ready(py)?;
        let Some((key, value)) = state.chunk.pop() else {
            return Ok(None);
        };
        self.item(py, key, value).map(Some)
    }

    /// Stops the iteration: what it reads from is dropped, and it yields nothing more.
    /// Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let mut guard = gil_lock::lock(py, &self.state);
        guard.feed = Feed::Ended;
        guard.chunk.clear();
        drop(guard);
        if let Some((runs, id)) = &self.runs {
            runs.release(*id);
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// The entries not handed out yet of the current chunk (a new chunk if it is used up),
    /// as a list; empty at the end.
    fn next_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.ready(py)?;
        let chunk = &mut guard.chunk;
        let rest = chunk.take_rest();
        let items = chunk
            .entries(rest)
            .map(|(key, value)| self.item(py, key, value))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// What [`next_chunk`](Self::next_chunk) hands out, as an iterator, or `None` at the
    /// end: `zip(keys, values)` of a list of keys and one of values, a list of keys or of
    /// values, or `repeat(None, n)`. [`iterate`] builds Python's loops on it: the pairs are
    /// made one at a time as the loop takes them, by `zip` (so Python's cyclic garbage
    /// collector, which counts tuples, never finds a chunk's worth of them alive), and two
    /// lists of `bytes` are all a chunk makes up front.
    fn _next_run<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        static ZIP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        static REPEAT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let mut guard = self.ready(py)?;
        let chunk = &mut guard.chunk;
        let rest = chunk.take_rest();
        if rest.is_empty() {
            if let Some((runs, id)) = &self.runs {
                runs.release(*id);
            }
            return Ok(None);
        }
        let mut lists = Vec::new();
        let run = match self.mode {
            Mode::Items => {
                let keys = chunk.list(py, rest.clone(), true)?;
                let values = chunk.list(py, rest, false)?;
                lists.push(keys.clone().unbind());
                lists.push(values.clone().unbind());
                ZIP.import(py, "builtins", "zip")?.call1((keys, values))?
            }
            Mode::Keys | Mode::Values => {
                let list = chunk.list(py, rest, matches!(self.mode, Mode::Keys))?;
                lists.push(list.clone().unbind());
                list.into_any()
            }
            Mode::Neither => REPEAT
                .import(py, "itertools", "repeat")?
                .call1((py.None(), rest.len()))?,
        };
        drop(guard);
        if let Some((runs, id)) = &self.runs {
            runs.hold(py, *id, lists)?;
        }
        Ok(Some(run))
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        if let Some((runs, id)) = &self.runs {
            runs.release(*id);
        }
    }
}

impl State {
    /// Gets the next chunk if the current one is used up: read with the GIL released, or
    /// handed over by the read-ahead thread. The chunk stays empty at the end, and after
    /// an error (raised once).
    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        if !self.chunk.is_empty() {
            return Ok(());
        }
        match std::mem::replace(&mut self.feed, Feed::Ended) {
            Feed::Ended => Ok(()),
            // Only where this process may run on more than one CPU: on one, the thread
            // would take turns with the caller and add a switch to each chunk. Asked once
            // (the chunks after it carry on here).
            Feed::Here { source, read }
                if read == CHUNKS_BEFORE_READ_AHEAD && more_than_one_cpu() =>
            {
                self.feed = Feed::Ahead(ReadAhead::start(source)?);
                self.refill(py)
            }
            Feed::Here { mut source, read } => {
                let chunk = &mut self.chunk;
                chunk.clear();
                py.detach(|| source.fill(chunk))?;
                if !chunk.is_empty() {
                    self.feed = Feed::Here {
                        source,
                        read: read.saturating_add(1),
                    };
                }
                Ok(())
            }
            Feed::Ahead(ahead) => {
                let used = std::mem::take(&mut self.chunk);
                // The thread may have ended (it reads on only while it has chunks to hand
                // over); a chunk it does not take back is merely not reused.
                let _ = ahead.used.send(used);
                let (ahead, received) = py.detach(move || {
                    let received = ahead.full.recv();
                    (ahead, received)
                });
                match received {
                    Ok(filled) => {
                        self.chunk = filled?;
                        if !self.chunk.is_empty() {
                            self.feed = Feed::Ahead(ahead);
                        }
                        Ok(())
                    }
                    // It hands over an empty chunk or an error before it ends: ending
                    // without one, it failed.
                    Err(_) => Err(PyRuntimeError::new_err(
                        "the read-ahead thread stopped before the end of the entries",
                    )),
                }
            }
        }
    }
}

impl Entries {
    /// One entry as this iterator yields it.
    fn item(&self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<Py<PyAny>> {
        item(py, self.mode, key, value)
    }
}

/// One entry as an iterator of `mode` yields it.
pub fn item(py: Python<'_>, mode: Mode, key: &[u8], value: &[u8]) -> PyResult<Py<PyAny>> {
    Ok(match mode {
        Mode::Items => {
            let pair = [PyBytes::new(py, key), PyBytes::new(py, value)];
            PyTuple::new(py, pair)?.into_any().unbind()
        }
        Mode::Keys => PyBytes::new(py, key).into_any().unbind(),
        Mode::Values => PyBytes::new(py, value).into_any().unbind(),
        Mode::Neither => py.None(),
    })
}

/// A plain Python iterator over `entries`: `itertools.chain.from_iterable(iter(
/// entries._next_run, None))`. A loop over it crosses into Rust once per chunk, not once
/// per entry, and takes each entry from a list (or `zip` of two) at the speed of Python's
/// own iterators. It holds a chunk ahead, so it suits the loops over a whole `Db` or
/// `Table`, whose iterator the caller never holds; explicit iterators stay [`Entries`],
/// whose `next` is exact.
pub fn iterate<'py>(py: Python<'py>, entries: Entries) -> PyResult<Bound<'py, PyAny>> {
    let entries = Bound::new(py, entries)?;
    let next_run = entries.getattr("_next_run")?;
    let chunks = py
        .import("builtins")?
        .getattr("iter")?
        .call1((next_run, py.None()))?;
    py.import("itertools")?
        .getattr("chain")?
        .getattr("from_iterable")?
        .call1((chunks,))
}
