//! LevelDB's tables: `leveldb::TableBuilder`, `leveldb::Table` with its iterator, the
//! filtered point lookup `Table::InternalGet`, and `ReadBlock`.
//!
//! Options mirror `leveldb::Options` as far as tables use them. Inputs LevelDB asserts
//! against (keys out of order, internal keys shorter than their 8-byte tag, a restart
//! interval below 1) are refused with [`Error::Rejected`] before
//! LevelDB sees them.
//!
//! LevelDB trusts a table's bytes more than this crate's own readers do: reading a block
//! without checksum verification, or opening a table of keys shorter than 8 bytes with
//! [`KeyComparator::InternalKey`], can end in one of the assertions compiled into Debian's
//! library, which aborts the process. Corruption tests therefore verify checksums.
#![expect(unsafe_code, reason = "calls the shim")]

use core::ffi::c_int;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::ffi::CString;
use std::path::Path;

use crate::error::{ErrSlot, take_bytes};
use crate::{Error, Result, ffi};

/// How data blocks are compressed (`leveldb::CompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// `kNoCompression`.
    None,
    /// `kSnappyCompression`: a block is stored compressed only when that saves at least
    /// 12.5%.
    #[default]
    Snappy,
}

/// The key order of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyComparator {
    /// `leveldb.BytewiseComparator`: lexicographic bytes.
    #[default]
    Bytewise,
    /// `leveldb.InternalKeyComparator` over the bytewise comparator, as in a database's
    /// `.ldb` files: a key is a user key followed by an 8-byte little-endian
    /// `sequence << 8 | type` tag; user keys ascend, tags descend. The Bloom filter (if any)
    /// then covers user keys (`InternalFilterPolicy`).
    InternalKey,
}

/// The `leveldb::Options` fields tables use. [`Default`] gives LevelDB's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableOptions {
    /// Uncompressed bytes per data block before it is cut (`block_size`, default 4096).
    pub block_size: usize,
    /// Keys between restart points in data blocks (`block_restart_interval`, default 16).
    pub block_restart_interval: u32,
    /// Data block compression (default snappy).
    pub compression: Compression,
    /// Bloom filter bits per key; 0 means no filter policy at all (the default).
    pub bloom_bits_per_key: u32,
    /// Key order (default bytewise).
    pub comparator: KeyComparator,
    /// Reader only: verify the checksums of the index, metaindex and filter blocks when
    /// opening (`paranoid_checks`, default false).
    pub paranoid_checks: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            compression: Compression::Snappy,
            bloom_bits_per_key: 0,
            comparator: KeyComparator::Bytewise,
            paranoid_checks: false,
        }
    }
}

impl TableOptions {
    fn to_ffi(&self) -> Result<ffi::LtOptions> {
        let block_restart_interval = i32::try_from(self.block_restart_interval)
            .map_err(|_| Error::rejected("block_restart_interval exceeds an int"))?;
        let bloom_bits_per_key = i32::try_from(self.bloom_bits_per_key)
            .map_err(|_| Error::rejected("bloom_bits_per_key exceeds an int"))?;
        Ok(ffi::LtOptions {
            block_size: self.block_size,
            block_restart_interval,
            compression: match self.compression {
                Compression::None => 0,
                Compression::Snappy => 1,
            },
            bloom_bits_per_key,
            comparator: match self.comparator {
                KeyComparator::Bytewise => 0,
                KeyComparator::InternalKey => 1,
            },
            paranoid_checks: c_int::from(self.paranoid_checks),
        })
    }
}

fn path_to_cstring(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::rejected("path is not UTF-8"))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::rejected("path contains a NUL byte"))
}

/// `leveldb::TableBuilder` writing to memory or to a file through `Env::Default()`.
///
/// Call order: `add* finish`, with `flush` anywhere to cut the current data block early.
#[derive(Debug)]
pub struct TableBuilder {
    raw: NonNull<ffi::LtTableBuilder>,
    path: Option<std::path::PathBuf>,
}

// SAFETY: a TableBuilder and its WritableFile have no thread affinity; `&mut self` methods
// serialize access.
unsafe impl Send for TableBuilder {}

impl TableBuilder {
    /// A builder collecting the table in memory.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] for a restart interval below 1 or options beyond `int`.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build.
    pub fn new(options: &TableOptions) -> Result<Self> {
        Self::open(options, None)
    }

    /// A builder writing the table to `path` (created or truncated) with LevelDB's own
    /// `WritableFile`.
    ///
    /// # Errors
    ///
    /// As [`TableBuilder::new`], plus LevelDB's I/O errors creating the file.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build.
    pub fn create(path: &Path, options: &TableOptions) -> Result<Self> {
        Self::open(options, Some(path))
    }

    fn open(options: &TableOptions, path: Option<&Path>) -> Result<Self> {
        ffi::ensure_available();
        let opts = options.to_ffi()?;
        let cpath = path.map(path_to_cstring).transpose()?;
        let mut raw = core::ptr::null_mut();
        let mut err = ErrSlot::new();
        // SAFETY: `opts` is a valid lt_options read during the call; `cpath` is null or a
        // NUL-terminated string alive during the call; `raw` and `err` are out-parameters.
        let code = unsafe {
            ffi::lt_table_builder_new(
                &opts,
                cpath.as_ref().map_or(core::ptr::null(), |p| p.as_ptr()),
                &mut raw,
                err.as_out(),
            )
        };
        err.check(code)?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::rejected("shim returned no builder"))?;
        Ok(TableBuilder {
            raw,
            path: path.map(Path::to_path_buf),
        })
    }

    /// `Add(key, value)`.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] if `key` does not sort strictly after the previous key, or is an
    /// internal key shorter than 8 bytes; LevelDB's status if a write failed.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is a live, unfinished builder (finish consumes self); LevelDB copies
        // the key and value bytes it is given before returning.
        let code = unsafe {
            ffi::lt_table_builder_add(
                self.raw.as_ptr(),
                key.as_ptr(),
                key.len(),
                value.as_ptr(),
                value.len(),
                err.as_out(),
            )
        };
        err.check(code)
    }

    /// `Flush()`: ends the current data block now (no-op if it is empty).
    ///
    /// # Errors
    ///
    /// LevelDB's status if a write failed.
    pub fn flush(&mut self) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is a live, unfinished builder; `err` is an out-parameter.
        let code = unsafe { ffi::lt_table_builder_flush(self.raw.as_ptr(), err.as_out()) };
        err.check(code)
    }

    /// `NumEntries()`.
    pub fn num_entries(&self) -> u64 {
        // SAFETY: `raw` is a live builder; the call only reads a counter.
        unsafe { ffi::lt_table_builder_num_entries(self.raw.as_ptr()) }
    }

    /// `FileSize()`: bytes written so far.
    pub fn file_size(&self) -> u64 {
        // SAFETY: `raw` is a live builder; the call only reads a counter.
        unsafe { ffi::lt_table_builder_file_size(self.raw.as_ptr()) }
    }

    /// `Finish()`: writes the filter, metaindex and index blocks and the footer, and returns
    /// the whole table (for a file builder, the file is synced, closed and read back).
    ///
    /// # Errors
    ///
    /// LevelDB's status if a write failed; an I/O error reading a file back is reported as
    /// [`StatusCode::IoError`](crate::StatusCode::IoError).
    pub fn finish(self) -> Result<Vec<u8>> {
        let mut out = ffi::LtBytes::empty();
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live and not finished (this consumes self); `out` and `err` are
        // out-parameters.
        let code =
            unsafe { ffi::lt_table_builder_finish(self.raw.as_ptr(), &mut out, err.as_out()) };
        err.check(code)?;
        let bytes = take_bytes(out);
        match &self.path {
            None => Ok(bytes),
            Some(path) => std::fs::read(path).map_err(|e| Error::Status {
                code: crate::StatusCode::IoError,
                message: format!("IO error: {}: {e}", path.display()),
            }),
        }
    }
}

impl Drop for TableBuilder {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_table_builder_new` and is freed only here (the shim
        // abandons an unfinished table first).
        unsafe { ffi::lt_table_builder_free(self.raw.as_ptr()) };
    }
}

/// The outcome of [`Table::lookup`], LevelDB's `Table::InternalGet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The first entry at or after the key within the one data block that could hold it,
    /// as `InternalGet` hands it to its callback; `None` when the filter ruled the block
    /// out, the key sorts after the table's last index entry, or the block has no entry
    /// at or after it.
    pub entry: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether a data block was read from the file: false when the key sorts past the
    /// index or the Bloom filter said the key is absent.
    pub block_read: bool,
}

/// An open `leveldb::Table` over an in-memory copy of a file or a file on disk.
///
/// Block reads go through a counting file, so [`Table::block_reads`] and
/// [`Lookup::block_read`] observe exactly what LevelDB fetched. No block cache is used.
#[derive(Debug)]
pub struct Table {
    raw: NonNull<ffi::LtTable>,
}

// SAFETY: leveldb::Table may be used from any thread; this type is deliberately not Sync so
// that the read counter observed around one lookup is not disturbed by another thread.
unsafe impl Send for Table {}

impl Table {
    /// `Table::Open` over a copy of `contents`.
    ///
    /// # Errors
    ///
    /// LevelDB's status for a file that is too short, a bad footer or unreadable index (with
    /// [`TableOptions::paranoid_checks`], also checksum mismatches there); [`Error::Rejected`]
    /// for invalid options.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build.
    pub fn open(contents: &[u8], options: &TableOptions) -> Result<Self> {
        Self::open_raw(options, None, contents)
    }

    /// `Table::Open` over the file at `path`, read through `Env::Default()`.
    ///
    /// # Errors
    ///
    /// As [`Table::open`], plus LevelDB's I/O errors.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build.
    pub fn open_file(path: &Path, options: &TableOptions) -> Result<Self> {
        let cpath = path_to_cstring(path)?;
        Self::open_raw(options, Some(&cpath), &[])
    }

    fn open_raw(options: &TableOptions, path: Option<&CString>, contents: &[u8]) -> Result<Self> {
        ffi::ensure_available();
        let opts = options.to_ffi()?;
        let mut raw = core::ptr::null_mut();
        let mut err = ErrSlot::new();
        // SAFETY: `opts` is read during the call; `path` is null or NUL-terminated; the shim
        // copies `contents` (when used) before returning; `raw` and `err` are out-parameters.
        let code = unsafe {
            ffi::lt_table_open(
                &opts,
                path.map_or(core::ptr::null(), |p| p.as_ptr()),
                contents.as_ptr(),
                contents.len(),
                &mut raw,
                err.as_out(),
            )
        };
        err.check(code)?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::rejected("shim returned no table"))?;
        Ok(Table { raw })
    }

    /// Reads of the underlying file since it was opened (footer, index, metaindex and filter
    /// blocks at open, then one per data block fetched).
    pub fn block_reads(&self) -> u64 {
        // SAFETY: `raw` is a live table; the call reads an atomic counter.
        unsafe { ffi::lt_table_block_reads(self.raw.as_ptr()) }
    }

    /// `ApproximateOffsetOf(key)`.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] for an internal key shorter than 8 bytes.
    pub fn approximate_offset_of(&self, key: &[u8]) -> Result<u64> {
        let mut out = 0;
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live; `key` outlives the call; `out` and `err` are out-parameters.
        let code = unsafe {
            ffi::lt_table_approximate_offset_of(
                self.raw.as_ptr(),
                key.as_ptr(),
                key.len(),
                &mut out,
                err.as_out(),
            )
        };
        err.check(code)?;
        Ok(out)
    }

    /// `Table::InternalGet(key)` (private in LevelDB, reached the way a test harness would),
    /// reporting the entry its callback received and whether a data block was read.
    ///
    /// # Errors
    ///
    /// LevelDB's status when reading the block failed (e.g. a checksum mismatch with
    /// `verify_checksums`); [`Error::Rejected`] for an internal key shorter than 8 bytes.
    pub fn lookup(&self, key: &[u8], verify_checksums: bool) -> Result<Lookup> {
        let mut found: c_int = 0;
        let mut block_read: c_int = 0;
        let mut found_key = ffi::LtBytes::empty();
        let mut found_value = ffi::LtBytes::empty();
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is a live table used from this thread only (Table is not Sync);
        // `key` outlives the call; all other arguments are out-parameters.
        let code = unsafe {
            ffi::lt_table_internal_get(
                self.raw.as_ptr(),
                c_int::from(verify_checksums),
                key.as_ptr(),
                key.len(),
                &mut found,
                &mut found_key,
                &mut found_value,
                &mut block_read,
                err.as_out(),
            )
        };
        err.check(code)?;
        let entry = (found != 0).then(|| (take_bytes(found_key), take_bytes(found_value)));
        Ok(Lookup {
            entry,
            block_read: block_read != 0,
        })
    }

    /// The value stored under exactly `key`, through [`Table::lookup`] without checksum
    /// verification (LevelDB's default `ReadOptions`).
    ///
    /// # Errors
    ///
    /// As [`Table::lookup`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let lookup = self.lookup(key, false)?;
        Ok(lookup.entry.and_then(|(k, v)| (k == key).then_some(v)))
    }

    /// A new iterator (`NewIterator`), initially not positioned.
    ///
    /// # Panics
    ///
    /// If the iterator cannot be allocated.
    pub fn iter(&self, verify_checksums: bool) -> TableIter<'_> {
        // SAFETY: `raw` is a live table; the returned iterator borrows it for `'_`.
        let raw =
            unsafe { ffi::lt_table_iter_new(self.raw.as_ptr(), c_int::from(verify_checksums)) };
        let raw = NonNull::new(raw).expect("interop: allocating an iterator failed");
        TableIter {
            raw,
            _table: PhantomData,
        }
    }

    /// Every entry in order, read with a fresh iterator.
    ///
    /// # Errors
    ///
    /// The iterator's status if reading any block failed (with `verify_checksums`, a
    /// corrupted block is `Corruption: block checksum mismatch`).
    pub fn entries(&self, verify_checksums: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut iter = self.iter(verify_checksums);
        iter.seek_to_first();
        let mut entries = Vec::new();
        while let Some((k, v)) = iter.entry() {
            entries.push((k.to_vec(), v.to_vec()));
            iter.next();
        }
        iter.status()?;
        Ok(entries)
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_table_open`; iterators borrow the table, so none is
        // alive now.
        unsafe { ffi::lt_table_free(self.raw.as_ptr()) };
    }
}

/// A LevelDB table iterator (two-level: index block, then data blocks).
///
/// `next` and `prev` on an iterator that is not valid do nothing (LevelDB would assert).
#[derive(Debug)]
pub struct TableIter<'t> {
    raw: NonNull<ffi::LtIter>,
    _table: PhantomData<&'t Table>,
}

impl TableIter<'_> {
    /// `Valid()`.
    pub fn valid(&self) -> bool {
        // SAFETY: `raw` is a live iterator over a live table.
        unsafe { ffi::lt_iter_valid(self.raw.as_ptr()) != 0 }
    }

    /// `SeekToFirst()`.
    pub fn seek_to_first(&mut self) {
        // SAFETY: `raw` is a live iterator over a live table.
        unsafe { ffi::lt_iter_seek_to_first(self.raw.as_ptr()) }
    }

    /// `SeekToLast()`.
    pub fn seek_to_last(&mut self) {
        // SAFETY: `raw` is a live iterator over a live table.
        unsafe { ffi::lt_iter_seek_to_last(self.raw.as_ptr()) }
    }

    /// `Seek(target)`: positions at the first entry at or after `target`.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] for an internal key shorter than 8 bytes.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live; `target` outlives the call (LevelDB does not keep it).
        let code = unsafe {
            ffi::lt_iter_seek(
                self.raw.as_ptr(),
                target.as_ptr(),
                target.len(),
                err.as_out(),
            )
        };
        err.check(code)
    }

    /// `Next()`.
    pub fn next(&mut self) {
        // SAFETY: `raw` is live; the shim only steps a valid iterator.
        unsafe { ffi::lt_iter_next(self.raw.as_ptr()) }
    }

    /// `Prev()`.
    pub fn prev(&mut self) {
        // SAFETY: `raw` is live; the shim only steps a valid iterator.
        unsafe { ffi::lt_iter_prev(self.raw.as_ptr()) }
    }

    /// The current key, if valid.
    pub fn key(&self) -> Option<&[u8]> {
        let mut len = 0;
        // SAFETY: `raw` is live; `len` is an out-parameter.
        let ptr = unsafe { ffi::lt_iter_key(self.raw.as_ptr(), &mut len) };
        // SAFETY: a non-null pointer addresses `len` bytes owned by the iterator that stay put
        // until it moves, which needs `&mut self`, so not while this borrow of `self` lives.
        (!ptr.is_null()).then(|| unsafe { core::slice::from_raw_parts(ptr, len) })
    }

    /// The current value, if valid.
    pub fn value(&self) -> Option<&[u8]> {
        let mut len = 0;
        // SAFETY: `raw` is live; `len` is an out-parameter.
        let ptr = unsafe { ffi::lt_iter_value(self.raw.as_ptr(), &mut len) };
        // SAFETY: as in `key`: the bytes stay put while `self` is borrowed.
        (!ptr.is_null()).then(|| unsafe { core::slice::from_raw_parts(ptr, len) })
    }

    /// The current key and value, if valid.
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        Some((self.key()?, self.value()?))
    }

    /// `status()`: the first error a block read hit, if any.
    ///
    /// # Errors
    ///
    /// That error.
    pub fn status(&self) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `raw` is live; `err` is an out-parameter.
        let code = unsafe { ffi::lt_iter_status(self.raw.as_ptr(), err.as_out()) };
        err.check(code)
    }
}

impl Drop for TableIter<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_table_iter_new` and is freed only here, while the table
        // it borrows is still alive.
        unsafe { ffi::lt_iter_free(self.raw.as_ptr()) };
    }
}

/// `ReadBlock` on the table image `file` for the block handle `(offset, size)`: the block's
/// contents without its 5-byte trailer, decompressed.
///
/// # Errors
///
/// `Corruption: block checksum mismatch` (with `verify_checksums`), `Corruption: truncated
/// block read`, `Corruption: bad block type`, `Corruption: corrupted compressed block
/// contents`.
///
/// # Panics
///
/// If LevelDB is not linked into this build.
pub fn read_block(file: &[u8], offset: u64, size: u64, verify_checksums: bool) -> Result<Vec<u8>> {
    ffi::ensure_available();
    let mut out = ffi::LtBytes::empty();
    let mut err = ErrSlot::new();
    // SAFETY: `file` outlives the call and the shim copies it; `out` and `err` are
    // out-parameters. The shim refuses sizes past the file before LevelDB allocates.
    let code = unsafe {
        ffi::lt_read_block(
            file.as_ptr(),
            file.len(),
            offset,
            size,
            c_int::from(verify_checksums),
            &mut out,
            err.as_out(),
        )
    };
    err.check(code)?;
    Ok(take_bytes(out))
}
