//! LevelDB's varints and length-prefixed slices (`util/coding.h`), decoded exactly as
//! LevelDB decodes them: a varint32 reads at most 5 bytes and a varint64 at most 10, and
//! bits beyond the width are discarded, as LevelDB's shifts discard them.

// Encoding is the table format's; decoding differs from it on purpose (see above).
pub use leveltable_table::format::{put_varint32, put_varint64};

/// Appends `bytes` prefixed by its length as a varint32.
///
/// # Panics
/// If `bytes` is 4 GiB or longer (LevelDB would truncate the length).
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a length-prefixed slice is shorter than 4 GiB");
    put_varint32(dst, len);
    dst.extend_from_slice(bytes);
}

/// LevelDB's `GetVarint32`: consumes a varint32 from the front of `src`.
pub fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    let mut result = 0u32;
    for (i, &byte) in src.iter().enumerate().take(5) {
        // At shift 28 the high bits of the byte fall off, as in LevelDB.
        result |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// LevelDB's `GetVarint64`: consumes a varint64 from the front of `src`.
pub fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    let mut result = 0u64;
    for (i, &byte) in src.iter().enumerate().take(10) {
        result |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// LevelDB's `GetLengthPrefixedSlice`: a varint32 length, then that many bytes.
pub fn get_length_prefixed<'a>(src: &mut &'a [u8]) -> Option<&'a [u8]> {
    let mut rest = *src;
    let len = usize::try_from(get_varint32(&mut rest)?).ok()?;
    // Check the length against what is left before slicing.
    if len > rest.len() {
        return None;
    }
    let (bytes, after) = rest.split_at(len);
    *src = after;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_limits() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            let mut s = &b[..];
            assert_eq!(get_varint64(&mut s), Some(v));
            assert!(s.is_empty());
        }
        // Truncated.
        assert_eq!(get_varint32(&mut &[0x80u8][..]), None);
        assert_eq!(get_varint64(&mut &[0xffu8; 10][..]), None);
        // A fifth byte's high bits are dropped, as LevelDB drops them.
        let mut s = &[0xff, 0xff, 0xff, 0xff, 0x7f, 9][..];
        assert_eq!(get_varint32(&mut s), Some(u32::MAX));
        assert_eq!(s, [9]);
        assert_eq!(
            get_varint32(&mut &[0x80u8, 0x80, 0x80, 0x80, 0x80, 0x01][..]),
            None
        );
        let mut s = &[3, b'a', b'b'][..];
        assert_eq!(get_length_prefixed(&mut s), None);
        assert_eq!(s, [3, b'a', b'b'], "unchanged on failure");
        let mut s = &[2, b'a', b'b', b'c'][..];
        assert_eq!(get_length_prefixed(&mut s), Some(&b"ab"[..]));
        assert_eq!(s, b"c");
    }
}
