//! `leveltable.TableBuilder`: writes a table file atomically.

use std::path::PathBuf;
use std::sync::Mutex;

use leveltable_db::{BLOOM_BITS_OPTION, BulkOptions, TableOptions};
use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy};
use leveltable_table::atomic_file::dir_sync_warning;
use leveltable_table::{AtomicTableFile, BuildOptions, BuildSummary, Compression, Profile};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bytes::bytes_of;
use crate::errors::{ClosedError, InvalidArgumentError, KeyOrderError, option_error, table_error};
use crate::fs_path::FsPath;
use crate::gil_lock;

/// Entries added from Python are handed to the Rust builder in batches of about this many
/// bytes, with the GIL released, so that block compression and filter building run while
/// other Python threads do.
const BATCH_BYTES: usize = 256 << 10;

/// The `compression` keyword: the table crate's codec names.
pub fn compression_named(name: &str) -> PyResult<Compression> {
    name.parse::<Compression>().map_err(|_| {
        let names: Vec<String> = Compression::ALL
            .iter()
            .map(|c| format!("{:?}", c.name()))
            .collect();
        InvalidArgumentError::new_err(format!(
            "compression must be one of {}, not {name:?}",
            names.join(", ")
        ))
    })
}

/// The `profile` keyword of the readers: which compression each block type byte names.
pub fn profile_named(name: &str) -> PyResult<Profile> {
    name.parse::<Profile>().map_err(|_| {
        InvalidArgumentError::new_err(format!(
            "profile must be \"auto\", \"leveldb\" or \"mojang\", not {name:?}"
        ))
    })
}

/// The `extra_filter` keyword: the bits per key of the cache-local filter it asks for
/// (those of the Bloom filter, at least 10), or `None`.
pub fn cache_local_bits(extra_filter: Option<&str>, bloom_bits: usize) -> PyResult<Option<usize>> {
    match extra_filter {
        None => Ok(None),
        Some("local-bloom") => Ok(Some(bloom_bits.max(10))),
        Some(other) => Err(InvalidArgumentError::new_err(format!(
            "extra_filter must be None or \"local-bloom\", not {other:?}"
        ))),
    }
}

/// The table keywords every Python builder takes (`TableBuilder`, `build_db`, `build_part`,
/// `build_part_arrow`), read once into the options of the table and db crates.
pub struct TableKeywords<'a> {
    /// `block_size`.
    pub block_size: usize,
    /// `restart_interval`.
    pub restart_interval: usize,
    /// `compression`: a codec name of the table crate.
    pub compression: &'a str,
    /// `bloom_bits`: LevelDB's Bloom filter, 0 for none.
    pub bloom_bits: usize,
    /// `extra_filter`: `None` or `"local-bloom"`.
    pub extra_filter: Option<&'a str>,
}

impl TableKeywords<'_> {
    /// The table options of a single table file.
    pub fn build_options(&self) -> PyResult<BuildOptions> {
        let compression = compression_named(self.compression)?;
        let cache_local = cache_local_bits(self.extra_filter, self.bloom_bits)?;
        if self.block_size == 0 || self.restart_interval == 0 {
            return Err(InvalidArgumentError::new_err(
                "block_size and restart_interval must be at least 1",
            ));
        }
        let mut options = BuildOptions::default()
            .block_size(self.block_size)
            .block_restart_interval(self.restart_interval)
            .compression(compression);
        if self.bloom_bits > 0 {
            options = options.filter_policy(BloomFilterPolicy::new(self.bloom_bits));
        }
        if let Some(bits) = cache_local {
            options = options.extra_filter_policy(CacheLocalBloomPolicy::new(bits));
        }
        Ok(options)
    }

    /// The options of a bulk build's tables, with `threads` building them and files of at
    /// most `max_file_size` bytes of entries.
    pub fn bulk_options(
        &self,
        threads: Option<usize>,
        max_file_size: Option<u64>,
    ) -> PyResult<BulkOptions> {
        let compression = compression_named(self.compression)?;
        let cache_local = cache_local_bits(self.extra_filter, self.bloom_bits)?;
        let table = TableOptions::default()
            .block_size(self.block_size)
            .block_restart_interval(self.restart_interval)
            .compression(compression)
            .filter_policy((self.bloom_bits > 0).then(|| BloomFilterPolicy::new(self.bloom_bits)))
            .cache_local_bits_per_key(cache_local);
        let mut options = BulkOptions::default()
            .table(table)
            .threads(threads.unwrap_or(1));
        if let Some(size) = max_file_size {
            options = options.max_file_size(size);
        }
        options.check().map_err(|e| match e {
            leveltable_db::Error::OptionOutOfRange {
                option,
                value,
                min,
                max,
            } => {
                let keyword = match option {
                    BLOOM_BITS_OPTION => "bloom_bits",
                    other => other,
                };
                option_error(keyword, value, min, max)
            }
            e => InvalidArgumentError::new_err(e.to_string()),
        })?;
        Ok(options)
    }
}

struct Building {
    file: AtomicTableFile,
    /// Entries accepted but not yet handed to `file`, in order.
    pending: Vec<(Vec<u8>, Vec<u8>)>,
    pending_bytes: usize,
    /// The last key accepted, to refuse an out-of-order key at once.
    last_key: Option<Vec<u8>>,
}

/// Builds a table file at `path`, atomically: the file appears only when `finish` succeeds.
///
/// `TableBuilder(path, *, block_size=4096, restart_interval=16, compression="snappy",
/// bloom_bits=10, extra_filter=None)`; keys are added in strictly increasing bytewise order.
/// As a context manager it finishes on success and abandons on an exception, leaving no file.
#[pyclass(frozen, module = "leveltable")]
pub struct TableBuilder {
    path: PathBuf,
    state: Mutex<Option<Building>>,
}

impl TableBuilder {
    /// Hands the pending entries to the Rust builder, with the GIL released.
    fn flush_pending(&self, py: Python<'_>, building: &mut Building) -> PyResult<()> {
        let pending = std::mem::take(&mut building.pending);
        building.pending_bytes = 0;
        let file = &mut building.file;
        py.detach(|| pending.iter().try_for_each(|(k, v)| file.add(k, v)))
            .map_err(|e| table_error(&self.path, e))
    }
}

#[pymethods]
impl TableBuilder {
    #[new]
    #[pyo3(signature = (path, *, block_size = 4096, restart_interval = 16, compression = "snappy", bloom_bits = 10, extra_filter = None))]
    fn new(
        path: FsPath,
        block_size: usize,
        restart_interval: usize,
        compression: &str,
        bloom_bits: usize,
        extra_filter: Option<&str>,
    ) -> PyResult<Self> {
        let path = path.0;
        let options = TableKeywords {
            block_size,
            restart_interval,
            compression,
            bloom_bits,
            extra_filter,
        }
        .build_options()?;
        let file =
            AtomicTableFile::create_new(&path, options).map_err(|e| table_error(&path, e))?;
        Ok(TableBuilder {
            path,
            state: Mutex::new(Some(Building {
                file,
                pending: Vec::new(),
                pending_bytes: 0,
                last_key: None,
            })),
        })
    }

    /// Adds an entry. `key` must sort strictly after the previous key (bytewise), else
    /// `KeyOrderError` and the builder is unchanged.
    fn add(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        let mut guard = gil_lock::lock(py, &self.state);
        let building = guard
            .as_mut()
            .ok_or_else(|| ClosedError::new_err("the builder has finished or was abandoned"))?;
        if let Some(last) = &building.last_key {
            if key.as_ref() <= last.as_slice() {
                return Err(KeyOrderError::new_err(format!(
                    "{}: key {:?} does not sort after the previous key {:?}",
                    self.path.display(),
                    PyBytesRepr(&key),
                    PyBytesRepr(last)
                )));
            }
        }
        building.last_key = Some(key.to_vec());
        building.pending_bytes = building
            .pending_bytes
            .saturating_add(key.len())
            .saturating_add(value.len());
        building
            .pending
            .push((key.into_owned(), value.into_owned()));
        if building.pending_bytes >= BATCH_BYTES {
            self.flush_pending(py, building)?;
        }
        Ok(())
    }

    /// Writes the rest of the table, syncs it and moves it to `path`; returns a summary
    /// (entries, blocks, sizes). If the directory cannot be synced after the move (one that
    /// can be written but not read), the table is in place all the same and a
    /// `RuntimeWarning` says that a crash soon after may undo the move.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut guard = gil_lock::lock(py, &self.state);
        let mut building = guard
            .take()
            .ok_or_else(|| ClosedError::new_err("the builder has finished or was abandoned"))?;
        self.flush_pending(py, &mut building)?;
        let file = building.file;
        let finished = py
            .detach(|| file.finish_with_status())
            .map_err(|e| table_error(&self.path, e))?;
        if let Some(e) = &finished.dir_sync_error {
            let message = dir_sync_warning(&self.path, &e.to_string());
            let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
            PyErr::warn(py, &category, &std::ffi::CString::new(message)?, 1)?;
        }
        summary_dict(py, &finished.summary)
    }

    /// Drops everything added; no file is left at `path`.
    fn abandon(&self, py: Python<'_>) {
        let mut guard = gil_lock::lock(py, &self.state);
        if let Some(building) = guard.take() {
            building.file.abandon();
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc_value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let finished = gil_lock::lock(py, &self.state).is_none();
        if exc_type.is_some() {
            self.abandon(py);
        } else if !finished {
            self.finish(py)?;
        }
        Ok(false)
    }
}

/// A builder's summary as a dict.
pub fn summary_dict<'py>(py: Python<'py>, s: &BuildSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries", s.entries)?;
    d.set_item("data_blocks", s.data_blocks)?;
    d.set_item("raw_key_bytes", s.raw_key_bytes)?;
    d.set_item("raw_value_bytes", s.raw_value_bytes)?;
    d.set_item("data_size", s.data_size)?;
    d.set_item("index_size", s.index_size)?;
    d.set_item("filter_size", s.filter_size)?;
    d.set_item("metaindex_size", s.metaindex_size)?;
    d.set_item("file_size", s.file_size)?;
    Ok(d)
}

/// Shows bytes as Python's `repr` of a `bytes` object would, for messages.
struct PyBytesRepr<'a>(&'a [u8]);

impl std::fmt::Debug for PyBytesRepr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("b'")?;
        for &b in self.0.iter().take(64) {
            match b {
                b'\\' => f.write_str("\\\\")?,
                b'\'' => f.write_str("\\'")?,
                0x20..=0x7e => write!(f, "{}", b as char)?,
                _ => write!(f, "\\x{b:02x}")?,
            }
        }
        if self.0.len() > 64 {
            f.write_str("...")?;
        }
        f.write_str("'")
    }
}
