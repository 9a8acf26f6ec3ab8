//! LevelDB's CRC-32C (Castagnoli), `leveldb::crc32c::Extend` (util/crc32c.cc), which guards
//! every block of a table.
#![expect(unsafe_code, reason = "calls the shim")]

use crate::ffi;

/// `leveldb::crc32c::Extend(crc, data, n)`: the CRC-32C of the bytes hashed so far (`crc`)
/// followed by `data`.
///
/// # Panics
///
/// If LevelDB is not linked into this build ([`available`](crate::available) is false).
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    ffi::ensure_available();
    // SAFETY: the pointer and length describe `data`, which outlives the call; LevelDB only
    // reads those bytes.
    unsafe { ffi::lt_crc32c_extend(crc, data.as_ptr(), data.len()) }
}

/// `leveldb::crc32c::Value(data, n)`: the CRC-32C of `data`, i.e. `extend(0, data)`.
///
/// # Panics
///
/// If LevelDB is not linked into this build ([`available`](crate::available) is false).
pub fn value(data: &[u8]) -> u32 {
    extend(0, data)
}
