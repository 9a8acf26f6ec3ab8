//! Reads of a database at one point in time, shared by `Db` and `Snapshot`, for a database
//! opened read-only (a sequence number) and one opened for writing (now, or a snapshot that
//! keeps what it sees from compactions).

use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::Arc;

use leveltable_db::{Db as RustDb, DbIter, TableInfo};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::arrow_stream::ArrowStream;
use crate::bytes::bytes_of;
use crate::closable::Closable;
use crate::cursor::{Cursor, Reader, as_ref};
use crate::db_source::{At, Pin, Source, THE_DATABASE, THE_SNAPSHOT};
use crate::entries::{Chunk, ChunkSource, Entries, Mode};
use crate::errors::{InvalidArgumentError, db_error};
use crate::iterator_keywords::{IteratorKeywords, Key, bound, scan_bounds};

/// Reads of one database at one point in time: the methods `Db` and `Snapshot` share.
/// Each read takes the database from the `Db`'s own hold on it, so once the `Db` is
/// closed, its snapshots and iterators raise `ClosedError` as the `Db` does.
pub struct View {
    pub source: Source,
    pub at: At,
}

/// A database's entries, read through one iterator kept between chunks.
struct DbChunks {
    source: Source,
    path: PathBuf,
    iter: DbIter,
    /// From the last key down.
    reverse: bool,
}

impl ChunkSource for DbChunks {
    fn fill(&mut self, chunk: &mut Chunk) -> PyResult<()> {
        self.source.check_open()?;
        // Entries lent by the iterator, copied once, into the chunk.
        loop {
            let entry = if self.reverse {
                self.iter.next_back_entry()
            } else {
                self.iter.next_entry()
            };
            let Some(entry) = entry else {
                break;
            };
            let (k, v) = entry.map_err(|e| db_error(&self.path, e))?;
            chunk.push(k, v);
            if chunk.full() {
                break;
            }
        }
        Ok(())
    }
}

/// A key of a batch as the lookup reads it: a `bytes` object's own buffer, or a copy of
/// another bytes-like object's contents.
enum HeldKey<'py> {
    Bytes(Bound<'py, PyBytes>),
    Copied(Vec<u8>),
}

impl HeldKey<'_> {
    fn as_bytes(&self) -> &[u8] {
        match self {
            HeldKey::Bytes(b) => b.as_bytes(),
            HeldKey::Copied(v) => v,
        }
    }
}

/// The keys of `keys`, an iterable of bytes-like objects, held for one batch lookup:
/// `bytes` borrowed, others copied. The objects are only held here and read once all are:
/// the loop stays short, so the cache misses of a batch's scattered key objects overlap.
fn hold_keys<'py>(keys: &Bound<'py, PyAny>) -> PyResult<Vec<HeldKey<'py>>> {
    let size = match keys.cast::<PyList>() {
        Ok(list) => list.len(),
        Err(_) => keys.cast::<PyTuple>().map_or(0, |t| t.len()),
    };
    let mut held = Vec::with_capacity(size);
    for key in keys.try_iter()? {
        held.push(match key?.cast_into::<PyBytes>() {
            Ok(b) => HeldKey::Bytes(b),
            Err(e) => HeldKey::Copied(bytes_of(&e.into_inner(), "key")?.into_owned()),
        });
    }
    Ok(held)
}

impl View {
    /// The sequence number the view reads at (for `Now`, the newest write's).
    pub fn sequence(&self) -> PyResult<u64> {
        Ok(match (&self.source, &self.at) {
            (_, At::Snapshot(pin)) => pin.get(THE_SNAPSHOT)?.sequence(),
            (Source::Write(db), At::Now) => db.get(THE_DATABASE)?.last_sequence(),
            (Source::Read(db), At::Now) => db.get(THE_DATABASE)?.snapshot(),
        })
    }

    /// The read-only database this view reads, and the sequence it reads at: a snapshot's
    /// own view, or the database's current one (`ClosedError` once either is closed).
    fn read_at(&self, db: &Closable<RustDb>) -> PyResult<(Arc<RustDb>, u64)> {
        let current = db.get(THE_DATABASE)?;
        if let Some(pin) = self.pin()?
            && let Some(pinned) = pin.read()
        {
            return Ok((Arc::clone(pinned), pin.sequence()));
        }
        let sequence = current.snapshot();
        Ok((current, sequence))
    }

    /// What the view's snapshot pins, if it is one: `ClosedError` once released.
    fn pin(&self) -> PyResult<Option<Arc<Pin>>> {
        match &self.at {
            At::Snapshot(pin) => pin.get(THE_SNAPSHOT).map(Some),
            _ => Ok(None),
        }
    }

    /// Releases what the view's snapshot pins: its reads raise `ClosedError` from then on.
    pub fn release(&self) {
        if let At::Snapshot(pin) = &self.at {
            pin.close();
        }
    }

    /// The values of `keys` as the view sees them, with the GIL released.
    fn lookup(&self, py: Python<'_>, keys: &[&[u8]]) -> PyResult<Vec<Option<Vec<u8>>>> {
        match &self.source {
            Source::Read(db) => {
                let (db, sequence) = self.read_at(db)?;
                let found = py.detach(|| match keys {
                    [key] => db.get_at(key, sequence).map(|v| vec![v]),
                    _ => db.get_many_at(keys, sequence),
                });
                found.map_err(|e| db_error(db.path(), e))
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                let pin = self.pin()?;
                let snapshot = pin.as_deref().and_then(Pin::writable);
                py.detach(|| match (keys, snapshot) {
                    ([key], Some(s)) => db.get_at(key, s).map(|v| vec![v]),
                    ([key], None) => db.get(key).map(|v| vec![v]),
                    (_, Some(s)) => db.get_many_at(keys, s),
                    (_, None) => db.get_many(keys),
                })
                .map_err(|e| db_error(db.path(), e))
            }
        }
    }

    pub fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, "key")?;
        let found = self.lookup(py, &[&key])?.pop().flatten();
        Ok(found.map(|v| PyBytes::new(py, &v)))
    }

    pub fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let held = hold_keys(keys)?;
        let keys: Vec<&[u8]> = held.iter().map(HeldKey::as_bytes).collect();
        let values = if keys.is_empty() {
            // Still refuses a closed database.
            self.source.check_open()?;
            Vec::new()
        } else {
            self.lookup(py, &keys)?
        };
        PyList::new(
            py,
            values.into_iter().map(|v| v.map(|v| PyBytes::new(py, &v))),
        )
    }

    /// The value of `key`, or `default` if it is absent or deleted.
    pub fn get_or<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.get(py, key)?.map(Bound::into_any).or(default))
    }

    pub fn getitem<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.get(py, key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    pub fn contains(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key)?.is_some())
    }

    pub fn entries(
        &self,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        mode: Mode,
    ) -> PyResult<Entries> {
        let start = start.map_or(Edge::Unbounded, Edge::Included);
        let stop = stop.map_or(Edge::Unbounded, Edge::Excluded);
        self.entries_within(&start, &stop, mode, false)
    }

    /// The `(key, value)` pairs with `start <= key < stop` (`None` leaves a side open).
    pub fn range_items(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Entries> {
        let (start, stop) = (bound(start, "start")?, bound(stop, "stop")?);
        self.entries(start, stop, Mode::Items)
    }

    /// plyvel's `iterator()`.
    pub fn iterator(&self, keywords: &IteratorKeywords<'_, '_>) -> PyResult<Entries> {
        let (start, stop, mode) = keywords.read()?;
        self.entries_within(&start, &stop, mode, keywords.reverse)
    }

    /// plyvel's iterator that moves both ways (`Cursor`), reading the view as it is now.
    pub fn cursor(&self, keywords: &IteratorKeywords<'_, '_>) -> PyResult<Cursor> {
        let (lo, hi, mode) = keywords.read()?;
        Ok(Cursor::new(self.reader(lo, hi)?, mode, keywords.reverse))
    }

    /// A reader of the keys from `lo` to `hi` as the view sees them now, pinning that
    /// point in time.
    fn reader(&self, lo: Key, hi: Key) -> PyResult<Reader> {
        let (path, comparator, pin) = match &self.source {
            Source::Read(db) => {
                let (db, sequence) = self.read_at(db)?;
                let pin = Pin::Read(sequence, Arc::clone(&db));
                (
                    db.path().to_owned(),
                    Arc::clone(db.comparator()),
                    Arc::new(pin),
                )
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                let pin = match self.pin()? {
                    Some(pin) => pin,
                    None => Arc::new(Pin::Writable(db.snapshot())),
                };
                (db.path().to_owned(), Arc::clone(db.comparator()), pin)
            }
        };
        Ok(Reader {
            source: self.source.clone(),
            path,
            pin,
            comparator,
            lo,
            hi,
        })
    }

    fn entries_within(
        &self,
        start: &Edge<Vec<u8>>,
        stop: &Edge<Vec<u8>>,
        mode: Mode,
        reverse: bool,
    ) -> PyResult<Entries> {
        let (path, iter) = self.range(start, stop)?;
        Ok(self.entries_of(path, iter, mode, reverse))
    }

    /// An iterator over the keys from `start` to `stop`, with the database's path.
    fn range(&self, start: &Edge<Vec<u8>>, stop: &Edge<Vec<u8>>) -> PyResult<(PathBuf, DbIter)> {
        let range = (as_ref(start), as_ref(stop));
        Ok(match &self.source {
            Source::Read(db) => {
                let (db, sequence) = self.read_at(db)?;
                let iter = db.range_at::<[u8]>(range, sequence);
                (db.path().to_owned(), iter)
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                let pin = self.pin()?;
                let iter = match pin.as_deref().and_then(Pin::writable) {
                    Some(s) => db.range_at::<[u8]>(range, s),
                    None => db.range::<[u8]>(range),
                };
                (db.path().to_owned(), iter)
            }
        })
    }

    /// The entries with `start <= key < stop`, or those starting with `prefix`, as Arrow
    /// record batches (`scan_arrow()`); with `versions`, every stored version of their
    /// keys.
    pub fn arrow(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        batch_rows: usize,
        versions: bool,
    ) -> PyResult<ArrowStream> {
        let (start, stop) = scan_bounds(start, stop, prefix)?;
        if versions {
            return match (&self.source, &self.at) {
                (Source::Read(db), At::Now) => {
                    ArrowStream::of_versions(Arc::clone(db), (start, stop), batch_rows)
                }
                _ => Err(InvalidArgumentError::new_err(
                    "versions=True reads a database opened read-only (or Db.salvage), not \
                     one open for writing or a snapshot",
                )),
            };
        }
        ArrowStream::new(self.reader(start, stop)?, batch_rows)
    }

    fn entries_of(&self, path: PathBuf, iter: DbIter, mode: Mode, reverse: bool) -> Entries {
        let source = self.source.clone();
        Entries::new(
            DbChunks {
                source: self.source.clone(),
                path,
                iter,
                reverse,
            },
            mode,
        )
        .emptied_on_close(self.source.runs())
        .checked(move || source.check_open())
    }
}

/// The user key of an internal key (the key less its 8-byte tag).
pub fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(8)]
}

/// What `Db.stats()` says of one table: its number, size and user-key range.
pub fn table_info<'py>(py: Python<'py>, t: &TableInfo) -> PyResult<Bound<'py, PyDict>> {
    let f = PyDict::new(py);
    f.set_item("number", t.number)?;
    f.set_item("size", t.size)?;
    f.set_item("smallest", PyBytes::new(py, user_key(&t.smallest)))?;
    f.set_item("largest", PyBytes::new(py, user_key(&t.largest)))?;
    Ok(f)
}
