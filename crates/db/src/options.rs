//! Options for opening a database, and what an open database tells about itself.

use std::fmt;
use std::sync::Arc;

use leveltable_table::{BytewiseComparator, Cache, Comparator, Profile};

use crate::comparators::ComparatorRegistry;
use crate::log_reader::Dropped;
use crate::table_cache::{DEFAULT_MAX_OPEN_TABLES, DEFAULT_TABLE_MEMORY_BUDGET};
use crate::version_edit::FileMetaData;
use crate::writer::file_system::{FileSystem, LocalFileSystem};

/// LevelDB's default block cache: 8 MiB.
pub const DEFAULT_BLOCK_CACHE_BYTES: u64 = 8 << 20;

/// How [`Db::open`](crate::Db::open) and [`Db::salvage`](crate::Db::salvage) read a
/// database. [`Default`] is LevelDB's defaults for reading.
#[derive(Clone)]
#[non_exhaustive]
pub struct DbOptions {
    /// The user comparator. A database whose MANIFEST names another comparator is refused.
    /// Default: [`BytewiseComparator`] (`leveldb.BytewiseComparator`). Not used when
    /// [`comparators`](Self::comparators) is set.
    pub comparator: Arc<dyn Comparator>,
    /// When set, the user comparator is the one of this registry named by the database's
    /// MANIFEST (bytewise if the MANIFEST names none), and a name the registry lacks is
    /// refused with [`Error::UnknownComparator`](crate::Error::UnknownComparator) naming it
    /// and listing the registered ones. Default: `None` (use [`comparator`](Self::comparator)).
    pub comparators: Option<ComparatorRegistry>,
    /// The most table files open at once (each holds a descriptor, its index block and its
    /// filter block). Default: 990, LevelDB's `max_open_files` (1000) less its reserve.
    pub max_open_tables: usize,
    /// The most bytes the open tables may keep in memory: their index blocks (decompressed),
    /// filter blocks and the search trees over their indexes. Past it, the least recently
    /// used tables are closed (and reopened when needed), as past
    /// [`max_open_tables`](Self::max_open_tables). Before opening a table, room is made for
    /// the largest table opened so far. A table that alone keeps more than this is refused
    /// with [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming it and both
    /// sizes. Default: 512 MiB ([`DEFAULT_TABLE_MEMORY_BUDGET`]); LevelDB's own tables keep
    /// about 30 KiB each, but a table's index block may decompress to hundreds of megabytes
    /// from a few kilobytes of file.
    pub table_memory_budget: u64,
    /// The cache of data blocks, possibly shared. Default: a new 8 MiB cache per database.
    /// A cache of 0 bytes (`Cache::shared(0)`) means none: each block is read from its
    /// file (or its memory map) every time, and long scans read straight from the blocks
    /// from the start.
    pub block_cache: Option<Arc<Cache>>,
    /// Check each data block's checksum when it is read. Default: true (LevelDB's reads
    /// default to false; a wrong value is worse than an error here).
    pub verify_checksums: bool,
    /// Fail the open on any corruption in a live log, as LevelDB's `paranoid_checks` does,
    /// instead of skipping the damaged records. Default: false.
    pub paranoid_checks: bool,
    /// Read table files through memory maps, as LevelDB does: a lookup then borrows its
    /// block from the page cache without a system call or a copy. Default: true. Turn it off
    /// for a directory whose table files another program may truncate or rewrite in place
    /// (LevelDB never does): a mapped file that shrinks under the reader ends the process
    /// with SIGBUS; reads then go through `pread`.
    pub memory_map: bool,
    /// Which compression each block type byte names in the table files (see [`Profile`]).
    /// Default: [`Profile::Auto`], which reads databases written by Google's LevelDB and by
    /// Mojang's (Minecraft Bedrock worlds) alike; zlib, raw deflate and zstd blocks need
    /// the `zlib` and `zstd` features.
    pub profile: Profile,
    /// Where the database's files are listed and read (through
    /// [`FileSystem::storage`]). Default: the local file system. A database open for
    /// writing reads and writes through its
    /// [`WritableOptions::file_system`](crate::WritableOptions::file_system) instead.
    pub file_system: Arc<dyn FileSystem>,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            comparator: Arc::new(BytewiseComparator),
            comparators: None,
            max_open_tables: DEFAULT_MAX_OPEN_TABLES,
            table_memory_budget: DEFAULT_TABLE_MEMORY_BUDGET,
            block_cache: None,
            verify_checksums: true,
            paranoid_checks: false,
            memory_map: true,
            profile: Profile::Auto,
            file_system: Arc::new(LocalFileSystem),
        }
    }
}

impl DbOptions {
    /// Sets [`comparator`](Self::comparator), and clears [`comparators`](Self::comparators):
    /// the database must be ordered by this comparator.
    pub fn comparator(mut self, comparator: Arc<dyn Comparator>) -> Self {
        self.comparator = comparator;
        self.comparators = None;
        self
    }

    /// Sets [`comparators`](Self::comparators): the comparator is chosen from `registry` by
    /// the name the database's MANIFEST records.
    pub fn comparators(mut self, registry: ComparatorRegistry) -> Self {
        self.comparators = Some(registry);
        self
    }

    /// Sets [`max_open_tables`](Self::max_open_tables) (at least 1 is used).
    pub fn max_open_tables(mut self, tables: usize) -> Self {
        self.max_open_tables = tables;
        self
    }

    /// Sets [`table_memory_budget`](Self::table_memory_budget) (at least 1 is used).
    pub fn table_memory_budget(mut self, bytes: u64) -> Self {
        self.table_memory_budget = bytes;
        self
    }

    /// Sets [`memory_map`](Self::memory_map).
    pub fn memory_map(mut self, memory_map: bool) -> Self {
        self.memory_map = memory_map;
        self
    }

    /// Sets [`block_cache`](Self::block_cache).
    pub fn block_cache(mut self, cache: Arc<Cache>) -> Self {
        self.block_cache = Some(cache);
        self
    }

    /// Sets [`verify_checksums`](Self::verify_checksums).
    pub fn verify_checksums(mut self, verify: bool) -> Self {
        self.verify_checksums = verify;
        self
    }

    /// Sets [`profile`](Self::profile).
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`file_system`](Self::file_system).
    pub fn file_system(mut self, file_system: Arc<dyn FileSystem>) -> Self {
        self.file_system = file_system;
        self
    }

    /// Sets [`paranoid_checks`](Self::paranoid_checks).
    pub fn paranoid_checks(mut self, paranoid: bool) -> Self {
        self.paranoid_checks = paranoid;
        self
    }
}

impl fmt::Debug for DbOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbOptions")
            .field("comparator", &self.comparator.name())
            .field("comparators", &self.comparators)
            .field("max_open_tables", &self.max_open_tables)
            .field("table_memory_budget", &self.table_memory_budget)
            .field("block_cache", &self.block_cache)
            .field("verify_checksums", &self.verify_checksums)
            .field("paranoid_checks", &self.paranoid_checks)
            .field("memory_map", &self.memory_map)
            .field("profile", &self.profile)
            .field("file_system", &self.file_system)
            .finish()
    }
}

/// A table file of the open database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableInfo {
    /// The file number (`NNNNNN.ldb`).
    pub number: u64,
    /// The level; `None` for a table found by a salvage that the MANIFEST does not list.
    pub level: Option<usize>,
    /// The size in bytes.
    pub size: u64,
    /// The smallest internal key.
    pub smallest: Vec<u8>,
    /// The largest internal key.
    pub largest: Vec<u8>,
}

impl TableInfo {
    /// The table `f` describes, at `level`.
    pub(crate) fn of(level: Option<usize>, f: &FileMetaData) -> TableInfo {
        TableInfo {
            number: f.number,
            level,
            size: f.file_size,
            smallest: f.smallest.clone(),
            largest: f.largest.clone(),
        }
    }
}

/// A log replayed at the open.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogInfo {
    /// The log number (`NNNNNN.log`).
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Records (write batches) read.
    pub records: u64,
    /// Versions (puts and deletes) replayed.
    pub versions: u64,
    /// What the log reader skipped as corrupt, and records that were not write batches
    /// (`log record too small`) or held a malformed one.
    pub dropped: Vec<Dropped>,
    /// Bytes after the end of the last whole record: a torn tail or block padding.
    pub tail_bytes: u64,
}

/// What [`Db::properties`](crate::Db::properties) reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DbProperties {
    /// The user comparator's name.
    pub comparator: String,
    /// The MANIFEST read (`None` in a salvage).
    pub manifest: Option<String>,
    /// The newest sequence number: the default snapshot.
    pub last_sequence: u64,
    /// The MANIFEST's log number (0 in a salvage).
    pub log_number: u64,
    /// The MANIFEST's previous log number (0: none).
    pub prev_log_number: u64,
    /// The MANIFEST's next file number (in a salvage: one past the largest file number).
    pub next_file_number: u64,
    /// The tables of each level (in a salvage, all at level 0, as `RepairDB` places them,
    /// with `level` telling where the MANIFEST had them).
    pub levels: Vec<Vec<TableInfo>>,
    /// The logs replayed, in order.
    pub logs: Vec<LogInfo>,
    /// Versions held in memory from the logs.
    pub memtable_versions: u64,
    /// Bytes of log replayed.
    pub log_bytes: u64,
    /// Bytes of log dropped as corrupt (reported by the log reader, and records that were
    /// not write batches).
    pub log_bytes_dropped: u64,
    /// Bytes after the last whole record of each log, summed: torn tails (a writer died
    /// mid-record) and block padding.
    pub log_tail_bytes: u64,
    /// Files a salvage skipped, with the reason (empty for an open).
    pub skipped: Vec<(String, String)>,
}

impl DbProperties {
    /// Sets the totals over [`logs`](Self::logs): their versions, bytes, bytes dropped and
    /// tails.
    pub(crate) fn count_logs(&mut self) {
        self.memtable_versions = self.logs.iter().map(|l| l.versions).sum();
        self.log_bytes = self.logs.iter().map(|l| l.size).sum();
        self.log_bytes_dropped = self
            .logs
            .iter()
            .flat_map(|l| &l.dropped)
            .map(|d| d.bytes)
            .sum();
        self.log_tail_bytes = self.logs.iter().map(|l| l.tail_bytes).sum();
    }
}

/// What [`Db::verify`](crate::Db::verify) checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DbVerifySummary {
    /// Tables read.
    pub tables: u64,
    /// Entries in them.
    pub table_entries: u64,
    /// Bytes of tables read.
    pub table_bytes: u64,
    /// Logs read.
    pub logs: u64,
    /// Write batches in them.
    pub log_records: u64,
}
