//! The file system: the local one, with every operation recorded.

use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use leveltable_db::{BackgroundSyncFn, FileSystem, LocalFileSystem, WritableFile};

use crate::trace::{Event, Trace};

/// A [`FileSystem`] that writes through to the local one and records each operation, so
/// that [`Trace::image`] can tell what a power loss at any point would leave. Logs are
/// written as plain files (not through a memory map), each write recorded as it is handed
/// to the system.
#[derive(Debug, Default, Clone)]
pub struct PowerLossFs {
    trace: Arc<Mutex<Trace>>,
}

impl PowerLossFs {
    /// A file system with nothing recorded yet.
    pub fn new() -> PowerLossFs {
        PowerLossFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, Trace> {
        self.trace.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of what was recorded so far.
    pub fn trace(&self) -> Trace {
        self.lock().clone()
    }

    /// The number of events so far: a mark's position.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `mark` (say, "write 12 acknowledged") at this point of the run.
    pub fn mark(&self, mark: u64) {
        self.lock().events.push(Event::Mark(mark));
    }
}

/// A file being written, each write recorded.
struct Recorded {
    file: std::fs::File,
    inode: usize,
    trace: Arc<Mutex<Trace>>,
}

impl Recorded {
    fn lock(&self) -> MutexGuard<'_, Trace> {
        self.trace.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Write for Recorded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Under the lock, so that the trace orders the write with other threads' events.
        let trace = Arc::clone(&self.trace);
        let mut t = trace.lock().unwrap_or_else(PoisonError::into_inner);
        let n = self.file.write(buf)?;
        let data = &mut t.data[self.inode];
        data.extend_from_slice(&buf[..n]);
        let len = data.len();
        t.events.push(Event::Write {
            inode: self.inode,
            len,
        });
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl WritableFile for Recorded {
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        let inode = self.inode;
        let mut t = self.lock();
        let len = t.data[inode].len();
        t.events.push(Event::Sync { inode, len });
        Ok(())
    }

    /// Syncs through a second descriptor, recording as durable only what was written
    /// before the sync began: writes made while it runs may or may not be on the disk.
    fn background_sync(&self, _path: &Path) -> Option<BackgroundSyncFn> {
        let file = self.file.try_clone().ok()?;
        let (inode, trace) = (self.inode, Arc::clone(&self.trace));
        Some(Box::new(move || {
            let lock = || trace.lock().unwrap_or_else(PoisonError::into_inner);
            let len = lock().data[inode].len();
            file.sync_data()?;
            lock().events.push(Event::Sync { inode, len });
            Ok(())
        }))
    }
}

impl PowerLossFs {
    /// Records the new file `path`, open as `file`.
    fn created(
        &self,
        t: &mut Trace,
        path: &Path,
        file: std::fs::File,
    ) -> io::Result<Box<dyn WritableFile>> {
        let inode = t.data.len();
        t.data.push(Vec::new());
        t.events.push(Event::Create {
            path: path.to_path_buf(),
            inode,
        });
        Ok(Box::new(Recorded {
            file,
            inode,
            trace: Arc::clone(&self.trace),
        }))
    }
}

impl FileSystem for PowerLossFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut t = self.lock();
        // The local file system's checks (a regular file only, a file left there
        // replaced), then a plain handle to write through.
        drop(LocalFileSystem.create(path)?);
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        self.created(&mut t, path, file)
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut t = self.lock();
        let file = std::fs::File::create_new(path)?;
        self.created(&mut t, path, file)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut t = self.lock();
        std::fs::create_dir(path)?;
        t.events.push(Event::CreateDir {
            path: path.to_path_buf(),
        });
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut t = self.lock();
        std::fs::hard_link(from, to)?;
        t.events.push(Event::Link {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut t = self.lock();
        LocalFileSystem.rename(from, to)?;
        t.events.push(Event::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut t = self.lock();
        LocalFileSystem.remove(path)?;
        t.events.push(Event::Remove {
            path: path.to_path_buf(),
        });
        Ok(())
    }

    /// Syncs the file `path` names, recording as durable what it holds of those bytes
    /// written through this file system (a file made elsewhere is synced, not recorded).
    fn sync_file(&self, path: &Path) -> io::Result<()> {
        let mut t = self.lock();
        LocalFileSystem.sync_file(path)?;
        if let Some(inode) = t.inode_named(path) {
            let len = t.data[inode].len();
            t.events.push(Event::Sync { inode, len });
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut t = self.lock();
        LocalFileSystem.sync_dir(dir)?;
        t.events.push(Event::SyncDir {
            dir: dir.to_path_buf(),
        });
        Ok(())
    }
}
