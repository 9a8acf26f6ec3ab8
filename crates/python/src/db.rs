//! `leveltable.Db`: a whole LevelDB database, read-only, and its snapshots.

use std::ops::Bound as Edge;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_db::filename::{FileType, parse_file_name};
use leveltable_db::{Db as RustDb, DbIter, DbOptions};
use leveltable_table::Cache;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyType};

use crate::bytes::bytes_of;
use crate::closable::Closable;
use crate::entries::{Chunk, ChunkSource, Entries, Mode, iterate};
use crate::errors::{Error, InvalidArgumentError, db_error, os_error};
use crate::fs_path::FsPath;

/// What the database's iterators and snapshots say once it is closed.
const THE_DATABASE: &str = "the database";

/// A database's entries, read through one iterator kept between chunks.
struct DbChunks {
    source: Arc<Closable<RustDb>>,
    path: PathBuf,
    iter: DbIter,
}

impl ChunkSource for DbChunks {
    fn fill(&mut self, chunk: &mut Chunk) -> PyResult<()> {
        self.source.get(THE_DATABASE)?;
        // Entries lent by the iterator, copied once, into the chunk.
        while let Some(entry) = self.iter.next_entry() {
            let (k, v) = entry.map_err(|e| db_error(&self.path, e))?;
            chunk.push(k, v);
            if chunk.full() {
                break;
            }
        }
        Ok(())
    }
}

/// An optional bytes-like bound.
fn bound(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    obj.map(|o| bytes_of(o, what).map(|b| b.into_owned()))
        .transpose()
}

/// Reads of one database at one sequence number: the methods `Db` and `Snapshot` share.
/// Each read takes the database from the `Db`'s own hold on it, so once the `Db` is
/// closed, its snapshots and iterators raise `ClosedError` as the `Db` does.
struct View {
    source: Arc<Closable<RustDb>>,
    sequence: u64,
}

impl View {
    /// The database, or `ClosedError`.
    fn db(&self) -> PyResult<Arc<RustDb>> {
        self.source.get(THE_DATABASE)
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, "key")?;
        let db = self.db()?;
        let found = py
            .detach(|| db.get_at(&key, self.sequence))
            .map_err(|e| db_error(db.path(), e))?;
        Ok(found.map(|v| PyBytes::new(py, &v)))
    }

    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let keys = keys
            .try_iter()?
            .map(|k| bytes_of(&k?, "key").map(|b| b.into_owned()))
            .collect::<PyResult<Vec<Vec<u8>>>>()?;
        let db = self.db()?;
        let values = py
            .detach(|| db.get_many_at(&keys, self.sequence))
            .map_err(|e| db_error(db.path(), e))?;
        PyList::new(
            py,
            values.into_iter().map(|v| v.map(|v| PyBytes::new(py, &v))),
        )
    }

    fn getitem<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.get(py, key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    fn contains(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key)?.is_some())
    }

    fn entries(
        &self,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        mode: Mode,
    ) -> PyResult<Entries> {
        let db = self.db()?;
        let start = start.map_or(Edge::Unbounded, Edge::Included);
        let stop = stop.map_or(Edge::Unbounded, Edge::Excluded);
        let iter = db.range_at::<[u8]>((as_ref(&start), as_ref(&stop)), self.sequence);
        let source = Arc::clone(&self.source);
        let entries = Entries::new(
            DbChunks {
                source: Arc::clone(&self.source),
                path: db.path().to_owned(),
                iter,
            },
            mode,
        );
        Ok(entries.checked(move || source.get(THE_DATABASE).map(drop)))
    }
}

fn as_ref(b: &Edge<Vec<u8>>) -> Edge<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// A LevelDB database directory, opened read-only: nothing in it is created, changed,
/// locked or deleted, so a database another process holds open can be read.
///
/// `Db(path, *, verify_checksums=True, cache_bytes=8388608, max_open_tables=990,
/// table_memory=536870912, profile="auto")`; `path` a `str`, `bytes` or path-like;
/// `table_memory` the most bytes the open tables may keep in memory (their index and filter
/// blocks), past which tables are closed and reopened when needed; `profile` as for `Table`
/// (Minecraft Bedrock worlds read as they are). Reads see the newest writes, those still in
/// the log included; `snapshot()` pins the current view.
#[pyclass(frozen, module = "leveltable")]
pub struct Db {
    inner: Arc<Closable<RustDb>>,
}

impl Db {
    fn view(&self) -> PyResult<View> {
        let db = self.inner.get(THE_DATABASE)?;
        let sequence = db.snapshot();
        Ok(View {
            source: Arc::clone(&self.inner),
            sequence,
        })
    }

    fn opened(db: RustDb) -> Db {
        Db {
            inner: Arc::new(Closable::new(db)),
        }
    }
}

fn options(
    verify_checksums: bool,
    cache_bytes: u64,
    max_open_tables: Option<usize>,
    table_memory: Option<u64>,
    profile: &str,
) -> PyResult<DbOptions> {
    // The comparator the MANIFEST names: bytewise, or Chromium's IndexedDB `idb_cmp1`.
    let mut options = DbOptions::default()
        .comparators(leveltable_chromium::comparators())
        .verify_checksums(verify_checksums)
        .profile(crate::builder::profile_named(profile)?);
    if let Some(bytes) = table_memory {
        if bytes == 0 {
            return Err(InvalidArgumentError::new_err(
                "table_memory must be at least 1 byte",
            ));
        }
        options = options.table_memory_budget(bytes);
    }
    if cache_bytes > 0 {
        options = options.block_cache(Cache::shared(cache_bytes));
    }
    if let Some(tables) = max_open_tables {
        options = options.max_open_tables(tables.max(1));
    }
    Ok(options)
}

#[pymethods]
impl Db {
    #[new]
    #[pyo3(signature = (path, *, verify_checksums = true, cache_bytes = 8 << 20, max_open_tables = None, table_memory = None, profile = "auto"))]
    fn new(
        py: Python<'_>,
        path: FsPath,
        verify_checksums: bool,
        cache_bytes: u64,
        max_open_tables: Option<usize>,
        table_memory: Option<u64>,
        profile: &str,
    ) -> PyResult<Self> {
        let path = path.0;
        let options = options(
            verify_checksums,
            cache_bytes,
            max_open_tables,
            table_memory,
            profile,
        )?;
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
        let options = options(
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

    /// The value of `key`, or `None` if it is absent or deleted.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.view()?.get(py, key)
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
        let (start, stop) = (bound(start, "start")?, bound(stop, "stop")?);
        self.view()?.entries(start, stop, Mode::Items)
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
    /// `sequence`.
    #[pyo3(signature = (sequence = None))]
    fn snapshot(&self, sequence: Option<u64>) -> PyResult<Snapshot> {
        let view = self.view()?;
        let sequence = sequence.unwrap_or(view.sequence).min(view.sequence);
        Ok(Snapshot {
            view: View {
                source: view.source,
                sequence,
            },
        })
    }

    /// The files per level (number, size, smallest and largest key), the logs replayed and
    /// the bytes dropped from them, the last sequence and the comparator.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.view()?.db()?;
        let p = db.properties();
        let d = PyDict::new(py);
        d.set_item("path", db.path().display().to_string())?;
        d.set_item("comparator", &p.comparator)?;
        d.set_item("manifest", p.manifest.clone())?;
        d.set_item("last_sequence", p.last_sequence)?;
        d.set_item("log_number", p.log_number)?;
        d.set_item("next_file_number", p.next_file_number)?;
        let levels = PyList::empty(py);
        for level in &p.levels {
            let files = PyList::empty(py);
            for t in level {
                let f = PyDict::new(py);
                f.set_item("number", t.number)?;
                f.set_item("size", t.size)?;
                f.set_item("smallest", PyBytes::new(py, user_key(&t.smallest)))?;
                f.set_item("largest", PyBytes::new(py, user_key(&t.largest)))?;
                files.append(f)?;
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
    /// `CorruptionError` at the first problem.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.view()?.db()?;
        let s = py
            .detach(|| db.verify())
            .map_err(|e| db_error(db.path(), e))?;
        let d = PyDict::new(py);
        d.set_item("tables", s.tables)?;
        d.set_item("table_entries", s.table_entries)?;
        d.set_item("table_bytes", s.table_bytes)?;
        d.set_item("logs", s.logs)?;
        d.set_item("log_records", s.log_records)?;
        Ok(d)
    }

    /// Closes the database: its tables are closed and their memory freed once no read is
    /// in progress. Its snapshots and iterators raise `ClosedError` from then on, as the
    /// `Db` does (a `for` loop over the `Db` itself first yields the entries it has
    /// already fetched, at most 1024). Closing twice does nothing.
    fn close(&self) {
        self.inner.close();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        match self.view() {
            Ok(v) => match v.db() {
                Ok(db) => format!("leveltable.Db({:?})", db.path().display().to_string()),
                Err(_) => "leveltable.Db(<closed>)".to_owned(),
            },
            Err(_) => "leveltable.Db(<closed>)".to_owned(),
        }
    }
}

/// The error for a database that does not open: a directory that is not there is
/// `FileNotFoundError` (a file, `NotADirectoryError`), and one without CURRENT or any other
/// file of a database is `leveltable.Error` saying it is not a database; the rest as
/// [`db_error`] says.
pub(crate) fn open_error(path: &Path, e: leveltable_db::Error) -> PyErr {
    let no_current = matches!(
        &e,
        leveltable_db::Error::MissingFile { file, .. } if file.as_os_str() == "CURRENT"
    );
    if !no_current {
        return db_error(path, e);
    }
    match std::fs::metadata(path) {
        Err(io) => return os_error(path, &io),
        Ok(m) if !m.is_dir() => {
            let io = std::io::Error::from_raw_os_error(20); // ENOTDIR
            return os_error(path, &io);
        }
        Ok(_) => {}
    }
    let holds_database_files = std::fs::read_dir(path).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry.file_name().to_str().is_some_and(|name| {
                matches!(
                    parse_file_name(name),
                    Some(FileType::Manifest(_) | FileType::Table(_) | FileType::Log(_))
                )
            })
        })
    });
    if holds_database_files {
        return db_error(path, e);
    }
    Error::new_err(format!(
        "{}: not a LevelDB database: no CURRENT file",
        path.display()
    ))
}

/// The user key of an internal key (the key less its 8-byte tag).
fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(8)]
}

/// A database as it was at one sequence number: later writes are invisible to it.
#[pyclass(frozen, module = "leveltable")]
pub struct Snapshot {
    view: View,
}

#[pymethods]
impl Snapshot {
    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self) -> u64 {
        self.view.sequence
    }

    /// The value of `key` at the snapshot, or `None`.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.view.get(py, key)
    }

    /// The values of `keys` at the snapshot, in order.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.view.get_many(py, keys)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.view.getitem(py, key)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.view.contains(py, key)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        iterate(py, self.view.entries(None, None, Mode::Items)?)
    }

    /// The `(key, value)` pairs with `start <= key < stop` at the snapshot, in key order.
    #[pyo3(signature = (start = None, stop = None))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Entries> {
        let (start, stop) = (bound(start, "start")?, bound(stop, "stop")?);
        self.view.entries(start, stop, Mode::Items)
    }
}
