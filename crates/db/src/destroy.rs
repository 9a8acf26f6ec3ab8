//! Destroying a database: its files deleted under its lock, as LevelDB's `DestroyDB` deletes
//! them, but `CURRENT` first.
//!
//! LevelDB deletes the files in the order the directory lists them. A process killed part
//! way, or a power loss that keeps some of the deletions and not others (nothing is synced),
//! may then leave `CURRENT`, its MANIFEST and the tables but not a log: a database that
//! opens, in LevelDB as here, without the writes that log held. Here `CURRENT` goes first,
//! and its removal is made durable before any other file goes: a directory a destruction
//! left part way has no `CURRENT`, which no reader takes for a database.

use std::io;
use std::path::Path;

use crate::durable::sync_dir_on;
use crate::filename::{FileType, parent_dir, parse_file_name};
use crate::lock::DbLock;
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// Deletes the database in `dir`, as LevelDB's `DestroyDB`: under its lock (taken as an
/// open takes it, so a database this process or another has open is refused and loses
/// nothing), the files of a database are deleted, then `LOCK`, then the directory if nothing
/// else is left in it (other files are left, as LevelDB leaves them). A directory that
/// cannot be listed (missing, or not a directory) is no error.
///
/// `CURRENT` is deleted first, and the directory synced, before any other file: however
/// the deletion ends (an error, the process killed, a power loss), `dir` holds either the
/// whole database or no `CURRENT`, never a database that opens without some of its files.
/// The directory (or, once it is removed, its parent) is synced again at the end.
///
/// ```
/// use leveltable_db::{WritableDb, WritableOptions, WriteOptions, destroy_db};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("db");
/// let db = WritableDb::open(&path, WritableOptions::default().create_if_missing(true))?;
/// db.put(b"k", b"v", WriteOptions::SYNC)?;
/// drop(db);
/// destroy_db(&path)?;
/// assert!(!path.exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Locked`] if the database is open; [`Error::FileOp`] (`cannot delete`) for
/// `CURRENT` if it cannot be deleted (nothing else is then deleted), or else for the first
/// file that cannot be deleted (the others are); [`Error::FileOp`] (`cannot sync`) if the
/// directory cannot be synced once `CURRENT` is deleted (nothing else is then deleted).
pub fn destroy_db(dir: impl AsRef<Path>) -> Result<()> {
    destroy_db_on(&LocalFileSystem, dir)
}

/// [`destroy_db`], locking, deleting and syncing through `file_system` (a test's, say, that
/// records what a power loss would keep); the directory is listed and removed on the local
/// file system.
///
/// # Errors
/// As [`destroy_db`].
pub fn destroy_db_on(file_system: &dyn FileSystem, dir: impl AsRef<Path>) -> Result<()> {
    let dir = dir.as_ref();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let lock = DbLock::acquire_on(file_system, dir)?;
    if names.iter().any(|n| n == "CURRENT") {
        let current = dir.join("CURRENT");
        match file_system.remove(&current) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::op("cannot delete", current, e)),
        }
        // No longer a database, durably, before any of its other files goes.
        sync_dir_on(file_system, dir)?;
    }
    let mut failed = None;
    for name in &names {
        let kind = parse_file_name(name);
        if kind.is_some_and(|t| t != FileType::Lock && t != FileType::Current) {
            let path = dir.join(name);
            if let Err(e) = file_system.remove(&path) {
                failed.get_or_insert(Error::op("cannot delete", path, e));
            }
        }
    }
    let lock_path = lock.path().to_owned();
    drop(lock);
    let _ = file_system.remove(&lock_path);
    // Other files are left, and the directory with them, as LevelDB leaves them. The
    // deletions are synced, though nothing depends on it any more.
    if std::fs::remove_dir(dir).is_ok() {
        let _ = file_system.sync_dir(parent_dir(dir));
    } else {
        let _ = file_system.sync_dir(dir);
    }
    failed.map_or(Ok(()), Err)
}
