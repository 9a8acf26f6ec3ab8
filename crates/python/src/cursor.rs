//! `leveltable.Cursor`, plyvel's iterator: a position between two entries of a key range,
//! moved both ways (`next`, `prev`) and set (`seek`, `seek_to_start`, `seek_to_stop`),
//! reading the database as it was when the cursor was made.
//!
//! The position is kept as a key (or an end of the range); a step reads from a range
//! iterator opened at the position, in chunks read with the GIL released, which the steps
//! that follow in the same direction take from. Turning round, or seeking, drops the chunk
//! and opens a new range iterator at the position.

use std::cmp::Ordering;
use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use leveltable_db::DbIter;
use leveltable_table::Comparator;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::bytes::bytes_of;
use crate::db_source::{Pin, Source, THE_DATABASE};
use crate::entries::{Chunk, Mode, item};
use crate::errors::{ClosedError, db_error};
use crate::gil_lock;

/// Entries read by a step that opens a range iterator: few, as a cursor is often made for
/// one or two entries.
const FIRST_FILL: usize = 16;
/// Entries read per step at most, once a cursor has gone on in one direction.
const MAX_FILL: usize = 1024;

/// What a cursor reads: a database at one point in time, within one key range.
pub struct Reader {
    pub source: Source,
    pub path: PathBuf,
    /// The point in time, held so that compactions keep what the cursor sees.
    pub pin: Arc<Pin>,
    /// The database's order, to narrow a range to a sought key.
    pub comparator: Arc<dyn Comparator>,
    pub lo: Edge<Vec<u8>>,
    pub hi: Edge<Vec<u8>>,
}

impl Reader {
    /// An iterator over the entries between `lo` and `hi`.
    pub fn range(&self, lo: Edge<&[u8]>, hi: Edge<&[u8]>) -> PyResult<DbIter> {
        Ok(match &self.source {
            Source::Read(db) => {
                // Refuses a closed database; reads the view the reader was made on.
                let current = db.get(THE_DATABASE)?;
                let db = self.pin.read().unwrap_or(&current);
                db.range_at::<[u8]>((lo, hi), self.pin.sequence())
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                match self.pin.writable() {
                    Some(snapshot) => db.range_at::<[u8]>((lo, hi), snapshot),
                    None => db.range::<[u8]>((lo, hi)),
                }
            }
        })
    }
}

/// Where the cursor is.
enum Pos {
    /// Before the range's first entry.
    Start,
    /// After the range's last entry.
    End,
    /// Before the first entry whose key is at least this one.
    Before(Vec<u8>),
    /// After the entry of this key (or where it would be).
    After(Vec<u8>),
    /// Past the entry the chunk handed out last, in the chunk's direction.
    Last,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Backward,
}

struct State {
    /// `None` once closed.
    reader: Option<Reader>,
    pos: Pos,
    /// Entries read ahead of the position, in direction `dir`.
    chunk: Chunk,
    dir: Dir,
    /// The range iterator the chunk was read from, continuing in direction `dir`.
    iter: Option<DbIter>,
    /// Entries the next read takes.
    fill: usize,
}

/// The tighter of two lower bounds.
fn max_lower<'a>(cmp: &dyn Comparator, a: Edge<&'a [u8]>, b: Edge<&'a [u8]>) -> Edge<&'a [u8]> {
    tighter(cmp, a, b, Ordering::Greater)
}

/// The tighter of two upper bounds.
fn min_upper<'a>(cmp: &dyn Comparator, a: Edge<&'a [u8]>, b: Edge<&'a [u8]>) -> Edge<&'a [u8]> {
    tighter(cmp, a, b, Ordering::Less)
}

/// The tighter of two bounds on one side: `a` if its key is `inward` of `b`'s (or the same
/// key, excluded), else `b`.
fn tighter<'a>(
    cmp: &dyn Comparator,
    a: Edge<&'a [u8]>,
    b: Edge<&'a [u8]>,
    inward: Ordering,
) -> Edge<&'a [u8]> {
    let (ka, kb) = match (a, b) {
        (Edge::Unbounded, x) | (x, Edge::Unbounded) => return x,
        (Edge::Included(ka) | Edge::Excluded(ka), Edge::Included(kb) | Edge::Excluded(kb)) => {
            (ka, kb)
        }
    };
    match cmp.compare(ka, kb) {
        Ordering::Equal if matches!(a, Edge::Excluded(_)) => a,
        order if order == inward => a,
        _ => b,
    }
}

/// Whether no key lies between `lo` and `hi`.
fn empty(cmp: &dyn Comparator, lo: Edge<&[u8]>, hi: Edge<&[u8]>) -> bool {
    let (Edge::Included(a) | Edge::Excluded(a), Edge::Included(b) | Edge::Excluded(b)) = (lo, hi)
    else {
        return false;
    };
    match cmp.compare(a, b) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => !matches!((lo, hi), (Edge::Included(_), Edge::Included(_))),
    }
}

pub fn as_ref(b: &Edge<Vec<u8>>) -> Edge<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

impl State {
    fn reader(&self) -> PyResult<&Reader> {
        let reader = self
            .reader
            .as_ref()
            .ok_or_else(|| ClosedError::new_err("the iterator is closed"))?;
        reader.source.check_open()?;
        Ok(reader)
    }

    /// Moves the position to `pos`, dropping what was read ahead.
    fn set(&mut self, pos: Pos) -> PyResult<()> {
        self.reader()?;
        self.pos = pos;
        self.chunk.clear();
        self.iter = None;
        self.fill = FIRST_FILL;
        Ok(())
    }

    /// Turns `Pos::Last` into the key it stands for, before the chunk is dropped.
    fn settle(&mut self) {
        if let Pos::Last = self.pos {
            let key = self.chunk.popped_key().unwrap_or_default().to_vec();
            self.pos = match self.dir {
                Dir::Forward => Pos::After(key),
                Dir::Backward => Pos::Before(key),
            };
        }
    }

    /// A range iterator from the position in direction `dir`; `None` if nothing lies that
    /// way.
    fn open(&self, dir: Dir) -> PyResult<Option<DbIter>> {
        let reader = self.reader()?;
        let cmp = &*reader.comparator;
        let (lo, hi) = (as_ref(&reader.lo), as_ref(&reader.hi));
        let (lo, hi) = match (dir, &self.pos) {
            (Dir::Forward, Pos::End) | (Dir::Backward, Pos::Start) => return Ok(None),
            (_, Pos::Start | Pos::End | Pos::Last) => (lo, hi),
            (Dir::Forward, Pos::Before(k)) => (max_lower(cmp, lo, Edge::Included(k)), hi),
            (Dir::Forward, Pos::After(k)) => (max_lower(cmp, lo, Edge::Excluded(k)), hi),
            (Dir::Backward, Pos::Before(k)) => (lo, min_upper(cmp, hi, Edge::Excluded(k))),
            (Dir::Backward, Pos::After(k)) => (lo, min_upper(cmp, hi, Edge::Included(k))),
        };
        if empty(cmp, lo, hi) {
            return Ok(None);
        }
        reader.range(lo, hi).map(Some)
    }

    /// Reads the next entries of the iterator into the chunk, with the GIL released.
    fn read(&mut self, py: Python<'_>) -> PyResult<()> {
        self.chunk.clear();
        let path = self.reader()?.path.clone();
        let Some(iter) = self.iter.as_mut() else {
            return Ok(());
        };
        let (n, dir, chunk) = (self.fill, self.dir, &mut self.chunk);
        self.fill = (n * 4).min(MAX_FILL);
        py.detach(|| {
            for _ in 0..n {
                let entry = match dir {
                    Dir::Forward => iter.next_entry(),
                    Dir::Backward => iter.next_back_entry(),
                };
                let Some(entry) = entry else {
                    break;
                };
                let (k, v) = entry?;
                chunk.push(k, v);
                if chunk.full() {
                    break;
                }
            }
            Ok(())
        })
        .map_err(|e| db_error(&path, e))
    }

    /// The entry the position passes moving in direction `dir`, `None` at the range's end.
    fn step(&mut self, py: Python<'_>, dir: Dir, mode: Mode) -> PyResult<Option<Py<PyAny>>> {
        self.reader()?;
        if self.dir != dir {
            self.settle();
            self.chunk.clear();
            self.iter = None;
            self.dir = dir;
            self.fill = FIRST_FILL;
        }
        if self.chunk.is_empty() {
            self.settle();
            if self.iter.is_none() {
                self.iter = self.open(dir)?;
            }
            self.read(py)?;
        }
        let Some((k, v)) = self.chunk.pop() else {
            return Ok(None);
        };
        let entry = item(py, mode, k, v)?;
        self.pos = Pos::Last;
        Ok(Some(entry))
    }
}

/// plyvel's iterator over a database or snapshot (`Db.cursor()`, and `leveltable.plyvel`'s
/// `iterator()`): `next()` yields the entry after the position (before it with
/// `reverse=True`), `prev()` the one the other way, each moving the position past it;
/// `seek(key)` moves it before the first key at least `key`, `seek_to_start()` and
/// `seek_to_stop()` to the range's ends. It reads the database as it was when made.
#[pyclass(frozen, module = "leveltable")]
pub struct Cursor {
    state: Mutex<State>,
    mode: Mode,
    reverse: bool,
}

impl Cursor {
    pub fn new(reader: Reader, mode: Mode, reverse: bool) -> Cursor {
        Cursor {
            state: Mutex::new(State {
                reader: Some(reader),
                // A reverse cursor starts at the range's end, from where it goes down.
                pos: if reverse { Pos::End } else { Pos::Start },
                chunk: Chunk::default(),
                dir: Dir::Forward,
                iter: None,
                fill: FIRST_FILL,
            }),
            mode,
            reverse,
        }
    }

    fn step(&self, py: Python<'_>, forward: bool) -> PyResult<Option<Py<PyAny>>> {
        let dir = if forward != self.reverse {
            Dir::Forward
        } else {
            Dir::Backward
        };
        gil_lock::lock(py, &self.state).step(py, dir, self.mode)
    }
}

#[pymethods]
impl Cursor {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.step(py, true)
    }

    /// The entry before the position (after it with `reverse=True`), moving the position
    /// before it; `StopIteration` at the range's start.
    fn prev(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.step(py, false)?
            .ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// Moves the position before the first entry whose key is at least `target`.
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let target = bytes_of(target, "target")?.into_owned();
        gil_lock::lock(py, &self.state).set(Pos::Before(target))
    }

    /// Moves the position before the range's first entry.
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        gil_lock::lock(py, &self.state).set(Pos::Start)
    }

    /// Moves the position after the range's last entry.
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        gil_lock::lock(py, &self.state).set(Pos::End)
    }

    /// Closes the cursor: it raises `ClosedError` from then on. Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let mut state = gil_lock::lock(py, &self.state);
        state.reader = None;
        state.iter = None;
        state.chunk.clear();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }
}
