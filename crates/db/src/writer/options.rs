//! How a database is opened for writing, and how each write is made durable: LevelDB's
//! `Options` and `WriteOptions`, under LevelDB's names.

use std::sync::Arc;

use leveltable_table::BuildOptions;

use crate::Result;
use crate::dbformat::InternalKeyComparator;
use crate::options::DbOptions;
use crate::table_options::TableOptions;
use crate::writer::compaction_filter::CompactionFilter;
use crate::writer::file_system::{FileSystem, LocalFileSystem};

/// LevelDB's default `write_buffer_size`: a memtable is flushed once it holds 4 MiB.
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 4 << 20;

/// How [`WritableDb::open`](crate::WritableDb::open) opens a database. [`Default`] is
/// LevelDB's defaults.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WritableOptions {
    /// How tables are read (comparator, caches, checksums, `paranoid_checks`), as for a
    /// read-only [`Db`](crate::Db).
    pub read: DbOptions,
    /// Create the database if the directory has none. Default: false.
    pub create_if_missing: bool,
    /// Refuse to open a database that already exists. Default: false.
    pub error_if_exists: bool,
    /// Bytes of writes held in memory (and in the log) before they are written to a
    /// level-0 table. Default: 4 MiB.
    pub write_buffer_size: usize,
    /// A table written by a flush or compaction is closed once it reaches this size.
    /// Default: 2 MiB.
    pub max_file_size: u64,
    /// How new tables (of flushes and compactions) are laid out. Default: LevelDB's
    /// ([`TableOptions::default`]: 4 KiB blocks, restart interval 16, Snappy, no filter).
    /// The block size is clamped to 1 KiB ..= 4 MiB on open, as LevelDB's.
    pub table: TableOptions,
    /// Where files are created, synced, renamed and deleted. Default: the local file
    /// system; tests give one that fails on demand.
    pub file_system: Arc<dyn FileSystem>,
    /// Asked by each compaction about the entries it keeps: keep, remove or change each
    /// (see [`CompactionFilter`] for which entries it sees). Default: none.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
}

impl Default for WritableOptions {
    fn default() -> Self {
        WritableOptions {
            read: DbOptions::default(),
            create_if_missing: false,
            error_if_exists: false,
            write_buffer_size: DEFAULT_WRITE_BUFFER_SIZE,
            max_file_size: crate::DEFAULT_MAX_FILE_SIZE,
            table: TableOptions::default(),
            file_system: Arc::new(LocalFileSystem),
            compaction_filter: None,
        }
    }
}

impl WritableOptions {
    /// Sets [`read`](Self::read).
    pub fn read(mut self, read: DbOptions) -> Self {
        self.read = read;
        self
    }

    /// Sets [`create_if_missing`](Self::create_if_missing).
    pub fn create_if_missing(mut self, create: bool) -> Self {
        self.create_if_missing = create;
        self
    }

    /// Sets [`error_if_exists`](Self::error_if_exists).
    pub fn error_if_exists(mut self, error: bool) -> Self {
        self.error_if_exists = error;
        self
    }

    /// Sets [`write_buffer_size`](Self::write_buffer_size).
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = bytes;
        self
    }

    /// Sets [`max_file_size`](Self::max_file_size).
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Sets [`table`](Self::table).
    pub fn table(mut self, table: TableOptions) -> Self {
        self.table = table;
        self
    }

    /// Sets [`file_system`](Self::file_system).
    pub fn file_system(mut self, file_system: Arc<dyn FileSystem>) -> Self {
        self.file_system = file_system;
        self
    }

    /// Sets [`compaction_filter`](Self::compaction_filter).
    pub fn compaction_filter(mut self, filter: Option<Arc<dyn CompactionFilter>>) -> Self {
        self.compaction_filter = filter;
        self
    }

    /// Checks the values are usable ([`TableOptions::check`]), clamping as LevelDB's
    /// `SanitizeOptions` does: the write buffer to 64 KiB ..= 1 GiB, the file size to
    /// 1 MiB ..= 1 GiB, the block size to 1 KiB ..= 4 MiB. What LevelDB does not clamp is
    /// refused.
    ///
    /// # Errors
    /// [`Error::OptionOutOfRange`](crate::Error::OptionOutOfRange) for table options out of
    /// range.
    pub(crate) fn sanitized(&self) -> Result<WritableOptions> {
        self.table.check()?;
        let mut o = self.clone();
        o.write_buffer_size = o.write_buffer_size.clamp(64 << 10, 1 << 30);
        o.max_file_size = o.max_file_size.clamp(1 << 20, 1 << 30);
        o.table.block_size = o.table.block_size.clamp(1 << 10, 4 << 20);
        Ok(o)
    }

    /// How new tables are written: internal keys under the database's comparator.
    pub(crate) fn build_options(&self, icmp: &Arc<InternalKeyComparator>) -> BuildOptions {
        self.table.build_options_for(Arc::clone(icmp) as _)
    }
}

/// How one write is made durable (LevelDB's `WriteOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the log to disk before the write returns: a write acknowledged with `sync`
    /// survives a machine crash. Without it a process crash loses nothing written, but a
    /// machine crash may lose the latest writes. Default: false.
    pub sync: bool,
}

impl WriteOptions {
    /// Writes synced to disk before they return.
    pub const SYNC: WriteOptions = WriteOptions { sync: true };
}
