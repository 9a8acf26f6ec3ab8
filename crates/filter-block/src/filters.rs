//! The filters of a filter block by number: how many there are and each one's bytes, for
//! tools that look at a block without a policy to query it.

#![deny(clippy::arithmetic_side_effects)]

use core::ops::Range;

use crate::format::{OFFSET_SIZE, Trailer, fixed32_at};

/// The filters listed by a filter block, read leniently: a block that does not decode lists
/// none, and a filter whose bounds do not decode has no bytes to give.
///
/// ```
/// use leveltable_filter_block::{FilterBlockBuilder, Filters};
/// use leveltable_filter_policy::BloomFilterPolicy;
///
/// let mut builder = FilterBlockBuilder::new(BloomFilterPolicy::new(10));
/// builder.start_block(0)?;
/// builder.add_key(b"hello");
/// builder.start_block(5000)?; // two 2 KiB ranges later: filters 1 and 2
/// builder.add_key(b"world");
/// let block = builder.finish();
///
/// let filters = Filters::new(&block);
/// assert_eq!(filters.len(), 3);
/// assert!(!filters.get(0).unwrap().is_empty());
/// assert_eq!(filters.get(1), Some(&[][..])); // no data block started in 2–4 KiB
/// assert_eq!(filters.get(3), None);
/// # Ok::<(), leveltable_filter_block::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Filters<'a> {
    block: &'a [u8],
    /// `None` when the block cannot be decoded.
    trailer: Option<Trailer>,
}

impl<'a> Filters<'a> {
    /// The filters of the filter block `block`. Cheap: decodes only the 5-byte trailer.
    pub fn new(block: &'a [u8]) -> Self {
        Filters {
            block,
            trailer: Trailer::decode(block),
        }
    }

    /// Whether the block's trailer decodes (it is long enough and its offset array lies
    /// inside it).
    pub fn is_decodable(&self) -> bool {
        self.trailer.is_some()
    }

    /// How many filters the block lists (0 if it cannot be decoded).
    pub fn len(&self) -> usize {
        self.trailer.map_or(0, |t| t.num_filters)
    }

    /// Whether the block lists no filter.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// log2 of the range of data-block offsets each filter covers, as stored (11 as LevelDB
    /// writes it), if the block decodes.
    pub fn base_lg(&self) -> Option<u8> {
        self.trailer.map(|t| t.base_lg)
    }

    /// The bytes of filter `i`: empty for a range in which no data block started; `None` past
    /// the last filter or where the filter's bounds do not decode.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let range = self.range(i)?;
        self.block.get(range)
    }

    /// Where filter `i` lies in the block: [`get`](Self::get)'s answer as a range of the
    /// block's bytes (`0..0` for an empty filter).
    #[inline]
    pub fn range(&self, i: usize) -> Option<Range<usize>> {
        let trailer = self.trailer?;
        if i >= trailer.num_filters {
            return None;
        }
        // Invariant: i < num_filters, so both words lie inside the array or its end marker
        // (the array offset itself), which Trailer::decode checked to be in the block.
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "both words end inside the block (the invariant above)"
        )]
        let (entry, next) = {
            let entry = trailer.array_offset + i * OFFSET_SIZE;
            (entry, entry + OFFSET_SIZE)
        };
        let start = fixed32_at(self.block, entry)? as usize;
        let limit = fixed32_at(self.block, next)? as usize;
        if start <= limit && limit <= trailer.array_offset {
            Some(start..limit)
        } else if start == limit {
            Some(0..0)
        } else {
            None
        }
    }

    /// Every filter in order, as [`get`](Self::get) gives it.
    pub fn iter(&self) -> impl Iterator<Item = Option<&'a [u8]>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_blocks_list_nothing_or_refuse_the_bad_filter() {
        for block in [&b""[..], b"\x00\x00\x00", b"\x09\x00\x00\x00\x0b"] {
            let filters = Filters::new(block);
            assert!(!filters.is_decodable() && filters.is_empty(), "{block:?}");
            assert_eq!(filters.get(0), None);
        }
        // Two filters, the second with bounds out of order: 3..1.
        let block = [1, 2, 3, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 11];
        let filters = Filters::new(&block);
        assert_eq!(filters.len(), 3);
        assert_eq!(filters.base_lg(), Some(11));
        assert_eq!(filters.get(0), Some(&[1, 2, 3][..]));
        assert_eq!(filters.get(1), None);
        assert_eq!(filters.get(2), Some(&[2, 3][..]));
        assert_eq!(filters.iter().count(), 3);
        assert_eq!(filters.range(0), Some(0..3));
        assert_eq!(filters.range(1), None);
        assert_eq!(filters.range(2), Some(1..3));
        assert_eq!(filters.range(3), None);
    }

    #[test]
    fn offsets_of_u32_max_are_refused_or_empty() {
        // Filters [MAX, MAX) (empty, as LevelDB reads it), [MAX, 0), [0, MAX) and [MAX, 0) (the
        // array offset ends the last): no bytes to give for the last three.
        let mut block = alloc::vec::Vec::new();
        for offset in [u32::MAX, u32::MAX, 0, u32::MAX] {
            block.extend_from_slice(&offset.to_le_bytes());
        }
        block.extend_from_slice(&0u32.to_le_bytes());
        block.push(11);
        let filters = Filters::new(&block);
        assert_eq!(filters.len(), 4);
        assert_eq!(filters.get(0), Some(&[][..]));
        assert_eq!(filters.get(1), None);
        assert_eq!(filters.get(2), None);
        assert_eq!(filters.get(3), None);
        assert_eq!(filters.get(4), None);
        assert_eq!(filters.get(usize::MAX), None);
        // The empty filter out of the block's bounds lies nowhere in particular.
        assert_eq!(filters.range(0), Some(0..0));
        assert_eq!(filters.range(3), None);
    }
}
