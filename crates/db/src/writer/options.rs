//! How a database is opened for writing, and how each write is made durable: LevelDB's
//! `Options` and `WriteOptions`, under LevelDB's names.

use std::sync::Arc;

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{
    BuildOptions, Compression, DEFAULT_BLOCK_RESTART_INTERVAL, DEFAULT_BLOCK_SIZE,
};

use crate::dbformat::{InternalKeyComparator, TableLayout};
use crate::options::DbOptions;
use crate::writer::compaction_filter::CompactionFilter;
use crate::writer::file_system::{FileSystem, LocalFileSystem};
use crate::{Error, Result};

/// LevelDB's default `write_buffer_size`: a memtable is flushed once it holds 4 MiB.
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 4 << 20;

/// The most bits per key of a Bloom filter a database open for writing writes: a filter
/// holds `bits × keys` bits for the keys of a table, built in memory, and past 64 bits the
/// false-positive rate (about one in ten million at 64) gains nothing worth the memory.
pub const MAX_BLOOM_BITS_PER_KEY: usize = 64;

/// The name [`Error::OptionOutOfRange`] gives the bits per key of
/// [`WritableOptions::filter_policy`].
pub const BLOOM_BITS_OPTION: &str = "filter_policy bits per key";

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
    /// Approximate uncompressed size of a data block. Default: 4096.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default: 16.
    pub block_restart_interval: usize,
    /// Compression of new data blocks. Default: Snappy. Mojang's zlib and raw deflate need
    /// the `zlib` feature, zstd the `zstd` feature.
    pub compression: Compression,
    /// The filter written into new tables: LevelDB's Bloom filter
    /// (`NewBloomFilterPolicy(bits)`), or none. Default: none, as LevelDB's.
    pub filter_policy: Option<BloomFilterPolicy>,
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
            block_size: DEFAULT_BLOCK_SIZE,
            block_restart_interval: DEFAULT_BLOCK_RESTART_INTERVAL,
            compression: Compression::Snappy,
            filter_policy: None,
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

    /// Sets [`block_size`](Self::block_size).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// Sets [`block_restart_interval`](Self::block_restart_interval).
    pub fn block_restart_interval(mut self, entries: usize) -> Self {
        self.block_restart_interval = entries;
        self
    }

    /// Sets [`compression`](Self::compression).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets [`filter_policy`](Self::filter_policy).
    pub fn filter_policy(mut self, policy: Option<BloomFilterPolicy>) -> Self {
        self.filter_policy = policy;
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

    /// Checks the values are usable, clamping as LevelDB's `SanitizeOptions` does: the
    /// write buffer to 64 KiB ..= 1 GiB, the file size to 1 MiB ..= 1 GiB, the block size
    /// to 1 KiB ..= 4 MiB. What LevelDB does not clamp is refused.
    ///
    /// # Errors
    /// [`Error::OptionOutOfRange`] for a zero block size or restart interval, or a Bloom
    /// filter of more than [`MAX_BLOOM_BITS_PER_KEY`] bits per key.
    pub(crate) fn sanitized(&self) -> Result<WritableOptions> {
        let out_of_range = |option, value: usize, min, max| Error::OptionOutOfRange {
            option,
            value: u64::try_from(value).unwrap_or(u64::MAX),
            min,
            max,
        };
        if self.block_size == 0 {
            return Err(out_of_range("block_size", 0, 1, u64::MAX));
        }
        if self.block_restart_interval == 0 {
            return Err(out_of_range("block_restart_interval", 0, 1, u64::MAX));
        }
        if let Some(policy) = self.filter_policy
            && policy.bits_per_key() > MAX_BLOOM_BITS_PER_KEY
        {
            return Err(out_of_range(
                BLOOM_BITS_OPTION,
                policy.bits_per_key(),
                0,
                MAX_BLOOM_BITS_PER_KEY as u64,
            ));
        }
        let mut o = self.clone();
        o.write_buffer_size = o.write_buffer_size.clamp(64 << 10, 1 << 30);
        o.max_file_size = o.max_file_size.clamp(1 << 20, 1 << 30);
        o.block_size = o.block_size.clamp(1 << 10, 4 << 20);
        Ok(o)
    }

    /// How new tables are written: internal keys under the database's comparator.
    pub(crate) fn build_options(&self, icmp: &Arc<InternalKeyComparator>) -> BuildOptions {
        TableLayout {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            compression: self.compression,
            bloom: self.filter_policy,
            cache_local_bits_per_key: None,
        }
        .build_options(Arc::clone(icmp) as _)
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
