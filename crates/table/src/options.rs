//! Options for building and for reading tables.
//!
//! Both structs have public fields and same-named chaining setters:
//!
//! ```
//! use leveltable_table::{BuildOptions, Compression};
//! let options = BuildOptions::default().block_size(1024).compression(Compression::None);
//! assert_eq!(options.block_size, 1024);
//! ```

use std::fmt;
use std::sync::Arc;

use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy, KnownPolicy};

use crate::cache::Cache;
use crate::comparator::{BytewiseComparator, Comparator};
pub use crate::format::Compression;
pub use crate::profile::Profile;

/// LevelDB's default target size of a data block before compression: 4 KiB.
pub const DEFAULT_BLOCK_SIZE: usize = 4096;
/// LevelDB's default number of entries between restart points in a data block.
pub const DEFAULT_BLOCK_RESTART_INTERVAL: usize = 16;
/// Data blocks of a slow codec decompressed ahead of a scan, by default.
pub const DEFAULT_READAHEAD_BLOCKS: usize = 8;

/// How [`TableBuilder`](crate::TableBuilder) lays out a table. The defaults are LevelDB's.
#[derive(Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The key order; keys must be added in strictly increasing order under it.
    /// Default: [`BytewiseComparator`].
    pub comparator: Arc<dyn Comparator>,
    /// A data block is closed once its uncompressed size estimate reaches this many bytes.
    /// Any value is allowed; 0 puts every entry in its own block. Default: 4096.
    pub block_size: usize,
    /// Entries between restart points in data blocks (and the metaindex block); at least 1.
    /// Default: 16.
    pub block_restart_interval: usize,
    /// Compression of data, metaindex and index blocks (filter blocks are never compressed).
    /// A block is stored compressed only when that saves at least 1/8, as every LevelDB
    /// does. LevelDB 1.23 reads only [`Compression::None`] and [`Compression::Snappy`];
    /// [`Compression::readers`] says who reads the others. Default: [`Compression::Snappy`].
    pub compression: Compression,
    /// The filter LevelDB reads: stored under `filter.<name>` in the metaindex. Default: none.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// More filters, each in its own filter block under its own name. LevelDB ignores them;
    /// with none, the table is byte-identical to LevelDB's. Names must all differ.
    pub extra_filter_policies: Vec<Arc<dyn FilterPolicy>>,
}

impl Default for BuildOptions {
    fn default() -> BuildOptions {
        BuildOptions {
            comparator: Arc::new(BytewiseComparator),
            block_size: DEFAULT_BLOCK_SIZE,
            block_restart_interval: DEFAULT_BLOCK_RESTART_INTERVAL,
            compression: Compression::Snappy,
            filter_policy: None,
            extra_filter_policies: Vec::new(),
        }
    }
}

impl BuildOptions {
    /// Sets [`comparator`](Self::comparator).
    pub fn comparator(mut self, comparator: Arc<dyn Comparator>) -> Self {
        self.comparator = comparator;
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
    pub fn filter_policy(mut self, policy: impl FilterPolicy + 'static) -> Self {
        self.filter_policy = Some(Arc::new(policy));
        self
    }

    /// Adds one of [`extra_filter_policies`](Self::extra_filter_policies).
    pub fn extra_filter_policy(mut self, policy: impl FilterPolicy + 'static) -> Self {
        self.extra_filter_policies.push(Arc::new(policy));
        self
    }
}

impl fmt::Debug for BuildOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuildOptions")
            .field("comparator", &self.comparator.name())
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("compression", &self.compression)
            .field(
                "filter_policy",
                &self.filter_policy.as_ref().map(|p| p.name()),
            )
            .field(
                "extra_filter_policies",
                &self
                    .extra_filter_policies
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// How [`Table`](crate::Table) reads a table.
#[derive(Clone)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The order the table was built with. Default: [`BytewiseComparator`].
    pub comparator: Arc<dyn Comparator>,
    /// The filter to use if the table has one under `filter.<name>`. Default: none.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// Other filters the reader understands. On open, the first of these present in the
    /// table is used for gets, and [`filter_policy`](Self::filter_policy) only when none of
    /// them is; only the chosen filter block is loaded.
    pub extra_filter_policies: Vec<Arc<dyn FilterPolicy>>,
    /// Check each block's crc32c when it is read from the source (blocks found in the cache
    /// were checked when they were read; a table in memory, such as a memory map, checks
    /// each data block a lookup reads once, the first time, and remembers it). Default:
    /// true.
    pub verify_checksums: bool,
    /// A block cache, possibly shared by many tables. Default: none.
    pub block_cache: Option<Arc<Cache>>,
    /// Whether blocks read by gets and iterators go into the cache. Default: true.
    pub fill_cache: bool,
    /// Which compression each block type byte names (see [`Profile`]). Default:
    /// [`Profile::Auto`], which reads the blocks of Google's and Mojang's LevelDB alike.
    pub profile: Profile,
    /// How many data blocks of a slow codec (zlib, raw deflate, zstd) a sequential scan
    /// has decompressed ahead on other cores; 0 turns this off. Snappy and uncompressed
    /// tables are never read ahead. Default: [`DEFAULT_READAHEAD_BLOCKS`].
    pub readahead_blocks: usize,
    /// Open a table whose metaindex or filter block cannot be read or decoded as one without
    /// filters, as LevelDB's `Table::Open` does (it ignores errors in that meta
    /// information), instead of failing. Default: false; salvage reads set it.
    pub ignore_meta_errors: bool,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            comparator: Arc::new(BytewiseComparator),
            filter_policy: None,
            extra_filter_policies: Vec::new(),
            verify_checksums: true,
            block_cache: None,
            fill_cache: true,
            profile: Profile::Auto,
            readahead_blocks: DEFAULT_READAHEAD_BLOCKS,
            ignore_meta_errors: false,
        }
    }
}

impl ReadOptions {
    /// Sets [`comparator`](Self::comparator).
    pub fn comparator(mut self, comparator: Arc<dyn Comparator>) -> Self {
        self.comparator = comparator;
        self
    }

    /// Sets [`filter_policy`](Self::filter_policy).
    pub fn filter_policy(mut self, policy: impl FilterPolicy + 'static) -> Self {
        self.filter_policy = Some(Arc::new(policy));
        self
    }

    /// Adds one of [`extra_filter_policies`](Self::extra_filter_policies).
    pub fn extra_filter_policy(mut self, policy: impl FilterPolicy + 'static) -> Self {
        self.extra_filter_policies.push(Arc::new(policy));
        self
    }

    /// Reads with every filter policy in [`KnownPolicy::all`]: LevelDB's Bloom filter as the
    /// [`filter_policy`](Self::filter_policy) and the others as
    /// [`extra_filter_policies`](Self::extra_filter_policies), so a table's cache-local
    /// filter answers gets when it has one and LevelDB's filter otherwise. The known policies
    /// take their parameters from each filter, so this reads filters made with any bits per
    /// key.
    pub fn known_filter_policies(mut self) -> Self {
        for known in KnownPolicy::all() {
            if known.name() == BloomFilterPolicy::new(1).name() {
                self.filter_policy = Some(known.reader());
            } else {
                self.extra_filter_policies.push(known.reader());
            }
        }
        self
    }

    /// Sets [`verify_checksums`](Self::verify_checksums).
    pub fn verify_checksums(mut self, verify: bool) -> Self {
        self.verify_checksums = verify;
        self
    }

    /// Sets [`block_cache`](Self::block_cache).
    pub fn block_cache(mut self, cache: Arc<Cache>) -> Self {
        self.block_cache = Some(cache);
        self
    }

    /// Sets [`fill_cache`](Self::fill_cache).
    pub fn fill_cache(mut self, fill: bool) -> Self {
        self.fill_cache = fill;
        self
    }

    /// Sets [`profile`](Self::profile).
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`readahead_blocks`](Self::readahead_blocks).
    pub fn readahead_blocks(mut self, blocks: usize) -> Self {
        self.readahead_blocks = blocks;
        self
    }

    /// Sets [`ignore_meta_errors`](Self::ignore_meta_errors).
    pub fn ignore_meta_errors(mut self, ignore: bool) -> Self {
        self.ignore_meta_errors = ignore;
        self
    }
}

impl fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOptions")
            .field("comparator", &self.comparator.name())
            .field(
                "filter_policy",
                &self.filter_policy.as_ref().map(|p| p.name()),
            )
            .field(
                "extra_filter_policies",
                &self
                    .extra_filter_policies
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>(),
            )
            .field("verify_checksums", &self.verify_checksums)
            .field("block_cache", &self.block_cache)
            .field("fill_cache", &self.fill_cache)
            .field("profile", &self.profile)
            .field("readahead_blocks", &self.readahead_blocks)
            .field("ignore_meta_errors", &self.ignore_meta_errors)
            .finish()
    }
}
