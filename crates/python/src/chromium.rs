//! `leveltable.chromium`: what Chrome, Chromium and Electron apps keep in LevelDB (Local
//! Storage, Session Storage, IndexedDB) as dicts, one per record, or as Arrow record
//! batches (`chromium_arrow`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_db::{Db as RustDb, DbOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyDict, PyList, PyString};
use serde_json::Value;

use crate::errors::db_error;
use crate::fs_path::FsPath;

use crate::arrow_stream::{schema_capsule, stream_capsule};
use crate::chromium_arrow::RecordIter;

/// An iterator over the records of a Chromium LevelDB directory, each a dict.
#[pyclass(frozen, module = "leveltable.chromium")]
pub struct Records {
    path: PathBuf,
    iter: Mutex<RecordIter>,
}

#[pymethods]
impl Records {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let next = py.detach(|| {
            self.iter
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .next()
        });
        match next {
            None => Ok(None),
            Some(Err(e)) => Err(db_error(&self.path, e)),
            Some(Ok(v)) => Ok(Some(to_py(py, &v)?.unbind())),
        }
    }

    /// The Arrow PyCapsule stream interface: the records not yet read, as record batches
    /// of `key` (the record's key as JSON text) and `json` (the record as JSON text), 65,536
    /// rows each at most. It takes the records: the iterator is then exhausted.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let iter = std::mem::replace(
            &mut *self
                .iter
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Box::new(std::iter::empty()),
        );
        let batches = crate::chromium_arrow::batches(
            iter,
            self.path.clone(),
            crate::arrow_stream::BATCH_ROWS,
        );
        stream_capsule(py, Box::new(batches))
    }

    /// The Arrow PyCapsule schema interface: the batches' schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &crate::chromium_arrow::schema())
    }
}

/// A JSON value as the Python value `json.loads` would give.
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for x in a {
                list.append(to_py(py, x)?)?;
            }
            list.into_any()
        }
        Value::Object(m) => {
            let dict = PyDict::new(py);
            for (k, x) in m {
                dict.set_item(k, to_py(py, x)?)?;
            }
            dict.into_any()
        }
    })
}

/// Opens `path` with the comparator its MANIFEST names, or salvages it.
fn open(py: Python<'_>, path: &Path, salvage: bool) -> PyResult<RustDb> {
    py.detach(|| read::open(path, salvage, DbOptions::default()))
        .map_err(|e| crate::errors::open_error(path, e))
}

fn reading(salvage: bool) -> Reading {
    if salvage {
        Reading::Versions
    } else {
        Reading::Live
    }
}

fn records(
    path: PathBuf,
    iter: impl Iterator<Item = leveltable_db::Result<Value>> + Send + 'static,
) -> Records {
    Records {
        path,
        iter: Mutex::new(Box::new(iter)),
    }
}

/// Every `localStorage` item of a Local Storage directory (`Default/Local Storage/leveldb`):
/// dicts with `origin`, `key`, `value`; with `salvage=True`, every version LevelDB's repair
/// would find, each with `sequence` and `state` (`live`, `deleted`, `shadowed`).
#[pyfunction]
#[pyo3(signature = (path, *, salvage = false))]
fn local_storage(py: Python<'_>, path: FsPath, salvage: bool) -> PyResult<Records> {
    let path = path.0;
    let db = open(py, &path, salvage)?;
    let iter = read::local_storage::records(&db, reading(salvage));
    Ok(records(path, iter))
}

/// Every `sessionStorage` item of a Session Storage directory (`Default/Session Storage`),
/// once per tab holding it: dicts with `namespace`, `origin`, `key`, `value`, `map_id`.
#[pyfunction]
#[pyo3(signature = (path, *, salvage = false))]
fn session_storage(py: Python<'_>, path: FsPath, salvage: bool) -> PyResult<Records> {
    let path = path.0;
    let db = open(py, &path, salvage)?;
    let iter = py
        .detach(|| read::session_storage::records(&db, reading(salvage)))
        .map_err(|e| db_error(&path, e))?;
    Ok(records(path, iter))
}

/// Every record of an IndexedDB directory (`Default/IndexedDB/<origin>.indexeddb.leveldb`),
/// or those of the database and object store named: dicts with `origin`, `database`,
/// `store`, `key`, `value`.
#[pyfunction]
#[pyo3(signature = (path, database = None, store = None, salvage = false))]
fn indexeddb(
    py: Python<'_>,
    path: FsPath,
    database: Option<String>,
    store: Option<String>,
    salvage: bool,
) -> PyResult<Records> {
    let path = path.0;
    let db = open(py, &path, salvage)?;
    let filter = Filter { database, store };
    let iter = py
        .detach(|| read::indexeddb::records(&db, reading(salvage), &filter))
        .map_err(|e| db_error(&path, e))?;
    Ok(records(path, iter))
}

/// The databases of an IndexedDB directory: a list of dicts with `origin`, `database`,
/// `id`, `version` and `object_stores` (each with `name`, `id`, `key_path`,
/// `auto_increment`, `records` and `indexes`).
#[pyfunction]
#[pyo3(signature = (path, *, salvage = false))]
fn indexeddb_databases(py: Python<'_>, path: FsPath, salvage: bool) -> PyResult<Py<PyAny>> {
    let path = path.0;
    let db = open(py, &path, salvage)?;
    let list = py
        .detach(|| read::indexeddb::summary(&db))
        .map_err(|e| db_error(&path, e))?;
    Ok(to_py(py, &Value::Array(list))?.unbind())
}

/// Adds the `chromium` submodule to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let sub = PyModule::new(m.py(), "chromium")?;
    sub.add_class::<Records>()?;
    sub.add_function(wrap_pyfunction!(local_storage, &sub)?)?;
    sub.add_function(wrap_pyfunction!(session_storage, &sub)?)?;
    sub.add_function(wrap_pyfunction!(indexeddb, &sub)?)?;
    sub.add_function(wrap_pyfunction!(indexeddb_databases, &sub)?)?;
    m.add_submodule(&sub)
}
