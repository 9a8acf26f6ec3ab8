//! Which data blocks of an in-memory table have had their checksums checked.
//!
//! A block read from memory (a memory map, a buffer) is the same bytes at every read: once
//! its checksum has matched, checking it again proves nothing new, yet costs a pass over
//! the whole block, where a lookup in an uncompressed block otherwise touches a few cache
//! lines. A table remembers, one bit per data block, the blocks it has checked, as the
//! block cache remembers the blocks it has decompressed.

use std::sync::atomic::{AtomicU64, Ordering};

/// One bit per data block, by the block's position in the index.
#[derive(Debug)]
pub(crate) struct Verified {
    words: Box<[AtomicU64]>,
}

impl Verified {
    /// None checked yet, of `blocks` data blocks.
    pub(crate) fn new(blocks: usize) -> Verified {
        Verified {
            words: (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Whether block `i` was checked (`false` past the last block).
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        // Relaxed: the bit publishes no data, only that bytes which never change matched.
        self.words
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    /// Records that block `i` was checked.
    #[inline]
    pub(crate) fn insert(&self, i: usize) {
        if let Some(w) = self.words.get(i / 64) {
            w.fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_each_block_apart() {
        let v = Verified::new(130);
        for i in [0, 63, 64, 129] {
            assert!(!v.contains(i));
            v.insert(i);
            assert!(v.contains(i));
        }
        assert!(!v.contains(1) && !v.contains(65) && !v.contains(128));
        assert!(!v.contains(1000), "past the last block");
        v.insert(1000);
    }
}
