//! A log being appended to, a write-ahead log or a MANIFEST: each record handed to the
//! system as it is added (one `write` for a record that fits the 64 KiB buffer: a group
//! commit of small writes), synced when asked. The file only grows, by appends in order:
//! at every instant it holds whole records followed at most by part of one at its end,
//! which is what a reader reading it meanwhile, a killed process or a power loss leaves.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::filename::log_file_name;
use crate::log_writer::LogWriter;
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::{Error, Result};

/// A log file and the writer of its records.
pub(crate) struct LogFile {
    path: PathBuf,
    writer: LogWriter<BufWriter<Box<dyn WritableFile>>>,
}

impl LogFile {
    /// Creates the write-ahead log `number` in `dir` ([`FileSystem::create_log`]), and
    /// syncs `dir` so that its name survives a power loss: a write synced into it may be
    /// acknowledged before any MANIFEST record names it (LevelDB leaves the name to the
    /// next MANIFEST sync, and loses such a write).
    pub(crate) fn create_log(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<LogFile> {
        let path = dir.join(log_file_name(number));
        let file = fs
            .create_log(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        fs.sync_dir(dir)
            .map_err(|e| Error::op("cannot sync", dir, e))?;
        Ok(LogFile::new(path, file))
    }

    /// Creates (or replaces) the MANIFEST `path`. A MANIFEST of a number already there was
    /// left by a process that died before `CURRENT` named it: the number was never used.
    pub(crate) fn create_manifest(fs: &dyn FileSystem, path: PathBuf) -> Result<LogFile> {
        let file = fs
            .create(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        Ok(LogFile::new(path, file))
    }

    /// The MANIFEST `path`, a new file `file` made by the caller (a bulk build's commit makes
    /// it only where no file is, registered for removal on a signal).
    pub(crate) fn manifest_in(path: PathBuf, file: Box<dyn WritableFile>) -> LogFile {
        LogFile::new(path, file)
    }

    fn new(path: PathBuf, file: Box<dyn WritableFile>) -> LogFile {
        LogFile {
            path,
            writer: LogWriter::new(BufWriter::with_capacity(1 << 16, file)),
        }
    }

    /// Makes every record appended so far durable (`fdatasync`).
    pub(crate) fn sync(&mut self) -> Result<()> {
        let path = &self.path;
        self.writer
            .flush()
            .and_then(|()| self.writer.get_mut().get_mut().sync())
            .map_err(|e| Error::op("cannot sync", path, e))
    }

    /// Closes the file, reporting what closing it reports (everything appended is handed to
    /// the system first): a failed close may have lost what was written.
    pub(crate) fn close(self) -> Result<()> {
        let path = self.path;
        self.writer
            .into_inner()
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|file| file.close())
            .map_err(|e| Error::op("cannot write", &path, e))
    }

    /// Appends one record, handed to the system; synced to disk if `sync`.
    pub(crate) fn append(&mut self, record: &[u8], sync: bool) -> Result<()> {
        let path = &self.path;
        self.writer
            .add_record(record)
            .and_then(|()| self.writer.flush())
            .map_err(|e| Error::op("cannot write", path, e))?;
        if sync {
            self.writer
                .get_mut()
                .get_mut()
                .sync()
                .map_err(|e| Error::op("cannot sync", path, e))?;
        }
        Ok(())
    }
}
