use alloc::vec::Vec;

use leveltable_hash::{BLOOM_SEED, hash};

use crate::FilterPolicy;

/// The name LevelDB 1.23 gives its Bloom filter policy.
const NAME: &str = "leveldb.BuiltinBloomFilter2";

/// The fewest bits a filter has, however few keys it holds: tiny filters would otherwise have
/// a very high false-positive rate.
const MIN_BITS: usize = 64;

/// The most probes a filter may ask for. A larger value in a filter's last byte is reserved by
/// LevelDB for other encodings, which readers treat as "may match".
const MAX_PROBES: u8 = 30;

/// LevelDB's Bloom filter policy, `leveldb.BuiltinBloomFilter2`.
///
/// A filter is `ceil(max(n × bits_per_key, 64) / 8)` bytes of bit array followed by one byte
/// holding the number of probes `k`. Key `x` sets bits `(h + i × delta) mod bits` for
/// `i in 0..k`, where `h = hash(x, 0xbc9f1d34)` and `delta = h.rotate_right(17)`, all in
/// wrapping 32-bit arithmetic.
///
/// Around 10 bits per key gives a false-positive rate near 1% on keys whose bytes are well
/// spread; keys that differ only in their last few bytes fare worse, because LevelDB's hash has
/// no final mixing step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomFilterPolicy {
    bits_per_key: usize,
    k: u8,
}

impl BloomFilterPolicy {
    /// A policy that spends `bits_per_key` bits of filter on each key.
    ///
    /// The number of probes is `floor(bits_per_key × 0.69)` (≈ ln 2 × bits per key, the
    /// optimum), clamped to `1..=30`, exactly as LevelDB computes it.
    pub fn new(bits_per_key: usize) -> Self {
        // LevelDB converts `bits_per_key * 0.69` (a double) to an integer, truncating.
        let k = (bits_per_key as f64 * 0.69) as usize;
        let k = k.clamp(1, usize::from(MAX_PROBES)) as u8;
        BloomFilterPolicy { bits_per_key, k }
    }

    /// The bits of filter spent on each key.
    pub fn bits_per_key(&self) -> usize {
        self.bits_per_key
    }

    /// The number of probes per key, stored as the last byte of every filter.
    pub fn num_probes(&self) -> u8 {
        self.k
    }
}

impl FilterPolicy for BloomFilterPolicy {
    fn name(&self) -> &str {
        NAME
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        let bits = keys.len().saturating_mul(self.bits_per_key).max(MIN_BITS);
        let bytes = bits.div_ceil(8);
        let bits = bytes * 8;

        let start = dst.len();
        dst.resize(start + bytes, 0);
        dst.push(self.k);
        let array = &mut dst[start..start + bytes];

        let reduce = Reducer::new(bits);
        for key in keys {
            let mut h = hash(key, BLOOM_SEED);
            let delta = h.rotate_right(17);
            for _ in 0..self.k {
                let bit = reduce.reduce(h);
                array[bit / 8] |= 1 << (bit % 8);
                h = h.wrapping_add(delta);
            }
        }
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let Some((&k, array)) = filter.split_last() else {
            return false;
        };
        if array.is_empty() {
            return false;
        }
        if k > MAX_PROBES {
            // Reserved for encodings newer than this one: treat as a match.
            return true;
        }
        let reduce = Reducer::new(array.len() * 8);
        let mut h = hash(key, BLOOM_SEED);
        let delta = h.rotate_right(17);
        for _ in 0..k {
            let bit = reduce.reduce(h);
            if array[bit / 8] & (1 << (bit % 8)) == 0 {
                return false;
            }
            h = h.wrapping_add(delta);
        }
        true
    }
}

/// Computes `h mod bits` for a fixed `bits` without a division per probe.
///
/// For `bits < 2^32` this is Lemire's exact "fastmod": with `m = floor((2^64 - 1) / bits) + 1`
/// (wrapping), `h mod bits = ((m × h mod 2^64) × bits) >> 64` for every 32-bit `h`. The one
/// division computing `m` depends only on the filter's size, so the CPU overlaps it with
/// hashing the key. For `bits >= 2^32` every 32-bit `h` is already below `bits`.
#[derive(Clone, Copy)]
struct Reducer {
    m: u64,
    bits: u64,
}

impl Reducer {
    #[inline]
    fn new(bits: usize) -> Self {
        let bits = bits as u64;
        let m = if bits <= u64::from(u32::MAX) {
            (u64::MAX / bits).wrapping_add(1)
        } else {
            0
        };
        Reducer { m, bits }
    }

    #[inline]
    fn reduce(self, h: u32) -> usize {
        if self.m == 0 {
            // Either bits == 1 (everything reduces to 0, which the product below also gives)
            // or bits >= 2^32 (h is its own remainder).
            return if self.bits == 1 { 0 } else { h as usize };
        }
        let low = self.m.wrapping_mul(u64::from(h));
        ((u128::from(low) * u128::from(self.bits)) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn filter_of(bits_per_key: usize, keys: &[&[u8]]) -> Vec<u8> {
        let mut dst = Vec::new();
        BloomFilterPolicy::new(bits_per_key).create_filter(keys, &mut dst);
        dst
    }

    // Golden values: hex of whole filters made by LevelDB 1.23.
    #[test]
    fn matches_leveldb_golden_filters() {
        assert_eq!(
            hex(&filter_of(10, &[b"hello", b"world"])),
            "114000414410401006"
        );
        assert_eq!(hex(&filter_of(10, &[])), "000000000000000006");
        assert_eq!(hex(&filter_of(30, &[b"a"])), "3870e0c08103070c14");
        assert_eq!(hex(&filter_of(1, &[b"a"])), "000000000000010001");
    }

    #[test]
    fn probes_follow_leveldb_rule() {
        assert_eq!(BloomFilterPolicy::new(0).num_probes(), 1);
        assert_eq!(BloomFilterPolicy::new(1).num_probes(), 1);
        assert_eq!(BloomFilterPolicy::new(2).num_probes(), 1);
        assert_eq!(BloomFilterPolicy::new(3).num_probes(), 2);
        assert_eq!(BloomFilterPolicy::new(10).num_probes(), 6);
        assert_eq!(BloomFilterPolicy::new(43).num_probes(), 29);
        assert_eq!(BloomFilterPolicy::new(44).num_probes(), 30);
        assert_eq!(BloomFilterPolicy::new(1000).num_probes(), 30);
    }

    #[test]
    fn create_filter_appends() {
        let policy = BloomFilterPolicy::new(10);
        let mut dst = alloc::vec![0xaa, 0xbb];
        policy.create_filter(&[b"hello", b"world"], &mut dst);
        assert_eq!(&dst[..2], &[0xaa, 0xbb]);
        assert_eq!(hex(&dst[2..]), "114000414410401006");
        assert!(policy.key_may_match(b"hello", &dst[2..]));
    }

    #[test]
    fn empty_filter_matches_nothing() {
        let policy = BloomFilterPolicy::new(10);
        let filter = filter_of(10, &[]);
        assert!(!policy.key_may_match(b"hello", &filter));
        assert!(!policy.key_may_match(b"world", &filter));
    }

    #[test]
    fn small_filter() {
        let policy = BloomFilterPolicy::new(10);
        let filter = filter_of(10, &[b"hello", b"world"]);
        assert!(policy.key_may_match(b"hello", &filter));
        assert!(policy.key_may_match(b"world", &filter));
        assert!(!policy.key_may_match(b"x", &filter));
        assert!(!policy.key_may_match(b"foo", &filter));
    }

    #[test]
    fn malformed_filters() {
        let policy = BloomFilterPolicy::new(10);
        assert!(!policy.key_may_match(b"a", &[]));
        assert!(!policy.key_may_match(b"a", &[6]));
        // k above 30 is reserved: may match.
        assert!(policy.key_may_match(b"a", &[0, 31]));
        assert!(policy.key_may_match(b"a", &[0, 255]));
        // k == 0 probes nothing: LevelDB answers "may match".
        assert!(policy.key_may_match(b"a", &[0, 0]));
        // A one-byte bit array is a valid (if poor) filter of 8 bits.
        assert!(!policy.key_may_match(b"a", &[0, 6]));
        assert!(policy.key_may_match(b"a", &[0xff, 6]));
    }

    #[test]
    fn reducer_is_exact() {
        let samples = [
            0u32,
            1,
            2,
            63,
            64,
            65,
            12345,
            0x7fff_ffff,
            0x8000_0000,
            u32::MAX,
        ];
        for bits in [
            1usize,
            8,
            64,
            72,
            1000,
            8 * 12345,
            (1 << 31) + 8,
            u32::MAX as usize,
        ] {
            let r = Reducer::new(bits);
            for &h in &samples {
                assert_eq!(r.reduce(h), h as usize % bits, "h={h} bits={bits}");
            }
        }
        let big = Reducer::new(1 << 33);
        assert_eq!(big.reduce(u32::MAX), u32::MAX as usize);
    }

    fn next_length(length: usize) -> usize {
        match length {
            0..10 => length + 1,
            10..100 => length + 10,
            100..1000 => length + 100,
            _ => length + 1000,
        }
    }

    fn fixed32_key(i: u32) -> [u8; 4] {
        i.to_le_bytes()
    }

    #[test]
    fn varying_lengths_have_no_false_negatives_and_low_fp() {
        let policy = BloomFilterPolicy::new(10);
        let mut mediocre = 0;
        let mut good = 0;
        let mut length = 1;
        while length <= 10_000 {
            let keys: Vec<[u8; 4]> = (0..length as u32).map(fixed32_key).collect();
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let mut filter = Vec::new();
            policy.create_filter(&refs, &mut filter);
            assert!(filter.len() <= length * 10 / 8 + 40, "length {length}");

            for key in &refs {
                assert!(
                    policy.key_may_match(key, &filter),
                    "false negative at {length}"
                );
            }

            let probes = 10_000u32;
            let hits = (0..probes)
                .filter(|i| policy.key_may_match(&fixed32_key(i + 1_000_000_000), &filter))
                .count();
            let rate = hits as f64 / f64::from(probes);
            assert!(
                rate <= 0.02,
                "false-positive rate {rate} at length {length}"
            );
            if rate > 0.0125 {
                mediocre += 1;
            } else {
                good += 1;
            }
            length = next_length(length);
        }
        assert!(
            mediocre * 5 <= good,
            "{mediocre} mediocre vs {good} good filters"
        );
    }
}
