//! Atomic creation: a table is built under a temporary name in the destination directory and
//! renamed into place only when it is complete and synced.
//!
//! # Signals
//!
//! A process killed mid-build leaves its temporary file behind (named [`TEMP_FILE_PREFIX`]`*`).
//! This crate installs no signal handler: it has no `unsafe` code, and a library does not take
//! a program's signals over. Instead, every [`AtomicTableFile`] alive in the process registers
//! its temporary file, and [`remove_temporaries`] deletes them all. A program that wants no
//! leftovers on SIGINT, SIGTERM or SIGHUP handles those signals on a thread of its own (the
//! `signal-hook` crate's `Signals` iterator does this without `unsafe`), calls
//! [`remove_temporaries`] there and then exits. From that call on, creating and finishing
//! tables fails with [`io::ErrorKind::Interrupted`], so no temporary file appears afterwards
//! and no table appears half-way through the exit.
//!
//! Temporary directories (a sort's spilled runs, a bulk build's staging) join the same
//! registry: [`TemporaryDir`] creates one that [`remove_temporaries`] removes with everything
//! in it, and [`register_temporary_dir`] registers a directory made otherwise until its
//! guard is dropped.

use std::fs;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tempfile::NamedTempFile;

use crate::options::BuildOptions;
use crate::table_builder::{BuildSummary, TableBuilder};
use crate::{Error, Result};

/// Prefix of the temporary files [`AtomicTableFile`] creates next to the destination. A file
/// with this prefix left in a directory is the remains of a build that was killed; it is
/// never a complete table under its final name and may be deleted.
pub const TEMP_FILE_PREFIX: &str = ".leveltable-tmp-";

/// What a registry entry is: a file, or a directory removed with its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// The temporary files of the [`AtomicTableFile`]s alive in this process, and the registered
/// temporary directories.
struct Registry {
    /// Set by [`remove_temporaries`]: the process is exiting.
    closed: bool,
    next_id: u64,
    live: Vec<(u64, PathBuf, Kind)>,
}

impl Registry {
    /// Adds `path`, or fails if the process is exiting.
    fn add(&mut self, path: PathBuf, kind: Kind) -> Result<Registration> {
        if self.closed {
            return Err(exiting());
        }
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        self.live.push((id, path, kind));
        Ok(Registration { id })
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    closed: false,
    next_id: 0,
    live: Vec::new(),
});

/// The registry, even if a thread panicked holding it: its data stays consistent, as every
/// change is a single push or retain.
fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Deletes the temporary file of every [`AtomicTableFile`] alive in this process, and every
/// registered temporary directory with its contents, and returns how many it deleted. Meant
/// for a program's exit on a signal (see the [module documentation](self)): afterwards,
/// creating or finishing any table, and creating or registering a temporary directory, in
/// this process fails with [`io::ErrorKind::Interrupted`].
///
/// It takes a lock and allocates, so call it from a normal thread (such as a signal-iterator
/// thread), never from inside an asynchronous signal handler.
pub fn remove_temporaries() -> usize {
    let mut registry = registry();
    registry.closed = true;
    let mut removed = 0;
    for (_, path, kind) in registry.live.drain(..) {
        let gone = match kind {
            Kind::File => fs::remove_file(&path).is_ok(),
            Kind::Dir => remove_dir_all_racing(&path),
        };
        if gone {
            removed += 1;
        }
    }
    removed
}

/// Removes `dir` and its contents, trying again while another thread of the process (one
/// that has not yet seen the registry closed) adds a file to it; `true` once it is gone.
fn remove_dir_all_racing(dir: &Path) -> bool {
    for _ in 0..100 {
        match fs::remove_dir_all(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return false,
            Err(_) => std::thread::yield_now(),
        }
    }
    false
}

/// A temporary directory, removed with everything in it when dropped, or by
/// [`remove_temporaries`] when the process exits on a signal.
///
/// ```
/// use leveltable_table::atomic_file::TemporaryDir;
/// let parent = tempfile::tempdir()?;
/// let dir = TemporaryDir::new_in(parent.path(), ".sort-")?;
/// std::fs::write(dir.path().join("run-0"), b"spilled")?;
/// let path = dir.path().to_owned();
/// drop(dir);
/// assert!(!path.exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TemporaryDir {
    // Invariant: `dir` is declared before `registration`, so the directory is removed
    // before it leaves the registry, never after.
    dir: tempfile::TempDir,
    _registration: Registration,
}

impl TemporaryDir {
    /// Creates a directory named `prefix` and random characters in `parent`, registered
    /// for [`remove_temporaries`] in the same step.
    ///
    /// # Errors
    /// The error creating it, or [`io::ErrorKind::Interrupted`] after
    /// [`remove_temporaries`].
    pub fn new_in(parent: &Path, prefix: &str) -> io::Result<TemporaryDir> {
        // Created and registered under the lock, so that remove_temporaries either sees
        // the directory or has closed the registry before it exists.
        let mut registry = registry();
        if registry.closed {
            return Err(exiting_io());
        }
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        let registration = registry
            .add(dir.path().to_owned(), Kind::Dir)
            .map_err(|_| exiting_io())?;
        Ok(TemporaryDir {
            dir,
            _registration: registration,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Keeps a file or directory registered for [`remove_temporaries`] until dropped (dropping
/// it removes nothing: the path is then the caller's again).
#[derive(Debug)]
pub struct TemporaryGuard {
    registration: Registration,
}

/// Registers the directory `dir`, made by the caller for the time of some work, so that
/// [`remove_temporaries`] removes it with its contents until the returned guard is dropped.
/// Register only a directory the process made and owns: on a signal it is removed whole.
///
/// # Errors
/// [`io::ErrorKind::Interrupted`] after [`remove_temporaries`].
pub fn register_temporary_dir(dir: impl Into<PathBuf>) -> io::Result<TemporaryGuard> {
    let registration = registry()
        .add(dir.into(), Kind::Dir)
        .map_err(|_| exiting_io())?;
    Ok(TemporaryGuard { registration })
}

/// Makes the file (or, with `is_dir`, the directory) `path` by calling `create`, and
/// registers it for [`remove_temporaries`] in the same step, under the registry's lock: a
/// signal-handling thread either sees it registered or has closed the registry before it
/// exists. For files that become final only when something else is renamed into place
/// (see [`rename_releasing`]).
///
/// # Errors
/// [`io::ErrorKind::Interrupted`] after [`remove_temporaries`] (`create` is not called);
/// the error of `create` (nothing is registered).
pub fn create_temporary<T>(
    path: &Path,
    is_dir: bool,
    create: impl FnOnce() -> io::Result<T>,
) -> io::Result<(T, TemporaryGuard)> {
    let mut registry = registry();
    if registry.closed {
        return Err(exiting_io());
    }
    let made = create()?;
    let kind = if is_dir { Kind::Dir } else { Kind::File };
    let registration = registry
        .add(path.to_owned(), kind)
        .map_err(|_| exiting_io())?;
    Ok((made, TemporaryGuard { registration }))
}

/// Renames `from` to `to` and releases `guards` (emptying it) in one step, under the
/// registry's lock: the paths they registered become final together with the rename, so a
/// signal-handling thread calling [`remove_temporaries`] removes them either before the
/// rename (which then does not happen) or never.
///
/// # Errors
/// [`io::ErrorKind::Interrupted`] after [`remove_temporaries`]; the rename's error. On
/// error nothing is released and `guards` is unchanged.
pub fn rename_releasing(
    from: &Path,
    to: &Path,
    guards: &mut Vec<TemporaryGuard>,
) -> io::Result<()> {
    let mut registry = registry();
    if registry.closed {
        return Err(exiting_io());
    }
    fs::rename(from, to)?;
    registry
        .live
        .retain(|(id, _, _)| !guards.iter().any(|g| g.registration.id == *id));
    drop(registry);
    // Their entries are gone; dropping them looks for nothing.
    guards.clear();
    Ok(())
}

fn exiting_io() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "the process is exiting: its temporary files were removed",
    )
}

fn exiting() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::Interrupted,
        "the process is exiting: its temporary table files were removed",
    ))
}

/// An entry of the registry, removed when dropped.
#[derive(Debug)]
struct Registration {
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        registry().live.retain(|(id, _, _)| *id != self.id);
    }
}

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
    // Invariant: `builder` is declared before `registration`, so it is dropped first: the
    // temporary file is removed before it leaves the registry, never after.
    builder: TableBuilder<BufWriter<NamedTempFile>>,
    registration: Registration,
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
    /// already.
    pub fn create_new(path: impl AsRef<Path>, options: BuildOptions) -> Result<AtomicTableFile> {
        let path = path.as_ref();
        if path.symlink_metadata().is_ok() {
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
        // Created and registered under the lock, so that remove_temporaries either sees
        // the file or has closed the registry before it exists.
        let (file, registration) = {
            let mut registry = registry();
            if registry.closed {
                return Err(exiting());
            }
            let file = temp.tempfile_in(dir)?;
            let registration = registry.add(file.path().to_owned(), Kind::File)?;
            (file, registration)
        };
        let builder = TableBuilder::new(BufWriter::with_capacity(64 * 1024, file), options)?;
        Ok(AtomicTableFile {
            builder,
            registration,
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
            registration,
            path,
            replace,
        } = self;
        let summary = builder.finish()?;
        let temp = builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        temp.as_file().sync_all()?;
        {
            // The rename happens under the registry lock: a signal-handling thread calling
            // remove_temporaries sees either the temporary file or the finished table.
            let registry = registry();
            if registry.closed {
                return Err(exiting());
            }
            if replace {
                check_replaceable(&path)?;
            }
            let persisted = if replace {
                temp.persist(&path)
            } else {
                temp.persist_noclobber(&path)
            };
            // On error, the PersistError owns the temporary file and removes it when dropped.
            drop(persisted.map_err(|e| Error::Io(e.error))?);
            drop(registry);
        }
        drop(registration);
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

/// What kind of thing a file type is, for messages: `a symbolic link`, `a FIFO`, ...
pub fn describe_file_type(file_type: fs::FileType) -> &'static str {
    if file_type.is_file() {
        return "a regular file";
    }
    if file_type.is_dir() {
        return "a directory";
    }
    if file_type.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Refuses a path holding anything but a regular file: replacing a link, a FIFO or a device
/// with a table is never what was meant.
fn check_replaceable(path: &Path) -> Result<()> {
    match path.symlink_metadata() {
        Ok(m) if !m.file_type().is_file() => Err(Error::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {}; only a regular file is replaced by a table",
                path.display(),
                describe_file_type(m.file_type())
            ),
        ))),
        _ => Ok(()),
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename in `dir` durable: syncs the directory, so that the names in it survive a
/// crash.
///
/// # Errors
/// Whatever opening or syncing the directory reports.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a directory as a file; NTFS journals the rename itself.
        let _ = dir;
        Ok(())
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

    #[test]
    fn relative_paths_use_the_current_directory() {
        assert_eq!(parent_dir(Path::new("t.ldb")), Path::new("."));
        assert_eq!(parent_dir(Path::new("/a/t.ldb")), Path::new("/a"));
    }
}
