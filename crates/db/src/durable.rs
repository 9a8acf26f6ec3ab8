//! Files and directories made durable: a small file written through a temporary name and a
//! rename (`CURRENT` among them, as LevelDB's `SetCurrentFile` writes it: see
//! [`manifest_writer::set_current`](crate::manifest_writer::set_current)), and a directory
//! synced so that the names in it survive a crash.

use std::io;
use std::path::Path;

use crate::filename::parent_dir;
use crate::writer::file_system::{FileSystem, LocalFileSystem, WritableFile};
use crate::{Error, Result};

/// How [`write_atomically_with`] makes its temporary file and gives it its final name.
pub(crate) trait Placing {
    /// Makes the temporary file `path`.
    fn create(&mut self, fs: &dyn FileSystem, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Renames the temporary file `from` to its final name `to`.
    fn rename(&mut self, fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()>;
}

/// [`FileSystem::create`] and [`FileSystem::rename`], as they are.
pub(crate) struct Plain;

impl Placing for Plain {
    fn create(&mut self, fs: &dyn FileSystem, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        fs.create(path)
    }

    fn rename(&mut self, fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()> {
        fs.rename(from, to)
    }
}

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
    write_atomically_with(fs, dir, (temp, name), contents, &mut Plain)?;
    sync_dir_on(fs, dir)
}

/// [`write_atomically`] with the temporary file made and renamed as `placing` says, and
/// `dir` left for the caller to sync (its new name is not yet durable). A temporary file
/// this made is removed if the write or the rename fails.
pub(crate) fn write_atomically_with(
    fs: &dyn FileSystem,
    dir: &Path,
    (temp, name): (&str, &str),
    contents: &[u8],
    placing: &mut dyn Placing,
) -> Result<()> {
    let path = dir.join(name);
    let temp = dir.join(temp);
    let mut file = placing
        .create(fs, &temp)
        .map_err(|e| Error::op("cannot create", &temp, e))?;
    let written = file
        .write_all(contents)
        .map_err(|e| Error::op("cannot write", &temp, e))
        .and_then(|()| file.sync().map_err(|e| Error::op("cannot sync", &temp, e)))
        // A failed close may have lost what was written (a delayed write error).
        .and_then(|()| {
            file.close()
                .map_err(|e| Error::op("cannot write", &temp, e))
        });
    if let Err(e) = written {
        let _ = fs.remove(&temp);
        return Err(e);
    }
    placing.rename(fs, &temp, &path).map_err(|e| {
        let _ = fs.remove(&temp);
        Error::op(format!("cannot rename {} to", temp.display()), &path, e)
    })
}

/// Creates the directory `dir` and its missing parents through `fs`, syncing the parent of
/// each one made, so that `dir`'s path survives a power loss once this returns. A `dir`
/// that is already a directory is left as it is (one made meanwhile by another process is
/// that process's to sync).
///
/// # Errors
/// [`Error::FileOp`] (`cannot create`, `cannot sync`) naming the directory.
pub(crate) fn create_dirs_on(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    // The directories to make, innermost first.
    let mut missing = vec![dir];
    let mut at = parent_dir(dir);
    while !at.exists() && parent_dir(at) != at {
        missing.push(at);
        at = parent_dir(at);
    }
    for &made in missing.iter().rev() {
        match fs.create_dir(made) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && made.is_dir() => continue,
            Err(e) => return Err(Error::op("cannot create", made, e)),
        }
        sync_dir_on(fs, parent_dir(made))?;
    }
    Ok(())
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
