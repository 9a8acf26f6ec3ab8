//! Locks of files ([`FileLock`], LevelDB's `FileLock`), and the local file system's: a
//! database's `LOCK` locked as LevelDB 1.23 locks it, so that a LevelDB process and this
//! crate exclude each other from a database they would change.
//!
//! LevelDB's `DB::Open` opens `DIR/LOCK` for reading and writing, creating it (mode 0644)
//! if missing, and takes a POSIX record lock (`fcntl(F_SETLK)`, a write lock on the whole
//! file, never waiting) that it holds until the database is closed; the file itself is never
//! removed. The local file system's [`lock_file`](crate::FileSystem::lock_file), which
//! [`DbLock`](crate::DbLock) calls, does the same, so each fails while the other holds the
//! directory. (`flock(2)` locks would not do: on Linux they do not see `fcntl` locks.)
//!
//! A POSIX record lock belongs to the process, not to the file handle: a second lock of the
//! same file in the same process succeeds, and closing *any* handle of the file in the
//! process releases the lock. LevelDB therefore keeps a table of the files it has locked
//! and refuses a second lock of one; the local file system keeps its own table, keyed by
//! the file's device and inode (so that two paths to one file are one entry), and never
//! closes a handle of a file it holds while the lock is held: a refused second attempt's
//! handle is kept with the lock and closed after it. Two consequences for a program:
//!
//! - do not open and close a database's `LOCK` file by other means while a
//!   [`DbLock`](crate::DbLock) of it is held: the close would release the lock;
//! - LevelDB linked into the same process keeps its own table, which does not know ours:
//!   LevelDB opening a directory this process holds would succeed, and release our lock
//!   when it closes. Within one process, open a directory either with LevelDB or with this
//!   crate's writers.
//!
//! On platforms other than Unix there is no system lock here (LevelDB's Windows
//! environment uses `LockFileEx`, and the standard library's file locks need a newer Rust
//! than this crate's minimum): the local file system then creates the file and excludes
//! only other locks of the same process.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::regular_file::{check_regular, explain_open, without_waiting};

/// A lock of a file that a [`FileSystem`](crate::FileSystem) holds for this process
/// (LevelDB's `FileLock`), from [`lock_file`](crate::FileSystem::lock_file). Dropping it
/// releases the lock.
pub trait FileLock: Send + Sync + std::fmt::Debug {
    /// Whether [`lock_file`](crate::FileSystem::lock_file) created the file (it did not exist).
    fn created(&self) -> bool;

    /// Releases the lock (LevelDB's `Env::UnlockFile`). The lock is released even if this
    /// fails: the error is only reported.
    ///
    /// # Errors
    /// The system's.
    fn unlock(self: Box<Self>) -> io::Result<()>;
}

/// The error of a [`lock_file`](crate::FileSystem::lock_file) refused because the lock is
/// held: of kind [`io::ErrorKind::WouldBlock`], saying whether this process holds it.
/// [`DbLock`](crate::DbLock) makes it an [`Error::Locked`](crate::Error::Locked).
pub(crate) fn lock_held(by_this_process: bool) -> io::Error {
    io::Error::new(io::ErrorKind::WouldBlock, Held { by_this_process })
}

/// What [`lock_held`] carries.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) by_this_process: bool,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = if self.by_this_process {
            "this process"
        } else {
            "another process"
        };
        write!(f, "locked by {who}")
    }
}

impl std::error::Error for Held {}

/// A lock of a local file (the local file system's
/// [`lock_file`](crate::FileSystem::lock_file)).
#[derive(Debug)]
pub(crate) struct LocalLock {
    /// The locked handle; its close releases the lock. `None` once released.
    file: Option<File>,
    /// Its entry in the table of locks this process holds.
    key: FileKey,
    /// Whether [`lock_local`] created the file.
    created: bool,
}

/// Locks the local file `path` as LevelDB's `PosixEnv::LockFile` does: opened for reading
/// and writing, created with mode 0644 if missing, a non-blocking `fcntl` write lock of the
/// whole file, refused if this process holds it already. Follows no symbolic link, does
/// not wait on a FIFO, and refuses anything but a regular file.
///
/// # Errors
/// [`lock_held`] if a process holds the lock; the system's, explained for what is not a regular
/// file.
pub(crate) fn lock_local(path: &Path) -> io::Result<LocalLock> {
    // A file this process holds is refused before it is opened, so that retries keep no
    // handles (the check after the open, below, is the one that counts).
    if let Ok(seen) = fs::symlink_metadata(path)
        && seen.is_file()
        && let Ok(key) = FileKey::of(path, &seen)
        && table().contains_key(&key)
    {
        return Err(lock_held(true));
    }
    let (file, created) = open_lock_file(path).map_err(|e| explain_open(path, e))?;
    let metadata = file.metadata()?;
    check_regular(&metadata)?;
    let key = FileKey::of(path, &metadata)?;
    let mut table = table();
    if let Some(refused) = table.get_mut(&key) {
        // Closing this handle now would release the holder's lock: it goes with it.
        refused.push(file);
        return Err(lock_held(true));
    }
    match system_lock(&file) {
        Ok(()) => {}
        Err(e) if held_elsewhere(&e) => return Err(lock_held(false)),
        Err(e) => return Err(e),
    }
    table.insert(key.clone(), Vec::new());
    drop(table);
    Ok(LocalLock {
        file: Some(file),
        key,
        created,
    })
}

impl LocalLock {
    /// Releases the lock: an explicit unlock (its result returned), then the close.
    fn release(&mut self) -> io::Result<()> {
        // Under the table's lock: another thread's attempt on this file either stashed its
        // handle here (closed below, after the unlock) or waits and then locks anew.
        let mut table = table();
        let refused = table.remove(&self.key).unwrap_or_default();
        let mut unlocked = Ok(());
        if let Some(file) = self.file.take() {
            // As LevelDB's UnlockFile: an explicit unlock, then the close (which releases
            // the lock anyway).
            unlocked = system_unlock(&file);
            drop(file);
        }
        drop(refused);
        unlocked
    }
}

impl FileLock for LocalLock {
    fn created(&self) -> bool {
        self.created
    }

    fn unlock(mut self: Box<Self>) -> io::Result<()> {
        self.release()
    }
}

impl Drop for LocalLock {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = self.release();
        }
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
    Path(std::path::PathBuf),
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
