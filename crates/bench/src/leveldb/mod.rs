//! Safe wrappers over the C++ loops in `native/leveldb_loops.cc`: whole workloads run on
//! LevelDB 1.23 without crossing into Rust per operation.
//!
//! Keys and values are passed as [`Records`]: fixed-length records laid end to end.
//! Available when the build found LevelDB ([`available`]); otherwise every constructor
//! returns [`Error::Unavailable`].
#![cfg_attr(leveldb_loops, expect(unsafe_code, reason = "calls the C++ loops"))]

use std::fmt;
use std::path::Path;

/// Fixed-length records laid end to end: `len` bytes each.
#[derive(Debug, Clone, Copy)]
pub struct Records<'a> {
    bytes: &'a [u8],
    len: usize,
}

impl<'a> Records<'a> {
    /// Records of `len` bytes in `bytes`.
    ///
    /// # Panics
    ///
    /// If `len` is 0 or does not divide `bytes.len()`.
    pub fn new(bytes: &'a [u8], len: usize) -> Self {
        assert!(len > 0 && bytes.len() % len == 0, "records of {len} bytes");
        Records { bytes, len }
    }

    /// Record length.
    pub fn record_len(&self) -> usize {
        self.len
    }

    /// Number of records.
    pub fn count(&self) -> usize {
        self.bytes.len() / self.len
    }

    /// The records as slices.
    pub fn iter(&self) -> std::slice::ChunksExact<'a, u8> {
        self.bytes.chunks_exact(self.len)
    }

    /// Records `range`.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Records<'a> {
        Records {
            bytes: &self.bytes[range.start * self.len..range.end * self.len],
            len: self.len,
        }
    }

    /// All bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// Whether this build has the LevelDB loops.
pub const fn available() -> bool {
    cfg!(leveldb_loops)
}

/// An error from LevelDB, or LevelDB missing from this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The build found no LevelDB 1.23.
    Unavailable,
    /// LevelDB's status text.
    Status(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unavailable => f.write_str("bench: LevelDB 1.23 is not linked into this build"),
            Error::Status(s) => write!(f, "bench: leveldb: {s}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result of a LevelDB call.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(leveldb_loops)]
mod ffi;

#[cfg(leveldb_loops)]
#[path = "native.rs"]
mod imp;

#[cfg(not(leveldb_loops))]
#[path = "unavailable.rs"]
mod imp;

/// `leveldb::Hash` over each `slice`-byte piece of `data` (a tail shorter than `slice` is
/// skipped), XOR-ed together.
///
/// # Errors
///
/// [`Error::Unavailable`] without LevelDB.
pub fn hash_slices(data: &[u8], slice: usize, seed: u32) -> Result<u32> {
    assert!(slice > 0, "bench: slices are not empty");
    imp::hash_slices(data, slice, seed)
}

/// `leveltable get --hex TABLE` written as a C++ tool over LevelDB: hex keys from standard
/// input, `KEY<TAB>VALUE` on standard output for each key found, `not found: KEY` on standard
/// error for the others, both streams fully buffered. Returns the exit code, 0 or 1.
///
/// # Errors
///
/// LevelDB's status, or a key that is not hex.
pub fn cli_get(table: &Path) -> Result<i32> {
    imp::cli_get(table)
}

/// `leveltable build --hex OUT -` written as a C++ tool over LevelDB: `KEY<TAB>VALUE` lines
/// in hex from standard input, the table written under a temporary name, synced, renamed to
/// `out` and its directory synced.
///
/// # Errors
///
/// LevelDB's status, a malformed line or keys out of order.
pub fn cli_build(out: &Path) -> Result<()> {
    imp::cli_build(out)
}

/// `leveltable db write --hex --batch BATCH [--sync] DIR -` written as a C++ tool over
/// LevelDB: `put<TAB>KEY<TAB>VALUE` and `del<TAB>KEY` lines in hex from standard input, every
/// `batch` of them one write batch (synced if `sync`), into the database `dir` (created if
/// missing, LevelDB's default options).
///
/// # Errors
///
/// LevelDB's status or a malformed line.
pub fn cli_db_write(dir: &Path, batch: u32, sync: bool) -> Result<()> {
    imp::cli_db_write(dir, batch, sync)
}

/// `leveldb::NewBloomFilterPolicy`.
#[derive(Debug)]
pub struct Bloom(imp::Bloom);

impl Bloom {
    /// A Bloom policy with `bits_per_key`.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] without LevelDB.
    pub fn new(bits_per_key: usize) -> Result<Self> {
        imp::Bloom::new(bits_per_key).map(Bloom)
    }

    /// `CreateFilter` on each run of `batch` keys into one reused string; the total size.
    pub fn create_batches(&self, keys: Records<'_>, batch: usize) -> usize {
        self.0.create_batches(keys, batch)
    }

    /// The filter of all `keys`.
    pub fn create(&self, keys: Records<'_>) -> Vec<u8> {
        self.0.create(keys)
    }

    /// How many `queries` `KeyMayMatch` the filter.
    pub fn matches(&self, filter: &[u8], queries: Records<'_>) -> usize {
        self.0.matches(filter, queries)
    }

    /// Builds a filter block in which block `b` starts at `offsets[b]` and holds keys
    /// `starts[b]..starts[b + 1]`; returns its size.
    ///
    /// # Panics
    ///
    /// If the layout is inconsistent (LevelDB would assert).
    pub fn filter_block_build(
        &self,
        keys: Records<'_>,
        offsets: &[u64],
        starts: &[usize],
    ) -> usize {
        self.0.filter_block_build(keys, offsets, starts)
    }

    /// How many `queries[i]` the filter block lets through for the data block at
    /// `offsets[i]`.
    pub fn filter_block_match(&self, block: &[u8], queries: Records<'_>, offsets: &[u64]) -> usize {
        self.0.filter_block_match(block, queries, offsets)
    }
}

/// `leveldb::TableBuilder` writing a file through `Env::Default()`.
#[derive(Debug)]
pub struct TableBuilder(imp::TableBuilder);

impl TableBuilder {
    /// A builder for `path` with block size 4096, restart interval 16, snappy or no
    /// compression, and a Bloom filter of `bloom_bits` per key (0: none).
    ///
    /// # Errors
    ///
    /// LevelDB's status creating the file; [`Error::Unavailable`] without LevelDB.
    pub fn create(path: &Path, snappy: bool, bloom_bits: usize) -> Result<Self> {
        imp::TableBuilder::create(path, snappy, bloom_bits).map(TableBuilder)
    }

    /// Adds `keys[i] → values[i]` in order.
    ///
    /// # Errors
    ///
    /// LevelDB's status if a write failed.
    ///
    /// # Panics
    ///
    /// If keys do not ascend strictly.
    pub fn add(&mut self, keys: Records<'_>, values: Records<'_>) -> Result<()> {
        self.0.add(keys, values)
    }

    /// Finishes and closes the table; returns the file size.
    ///
    /// # Errors
    ///
    /// LevelDB's status if a write failed.
    pub fn finish(self) -> Result<u64> {
        self.0.finish()
    }
}

/// A `leveldb::Table` over a file opened through `Env::Default()` (which maps it).
#[derive(Debug)]
pub struct Table(imp::Table);

impl Table {
    /// Opens `path` with a Bloom policy of `bloom_bits` (0: none) and an LRU block cache of
    /// `cache_bytes` (0: none).
    ///
    /// # Errors
    ///
    /// LevelDB's status; [`Error::Unavailable`] without LevelDB.
    pub fn open(path: &Path, bloom_bits: usize, cache_bytes: usize) -> Result<Self> {
        imp::Table::open(path, bloom_bits, cache_bytes).map(Table)
    }

    /// Runs `InternalGet` for each query as a database's `Get` would (key compared, value
    /// copied into one reused string); returns (found, value bytes).
    ///
    /// # Errors
    ///
    /// LevelDB's status from a block read.
    pub fn gets(&mut self, queries: Records<'_>, verify_checksums: bool) -> Result<(u64, u64)> {
        self.0.gets(queries, verify_checksums)
    }

    /// Iterates over every entry; returns (entries, key + value bytes).
    ///
    /// # Errors
    ///
    /// The iterator's status.
    pub fn scan(&mut self, verify_checksums: bool) -> Result<(u64, u64)> {
        self.0.scan(verify_checksums)
    }

    /// [`gets`](Self::gets) from `threads` threads at once, each asking a contiguous part of
    /// the queries, without checksums; returns the totals.
    ///
    /// # Errors
    ///
    /// LevelDB's status from a block read in any thread.
    pub fn gets_threads(&mut self, queries: Records<'_>, threads: usize) -> Result<(u64, u64)> {
        self.0.gets_threads(queries, threads)
    }

    /// [`scan`](Self::scan) of the whole table by each of `threads` threads at once, without
    /// checksums; returns the totals.
    ///
    /// # Errors
    ///
    /// The status of any thread's iterator.
    pub fn scan_threads(&mut self, threads: usize) -> Result<(u64, u64)> {
        self.0.scan_threads(threads)
    }
}

/// A `leveldb::DB` opened through `DB::Open` with default options, except a Bloom filter
/// policy, an LRU block cache of a given size, and whether reads verify checksums.
#[derive(Debug)]
pub struct Db(imp::Db);

impl Db {
    /// Opens (or with `create`, creates) the database in `path`, with a Bloom policy of
    /// `bloom_bits` (0: none), an LRU block cache of `cache_bytes`, and reads verifying
    /// block checksums if `verify`. LevelDB writes on open: it replays the logs into a
    /// level-0 table and starts a new log and MANIFEST.
    ///
    /// # Errors
    ///
    /// LevelDB's status; [`Error::Unavailable`] without LevelDB.
    pub fn open(
        path: &Path,
        bloom_bits: usize,
        cache_bytes: usize,
        verify: bool,
        create: bool,
    ) -> Result<Self> {
        imp::Db::open(path, bloom_bits, cache_bytes, verify, create).map(Db)
    }

    /// Puts `keys[i] → values[i]` in the order given, `batch` entries to a `WriteBatch`,
    /// without sync.
    ///
    /// # Errors
    ///
    /// LevelDB's status from a write.
    pub fn write(&mut self, keys: Records<'_>, values: Records<'_>, batch: usize) -> Result<()> {
        self.0.write(keys, values, batch)
    }

    /// Waits, up to `timeout_ms`, until no level is due for a size compaction (fewer than
    /// four level-0 files, level L ≥ 1 under 10^L MiB); returns the files per level.
    ///
    /// # Errors
    ///
    /// If the compactions did not settle in time.
    pub fn settle(&mut self, timeout_ms: u64) -> Result<[u64; 7]> {
        self.0.settle(timeout_ms)
    }

    /// `CompactRange(nullptr, nullptr)`.
    ///
    /// # Errors
    ///
    /// None from LevelDB itself (its `CompactRange` returns nothing); [`Error::Unavailable`]
    /// without LevelDB.
    pub fn compact_all(&mut self) -> Result<()> {
        self.0.compact_all()
    }

    /// `DB::Get` for each query into one reused string; returns (found, value bytes).
    ///
    /// # Errors
    ///
    /// A status other than not-found.
    pub fn gets(&mut self, queries: Records<'_>) -> Result<(u64, u64)> {
        self.0.gets(queries)
    }

    /// Iterates over the whole database; returns (entries, key + value bytes).
    ///
    /// # Errors
    ///
    /// The iterator's status.
    pub fn scan(&mut self) -> Result<(u64, u64)> {
        self.0.scan()
    }
}

/// A `leveldb::DB` for the write workloads: `DB::Open` with LevelDB's default options (4 MiB
/// write buffer, 2 MiB files, snappy, no filter policy, the default 8 MiB block cache) and
/// `create_if_missing`. `Sync`: LevelDB's database takes writes from several threads at once.
#[derive(Debug)]
pub struct WriteDb(imp::WriteDb);

impl WriteDb {
    /// Opens the database in `path`, creating it if missing.
    ///
    /// # Errors
    ///
    /// LevelDB's status; [`Error::Unavailable`] without LevelDB.
    pub fn open(path: &Path) -> Result<Self> {
        imp::WriteDb::open(path).map(WriteDb)
    }

    /// `DB::Put` of `keys[i]` → `ring[(first + i) % ring.count()]`, one write per put, synced
    /// if `sync`.
    ///
    /// # Errors
    ///
    /// LevelDB's status from a write.
    pub fn put(&self, keys: Records<'_>, ring: Records<'_>, first: u64, sync: bool) -> Result<()> {
        self.0.put(keys, ring, first, sync)
    }

    /// `DB::Delete` of each key, one write each.
    ///
    /// # Errors
    ///
    /// LevelDB's status from a write.
    pub fn delete(&self, keys: Records<'_>, sync: bool) -> Result<()> {
        self.0.delete(keys, sync)
    }

    /// `DB::Get` with default `ReadOptions` for each key; returns (found, value bytes).
    ///
    /// # Errors
    ///
    /// A status other than not-found.
    pub fn gets(&self, keys: Records<'_>) -> Result<(u64, u64)> {
        self.0.gets(keys)
    }

    /// Iterates over the whole database; returns (entries, key + value bytes).
    ///
    /// # Errors
    ///
    /// The iterator's status.
    pub fn scan(&self) -> Result<(u64, u64)> {
        self.0.scan()
    }

    /// Waits, up to `timeout_ms`, until no level is due for a size compaction.
    ///
    /// # Errors
    ///
    /// If the compactions did not settle in time.
    pub fn settle(&self, timeout_ms: u64) -> Result<()> {
        self.0.settle(timeout_ms)
    }
}
