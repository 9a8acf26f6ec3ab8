//! Encoding and decoding of the filter block's trailer and offset array.
//!
//! ```text
//! [filter 0] [filter 1] ... [filter n-1]
//! n × 4 bytes: u32 LE start offset of each filter
//! 4 bytes:     u32 LE offset of that array (= total size of the filters)
//! 1 byte:      base_lg, log2 of the data-block offset range one filter covers
//! ```
//!
//! Filter `i` covers data blocks whose offset `o` has `o >> base_lg == i`; it ends where the
//! next offset (or, for the last filter, the array itself) begins.

#![deny(clippy::arithmetic_side_effects)]

/// log2 of the range of data-block offsets one filter covers: a filter per 2 KiB.
pub const FILTER_BASE_LG: u8 = 11;

/// The range of data-block offsets one filter covers.
pub const FILTER_BASE: u64 = 1 << FILTER_BASE_LG;

/// Size of the array-offset word plus the `base_lg` byte that end every filter block.
pub const TRAILER_SIZE: usize = 4 + 1;

/// Size of one entry in the offset array.
pub const OFFSET_SIZE: usize = 4;

/// Appends a little-endian `u32`.
#[inline]
pub fn put_fixed32(dst: &mut alloc::vec::Vec<u8>, value: u32) {
    dst.extend_from_slice(&value.to_le_bytes());
}

/// Reads the little-endian `u32` at `pos`, or `None` if it does not fit in `src`.
#[inline]
pub fn fixed32_at(src: &[u8], pos: usize) -> Option<u32> {
    let end = pos.checked_add(4)?;
    let bytes: [u8; 4] = src.get(pos..end)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// The decoded trailer of a filter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// Where the offset array starts (and the filters end).
    pub array_offset: usize,
    /// How many filters the array lists.
    pub num_filters: usize,
    /// log2 of the offset range each filter covers.
    pub base_lg: u8,
}

impl Trailer {
    /// Decodes the trailer of `block`, or `None` if the block is too short or its array offset
    /// points past the trailer.
    pub fn decode(block: &[u8]) -> Option<Trailer> {
        let trailer_start = block.len().checked_sub(TRAILER_SIZE)?;
        let &base_lg = block.last()?;
        let array_offset = fixed32_at(block, trailer_start)? as usize;
        // An array offset past the trailer's start is undecodable.
        let num_filters = trailer_start.checked_sub(array_offset)? / OFFSET_SIZE;
        Some(Trailer {
            array_offset,
            num_filters,
            base_lg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_trailer() {
        assert_eq!(Trailer::decode(&[]), None);
        assert_eq!(Trailer::decode(&[0, 0, 0, 11]), None);
        assert_eq!(
            Trailer::decode(&[0, 0, 0, 0, 11]),
            Some(Trailer {
                array_offset: 0,
                num_filters: 0,
                base_lg: 11
            })
        );
        // Array offset 1 past the trailer's start.
        assert_eq!(Trailer::decode(&[1, 0, 0, 0, 11]), None);
        assert_eq!(
            Trailer::decode(&[9, 9, 0, 0, 0, 0, 2, 0, 0, 0, 11]),
            Some(Trailer {
                array_offset: 2,
                num_filters: 1,
                base_lg: 11
            })
        );
    }
}
