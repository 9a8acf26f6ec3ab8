//! Files and directories made durable: a small file written through a temporary name and a
//! rename, and a directory synced so that the names in it survive a crash.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::regular_file::create_regular;
use crate::{Error, Result};

/// Writes `dir/name` through the temporary file `dir/temp` and a rename, synced, then syncs
/// `dir`. The temporary file is created as a new regular file: a FIFO, link or directory
/// found at its name is refused and left alone, never followed or waited on.
pub(crate) fn write_atomically(dir: &Path, temp: &str, name: &str, contents: &[u8]) -> Result<()> {
    let path = dir.join(name);
    let temp = dir.join(temp);
    let mut file =
        create_regular(&temp, false).map_err(|e| Error::op("cannot create", &temp, e))?;
    file.write_all(contents)
        .map_err(|e| Error::op("cannot write", &temp, e))?;
    file.sync_all()
        .map_err(|e| Error::op("cannot sync", &temp, e))?;
    drop(file);
    fs::rename(&temp, &path).map_err(|e| {
        let _ = fs::remove_file(&temp);
        Error::op(format!("cannot rename {} to", temp.display()), &path, e)
    })?;
    sync_dir(dir)
}

/// Syncs a directory, so that the names in it survive a crash
/// ([`leveltable_process::sync_dir`], with the error naming it).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    leveltable_process::sync_dir(dir).map_err(|e| Error::op("cannot sync", dir, e))
}
