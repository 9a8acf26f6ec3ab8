//! `leveltable.Table`: one table file, read-only.

use std::ops::Bound as RangeBound;
use std::sync::Arc;

use leveltable_table::{Cache, ReadOptions, Table as RustTable};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::arrow_stream::ArrowStream;
use crate::bytes::{bytes_of, hex};
use crate::closable::Closable;
use crate::entries::{Chunk, ChunkSource, Entries, Mode, fill_from, iterate};
use crate::errors::{CorruptionError, os_error, table_error};
use crate::fs_path::FsPath;
use crate::iterator_keywords::{bound, scan_bounds};
use crate::open_table::OpenTable;
use crate::table_arrow::TableScan;

/// A table's entries in `(start, stop)`: each chunk seeks past the last key handed out (a
/// table's cursors borrow the table, so none is kept between chunks).
pub struct TableChunks {
    table: Arc<OpenTable>,
    start: RangeBound<Vec<u8>>,
    stop: RangeBound<Vec<u8>>,
}

impl TableChunks {
    /// The entries of `table` in `(start, stop)`.
    pub fn new(
        table: Arc<OpenTable>,
        start: RangeBound<Vec<u8>>,
        stop: RangeBound<Vec<u8>>,
    ) -> Self {
        TableChunks { table, start, stop }
    }
}

impl ChunkSource for TableChunks {
    fn fill(&mut self, chunk: &mut Chunk) -> PyResult<()> {
        let open = &self.table;
        let cmp = open.table.comparator();
        let range = open.table.range((self.start.clone(), self.stop.clone()));
        // Each chunk restarts by seeking past the last key handed out, which only moves
        // forward if the table's keys are in the order it is read with. A table that is not
        // (a database's table read as a plain table, or a damaged one) would repeat
        // entries forever: its first key out of order is an error instead.
        let mut previous = match &self.start {
            RangeBound::Excluded(k) => Some(k.clone()),
            _ => None,
        };
        let checked = range.map(|entry| {
            let (k, v) = entry.map_err(|e| table_error(&open.path, e))?;
            if let Some(p) = &previous {
                if cmp.compare(p, &k) != std::cmp::Ordering::Less {
                    return Err(CorruptionError::new_err(format!(
                        "{}: keys out of order for comparator {}: {} after {} (a table \
                         of a LevelDB database holds internal keys: open the database \
                         with leveltable.Db)",
                        open.path.display(),
                        cmp.name(),
                        hex(&k),
                        hex(p),
                    )));
                }
            }
            previous = Some(k.clone());
            Ok((k, v))
        });
        fill_from(chunk, checked, |e| e)?;
        if let Some(last) = chunk.last_key() {
            self.start = RangeBound::Excluded(last.to_vec());
        }
        Ok(())
    }
}

/// A LevelDB table file (`.ldb`, `.sst`), read-only.
///
/// `Table(path, *, verify_checksums=True, cache_bytes=0, profile="auto")` opens the table: it
/// reads the footer, the index and one filter block. `verify_checksums` checks each block's
/// CRC as it is read; `cache_bytes` > 0 keeps recently read blocks in a cache of that many
/// bytes; `profile` says which compression each block type byte names ("auto" reads
/// Google's and Mojang's LevelDB alike, "leveldb", "mojang").
/// Lookups and scans release the GIL, so threads can read one table in parallel.
#[pyclass(frozen, module = "leveltable")]
pub struct Table {
    inner: Closable<OpenTable>,
}

impl Table {
    /// The open table, or `ClosedError`.
    fn open_table(&self) -> PyResult<Arc<OpenTable>> {
        self.inner.get("the table")
    }
}

#[pymethods]
impl Table {
    #[new]
    #[pyo3(signature = (path, *, verify_checksums = true, cache_bytes = 0, profile = "auto"))]
    fn new(
        py: Python<'_>,
        path: FsPath,
        verify_checksums: bool,
        cache_bytes: u64,
        profile: &str,
    ) -> PyResult<Self> {
        let path = path.0;
        let profile = crate::builder::profile_named(profile)?;
        let opened = py.detach(|| -> PyResult<OpenTable> {
            let (file, _) =
                leveltable_db::storage::open_regular(&path).map_err(|e| os_error(&path, &e))?;
            let mut options = ReadOptions::default()
                .known_filter_policies()
                .verify_checksums(verify_checksums)
                .profile(profile);
            if cache_bytes > 0 {
                options = options.block_cache(Cache::shared(cache_bytes));
            }
            let table = RustTable::open(file, options).map_err(|e| table_error(&path, e))?;
            Ok(OpenTable { path, table })
        })?;
        Ok(Table {
            inner: Closable::new(opened),
        })
    }

    /// The value stored under `key`, or `None`.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let open = self.open_table()?;
        let key = bytes_of(key, "key")?;
        let found = py
            .detach(|| open.table.get(&key))
            .map_err(|e| table_error(&open.path, e))?;
        Ok(found.map(|v| PyBytes::new(py, &v)))
    }

    /// The values of `keys`, in order, `None` for each absent key: one crossing into Rust for
    /// the whole batch.
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let open = self.open_table()?;
        let keys = keys
            .try_iter()?
            .map(|k| bytes_of(&k?, "key").map(|b| b.into_owned()))
            .collect::<PyResult<Vec<Vec<u8>>>>()?;
        let values = py
            .detach(|| {
                keys.iter()
                    .map(|k| open.table.get(k))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| table_error(&open.path, e))?;
        let items = values.into_iter().map(|v| v.map(|v| PyBytes::new(py, &v)));
        PyList::new(py, items)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.get(py, key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let open = self.open_table()?;
        let key = bytes_of(key, "key")?;
        py.detach(|| open.table.get_with(&key, |_| ()))
            .map(|found| found.is_some())
            .map_err(|e| table_error(&open.path, e))
    }

    /// `(key, value)` pairs in key order.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        iterate(py, self.range_of(None, None, Mode::Items)?)
    }

    /// The `(key, value)` pairs with `start <= key < stop` in key order; `None` leaves a side
    /// open.
    #[pyo3(signature = (start = None, stop = None))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Entries> {
        let (start, stop) = (bound(start, "start")?, bound(stop, "stop")?);
        self.range_of(start, stop, Mode::Items)
    }

    /// The entries with `start <= key < stop` (or starting with `prefix`) as Arrow record
    /// batches of `key` and `value` (`binary`), `batch_rows` rows each at most: an object
    /// with `__arrow_c_stream__`, as `Db.scan_arrow()` returns.
    #[pyo3(signature = (start = None, stop = None, *, prefix = None, batch_rows = crate::arrow_stream::BATCH_ROWS))]
    fn scan_arrow(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        batch_rows: usize,
    ) -> PyResult<ArrowStream> {
        let (start, stop) = scan_bounds(start, stop, prefix)?;
        let table = self.open_table()?;
        ArrowStream::of_table(TableScan { table, start, stop }, batch_rows)
    }

    /// The keys in order.
    fn keys(&self) -> PyResult<Entries> {
        self.range_of(None, None, Mode::Keys)
    }

    /// The values in key order.
    fn values(&self) -> PyResult<Entries> {
        self.range_of(None, None, Mode::Values)
    }

    /// `(key, value)` pairs in key order.
    fn items(&self) -> PyResult<Entries> {
        self.range_of(None, None, Mode::Items)
    }

    /// What the table holds and what reading it has cost so far: sizes, blocks, filters, and
    /// the read counters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let open = self.open_table()?;
        let p = open.table.properties();
        let c = open.table.counters();
        let d = PyDict::new(py);
        d.set_item("path", open.path.display().to_string())?;
        d.set_item("file_size", p.file_size)?;
        d.set_item("data_blocks", p.data_blocks)?;
        d.set_item("data_size", p.data_size)?;
        d.set_item("index_size", p.index_size)?;
        d.set_item("metaindex_size", p.metaindex_size)?;
        d.set_item("filter_policy", p.filter_policy.clone())?;
        d.set_item("filter_size", p.filter_size)?;
        let filters: Vec<String> = p.filters.iter().map(|f| f.policy_name.clone()).collect();
        d.set_item("filters", filters)?;
        d.set_item("data_blocks_read", c.data_blocks_read)?;
        d.set_item("data_bytes_read", c.data_bytes_read)?;
        d.set_item("cache_hits", c.cache_hits)?;
        d.set_item("filter_checks", c.filter_checks)?;
        d.set_item("filter_negatives", c.filter_negatives)?;
        Ok(d)
    }

    /// Reads and checks every block (checksums, encoding, key order, filters); returns what
    /// was checked. Raises `CorruptionError` at the first problem.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let open = self.open_table()?;
        let summary = py
            .detach(|| open.table.verify())
            .map_err(|e| table_error(&open.path, e))?;
        let d = PyDict::new(py);
        d.set_item("entries", summary.entries)?;
        d.set_item("data_blocks", summary.data_blocks)?;
        d.set_item("filter_blocks", summary.filter_blocks)?;
        d.set_item("bytes_read", summary.bytes_read)?;
        Ok(d)
    }

    /// Closes the file. Iterators already made keep it open until they end.
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
        match self.open_table() {
            Ok(open) => format!("leveltable.Table({:?})", open.path.display().to_string()),
            Err(_) => "leveltable.Table(<closed>)".to_owned(),
        }
    }
}

impl Table {
    fn range_of(
        &self,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        mode: Mode,
    ) -> PyResult<Entries> {
        let open = self.open_table()?;
        let start = start.map_or(RangeBound::Unbounded, RangeBound::Included);
        let stop = stop.map_or(RangeBound::Unbounded, RangeBound::Excluded);
        Ok(Entries::new(TableChunks::new(open, start, stop), mode))
    }
}
