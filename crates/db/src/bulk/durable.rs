//! Files and directories made durable: a small file written through a temporary name and a
//! rename, and a directory synced so that the names in it survive a crash.

use std::path::Path;

use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// Writes `dir/name` through the temporary file `dir/temp` and a rename, synced, then syncs
/// `dir`. The temporary file is made by [`FileSystem::create`]: on the local file system a
/// FIFO, link or directory found at its name is refused and left alone, never followed or
/// waited on.
pub(crate) fn write_atomically(
    fs: &dyn FileSystem,
    dir: &Path,
    temp: &str,
    name: &str,
    contents: &[u8],
) -> Result<()> {
    let path = dir.join(name);
    let temp = dir.join(temp);
    let mut file = fs
        .create(&temp)
        .map_err(|e| Error::op("cannot create", &temp, e))?;
    file.write_all(contents)
        .map_err(|e| Error::op("cannot write", &temp, e))?;
    file.sync()
        .and_then(|()| file.close())
        .map_err(|e| Error::op("cannot sync", &temp, e))?;
    fs.rename(&temp, &path).map_err(|e| {
        let _ = fs.remove(&temp);
        Error::op(format!("cannot rename {} to", temp.display()), &path, e)
    })?;
    sync_dir_on(fs, dir)
}

/// Syncs a directory on the local file system, so that the names in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    sync_dir_on(&LocalFileSystem, dir)
}

/// Syncs a directory, so that the names in it survive a crash
/// ([`FileSystem::sync_dir`], with the error naming it).
pub(crate) fn sync_dir_on(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| Error::op("cannot sync", dir, e))
}
