//! A repair in place: the repaired database is built beside the damaged one, then the two
//! directories are swapped in one rename (`renameat2` with `RENAME_EXCHANGE`), and the
//! original directory, whole, is moved to `lost/` inside the repaired one, where LevelDB's
//! `RepairDB` keeps the files it sets aside.
//!
//! At every moment the directory's name holds one whole database: the original until the
//! swap, the repaired one after it. A crash between the swap and the move leaves the
//! original, whole, in the hidden directory `.NAME.leveltable-repair-original-PID` beside
//! it.

use std::fs;
use std::path::Path;

use leveltable_process::TemporaryDir;

use super::{RepairOptions, RepairReport, build, check_order};
use crate::durable::sync_dir;
use crate::filename::{named, parent_dir};
use crate::lock::DbLock;
use crate::{Error, Result};

/// The directory, inside the repaired database, that holds the original one.
pub const LOST_DIR: &str = "lost";

/// Repairs the database `dir` in place: [`repair`](crate::repair()) into a hidden
/// directory beside it, then the directories are swapped in one rename and the original
/// directory is moved, whole, to `dir/lost/`. The database's `LOCK` is held throughout, so
/// that LevelDB cannot open it meanwhile.
///
/// If the process dies before the swap, `dir` is the original database (a hidden
/// `.leveltable-repair-*` directory beside it may be left, which can be removed); after
/// it, `dir` is the repaired database and the original is in `dir/lost/` or, if the process
/// died before moving it there, in `.NAME.leveltable-repair-original-PID` beside `dir`.
///
/// # Errors
/// [`Error::RepairComparator`] for a source ordered by a comparator the options do not
/// know, with nothing changed; [`Error::Locked`] if LevelDB or another program has the database open;
/// [`Error::InvalidArgument`] for a `dir` that is not a directory (a symbolic link is
/// refused), or a system without an atomic directory swap (only Linux has one); the errors
/// of [`repair`](crate::repair()).
pub fn repair_in_place(dir: impl AsRef<Path>, options: &RepairOptions) -> Result<RepairReport> {
    let dir = dir.as_ref();
    let meta = fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
    if !meta.is_dir() {
        return Err(Error::InvalidArgument(
            format!(
                "{} is not a directory: an in-place repair swaps a database's directory",
                dir.display()
            )
            .into(),
        ));
    }
    let given = dir;
    let dir = &named(dir)?;
    // Before the lock (which may create `LOCK`): a refused source is left as it was.
    check_order(dir, options)?;
    let lock = DbLock::acquire(dir)?;
    let parent = parent_dir(dir);
    let name = dir
        .file_name()
        .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
    let staging = TemporaryDir::new_in(parent, ".leveltable-repair-")
        .map_err(|e| Error::op("cannot create a directory in", parent, e))?;
    let built = staging.path().join("db");
    let mut report = build(dir, &built, options, &mut |_, _| {})?;
    report.dest = given.to_owned();
    // Out of the staging directory (which a signal removes whole) before the swap: after it,
    // this name holds the original.
    let swap = parent.join(format!(
        ".{name}.leveltable-repair-original-{}",
        std::process::id()
    ));
    fs::rename(&built, &swap)
        .map_err(|e| Error::op(format!("cannot rename {} to", built.display()), &swap, e))?;
    if let Err(e) = exchange(&swap, dir) {
        let _ = fs::remove_dir_all(&swap);
        return Err(e);
    }
    sync_dir(parent)?;
    // `dir` is the repaired database; `swap` the original, moved whole into it.
    let lost = dir.join(LOST_DIR);
    fs::rename(&swap, &lost)
        .map_err(|e| Error::op(format!("cannot rename {} to", swap.display()), &lost, e))?;
    sync_dir(dir)?;
    sync_dir(parent)?;
    drop(lock);
    drop(staging);
    Ok(report)
}

/// Swaps the directories `a` and `b` in one rename.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(|e| {
        Error::op(
            format!("cannot swap {} with", a.display()),
            b,
            std::io::Error::from(e),
        )
    })
}

/// Swaps the directories `a` and `b` in one rename: only Linux can.
#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, b: &Path) -> Result<()> {
    Err(Error::InvalidArgument(
        format!(
            "cannot repair {} in place: this system cannot swap two directories in one rename",
            b.display()
        )
        .into(),
    ))
}
