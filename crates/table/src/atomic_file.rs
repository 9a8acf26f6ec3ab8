//! Atomic creation: a table is built under a temporary name in the destination directory and
//! renamed into place only when it is complete and synced.
//!
//! # Signals
//!
//! A process killed mid-build leaves its temporary file behind (named [`TEMP_FILE_PREFIX`]`*`).
//! Every [`AtomicTableFile`] alive registers its temporary file with
//! [`leveltable_process`]'s registry, so [`remove_temporaries`] (re-exported here) deletes
//! them, for a program exiting on a signal; from then on, creating and finishing tables
//! fails with [`io::ErrorKind::Interrupted`], so no temporary file appears afterwards and no
//! table appears half-way through the exit. The registry's other items (temporary
//! directories, [`sync_dir`], [`describe_file_type`]) are re-exported too.

use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

pub use leveltable_process::{
    TemporaryDir, create_temporary, describe_file_type, register_temporary_dir, remove_temporaries,
    rename_releasing, sync_dir,
};
use leveltable_process::{TemporaryGuard, create_registered, release_with};
use tempfile::NamedTempFile;

use crate::options::BuildOptions;
use crate::table_builder::{BuildSummary, TableBuilder};
use crate::{Error, Result};

/// Prefix of the temporary files [`AtomicTableFile`] creates next to the destination. A file
/// with this prefix left in a directory is the remains of a build that was killed; it is
/// never a complete table under its final name and may be deleted.
pub const TEMP_FILE_PREFIX: &str = ".leveltable-tmp-";

/// A table being built under a temporary name, renamed to its path only once complete.
///
/// [`finish`](Self::finish) writes the rest of the table, flushes and `fsync`s the file,
/// renames it to its path and `fsync`s the directory, so that after a crash the path holds
/// either nothing (or what it held before) or the complete table. Dropping it unfinished, or
/// any error, removes the temporary file; so does [`remove_temporaries`], for a program
/// exiting on a signal. A process killed otherwise leaves a file named
/// [`TEMP_FILE_PREFIX`]`*` behind.
///
/// Only a regular file is ever replaced: a symbolic link, a directory, a FIFO, a device or
/// a socket at the path is refused, never replaced (a link is not followed either).
///
/// ```
/// use leveltable_table::{AtomicTableFile, BuildOptions, ReadOptions, Table};
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("000001.ldb");
/// let mut file = AtomicTableFile::create(&path, BuildOptions::default())?;
/// file.add(b"key", b"value")?;
/// assert!(!path.exists());
/// file.finish()?;
/// let table = Table::open(std::fs::File::open(&path)?, ReadOptions::default())?;
/// assert_eq!(table.get(b"key")?.as_deref(), Some(&b"value"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AtomicTableFile {
    // Invariant: `builder` is declared before `guard`, so it is dropped first: the
    // temporary file is removed before it leaves the registry, never after.
    builder: TableBuilder<BufWriter<NamedTempFile>>,
    guard: TemporaryGuard,
    path: PathBuf,
    replace: bool,
}

/// A table [`AtomicTableFile::finish_with_status`] put in place.
#[derive(Debug)]
#[non_exhaustive]
pub struct Finished {
    /// What was written.
    pub summary: BuildSummary,
    /// Why the directory could not be synced after the rename, if it could not: for
    /// instance a directory that can be written but not read (mode `0333`, or a `1733` drop
    /// box) cannot be opened to sync it. The table is complete and in place all the same;
    /// only the rename may be lost if the machine crashes soon after.
    pub dir_sync_error: Option<io::Error>,
}

/// What to tell a user whose table `path` is in place but whose directory could not be
/// synced after the rename ([`Finished::dir_sync_error`]), `reason` being that error in the
/// caller's words: `PATH is complete and in place, but its directory DIR could not be synced
/// (REASON), so a system crash soon after may undo the rename`.
pub fn dir_sync_warning(path: &Path, reason: &str) -> String {
    format!(
        "{} is complete and in place, but its directory {} could not be synced ({reason}), \
         so a system crash soon after may undo the rename",
        path.display(),
        parent_dir(path).display(),
    )
}

impl AtomicTableFile {
    /// Starts a table that will be written to `path`, replacing the regular file there, if
    /// any, when [`finish`](Self::finish) succeeds.
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary file cannot be created in `path`'s directory, or if
    /// something other than a regular file is at `path` ([`io::ErrorKind::InvalidInput`]);
    /// [`Error::InvalidArgument`] for invalid options.
    pub fn create(path: impl AsRef<Path>, options: BuildOptions) -> Result<AtomicTableFile> {
        let path = path.as_ref();
        check_replaceable(path)?;
        AtomicTableFile::start(path, options, true)
    }

    /// Like [`create`](Self::create), but [`finish`](Self::finish) fails (and removes the
    /// temporary file) if something exists at `path` by then.
    ///
    /// # Errors
    /// As [`create`](Self::create), and [`io::ErrorKind::AlreadyExists`] if `path` exists
    /// already ([`io::ErrorKind::InvalidInput`] if it is a FIFO, a device or a socket).
    pub fn create_new(path: impl AsRef<Path>, options: BuildOptions) -> Result<AtomicTableFile> {
        let path = path.as_ref();
        if let Ok(m) = path.symlink_metadata() {
            let t = m.file_type();
            // A FIFO, a device or a socket is no file a table could be: said so, as
            // `create` says it, rather than that a file exists.
            if !(t.is_file() || t.is_dir() || t.is_symlink()) {
                return Err(Error::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is {}, not a regular file: no table is written to it",
                        path.display(),
                        describe_file_type(t)
                    ),
                )));
            }
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", path.display()),
            )));
        }
        AtomicTableFile::start(path, options, false)
    }

    fn start(path: &Path, options: BuildOptions, replace: bool) -> Result<AtomicTableFile> {
        let dir = parent_dir(path);
        let mut temp = tempfile::Builder::new();
        temp.prefix(TEMP_FILE_PREFIX);
        #[cfg(unix)]
        {
            // Like File::create: the umask decides, rather than tempfile's private 0600.
            use std::os::unix::fs::PermissionsExt;
            temp.permissions(std::fs::Permissions::from_mode(0o666));
        }
        // Created and registered in one step, so that remove_temporaries either sees the
        // file or has closed the registry before it exists.
        let (file, guard) = create_registered(false, || {
            let file = temp.tempfile_in(dir)?;
            let path = file.path().to_owned();
            Ok((file, path))
        })?;
        let builder = TableBuilder::new(BufWriter::with_capacity(64 * 1024, file), options)?;
        Ok(AtomicTableFile {
            builder,
            guard,
            path: path.to_owned(),
            replace,
        })
    }

    /// Adds an entry; see [`TableBuilder::add`].
    ///
    /// # Errors
    /// As [`TableBuilder::add`].
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.builder.add(key, value)
    }

    /// Closes the current data block; see [`TableBuilder::flush`].
    ///
    /// # Errors
    /// As [`TableBuilder::flush`].
    pub fn flush(&mut self) -> Result<()> {
        self.builder.flush()
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.builder.num_entries()
    }

    /// Bytes of the table written so far.
    pub fn file_size(&self) -> u64 {
        self.builder.file_size()
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        self.builder.get_ref().get_ref().path()
    }

    /// Completes the table and moves it into place (see the type's documentation).
    ///
    /// Once the rename has happened the table is complete at its path, and this returns
    /// `Ok` even if the directory cannot be synced afterwards;
    /// [`finish_with_status`](Self::finish_with_status) tells that case apart.
    ///
    /// # Errors
    /// Any error finishing the table, syncing it, or renaming it
    /// ([`io::ErrorKind::AlreadyExists`] for [`create_new`](Self::create_new) when the path
    /// exists; [`io::ErrorKind::InvalidInput`] when something other than a regular file is
    /// there by then; [`io::ErrorKind::Interrupted`] after [`remove_temporaries`]). On
    /// error the temporary file is removed and the path is untouched.
    pub fn finish(self) -> Result<BuildSummary> {
        self.finish_with_status().map(|finished| finished.summary)
    }

    /// Like [`finish`](Self::finish), and says whether the directory was synced after the
    /// rename.
    ///
    /// # Errors
    /// As [`finish`](Self::finish): an error means the table is not at its path.
    pub fn finish_with_status(self) -> Result<Finished> {
        let AtomicTableFile {
            mut builder,
            guard,
            path,
            replace,
        } = self;
        let summary = builder.finish()?;
        let temp = builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        temp.as_file().sync_all()?;
        // The rename happens as the registration is released, under the registry's lock: a
        // signal-handling thread calling remove_temporaries sees either the temporary file
        // or the finished table.
        let mut guards = vec![guard];
        release_with(&mut guards, || {
            if replace {
                check_replaceable(&path)?;
            }
            let persisted = if replace {
                temp.persist(&path)
            } else {
                temp.persist_noclobber(&path)
            };
            // On error, the PersistError owns the temporary file and removes it when dropped.
            persisted
                .map(drop)
                .map_err(|e| rename_error(&path, e.error))
        })?;
        let dir_sync_error = sync_dir(parent_dir(&path)).err();
        Ok(Finished {
            summary,
            dir_sync_error,
        })
    }

    /// Gives up: the temporary file is removed. Dropping does the same.
    pub fn abandon(self) {}
}

/// Builds a table at `path` atomically: `build` adds the entries, then the table is finished
/// as by [`AtomicTableFile::finish`]. If `build` returns an error, nothing appears at `path`
/// and the error is returned.
///
/// ```
/// use leveltable_table::{create_table, BuildOptions};
/// let dir = tempfile::tempdir()?;
/// let summary = create_table(dir.path().join("t.ldb"), BuildOptions::default(), |t| {
///     for i in 0..100u32 {
///         t.add(format!("key{i:03}").as_bytes(), b"v")?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(summary.entries, 100);
/// # Ok::<(), leveltable_table::Error>(())
/// ```
///
/// # Errors
/// The error of `build`, or any error of [`AtomicTableFile::create`] and
/// [`AtomicTableFile::finish`].
pub fn create_table(
    path: impl AsRef<Path>,
    options: BuildOptions,
    build: impl FnOnce(&mut AtomicTableFile) -> Result<()>,
) -> Result<BuildSummary> {
    let mut file = AtomicTableFile::create(path, options)?;
    build(&mut file)?;
    file.finish()
}

/// The error of moving the finished table to `path`, naming it: the rename's own error
/// names neither file.
fn rename_error(path: &Path, e: io::Error) -> io::Error {
    let message = if e.kind() == io::ErrorKind::AlreadyExists {
        format!("{} already exists", path.display())
    } else {
        format!(
            "the finished table cannot be moved to {}: {e}",
            path.display()
        )
    };
    io::Error::new(e.kind(), message)
}

/// Refuses a path holding anything but a regular file: replacing a link, a FIFO or a device
/// with a table is never what was meant.
fn check_replaceable(path: &Path) -> io::Result<()> {
    match path.symlink_metadata() {
        Ok(m) if !m.file_type().is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {}; only a regular file is replaced by a table",
                path.display(),
                describe_file_type(m.file_type())
            ),
        )),
        _ => Ok(()),
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use crate::{ReadOptions, Table};

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_FILE_PREFIX))
            .collect()
    }

    #[test]
    fn atomic_file_appears_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
        file.add(b"a", b"1").unwrap();
        let temp = file.temp_path().to_owned();
        assert!(temp.exists());
        assert!(
            temp.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(TEMP_FILE_PREFIX)
        );
        assert!(!path.exists());
        let summary = file.finish().unwrap();
        assert!(!temp.exists());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), summary.file_size);
        let table = Table::open(File::open(&path).unwrap(), ReadOptions::default()).unwrap();
        assert_eq!(table.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn abandoned_and_failed_builds_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let mut file = AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
        file.add(b"a", b"1").unwrap();
        file.abandon();
        assert!(leftovers(dir.path()).is_empty());

        let err = create_table(&path, BuildOptions::default(), |t| {
            t.add(b"b", b"1")?;
            t.add(b"a", b"1")
        })
        .unwrap_err();
        assert!(matches!(err, Error::KeyOutOfOrder { .. }));
        assert!(!path.exists());
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn replace_and_no_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        std::fs::write(&path, b"old").unwrap();
        let err = AtomicTableFile::create_new(&path, BuildOptions::default())
            .err()
            .unwrap();
        assert!(matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::AlreadyExists));

        // The path appears while building: finish refuses and cleans up.
        let other = dir.path().join("u.ldb");
        let file = AtomicTableFile::create_new(&other, BuildOptions::default()).unwrap();
        std::fs::write(&other, b"raced").unwrap();
        let err = file.finish().unwrap_err();
        assert!(matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::AlreadyExists));
        assert_eq!(std::fs::read(&other).unwrap(), b"raced");
        assert!(leftovers(dir.path()).is_empty());

        create_table(&path, BuildOptions::default(), |t| t.add(b"k", b"v")).unwrap();
        let table = Table::open(File::open(&path).unwrap(), ReadOptions::default()).unwrap();
        assert_eq!(table.get(b"k").unwrap(), Some(b"v".to_vec()));
    }

    /// A rename refused at the end names the path, as the refusal at the start does.
    #[test]
    fn refused_rename_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ldb");
        let file = AtomicTableFile::create_new(&path, BuildOptions::default()).unwrap();
        std::fs::write(&path, b"raced").unwrap();
        let err = file.finish().unwrap_err();
        assert!(matches!(&err, Error::Io(e) if e.kind() == io::ErrorKind::AlreadyExists));
        let at_start = AtomicTableFile::create_new(&path, BuildOptions::default())
            .err()
            .unwrap();
        assert_eq!(err.to_string(), at_start.to_string());
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }

    #[test]
    fn relative_paths_use_the_current_directory() {
        assert_eq!(parent_dir(Path::new("t.ldb")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/t.ldb")), Path::new("/a"));
    }
}
