//! Reading one version of a database from many processes: `plan_version(path)` reports the
//! version an open sees (its tables per level with their key ranges and sizes, the logs and
//! the bytes replayed from each, the last sequence), and `VersionScan(path, version, start,
//! stop)` opens exactly that version, perhaps with only the tables a key range needs, and
//! reads the range in chunks laid out as Arrow binary columns (32-bit offsets and data), or
//! every stored version of its keys (`versions()`), for `leveltable.spark_source`. `path` is
//! a directory or the URL of an object-store prefix (see `db_place`).

use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use leveltable_db::{Db as RustDb, DbIter, PinnedVersion, TableInfo};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::arrow_stream::ArrowStream;
use crate::closable::Closable;
use crate::db_place::{Place, StoreOptions};
use crate::db_source::THE_DATABASE;
use crate::errors::{InvalidArgumentError, db_error, open_error};

/// Entries per chunk, at most.
const CHUNK_ROWS: usize = 8192;

/// Bytes of keys and of values per chunk, at most (one entry more if it is larger).
const CHUNK_BYTES: usize = 4 << 20;

/// The options a version is read with: the comparators Chromium needs as well as bytewise.
fn options() -> leveltable_db::DbOptions {
    leveltable_db::DbOptions::default().comparators(leveltable_chromium::comparators())
}

/// `plan_version(path, options=None) -> dict`: opens the database in `path` (a directory,
/// or an object-store prefix's URL, configured by the store `options`) read-only and
/// reports the version it opened: `comparator`, `last_sequence`, `logs` (`(number, bytes
/// replayed)` tuples) and `levels` (per level, `(number, size, smallest, largest)` tuples,
/// the keys internal keys: the user key and an 8-byte tag); for a prefix, `requests`, those
/// the open made (`gets`, `lists`, `bytes_read`, `retries`).
#[pyfunction]
#[pyo3(signature = (path, options = None))]
pub fn plan_version<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    options: StoreOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let place = Place::of(path, &options)?;
    let path = place.name();
    let db = py
        .detach(|| RustDb::open_storage(place.storage(), self::options()))
        .map_err(|e| match place {
            Place::Dir(_) => open_error(&path, e),
            Place::Prefix(_) => db_error(&path, e),
        })?;
    let v = db.pinned_version();
    let d = PyDict::new(py);
    d.set_item("path", path.display().to_string())?;
    if let Some(requests) = place.requests(py)? {
        d.set_item("requests", requests)?;
    }
    d.set_item("comparator", &v.comparator)?;
    d.set_item("last_sequence", v.last_sequence)?;
    d.set_item("logs", v.logs.clone())?;
    let levels = PyList::empty(py);
    for level in &v.levels {
        let tables = PyList::empty(py);
        for t in level {
            tables.append(PyTuple::new(
                py,
                [
                    t.number.into_pyobject(py)?.into_any(),
                    t.size.into_pyobject(py)?.into_any(),
                    PyBytes::new(py, &t.smallest).into_any(),
                    PyBytes::new(py, &t.largest).into_any(),
                ],
            )?)?;
        }
        levels.append(tables)?;
    }
    d.set_item("levels", levels)?;
    Ok(d)
}

/// A table as `plan_version` lists it: number, size, smallest and largest internal keys.
type TableTuple = (u64, u64, Vec<u8>, Vec<u8>);

/// The version a `plan_version` dict describes (with any subset of its tables).
fn version_of(d: &Bound<'_, PyDict>) -> PyResult<PinnedVersion> {
    let item = |name: &str| -> PyResult<Bound<'_, PyAny>> {
        d.get_item(name)?.ok_or_else(|| {
            InvalidArgumentError::new_err(format!("the version has no {name:?} entry"))
        })
    };
    let levels: Vec<Vec<TableTuple>> = item("levels")?.extract()?;
    let levels = levels
        .into_iter()
        .enumerate()
        .map(|(level, tables)| {
            tables
                .into_iter()
                .map(|(number, size, smallest, largest)| {
                    TableInfo::new(number, Some(level), size, smallest, largest)
                })
                .collect()
        })
        .collect();
    Ok(PinnedVersion {
        comparator: item("comparator")?.extract()?,
        last_sequence: item("last_sequence")?.extract()?,
        logs: item("logs")?.extract()?,
        levels,
    })
}

/// A chunk of entries as two Arrow binary columns: per column, `rows + 1` little-endian
/// 32-bit offsets and the bytes.
#[derive(Default)]
struct Columns {
    rows: usize,
    key_offsets: Vec<u8>,
    keys: Vec<u8>,
    value_offsets: Vec<u8>,
    values: Vec<u8>,
}

impl Columns {
    fn new() -> Columns {
        let mut c = Columns::default();
        c.key_offsets.extend_from_slice(&0i32.to_le_bytes());
        c.value_offsets.extend_from_slice(&0i32.to_le_bytes());
        c
    }

    /// Appends an entry; `false` (appending nothing) if a column would pass 2 GiB, the
    /// most 32-bit offsets address.
    fn push(&mut self, key: &[u8], value: &[u8]) -> bool {
        let (Ok(k), Ok(v)) = (
            i32::try_from(self.keys.len() + key.len()),
            i32::try_from(self.values.len() + value.len()),
        ) else {
            return false;
        };
        self.keys.extend_from_slice(key);
        self.values.extend_from_slice(value);
        self.key_offsets.extend_from_slice(&k.to_le_bytes());
        self.value_offsets.extend_from_slice(&v.to_le_bytes());
        self.rows += 1;
        true
    }

    fn full(&self) -> bool {
        self.rows >= CHUNK_ROWS || self.keys.len() + self.values.len() >= CHUNK_BYTES
    }
}

/// What a scan holds while it reads.
struct Reading {
    iter: DbIter,
    /// An entry read but not yet handed out (it did not fit the last chunk).
    pending: Option<(Vec<u8>, Vec<u8>)>,
}

/// `VersionScan(path, version, start=None, stop=None, *, options=None)`: the entries of
/// `path` (a directory or a prefix's URL with its store `options`, as `plan_version`) at
/// `version` (a `plan_version` dict, whose `levels` may hold only some of the tables) with
/// keys in `[start, stop)`, in key order. Iterating yields chunks `(rows, key_offsets, keys,
/// value_offsets, values)`: the buffers of two Arrow `binary` arrays; `versions()` instead
/// reads every stored version of the range's keys. `tables` is the number of tables the
/// scan may open (those of `version`); `opened()` how many it has opened; `requests()`
/// those made to a prefix's store.
#[pyclass(frozen, module = "leveltable")]
pub struct VersionScan {
    path: PathBuf,
    place: Place,
    db: Arc<Closable<RustDb>>,
    range: (Edge<Vec<u8>>, Edge<Vec<u8>>),
    tables: usize,
    reading: Mutex<Option<Reading>>,
}

#[pymethods]
impl VersionScan {
    #[new]
    #[pyo3(signature = (path, version, start = None, stop = None, *, options = None))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        version: &Bound<'_, PyDict>,
        start: Option<Vec<u8>>,
        stop: Option<Vec<u8>>,
        options: StoreOptions,
    ) -> PyResult<VersionScan> {
        let place = Place::of(path, &options)?;
        let path = place.name();
        let version = version_of(version)?;
        let tables = version.levels.iter().map(Vec::len).sum();
        let db = py
            .detach(|| RustDb::open_version_in(place.storage(), &version, self::options()))
            .map_err(|e| db_error(&path, e))?;
        let lo = start.map_or(Edge::Unbounded, Edge::Included);
        let hi = stop.map_or(Edge::Unbounded, Edge::Excluded);
        let iter = db.range_at::<Vec<u8>>((lo.clone(), hi.clone()), version.last_sequence);
        Ok(VersionScan {
            path,
            place,
            db: Arc::new(Closable::new(db)),
            range: (lo, hi),
            tables,
            reading: Mutex::new(Some(Reading {
                iter,
                pending: None,
            })),
        })
    }

    /// Every stored version of the range's keys in the version (newest first per key) as
    /// Arrow record batches of at most `batch_rows` rows, with the columns `key`, `value`
    /// (null for a deletion), `sequence` and `state` (`live`, `deleted` or `shadowed`), as
    /// `Db.scan_arrow(versions=True)` reads them.
    #[pyo3(signature = (batch_rows = CHUNK_ROWS))]
    fn versions(&self, batch_rows: usize) -> PyResult<ArrowStream> {
        ArrowStream::of_versions(Arc::clone(&self.db), self.range.clone(), batch_rows)
    }

    /// The requests made so far to the store of a prefix (`gets`, `lists`, `bytes_read`,
    /// `retries`), from the open on; `None` for a directory.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.place.requests(py)
    }

    /// The number of tables the version names (the most the scan may open).
    #[getter]
    fn tables(&self) -> usize {
        self.tables
    }

    /// The number of tables open now.
    fn opened(&self) -> PyResult<usize> {
        Ok(self.db.get(THE_DATABASE)?.open_tables())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let mut guard = self
            .reading
            .lock()
            .map_err(|_| InvalidArgumentError::new_err("the scan failed earlier"))?;
        let Some(reading) = guard.as_mut() else {
            return Ok(None);
        };
        let filled = py.detach(|| fill(reading));
        let columns = match filled {
            Ok(Some(columns)) => columns,
            Ok(None) => {
                *guard = None;
                return Ok(None);
            }
            Err(e) => {
                *guard = None;
                return Err(db_error(&self.path, e));
            }
        };
        Ok(Some(PyTuple::new(
            py,
            [
                columns.rows.into_pyobject(py)?.into_any(),
                PyBytes::new(py, &columns.key_offsets).into_any(),
                PyBytes::new(py, &columns.keys).into_any(),
                PyBytes::new(py, &columns.value_offsets).into_any(),
                PyBytes::new(py, &columns.values).into_any(),
            ],
        )?))
    }
}

/// Reads the next chunk; `None` at the end.
fn fill(reading: &mut Reading) -> leveltable_db::Result<Option<Columns>> {
    let mut columns = Columns::new();
    if let Some((k, v)) = reading.pending.take() {
        if !columns.push(&k, &v) {
            return Err(leveltable_db::Error::InvalidArgument(
                "an entry longer than 2 GiB does not fit an Arrow binary column".into(),
            ));
        }
    }
    while !columns.full() {
        let Some(entry) = reading.iter.next_entry() else {
            break;
        };
        let (k, v) = entry?;
        if !columns.push(k, v) {
            reading.pending = Some((k.to_vec(), v.to_vec()));
            break;
        }
    }
    Ok((columns.rows > 0).then_some(columns))
}
