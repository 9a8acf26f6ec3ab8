//! A cache-local Bloom filter over XXH3-64 that keeps its false-positive rate on structured
//! keys: [`CacheLocalBloomPolicy`], stored in tables as `leveltable.LocalBloom64`.

#![deny(clippy::arithmetic_side_effects)]

use alloc::vec::Vec;

use xxhash_rust::xxh3::xxh3_64;

use crate::FilterPolicy;

/// The name under which tables store filters of [`CacheLocalBloomPolicy`].
pub(crate) const NAME: &str = "leveltable.LocalBloom64";

/// Bytes per block: one cache line. Every probe for a key lands in the same block.
pub const BLOCK_BYTES: usize = 64;

/// Bits per block.
const BLOCK_BITS: u32 = (BLOCK_BYTES * 8) as u32;

/// log2 of [`BLOCK_BITS`]: how many hash bits select one bit of a block.
const BLOCK_BITS_LG: u32 = BLOCK_BITS.trailing_zeros();

/// The trailer every filter ends with: 1 byte of probe count, 1 byte of format version.
pub const TRAILER_SIZE: usize = 2;

/// The format version byte this policy writes and reads.
const FORMAT_V1: u8 = 1;

/// The most probes a filter may ask for.
const MAX_PROBES: u8 = 30;

/// Odd multiplier (2^32 / golden ratio) that derives each probe's bits from the previous.
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// The number of probes minimising the false-positive rate of a cache-local filter with
/// `bits_per_key` bits per key (index 0 unused), computed from the rate's closed form: a
/// block's key count is Poisson with mean 512 / bits_per_key.
const BEST_PROBES: [u8; 31] = [
    1, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7, 7, 8, 8, 9, 9, 10, 10, 10, 11, 11, 12, 12, 12, 13, 13, 13, 14,
    14, 14, 14,
];

/// The last bits per key [`BEST_PROBES`] has an entry for; more use its probe count.
const MAX_TABULATED_BITS: usize = BEST_PROBES.len() - 1;

/// A cache-local Bloom filter over a well-mixed 64-bit hash, `leveltable.LocalBloom64`.
///
/// LevelDB's Bloom filter hashes keys with a 32-bit hash that has no final mixing step and
/// reduces it modulo the filter size, so keys that differ only in their last bytes (sequential
/// integers, zero-padded counters) set correlated bits and absent neighbours pass far more
/// often than the bits per key promise. This policy is built for such keys:
///
/// - XXH3-64 hashes the key: every input bit affects every output bit.
/// - The upper 32 bits pick one 64-byte block (a cache line) by multiply-shift range
///   reduction, without a division; all `k` probes fall in that block, so a query touches one
///   cache line.
/// - The lower 32 bits, remixed by an odd multiplication per probe, give each probe's bit.
///
/// # Encoding
///
/// `ceil(n × bits_per_key / 512)` blocks of 64 bytes (at least one), then the probe count `k`,
/// then a version byte (1). Readers take `k` and the block count from the filter, so they read
/// filters made with any bits per key. A filter they cannot decode answers "may match".
///
/// At 10 bits per key the false-positive rate is about 0.96%, the ideal for a cache-local
/// filter (a plain Bloom filter of the same size would reach 0.82% with a perfect hash, at the
/// cost of up to `k` cache misses per query), and it holds for structured keys too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLocalBloomPolicy {
    bits_per_key: usize,
    k: u8,
}

impl CacheLocalBloomPolicy {
    /// A policy spending `bits_per_key` bits on each key, with the number of probes that
    /// minimises its false-positive rate.
    ///
    /// `bits_per_key` of 0 is treated as 1.
    pub fn new(bits_per_key: usize) -> Self {
        let bits_per_key = bits_per_key.max(1);
        let k = BEST_PROBES[bits_per_key.min(MAX_TABULATED_BITS)];
        CacheLocalBloomPolicy { bits_per_key, k }
    }

    /// The bits of filter spent on each key.
    pub fn bits_per_key(&self) -> usize {
        self.bits_per_key
    }

    /// The number of probes per key, stored in every filter.
    pub fn num_probes(&self) -> u8 {
        self.k
    }

    /// The expected false-positive rate of a filter with `bits_per_key` bits per key and the
    /// number of probes this policy chooses for them (rounded to whole bits): each 512-bit
    /// block holds a Poisson number of keys with mean `512 / bits_per_key`, and a query
    /// passes when its `k` bits in one block are set. Structured keys do not change it. 1 for
    /// no bits.
    pub fn expected_fp_rate(bits_per_key: f64) -> f64 {
        if bits_per_key.is_nan() || bits_per_key <= 0.0 {
            return 1.0;
        }
        // Saturating float-to-int cast; `new` clamps to the probe table.
        let k = f64::from(CacheLocalBloomPolicy::new(libm::round(bits_per_key) as usize).k);
        let block_bits = f64::from(BLOCK_BITS);
        let lambda = block_bits / bits_per_key;
        // Sum over the key count j of a block: P(j) * (fill of a block with j keys)^k, far
        // enough into the tail that the rest is negligible.
        let terms = (lambda + 20.0 * libm::sqrt(lambda) + 50.0) as u32;
        let mut log_p = -lambda;
        let mut rate = 0.0;
        for j in 0..=terms {
            if j > 0 {
                log_p += libm::log(lambda / f64::from(j));
            }
            let fill = 1.0 - libm::pow(1.0 - 1.0 / block_bits, k * f64::from(j));
            rate += libm::exp(log_p) * libm::pow(fill, k);
        }
        rate
    }
}

/// Picks the block for hash `h` among `num_blocks`, by multiply-shift range reduction.
#[inline]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "a 32-bit number times a u32 fits a u64"
)]
fn block_of(h: u64, num_blocks: u32) -> usize {
    (((h >> 32) * u64::from(num_blocks)) >> 32) as usize
}

/// Block `index` of `array`, whose length is a multiple of [`BLOCK_BYTES`] and above
/// `index × BLOCK_BYTES` (as [`block_of`] guarantees for the array's block count).
#[inline]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "index < array.len() / BLOCK_BYTES, so both offsets are at most array.len()"
)]
fn block_at(array: &[u8], index: usize) -> &[u8] {
    let base = index * BLOCK_BYTES;
    &array[base..base + BLOCK_BYTES]
}

/// [`block_at`], mutably.
#[inline]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "index < array.len() / BLOCK_BYTES, so both offsets are at most array.len()"
)]
fn block_at_mut(array: &mut [u8], index: usize) -> &mut [u8] {
    let base = index * BLOCK_BYTES;
    &mut array[base..base + BLOCK_BYTES]
}

/// Yields the `k` bit positions (0..512) within a block for hash `h`.
#[inline]
fn probes(h: u64, k: u8) -> impl Iterator<Item = u32> {
    let mut x = h as u32;
    (0..k).map(move |_| {
        x = x.wrapping_mul(PROBE_MULTIPLIER);
        x >> (32 - BLOCK_BITS_LG)
    })
}

impl FilterPolicy for CacheLocalBloomPolicy {
    fn name(&self) -> &str {
        NAME
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        let bits = keys.len().saturating_mul(self.bits_per_key);
        // At most u32::MAX blocks (256 GiB) can be addressed; more keys than that would fill
        // the blocks beyond their design rate rather than fail.
        let num_blocks = bits
            .div_ceil(BLOCK_BITS as usize)
            .clamp(1, u32::MAX as usize);
        let start = dst.len();
        // Saturates only where 2^32 - 1 blocks do not fit a 32-bit `usize`, and `resize`
        // then refuses the length.
        let end = start.saturating_add(num_blocks.saturating_mul(BLOCK_BYTES));
        dst.resize(end, 0);
        let array = &mut dst[start..];

        for key in keys {
            let h = xxh3_64(key);
            let block = block_at_mut(array, block_of(h, num_blocks as u32));
            for bit in probes(h, self.k) {
                block[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        dst.push(self.k);
        dst.push(FORMAT_V1);
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let Some((array, trailer)) = filter.split_last_chunk::<TRAILER_SIZE>() else {
            return true;
        };
        let [k, version] = *trailer;
        if version != FORMAT_V1 || k == 0 || k > MAX_PROBES {
            return true;
        }
        if array.is_empty() || array.len() % BLOCK_BYTES != 0 {
            return true;
        }
        let Ok(num_blocks) = u32::try_from(array.len() / BLOCK_BYTES) else {
            return true;
        };
        let h = xxh3_64(key);
        let block = block_at(array, block_of(h, num_blocks));
        probes(h, k).all(|bit| block[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn probe_counts() {
        assert_eq!(CacheLocalBloomPolicy::new(0).num_probes(), 1);
        assert_eq!(CacheLocalBloomPolicy::new(10).num_probes(), 7);
        assert_eq!(CacheLocalBloomPolicy::new(16).num_probes(), 10);
        assert_eq!(CacheLocalBloomPolicy::new(30).num_probes(), 14);
        assert_eq!(CacheLocalBloomPolicy::new(1000).num_probes(), 14);
    }

    #[test]
    fn layout_and_membership() {
        let policy = CacheLocalBloomPolicy::new(10);
        let mut dst = vec![0xee];
        policy.create_filter(&[b"hello", b"world"], &mut dst);
        assert_eq!(dst[0], 0xee, "bytes before the filter are untouched");
        let filter = &dst[1..];
        assert_eq!(filter.len(), BLOCK_BYTES + TRAILER_SIZE);
        assert_eq!(&filter[BLOCK_BYTES..], &[7, FORMAT_V1]);
        assert!(policy.key_may_match(b"hello", filter));
        assert!(policy.key_may_match(b"world", filter));
        assert!(!policy.key_may_match(b"x", filter));
        assert!(!policy.key_may_match(b"foo", filter));

        let keys: Vec<Vec<u8>> = (0u32..1000).map(|i| i.to_be_bytes().to_vec()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut big = Vec::new();
        policy.create_filter(&refs, &mut big);
        assert_eq!(
            big.len(),
            10_000usize.div_ceil(512) * BLOCK_BYTES + TRAILER_SIZE
        );
        assert!(refs.iter().all(|k| policy.key_may_match(k, &big)));
    }

    #[test]
    fn empty_filter_matches_nothing() {
        let policy = CacheLocalBloomPolicy::new(10);
        let mut filter = Vec::new();
        policy.create_filter(&[], &mut filter);
        assert_eq!(filter.len(), BLOCK_BYTES + TRAILER_SIZE);
        assert!(!policy.key_may_match(b"hello", &filter));
    }

    #[test]
    fn filters_of_other_sizes_are_read() {
        // A reader configured for 10 bits/key reads a 30-bit filter by its own trailer.
        let writer = CacheLocalBloomPolicy::new(30);
        let mut filter = Vec::new();
        writer.create_filter(&[b"a", b"b"], &mut filter);
        let reader = CacheLocalBloomPolicy::new(10);
        assert!(reader.key_may_match(b"a", &filter));
        assert!(reader.key_may_match(b"b", &filter));
    }

    #[test]
    fn undecodable_filters_may_match() {
        let policy = CacheLocalBloomPolicy::new(10);
        let block = [0u8; BLOCK_BYTES];
        let with = |trailer: &[u8]| [&block[..], trailer].concat();
        for filter in [
            vec![],
            vec![7],
            vec![7, FORMAT_V1],
            with(&[0, FORMAT_V1]),
            with(&[31, FORMAT_V1]),
            with(&[7, 2]),
            [&block[..10], &[7, FORMAT_V1]].concat(),
        ] {
            assert!(policy.key_may_match(b"k", &filter), "{filter:?}");
        }
        assert!(!policy.key_may_match(b"k", &with(&[7, FORMAT_V1])));
    }
}
