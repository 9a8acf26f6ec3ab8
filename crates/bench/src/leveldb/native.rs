//! The workloads run in LevelDB through the C++ loops (built when LevelDB was found).

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

pub fn cli_db_write(dir: &Path, batch: u32, sync: bool) -> Result<()> {
    let dir = c_path(dir)?;
    let batch = std::ffi::c_int::try_from(batch).unwrap_or(std::ffi::c_int::MAX);
    let mut err = ptr::null_mut();
    // SAFETY: `dir` is NUL-terminated and outlives the call; `err` is an out-parameter.
    let code = unsafe { ffi::ltb_cli_db_write(dir.as_ptr(), batch, i32::from(sync), &mut err) };
    check(code, err)
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

    pub fn filter_block_match(&self, block: &[u8], queries: Records<'_>, offsets: &[u64]) -> usize {
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

    pub fn write(&mut self, keys: Records<'_>, values: Records<'_>, batch: usize) -> Result<()> {
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
        let code = unsafe { ffi::ltb_db_scan(self.0.as_ptr(), &mut entries, &mut bytes, &mut err) };
        check(code, err).map(|()| (entries, bytes))
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: from `ltb_db_open`, freed only here.
        unsafe { ffi::ltb_db_free(self.0.as_ptr()) };
    }
}

#[derive(Debug)]
pub struct WriteDb(NonNull<ffi::WriteDb>);

// SAFETY: a leveldb::DB may be used from any thread.
unsafe impl Send for WriteDb {}
// SAFETY: leveldb::DB is safe for concurrent use by several threads without external
// synchronisation (its db.h says so); every method here only calls DB's own methods.
unsafe impl Sync for WriteDb {}

impl WriteDb {
    pub fn open(path: &Path) -> Result<Self> {
        let path = c_path(path)?;
        let mut raw = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: `path` is NUL-terminated and outlives the call; out-parameters valid.
        let code = unsafe { ffi::ltb_wdb_open(path.as_ptr(), &mut raw, &mut err) };
        check(code, err)?;
        NonNull::new(raw)
            .map(WriteDb)
            .ok_or_else(|| Error::Status("no database".into()))
    }

    pub fn put(&self, keys: Records<'_>, ring: Records<'_>, first: u64, sync: bool) -> Result<()> {
        assert!(ring.count() > 0, "bench: the value ring is not empty");
        let mut err = ptr::null_mut();
        // SAFETY: the database is live and safe to share; both record sets outlive the
        // call, and every value index is taken modulo the ring's count.
        let code = unsafe {
            ffi::ltb_wdb_put(
                self.0.as_ptr(),
                keys.bytes().as_ptr(),
                keys.record_len(),
                keys.count(),
                ring.bytes().as_ptr(),
                ring.record_len(),
                ring.count(),
                first,
                c_int::from(sync),
                &mut err,
            )
        };
        check(code, err)
    }

    pub fn delete(&self, keys: Records<'_>, sync: bool) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the database is live and safe to share; the keys outlive the call.
        let code = unsafe {
            ffi::ltb_wdb_delete(
                self.0.as_ptr(),
                keys.bytes().as_ptr(),
                keys.record_len(),
                keys.count(),
                c_int::from(sync),
                &mut err,
            )
        };
        check(code, err)
    }

    pub fn gets(&self, keys: Records<'_>) -> Result<(u64, u64)> {
        let (mut found, mut bytes) = (0, 0);
        let mut err = ptr::null_mut();
        // SAFETY: the database is live and safe to share; the keys outlive the call; the
        // rest are out-parameters.
        let code = unsafe {
            ffi::ltb_wdb_gets(
                self.0.as_ptr(),
                keys.bytes().as_ptr(),
                keys.record_len(),
                keys.count(),
                &mut found,
                &mut bytes,
                &mut err,
            )
        };
        check(code, err).map(|()| (found, bytes))
    }

    pub fn scan(&self) -> Result<(u64, u64)> {
        let (mut entries, mut bytes) = (0, 0);
        let mut err = ptr::null_mut();
        // SAFETY: the database is live; the rest are out-parameters.
        let code =
            unsafe { ffi::ltb_wdb_scan(self.0.as_ptr(), &mut entries, &mut bytes, &mut err) };
        check(code, err).map(|()| (entries, bytes))
    }

    pub fn settle(&self, timeout_ms: u64) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the database is live; `err` is an out-parameter.
        let code = unsafe { ffi::ltb_wdb_settle(self.0.as_ptr(), timeout_ms, &mut err) };
        check(code, err)
    }
}

impl Drop for WriteDb {
    fn drop(&mut self) {
        // SAFETY: from `ltb_wdb_open`, freed only here, after every borrow has ended.
        unsafe { ffi::ltb_wdb_free(self.0.as_ptr()) };
    }
}
