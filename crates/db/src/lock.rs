//! The `LOCK` file of a database directory, locked as LevelDB 1.23 locks it, so that a
//! LevelDB process and this crate exclude each other from a database they would change.
//!
//! LevelDB's `DB::Open` opens `DIR/LOCK` for reading and writing, creating it (mode 0644)
//! if missing, and takes a POSIX record lock (`fcntl(F_SETLK)`, a write lock on the whole
//! file, never waiting) that it holds until the database is closed; the file itself is never
//! removed. [`DbLock::acquire`] does the same, so each fails while the other holds the
//! directory. (`flock(2)` locks would not do: on Linux they do not see `fcntl` locks.)
//!
//! A POSIX record lock belongs to the process, not to the file handle: a second lock of the
//! same file in the same process succeeds, and closing *any* handle of the file in the
//! process releases the lock. LevelDB therefore keeps a table of the files it has locked
//! and refuses a second lock of one; [`DbLock`] keeps its own table, keyed by the file's
//! device and inode (so that two paths to one file are one entry), and never closes a
//! handle of a file it holds while the lock is held: a refused second attempt's handle is
//! kept with the lock and closed after it. Two consequences for a program:
//!
//! - do not open and close a database's `LOCK` file by other means while a [`DbLock`] of
//!   it is held: the close would release the lock;
//! - LevelDB linked into the same process keeps its own table, which does not know ours:
//!   LevelDB opening a directory this process holds would succeed, and release our lock
//!   when it closes. Within one process, open a directory either with LevelDB or with this
//!   crate's writers.
//!
//! On platforms other than Unix there is no system lock here (LevelDB's Windows
//! environment uses `LockFileEx`, and the standard library's file locks need a newer Rust
//! than this crate's minimum): [`DbLock`] then creates the file and excludes only other
//! [`DbLock`]s of the same process.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::regular_file::{check_regular, explain_open, without_waiting};
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
    /// The locked handle; its close releases the lock.
    file: Option<File>,
    /// The lock file.
    path: PathBuf,
    /// Its entry in the table of locks this process holds.
    key: FileKey,
    /// Whether [`acquire`](Self::acquire) created the file.
    created: bool,
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
        let path = lock_file_name(dir.as_ref());
        let cannot = |e| Error::op("cannot lock", &path, e);
        // A file this process holds is refused before it is opened, so that retries keep no
        // handles (the check after the open, below, is the one that counts).
        if let Ok(seen) = fs::symlink_metadata(&path)
            && seen.is_file()
            && let Ok(key) = FileKey::of(&path, &seen)
            && table().contains_key(&key)
        {
            return Err(Error::Locked {
                path,
                by_this_process: true,
            });
        }
        let (file, created) = open_lock_file(&path).map_err(|e| cannot(explain_open(&path, e)))?;
        let metadata = file.metadata().map_err(cannot)?;
        check_regular(&metadata).map_err(cannot)?;
        let key = FileKey::of(&path, &metadata).map_err(cannot)?;
        let mut table = table();
        if let Some(refused) = table.get_mut(&key) {
            // Closing this handle now would release the holder's lock: it goes with it.
            refused.push(file);
            return Err(Error::Locked {
                path,
                by_this_process: true,
            });
        }
        match system_lock(&file) {
            Ok(()) => {}
            Err(e) if held_elsewhere(&e) => {
                return Err(Error::Locked {
                    path,
                    by_this_process: false,
                });
            }
            Err(e) => return Err(cannot(e)),
        }
        table.insert(key.clone(), Vec::new());
        drop(table);
        Ok(DbLock {
            file: Some(file),
            path,
            key,
            created,
        })
    }

    /// The lock file, `dir/LOCK`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`acquire`](Self::acquire) created the file (it did not exist before).
    pub fn created(&self) -> bool {
        self.created
    }
}

impl Drop for DbLock {
    fn drop(&mut self) {
        // Under the table's lock: another thread's attempt on this file either stashed its
        // handle here (closed below, after the unlock) or waits and then locks anew.
        let mut table = table();
        let refused = table.remove(&self.key).unwrap_or_default();
        if let Some(file) = self.file.take() {
            // As LevelDB's UnlockFile: an explicit unlock, then the close (which would
            // release it anyway); errors change nothing, the close releases the lock.
            let _ = system_unlock(&file);
            drop(file);
        }
        drop(refused);
    }
}

/// Opens (or creates, mode 0644) `path` for reading and writing, following no final
/// symbolic link and not waiting on a FIFO; says whether it was created.
fn open_lock_file(path: &Path) -> io::Result<(File, bool)> {
    match options(true).open(path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Ok((options(false).open(path)?, false))
        }
        Err(e) => Err(e),
    }
}

/// Open options for the lock file: read and write, created if missing (only if `new`,
/// with `create_new`), no final symbolic link followed, no wait on a FIFO.
fn options(new: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o644);
    }
    without_waiting(&mut options, true);
    options
}

/// Whether a refused lock means another process holds it (`EAGAIN` or `EACCES`, as POSIX
/// allows either).
fn held_elsewhere(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES))
            || e.kind() == io::ErrorKind::WouldBlock
    }
    #[cfg(not(unix))]
    {
        e.kind() == io::ErrorKind::WouldBlock
    }
}

/// A non-blocking POSIX write lock of the whole of `file` (`fcntl(F_SETLK)`, `F_WRLCK`,
/// offset 0, length 0), LevelDB's `LockOrUnlock(fd, true)`.
#[cfg(unix)]
fn system_lock(file: &File) -> io::Result<()> {
    rustix::fs::fcntl_lock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(io::Error::from)
}

/// Releases [`system_lock`] (`F_UNLCK` on the whole file).
#[cfg(unix)]
fn system_unlock(file: &File) -> io::Result<()> {
    rustix::fs::fcntl_lock(file, rustix::fs::FlockOperation::NonBlockingUnlock)
        .map_err(io::Error::from)
}

#[cfg(not(unix))]
fn system_lock(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(not(unix))]
fn system_unlock(_: &File) -> io::Result<()> {
    Ok(())
}

/// What identifies a locked file in this process: its device and inode on Unix, its
/// canonical path elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FileKey {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(not(unix))]
    Path(PathBuf),
}

impl FileKey {
    #[cfg(unix)]
    fn of(_: &Path, metadata: &fs::Metadata) -> io::Result<FileKey> {
        use std::os::unix::fs::MetadataExt;
        Ok(FileKey::Inode(metadata.dev(), metadata.ino()))
    }

    #[cfg(not(unix))]
    fn of(path: &Path, _: &fs::Metadata) -> io::Result<FileKey> {
        Ok(FileKey::Path(fs::canonicalize(path)?))
    }
}

/// The files this process holds locked, each with the handles of refused second attempts,
/// closed after the lock is released.
type Table = HashMap<FileKey, Vec<File>>;

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The table, even if a thread panicked holding it (every change is one insert or remove).
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}
