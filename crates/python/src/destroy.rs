//! `destroy_db`: a database's files deleted under its lock, as LevelDB's `DestroyDB`
//! ([`leveltable_db::destroy_db`]).

use leveltable_db::Error;
use pyo3::prelude::*;

use crate::db_write::locked_error;
use crate::errors::db_error;
use crate::fs_path::FsPath;

/// Deletes the database in `name`, as LevelDB's `DestroyDB`: under its lock (taken as an
/// open takes it, so a database this process or another holds open raises `OSError` and
/// loses nothing), the files of a database are deleted, then `LOCK`, then the directory
/// if nothing else is left in it. `CURRENT` goes first, its deletion synced before any
/// other file goes, so that a deletion cut short (an error, a crash, a power loss) leaves
/// the whole database or no `CURRENT`. A directory that cannot be listed (missing, or not a
/// directory) is no error. The first file that cannot be deleted raises `OSError`.
#[pyfunction]
pub fn destroy_db(py: Python<'_>, name: FsPath) -> PyResult<()> {
    let dir = name.0;
    py.detach(|| leveltable_db::destroy_db(&dir))
        .map_err(|e| match e {
            Error::Locked { .. } => locked_error(&e),
            e => db_error(&dir, e),
        })
}
