//! LevelDB's `leveldb::Hash` (util/hash.cc), the string hash its Bloom filters probe with.
#![expect(unsafe_code, reason = "calls the shim")]

use crate::ffi;

/// `leveldb::Hash(data, n, seed)`.
///
/// # Panics
///
/// If LevelDB is not linked into this build ([`available`](crate::available) is false).
pub fn hash(data: &[u8], seed: u32) -> u32 {
    ffi::ensure_available();
    // SAFETY: the pointer and length describe `data`, which outlives the call; LevelDB only
    // reads those bytes.
    unsafe { ffi::lt_hash(data.as_ptr(), data.len(), seed) }
}
