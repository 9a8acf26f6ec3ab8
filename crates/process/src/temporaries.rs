//! The registry of the process's temporary files and directories, for removing them all
//! when the process exits on a signal.
//!
//! A process killed mid-build leaves its temporary files behind. No library here installs a
//! signal handler on its own: a library does not take a program's signals over, and handling
//! them needs `unsafe` code or a thread of its own. Instead, everything temporary registers
//! here — in the same step as it is created, under the registry's lock — and
//! [`remove_temporaries`] deletes all of it. A program that wants no leftovers on SIGINT,
//! SIGTERM or SIGHUP handles those signals on a thread of its own (the `signal-hook` crate's
//! `Signals` iterator does this without `unsafe`; `clean_up_on_signals`, feature `signals`,
//! sets it up), calls [`remove_temporaries`] there and then exits. From that call on,
//! creating or registering a temporary, or making one final, fails with
//! [`io::ErrorKind::Interrupted`], so no temporary appears afterwards and nothing becomes
//! final half-way through the exit.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a registry entry is: a file, or a directory removed with its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// The temporary files and directories registered, alive in this process.
struct Registry {
    /// Set by [`remove_temporaries`]: the process is exiting.
    closed: bool,
    next_id: u64,
    live: Vec<(u64, PathBuf, Kind)>,
}

impl Registry {
    /// Adds `path`, or fails if the process is exiting.
    fn add(&mut self, path: PathBuf, kind: Kind) -> io::Result<TemporaryGuard> {
        if self.closed {
            return Err(exiting());
        }
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        self.live.push((id, path, kind));
        Ok(TemporaryGuard { id })
    }

    /// Fails if the process is exiting.
    fn open(&self) -> io::Result<()> {
        if self.closed { Err(exiting()) } else { Ok(()) }
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

fn exiting() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "the process is exiting: its temporary files were removed",
    )
}

/// Deletes every registered temporary file, and every registered temporary directory with
/// its contents, and returns how many it deleted. Meant for a program's exit on a signal
/// (see the [module documentation](self)): afterwards, creating, registering or releasing a
/// temporary in this process fails with [`io::ErrorKind::Interrupted`].
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

/// Keeps a file or directory registered for [`remove_temporaries`] until dropped (dropping
/// it removes nothing: the path is then the caller's again).
#[derive(Debug)]
pub struct TemporaryGuard {
    id: u64,
}

impl Drop for TemporaryGuard {
    fn drop(&mut self) {
        registry().live.retain(|(id, _, _)| *id != self.id);
    }
}

/// A temporary directory, removed with everything in it when dropped, or by
/// [`remove_temporaries`] when the process exits on a signal.
///
/// ```
/// use leveltable_process::TemporaryDir;
/// let parent = tempfile::tempdir()?;
/// let dir = TemporaryDir::new_in(parent.path(), ".sort-")?;
/// std::fs::write(dir.path().join("run-0"), b"spilled")?;
/// let path = dir.path().to_owned();
/// drop(dir);
/// assert!(!path.exists());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TemporaryDir {
    // Invariant: `dir` is declared before `guard`, so the directory is removed before it
    // leaves the registry, never after.
    dir: tempfile::TempDir,
    _guard: TemporaryGuard,
}

impl TemporaryDir {
    /// Creates a directory named `prefix` and random characters in `parent`, registered
    /// for [`remove_temporaries`] in the same step.
    ///
    /// # Errors
    /// The error creating it, or [`io::ErrorKind::Interrupted`] after
    /// [`remove_temporaries`].
    pub fn new_in(parent: &Path, prefix: &str) -> io::Result<TemporaryDir> {
        let (dir, guard) = create_registered(true, || {
            let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
            let path = dir.path().to_owned();
            Ok((dir, path))
        })?;
        Ok(TemporaryDir { dir, _guard: guard })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Registers the directory `dir`, made by the caller for the time of some work, so that
/// [`remove_temporaries`] removes it with its contents until the returned guard is dropped.
/// Register only a directory the process made and owns: on a signal it is removed whole.
///
/// # Errors
/// [`io::ErrorKind::Interrupted`] after [`remove_temporaries`].
pub fn register_temporary_dir(dir: impl Into<PathBuf>) -> io::Result<TemporaryGuard> {
    registry().add(dir.into(), Kind::Dir)
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
    create_registered(is_dir, || Ok((create()?, path.to_owned())))
}

/// Like [`create_temporary`], for a temporary whose name is known only once it exists (a
/// file named at random): `create` makes it and returns it with its path.
///
/// # Errors
/// As [`create_temporary`].
pub fn create_registered<T>(
    is_dir: bool,
    create: impl FnOnce() -> io::Result<(T, PathBuf)>,
) -> io::Result<(T, TemporaryGuard)> {
    let mut registry = registry();
    registry.open()?;
    let (made, path) = create()?;
    let kind = if is_dir { Kind::Dir } else { Kind::File };
    let guard = registry.add(path, kind)?;
    Ok((made, guard))
}

/// Runs `finalize` (a rename that makes temporaries final) and releases `guards` (emptying
/// it) in one step, under the registry's lock: the paths they registered become final
/// together with `finalize`, so a signal-handling thread calling [`remove_temporaries`]
/// removes them either before `finalize` (which then does not run) or never.
///
/// # Errors
/// [`io::ErrorKind::Interrupted`] after [`remove_temporaries`]; the error of `finalize`. On
/// error nothing is released and `guards` is unchanged.
pub fn release_with<T>(
    guards: &mut Vec<TemporaryGuard>,
    finalize: impl FnOnce() -> io::Result<T>,
) -> io::Result<T> {
    let mut registry = registry();
    registry.open()?;
    let done = finalize()?;
    registry
        .live
        .retain(|(id, _, _)| !guards.iter().any(|g| g.id == *id));
    drop(registry);
    // Their entries are gone; dropping them looks for nothing.
    guards.clear();
    Ok(done)
}

/// Renames `from` to `to` and releases `guards`, as [`release_with`] does.
///
/// # Errors
/// As [`release_with`].
pub fn rename_releasing(
    from: &Path,
    to: &Path,
    guards: &mut Vec<TemporaryGuard>,
) -> io::Result<()> {
    release_with(guards, || fs::rename(from, to))
}
