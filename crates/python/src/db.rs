//! `leveltable.Db`: a whole LevelDB database, read-only or open for writing.

use std::sync::Arc;

use leveltable_db::Db as RustDb;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyType};

use crate::arrow_stream::ArrowStream;
use crate::bytes::bytes_of;
use crate::closable::Closable;
use crate::cursor::Cursor;
use crate::db_source::{At, Pin, Source, THE_DATABASE};
use crate::db_view::{View, table_info};
use crate::db_write::{self, WriteBatch, WriteKeywords};
use crate::entries::{Entries, Mode, iterate};
use crate::errors::{InvalidArgumentError, db_error, open_error};
use crate::fs_path::FsPath;
use crate::iterator_keywords::IteratorKeywords;
use crate::snapshot::Snapshot;

/// A LevelDB database directory, opened read-only: nothing in it is created, changed,
/// locked or deleted, so a database another process holds open can be read; or, with
/// `writable=True`, opened for writing under LevelDB's lock, as plyvel opens it.
///
/// `Db(path, *, verify_checksums=True, cache_bytes=8388608, max_open_tables=990,
/// table_memory=536870912, profile="auto")`; `path` a `str`, `bytes` or path-like;
/// `cache_bytes` the size of the cache of recently read blocks (0: no cache);
/// `table_memory` the most bytes the open tables may keep in memory (their index and filter
/// blocks), past which tables are closed and reopened when needed; `profile` as for `Table`
/// (Minecraft Bedrock worlds read as they are). Reads see the newest writes, those still in
/// the log included; `snapshot()` pins the current view.
///
/// `Db(path, writable=True, create_if_missing=False, error_if_exists=False,
/// paranoid_checks=None, write_buffer_size=None, max_file_size=None, block_size=None,
/// block_restart_interval=None, compression="snappy", bloom_filter_bits=0)` opens it for
/// writing: `put`, `delete`, `write_batch` and `compact_range`, with LevelDB's options
/// under plyvel's names. `lru_cache_size` and `max_open_files` are plyvel's names of
/// `cache_bytes` and `max_open_tables` (less LevelDB's 10 other files).
#[pyclass(frozen, subclass, module = "leveltable")]
pub struct Db {
    inner: Source,
}

impl Db {
    fn view(&self) -> PyResult<View> {
        // Each read takes the database's current view and its newest sequence together.
        self.inner.check_open()?;
        Ok(View {
            source: self.inner.clone(),
            at: At::Now,
        })
    }

    fn opened(db: RustDb) -> Db {
        Db {
            inner: Source::Read(Arc::new(Closable::new(db))),
        }
    }
}

#[pymethods]
impl Db {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, *, verify_checksums = true, cache_bytes = 8 << 20, max_open_tables = None, table_memory = None, profile = "auto", writable = false, create_if_missing = false, error_if_exists = false, paranoid_checks = None, write_buffer_size = None, max_file_size = None, block_size = None, block_restart_interval = None, compression = Some("snappy"), bloom_filter_bits = 0, lru_cache_size = None, max_open_files = None, comparator = None, comparator_name = None))]
    fn new(
        py: Python<'_>,
        path: FsPath,
        verify_checksums: bool,
        cache_bytes: u64,
        max_open_tables: Option<usize>,
        table_memory: Option<u64>,
        profile: &str,
        writable: bool,
        create_if_missing: bool,
        error_if_exists: bool,
        paranoid_checks: Option<bool>,
        write_buffer_size: Option<usize>,
        max_file_size: Option<u64>,
        block_size: Option<usize>,
        block_restart_interval: Option<usize>,
        compression: Option<&str>,
        bloom_filter_bits: usize,
        lru_cache_size: Option<u64>,
        max_open_files: Option<usize>,
        comparator: Option<&Bound<'_, PyAny>>,
        comparator_name: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let path = path.0;
        let comparator = crate::py_comparator::from_keywords(comparator, comparator_name)?;
        let mut options = crate::db_options::options(
            verify_checksums,
            lru_cache_size.unwrap_or(cache_bytes),
            max_open_files
                .map(|files| files.saturating_sub(10))
                .or(max_open_tables),
            table_memory,
            profile,
        )?;
        if let Some(comparator) = comparator {
            options = options.comparator(comparator);
        }
        let keywords = WriteKeywords {
            create_if_missing,
            error_if_exists,
            paranoid_checks,
            write_buffer_size,
            max_file_size,
            block_size,
            block_restart_interval,
            compression,
            bloom_filter_bits,
        };
        if writable {
            let inner = db_write::open(py, &path, options, &keywords)?;
            return Ok(Db { inner });
        }
        if let Some(name) = keywords.first_given() {
            return Err(InvalidArgumentError::new_err(format!(
                "{name} is an option of a database opened for writing: pass writable=True"
            )));
        }
        let db = py
            .detach(|| RustDb::open(&path, options))
            .map_err(|e| open_error(&path, e))?;
        Ok(Db::opened(db))
    }

    /// What LevelDB's `RepairDB` would recover from the directory `path` (every table and
    /// log, the MANIFEST ignored, the newest version of each key winning), read without
    /// writing anything. `stats()["skipped"]` lists the files that could not be read.
    #[classmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, *, verify_checksums = true, cache_bytes = 8 << 20, max_open_tables = None, table_memory = None, profile = "auto"))]
    fn salvage(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: FsPath,
        verify_checksums: bool,
        cache_bytes: u64,
        max_open_tables: Option<usize>,
        table_memory: Option<u64>,
        profile: &str,
    ) -> PyResult<Db> {
        let path = path.0;
        let options = crate::db_options::options(
            verify_checksums,
            cache_bytes,
            max_open_tables,
            table_memory,
            profile,
        )?;
        let db = py
            .detach(|| RustDb::salvage(&path, options))
            .map_err(|e| open_error(&path, e))?;
        Ok(Db::opened(db))
    }

    /// The value of `key`, or `default` (`None`) if it is absent or deleted.
    /// `verify_checksums` and `fill_cache` are plyvel's read options, taken and not needed:
    /// blocks are checked as the database was opened to check them (`verify_checksums`,
    /// default on), and read through its block cache.
    #[pyo3(signature = (key, default = None, *, verify_checksums = None, fill_cache = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let _ = (verify_checksums, fill_cache);
        self.view()?.get_or(py, key, default)
    }

    /// The values of `keys`, in order, `None` for each absent key.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.view()?.get_many(py, keys)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.view()?.getitem(py, key)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.view()?.contains(py, key)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        iterate(py, self.view()?.entries(None, None, Mode::Items)?)
    }

    /// The `(key, value)` pairs with `start <= key < stop`, in key order.
    #[pyo3(signature = (start = None, stop = None))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Entries> {
        self.view()?.range_items(start, stop)
    }

    /// plyvel's `iterator()`: the entries from `start` to `stop` (`include_start`,
    /// `include_stop` say whether each bound is in), or those whose key starts with
    /// `prefix`; from the last down with `reverse`; `(key, value)` pairs, keys, values, or
    /// `None` per entry, as `include_key` and `include_value` say.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, reverse = false, start = None, stop = None, include_start = true, include_stop = false, prefix = None, include_key = true, include_value = true))]
    fn iterator(
        &self,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
    ) -> PyResult<Entries> {
        self.view()?.iterator(&IteratorKeywords {
            reverse,
            start,
            stop,
            include_start,
            include_stop,
            prefix,
            include_key,
            include_value,
        })
    }

    /// plyvel's iterator that also moves back and seeks (`leveltable.Cursor`): the same
    /// keywords as `iterator()` (`verify_checksums` and `fill_cache` as for `get`). It
    /// reads the database as it is when made.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, reverse = false, start = None, stop = None, include_start = true, include_stop = false, prefix = None, include_key = true, include_value = true, verify_checksums = None, fill_cache = None))]
    fn cursor(
        &self,
        reverse: bool,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&Bound<'_, PyAny>>,
        include_key: bool,
        include_value: bool,
        verify_checksums: Option<bool>,
        fill_cache: Option<bool>,
    ) -> PyResult<Cursor> {
        let _ = (verify_checksums, fill_cache);
        self.view()?.cursor(&IteratorKeywords {
            reverse,
            start,
            stop,
            include_start,
            include_stop,
            prefix,
            include_key,
            include_value,
        })
    }

    /// The value of LevelDB's property `name` (`bytes`) as `bytes`, `None` for a name
    /// LevelDB does not know: `leveldb.num-files-at-level<N>`, `leveldb.stats`,
    /// `leveldb.sstables`, `leveldb.approximate-memory-usage` (a database open for
    /// writing).
    fn get_property<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let name = bytes_of(name, "name")?;
        let db = db_write::writable(&self.inner, "get_property")?;
        let Ok(name) = std::str::from_utf8(&name) else {
            return Ok(None);
        };
        Ok(db.property(name).map(|v| PyBytes::new(py, v.as_bytes())))
    }

    /// The approximate bytes of table files holding the keys from `start` to `stop`
    /// (`stop` excluded; LevelDB's `GetApproximateSizes`, the logs not counted).
    fn approximate_size(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let start = bytes_of(start, "start")?;
        let stop = bytes_of(stop, "stop")?;
        match &self.inner {
            Source::Read(db) => {
                let db = db.get(THE_DATABASE)?;
                py.detach(|| db.approximate_size(&start, &stop))
                    .map_err(|e| db_error(db.path(), e))
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                py.detach(|| db.approximate_size(&start, &stop))
                    .map_err(|e| db_error(db.path(), e))
            }
        }
    }

    /// `approximate_size` of each `(start, stop)` pair given (any iterable of two), as a
    /// list.
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(
        &self,
        py: Python<'_>,
        ranges: &Bound<'_, pyo3::types::PyTuple>,
    ) -> PyResult<Vec<u64>> {
        let mut sizes = Vec::with_capacity(ranges.len());
        for range in ranges.iter() {
            // Unpacked as Python unpacks `start, stop = range`.
            let pair: Vec<Bound<'_, PyAny>> = range.try_iter()?.collect::<PyResult<_>>()?;
            let [start, stop] = <[_; 2]>::try_from(pair).map_err(|pair| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "a range is a start and a stop: {} items given",
                    pair.len()
                ))
            })?;
            sizes.push(self.approximate_size(py, &start, &stop)?);
        }
        self.inner.check_open()?;
        Ok(sizes)
    }

    /// The entries with `start <= key < stop` (or starting with `prefix`) in key order, as
    /// Arrow record batches of `key` and `value` (`binary`), `batch_rows` rows each at most:
    /// an object with `__arrow_c_stream__` (pyarrow, Polars, DuckDB). It reads the database
    /// as it is when called, or at `snapshot` (one of its snapshots); `versions=True`: every
    /// stored version, with `sequence` and `state` columns. A bulk read, it adds none of the
    /// blocks it reads to the block cache.
    #[pyo3(signature = (start = None, stop = None, *, prefix = None, batch_rows = crate::arrow_stream::BATCH_ROWS, snapshot = None, versions = false))]
    fn scan_arrow(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        batch_rows: usize,
        snapshot: Option<&Bound<'_, Snapshot>>,
        versions: bool,
    ) -> PyResult<ArrowStream> {
        match snapshot {
            Some(snapshot) => {
                let view = &snapshot.get().view;
                if !view.source.same_as(&self.inner) {
                    return Err(InvalidArgumentError::new_err(
                        "snapshot is a snapshot of another database",
                    ));
                }
                view.arrow(start, stop, prefix, batch_rows, versions)
            }
            None => View::arrow(&self.view()?, start, stop, prefix, batch_rows, versions),
        }
    }

    /// The live keys in order.
    fn keys(&self) -> PyResult<Entries> {
        self.view()?.entries(None, None, Mode::Keys)
    }

    /// The live values in key order.
    fn values(&self) -> PyResult<Entries> {
        self.view()?.entries(None, None, Mode::Values)
    }

    /// The live `(key, value)` pairs in key order.
    fn items(&self) -> PyResult<Entries> {
        self.view()?.entries(None, None, Mode::Items)
    }

    /// A view of the database as it is now (its newest sequence number), or at an older
    /// `sequence` (read-only databases). A writable database's compactions keep what a
    /// snapshot sees until the snapshot is released (`release()`, or dropped).
    #[pyo3(signature = (sequence = None))]
    fn snapshot(&self, sequence: Option<u64>) -> PyResult<Snapshot> {
        let at = match &self.inner {
            Source::Read(db) => {
                let db = db.get(THE_DATABASE)?;
                let newest = db.snapshot();
                Pin::Read(sequence.unwrap_or(newest).min(newest), db)
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                if sequence.is_some() {
                    return Err(InvalidArgumentError::new_err(
                        "snapshot(sequence=...) reads a database opened read-only: a \
                         database open for writing keeps only what its snapshots see",
                    ));
                }
                Pin::Writable(db.snapshot())
            }
        };
        Ok(Snapshot::new(View {
            source: self.inner.clone(),
            at: At::Snapshot(Closable::new(at)),
        }))
    }

    /// Sets `key` to `value` (database opened with `writable=True`); `sync=True` syncs the
    /// log to disk before returning. The GIL is released while writing.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        db_write::put(py, &self.inner, key, value, sync)
    }

    /// Deletes `key` (nothing happens if it is absent).
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        db_write::delete(py, &self.inner, key, sync)
    }

    /// A batch of puts and deletes applied atomically: by `write()`, or at the end of a
    /// `with` block that raised nothing (dropped if it raised, unless
    /// `transaction=False`).
    #[pyo3(signature = (*, sync = false, transaction = true))]
    fn write_batch(&self, sync: bool, transaction: bool) -> PyResult<WriteBatch> {
        WriteBatch::new(&self.inner, sync, transaction)
    }

    /// Compacts the keys from `start` to `stop` (both included; `None`: unbounded) down
    /// the levels, as LevelDB's `CompactRange`: deleted and overwritten versions no
    /// snapshot sees are dropped. The GIL is released meanwhile.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        db_write::compact_range(py, &self.inner, start, stop)
    }

    /// Whether the database is open for writing.
    #[getter]
    fn writable(&self) -> bool {
        matches!(self.inner, Source::Write(_))
    }

    /// Whether the database was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.check_open().is_err()
    }

    /// The files per level (number, size, smallest and largest key), the logs replayed and
    /// the bytes dropped from them, the last sequence, the comparator and the block cache's
    /// size in bytes (`block_cache_bytes`, 0 without one). For a database
    /// open for writing: the path, the last sequence, the files per level and the
    /// compactions run since the open.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = match &self.inner {
            Source::Write(db) => return db_write::stats(py, &*db.get(THE_DATABASE)?),
            Source::Read(db) => db.get(THE_DATABASE)?,
        };
        let p = db.properties();
        let d = PyDict::new(py);
        d.set_item("path", db.path().display().to_string())?;
        d.set_item("comparator", &p.comparator)?;
        d.set_item("manifest", p.manifest.clone())?;
        d.set_item("last_sequence", p.last_sequence)?;
        d.set_item("log_number", p.log_number)?;
        d.set_item("next_file_number", p.next_file_number)?;
        d.set_item("block_cache_bytes", db.block_cache_bytes())?;
        let levels = PyList::empty(py);
        for level in &p.levels {
            let files = PyList::empty(py);
            for t in level {
                files.append(table_info(py, t)?)?;
            }
            levels.append(files)?;
        }
        d.set_item("levels", levels)?;
        let logs = PyList::empty(py);
        for l in &p.logs {
            let log = PyDict::new(py);
            log.set_item("number", l.number)?;
            log.set_item("size", l.size)?;
            log.set_item("records", l.records)?;
            log.set_item("versions", l.versions)?;
            logs.append(log)?;
        }
        d.set_item("logs", logs)?;
        d.set_item("memtable_versions", p.memtable_versions)?;
        d.set_item("log_bytes", p.log_bytes)?;
        d.set_item("log_bytes_dropped", p.log_bytes_dropped)?;
        d.set_item("skipped", p.skipped.clone())?;
        Ok(d)
    }

    /// Reads and checks every table and log record; returns what was checked. Raises
    /// `CorruptionError` at the first problem. A database open for writing checks the
    /// tables of its current version (its own log is not counted).
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match &self.inner {
            Source::Read(db) => {
                let db = db.get(THE_DATABASE)?;
                py.detach(|| db.verify())
                    .map_err(|e| db_error(db.path(), e))?
            }
            Source::Write(db) => {
                let db = db.get(THE_DATABASE)?;
                py.detach(|| db.verify())
                    .map_err(|e| db_error(db.path(), e))?
            }
        };
        let d = PyDict::new(py);
        d.set_item("tables", s.tables)?;
        d.set_item("table_entries", s.table_entries)?;
        d.set_item("table_bytes", s.table_bytes)?;
        d.set_item("logs", s.logs)?;
        d.set_item("log_records", s.log_records)?;
        Ok(d)
    }

    /// Brings the view up to what another process (the database's writer) has committed
    /// since the open or the last refresh, reading only what it added; `True` if anything
    /// changed. Snapshots and iterators made before keep their view. Read-only databases.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        crate::db_follow::refresh(py, &self.inner)
    }

    /// The change feed: each write batch the writer commits from sequence `from_seq` on
    /// (by default, those after this view), as `Follow` describes. Read-only databases.
    /// It waits on an inotify watch of the directory (Linux), looking at least every
    /// `poll_ms`; elsewhere, or with `poll_only=True`, it looks every `poll_ms`.
    #[pyo3(signature = (from_seq = None, *, poll_ms = 10, poll_only = false))]
    fn follow(
        &self,
        from_seq: Option<u64>,
        poll_ms: u64,
        poll_only: bool,
    ) -> PyResult<crate::db_follow::Follow> {
        crate::db_follow::follow(&self.inner, from_seq, poll_ms, poll_only)
    }

    /// Closes the database: its tables are closed and their memory freed once no read is
    /// in progress. Its snapshots and iterators raise `ClosedError` from then on, as the
    /// `Db` does (a `for` loop over the `Db` itself too, at its next entry). Closing twice
    /// does nothing.
    ///
    /// A database open for writing waits for its background work and releases its lock
    /// (at once, unless another thread is still reading or writing through it: then when
    /// that ends); its unflushed writes are in its log, which the next open reads.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match &self.inner {
            Source::Read(db) => {
                db.close();
                Ok(())
            }
            Source::Write(db) => db_write::close(py, db),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let path = match &self.inner {
            Source::Read(db) => db.get(THE_DATABASE).map(|db| db.path().to_owned()),
            Source::Write(db) => db.get(THE_DATABASE).map(|db| db.path().to_owned()),
        };
        match path {
            Ok(path) if self.writable() => format!(
                "leveltable.Db({:?}, writable=True)",
                path.display().to_string()
            ),
            Ok(path) => format!("leveltable.Db({:?})", path.display().to_string()),
            Err(_) => "leveltable.Db(<closed>)".to_owned(),
        }
    }
}
