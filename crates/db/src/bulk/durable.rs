//! Files and directories made durable: a small file written through a temporary name and a
//! rename, and a directory synced so that the names in it survive a crash.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// Writes `dir/name` through the temporary file `dir/temp` and a rename, synced, then syncs
/// `dir`.
pub(crate) fn write_atomically(dir: &Path, temp: &str, name: &str, contents: &[u8]) -> Result<()> {
    let path = dir.join(name);
    let temp = dir.join(temp);
    let mut file = File::create(&temp).map_err(|e| Error::op("cannot create", &temp, e))?;
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
