//! Where a database's files are listed, read, created, synced, renamed and deleted
//! (LevelDB's `Env`). The default is the local file system; a test can give one that fails
//! on demand, to check that every failure reaches the caller and loses nothing.

use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use leveltable_table::ReadAt;

use crate::file_lock::{FileLock, lock_local};
use crate::regular_file::create_regular;
use crate::storage::open_no_follow;
use crate::storage::{LocalDir, Storage};

/// A file being written.
pub trait WritableFile: Write + Send {
    /// Makes what was written durable (`fdatasync`).
    ///
    /// # Errors
    /// The system's.
    fn sync(&mut self) -> io::Result<()>;

    /// Closes the file, reporting an error the system reports then (a network file system
    /// may report a lost write only here). The writer closes each table and the file that
    /// replaces `CURRENT` this way, after syncing it, and fails the flush, compaction or
    /// open on an error. By default the file is dropped and `Ok` returned; a
    /// [`File`](std::fs::File) is closed with `close(2)` and its result reported (on Unix;
    /// `EINTR` counts as closed, as it is on Linux).
    ///
    /// # Errors
    /// The system's.
    fn close(self: Box<Self>) -> io::Result<()> {
        Ok(())
    }

    /// Starts writing what was written to the disk, without waiting for it: a head start
    /// for a [`sync`](Self::sync) that comes later, so that the writes of several files
    /// overlap. Only a hint; by default nothing.
    fn start_writeback(&mut self) {}

    /// A way to sync this file, which is at `path`, from another thread while it is written
    /// on, if it has one: each call makes durable at least what was written before the call
    /// began. A write-ahead log syncs most of what it holds in the background this way, so
    /// that the sync when its memtable is full waits for little, and does not wait for a
    /// background sync still running. So a write that a background sync fails to make
    /// durable must make the file's own next [`sync`](Self::sync) fail as well.
    ///
    /// A [`File`](std::fs::File) opens `path` anew (if it is still the same file) and
    /// syncs it with `fdatasync`: Linux reports a failed write to every open description of
    /// the file, where a `dup` of the file's descriptor would share one report with it, and
    /// the sync that took it would leave the other none. By default none: every sync is
    /// [`sync`](Self::sync).
    fn background_sync(&self, path: &Path) -> Option<BackgroundSyncFn> {
        let _ = path;
        None
    }
}

/// Syncs a file from another thread: see [`WritableFile::background_sync`].
pub type BackgroundSyncFn = Box<dyn FnMut() -> io::Result<()> + Send>;

impl WritableFile for File {
    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn start_writeback(&mut self) {
        start_writeback(self);
    }

    fn close(self: Box<Self>) -> io::Result<()> {
        close_reporting(*self)
    }

    fn background_sync(&self, path: &Path) -> Option<BackgroundSyncFn> {
        let file = reopen(self, path)?;
        Some(Box::new(move || file.sync_data()))
    }
}

/// `path` opened anew (read-only, not through a symbolic link) if it is the file `file` is
/// open on: an open file description of its own, with its own report of failed writes.
#[cfg(unix)]
fn reopen(file: &File, path: &Path) -> Option<File> {
    use std::os::unix::fs::MetadataExt;
    let reopened = open_no_follow(path).ok()?;
    let (a, b) = (file.metadata().ok()?, reopened.metadata().ok()?);
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(reopened)
}

/// Elsewhere files are synced on the writer's thread only.
#[cfg(not(unix))]
fn reopen(_file: &File, _path: &Path) -> Option<File> {
    None
}

/// Closes `file` with `close(2)`, reporting its error (dropping a `File` ignores it).
#[cfg(unix)]
#[allow(
    unsafe_code,
    reason = "the result of close(2) is only reachable through the raw descriptor"
)]
fn close_reporting(file: File) -> io::Result<()> {
    use std::os::fd::IntoRawFd;
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was owned by `file`, which gave it up above: nothing else uses or closes
    // it, and it is closed exactly once, here.
    if unsafe { libc::close(fd) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    // Linux releases the descriptor even when interrupted: retrying could close another.
    if e.kind() == io::ErrorKind::Interrupted {
        return Ok(());
    }
    Err(e)
}

/// Elsewhere the file is dropped.
#[cfg(not(unix))]
fn close_reporting(file: File) -> io::Result<()> {
    drop(file);
    Ok(())
}

/// Starts writing the dirty pages of `file` to the disk without waiting for them
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`). Only a head start: the sync that follows is
/// what makes the file durable, so an error here is ignored.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sync_file_range has no safe wrapper in the crates we use"
)]
fn start_writeback(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range reads and writes no memory of this process; it is given a
    // descriptor that `file` keeps open for the duration of the call, and plain integers.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

/// Elsewhere the sync does all the work.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File) {}

/// A file open for reading at any offset (a bulk commit's staged tables), which says what
/// was opened.
pub trait ReadableFile: ReadAt + std::fmt::Debug {
    /// What the handle opened: its type, size, device and inode.
    ///
    /// # Errors
    /// The system's.
    fn metadata(&self) -> io::Result<Metadata>;
}

impl ReadableFile for File {
    fn metadata(&self) -> io::Result<Metadata> {
        File::metadata(self)
    }
}

/// The file operations of a database: what read-only opens, recoveries and salvages read
/// (through the [`Storage`] of a directory, [`storage`](Self::storage)), and what the
/// writer, bulk builds and commits create, write, sync, rename and delete. Tests give a
/// database one that fails on demand.
pub trait FileSystem: Send + Sync + std::fmt::Debug {
    /// The files of the directory `dir`, for listing and reading. By default the local
    /// directory ([`LocalDir`]), which reads only regular files.
    fn storage(&self, dir: &Path) -> Arc<dyn Storage> {
        Arc::new(LocalDir::new(dir))
    }

    /// Creates `path`, a new empty file (a file already there, left by a process that died,
    /// is replaced or emptied).
    ///
    /// # Errors
    /// The system's; [`LocalFileSystem`] refuses anything but a regular file at `path`.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;

    /// Creates the write-ahead log `path`, as [`create`](Self::create). Every write to it
    /// must be in the system's hands (surviving the end of the process) once `flush`
    /// returns, and the file must only grow by appends, in order, as `write` does: at every
    /// instant it holds whole records followed at most by part of one, so a reader of it
    /// sees a prefix of the records, and so does a log cut short by a crash. By default,
    /// [`create`](Self::create).
    ///
    /// # Errors
    /// The system's.
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }

    /// Renames `from` to `to`, replacing `to`.
    ///
    /// # Errors
    /// The system's.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Deletes `path`.
    ///
    /// # Errors
    /// The system's.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// Makes the names in `dir` durable.
    ///
    /// # Errors
    /// The system's.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Creates `path`, a new empty file, failing if anything is at its name (a bulk build's
    /// table files and the files a commit makes). By default the local file system's
    /// `create_new`.
    ///
    /// # Errors
    /// The system's; [`io::ErrorKind::AlreadyExists`] if the name is taken.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(File::create_new(path)?))
    }

    /// Creates the directory `path` (its parent must exist). By default the local file
    /// system's.
    ///
    /// # Errors
    /// The system's; [`io::ErrorKind::AlreadyExists`] if the name is taken.
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    /// Gives the file `from` the second name `to` (a hard link; `to` must not exist). By
    /// default the local file system's.
    ///
    /// # Errors
    /// The system's; a file system without hard links (or `from` on another device) fails,
    /// and a commit copies instead.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    /// Makes the bytes of the existing file `path` durable (a staged table given a second
    /// name by a commit, written by whoever staged it, maybe never synced). By default the
    /// local file system's: opened for reading, following no symbolic link, and synced.
    ///
    /// # Errors
    /// The system's.
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        open_no_follow(path)?.sync_data()
    }

    /// Locks the file `path` for this process, creating it if missing (its directory must
    /// exist), without waiting (LevelDB's `Env::LockFile`): a database's `LOCK`. By default
    /// the local file system's POSIX record lock, as LevelDB takes it (see [`DbLock`]).
    ///
    /// # Errors
    /// A lock held elsewhere is an error of kind [`io::ErrorKind::WouldBlock`], saying
    /// whether this process or another holds it; otherwise the system's. The local file system refuses
    /// anything but a regular file at `path`, following no symbolic link.
    ///
    /// [`DbLock`]: crate::DbLock
    fn lock_file(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        Ok(Box::new(lock_local(path)?))
    }

    /// What stands at `path`, a symbolic link not followed (`lstat`): a bulk commit looks
    /// at a staged file before it opens it. By default the local file system's.
    ///
    /// # Errors
    /// The system's.
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        std::fs::symlink_metadata(path)
    }

    /// Opens `path` for reading at any offset (a bulk commit's staged tables), following no
    /// final symbolic link and never waiting on a FIFO; the caller checks what was opened
    /// ([`ReadableFile::metadata`]). By default the local file system's.
    ///
    /// # Errors
    /// The system's.
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(open_no_follow(path)?))
    }
}

/// The local file system. A file is created only as a regular file in the directory: a
/// symbolic link at its name is refused, not followed (nothing outside the directory is
/// written), a FIFO is refused without waiting for a reader, and a directory, device or
/// socket is refused, each with an error saying what is there and left in place; a regular
/// file left at the name is replaced (see [`create`](FileSystem::create)). Renames and
/// removals act on names: a link is replaced or removed, never what it points to.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalFileSystem;

impl FileSystem for LocalFileSystem {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(create_regular(path, false)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        leveltable_process::sync_dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file closed through `close` keeps what was written, and its descriptor is released
    /// once (the next file opened may reuse it, and stays usable).
    #[test]
    fn close_reports_and_releases_the_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..64 {
            let path = dir.path().join(format!("{i}"));
            let mut file = LocalFileSystem.create(&path).unwrap();
            file.write_all(b"written").unwrap();
            file.sync().unwrap();
            file.close().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"written");
        }
        // A descriptor released twice would close this file under it.
        let path = dir.path().join("last");
        let mut kept = File::create(&path).unwrap();
        let mut file = LocalFileSystem.create(&dir.path().join("other")).unwrap();
        file.write_all(b"x").unwrap();
        file.close().unwrap();
        kept.write_all(b"still open").unwrap();
        kept.sync_all().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"still open");
    }

    /// A file's background sync opens its path anew, and only if the path still names the
    /// file: not another file, not a symbolic link to it.
    #[cfg(unix)]
    #[test]
    fn a_background_sync_opens_the_same_file_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.log");
        let mut file = LocalFileSystem.create_log(&path).unwrap();
        file.write_all(b"record").unwrap();
        file.flush().unwrap();
        let mut sync = file
            .background_sync(&path)
            .expect("a file has a background sync");
        sync().unwrap();
        file.write_all(b" and more").unwrap();
        file.flush().unwrap();
        sync().unwrap();

        let other = dir.path().join("other");
        std::fs::write(&other, b"").unwrap();
        assert!(file.background_sync(&other).is_none(), "another file");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(file.background_sync(&link).is_none(), "a symbolic link");
        std::fs::remove_file(&path).unwrap();
        assert!(
            file.background_sync(&path).is_none(),
            "a name no longer there"
        );
    }
}
