//! The `LOCK` file of a database directory, locked as LevelDB 1.23 locks it, so that a
//! LevelDB process and this crate exclude each other from a database they would change.
//!
//! LevelDB's `DB::Open` opens `DIR/LOCK` for reading and writing, creating it (mode 0644)
//! if missing, and takes a POSIX record lock (`fcntl(F_SETLK)`, a write lock on the whole
//! file, never waiting) that it holds until the database is closed; the file itself is never
//! removed. [`DbLock::acquire`] does the same, so each fails while the other holds the
//! directory. The lock is taken and released through the database's [`FileSystem`]
//! ([`lock_file`](FileSystem::lock_file), [`FileLock::unlock`]); the local file system's
//! lock, and what it means for a program, is described in [`crate::file_lock`].

use std::io;
use std::path::{Path, PathBuf};

use crate::file_lock::{FileLock, Held};
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// The name of the lock file in a database directory.
pub const LOCK_FILE: &str = "LOCK";

/// The path of `dir`'s lock file, `dir/LOCK`.
pub fn lock_file_name(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

/// A held lock of a database directory's `LOCK` file; released when dropped. The file stays
/// in place, as LevelDB leaves it.
#[derive(Debug)]
pub struct DbLock {
    /// The lock, as the file system holds it; dropping it releases it.
    lock: Option<Box<dyn FileLock>>,
    /// The lock file.
    path: PathBuf,
}

impl DbLock {
    /// Locks `dir/LOCK` as LevelDB's `DB::Open` does: the file is opened for reading and
    /// writing, created with mode 0644 if missing (`dir` itself must exist), and locked with
    /// a non-blocking `fcntl` write lock of the whole file. Never waits.
    ///
    /// The open follows no symbolic link and does not wait on a FIFO; a `LOCK` that is not a
    /// regular file (a symbolic link, FIFO, device, socket or directory) is refused, and
    /// nothing is created behind a link.
    ///
    /// # Errors
    /// [`Error::Locked`] (naming `dir/LOCK`) if another process holds the lock (LevelDB with
    /// the database open, or another program of this crate), or if this process does (another
    /// [`DbLock`] of the same file); [`Error::FileOp`] (`cannot lock`, naming `dir/LOCK`) if the
    /// file cannot be opened or created, is not a regular file, or the system refuses the
    /// lock for another reason (a file system without locks).
    pub fn acquire(dir: impl AsRef<Path>) -> Result<DbLock> {
        DbLock::acquire_on(&LocalFileSystem, dir)
    }

    /// [`acquire`](Self::acquire) through `file_system`'s
    /// [`lock_file`](FileSystem::lock_file); the lock is released through it too.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_on(file_system: &dyn FileSystem, dir: impl AsRef<Path>) -> Result<DbLock> {
        let path = lock_file_name(dir.as_ref());
        match file_system.lock_file(&path) {
            Ok(lock) => Ok(DbLock {
                lock: Some(lock),
                path,
            }),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let by_this_process = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<Held>())
                    .is_some_and(|held| held.by_this_process);
                Err(Error::Locked {
                    path,
                    by_this_process,
                })
            }
            Err(e) => Err(Error::op("cannot lock", &path, e)),
        }
    }

    /// The lock file, `dir/LOCK`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`acquire`](Self::acquire) created the file (it did not exist before).
    pub fn created(&self) -> bool {
        self.lock.as_ref().is_some_and(|lock| lock.created())
    }
}

impl Drop for DbLock {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            // As LevelDB's database closing, an error of the unlock changes nothing: the lock
            // is released all the same.
            let _ = lock.unlock();
        }
    }
}
