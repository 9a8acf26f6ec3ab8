//! A Bloom filter over the user keys of a memtable (RocksDB's whole-key memtable filter):
//! a lookup of a key the memtable does not hold then reads one word instead of walking the
//! skip list, whose nodes are spread over megabytes. A writer's memtable has one from the
//! start, sized by the write buffer; a read-only open builds one once a log is replayed,
//! sized to the keys held. A version added to a memtable with a filter sets its key's bits
//! before the version is linked, so the filter never denies a key the memtable holds.
//!
//! Each key sets [`PROBES`] bits of one 64-bit word: one word read per lookup.

use std::sync::atomic::{AtomicU64, Ordering};

use leveltable_hash::hash;

/// Bits per key held: about 0.5% false positives with [`PROBES`] bits in one word.
const BITS_PER_KEY: usize = 16;
/// Bits each key sets in its word.
const PROBES: u32 = 6;
/// The hash's seed (any constant; the filter is never stored).
const SEED: u32 = 0x6b65_7973;

/// The filter's words, shared by readers and the one writer.
pub(super) struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl KeyFilter {
    /// An empty filter for about `keys` keys.
    pub(super) fn with_capacity(keys: usize) -> KeyFilter {
        let words = keys.saturating_mul(BITS_PER_KEY).div_ceil(64).max(1);
        KeyFilter {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The word of `user_key` and the bits it sets there.
    #[inline]
    fn place(&self, user_key: &[u8]) -> (usize, u64) {
        // The 32-bit hash spread over 64 bits (SplitMix64's finaliser).
        let mut x = u64::from(hash(user_key, SEED));
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        let word = ((u128::from(x >> 32) * self.words.len() as u128) >> 32) as usize;
        let mut bits = 0u64;
        for i in 0..PROBES {
            bits |= 1 << ((x >> (6 * i)) & 63);
        }
        (word, bits)
    }

    /// Sets the bits of `user_key`. Only the memtable's one writer adds.
    pub(super) fn add(&self, user_key: &[u8]) {
        let (word, bits) = self.place(user_key);
        if let Some(w) = self.words.get(word) {
            w.store(w.load(Ordering::Relaxed) | bits, Ordering::Relaxed);
        }
    }

    /// Hints that the word of `user_key` will be read soon, as [`add`](Self::add) reads it.
    pub(super) fn prefetch(&self, user_key: &[u8]) {
        let (word, _) = self.place(user_key);
        if let Some(w) = self.words.get(word) {
            leveltable_prefetch::start_of(w);
        }
    }

    /// Whether `user_key` may have been added (`false`: it certainly was not).
    #[inline]
    pub(super) fn may_contain(&self, user_key: &[u8]) -> bool {
        let (word, bits) = self.place(user_key);
        self.words
            .get(word)
            .is_none_or(|w| w.load(Ordering::Relaxed) & bits == bits)
    }

    /// Bytes of memory held.
    pub(super) fn memory_usage(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_added_are_never_denied_and_others_mostly_are() {
        let n = 20_000;
        let filter = KeyFilter::with_capacity(n);
        for i in 0..n {
            filter.add(format!("key{i:08}").as_bytes());
        }
        assert!((0..n).all(|i| filter.may_contain(format!("key{i:08}").as_bytes())));
        let false_positives = (0..n)
            .filter(|i| filter.may_contain(format!("other{i:08}").as_bytes()))
            .count();
        // About 0.5% expected; 2% would mean the bits are badly spread.
        assert!(
            false_positives < n / 50,
            "{false_positives} false positives of {n}"
        );
        assert_eq!(filter.memory_usage(), n * BITS_PER_KEY / 8);
    }

    #[test]
    fn an_empty_filter_denies_and_an_overfull_one_still_admits_its_keys() {
        let filter = KeyFilter::with_capacity(0);
        assert!(!filter.may_contain(b"a"));
        for i in 0..1000 {
            filter.add(format!("{i}").as_bytes());
        }
        assert!((0..1000).all(|i| filter.may_contain(format!("{i}").as_bytes())));
    }
}
