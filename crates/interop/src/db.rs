//! A LevelDB database through LevelDB's C API (`leveldb/c.h`), to make real databases whose
//! `.ldb` table files other code can read.
#![expect(unsafe_code, reason = "calls LevelDB's C API")]

use core::ffi::{c_int, c_uchar};
use core::ptr::NonNull;
use std::ffi::CString;
use std::path::Path;

use crate::error::ErrSlot;
use crate::table::Compression;
use crate::{Error, Result, StatusCode, ffi};

mod history;
pub use history::{SplitMix, history_key, history_value, random_writer};

/// Options for [`Db::open`]. [`Default`] gives LevelDB's defaults plus `create_if_missing`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DbOptions {
    /// Create the database if it does not exist (default true here).
    pub create_if_missing: bool,
    /// Fail if the database exists (default false).
    pub error_if_exists: bool,
    /// Check data aggressively (default false).
    pub paranoid_checks: bool,
    /// Memtable size before it is written out as a level-0 table (default 4 MiB).
    pub write_buffer_size: usize,
    /// Approximate uncompressed size of a data block (default 4096).
    pub block_size: usize,
    /// Keys between restart points (default 16).
    pub block_restart_interval: u32,
    /// Size at which compaction starts a new table file (default 2 MiB).
    pub max_file_size: usize,
    /// Data block compression (default snappy).
    pub compression: Compression,
    /// Bloom filter bits per key; 0 for no filter policy (default 0).
    pub bloom_bits_per_key: u32,
    /// Verify block checksums on every read by [`Db::get`] (default false).
    pub verify_checksums: bool,
    /// Sync the log on every write (default false).
    pub sync: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            create_if_missing: true,
            error_if_exists: false,
            paranoid_checks: false,
            write_buffer_size: 4 << 20,
            block_size: 4096,
            block_restart_interval: 16,
            max_file_size: 2 << 20,
            compression: Compression::Snappy,
            bloom_bits_per_key: 0,
            verify_checksums: false,
            sync: false,
        }
    }
}

/// An open LevelDB database; closed on drop.
#[derive(Debug)]
pub struct Db {
    db: NonNull<ffi::LevelDbT>,
    // Invariant: dropped after `db` is closed (fields drop after `Drop::drop`), since the
    // database uses the options and filter policy until then.
    handles: Handles,
}

/// The C API option objects a database was opened with.
#[derive(Debug)]
struct Handles {
    options: NonNull<ffi::LevelDbOptionsT>,
    policy: Option<NonNull<ffi::LevelDbFilterPolicyT>>,
    read: NonNull<ffi::LevelDbReadOptionsT>,
    write: NonNull<ffi::LevelDbWriteOptionsT>,
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: each object was created in `Db::open` and is destroyed exactly once, here,
        // when no open database uses it any more.
        unsafe { ffi::leveldb_readoptions_destroy(self.read.as_ptr()) };
        // SAFETY: as above.
        unsafe { ffi::leveldb_writeoptions_destroy(self.write.as_ptr()) };
        // SAFETY: as above; the options go before the filter policy they point at.
        unsafe { ffi::leveldb_options_destroy(self.options.as_ptr()) };
        if let Some(p) = self.policy {
            // SAFETY: as above.
            unsafe { ffi::leveldb_filterpolicy_destroy(p.as_ptr()) };
        }
    }
}

// SAFETY: a leveldb::DB is safe for concurrent use from many threads, and the option
// objects are only read after open.
unsafe impl Send for Db {}
// SAFETY: as above; LevelDB synchronizes all DB operations internally.
unsafe impl Sync for Db {}

/// Maps a C API error string (`Status::ToString()`) to an [`Error`].
fn status_error(message: String) -> Error {
    let code = if message.starts_with("NotFound:") {
        StatusCode::NotFound
    } else if message.starts_with("Corruption:") {
        StatusCode::Corruption
    } else if message.starts_with("Not implemented:") {
        StatusCode::NotSupported
    } else if message.starts_with("Invalid argument:") {
        StatusCode::InvalidArgument
    } else {
        StatusCode::IoError
    };
    Error::Status { code, message }
}

/// Turns the C API's `errptr` convention into a `Result`.
fn check(err: ErrSlot, failed: bool) -> Result<()> {
    if failed {
        Err(status_error(err.message()))
    } else {
        Ok(())
    }
}

impl Handles {
    fn create(bloom_bits: c_int) -> Result<Self> {
        // SAFETY: creating C API objects has no preconditions.
        let options = unsafe { ffi::leveldb_options_create() };
        // SAFETY: as above.
        let read = unsafe { ffi::leveldb_readoptions_create() };
        // SAFETY: as above.
        let write = unsafe { ffi::leveldb_writeoptions_create() };
        let policy = if bloom_bits > 0 {
            // SAFETY: as above; a plain value argument.
            NonNull::new(unsafe { ffi::leveldb_filterpolicy_create_bloom(bloom_bits) })
        } else {
            None
        };
        // The C API allocates with `new`, which never returns null, so the error arm (which
        // would leak the objects that were made) is unreachable in practice.
        match (
            NonNull::new(options),
            NonNull::new(read),
            NonNull::new(write),
        ) {
            (Some(options), Some(read), Some(write)) if policy.is_some() || bloom_bits == 0 => {
                Ok(Handles {
                    options,
                    policy,
                    read,
                    write,
                })
            }
            _ => Err(Error::Exception {
                message: String::from("allocating LevelDB option objects failed"),
            }),
        }
    }
}

impl Handles {
    /// The option objects for `options`, every setter applied.
    fn configured(options: &DbOptions) -> Result<Handles> {
        let restart = c_int::try_from(options.block_restart_interval)
            .map_err(|_| Error::rejected("block_restart_interval exceeds an int"))?;
        if restart < 1 {
            return Err(Error::rejected("block_restart_interval must be at least 1"));
        }
        let bloom_bits = c_int::try_from(options.bloom_bits_per_key)
            .map_err(|_| Error::rejected("bloom_bits_per_key exceeds an int"))?;

        let handles = Handles::create(bloom_bits)?;
        let o = handles.options.as_ptr();
        // SAFETY: `o` is a live options object; the setters store plain values.
        unsafe {
            ffi::leveldb_options_set_create_if_missing(o, c_uchar::from(options.create_if_missing))
        };
        // SAFETY: as above.
        unsafe {
            ffi::leveldb_options_set_error_if_exists(o, c_uchar::from(options.error_if_exists))
        };
        // SAFETY: as above.
        unsafe {
            ffi::leveldb_options_set_paranoid_checks(o, c_uchar::from(options.paranoid_checks))
        };
        // SAFETY: as above.
        unsafe { ffi::leveldb_options_set_write_buffer_size(o, options.write_buffer_size) };
        // SAFETY: as above.
        unsafe { ffi::leveldb_options_set_block_size(o, options.block_size) };
        // SAFETY: as above; `restart` is at least 1 (LevelDB asserts it).
        unsafe { ffi::leveldb_options_set_block_restart_interval(o, restart) };
        // SAFETY: as above.
        unsafe { ffi::leveldb_options_set_max_file_size(o, options.max_file_size) };
        let compression = match options.compression {
            Compression::None => 0,
            Compression::Snappy => 1,
        };
        // SAFETY: as above.
        unsafe { ffi::leveldb_options_set_compression(o, compression) };
        // SAFETY: the read and write option objects are live; the setters store plain values.
        unsafe {
            ffi::leveldb_readoptions_set_verify_checksums(
                handles.read.as_ptr(),
                c_uchar::from(options.verify_checksums),
            );
        }
        // SAFETY: as above.
        unsafe {
            ffi::leveldb_writeoptions_set_sync(handles.write.as_ptr(), c_uchar::from(options.sync))
        };
        if let Some(p) = handles.policy {
            // SAFETY: `p` is a live policy; `handles` destroys it only after the database
            // closed.
            unsafe { ffi::leveldb_options_set_filter_policy(o, p.as_ptr()) };
        }
        Ok(handles)
    }
}

impl Db {
    /// `leveldb_open(options, path)`.
    ///
    /// # Errors
    ///
    /// LevelDB's status (e.g. `Invalid argument: ... does not exist (create_if_missing is
    /// false)`, a lock held by another process); [`Error::Rejected`] for a path with a NUL
    /// byte or option values beyond `int`.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build.
    pub fn open(path: &Path, options: &DbOptions) -> Result<Db> {
        ffi::ensure_available();
        let name = path
            .to_str()
            .ok_or_else(|| Error::rejected("database path is not UTF-8"))
            .and_then(|p| CString::new(p).map_err(|_| Error::rejected("path contains NUL")))?;
        let handles = Handles::configured(options)?;
        let o = handles.options.as_ptr();
        let mut err = ErrSlot::new();
        // SAFETY: `o` is a fully set options object, `name` is NUL-terminated and alive
        // during the call, `err` is an out-parameter.
        let raw = unsafe { ffi::leveldb_open(o, name.as_ptr(), err.as_out()) };
        match NonNull::new(raw) {
            Some(db) => Ok(Db { db, handles }),
            None => Err(status_error(err.message())),
        }
    }

    /// `leveldb_put`.
    ///
    /// # Errors
    ///
    /// LevelDB's status.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `db` and `write` are live; key and value outlive the call (LevelDB copies
        // them into its write batch).
        unsafe {
            ffi::leveldb_put(
                self.db.as_ptr(),
                self.handles.write.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                err.as_out(),
            );
        }
        let failed = !err.is_empty();
        check(err, failed)
    }

    /// `leveldb_delete`.
    ///
    /// # Errors
    ///
    /// LevelDB's status.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut err = ErrSlot::new();
        // SAFETY: `db` and `write` are live; `key` outlives the call.
        unsafe {
            ffi::leveldb_delete(
                self.db.as_ptr(),
                self.handles.write.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                err.as_out(),
            );
        }
        let failed = !err.is_empty();
        check(err, failed)
    }

    /// `leveldb_get`: the value under `key`, `None` if absent.
    ///
    /// # Errors
    ///
    /// LevelDB's status (not-found is `Ok(None)`).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut err = ErrSlot::new();
        let mut len = 0usize;
        // SAFETY: `db` and `read` are live; `key` outlives the call; `len` and `err` are
        // out-parameters.
        let value = unsafe {
            ffi::leveldb_get(
                self.db.as_ptr(),
                self.handles.read.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                err.as_out(),
            )
        };
        let failed = !err.is_empty();
        check(err, failed)?;
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: a non-null result is a malloc'd buffer of `len` bytes owned by us.
        let bytes = unsafe { core::slice::from_raw_parts(value.cast::<u8>(), len) }.to_vec();
        // SAFETY: the buffer came from the C API's malloc and is not used after this.
        unsafe { ffi::leveldb_free(value.cast()) };
        Ok(Some(bytes))
    }

    /// `leveldb_compact_range(start, limit)`; `None` means unbounded on that side.
    /// Compacting everything pushes all data into table files of the deepest level needed.
    pub fn compact_range(&self, start: Option<&[u8]>, limit: Option<&[u8]>) {
        let (sp, sl) = start.map_or((core::ptr::null(), 0), |s| (s.as_ptr(), s.len()));
        let (lp, ll) = limit.map_or((core::ptr::null(), 0), |s| (s.as_ptr(), s.len()));
        // SAFETY: `db` is live; each bound is null (unbounded) or a slice alive during the
        // call.
        unsafe { ffi::leveldb_compact_range(self.db.as_ptr(), sp.cast(), sl, lp.cast(), ll) };
    }

    /// `leveldb_property_value(name)`: a database property such as `leveldb.stats`,
    /// `leveldb.sstables` (the table files of each level, with their key ranges) or
    /// `leveldb.num-files-at-level<N>`; `None` for a name LevelDB does not know.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] for a name containing a NUL byte.
    pub fn property(&self, name: &str) -> Result<Option<String>> {
        let name = CString::new(name).map_err(|_| Error::rejected("property name contains NUL"))?;
        // SAFETY: `db` is live; `name` is NUL-terminated and alive during the call.
        let value = unsafe { ffi::leveldb_property_value(self.db.as_ptr(), name.as_ptr()) };
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: a non-null result is a malloc'd NUL-terminated string owned by us.
        let text = unsafe { core::ffi::CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: the string came from the C API's malloc and is not used after this.
        unsafe { ffi::leveldb_free(value.cast()) };
        Ok(Some(text))
    }

    /// Closes the database (as dropping it does).
    pub fn close(self) {
        drop(self);
    }
}

/// One operation of a write batch for [`Db::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// `leveldb_writebatch_put(key, value)`.
    Put(&'a [u8], &'a [u8]),
    /// `leveldb_writebatch_delete(key)`.
    Delete(&'a [u8]),
}

/// A snapshot of a [`Db`] (`leveldb_create_snapshot`), released on drop.
#[derive(Debug)]
pub struct Snapshot<'db> {
    db: &'db Db,
    snapshot: NonNull<ffi::LevelDbSnapshotT>,
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        // SAFETY: the snapshot was created on this open database and is released once.
        unsafe { ffi::leveldb_release_snapshot(self.db.db.as_ptr(), self.snapshot.as_ptr()) };
    }
}

/// Read options for one read, with a snapshot or none; destroyed on drop.
struct ReadHandle(NonNull<ffi::LevelDbReadOptionsT>);

impl ReadHandle {
    fn new(verify: bool, snapshot: Option<&Snapshot<'_>>) -> Result<ReadHandle> {
        // SAFETY: creating an options object has no preconditions.
        let raw = unsafe { ffi::leveldb_readoptions_create() };
        let handle = NonNull::new(raw)
            .map(ReadHandle)
            .ok_or_else(|| Error::rejected("allocating read options failed"))?;
        // SAFETY: a live read options object; the setter stores a plain value.
        unsafe {
            ffi::leveldb_readoptions_set_verify_checksums(handle.0.as_ptr(), c_uchar::from(verify))
        };
        if let Some(s) = snapshot {
            // SAFETY: the snapshot outlives this handle (both borrow the database, and the
            // handle is dropped inside the call that made it).
            unsafe {
                ffi::leveldb_readoptions_set_snapshot(handle.0.as_ptr(), s.snapshot.as_ptr())
            };
        }
        Ok(handle)
    }
}

impl Drop for ReadHandle {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, after every use.
        unsafe { ffi::leveldb_readoptions_destroy(self.0.as_ptr()) };
    }
}

/// Copies `len` bytes LevelDB points at.
///
/// # Safety
/// `ptr` must point at `len` readable bytes (or `len` be 0).
unsafe fn copy_out(ptr: *const core::ffi::c_char, len: usize) -> Vec<u8> {
    if len == 0 || ptr.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's contract.
    unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec()
}

impl Db {
    /// `leveldb_write` of one batch holding `ops` in order.
    ///
    /// # Errors
    ///
    /// LevelDB's status.
    pub fn write(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        // SAFETY: creating a batch has no preconditions.
        let batch = unsafe { ffi::leveldb_writebatch_create() };
        if batch.is_null() {
            return Err(Error::rejected("allocating a write batch failed"));
        }
        for op in ops {
            match *op {
                // SAFETY: `batch` is live; the batch copies key and value.
                BatchOp::Put(k, v) => unsafe {
                    ffi::leveldb_writebatch_put(
                        batch,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    );
                },
                // SAFETY: as above.
                BatchOp::Delete(k) => unsafe {
                    ffi::leveldb_writebatch_delete(batch, k.as_ptr().cast(), k.len());
                },
            }
        }
        let mut err = ErrSlot::new();
        // SAFETY: `db`, `write` and `batch` are live; `err` is an out-parameter.
        unsafe {
            ffi::leveldb_write(
                self.db.as_ptr(),
                self.handles.write.as_ptr(),
                batch,
                err.as_out(),
            )
        };
        // SAFETY: the batch is not used after this.
        unsafe { ffi::leveldb_writebatch_destroy(batch) };
        let failed = !err.is_empty();
        check(err, failed)
    }

    /// `leveldb_approximate_sizes` of one range `[start, limit)`: the bytes of table files
    /// holding its keys, approximately.
    pub fn approximate_size(&self, start: &[u8], limit: &[u8]) -> u64 {
        let starts = [start.as_ptr().cast::<core::ffi::c_char>()];
        let start_lens = [start.len()];
        let limits = [limit.as_ptr().cast::<core::ffi::c_char>()];
        let limit_lens = [limit.len()];
        let mut sizes = [0u64];
        // SAFETY: `db` is live; each array holds one element, as `num_ranges` says; the keys
        // outlive the call; `sizes` has room for one result.
        unsafe {
            ffi::leveldb_approximate_sizes(
                self.db.as_ptr(),
                1,
                starts.as_ptr(),
                start_lens.as_ptr(),
                limits.as_ptr(),
                limit_lens.as_ptr(),
                sizes.as_mut_ptr(),
            );
        }
        sizes[0]
    }

    /// `leveldb_create_snapshot`: reads through it see the database as it is now.
    pub fn snapshot(&self) -> Snapshot<'_> {
        // SAFETY: `db` is live.
        let raw = unsafe { ffi::leveldb_create_snapshot(self.db.as_ptr()) };
        // LevelDB allocates snapshots with `new`, which never returns null.
        let snapshot = NonNull::new(raw.cast_mut()).expect("LevelDB returned a null snapshot");
        Snapshot { db: self, snapshot }
    }

    /// `leveldb_get` through `snapshot` (or the latest state with `None`).
    ///
    /// # Errors
    ///
    /// LevelDB's status (not-found is `Ok(None)`).
    pub fn get_at(&self, key: &[u8], snapshot: Option<&Snapshot<'_>>) -> Result<Option<Vec<u8>>> {
        let read = ReadHandle::new(true, snapshot)?;
        let mut err = ErrSlot::new();
        let mut len = 0usize;
        // SAFETY: `db` and `read` are live; `key` outlives the call; `len` and `err` are
        // out-parameters.
        let value = unsafe {
            ffi::leveldb_get(
                self.db.as_ptr(),
                read.0.as_ptr(),
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                err.as_out(),
            )
        };
        let failed = !err.is_empty();
        check(err, failed)?;
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: a non-null result is a malloc'd buffer of `len` bytes owned by us.
        let bytes = unsafe { copy_out(value, len) };
        // SAFETY: the buffer came from the C API's malloc and is not used after this.
        unsafe { ffi::leveldb_free(value.cast()) };
        Ok(Some(bytes))
    }

    /// Every key and value through `snapshot` (or the latest state), by a LevelDB iterator
    /// walking forward (or backward with `reverse`, the result then in descending order).
    ///
    /// # Errors
    ///
    /// The iterator's status.
    pub fn scan(
        &self,
        snapshot: Option<&Snapshot<'_>>,
        reverse: bool,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let read = ReadHandle::new(true, snapshot)?;
        // SAFETY: `db` and `read` are live.
        let iter = unsafe { ffi::leveldb_create_iterator(self.db.as_ptr(), read.0.as_ptr()) };
        if iter.is_null() {
            return Err(Error::rejected("LevelDB returned a null iterator"));
        }
        let mut out = Vec::new();
        if reverse {
            // SAFETY: `iter` is live until destroyed below.
            unsafe { ffi::leveldb_iter_seek_to_last(iter) };
        } else {
            // SAFETY: as above.
            unsafe { ffi::leveldb_iter_seek_to_first(iter) };
        }
        // SAFETY: as above.
        while unsafe { ffi::leveldb_iter_valid(iter) } != 0 {
            let (mut kl, mut vl) = (0usize, 0usize);
            // SAFETY: `iter` is live and valid; `kl` is an out-parameter.
            let key = unsafe { ffi::leveldb_iter_key(iter, &mut kl) };
            // SAFETY: a valid iterator's key points at `kl` bytes until it moves.
            let key = unsafe { copy_out(key, kl) };
            // SAFETY: as for the key.
            let value = unsafe { ffi::leveldb_iter_value(iter, &mut vl) };
            // SAFETY: as for the key.
            let value = unsafe { copy_out(value, vl) };
            out.push((key, value));
            if reverse {
                // SAFETY: `iter` is live and valid.
                unsafe { ffi::leveldb_iter_prev(iter) };
            } else {
                // SAFETY: as above.
                unsafe { ffi::leveldb_iter_next(iter) };
            }
        }
        let mut err = ErrSlot::new();
        // SAFETY: `iter` is live; `err` is an out-parameter.
        unsafe { ffi::leveldb_iter_get_error(iter, err.as_out()) };
        // SAFETY: destroyed once, not used after.
        unsafe { ffi::leveldb_iter_destroy(iter) };
        let failed = !err.is_empty();
        check(err, failed)?;
        Ok(out)
    }
}

/// `leveldb_repair_db(options, path)`: LevelDB's `RepairDB`, which rewrites the directory.
///
/// # Errors
///
/// LevelDB's status; [`Error::Rejected`] for a path that is not UTF-8 or holds a NUL.
pub fn repair(path: &Path, options: &DbOptions) -> Result<()> {
    ffi::ensure_available();
    let name = path
        .to_str()
        .ok_or_else(|| Error::rejected("database path is not UTF-8"))
        .and_then(|p| CString::new(p).map_err(|_| Error::rejected("path contains NUL")))?;
    let handles = Handles::configured(options)?;
    let mut err = ErrSlot::new();
    // SAFETY: the options object is fully set and alive during the call; `name` is
    // NUL-terminated; `err` is an out-parameter.
    unsafe { ffi::leveldb_repair_db(handles.options.as_ptr(), name.as_ptr(), err.as_out()) };
    let failed = !err.is_empty();
    check(err, failed)
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: `db` is an open database, closed once, here; `handles` is dropped after.
        unsafe { ffi::leveldb_close(self.db.as_ptr()) };
    }
}

/// LevelDB's version as reported by the linked library (`leveldb_major_version`,
/// `leveldb_minor_version`), or `None` when LevelDB is not linked into this build.
pub fn version() -> Option<(i32, i32)> {
    if !crate::available() {
        return None;
    }
    // SAFETY: no preconditions.
    let major = unsafe { ffi::leveldb_major_version() };
    // SAFETY: no preconditions.
    let minor = unsafe { ffi::leveldb_minor_version() };
    Some((major, minor))
}
