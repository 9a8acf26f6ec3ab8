//! Committing parts into a database: their files checked against their records, placed in
//! the database with final numbers, then a MANIFEST that lists them and a CURRENT that
//! names it.
//!
//! The files go to the last level (6), where LevelDB never compacts them by size and never
//! charges them a seek (a lookup reads nothing after the last level), with every entry at
//! sequence 0 and the database's last sequence 0: LevelDB opens the database without
//! compacting it, and its new writes, numbered from 1, shadow the bulk-loaded values.
//!
//! Nothing in a staging directory is moved or changed until `CURRENT` is in place: on the
//! database's file system a staged file gets a second name (a hard link), on another it is
//! copied and synced. Only once `CURRENT` names the MANIFEST are the staging directories
//! emptied. A commit that fails leaves every staging directory as it was and removes every
//! file it made in the database directory, so it can be run again.
//!
//! From before the first file is placed until `CURRENT` is in place, the commit holds the
//! database directory's `LOCK` file as LevelDB's `DB::Open` does (see [`crate::lock`]): a
//! LevelDB process opening the directory meanwhile fails rather than reading or writing a
//! half-made database, and a commit into a directory LevelDB has open is refused. The
//! `LOCK` file stays in the committed database, as in one LevelDB made.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use leveltable_process::{TemporaryGuard, create_temporary, release_with};
use leveltable_table::Comparator;

use super::part::{PART_RECORD, Part};
use crate::durable::{Placing, sync_dir_on};
use crate::filename::{parent_dir, table_file_name};
use crate::lock::{DbLock, LOCK_FILE};
use crate::manifest_writer::{ManifestWriter, set_current};
use crate::version_edit::{FileMetaData, NUM_LEVELS, VersionEdit};
use crate::writer::file_system::{FileSystem, LocalFileSystem, WritableFile};
use crate::{Error, Result};

mod verify;

use verify::{Bytes, Staged, check_parts, dev_ino};

/// The level bulk-built files are placed on: the last.
pub const BULK_LEVEL: usize = NUM_LEVELS - 1;

/// The MANIFEST's file number; the tables are numbered from the next.
const MANIFEST_NUMBER: u64 = 1;

/// The name of LevelDB's bytewise comparator, stored in the MANIFEST.
const BYTEWISE_COMPARATOR: &str = "leveldb.BytewiseComparator";

/// What a commit made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CommitSummary {
    /// Parts committed (empty ones included).
    pub parts: u64,
    /// Table files in the database.
    pub tables: u64,
    /// Entries in them.
    pub entries: u64,
    /// Bytes of the table files.
    pub bytes: u64,
}

/// Makes the database `dir` from `parts`, given in key order.
///
/// First, before anything is created or moved, every staged table is checked against its
/// record: a regular file (a symbolic link, FIFO or device is refused, never followed or
/// opened as a table), of the recorded size and CRC32C (records of version 1 have no
/// checksum), and a table whose first and last keys, read from it, are the recorded ones;
/// the real key ranges, in the order given, must increase without overlapping.
///
/// Then `dir` is created if missing (it must otherwise be empty, but for a `LOCK` file) and
/// its `LOCK` file is locked as LevelDB's `DB::Open` locks it ([`DbLock`]), and held until
/// `CURRENT` is in place. The files are placed in `dir` as `000002.ldb`, … in key order:
/// hard-linked on the same file system, copied and synced on another; then
/// `MANIFEST-000001` and `CURRENT` are written, the lock is released (the `LOCK` file
/// stays), and only then are the staging directories emptied and removed.
///
/// # Errors
/// [`Error::InvalidArgument`] for a file that differs from its record (naming the part, the
/// file and what differs), parts out of order or overlapping, or a `dir` that is not empty;
/// [`Error::Locked`] if another process (LevelDB with the database open) or this one holds
/// `dir/LOCK` (also for a `dir` that is not empty); [`Error::Io`] for a staged file that cannot be read; [`Error::FileOp`] for a
/// failed creation, copy, write or sync in `dir`, or a `LOCK` that cannot be locked (one that
/// is not a regular file is refused). On any error every staging directory is as it was
/// and `dir` holds none of the commit's files, a `LOCK` file it made included (and is
/// removed if the commit created it); a `LOCK` file that was there stays.
pub fn commit(dir: impl AsRef<Path>, parts: &[Part]) -> Result<CommitSummary> {
    commit_with_progress(dir, parts, &mut |_, _| {})
}

/// [`commit()`], calling `progress(done, total)` as it goes: `total` is the bytes of the
/// staged tables (as their records give them), and `done` rises to it as they are checked
/// and then placed, each file counting half its bytes when checked and half when placed,
/// so a caller can show how far a long commit has got.
///
/// # Errors
/// As [`commit()`].
pub fn commit_with_progress(
    dir: impl AsRef<Path>,
    parts: &[Part],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CommitSummary> {
    commit_on(&LocalFileSystem, dir, parts, progress)
}

/// [`commit_with_progress`], making the database's directory and files through
/// `file_system` (a test's, say, that records what a power loss would keep); `LOCK` is
/// taken, and the staged files read, checked, copied and finally removed through it too.
///
/// # Errors
/// As [`commit()`].
pub fn commit_on(
    file_system: &dyn FileSystem,
    dir: impl AsRef<Path>,
    parts: &[Part],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CommitSummary> {
    commit_checked(
        file_system,
        dir.as_ref(),
        parts,
        Bytes::Read,
        None,
        None,
        progress,
    )
}

/// [`commit()`] of parts this process has just built and whose records it made: each file
/// is checked as [`commit()`] checks it but for its bytes, which are not read again to
/// recompute the checksum computed as they were written (the record keeps it, and a copy to
/// another file system is still checked against it).
/// `order` is the user comparator of the keys (bytewise if `None`), whose name the
/// MANIFEST records. `last_sequence` is `None` for tables built here (every entry a value
/// at sequence 0, the MANIFEST's last sequence 0), or the MANIFEST's last sequence for
/// tables copied from a database (a repair's), whose first and last keys may then be of
/// any type and sequence up to it.
pub(crate) fn commit_built(
    fsys: &dyn FileSystem,
    dir: &Path,
    parts: &[Part],
    order: Option<&dyn Comparator>,
    last_sequence: Option<u64>,
) -> Result<CommitSummary> {
    commit_checked(
        fsys,
        dir,
        parts,
        Bytes::Recorded,
        order,
        last_sequence,
        &mut |_, _| {},
    )
}

fn commit_checked(
    fsys: &dyn FileSystem,
    dir: &Path,
    parts: &[Part],
    bytes: Bytes,
    order: Option<&dyn Comparator>,
    last_sequence: Option<u64>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CommitSummary> {
    let mut count = Progress::new(parts, progress);
    let staged = check_parts(fsys, parts, bytes, order, last_sequence, &mut |size| {
        count.add(size)
    })?;
    let edit = VersionEdit {
        comparator: Some(order.map_or(BYTEWISE_COMPARATOR, |c| c.name()).to_owned()),
        last_sequence: Some(last_sequence.unwrap_or(0)),
        ..VersionEdit::default()
    };
    let mut made = Made::default();
    let (created, lock) = prepare_dir(fsys, dir, &mut made)?;
    let placed = register_lock(&lock, created, &mut made)
        .and_then(|()| check_empty(dir))
        .and_then(|()| {
            place(fsys, dir, parts, &staged, edit, &mut made, &mut |size| {
                count.add(size)
            })
        })
        .and_then(|summary| {
            // A directory the commit made is a name in its parent: durable once that is
            // synced, before the commit returns.
            if created {
                sync_dir_on(fsys, parent_dir(dir))?;
            }
            Ok(summary)
        });
    match placed {
        Ok(summary) => {
            // CURRENT is in place: the database is LevelDB's to open.
            drop(lock);
            for part in parts {
                remove_staging(fsys, part);
            }
            Ok(summary)
        }
        Err(e) => {
            // Only names this commit made, in a directory that was empty: the staged files
            // are untouched (a hard link's removal leaves the staged name).
            for path in made.paths.iter().rev() {
                let _ = fsys.remove(path);
            }
            // A LOCK file the commit made goes too, removed while still locked (a process
            // that opened it meanwhile was refused, and one that comes later makes its own).
            if lock.created() {
                let _ = fsys.remove(lock.path());
            }
            drop(lock);
            if created {
                let _ = fs::remove_dir(dir);
            } else {
                let _ = sync_dir_on(fsys, dir);
            }
            Err(e)
        }
    }
}

/// The progress of a commit: each staged file's bytes, counted twice (checked, placed), are
/// reported as half their sum, so that `done` reaches the tables' bytes at the end.
struct Progress<'a> {
    report: &'a mut dyn FnMut(u64, u64),
    /// The tables' bytes, as recorded.
    total: u64,
    /// Bytes checked plus bytes placed.
    counted: u64,
}

impl<'a> Progress<'a> {
    fn new(parts: &[Part], report: &'a mut dyn FnMut(u64, u64)) -> Progress<'a> {
        let total = parts
            .iter()
            .flat_map(|p| &p.files)
            .fold(0u64, |sum, f| sum.saturating_add(f.size));
        report(0, total);
        Progress {
            report,
            total,
            counted: 0,
        }
    }

    /// Counts `size` more bytes checked or placed.
    fn add(&mut self, size: u64) {
        self.counted = self.counted.saturating_add(size);
        (self.report)((self.counted / 2).min(self.total), self.total);
    }
}

/// Empties and removes a committed part's staging directory: its record first, so that a
/// directory left half-emptied (by a crash) is no finished part; errors are ignored, as
/// the database is complete.
fn remove_staging(fsys: &dyn FileSystem, part: &Part) {
    let _ = fsys.remove(&part.staging.join(PART_RECORD));
    for file in &part.files {
        let _ = fsys.remove(&part.staging.join(&file.name));
    }
    let _ = fs::remove_dir(&part.staging);
}

/// What a commit made in the database directory, to remove if it fails: every name, and
/// their registrations with the table crate's temporary registry, so that a program exiting
/// on a signal (which calls `remove_temporaries`) removes them too, until `CURRENT` is in
/// place.
#[derive(Default)]
struct Made {
    paths: Vec<PathBuf>,
    guards: Vec<TemporaryGuard>,
}

impl Made {
    /// Makes the file `path` with `create`, registered.
    fn file<T>(&mut self, path: &Path, create: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let (made, guard) = create_temporary(path, false, create)?;
        self.paths.push(path.to_owned());
        self.guards.push(guard);
        Ok(made)
    }
}

/// A commit's `CURRENT` is made only where no file is, registered, and renamed with the
/// registrations released as the rename makes the commit's files final.
impl Placing for Made {
    fn create(&mut self, fs: &dyn FileSystem, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.file(path, || fs.create_new(path))
    }

    fn rename(&mut self, fs: &dyn FileSystem, from: &Path, to: &Path) -> io::Result<()> {
        release_with(&mut self.guards, || fs.rename(from, to))
    }
}

/// Creates `dir`, or checks that it is an empty directory, and locks its `LOCK` file as
/// LevelDB's `DB::Open` does. Returns whether it created `dir`, and the lock.
fn prepare_dir(fsys: &dyn FileSystem, dir: &Path, made: &mut Made) -> Result<(bool, DbLock)> {
    refuse_dangling_link(dir)?;
    let created = match create_temporary(dir, true, || fsys.create_dir(dir)) {
        Ok(((), guard)) => {
            made.guards.push(guard);
            true
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Checked before the lock too, so that nothing is made in a directory refused.
            if let Err(not_empty) = check_empty(dir) {
                return Err(locked_elsewhere(fsys, dir).unwrap_or(not_empty));
            }
            false
        }
        Err(e) => return Err(Error::op("cannot create", dir, e)),
    };
    match DbLock::acquire_on(fsys, dir) {
        Ok(lock) => Ok((created, lock)),
        Err(e) => {
            if created {
                let _ = fs::remove_dir(dir);
            }
            Err(e)
        }
    }
}

/// Refuses a symbolic link at `dir` to nothing: the database's files would be made
/// through it (or its `LOCK` would fail, blaming a file the caller never named), wherever
/// the link would lead once its target is made.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the link and its missing target.
pub(crate) fn refuse_dangling_link(dir: &Path) -> Result<()> {
    let is_link = fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    match fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let target = fs::read_link(dir).map_err(|e| Error::io(dir, e))?;
            Err(Error::InvalidArgument(
                format!(
                    "{} is a symbolic link to {}, which does not exist: a database is not \
                     created through a dangling link",
                    dir.display(),
                    target.display()
                )
                .into(),
            ))
        }
        _ => Ok(()),
    }
}

/// For a directory refused as not empty: [`Error::Locked`] if it has a `LOCK` file (a
/// regular one, which locking does not create) that another process holds, a database
/// LevelDB has open, which says more than that it is not empty.
fn locked_elsewhere(fsys: &dyn FileSystem, dir: &Path) -> Option<Error> {
    let lock = dir.join(LOCK_FILE);
    if !fs::symlink_metadata(&lock).is_ok_and(|m| m.is_file()) {
        return None;
    }
    match DbLock::acquire_on(fsys, dir) {
        Err(e @ Error::Locked { .. }) => Some(e),
        Ok(lock) if lock.created() => {
            // Removed since it was looked at: the one made here goes too.
            let _ = fs::remove_file(lock.path());
            None
        }
        _ => None,
    }
}

/// Registers the `LOCK` file `lock` made in a directory the commit did not create (a
/// directory it created is registered whole), so that a signal removes it with the rest.
fn register_lock(lock: &DbLock, created_dir: bool, made: &mut Made) -> Result<()> {
    if lock.created() && !created_dir {
        let ((), guard) = create_temporary(lock.path(), false, || Ok(()))
            .map_err(|e| Error::op("cannot create", lock.path(), e))?;
        made.guards.push(guard);
    }
    Ok(())
}

/// Refuses `dir` unless it holds nothing but, perhaps, its `LOCK` file (left by an earlier
/// commit that was killed, or made by another program that locked the empty directory).
fn check_empty(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_name() != LOCK_FILE {
            return Err(Error::InvalidArgument(
                format!(
                    "{} is not empty: a database is built only in a new or empty directory",
                    dir.display()
                )
                .into(),
            ));
        }
    }
    Ok(())
}

/// Places the files, recording every name made in `made`, and writes the MANIFEST (`edit`,
/// its comparator and last sequence set, with the files) and CURRENT.
fn place(
    fsys: &dyn FileSystem,
    dir: &Path,
    parts: &[Part],
    staged: &[Staged],
    mut edit: VersionEdit,
    made: &mut Made,
    placed: &mut dyn FnMut(u64),
) -> Result<CommitSummary> {
    let target_dev = fs::metadata(dir)
        .map(|m| dev_ino(&m).0)
        .map_err(|e| Error::io(dir, e))?;
    let mut summary = CommitSummary {
        parts: parts.len() as u64,
        ..CommitSummary::default()
    };
    let mut number = MANIFEST_NUMBER;
    for file in staged {
        number += 1;
        let to = dir.join(table_file_name(number));
        place_file(fsys, file, &to, file.dev == target_dev, made)?;
        placed(file.size);
        edit.new_files.push((
            BULK_LEVEL,
            FileMetaData {
                number,
                file_size: file.size,
                smallest: file.smallest.clone(),
                largest: file.largest.clone(),
            },
        ));
        summary.tables += 1;
        summary.entries = summary.entries.saturating_add(file.entries);
        summary.bytes = summary.bytes.saturating_add(file.size);
    }
    edit.log_number = Some(0);
    edit.next_file_number = Some(number + 1);

    let mut log = ManifestWriter::create_with(dir, MANIFEST_NUMBER, |manifest| {
        made.file(manifest, || fsys.create_new(manifest))
    })?;
    log.append(&edit)?;
    log.close()?;
    sync_dir_on(fsys, dir)?;

    // `CURRENT` is written only where no file is, registered for removal on a signal; the
    // commit's files become final with it: a signal from then on removes nothing.
    let current = dir.join("CURRENT");
    made.paths.push(current);
    set_current(fsys, dir, MANIFEST_NUMBER, made)?;
    sync_dir_on(fsys, dir)?;
    Ok(summary)
}

/// Gives the staged `file` the name `to` (which must not exist): a hard link when
/// `same_device` and the file system allows it, else a copy; synced either way. The staged
/// file is neither moved nor changed.
fn place_file(
    fsys: &dyn FileSystem,
    file: &Staged,
    to: &Path,
    same_device: bool,
    made: &mut Made,
) -> Result<()> {
    if same_device && made.file(to, || fsys.hard_link(&file.path, to)).is_ok() {
        // The link names what the staging name names now: it must be the file checked.
        let linked = fsys.symlink_metadata(to).map_err(|e| Error::io(to, e))?;
        if !linked.is_file() || dev_ino(&linked) != (file.dev, file.ino) {
            return Err(changed(&file.path));
        }
        // Whoever staged it (a copy from another machine, say) may never have synced it:
        // durable before the MANIFEST that lists it.
        fsys.sync_file(to)
            .map_err(|e| Error::op("cannot sync", to, e))?;
        return Ok(());
    }
    copy_file(fsys, file, to, made)
}

/// Syncs `file` and closes it, reporting an error of either.
fn sync_and_close(mut file: Box<dyn WritableFile>) -> io::Result<()> {
    file.sync()?;
    file.close()
}

/// The refusal of a staged file replaced or changed after it was checked.
fn changed(path: &Path) -> Error {
    Error::InvalidArgument(
        format!(
            "cannot commit: {} changed while the commit ran; nothing was moved",
            path.display()
        )
        .into(),
    )
}

/// Copies the checked `file` to `to`, created new, and syncs it; refuses a source that is
/// not the file checked, or a copy whose bytes are not those checked.
fn copy_file(fsys: &dyn FileSystem, file: &Staged, to: &Path, made: &mut Made) -> Result<()> {
    let copy_error = |e| Error::op(format!("cannot copy {} to", file.path.display()), to, e);
    let source = fsys
        .open_read(&file.path)
        .map_err(|e| Error::io(&file.path, e))?;
    let opened = source.metadata().map_err(|e| Error::io(&file.path, e))?;
    if !opened.is_file() || dev_ino(&opened) != (file.dev, file.ino) {
        return Err(changed(&file.path));
    }
    let mut dest = made
        .file(to, || fsys.create_new(to))
        .map_err(|e| Error::op("cannot create", to, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0u32;
    let mut copied = 0u64;
    while copied < file.size {
        let n = buf
            .len()
            .min(usize::try_from(file.size - copied).unwrap_or(usize::MAX));
        match source.read_exact_at(&mut buf[..n], copied) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(changed(&file.path)),
            Err(e) => return Err(Error::io(&file.path, e)),
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        dest.write_all(&buf[..n]).map_err(copy_error)?;
        copied += n as u64;
    }
    // A file that goes on past the size checked changed too.
    let longer = match source.read_exact_at(&mut [0u8], file.size) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
        Err(e) => return Err(Error::io(&file.path, e)),
    };
    if longer || crc != file.crc {
        return Err(changed(&file.path));
    }
    sync_and_close(dest).map_err(|e| Error::op("cannot sync", to, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bulk::options::BulkOptions;
    use crate::bulk::part_builder::PartBuilder;

    fn built(staging: &Path) -> Part {
        let mut part = PartBuilder::create(staging, BulkOptions::default()).unwrap();
        for i in 0..2000u32 {
            part.add(format!("key{i:06}").as_bytes(), &[b'v'; 100])
                .unwrap();
        }
        part.finish().unwrap()
    }

    /// A commit of a part this process built checks each file's type, size and keys as any
    /// commit does (the bytes' checksum is the one computed as they were written).
    #[test]
    fn a_built_part_is_checked_but_for_its_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let part = built(&tmp.path().join("a"));
        let summary = commit_built(
            &LocalFileSystem,
            &tmp.path().join("db-a"),
            &[part],
            None,
            None,
        )
        .unwrap();
        assert_eq!((summary.entries, summary.tables), (2000, 1));
        let db = crate::Db::open(tmp.path().join("db-a"), crate::DbOptions::default()).unwrap();
        assert_eq!(db.iter().count(), 2000);

        // A file one byte short is refused, naming it, and nothing is made.
        let part = built(&tmp.path().join("b"));
        let file = part.staging.join(&part.files[0].name);
        let len = fs::metadata(&file).unwrap().len();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        let err = commit_built(
            &LocalFileSystem,
            &tmp.path().join("db-b"),
            &[part],
            None,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("000001.ldb"), "{err}");
        assert!(err.to_string().contains("its part record says"), "{err}");
        assert!(!tmp.path().join("db-b").exists());

        // Other bytes of the same size: a commit of records from elsewhere reads them.
        let part = built(&tmp.path().join("c"));
        let file = part.staging.join(&part.files[0].name);
        let mut bytes = fs::read(&file).unwrap();
        bytes[100] ^= 1;
        fs::write(&file, &bytes).unwrap();
        let err = commit(tmp.path().join("db-c"), &[part]).unwrap_err();
        assert!(err.to_string().contains("CRC32C"), "{err}");
    }
}
