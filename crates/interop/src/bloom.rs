//! LevelDB's built-in Bloom filter policy (`leveldb::NewBloomFilterPolicy`, util/bloom.cc).
#![expect(unsafe_code, reason = "calls the shim")]

use core::ffi::CStr;
use core::ptr::NonNull;

use crate::error::{ErrSlot, take_bytes};
use crate::{Result, ffi};

/// LevelDB's Bloom filter policy for a number of bits per key.
///
/// LevelDB derives the probe count `k = floor(bits_per_key * 0.69)` clamped to `1..=30`, so
/// `0` bits per key still probes once; a filter is at least 64 bits long.
#[derive(Debug)]
pub struct BloomFilterPolicy {
    raw: NonNull<ffi::LtPolicy>,
    bits_per_key: usize,
}

// SAFETY: LevelDB's FilterPolicy objects are immutable after construction and its methods
// are `const`; LevelDB itself shares one policy among all threads of a database.
unsafe impl Send for BloomFilterPolicy {}
// SAFETY: as above, concurrent `const` calls on the policy are what LevelDB does itself.
unsafe impl Sync for BloomFilterPolicy {}

impl BloomFilterPolicy {
    /// `NewBloomFilterPolicy(bits_per_key)`.
    ///
    /// # Panics
    ///
    /// If LevelDB is not linked into this build, if `bits_per_key` does not fit LevelDB's
    /// `int`, or if the policy cannot be allocated.
    pub fn new(bits_per_key: usize) -> Self {
        ffi::ensure_available();
        let bits = i32::try_from(bits_per_key).expect("interop: bits_per_key exceeds an int");
        // SAFETY: plain value argument; the result is null only if allocation failed.
        let raw = unsafe { ffi::lt_bloom_new(bits) };
        let raw = NonNull::new(raw).expect("interop: allocating a Bloom policy failed");
        BloomFilterPolicy { raw, bits_per_key }
    }

    /// The bits per key this policy was made with.
    pub fn bits_per_key(&self) -> usize {
        self.bits_per_key
    }

    /// `FilterPolicy::Name()`: `leveldb.BuiltinBloomFilter2`.
    pub fn name(&self) -> &str {
        // SAFETY: `raw` is a live policy.
        let ptr = unsafe { ffi::lt_policy_name(self.raw.as_ptr()) };
        // SAFETY: Name() returns a NUL-terminated string literal inside the library, valid
        // for the whole program.
        let name = unsafe { CStr::from_ptr(ptr) };
        name.to_str().unwrap_or("(non-UTF-8 name)")
    }

    /// `CreateFilter(keys, n, dst)`: appends the filter of `keys` to `dst`, exactly as LevelDB
    /// appends to its `std::string` (bytes already in `dst` are kept).
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`](crate::Error::Rejected) for more than `i32::MAX` keys, and
    /// [`Error::Exception`](crate::Error::Exception) if LevelDB runs out of memory.
    pub fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) -> Result<()> {
        let ptrs: Vec<*const u8> = keys.iter().map(|k| k.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let mut out = ffi::LtBytes::empty();
        let mut err = ErrSlot::new();
        // SAFETY: `ptrs`/`lens` hold `keys.len()` pointers and lengths of slices that outlive
        // the call, `dst` is read as `dst.len()` bytes, `raw` is a live policy, and `out` and
        // `err` are valid out-parameters.
        let code = unsafe {
            ffi::lt_policy_create_filter(
                self.raw.as_ptr(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                keys.len(),
                dst.as_ptr(),
                dst.len(),
                &mut out,
                err.as_out(),
            )
        };
        err.check(code)?;
        *dst = take_bytes(out);
        Ok(())
    }

    /// `KeyMayMatch(key, filter)`: false only if `key` was certainly not among the keys the
    /// filter was made from. `filter` may be any bytes.
    pub fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        // SAFETY: `raw` is a live policy; both slices outlive the call and LevelDB reads at
        // most `len` bytes of each (it checks the filter's length before indexing).
        let r = unsafe {
            ffi::lt_policy_key_may_match(
                self.raw.as_ptr(),
                key.as_ptr(),
                key.len(),
                filter.as_ptr(),
                filter.len(),
            )
        };
        r != 0
    }

    pub(crate) fn raw(&self) -> *const ffi::LtPolicy {
        self.raw.as_ptr()
    }
}

impl Drop for BloomFilterPolicy {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `lt_bloom_new`; borrowers (filter block builders and
        // readers) hold `&self`, so none is alive now.
        unsafe { ffi::lt_policy_free(self.raw.as_ptr()) };
    }
}
