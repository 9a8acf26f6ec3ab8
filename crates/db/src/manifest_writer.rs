//! Writing MANIFEST files (LevelDB's descriptor `log::Writer` and `SetCurrentFile`): the one
//! writer of MANIFEST records, for a new database, a bulk build's commit and the writer's
//! version set alike, and the switch of `CURRENT` to a MANIFEST written.
//!
//! A MANIFEST is a log ([`crate::log_format`]) whose records are version edits: the first a
//! snapshot of the whole state (or, for a new database, its counters), each later one a
//! change. Every record is synced as it is appended: a change takes effect only once its
//! record is durable.

use std::io;
use std::path::{Path, PathBuf};

use crate::durable::{Placing, write_atomically_with};
use crate::filename::{manifest_file_name, temp_file_name};
use crate::version_edit::VersionEdit;
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::writer::log_file::LogFile;
use crate::{Error, Result};

/// A MANIFEST being written: its number, and the log its edits are appended to.
pub(crate) struct ManifestWriter {
    number: u64,
    path: PathBuf,
    log: LogFile,
}

impl ManifestWriter {
    /// Creates (or replaces) the MANIFEST `number` in `dir` ([`FileSystem::create`]). A
    /// MANIFEST of a number already there was left by a process that died before `CURRENT`
    /// named it: the number was never used.
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot create`) naming the MANIFEST.
    pub(crate) fn create(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<ManifestWriter> {
        ManifestWriter::create_with(dir, number, |path| fs.create(path))
    }

    /// Creates the MANIFEST `number` in `dir` with `create` (a bulk build's commit makes it
    /// only where no file is, registered for removal on a signal).
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot create`) naming the MANIFEST.
    pub(crate) fn create_with(
        dir: &Path,
        number: u64,
        create: impl FnOnce(&Path) -> io::Result<Box<dyn WritableFile>>,
    ) -> Result<ManifestWriter> {
        let path = dir.join(manifest_file_name(number));
        let file = create(&path).map_err(|e| Error::op("cannot create", &path, e))?;
        Ok(ManifestWriter {
            number,
            log: LogFile::new(path.clone(), file),
            path,
        })
    }

    /// The MANIFEST's number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Appends `edit` as one record and syncs the MANIFEST.
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot write`, `cannot sync`) naming the MANIFEST.
    pub(crate) fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.log.append(&edit.encode(), true)
    }

    /// Appends `edit` as one record, unsynced: in a MANIFEST that nothing names yet, the
    /// next [`append`](Self::append)'s sync makes both durable (LevelDB's snapshot record).
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot write`) naming the MANIFEST.
    pub(crate) fn append_unsynced(&mut self, edit: &VersionEdit) -> Result<()> {
        self.log.append(&edit.encode(), false)
    }

    /// Closes the MANIFEST, reporting what closing it reports.
    ///
    /// # Errors
    /// [`Error::FileOp`] (`cannot write`) naming the MANIFEST.
    pub(crate) fn close(self) -> Result<()> {
        self.log.close()
    }

    /// Closes the MANIFEST, ignoring any error, and removes it: a MANIFEST `CURRENT` does not
    /// name, whose writing failed.
    pub(crate) fn discard(self, fs: &dyn FileSystem) {
        drop(self.log);
        let _ = fs.remove(&self.path);
    }
}

/// Points `dir/CURRENT` at `MANIFEST-<number>` as LevelDB's `SetCurrentFile` does: written
/// to `<number>.dbtmp`, synced, renamed over `CURRENT`, the temporary file made and renamed
/// as `placing` says ([`durable::Plain`](crate::durable::Plain): as they are). The caller
/// syncs `dir`: a failure then may leave `CURRENT` naming either MANIFEST, and the new one
/// must be kept.
///
/// # Errors
/// [`Error::FileOp`] for the temporary file's creation, write, sync, close or rename.
pub(crate) fn set_current(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    placing: &mut dyn Placing,
) -> Result<()> {
    let contents = format!("{}\n", manifest_file_name(number));
    write_atomically_with(
        fs,
        dir,
        (&temp_file_name(number), "CURRENT"),
        contents.as_bytes(),
        placing,
    )
}
