#![deny(clippy::arithmetic_side_effects)]

use alloc::vec::Vec;

use leveltable_hash::{BLOOM_SEED, hash};

use crate::FilterPolicy;

/// The name LevelDB 1.23 gives its Bloom filter policy.
pub(crate) const NAME: &str = "leveldb.BuiltinBloomFilter2";

/// The fewest bits a filter has, however few keys it holds: tiny filters would otherwise have
/// a very high false-positive rate.
const MIN_BITS: usize = 64;

/// Bit arrays over this size are asked in groups by the batch query (see `keys_may_match`);
/// smaller ones, in cache after the first query, one key at a time. Table filters (one per
/// 2 KiB of data blocks) are far below it, whole-key-set filters far above.
const SMALL_FILTER_BYTES: usize = 4096;

/// Keys `create_filter` hashes before setting any of their bits.
const HASH_CHUNK: usize = 64;

/// Keys `keys_may_match` hashes before probing any of them. Measured on a 1M-key filter
/// (1.25 MB) on AMD Zen 5: 16 to 32 keys answer in 0.48× LevelDB's time, 8 keys a little
/// slower (docs/benchmarks.md, "CPU families").
const QUERY_GROUP: usize = 16;

/// The mask of bit `i` of a byte. A table lookup: on x86 a shift by a variable amount costs
/// more than a load that hits the cache.
const BIT_MASK: [u8; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

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

    /// The expected false-positive rate of a filter with `bits_per_key` bits per key and the
    /// number of probes this policy chooses for them: `(1 - e^(-k/bits))^k`, the rate of an
    /// ideal Bloom filter. (LevelDB's 32-bit hash does worse on keys that differ only in their
    /// last bytes; `docs/filters.md` measures how much.) 1 for no bits.
    pub fn expected_fp_rate(bits_per_key: f64) -> f64 {
        if bits_per_key.is_nan() || bits_per_key <= 0.0 {
            return 1.0;
        }
        let k = libm::floor(bits_per_key * 0.69).clamp(1.0, f64::from(MAX_PROBES));
        libm::pow(1.0 - libm::exp(-k / bits_per_key), k)
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

        let start = dst.len();
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "a Vec's length is at most isize::MAX and bytes at most usize::MAX / 8 + 1"
        )]
        let end = start + bytes;
        dst.resize(end, 0);
        let array = &mut dst[start..];

        // The reducer of the array as readers see it, so writer and readers agree exactly.
        let reduce = Reducer::for_array(array);
        // Hash a chunk of keys, then set their bits. Each hash is a chain of dependent
        // multiplies; with nothing between them the chains of different keys overlap, and the
        // read-modify-writes of the bit array do not wait behind them.
        let mut hashes = [0u32; HASH_CHUNK];
        for chunk in keys.chunks(HASH_CHUNK) {
            for (h, key) in hashes.iter_mut().zip(chunk) {
                *h = hash(key, BLOOM_SEED);
            }
            for &h in &hashes[..chunk.len()] {
                let mut h = h;
                let delta = h.rotate_right(17);
                for _ in 0..self.k {
                    let bit = reduce.reduce(h);
                    array[bit / 8] |= BIT_MASK[bit % 8];
                    h = h.wrapping_add(delta);
                }
            }
        }
        dst.push(self.k);
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
        let reduce = Reducer::for_array(array);
        let mut h = hash(key, BLOOM_SEED);
        let delta = h.rotate_right(17);
        if reduce.m == 0 {
            // Bit arrays of 512 MiB and more: every hash is its own remainder.
            return probe_each(k, h, delta, array, reduce);
        }
        // Load every probe, without an early exit, whatever the filter's size. The loads are
        // independent, so for a large filter their cache misses overlap; and there is no
        // branch on random filter bits, which mispredicts for about half of the absent keys
        // and throws away the work of the queries that followed (docs/benchmarks.md, "CPU
        // families", measures both forms on both families).
        let mut all = 1u8;
        for _ in 0..k {
            let bit = reduce.reduce_small(h);
            all &= array[bit / 8] >> (bit % 8);
            h = h.wrapping_add(delta);
        }
        all & 1 != 0
    }

    fn keys_may_match(&self, keys: &[&[u8]], filter: &[u8], out: &mut Vec<bool>) {
        let k = filter.last().copied().unwrap_or(0);
        let array = filter.split_last().map_or(&[][..], |(_, a)| a);
        let reduce = Reducer::for_array(array);
        // Small filters are in cache; huge ones (512 MiB and more, `m == 0`) and reserved or
        // zero probe counts are rare: those keys are asked one at a time, below.
        let grouped = array.len() > SMALL_FILTER_BYTES && reduce.m != 0;
        // One copy of the loop per probe count, so that the probe loops unroll.
        macro_rules! by_probes {
            ($($k:literal)*) => {
                match k {
                    $($k if grouped => return match_groups::<$k>(keys, array, reduce, out),)*
                    _ => {}
                }
            };
        }
        by_probes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30);
        out.extend(keys.iter().map(|key| self.key_may_match(key, filter)));
    }
}

/// [`FilterPolicy::keys_may_match`] for a large bit array and `K` probes: hashes a group of
/// keys first (each hash is a chain of dependent multiplies, and the chains of different keys
/// overlap when nothing sits between them), then probes each key of the group without
/// branches, so that the loads of several keys are in flight together and their cache misses
/// overlap. Computing every probe position of the group before any load, as this did
/// before, measured slower: it stores and reloads each position.
fn match_groups<const K: usize>(
    keys: &[&[u8]],
    array: &[u8],
    reduce: Reducer,
    out: &mut Vec<bool>,
) {
    out.reserve(keys.len());
    let mut hashes = [0u32; QUERY_GROUP];
    let mut answers = [false; QUERY_GROUP];
    for group in keys.chunks(QUERY_GROUP) {
        for (h, key) in hashes.iter_mut().zip(group) {
            *h = hash(key, BLOOM_SEED);
        }
        for (answer, &h) in answers.iter_mut().zip(&hashes[..group.len()]) {
            let mut h = h;
            let delta = h.rotate_right(17);
            let mut all = 1u8;
            for _ in 0..K {
                let bit = reduce.reduce_small(h);
                all &= array[bit / 8] >> (bit % 8);
                h = h.wrapping_add(delta);
            }
            *answer = all & 1 != 0;
        }
        out.extend_from_slice(&answers[..group.len()]);
    }
}

/// Probes the `k` bits of a key whose hash is `h`, stopping at the first clear one.
#[inline]
fn probe_each(k: u8, mut h: u32, delta: u32, array: &[u8], reduce: Reducer) -> bool {
    for _ in 0..k {
        let bit = reduce.reduce(h);
        if array[bit / 8] & BIT_MASK[bit % 8] == 0 {
            return false;
        }
        h = h.wrapping_add(delta);
    }
    true
}

/// Computes `h mod bits` for a fixed `bits` without a division per probe.
///
/// For `bits < 2^32` this is Lemire's "fastmod": with a multiplier `m` such that
/// `2^64 <= m × bits <= 2^64 + 2^32`, `h mod bits = ((m × h mod 2^64) × bits) >> 64` exactly
/// for every 32-bit `h`. (Write `h = q × bits + r` and `m × bits = 2^64 + e`: then
/// `m × h mod 2^64 = (r × 2^64 + e × h) / bits`, below `2^64`, and the product with `bits`
/// shifted down is `r + e × h / 2^64`, whose fraction stays below 1 because `e × h < 2^64`.)
/// `ceil(2^64 / bits)` is one such multiplier; any other gives the same remainders. For
/// `bits >= 2^32` every 32-bit `h` is already below `bits`.
#[derive(Clone, Copy)]
struct Reducer {
    m: u64,
    bits: u64,
}

/// `2^64` as a float (exact).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

impl Reducer {
    /// The reducer for `bits` bits.
    #[cfg(test)]
    fn new(bits: usize) -> Self {
        Reducer::from_bits(bits as u64)
    }

    /// The reducer for the bits of `array`, a filter's bit array (possibly from a file).
    ///
    /// Readers make one for every query, so its multiplier must cost far less than the
    /// division that defines it: table filters (under 256 bytes) take it from a table made at
    /// compile time, one load that hits the cache; larger arrays up to 170 MB from one
    /// floating-point division that needs no check ([`float_multiplier`]); the rest from
    /// [`multiplier`].
    ///
    /// Counted in 64 bits, so a 512 MiB array has its 2^32 bits on 32-bit targets too. The
    /// count saturates only for arrays of 2^61 bytes or more, which no memory holds; and every
    /// count of 2^32 bits or more reduces a 32-bit hash alike.
    #[inline]
    fn for_array(array: &[u8]) -> Self {
        Reducer::for_len(array.len())
    }

    /// [`for_array`](Self::for_array) for an array of `len` bytes.
    #[inline]
    fn for_len(len: usize) -> Self {
        let bits = (len as u64).saturating_mul(8);
        let m = if let Some(&m) = SMALL_MULTIPLIERS.get(len) {
            m
        } else if bits <= FLOAT_MAX_BITS {
            float_multiplier(bits)
        } else {
            return Reducer::from_bits(bits);
        };
        Reducer { m, bits }
    }

    #[inline]
    fn from_bits(bits: u64) -> Self {
        let m = if bits <= u64::from(u32::MAX) {
            multiplier(bits)
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
        self.reduce_small(h)
    }

    /// [`reduce`](Self::reduce) for `bits` in `2..2^32` (where `m != 0`), without the check.
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "a u64 times a u64 fits a u128"
    )]
    fn reduce_small(self, h: u32) -> usize {
        let low = self.m.wrapping_mul(u64::from(h));
        ((u128::from(low) * u128::from(self.bits)) >> 64) as usize
    }
}

/// Bit arrays of fewer bytes than this take their multiplier from [`SMALL_MULTIPLIERS`]:
/// 256 bytes hold the 2,048 bits from which [`float_multiplier`] is exact.
const SMALL_ARRAY_BYTES: usize = 256;

/// `SMALL_MULTIPLIERS[n]` is the multiplier of an `n`-byte bit array, `ceil(2^64 / 8n)`, made
/// at compile time (0 for `n` = 0, which has no quotient). 2 KiB; a table's filters have a
/// few sizes, so the few lines they use stay in cache.
static SMALL_MULTIPLIERS: [u64; SMALL_ARRAY_BYTES] = {
    let mut table = [0u64; SMALL_ARRAY_BYTES];
    let mut n = 1;
    while n < SMALL_ARRAY_BYTES {
        // ⌊(2^64 - 1) / bits⌋ + 1 = ⌈2^64 / bits⌉ for bits = 8n >= 8. Evaluated at compile
        // time, where an overflow would fail the build: n < 256, so 8n is nonzero and far from
        // overflow, and the quotient is below u64::MAX.
        table[n] = u64::MAX / (8 * n as u64) + 1;
        n += 1;
    }
    table
};

/// The most bits [`float_multiplier`] is proven exact for: `2^32 / 3`.
const FLOAT_MAX_BITS: u64 = (1 << 32) / 3;

/// A fastmod multiplier for `bits` in `2^11..=2^32 / 3` from one floating-point division,
/// with no check: `⌊2^64 / bits⌋` as a float, truncated, plus 2.
///
/// Proof that it lies in `[2^64, 2^64 + 2^32]` when multiplied by `bits`: `bits` converts
/// exactly, and the division is correctly rounded, so the float `f` is within `2^-53 q` of
/// `q = 2^64 / bits`, that is within `2^11 / bits <= 1`. Truncating loses less than 1, so
/// `approx = trunc(f) + 2` lies in `(q, q + 3]`; times `bits`, in `(2^64, 2^64 + 3 bits]`,
/// and `3 bits <= 2^32`. The quotient is at most `2^53`, so the signed conversions are exact.
/// On both CPU families this is a handful of instructions where the integer division costs
/// tens of cycles (Intel before Ice Lake) and the check of [`multiplier`] ten more.
#[inline]
fn float_multiplier(bits: u64) -> u64 {
    debug_assert!((1 << 11..=FLOAT_MAX_BITS).contains(&bits));
    ((TWO_POW_64 / bits as i64 as f64) as i64 as u64).wrapping_add(2)
}

/// A fastmod multiplier for `bits` (see [`Reducer`]), or 0 for `bits` 0 and 1.
///
/// Readers build a reducer for every query, and a 64-bit integer division costs tens of
/// cycles, more than the rest of a query that hits the cache. A float division rounded and
/// nudged up by 2 lands in the valid range `[2^64, 2^64 + 2^32]` (relative error 2^-53 is
/// at most 2^11 / bits units, and 2 × bits of slack fits under 2^32 for 32-bit `bits`); the
/// check below is exact integer arithmetic, and anything it rejects takes the division.
#[inline]
fn multiplier(bits: u64) -> u64 {
    if bits >= 2 {
        // Saturating float-to-int conversion; the quotient is below 2^63 for bits >= 2.
        let approx = ((TWO_POW_64 / bits as f64) as u64).wrapping_add(2);
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "a u64 times a u64 fits a u128"
        )]
        let product = u128::from(approx) * u128::from(bits);
        if product
            .checked_sub(1 << 64)
            .is_some_and(|excess| excess <= 1 << 32)
        {
            return approx;
        }
    }
    // ⌊(2^64 - 1) / bits⌋ + 1 = ⌈2^64 / bits⌉ for bits >= 2; the sum wraps to 0 for bits 1,
    // and bits 0 has no quotient.
    u64::MAX
        .checked_div(bits)
        .map_or(0, |quotient| quotient.wrapping_add(1))
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

    #[test]
    fn float_multiplier_is_in_the_exact_range() {
        // Every size from 2 to 2^16 bits, then a spread up to 2^32 - 1, including powers of
        // two and their neighbours.
        let mut sizes: Vec<u64> = (2..1 << 16).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sizes.push(2 + x % (u64::from(u32::MAX) - 1));
        }
        for p in 2..32 {
            sizes.extend([(1u64 << p) - 1, 1 << p, (1 << p) + 1]);
        }
        sizes.push(u64::from(u32::MAX));
        for bits in sizes {
            let m = multiplier(bits);
            let product = u128::from(m) * u128::from(bits);
            assert!(
                product >= 1 << 64 && product - (1 << 64) <= 1 << 32,
                "bits={bits} m={m}"
            );
            let r = Reducer::new(bits as usize);
            for h in [0u32, 1, bits as u32, bits as u32 - 1, 0x8000_0000, u32::MAX] {
                assert_eq!(r.reduce(h) as u64, u64::from(h) % bits, "h={h} bits={bits}");
            }
        }
    }

    /// The multipliers readers use, from the table, the unchecked float division and the
    /// checked path, are all in the exact range, on both sides of each boundary.
    #[test]
    fn reader_multipliers_are_in_the_exact_range() {
        let in_range = |len: usize| {
            let r = Reducer::for_len(len);
            let bits = len as u64 * 8;
            assert_eq!(r.bits, bits);
            if bits >= 1 << 32 {
                assert_eq!(r.m, 0, "len {len}");
                return;
            }
            let product = u128::from(r.m) * u128::from(bits);
            assert!(
                product >= 1 << 64 && product - (1 << 64) <= 1 << 32,
                "len={len} m={}",
                r.m
            );
            for h in [0u32, 1, bits as u32 - 1, bits as u32, 0x8000_0000, u32::MAX] {
                assert_eq!(r.reduce(h) as u64, u64::from(h) % bits, "h={h} len={len}");
            }
        };
        let float_max_len = (FLOAT_MAX_BITS / 8) as usize;
        let mut lens: Vec<usize> = (1..4096).collect();
        lens.extend(float_max_len - 2..float_max_len + 3);
        lens.extend([1 << 29, (1 << 29) - 1, (1 << 29) + 1]);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lens.push(1 + (x % (1 << 29)) as usize);
        }
        for len in lens {
            in_range(len);
        }
        assert_eq!(Reducer::for_len(0).m, 0);
    }

    #[test]
    fn multiplier_edge_cases_take_the_division() {
        assert_eq!(multiplier(1), 0);
        assert_eq!(multiplier(0), 0);
        assert_eq!(Reducer::new(1).reduce(u32::MAX), 0);
    }

    #[expect(clippy::arithmetic_side_effects, reason = "test lengths up to 10,000")]
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

    /// The batch query answers exactly as single queries do, for every probe count, for
    /// small and large filters, for foreign and malformed filters, and appends after what
    /// `out` already holds.
    #[test]
    fn batch_answers_equal_single_answers() {
        let keys: Vec<[u8; 4]> = (0..6000u32).map(|i| (i * 7).to_le_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        // Half present, half absent, with a tail that does not fill a group.
        let queries: Vec<[u8; 4]> = (0..2003u32)
            .map(|i| (i * 7 + (i & 1)).to_le_bytes())
            .collect();
        let queries: Vec<&[u8]> = queries.iter().map(|k| &k[..]).collect();
        let check = |policy: &BloomFilterPolicy, filter: &[u8], what: &str| {
            let mut out = alloc::vec![true, false];
            policy.keys_may_match(&queries, filter, &mut out);
            assert_eq!(&out[..2], &[true, false], "{what}");
            let single: Vec<bool> = queries
                .iter()
                .map(|q| policy.key_may_match(q, filter))
                .collect();
            assert_eq!(&out[2..], &single[..], "{what}");
        };
        for bits_per_key in [1, 2, 6, 9, 10, 20, 44] {
            let policy = BloomFilterPolicy::new(bits_per_key);
            for n in [1, 100, 6000] {
                let filter = filter_of(bits_per_key, &refs[..n]);
                check(
                    &policy,
                    &filter,
                    &format!("{bits_per_key} bits/key, {n} keys"),
                );
            }
        }
        let policy = BloomFilterPolicy::new(10);
        let large = filter_of(10, &refs);
        assert!(large.len() > SMALL_FILTER_BYTES, "{} bytes", large.len());
        for k in [0u8, 1, 30, 31, 255] {
            let mut odd = large.clone();
            *odd.last_mut().unwrap() = k;
            check(&policy, &odd, &format!("k = {k}"));
        }
        check(&policy, &[], "empty");
        check(&policy, &[6], "no bit array");
    }
}
