//! `destroy_db`: a database's files deleted under its lock, as LevelDB's `DestroyDB`.

use std::path::Path;

use leveltable_db::filename::{FileType, parse_file_name};
use leveltable_db::{DbLock, Error};
use pyo3::prelude::*;

use crate::db_write::locked_error;
use crate::errors::db_error;
use crate::fs_path::FsPath;

/// Deletes the database in `name`, as LevelDB's `DestroyDB`: under its lock (taken as an
/// open takes it, so a database this process or another holds open raises `OSError` and
/// loses nothing), the files of a database are deleted, then `LOCK`, then the directory
/// if nothing else is left in it. A directory that cannot be listed (missing, or not a
/// directory) is no error. The first file that cannot be deleted raises `OSError`.
#[pyfunction]
pub fn destroy_db(py: Python<'_>, name: FsPath) -> PyResult<()> {
    let dir = name.0;
    py.detach(|| destroy(&dir)).map_err(|e| match e {
        Error::Locked { .. } => locked_error(&e),
        e => db_error(&dir, e),
    })
}

fn destroy(dir: &Path) -> leveltable_db::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let lock = DbLock::acquire(dir)?;
    let mut failed = None;
    for name in &names {
        if parse_file_name(name).is_some_and(|t| t != FileType::Lock) {
            let path = dir.join(name);
            if let Err(e) = std::fs::remove_file(&path) {
                failed.get_or_insert(Error::FileOp {
                    doing: "cannot delete".into(),
                    path,
                    source: e,
                });
            }
        }
    }
    let lock_path = lock.path().to_owned();
    drop(lock);
    let _ = std::fs::remove_file(lock_path);
    // Other files are left, and the directory with them, as LevelDB leaves them.
    let _ = std::fs::remove_dir(dir);
    failed.map_or(Ok(()), Err)
}
