//! The record of a run: every file operation in the order the system saw it, and the bytes
//! of every file written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One operation. Files are numbered in the order they were created (their inodes); names
/// are paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `path` now names the new empty file `inode` (a file there before is unlinked).
    Create {
        /// The name.
        path: PathBuf,
        /// The new file.
        inode: usize,
    },
    /// `inode` grew to `len` bytes (writes only append).
    Write {
        /// The file.
        inode: usize,
        /// Its length after the write.
        len: usize,
    },
    /// The first `len` bytes of `inode` are durable: those written before a sync began
    /// (one run in the background may end after later writes).
    Sync {
        /// The file.
        inode: usize,
        /// How many bytes were written when the sync began.
        len: usize,
    },
    /// `from` was renamed to `to`, replacing it.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
    },
    /// `path` was unlinked.
    Remove {
        /// The name.
        path: PathBuf,
    },
    /// The creates, renames and removals in `dir` so far are durable.
    SyncDir {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory `path` was made (empty).
    CreateDir {
        /// Its name.
        path: PathBuf,
    },
    /// The file named `from` got the second name `to` (a hard link).
    Link {
        /// The name it had.
        from: PathBuf,
        /// Its new name.
        to: PathBuf,
    },
    /// A point the test marked (say, "write 12 acknowledged"); changes nothing on disk.
    Mark(u64),
}

impl Event {
    /// Whether this event makes something durable (a sync point).
    pub fn is_sync(&self) -> bool {
        matches!(self, Event::Sync { .. } | Event::SyncDir { .. })
    }
}

/// The events of a run and the bytes of each file it wrote.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The events, in order.
    pub events: Vec<Event>,
    /// Every byte written to each file, by inode: a file's contents after event `i` are a
    /// prefix of these.
    pub data: Vec<Vec<u8>>,
}

impl Trace {
    /// The number of events: the crash points are `0..=len()` (before the first event,
    /// between two, after the last).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The file `path` names after the last event, if one of those recorded.
    pub fn inode_named(&self, path: &Path) -> Option<usize> {
        let mut names: HashMap<&Path, usize> = HashMap::new();
        for e in &self.events {
            match e {
                Event::Create { path, inode } => {
                    names.insert(path, *inode);
                }
                Event::Rename { from, to } => {
                    if let Some(inode) = names.remove(from.as_path()) {
                        names.insert(to, inode);
                    }
                }
                Event::Remove { path } => {
                    names.remove(path.as_path());
                }
                Event::Link { from, to } => {
                    if let Some(&inode) = names.get(from.as_path()) {
                        names.insert(to, inode);
                    }
                }
                _ => {}
            }
        }
        names.get(path).copied()
    }

    /// The marks made before crash point `at`.
    pub fn marks_before(&self, at: usize) -> impl Iterator<Item = u64> + '_ {
        self.events[..at].iter().filter_map(|e| match e {
            Event::Mark(m) => Some(*m),
            _ => None,
        })
    }
}
