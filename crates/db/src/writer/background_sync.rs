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

/// The background syncs of one file: at most one at a time. Dropped while one runs (the
/// log replaced by the next, once synced on its own), the sync goes on alone and its
/// outcome is not taken.
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
    /// synced the directory too, or its error (returned once).
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    use super::*;
    use crate::writer::file_system::LocalFileSystem;

    /// A sync that waits for a go-ahead on `go`, counts itself, and fails if told to.
    fn gated(go: mpsc::Receiver<bool>, calls: &Arc<AtomicUsize>) -> BackgroundSyncFn {
        let calls = Arc::clone(calls);
        Box::new(move || {
            let ok = go.recv().unwrap_or(true);
            calls.fetch_add(1, Ordering::SeqCst);
            if ok {
                Ok(())
            } else {
                Err(io::Error::other("injected"))
            }
        })
    }

    #[test]
    fn one_sync_at_a_time_and_its_outcome_taken_once() {
        let (go, gate) = mpsc::channel();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut b = BackgroundSync::new(Path::new("/x/000003.log"), gated(gate, &calls));
        assert!(b.start(None));
        assert!(b.is_busy());
        assert!(
            !b.start(None),
            "a second sync does not start beside the first"
        );
        go.send(true).unwrap();
        assert!(!b.wait().unwrap(), "no directory was synced");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(!b.is_busy());

        assert!(b.start(None));
        go.send(false).unwrap();
        let err = b.wait().unwrap_err().to_string();
        assert!(
            err.contains("000003.log") && err.contains("injected"),
            "{err}"
        );
        assert!(
            !b.wait().unwrap(),
            "the error is returned once, then nothing runs"
        );
        assert!(b.start(None), "the handle came back with the error");
        go.send(true).unwrap();
        b.wait().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn the_directory_is_synced_before_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (go, gate) = mpsc::channel();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut b = BackgroundSync::new(&tmp.path().join("f"), gated(gate, &calls));
        let fs: Arc<dyn FileSystem> = Arc::new(LocalFileSystem);
        let dir = (fs, tmp.path().to_path_buf());
        assert!(b.start(Some(&dir)));
        go.send(true).unwrap();
        assert!(b.wait().unwrap(), "the directory was synced");

        // A directory that cannot be synced fails the sync before the file's.
        let missing = (Arc::clone(&dir.0), tmp.path().join("missing"));
        assert!(b.start(Some(&missing)));
        let err = b.wait().unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "the file was not synced");
    }
}
