//! Syncing a log on another thread while its writer appends on: the sync made when a
//! memtable is full must finish before the next log gets a write, and a thread that synced
//! the whole log then would wait for the disk with every writer behind it. Synced a part at
//! a time in the background as the log grows, the log leaves that sync only its tail.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::writer::file_system::{BackgroundSyncFn, FileSystem};
use crate::{Error, Result};

/// A directory whose new entry is to be synced, and the file system that syncs it.
pub(crate) type DirToSync = (Arc<dyn FileSystem>, PathBuf);

/// What a background sync returns: the handle it used, and whether it synced the
/// directory as well as the file.
type Outcome = (BackgroundSyncFn, Result<bool>);

/// The background syncs of one file: at most one at a time.
pub(crate) struct BackgroundSync {
    path: PathBuf,
    /// The handle, while no sync runs with it.
    idle: Option<BackgroundSyncFn>,
    running: Option<JoinHandle<Outcome>>,
}

impl BackgroundSync {
    /// Background syncs of the file `path` through `sync`.
    pub(crate) fn new(path: &Path, sync: BackgroundSyncFn) -> BackgroundSync {
        BackgroundSync {
            path: path.to_path_buf(),
            idle: Some(sync),
            running: None,
        }
    }

    /// Whether a sync is running and not yet finished.
    pub(crate) fn is_busy(&self) -> bool {
        self.running.as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Starts a sync of what the file holds now, after syncing `dir` if given. Returns
    /// whether it started: not while the last one's outcome is not taken by
    /// [`wait`](Self::wait), nor when a thread cannot be had (the file is then synced on the
    /// writer's thread alone). The sync's outcome is taken by the next `wait`.
    pub(crate) fn start(&mut self, dir: Option<&DirToSync>) -> bool {
        if self.running.is_some() {
            return false;
        }
        let Some(mut sync) = self.idle.take() else {
            return false;
        };
        let path = self.path.clone();
        let dir = dir.map(|(fs, dir)| (Arc::clone(fs), dir.clone()));
        let spawned = std::thread::Builder::new()
            .name("leveltable-log-sync".into())
            .spawn(move || {
                let synced = sync_dir_then_file(dir.as_ref(), &path, &mut sync);
                (sync, synced)
            });
        match spawned {
            Ok(handle) => {
                self.running = Some(handle);
                true
            }
            Err(_) => false,
        }
    }

    /// Waits for the sync that runs, if one does, and returns what it returned: whether it
    /// synced the directory too, or its error. An error is returned once: the file's
    /// descriptors share one record of a failed write, which the failed sync consumed.
    pub(crate) fn wait(&mut self) -> Result<bool> {
        let Some(handle) = self.running.take() else {
            return Ok(false);
        };
        match handle.join() {
            Ok((sync, synced)) => {
                self.idle = Some(sync);
                synced
            }
            Err(_) => Err(Error::op(
                "cannot sync",
                &self.path,
                io::Error::other("the syncing thread panicked"),
            )),
        }
    }
}

/// Syncs `dir` if given, then the file `path` through `sync`.
fn sync_dir_then_file(
    dir: Option<&DirToSync>,
    path: &Path,
    sync: &mut BackgroundSyncFn,
) -> Result<bool> {
    if let Some((fs, dir)) = dir {
        fs.sync_dir(dir)
            .map_err(|e| Error::op("cannot sync", dir, e))?;
    }
    sync().map_err(|e| Error::op("cannot sync", path, e))?;
    Ok(dir.is_some())
}
