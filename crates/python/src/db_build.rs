//! Bulk-building databases from Python: `build_db`, and for distributed builds `build_part`
//! (on each worker) and `commit_db` (on the driver).

use std::path::PathBuf;

use leveltable_db::{
    BulkOptions, CommitSummary, DbBuilder, Duplicates, ExternalSorter, Part as RustPart,
    PartBuilder, SortedFeed, commit,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::arrow::BinaryColumn;
use crate::builder::TableKeywords;
use crate::bytes::bytes_of;
use crate::errors::{InvalidArgumentError, db_error};
use crate::fs_path::FsPath;

/// Entries read from Python are handed to Rust in batches of about this many bytes, with the
/// GIL released.
const BATCH_BYTES: usize = 1 << 20;

/// Default memory budget of `sort=True`: the entries held in memory before a run is spilled.
const DEFAULT_SORT_MEMORY: u64 = 256 << 20;

/// The bulk options from Python keywords.
fn duplicates(dedup: Option<&str>) -> PyResult<Duplicates> {
    match dedup {
        None => Ok(Duplicates::Error),
        Some("last") => Ok(Duplicates::KeepLast),
        Some(other) => Err(InvalidArgumentError::new_err(format!(
            "dedup must be None or \"last\", not {other:?}"
        ))),
    }
}

/// Reads `(key, value)` pairs from a Python iterable and hands them to `sink` in batches,
/// with the GIL released while `sink` runs.
fn feed(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    mut sink: impl FnMut(&[(Vec<u8>, Vec<u8>)]) -> leveltable_db::Result<()> + Send,
    path: &std::path::Path,
) -> PyResult<()> {
    let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut bytes = 0usize;
    for item in items.try_iter()? {
        let item = item?;
        let pair = item.cast::<PyTuple>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("items must be (key, value) tuples")
        })?;
        if pair.len() != 2 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "items must be (key, value) tuples",
            ));
        }
        let key = bytes_of(&pair.get_item(0)?, "key")?.into_owned();
        let value = bytes_of(&pair.get_item(1)?, "value")?.into_owned();
        bytes = bytes.saturating_add(key.len() + value.len());
        batch.push((key, value));
        if bytes >= BATCH_BYTES {
            py.detach(|| sink(&batch)).map_err(|e| db_error(path, e))?;
            batch.clear();
            bytes = 0;
        }
    }
    py.detach(|| sink(&batch)).map_err(|e| db_error(path, e))
}

fn commit_dict<'py>(py: Python<'py>, s: &CommitSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries", s.entries)?;
    d.set_item("tables", s.tables)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("parts", s.parts)?;
    Ok(d)
}

/// Builds a LevelDB database at `path` (a new or empty directory) from `items`, an
/// iterable of `(key, value)` pairs in strictly increasing key order, or in any order with
/// `sort=True` (then `memory` bytes are held at most, and a key given twice is an error
/// unless `dedup="last"`). Returns a summary: entries, tables, bytes, parts.
#[pyfunction]
#[pyo3(signature = (path, items, *, sort = false, memory = None, dedup = None, threads = None, max_file_size = None, block_size = 4096, restart_interval = 16, compression = "snappy", bloom_bits = 10, extra_filter = None))]
#[allow(clippy::too_many_arguments)]
pub fn build_db<'py>(
    py: Python<'py>,
    path: FsPath,
    items: &Bound<'py, PyAny>,
    sort: bool,
    memory: Option<u64>,
    dedup: Option<&str>,
    threads: Option<usize>,
    max_file_size: Option<u64>,
    block_size: usize,
    restart_interval: usize,
    compression: &str,
    bloom_bits: usize,
    extra_filter: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let path = path.0;
    let options = TableKeywords {
        block_size,
        restart_interval,
        compression,
        bloom_bits,
        extra_filter,
    }
    .bulk_options(threads, max_file_size)?;
    let dedup = duplicates(dedup)?;
    let mut builder = DbBuilder::create(&path, options).map_err(|e| db_error(&path, e))?;
    if sort {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), PathBuf::from);
        let mut sorter = ExternalSorter::new(memory.unwrap_or(DEFAULT_SORT_MEMORY), dedup, &parent)
            .map_err(|e| db_error(&path, e))?;
        feed(
            py,
            items,
            |batch| batch.iter().try_for_each(|(k, v)| sorter.add(k, v)),
            &path,
        )?;
        py.detach(|| sorter.finish(|k, v| builder.add(k, v)))
            .map_err(|e| db_error(&path, e))?;
    } else {
        feed(
            py,
            items,
            |batch| batch.iter().try_for_each(|(k, v)| builder.add(k, v)),
            &path,
        )?;
    }
    let summary = py
        .detach(|| builder.finish())
        .map_err(|e| db_error(&path, e))?;
    commit_dict(py, &summary)
}

/// One part of a distributed build: its table files in a staging directory and the record
/// describing them. Picklable, so workers can send it to the driver.
#[pyclass(frozen, module = "leveltable")]
pub struct Part {
    inner: RustPart,
}

#[pymethods]
impl Part {
    /// The part whose record (`PART`) is in the staging directory `staging`.
    #[classmethod]
    fn load(_cls: &Bound<'_, PyType>, staging: FsPath) -> PyResult<Part> {
        let staging = staging.0;
        let inner = RustPart::load(&staging).map_err(|e| db_error(&staging, e))?;
        Ok(Part { inner })
    }

    /// The part from its record (the text of its `PART` file).
    #[classmethod]
    fn from_record(_cls: &Bound<'_, PyType>, record: &str) -> PyResult<Part> {
        let inner = RustPart::from_record(record)
            .map_err(|e| InvalidArgumentError::new_err(e.to_string()))?;
        Ok(Part { inner })
    }

    /// The record, as written to its `PART` file.
    fn to_record(&self) -> String {
        self.inner.to_record()
    }

    /// The staging directory holding the files.
    #[getter]
    fn staging(&self) -> String {
        self.inner.staging.display().to_string()
    }

    /// Entries in all its files.
    #[getter]
    fn entries(&self) -> u64 {
        self.inner.entries()
    }

    /// Bytes of all its files.
    #[getter]
    fn bytes(&self) -> u64 {
        self.inner.bytes()
    }

    /// Its files, in key order: dicts of name, size, entries, smallest and largest key.
    #[getter]
    fn files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for f in &self.inner.files {
            let d = PyDict::new(py);
            d.set_item("name", &f.name)?;
            d.set_item("size", f.size)?;
            d.set_item("entries", f.entries)?;
            d.set_item("smallest", pyo3::types::PyBytes::new(py, &f.smallest))?;
            d.set_item("largest", pyo3::types::PyBytes::new(py, &f.largest))?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Its smallest key, or `None` for an empty part.
    #[getter]
    fn smallest<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        self.inner
            .smallest()
            .map(|k| pyo3::types::PyBytes::new(py, k))
    }

    /// Its largest key, or `None` for an empty part.
    #[getter]
    fn largest<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        self.inner
            .largest()
            .map(|k| pyo3::types::PyBytes::new(py, k))
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let from_record = py.get_type::<Part>().getattr("from_record")?;
        Ok((from_record, (self.inner.to_record(),)))
    }

    fn __repr__(&self) -> String {
        format!(
            "leveltable.Part({:?}, files={}, entries={})",
            self.inner.staging.display().to_string(),
            self.inner.files.len(),
            self.inner.entries()
        )
    }
}

/// A part being built from sorted rows: the db crate's [`SortedFeed`] resolves keys given
/// twice (as the command line's `db build-part` does) before they reach the builder.
struct PartFeed {
    builder: PartBuilder,
    feed: SortedFeed,
}

impl PartFeed {
    /// Adds rows `0..n`, row `i` being `row(i)`.
    fn add_rows<'a>(
        &mut self,
        n: usize,
        row: impl Fn(usize) -> (&'a [u8], &'a [u8]),
    ) -> leveltable_db::Result<()> {
        let builder = &mut self.builder;
        self.feed
            .add_rows(n, row, &mut |key, value| builder.add(key, value))
    }

    fn finish(mut self) -> leveltable_db::Result<RustPart> {
        let builder = &mut self.builder;
        self.feed
            .finish(&mut |key, value| builder.add(key, value))?;
        self.builder.finish()
    }
}

/// Builds the part in `staging` with `options`, keys given twice resolved as `dedup` says,
/// from the rows `add` hands to its builder.
fn build_part_with(
    py: Python<'_>,
    staging: &std::path::Path,
    dedup: Option<&str>,
    options: BulkOptions,
    add: impl FnOnce(&mut PartFeed, &std::path::Path) -> PyResult<()>,
) -> PyResult<Part> {
    let duplicates = duplicates(dedup)?;
    let builder = PartBuilder::create(staging, options).map_err(|e| db_error(staging, e))?;
    let mut part = PartFeed {
        builder,
        feed: SortedFeed::new(duplicates),
    };
    add(&mut part, staging)?;
    let inner = py
        .detach(|| part.finish())
        .map_err(|e| db_error(staging, e))?;
    Ok(Part { inner })
}

/// Builds one part of a database in `staging` (a new or empty directory) from `items` in
/// increasing key order; a key given twice in a row is an error naming it, or with
/// `dedup="last"` the last of them is kept. Returns its `Part`. Takes the table options of
/// `build_db`.
#[pyfunction]
#[pyo3(signature = (staging, items, *, dedup = None, threads = None, max_file_size = None, block_size = 4096, restart_interval = 16, compression = "snappy", bloom_bits = 10, extra_filter = None))]
#[allow(clippy::too_many_arguments)]
pub fn build_part(
    py: Python<'_>,
    staging: FsPath,
    items: &Bound<'_, PyAny>,
    dedup: Option<&str>,
    threads: Option<usize>,
    max_file_size: Option<u64>,
    block_size: usize,
    restart_interval: usize,
    compression: &str,
    bloom_bits: usize,
    extra_filter: Option<&str>,
) -> PyResult<Part> {
    let options = TableKeywords {
        block_size,
        restart_interval,
        compression,
        bloom_bits,
        extra_filter,
    }
    .bulk_options(threads, max_file_size)?;
    build_part_with(py, &staging.0, dedup, options, |part, staging| {
        feed(
            py,
            items,
            |batch| {
                part.add_rows(batch.len(), |i| {
                    (batch[i].0.as_slice(), batch[i].1.as_slice())
                })
            },
            staging,
        )
    })
}

/// Builds one part of a database in `staging` from `batches`, an iterable of pyarrow
/// `RecordBatch`es whose columns `key_column` and `value_column` are binary or string
/// (UTF-8), keys in increasing order across the batches. Each column is read through its
/// buffers, one copy per batch. Duplicates and options as in `build_part`; a null is an
/// error naming its column.
#[pyfunction]
#[pyo3(signature = (staging, batches, *, key_column = "key", value_column = "value", dedup = None, threads = None, max_file_size = None, block_size = 4096, restart_interval = 16, compression = "snappy", bloom_bits = 10, extra_filter = None))]
#[allow(clippy::too_many_arguments)]
pub fn build_part_arrow(
    py: Python<'_>,
    staging: FsPath,
    batches: &Bound<'_, PyAny>,
    key_column: &str,
    value_column: &str,
    dedup: Option<&str>,
    threads: Option<usize>,
    max_file_size: Option<u64>,
    block_size: usize,
    restart_interval: usize,
    compression: &str,
    bloom_bits: usize,
    extra_filter: Option<&str>,
) -> PyResult<Part> {
    let options = TableKeywords {
        block_size,
        restart_interval,
        compression,
        bloom_bits,
        extra_filter,
    }
    .bulk_options(threads, max_file_size)?;
    build_part_with(py, &staging.0, dedup, options, |part, staging| {
        for batch in batches.try_iter()? {
            let batch = batch?;
            let keys = BinaryColumn::of(&batch, key_column)?;
            let values = BinaryColumn::of(&batch, value_column)?;
            if keys.len() != values.len() {
                return Err(InvalidArgumentError::new_err(format!(
                    "columns {key_column:?} and {value_column:?} differ in length"
                )));
            }
            let n = keys.len();
            let (keys, values) = (keys.rows(), values.rows());
            py.detach(|| part.add_rows(n, |i| (keys.get(i), values.get(i))))
                .map_err(|e| db_error(staging, e))?;
        }
        Ok(())
    })
}

/// Commits `parts` (in key order, not overlapping) as the database `path` and removes their
/// staging directories; returns a summary: entries, tables, bytes, parts.
#[pyfunction]
pub fn commit_db<'py>(
    py: Python<'py>,
    path: FsPath,
    parts: Vec<Bound<'py, Part>>,
) -> PyResult<Bound<'py, PyDict>> {
    let path = path.0;
    let parts: Vec<RustPart> = parts.iter().map(|p| p.get().inner.clone()).collect();
    let summary = py
        .detach(|| commit(&path, &parts))
        .map_err(|e| db_error(&path, e))?;
    commit_dict(py, &summary)
}
