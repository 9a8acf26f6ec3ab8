//! Writing through `leveltable.Db(path, writable=True)`: opening under LevelDB's lock, puts,
//! deletes, write batches (`WriteBatch`) and range compactions, each with the GIL released.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use leveltable_db::{
    BLOOM_BITS_OPTION, DbOptions, TableOptions, WritableDb, WritableOptions, WriteBatchBuilder,
    WriteOptions,
};
use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::Compression;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::builder::compression_named;
use crate::bytes::bytes_of;
use crate::closable::Closable;
use crate::db_source::{Source, THE_DATABASE};
use crate::db_view::table_info;
use crate::errors::{Error, InvalidArgumentError, db_error, open_error, option_error};

/// The keywords of `Db` that only a database opened for writing takes, as plyvel names
/// them.
pub struct WriteKeywords<'a> {
    pub create_if_missing: bool,
    pub error_if_exists: bool,
    pub paranoid_checks: Option<bool>,
    pub write_buffer_size: Option<usize>,
    pub max_file_size: Option<u64>,
    pub block_size: Option<usize>,
    pub block_restart_interval: Option<usize>,
    /// `"snappy"` (the default), `None` for no compression, or another codec name of the
    /// table crate.
    pub compression: Option<&'a str>,
    pub bloom_filter_bits: usize,
}

impl WriteKeywords<'_> {
    /// The first keyword given that needs `writable=True`, if any.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            (self.create_if_missing, "create_if_missing"),
            (self.error_if_exists, "error_if_exists"),
            (self.paranoid_checks.is_some(), "paranoid_checks"),
            (self.write_buffer_size.is_some(), "write_buffer_size"),
            (self.max_file_size.is_some(), "max_file_size"),
            (self.block_size.is_some(), "block_size"),
            (
                self.block_restart_interval.is_some(),
                "block_restart_interval",
            ),
            (self.compression != Some("snappy"), "compression"),
            (self.bloom_filter_bits != 0, "bloom_filter_bits"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The options of the open, reading as `read` says.
    fn options(&self, read: DbOptions) -> PyResult<WritableOptions> {
        let read = read.paranoid_checks(self.paranoid_checks.unwrap_or(false));
        let mut table = TableOptions::default()
            .compression(match self.compression {
                None => Compression::None,
                Some(name) => compression_named(name)?,
            })
            .filter_policy(
                (self.bloom_filter_bits > 0)
                    .then(|| BloomFilterPolicy::new(self.bloom_filter_bits)),
            );
        if let Some(bytes) = self.block_size {
            table = table.block_size(bytes);
        }
        if let Some(entries) = self.block_restart_interval {
            table = table.block_restart_interval(entries);
        }
        let mut options = WritableOptions::default()
            .read(read)
            .create_if_missing(self.create_if_missing)
            .error_if_exists(self.error_if_exists)
            .table(table);
        if let Some(bytes) = self.write_buffer_size {
            options = options.write_buffer_size(bytes);
        }
        if let Some(bytes) = self.max_file_size {
            options = options.max_file_size(bytes);
        }
        Ok(options)
    }
}

/// Opens `path` for writing, with the GIL released.
pub fn open(
    py: Python<'_>,
    path: &Path,
    read: DbOptions,
    keywords: &WriteKeywords<'_>,
) -> PyResult<Source> {
    let options = keywords.options(read)?;
    let db = py
        .detach(|| WritableDb::open(path, options))
        .map_err(|e| match e {
            leveltable_db::Error::Locked { .. } => locked_error(&e),
            leveltable_db::Error::OptionOutOfRange {
                option,
                value,
                min,
                max,
            } => option_error(keyword_of(option), value, min, max),
            e => open_error(path, e),
        })?;
    Ok(Source::Write(Arc::new(Closable::new(db))))
}

/// The keyword of `Db` that sets the option the library calls `option`.
fn keyword_of(option: &'static str) -> &'static str {
    if option == BLOOM_BITS_OPTION {
        "bloom_filter_bits"
    } else {
        option
    }
}

/// A locked database as `OSError` whose message names the `LOCK` file, as LevelDB reports
/// it as an I/O error. (No `filename` attribute: `OSError` then prints an errno, and a lock
/// this process holds has none.)
pub fn locked_error(e: &leveltable_db::Error) -> PyErr {
    let message = e.to_string();
    PyOSError::new_err(message.trim_start_matches("db: ").to_owned())
}

/// The database of `source` to write to: `leveltable.Error` for one opened read-only,
/// `ClosedError` for a closed one.
pub fn writable(source: &Source, what: &str) -> PyResult<Arc<WritableDb>> {
    match source {
        Source::Write(db) => db.get(THE_DATABASE),
        Source::Read(db) => {
            let db = db.get(THE_DATABASE)?;
            Err(Error::new_err(format!(
                "{}: {what} needs a database opened for writing: this one is read-only; \
                 open it with leveltable.Db(path, writable=True)",
                db.path().display()
            )))
        }
    }
}

/// An operation the write batch refuses (a key or value of 4 GiB or more, a batch of
/// 2^32 - 1 operations) as `InvalidArgumentError`: `a key of N bytes: at most 4294967295
/// (4 GiB - 1)`.
fn refused(e: &leveltable_db::Error) -> PyErr {
    let message = e.to_string();
    InvalidArgumentError::new_err(
        message
            .trim_start_matches("db: ")
            .trim_start_matches("invalid argument: ")
            .to_owned(),
    )
}

pub fn put(
    py: Python<'_>,
    source: &Source,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    sync: bool,
) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let value = bytes_of(value, "value")?;
    let db = writable(source, "put")?;
    py.detach(|| db.put(&key, &value, WriteOptions { sync }))
        .map_err(|e| db_error(db.path(), e))
}

pub fn delete(py: Python<'_>, source: &Source, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let db = writable(source, "delete")?;
    py.detach(|| db.delete(&key, WriteOptions { sync }))
        .map_err(|e| db_error(db.path(), e))
}

pub fn compact_range(
    py: Python<'_>,
    source: &Source,
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let start = crate::iterator_keywords::bound(start, "start")?;
    let stop = crate::iterator_keywords::bound(stop, "stop")?;
    let db = writable(source, "compact_range")?;
    py.detach(|| db.compact_range(start.as_deref(), stop.as_deref()))
        .map_err(|e| db_error(db.path(), e))
}

/// Closes a database opened for writing: waits for its background work and releases its
/// lock, unless another thread is still reading or writing through it (the lock is then
/// released when that ends).
pub fn close(py: Python<'_>, db: &Closable<WritableDb>) -> PyResult<()> {
    let Some(db) = db.take() else {
        return Ok(());
    };
    let Some(db) = Arc::into_inner(db) else {
        return Ok(());
    };
    let path = db.path().to_owned();
    match py.detach(|| db.close()) {
        // A copy of the handle in a child forked from the process that opened it: it is
        // dropped without touching a file, and the parent's database goes on.
        Err(leveltable_db::Error::ForkedProcess { .. }) => Ok(()),
        r => r.map_err(|e| db_error(&path, e)),
    }
}

/// Operations of one write batch, kept until written.
struct Batch {
    ops: WriteBatchBuilder,
}

/// Puts and deletes applied together, atomically, by `write()`: `Db.write_batch(sync=False,
/// transaction=True)`. As a context manager the batch is written when the `with` block
/// ends, and dropped if it ends with an exception (with `transaction=False`, as plyvel's
/// default, it is written then too).
#[pyclass(frozen, module = "leveltable")]
pub struct WriteBatch {
    source: Source,
    sync: bool,
    transaction: bool,
    batch: Mutex<Batch>,
}

impl WriteBatch {
    /// A new batch of writes to `source`.
    pub fn new(source: &Source, sync: bool, transaction: bool) -> PyResult<WriteBatch> {
        writable(source, "write_batch")?;
        Ok(WriteBatch {
            source: source.clone(),
            sync,
            transaction,
            batch: Mutex::new(Batch {
                ops: WriteBatchBuilder::default(),
            }),
        })
    }

    fn batch(&self) -> std::sync::MutexGuard<'_, Batch> {
        self.batch.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `ops` to the database atomically, with the GIL released.
    fn write_ops(&self, py: Python<'_>, ops: WriteBatchBuilder) -> PyResult<()> {
        let db = writable(&self.source, "write")?;
        let sync = self.sync;
        py.detach(|| db.write_owned(ops, WriteOptions { sync }))
            .map_err(|e| db_error(db.path(), e))
    }
}

#[pymethods]
impl WriteBatch {
    /// Adds a put of `key` to `value`.
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.source.check_open()?;
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        let mut batch = self.batch();
        batch.ops.try_put(&key, &value).map_err(|e| refused(&e))?;
        Ok(())
    }

    /// Adds a delete of `key`.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.source.check_open()?;
        let key = bytes_of(key, "key")?;
        let mut batch = self.batch();
        batch.ops.try_delete(&key).map_err(|e| refused(&e))?;
        Ok(())
    }

    /// Applies the batch's operations to the database atomically (a read sees all or none
    /// of them), with the GIL released. The batch keeps them: `clear()` drops them.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        writable(&self.source, "write")?;
        // A copy: the batch's lock is not held while the GIL is released, so a thread adding
        // to the batch meanwhile cannot wait for it with the GIL held.
        let ops = self.batch().ops.clone();
        self.write_ops(py, ops)
    }

    /// Adds the operations of `other`, after this batch's own (plyvel's `append`).
    fn append(&self, other: &Bound<'_, WriteBatch>) -> PyResult<()> {
        self.source.check_open()?;
        let ops = other.get().batch().ops.clone();
        let mut batch = self.batch();
        if batch.ops.count().checked_add(ops.count()).is_none() {
            return Err(InvalidArgumentError::new_err(
                "a write batch holds at most 4294967295 operations",
            ));
        }
        batch.ops.append(&ops);
        Ok(())
    }

    /// Drops the batch's operations.
    fn clear(&self) -> PyResult<()> {
        self.source.check_open()?;
        self.batch().ops.clear();
        Ok(())
    }

    /// The number of operations in the batch.
    fn __len__(&self) -> usize {
        self.batch().ops.count() as usize
    }

    /// The size of the encoded batch in bytes (LevelDB's `ApproximateSize`).
    fn approximate_size(&self) -> PyResult<usize> {
        self.source.check_open()?;
        Ok(self.batch().ops.approximate_size())
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().source.check_open()?;
        Ok(slf)
    }

    /// Writes the batch unless the block raised (and `transaction` is true), then clears it.
    #[pyo3(signature = (exc_type, *_rest))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _rest: &Bound<'_, PyTuple>,
    ) -> PyResult<bool> {
        self.source.check_open()?;
        let raised = !exc_type.is_none();
        // The operations are taken out (no copy): the batch is cleared either way.
        let ops = std::mem::take(&mut self.batch().ops);
        if raised && self.transaction {
            return Ok(false);
        }
        self.write_ops(py, ops).map(|()| false)
    }
}

/// What `Db.stats()` says of a database open for writing.
pub fn stats<'py>(py: Python<'py>, db: &WritableDb) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", db.path().display().to_string())?;
    d.set_item("last_sequence", db.last_sequence())?;
    let tables = db.tables();
    let depth = tables
        .iter()
        .filter_map(|t| t.level)
        .max()
        .map_or(0, |l| l + 1);
    let levels: Vec<Bound<'py, PyList>> = (0..depth.max(7)).map(|_| PyList::empty(py)).collect();
    for t in &tables {
        let Some(files) = t.level.and_then(|l| levels.get(l)) else {
            continue;
        };
        files.append(table_info(py, t)?)?;
    }
    d.set_item("levels", PyList::new(py, levels)?)?;
    d.set_item("compactions", db.compactions())?;
    Ok(d)
}
