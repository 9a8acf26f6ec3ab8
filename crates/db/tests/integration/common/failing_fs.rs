//! A file system that fails on demand: the operation numbered `fail_at` (listing a directory,
//! asking its modification time, reading a file, opening a file to read as it grows and
//! each read of it or look at its size, opening a table, looking at a file, opening one to
//! read at any offset and each read and look at it, creating, writing, syncing, renaming,
//! linking, removing, making a directory or syncing one, locking a file and unlocking it)
//! fails with the OS error `kind`; the others go to the local file system.

use std::fs::Metadata;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use leveltable_db::storage::{LocalDir, Storage, TailFile};
use leveltable_db::table_source::TableSource;
use leveltable_db::{FileLock, FileSystem, LocalFileSystem, ReadableFile, WritableFile};
use leveltable_table::ReadAt;

/// ENOSPC.
pub const ENOSPC: i32 = 28;
/// EIO.
pub const EIO: i32 = 5;

/// Counts operations and fails the one numbered `fail_at`.
#[derive(Debug)]
pub struct Failing {
    ops: AtomicU64,
    fail_at: u64,
    kind: i32,
}

impl Failing {
    /// Fails operation `fail_at` with the OS error `kind`.
    pub fn new(fail_at: u64, kind: i32) -> Arc<Failing> {
        Arc::new(Failing {
            ops: AtomicU64::new(0),
            fail_at,
            kind,
        })
    }

    fn tick(&self) -> io::Result<()> {
        if self.ops.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(io::Error::from_raw_os_error(self.kind));
        }
        Ok(())
    }

    /// The operations counted so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::SeqCst)
    }

    /// Whether the failing operation was reached.
    pub fn failed(&self) -> bool {
        self.ops.load(Ordering::SeqCst) > self.fail_at
    }
}

struct FailingFile {
    inner: Box<dyn WritableFile>,
    fs: Arc<Failing>,
}

impl Write for FailingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.fs.tick()?;
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl WritableFile for FailingFile {
    fn sync(&mut self) -> io::Result<()> {
        self.fs.tick()?;
        self.inner.sync()
    }
}

/// A file read as it grows, failing as its [`Failing`] says.
struct FailingTail {
    inner: Box<dyn TailFile>,
    fs: Arc<Failing>,
}

impl Read for FailingTail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.fs.tick()?;
        self.inner.read(buf)
    }
}

impl Seek for FailingTail {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl TailFile for FailingTail {
    fn size(&self) -> io::Result<u64> {
        self.fs.tick()?;
        self.inner.size()
    }
}

/// A file read at any offset, failing as its [`Failing`] says.
#[derive(Debug)]
struct FailingRead {
    inner: Arc<dyn ReadableFile>,
    fs: Arc<Failing>,
}

impl ReadAt for FailingRead {
    fn size(&self) -> io::Result<u64> {
        self.fs.tick()?;
        self.inner.size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.fs.tick()?;
        self.inner.read_exact_at(buf, offset)
    }
}

impl ReadableFile for FailingRead {
    fn metadata(&self) -> io::Result<Metadata> {
        self.fs.tick()?;
        self.inner.metadata()
    }
}

/// A held lock whose unlock fails as its [`Failing`] says (the lock is released all the
/// same, as it is dropped).
#[derive(Debug)]
struct FailingLock {
    inner: Box<dyn FileLock>,
    fs: Arc<Failing>,
}

impl FileLock for FailingLock {
    fn created(&self) -> bool {
        self.inner.created()
    }

    fn unlock(self: Box<Self>) -> io::Result<()> {
        self.fs.tick()?;
        self.inner.unlock()
    }
}

/// The file system failing as its [`Failing`] says.
#[derive(Debug)]
pub struct FailingFs(pub Arc<Failing>);

impl FailingFs {
    fn wrap(&self, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        Box::new(FailingFile {
            inner: file,
            fs: Arc::clone(&self.0),
        })
    }
}

/// The files of a directory, read as its [`Failing`] says.
struct FailingStorage {
    inner: LocalDir,
    fs: Arc<Failing>,
}

impl Storage for FailingStorage {
    fn path(&self) -> PathBuf {
        self.inner.path()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.fs.tick()?;
        self.inner.list()
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.fs.tick()?;
        self.inner.read(name)
    }

    fn read_bounded(&self, name: &str, limit: u64) -> io::Result<Vec<u8>> {
        self.fs.tick()?;
        self.inner.read_bounded(name, limit)
    }

    fn read_stream(&self, name: &str, limit: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        self.fs.tick()?;
        self.inner.read_stream(name, limit)
    }

    fn open_table(&self, name: &str, memory_map: bool) -> io::Result<TableSource> {
        self.fs.tick()?;
        self.inner.open_table(name, memory_map)
    }

    fn fingerprint(&self) -> Option<(Vec<u8>, u64)> {
        self.inner.fingerprint()
    }

    fn open_tail(&self, name: &str) -> io::Result<Box<dyn TailFile>> {
        self.fs.tick()?;
        Ok(Box::new(FailingTail {
            inner: self.inner.open_tail(name)?,
            fs: Arc::clone(&self.fs),
        }))
    }

    fn modified(&self) -> io::Result<Option<SystemTime>> {
        self.fs.tick()?;
        self.inner.modified()
    }
}

impl FileSystem for FailingFs {
    fn storage(&self, dir: &Path) -> Arc<dyn Storage> {
        Arc::new(FailingStorage {
            inner: LocalDir::new(dir),
            fs: Arc::clone(&self.0),
        })
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.0.tick()?;
        Ok(self.wrap(LocalFileSystem.create(path)?))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.0.tick()?;
        Ok(self.wrap(LocalFileSystem.create_new(path)?))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        LocalFileSystem.create_dir(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.tick()?;
        LocalFileSystem.hard_link(from, to)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.tick()?;
        LocalFileSystem.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        LocalFileSystem.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.tick()?;
        LocalFileSystem.sync_dir(dir)
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.0.tick()?;
        LocalFileSystem.symlink_metadata(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.0.tick()?;
        Ok(Arc::new(FailingRead {
            inner: LocalFileSystem.open_read(path)?,
            fs: Arc::clone(&self.0),
        }))
    }

    fn lock_file(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.0.tick()?;
        Ok(Box::new(FailingLock {
            inner: LocalFileSystem.lock_file(path)?,
            fs: Arc::clone(&self.0),
        }))
    }
}
