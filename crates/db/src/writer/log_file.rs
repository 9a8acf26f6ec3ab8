//! A log being appended to, a write-ahead log or a MANIFEST: each record handed to the
//! system as it is added (one `write` for a record that fits the 64 KiB buffer: a group
//! commit of small writes), synced when asked. The file only grows, by appends in order:
//! at every instant it holds whole records followed at most by part of one at its end,
//! which is what a reader reading it meanwhile, a killed process or a power loss leaves.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::filename::log_file_name;
use crate::log_writer::LogWriter;
use crate::writer::background_sync::{BackgroundSync, DirToSync};
use crate::writer::file_system::{FileSystem, WritableFile};
use crate::{Error, Result};

/// After this many bytes appended unsynced, the system is told to start writing them to
/// the disk (a write-ahead log syncs them in the background): a later sync (the
/// write-ahead log's, when its memtable is full) then waits for less. The writer waits for
/// that sync, so its tail is kept short: 512 KiB waits about half as long as 1 MiB did, for
/// eight background syncs of a 4 MiB log instead of four.
const WRITEBACK_BYTES: usize = 512 << 10;

/// A log file and the writer of its records.
pub(crate) struct LogFile {
    path: PathBuf,
    writer: LogWriter<BufWriter<Box<dyn WritableFile>>>,
    /// Bytes appended since the last sync or writeback hint.
    unsynced: usize,
    /// How many bytes appended unsynced start a writeback or a background sync.
    writeback_bytes: usize,
    /// The directory holding the file, while its name is not yet synced.
    dir_to_sync: Option<DirToSync>,
    /// A write-ahead log's syncs on another thread, if its file can have them.
    background: Option<BackgroundSync>,
}

impl LogFile {
    /// Creates the write-ahead log `number` in `dir` ([`FileSystem::create_log`]), for a
    /// memtable of `write_buffer_size` bytes. `dir` is synced, so that the log's name
    /// survives a power loss, before the log's first sync: a write synced into it may be
    /// acknowledged before any MANIFEST record names it (LevelDB leaves the name to the next
    /// MANIFEST sync, and loses such a write). Writes not synced are promised nothing of a
    /// power loss, and wait for no directory sync.
    ///
    /// As the log grows, the directory and then each quarter of a memtable's bytes (at most
    /// 1 MiB) are synced in the background, if the file has a
    /// [`background_sync`](WritableFile::background_sync).
    pub(crate) fn create_log(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        number: u64,
        write_buffer_size: usize,
    ) -> Result<LogFile> {
        let path = dir.join(log_file_name(number));
        let file = fs
            .create_log(&path)
            .map_err(|e| Error::op("cannot create", &path, e))?;
        let background = file
            .background_sync(&path)
            .map(|sync| BackgroundSync::new(&path, sync));
        let mut log = LogFile::new(path, file);
        log.dir_to_sync = Some((Arc::clone(fs), dir.to_path_buf()));
        log.background = background;
        log.writeback_bytes = (write_buffer_size / 4).clamp(4 << 10, WRITEBACK_BYTES);
        Ok(log)
    }

    /// The log `path`, written to the new file `file` (a MANIFEST's, made by
    /// [`ManifestWriter`](crate::manifest_writer::ManifestWriter)).
    pub(crate) fn new(path: PathBuf, file: Box<dyn WritableFile>) -> LogFile {
        LogFile {
            path,
            writer: LogWriter::new(BufWriter::with_capacity(1 << 16, file)),
            unsynced: 0,
            writeback_bytes: WRITEBACK_BYTES,
            dir_to_sync: None,
            background: None,
        }
    }

    /// Records that the directory was synced after the log was created (by the MANIFEST
    /// change that names it): its first sync need not sync the directory again.
    pub(crate) fn name_is_durable(&mut self) {
        self.dir_to_sync = None;
    }

    /// Makes every record appended so far durable (`fdatasync`).
    pub(crate) fn sync(&mut self) -> Result<()> {
        let path = &self.path;
        self.writer
            .flush()
            .map_err(|e| Error::op("cannot write", path, e))?;
        self.sync_file()
    }

    /// Syncs the directory if the file's name is not synced yet, then the file. A
    /// background sync that has finished gives its outcome first; one still running is not
    /// waited for: the file's own sync waits for the same writes to reach the disk, and
    /// fails if one of them failed ([`WritableFile::background_sync`]).
    fn sync_file(&mut self) -> Result<()> {
        self.reap_background()?;
        if let Some((fs, dir)) = &self.dir_to_sync {
            fs.sync_dir(dir)
                .map_err(|e| Error::op("cannot sync", dir, e))?;
            self.dir_to_sync = None;
        }
        self.unsynced = 0;
        let path = &self.path;
        let file = self.writer.get_mut().get_mut();
        file.sync().map_err(|e| Error::op("cannot sync", path, e))
    }

    /// Takes the outcome of the background sync if it has finished: its error, or whether
    /// it synced the directory.
    fn reap_background(&mut self) -> Result<()> {
        if let Some(background) = &mut self.background
            && !background.is_busy()
            && background.wait()?
        {
            self.dir_to_sync = None;
        }
        Ok(())
    }

    /// Starts a background sync of what was appended so far, the directory's first if the
    /// name is not synced yet; when none can start, hints the system to start writing.
    fn start_writeback(&mut self) -> Result<()> {
        self.reap_background()?;
        if let Some(background) = &mut self.background {
            if background.start(self.dir_to_sync.as_ref()) {
                return Ok(());
            }
        }
        self.writer.get_mut().get_mut().start_writeback();
        Ok(())
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
            self.sync_file()?;
        } else {
            self.unsynced += record.len();
            if self.unsynced >= self.writeback_bytes {
                self.unsynced = 0;
                self.start_writeback()?;
            }
        }
        Ok(())
    }
}
