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
mod imp {
    use core::ffi::{CStr, c_char, c_int};
    use core::ptr::{self, NonNull};
    use std::ffi::CString;
    use std::path::Path;

    use super::{Error, Records, Result, ffi};

    /// Turns a shim return code and error slot into a result.
    fn check(code: c_int, err: *mut c_char) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        let message = if err.is_null() {
            String::from("unknown error")
        } else {
            // SAFETY: a non-null `err` is a NUL-terminated string malloc'd by the shim.
            let text = unsafe { CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: the shim malloc'd it and nothing else refers to it.
            unsafe { ffi::ltb_free(err.cast()) };
            text
        };
        Err(Error::Status(message))
    }

    fn c_path(path: &Path) -> Result<CString> {
        use std::os::unix::ffi::OsStrExt;
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::Status("path contains a NUL byte".into()))
    }

    fn c_bits(bits: usize) -> c_int {
        c_int::try_from(bits).expect("bench: bits per key fit an int")
    }

    pub fn hash_slices(data: &[u8], slice: usize, seed: u32) -> Result<u32> {
        // SAFETY: pointer and length describe `data`; LevelDB only reads it.
        Ok(unsafe { ffi::ltb_hash_slices(data.as_ptr(), data.len(), slice, seed) })
    }

    pub fn cli_get(path: &Path) -> Result<i32> {
        let path = c_path(path)?;
        let mut err = ptr::null_mut();
        // SAFETY: `path` is NUL-terminated and outlives the call; `err` is an out-parameter.
        let code = unsafe { ffi::ltb_cli_get(path.as_ptr(), &mut err) };
        if code == 2 {
            check(code, err)?;
        }
        Ok(code)
    }

    pub fn cli_build(path: &Path) -> Result<()> {
        let path = c_path(path)?;
        let mut err = ptr::null_mut();
        // SAFETY: `path` is NUL-terminated and outlives the call; `err` is an out-parameter.
        check(unsafe { ffi::ltb_cli_build(path.as_ptr(), &mut err) }, err)
    }

    #[derive(Debug)]
    pub struct Bloom(NonNull<ffi::Policy>);

    // SAFETY: LevelDB's filter policies are immutable and shared by all threads of a database.
    unsafe impl Send for Bloom {}
    // SAFETY: as above; every method LevelDB calls on a policy is const.
    unsafe impl Sync for Bloom {}

    impl Bloom {
        pub fn new(bits_per_key: usize) -> Result<Self> {
            // SAFETY: plain value argument.
            let raw = unsafe { ffi::ltb_bloom_new(c_bits(bits_per_key)) };
            NonNull::new(raw)
                .map(Bloom)
                .ok_or_else(|| Error::Status("allocating a policy failed".into()))
        }

        pub fn create_batches(&self, keys: Records<'_>, batch: usize) -> usize {
            assert!(batch > 0, "bench: batches hold at least one key");
            // SAFETY: the policy is live; `keys` describes `count` records of `len` bytes,
            // which LevelDB only reads.
            unsafe {
                ffi::ltb_bloom_create_batches(
                    self.0.as_ptr(),
                    keys.bytes().as_ptr(),
                    keys.record_len(),
                    keys.count(),
                    batch,
                )
            }
        }

        pub fn create(&self, keys: Records<'_>) -> Vec<u8> {
            let mut len = 0;
            // SAFETY: as in `create_batches`; `len` is an out-parameter.
            let ptr = unsafe {
                ffi::ltb_bloom_create(
                    self.0.as_ptr(),
                    keys.bytes().as_ptr(),
                    keys.record_len(),
                    keys.count(),
                    &mut len,
                )
            };
            assert!(!ptr.is_null(), "bench: out of memory copying a filter");
            // SAFETY: the shim malloc'd `len` initialised bytes at `ptr`.
            let filter = unsafe { core::slice::from_raw_parts(ptr, len) }.to_vec();
            // SAFETY: malloc'd by the shim, not used after this.
            unsafe { ffi::ltb_free(ptr.cast()) };
            filter
        }

        pub fn matches(&self, filter: &[u8], queries: Records<'_>) -> usize {
            // SAFETY: the policy is live; both buffers outlive the call and are only read.
            unsafe {
                ffi::ltb_bloom_match(
                    self.0.as_ptr(),
                    filter.as_ptr(),
                    filter.len(),
                    queries.bytes().as_ptr(),
                    queries.record_len(),
                    queries.count(),
                )
            }
        }

        pub fn filter_block_build(
            &self,
            keys: Records<'_>,
            offsets: &[u64],
            starts: &[usize],
        ) -> usize {
            assert_eq!(
                starts.len(),
                offsets.len() + 1,
                "bench: one start per block"
            );
            assert!(
                starts.windows(2).all(|w| w[0] <= w[1]),
                "bench: starts ascend"
            );
            assert!(
                starts.last().is_none_or(|&s| s <= keys.count()),
                "bench: keys suffice"
            );
            assert!(
                offsets.windows(2).all(|w| w[0] < w[1]),
                "bench: block offsets ascend (LevelDB asserts it)"
            );
            // SAFETY: the policy is live; `offsets` has `blocks` entries and `starts` one
            // more, every start indexes within `keys` (checked above), and LevelDB's
            // StartBlock precondition (offsets never go back) holds.
            unsafe {
                ffi::ltb_filter_block_build(
                    self.0.as_ptr(),
                    keys.bytes().as_ptr(),
                    keys.record_len(),
                    offsets.as_ptr(),
                    starts.as_ptr(),
                    offsets.len(),
                )
            }
        }

        pub fn filter_block_match(
            &self,
            block: &[u8],
            queries: Records<'_>,
            offsets: &[u64],
        ) -> usize {
            assert_eq!(
                queries.count(),
                offsets.len(),
                "bench: one offset per query"
            );
            assert!(
                block.last().is_none_or(|&lg| lg < 64),
                "bench: LevelDB shifts by the block's last byte"
            );
            // SAFETY: the policy is live; all buffers outlive the call and are only read;
            // `offsets` has one entry per query; the shift count is below 64.
            unsafe {
                ffi::ltb_filter_block_match(
                    self.0.as_ptr(),
                    block.as_ptr(),
                    block.len(),
                    queries.bytes().as_ptr(),
                    queries.record_len(),
                    offsets.as_ptr(),
                    offsets.len(),
                )
            }
        }
    }

    impl Drop for Bloom {
        fn drop(&mut self) {
            // SAFETY: from `ltb_bloom_new`, freed only here.
            unsafe { ffi::ltb_bloom_free(self.0.as_ptr()) };
        }
    }

    #[derive(Debug)]
    pub struct TableBuilder {
        raw: NonNull<ffi::Builder>,
        last_key: Vec<u8>,
    }

    impl TableBuilder {
        pub fn create(path: &Path, snappy: bool, bloom_bits: usize) -> Result<Self> {
            let path = c_path(path)?;
            let mut raw = ptr::null_mut();
            let mut err = ptr::null_mut();
            // SAFETY: `path` is NUL-terminated and outlives the call; out-parameters valid.
            let code = unsafe {
                ffi::ltb_builder_new(
                    path.as_ptr(),
                    c_int::from(snappy),
                    c_bits(bloom_bits),
                    &mut raw,
                    &mut err,
                )
            };
            check(code, err)?;
            let raw = NonNull::new(raw).ok_or_else(|| Error::Status("no builder".into()))?;
            Ok(TableBuilder {
                raw,
                last_key: Vec::new(),
            })
        }

        /// Adds `keys[i] → values[i]`. Keys must ascend strictly (LevelDB asserts it).
        pub fn add(&mut self, keys: Records<'_>, values: Records<'_>) -> Result<()> {
            assert_eq!(keys.count(), values.count(), "bench: one value per key");
            let mut previous: &[u8] = &self.last_key;
            for key in keys.iter() {
                assert!(
                    previous.is_empty() || key > previous,
                    "bench: keys ascend (LevelDB asserts it)"
                );
                previous = key;
            }
            if let Some(last) = keys.iter().last() {
                self.last_key = last.to_vec();
            }
            let mut err = ptr::null_mut();
            // SAFETY: the builder is live and unfinished (finish consumes self); both record
            // sets outlive the call, have equal counts and ascending keys (checked above).
            let code = unsafe {
                ffi::ltb_builder_add(
                    self.raw.as_ptr(),
                    keys.bytes().as_ptr(),
                    keys.record_len(),
                    values.bytes().as_ptr(),
                    values.record_len(),
                    keys.count(),
                    &mut err,
                )
            };
            check(code, err)
        }

        /// Finishes and closes the file (no sync); returns its size.
        pub fn finish(self) -> Result<u64> {
            let mut size = 0;
            let mut err = ptr::null_mut();
            // SAFETY: live and unfinished; this consumes self, and Drop frees the builder.
            let code = unsafe { ffi::ltb_builder_finish(self.raw.as_ptr(), &mut size, &mut err) };
            check(code, err).map(|()| size)
        }
    }

    impl Drop for TableBuilder {
        fn drop(&mut self) {
            // SAFETY: from `ltb_builder_new`, freed only here (the shim abandons an
            // unfinished table first).
            unsafe { ffi::ltb_builder_free(self.raw.as_ptr()) };
        }
    }

    #[derive(Debug)]
    pub struct Table(NonNull<ffi::Table>);

    // SAFETY: a leveldb::Table has no thread affinity.
    unsafe impl Send for Table {}

    impl Table {
        pub fn open(path: &Path, bloom_bits: usize, cache_bytes: usize) -> Result<Self> {
            let path = c_path(path)?;
            let mut raw = ptr::null_mut();
            let mut err = ptr::null_mut();
            // SAFETY: `path` is NUL-terminated and outlives the call; out-parameters valid.
            let code = unsafe {
                ffi::ltb_table_open(
                    path.as_ptr(),
                    c_bits(bloom_bits),
                    cache_bytes,
                    &mut raw,
                    &mut err,
                )
            };
            check(code, err)?;
            NonNull::new(raw)
                .map(Table)
                .ok_or_else(|| Error::Status("no table".into()))
        }

        pub fn gets(&mut self, queries: Records<'_>, verify: bool) -> Result<(u64, u64)> {
            let (mut found, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: the table is live and used by this thread only (`&mut self`); the
            // queries outlive the call; the rest are out-parameters.
            let code = unsafe {
                ffi::ltb_table_gets(
                    self.0.as_ptr(),
                    queries.bytes().as_ptr(),
                    queries.record_len(),
                    queries.count(),
                    c_int::from(verify),
                    &mut found,
                    &mut bytes,
                    &mut err,
                )
            };
            check(code, err).map(|()| (found, bytes))
        }

        pub fn scan(&mut self, verify: bool) -> Result<(u64, u64)> {
            let (mut entries, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: the table is live; the rest are out-parameters.
            let code = unsafe {
                ffi::ltb_table_scan(
                    self.0.as_ptr(),
                    c_int::from(verify),
                    &mut entries,
                    &mut bytes,
                    &mut err,
                )
            };
            check(code, err).map(|()| (entries, bytes))
        }

        pub fn gets_threads(&mut self, queries: Records<'_>, threads: usize) -> Result<(u64, u64)> {
            let (mut found, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: the table is live and used by this call only (`&mut self`), whose
            // threads only read it and are joined before it returns; the queries outlive
            // the call; the rest are out-parameters.
            let code = unsafe {
                ffi::ltb_table_gets_threads(
                    self.0.as_ptr(),
                    queries.bytes().as_ptr(),
                    queries.record_len(),
                    queries.count(),
                    threads,
                    &mut found,
                    &mut bytes,
                    &mut err,
                )
            };
            check(code, err).map(|()| (found, bytes))
        }

        pub fn scan_threads(&mut self, threads: usize) -> Result<(u64, u64)> {
            let (mut entries, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: as in `gets_threads`; the rest are out-parameters.
            let code = unsafe {
                ffi::ltb_table_scan_threads(
                    self.0.as_ptr(),
                    threads,
                    &mut entries,
                    &mut bytes,
                    &mut err,
                )
            };
            check(code, err).map(|()| (entries, bytes))
        }
    }

    impl Drop for Table {
        fn drop(&mut self) {
            // SAFETY: from `ltb_table_open`, freed only here.
            unsafe { ffi::ltb_table_free(self.0.as_ptr()) };
        }
    }

    #[derive(Debug)]
    pub struct Db(NonNull<ffi::Db>);

    // SAFETY: a leveldb::DB may be used from any thread.
    unsafe impl Send for Db {}

    impl Db {
        pub fn open(
            path: &Path,
            bloom_bits: usize,
            cache_bytes: usize,
            verify: bool,
            create: bool,
        ) -> Result<Self> {
            let path = c_path(path)?;
            let mut raw = ptr::null_mut();
            let mut err = ptr::null_mut();
            // SAFETY: `path` is NUL-terminated and outlives the call; out-parameters valid.
            let code = unsafe {
                ffi::ltb_db_open(
                    path.as_ptr(),
                    c_bits(bloom_bits),
                    cache_bytes,
                    c_int::from(verify),
                    c_int::from(create),
                    &mut raw,
                    &mut err,
                )
            };
            check(code, err)?;
            NonNull::new(raw)
                .map(Db)
                .ok_or_else(|| Error::Status("no database".into()))
        }

        pub fn write(
            &mut self,
            keys: Records<'_>,
            values: Records<'_>,
            batch: usize,
        ) -> Result<()> {
            assert_eq!(keys.count(), values.count(), "bench: one value per key");
            assert!(batch > 0, "bench: batches hold at least one entry");
            let mut err = ptr::null_mut();
            // SAFETY: the database is live and used by this thread only; both record sets
            // outlive the call and have equal counts.
            let code = unsafe {
                ffi::ltb_db_write(
                    self.0.as_ptr(),
                    keys.bytes().as_ptr(),
                    keys.record_len(),
                    values.bytes().as_ptr(),
                    values.record_len(),
                    keys.count(),
                    batch,
                    &mut err,
                )
            };
            check(code, err)
        }

        pub fn settle(&mut self, timeout_ms: u64) -> Result<[u64; 7]> {
            let mut files = [0u64; 7];
            let mut err = ptr::null_mut();
            // SAFETY: the database is live; `files` has the 7 slots the shim fills.
            let code = unsafe {
                ffi::ltb_db_settle(self.0.as_ptr(), timeout_ms, files.as_mut_ptr(), &mut err)
            };
            check(code, err).map(|()| files)
        }

        pub fn compact_all(&mut self) -> Result<()> {
            let mut err = ptr::null_mut();
            // SAFETY: the database is live.
            let code = unsafe { ffi::ltb_db_compact_all(self.0.as_ptr(), &mut err) };
            check(code, err)
        }

        pub fn gets(&mut self, queries: Records<'_>) -> Result<(u64, u64)> {
            let (mut found, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: the database is live; the queries outlive the call; the rest are
            // out-parameters.
            let code = unsafe {
                ffi::ltb_db_gets(
                    self.0.as_ptr(),
                    queries.bytes().as_ptr(),
                    queries.record_len(),
                    queries.count(),
                    &mut found,
                    &mut bytes,
                    &mut err,
                )
            };
            check(code, err).map(|()| (found, bytes))
        }

        pub fn scan(&mut self) -> Result<(u64, u64)> {
            let (mut entries, mut bytes) = (0, 0);
            let mut err = ptr::null_mut();
            // SAFETY: the database is live; the rest are out-parameters.
            let code =
                unsafe { ffi::ltb_db_scan(self.0.as_ptr(), &mut entries, &mut bytes, &mut err) };
            check(code, err).map(|()| (entries, bytes))
        }
    }

    impl Drop for Db {
        fn drop(&mut self) {
            // SAFETY: from `ltb_db_open`, freed only here.
            unsafe { ffi::ltb_db_free(self.0.as_ptr()) };
        }
    }
}

#[cfg(not(leveldb_loops))]
mod imp {
    use std::path::Path;

    use super::{Error, Records, Result};

    pub fn hash_slices(_data: &[u8], _slice: usize, _seed: u32) -> Result<u32> {
        Err(Error::Unavailable)
    }

    pub fn cli_get(_path: &Path) -> Result<i32> {
        Err(Error::Unavailable)
    }

    pub fn cli_build(_path: &Path) -> Result<()> {
        Err(Error::Unavailable)
    }

    #[derive(Debug)]
    pub struct Bloom(());

    impl Bloom {
        pub fn new(_bits_per_key: usize) -> Result<Self> {
            Err(Error::Unavailable)
        }
        pub fn create_batches(&self, _keys: Records<'_>, _batch: usize) -> usize {
            unreachable!("no Bloom exists without LevelDB")
        }
        pub fn create(&self, _keys: Records<'_>) -> Vec<u8> {
            unreachable!("no Bloom exists without LevelDB")
        }
        pub fn matches(&self, _filter: &[u8], _queries: Records<'_>) -> usize {
            unreachable!("no Bloom exists without LevelDB")
        }
        pub fn filter_block_build(
            &self,
            _keys: Records<'_>,
            _offsets: &[u64],
            _starts: &[usize],
        ) -> usize {
            unreachable!("no Bloom exists without LevelDB")
        }
        pub fn filter_block_match(
            &self,
            _block: &[u8],
            _queries: Records<'_>,
            _offsets: &[u64],
        ) -> usize {
            unreachable!("no Bloom exists without LevelDB")
        }
    }

    #[derive(Debug)]
    pub struct TableBuilder(());

    impl TableBuilder {
        pub fn create(_path: &Path, _snappy: bool, _bloom_bits: usize) -> Result<Self> {
            Err(Error::Unavailable)
        }
        pub fn add(&mut self, _keys: Records<'_>, _values: Records<'_>) -> Result<()> {
            Err(Error::Unavailable)
        }
        pub fn finish(self) -> Result<u64> {
            Err(Error::Unavailable)
        }
    }

    #[derive(Debug)]
    pub struct Table(());

    impl Table {
        pub fn open(_path: &Path, _bloom_bits: usize, _cache_bytes: usize) -> Result<Self> {
            Err(Error::Unavailable)
        }
        pub fn gets(&mut self, _queries: Records<'_>, _verify: bool) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
        pub fn scan(&mut self, _verify: bool) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
        pub fn gets_threads(
            &mut self,
            _queries: Records<'_>,
            _threads: usize,
        ) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
        pub fn scan_threads(&mut self, _threads: usize) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
    }

    #[derive(Debug)]
    pub struct Db(());

    impl Db {
        pub fn open(
            _path: &Path,
            _bloom_bits: usize,
            _cache_bytes: usize,
            _verify: bool,
            _create: bool,
        ) -> Result<Self> {
            Err(Error::Unavailable)
        }
        pub fn write(
            &mut self,
            _keys: Records<'_>,
            _values: Records<'_>,
            _batch: usize,
        ) -> Result<()> {
            Err(Error::Unavailable)
        }
        pub fn settle(&mut self, _timeout_ms: u64) -> Result<[u64; 7]> {
            Err(Error::Unavailable)
        }
        pub fn compact_all(&mut self) -> Result<()> {
            Err(Error::Unavailable)
        }
        pub fn gets(&mut self, _queries: Records<'_>) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
        pub fn scan(&mut self) -> Result<(u64, u64)> {
            Err(Error::Unavailable)
        }
    }
}

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
