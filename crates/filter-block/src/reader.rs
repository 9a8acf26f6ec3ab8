#![deny(clippy::arithmetic_side_effects)]

use core::ops::Range;

use leveltable_filter_policy::FilterPolicy;

use crate::filters::Filters;

/// Answers "may this key be in the data block at this offset?" from a filter block.
///
/// Reading is lenient, as in LevelDB: a block too short for its trailer, an offset array that
/// points past the end, a block offset past the last filter, or a filter whose bounds are
/// out of order all answer "may match". Only a filter that decodes and rejects the key, or an
/// empty filter (a 2 KiB range in which no data block started), answers "no". So the reader
/// never causes a false negative and never panics, whatever the bytes.
#[derive(Debug, Clone)]
pub struct FilterBlockReader<'a, P: FilterPolicy> {
    policy: P,
    /// Empty when the block cannot be decoded: every key may match.
    filters: Filters<'a>,
}

impl<'a, P: FilterPolicy> FilterBlockReader<'a, P> {
    /// A reader over `contents`, the bytes of a filter block made with `policy`.
    ///
    /// Cheap: it decodes only the 5-byte trailer.
    pub fn new(policy: P, contents: &'a [u8]) -> Self {
        FilterBlockReader {
            policy,
            filters: Filters::new(contents),
        }
    }

    /// The policy answering the queries.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The number of filters the block lists (0 if it cannot be decoded).
    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }

    /// The block's filters by number.
    pub fn filters(&self) -> Filters<'a> {
        self.filters
    }

    /// The bytes of the filter covering `block_offset`, or `None` where the reader cannot
    /// decide (no such filter, or its bounds do not decode).
    ///
    /// An empty slice means no key was added for that range.
    pub fn filter_for(&self, block_offset: u64) -> Option<&'a [u8]> {
        self.filters.get(self.filter_index(block_offset)?)
    }

    /// Where [`filter_for`](Self::filter_for)'s filter lies among the block's bytes, as a
    /// range of them (`0..0` for an empty filter): a reader that looks up the same blocks
    /// often can keep it.
    pub fn filter_range_for(&self, block_offset: u64) -> Option<Range<usize>> {
        self.filters.range(self.filter_index(block_offset)?)
    }

    /// The filter covering `block_offset`.
    fn filter_index(&self, block_offset: u64) -> Option<usize> {
        // LevelDB shifts by the stored base_lg; a byte of 64 or more is undefined there and
        // masked by the hardware, which wrapping_shr reproduces.
        let index = block_offset.wrapping_shr(u32::from(self.filters.base_lg()?));
        usize::try_from(index).ok()
    }

    /// Returns `false` only if `key` is certainly not in the data block at `block_offset`.
    pub fn key_may_match(&self, block_offset: u64, key: &[u8]) -> bool {
        self.filter_may_match(self.filter_for(block_offset), key)
    }

    /// [`key_may_match`](Self::key_may_match) given what [`filter_for`](Self::filter_for)
    /// answered for the block: a caller that finds many keys' filters first (so their
    /// cache misses overlap) asks them afterwards.
    pub fn filter_may_match(&self, filter: Option<&[u8]>, key: &[u8]) -> bool {
        match filter {
            // An empty filter covers a range without keys.
            Some([]) => false,
            Some(filter) => self.policy.key_may_match(key, filter),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;
    use leveltable_filter_policy::BloomFilterPolicy;

    /// A policy under which every non-empty filter matches, to observe the reader's decisions.
    struct AlwaysMatch;

    impl FilterPolicy for AlwaysMatch {
        fn name(&self) -> &str {
            "test.AlwaysMatch"
        }
        fn create_filter(&self, _keys: &[&[u8]], dst: &mut Vec<u8>) {
            dst.push(1);
        }
        fn key_may_match(&self, _key: &[u8], _filter: &[u8]) -> bool {
            true
        }
    }

    /// A policy under which every filter rejects every key.
    struct NeverMatch;

    impl FilterPolicy for NeverMatch {
        fn name(&self) -> &str {
            "test.NeverMatch"
        }
        fn create_filter(&self, _keys: &[&[u8]], dst: &mut Vec<u8>) {
            dst.push(0);
        }
        fn key_may_match(&self, _key: &[u8], _filter: &[u8]) -> bool {
            false
        }
    }

    #[test]
    fn undecodable_blocks_match_everything() {
        for block in [
            &[][..],
            &[0, 0, 0, 11],
            &[1, 0, 0, 0, 11],
            &[0xff, 0xff, 0xff, 0xff, 11],
        ] {
            let reader = FilterBlockReader::new(NeverMatch, block);
            assert_eq!(reader.num_filters(), 0);
            assert!(reader.key_may_match(0, b"k"), "{block:?}");
        }
    }

    #[test]
    fn filter_bounds() {
        // One filter byte at 0..1, then filters [0,1), [1,1) (empty), [2,1) (reversed) and
        // [1,9) (past the array).
        let mut block = vec![7];
        for offset in [0u32, 1, 1, 2, 1, 9] {
            block.extend_from_slice(&offset.to_le_bytes());
        }
        // The array offset, then base_lg = 0 so block offset i selects filter i.
        block.extend_from_slice(&1u32.to_le_bytes());
        block.push(0);
        let reader = FilterBlockReader::new(NeverMatch, &block);
        assert_eq!(reader.num_filters(), 6);
        assert_eq!(reader.filter_for(0), Some(&[7][..]));
        assert!(!reader.key_may_match(0, b"k"), "decoded filter rejects");
        assert_eq!(reader.filter_for(1), Some(&[][..]));
        assert!(!reader.key_may_match(1, b"k"), "empty filter rejects");
        // Filter 2 is [1, 2): limit 2 is past the array offset 1, undecidable.
        assert_eq!(reader.filter_for(2), None);
        assert!(reader.key_may_match(2, b"k"));
        // Filter 3 is [2, 1): start past limit.
        assert!(reader.key_may_match(3, b"k"));
        // Filter 4 is [1, 9): limit past the array.
        assert!(reader.key_may_match(4, b"k"));
        // Filter 5 is [9, 1): reversed.
        assert!(reader.key_may_match(5, b"k"));
        // Past the last filter.
        assert!(reader.key_may_match(6, b"k"));
        assert!(reader.key_may_match(u64::MAX, b"k"));
    }

    #[test]
    fn empty_range_past_the_array_still_rejects() {
        // LevelDB answers "no" for start == limit even when both lie past the array.
        let mut block = vec![];
        for offset in [5u32, 5] {
            block.extend_from_slice(&offset.to_le_bytes());
        }
        block.extend_from_slice(&0u32.to_le_bytes());
        block.push(11);
        // Two entries: filter 0 is [5, 5), filter 1 is [5, 0) (reversed).
        let reader = FilterBlockReader::new(AlwaysMatch, &block);
        assert_eq!(reader.num_filters(), 2);
        assert!(!reader.key_may_match(0, b"k"));
        assert!(reader.key_may_match(2048, b"k"));
    }

    #[test]
    fn huge_base_lg_does_not_panic() {
        // One empty filter; base_lg 200 shifts by 200 mod 64 = 8, as x86 hardware does.
        let block = [0u8, 0, 0, 0, 0, 0, 0, 0, 200];
        let reader = FilterBlockReader::new(BloomFilterPolicy::new(10), &block);
        assert!(!reader.key_may_match(255, b"k"));
        assert!(reader.key_may_match(256, b"k"));
        assert!(reader.key_may_match(u64::MAX, b"k"));
    }

    #[test]
    fn every_truncation_and_byte_of_a_real_block_is_safe() {
        let policy = BloomFilterPolicy::new(10);
        let mut builder = crate::FilterBlockBuilder::new(&policy);
        for (offset, key) in [(0u64, &b"foo"[..]), (3100, b"bar"), (9000, b"box")] {
            builder.start_block(offset).unwrap();
            builder.add_key(key);
        }
        let block = builder.finish();
        for len in 0..=block.len() {
            let reader = FilterBlockReader::new(&policy, &block[..len]);
            for offset in [0, 3100, 5000, 9000, 1 << 30] {
                let _ = reader.key_may_match(offset, b"foo");
            }
        }
        for pos in 0..block.len() {
            for value in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut damaged = block.clone();
                damaged[pos] = value;
                let reader = FilterBlockReader::new(&policy, &damaged);
                for offset in [0, 3100, 5000, 9000, 1 << 30] {
                    let _ = reader.key_may_match(offset, b"foo");
                }
            }
        }
    }
}
