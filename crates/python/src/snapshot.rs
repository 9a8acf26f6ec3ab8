//! `leveltable.Snapshot`: a database as it was at one sequence number.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::arrow_stream::ArrowStream;
use crate::cursor::Cursor;
use crate::db_view::View;
use crate::entries::{Entries, Mode, iterate};
use crate::iterator_keywords::IteratorKeywords;

/// A database as it was at one sequence number: later writes are invisible to it.
#[pyclass(frozen, module = "leveltable")]
pub struct Snapshot {
    pub(crate) view: View,
}

impl Snapshot {
    pub(crate) fn new(view: View) -> Snapshot {
        Snapshot { view }
    }
}

#[pymethods]
impl Snapshot {
    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self) -> PyResult<u64> {
        self.view.sequence()
    }

    /// Releases the snapshot (plyvel's name): a database open for writing no longer keeps
    /// what only it sees, and its reads raise `ClosedError` from then on. Its iterators
    /// made before read on. Releasing twice does nothing.
    fn release(&self) {
        self.view.release();
    }

    /// The same as `release()`.
    fn close(&self) {
        self.view.release();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases the snapshot.
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.view.release();
        false
    }

    /// plyvel's iterator that also moves back and seeks (`leveltable.Cursor`): the same
    /// keywords as `iterator()` (`verify_checksums` and `fill_cache` as for `get`). It
    /// reads at the snapshot, and goes on after the snapshot is released.
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
        self.view.cursor(&IteratorKeywords {
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

    /// The value of `key` at the snapshot, or `default` (`None`); `verify_checksums` and
    /// `fill_cache` as for `Db.get`.
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
        self.view.get_or(py, key, default)
    }

    /// The entries with `start <= key < stop` (or those starting with `prefix`) in key
    /// order, as Arrow record batches of `key` and `value` (`binary`) columns, at most
    /// `batch_rows` rows each: an object with `__arrow_c_stream__`, for
    /// `pyarrow.RecordBatchReader.from_stream`, `polars.from_arrow` or DuckDB. It reads
    /// at the snapshot.
    #[pyo3(signature = (start = None, stop = None, *, prefix = None, batch_rows = crate::arrow_stream::BATCH_ROWS))]
    fn scan_arrow(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        batch_rows: usize,
    ) -> PyResult<ArrowStream> {
        self.view.arrow(start, stop, prefix, batch_rows, false)
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
        self.view.range_items(start, stop)
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
        self.view.iterator(&IteratorKeywords {
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
}
