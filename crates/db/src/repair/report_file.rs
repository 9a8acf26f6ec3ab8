//! A repair's report written to a file whole and durably: [`RepairReport::write_json`].

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::report::RepairReport;
use crate::durable::sync_dir_on;
use crate::filename::parent_dir;
use crate::writer::file_system::{FileSystem, LocalFileSystem, WritableFile};
use crate::{Error, Result};

/// Temporary report files this process has made, to name the next one.
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// Temporary names tried before giving up, should every one be taken.
const ATTEMPTS: u32 = 100;

impl RepairReport {
    /// Writes the report, as [JSON](Self::to_json), to the file `path`, whole: written to a
    /// new temporary file beside it (`.leveltable-report-*`), synced, renamed to `path`
    /// (replacing a file there), then the directory synced, so that once this returns the
    /// report is there after a crash or a power loss, and before, `path` holds what it held
    /// (a temporary file a crash left may be removed). A failure removes the temporary file.
    ///
    /// # Errors
    /// [`Error::FileOp`]: `cannot create a file in` the directory, `cannot write` the
    /// temporary file (its write, sync or close failed) or `path` (the rename failed), or
    /// `cannot sync` the directory (the report is at `path`, but its name may not survive a
    /// power loss).
    pub fn write_json(&self, path: impl AsRef<Path>) -> Result<()> {
        self.write_json_on(&LocalFileSystem, path)
    }

    /// [`write_json`](Self::write_json) through `file_system` (a test's, say, that records
    /// what a power loss would keep).
    ///
    /// # Errors
    /// As [`write_json`](Self::write_json).
    pub fn write_json_on(
        &self,
        file_system: &dyn FileSystem,
        path: impl AsRef<Path>,
    ) -> Result<()> {
        let path = path.as_ref();
        let dir = parent_dir(path);
        let (temp, mut file) = create_temporary(file_system, dir)?;
        let written = file
            .write_all(self.to_json().as_bytes())
            .and_then(|()| file.sync())
            // A failed close may have lost what was written (a delayed write error).
            .and_then(|()| file.close());
        if let Err(e) = written {
            let _ = file_system.remove(&temp);
            return Err(Error::op("cannot write", &temp, e));
        }
        if let Err(e) = file_system.rename(&temp, path) {
            let _ = file_system.remove(&temp);
            return Err(Error::op("cannot write", path, e));
        }
        // The new name durable before the report is said to be written.
        sync_dir_on(file_system, dir)
    }
}

/// Creates a new temporary file in `dir`, under a name no file has.
fn create_temporary(
    file_system: &dyn FileSystem,
    dir: &Path,
) -> Result<(PathBuf, Box<dyn WritableFile>)> {
    for _ in 0..ATTEMPTS {
        let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".leveltable-report-{}-{n}", std::process::id()));
        match file_system.create_new(&temp) {
            Ok(file) => return Ok((temp, file)),
            // Left by a process of the same number that was killed.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::op("cannot create a file in", dir, e)),
        }
    }
    Err(Error::op(
        "cannot create a file in",
        dir,
        io::Error::from(io::ErrorKind::AlreadyExists),
    ))
}
