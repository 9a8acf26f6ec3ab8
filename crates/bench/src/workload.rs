//! Workload generators: keys, values, query streams and hash inputs.

/// SplitMix64 (Steele, Lea and Flood): `state += 0x9e3779b97f4a7c15`, then the 30/27/31
/// xor-shift-multiply mix.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64-bit output.
    #[expect(
        clippy::should_implement_trait,
        reason = "an infinite generator, not an iterator"
    )]
    pub fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Length of every [`key`].
pub const KEY_LEN: usize = 16;

/// Length of every value ([`next_value`]).
pub const VALUE_LEN: usize = 100;

/// Entries in the benchmark table.
pub const TABLE_ENTRIES: u64 = 1_000_000;

/// Point lookups per get workload.
pub const GET_QUERIES: usize = 200_000;

/// `j` in decimal, zero-padded to 16 ASCII digits.
pub fn key(j: u64) -> [u8; KEY_LEN] {
    let mut out = [b'0'; KEY_LEN];
    let mut j = j;
    for byte in out.iter_mut().rev() {
        *byte = b'0' + (j % 10) as u8;
        j /= 10;
        if j == 0 {
            break;
        }
    }
    out
}

/// The 100-byte value of table entry `i`: 50 letters `'a' + byte % 26`, from the bytes of 7
/// SplitMix64 words (seed 1, little-endian) continuing the stream, written twice.
///
/// Entries draw their values in order from one generator (see [`table_entries`]).
pub fn next_value(rng: &mut SplitMix64) -> [u8; VALUE_LEN] {
    let mut bytes = [0u8; 56];
    for chunk in bytes.chunks_exact_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    let mut value = [0u8; VALUE_LEN];
    for (i, out) in value[..VALUE_LEN / 2].iter_mut().enumerate() {
        *out = b'a' + bytes[i] % 26;
    }
    value.copy_within(..VALUE_LEN / 2, VALUE_LEN / 2);
    value
}

/// Bytes in the [`value_ring`]: at least 1 MiB, as db_bench's `RandomGenerator` holds.
pub const VALUE_RING_MIN_BYTES: usize = 1 << 20;

/// db_bench's value source (`RandomGenerator` in LevelDB's `benchmarks/db_bench.cc`) with
/// SplitMix64 (seed 5) for LevelDB's `Random`: 100-byte pieces, each 50 random printable
/// bytes (`' ' + r % 95`) written twice (`CompressibleString` at ratio 0.5), laid end to end
/// until the ring holds [`VALUE_RING_MIN_BYTES`]. Value `j` of a write workload is piece
/// `j mod pieces`, so values compress to about half, as db_bench's do.
pub fn value_ring() -> Vec<u8> {
    let mut rng = SplitMix64::new(5);
    let mut out = Vec::with_capacity(VALUE_RING_MIN_BYTES + VALUE_LEN);
    while out.len() < VALUE_RING_MIN_BYTES {
        let start = out.len();
        for _ in 0..VALUE_LEN / 2 {
            out.push(b' ' + (rng.next() % 95) as u8);
        }
        out.extend_from_within(start..);
    }
    out
}

/// The benchmark table: `n` entries, entry `i` with key `key(2i)` and the `i`-th value.
pub fn table_entries(n: u64) -> impl Iterator<Item = ([u8; KEY_LEN], [u8; VALUE_LEN])> {
    let mut rng = SplitMix64::new(1);
    (0..n).map(move |i| (key(2 * i), next_value(&mut rng)))
}

/// `count` get queries over a table of `n` entries: `i = SplitMix64(seed 2) mod n`, and the
/// present key `key(2i)` or the absent key `key(2i + 1)`.
pub fn get_queries(n: u64, count: usize, present: bool) -> Vec<[u8; KEY_LEN]> {
    get_query_ids(n, count, present)
        .into_iter()
        .map(key)
        .collect()
}

/// The numbers behind [`get_queries`]: `2i` (present) or `2i + 1` (absent), for use with any
/// [`KeyShape`].
pub fn get_query_ids(n: u64, count: usize, present: bool) -> Vec<u64> {
    let mut rng = SplitMix64::new(2);
    (0..count)
        .map(|_| 2 * (rng.next() % n) + u64::from(!present))
        .collect()
}

/// `count` Bloom-match queries over a filter of the keys `key(2i)`, `i < n`:
/// `key(2 (r mod n) + (q & 1))` with `r`, `q` consecutive outputs of SplitMix64 (seed 4), so
/// about half are present.
pub fn bloom_queries(n: u64, count: usize) -> Vec<[u8; KEY_LEN]> {
    bloom_query_ids(n, count).into_iter().map(key).collect()
}

/// The numbers behind [`bloom_queries`]: `2 (r mod n) + (q & 1)`.
pub fn bloom_query_ids(n: u64, count: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(4);
    (0..count)
        .map(|_| {
            let r = rng.next();
            let q = rng.next();
            2 * (r % n) + (q & 1)
        })
        .collect()
}

/// `len` bytes of SplitMix64 output (seed 3), little-endian words: the hash input.
pub fn hash_input(len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(3);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Key shapes for filter-quality measurements: the `j`-th key of each shape's sequence.
///
/// Structured shapes put keys that differ only in their last bytes next to each other, which
/// is where a hash without a final mixing step (LevelDB's) fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyShape {
    /// 16 bytes of SplitMix64 output seeded with `j`.
    Random,
    /// `j` as an 8-byte big-endian integer.
    BigEndianU64,
    /// `j` in decimal, zero-padded to 16 digits (as [`key`]).
    Decimal,
    /// `user:` followed by `j` in decimal.
    Prefixed,
}

impl KeyShape {
    /// Every shape.
    pub const ALL: [KeyShape; 4] = [
        KeyShape::Random,
        KeyShape::BigEndianU64,
        KeyShape::Decimal,
        KeyShape::Prefixed,
    ];

    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            KeyShape::Random => "random",
            KeyShape::BigEndianU64 => "u64-be",
            KeyShape::Decimal => "decimal",
            KeyShape::Prefixed => "prefixed",
        }
    }

    /// Length of every key of this shape, if fixed (`Prefixed` keys vary).
    pub fn fixed_len(self) -> Option<usize> {
        match self {
            KeyShape::Random => Some(16),
            KeyShape::BigEndianU64 => Some(8),
            KeyShape::Decimal => Some(KEY_LEN),
            KeyShape::Prefixed => None,
        }
    }

    /// Replaces `out` with the `j`-th key.
    pub fn key_into(self, j: u64, out: &mut Vec<u8>) {
        out.clear();
        match self {
            KeyShape::Random => {
                let mut rng = SplitMix64::new(j);
                out.extend_from_slice(&rng.next().to_le_bytes());
                out.extend_from_slice(&rng.next().to_le_bytes());
            }
            KeyShape::BigEndianU64 => out.extend_from_slice(&j.to_be_bytes()),
            KeyShape::Decimal => out.extend_from_slice(&key(j)),
            KeyShape::Prefixed => {
                out.extend_from_slice(b"user:");
                out.extend_from_slice(j.to_string().as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_outputs() {
        // First outputs of SplitMix64 seeded with 0 (the reference implementation's values).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn key_shapes() {
        let mut out = Vec::new();
        KeyShape::BigEndianU64.key_into(258, &mut out);
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 1, 2]);
        KeyShape::Decimal.key_into(7, &mut out);
        assert_eq!(out, b"0000000000000007");
        KeyShape::Prefixed.key_into(7, &mut out);
        assert_eq!(out, b"user:7");
        KeyShape::Random.key_into(7, &mut out);
        assert_eq!(out.len(), 16);
    }

    #[test]
    fn keys_are_zero_padded_decimal() {
        assert_eq!(&key(0), b"0000000000000000");
        assert_eq!(&key(42), b"0000000000000042");
        assert_eq!(&key(1_999_999), b"0000000001999999");
        assert_eq!(&key(u64::MAX / 10_000), b"1844674407370955");
    }

    #[test]
    fn values_are_letters_written_twice() {
        let mut entries = table_entries(3);
        let (k0, v0) = entries.next().unwrap();
        let (k1, v1) = entries.next().unwrap();
        assert_eq!(&k0, b"0000000000000000");
        assert_eq!(&k1, b"0000000000000002");
        assert!(v0.iter().all(u8::is_ascii_lowercase));
        assert_eq!(v0[..50], v0[50..]);
        assert_ne!(v0, v1);
    }

    #[test]
    fn value_ring_pieces_are_printable_halves() {
        let ring = value_ring();
        assert!(ring.len() >= VALUE_RING_MIN_BYTES && ring.len() % VALUE_LEN == 0);
        assert!(ring.iter().all(|b| (b' '..=b'~').contains(b)));
        for piece in ring.chunks_exact(VALUE_LEN) {
            assert_eq!(piece[..VALUE_LEN / 2], piece[VALUE_LEN / 2..]);
        }
        assert_ne!(ring[..VALUE_LEN], ring[VALUE_LEN..2 * VALUE_LEN]);
    }

    #[test]
    fn queries_are_present_or_absent() {
        let present = get_queries(1000, 100, true);
        let absent = get_queries(1000, 100, false);
        for (p, a) in present.iter().zip(&absent) {
            let p: u64 = std::str::from_utf8(p).unwrap().parse().unwrap();
            let a: u64 = std::str::from_utf8(a).unwrap().parse().unwrap();
            assert_eq!(p % 2, 0);
            assert_eq!(a, p + 1);
            assert!(p < 2000);
        }
        assert_eq!(get_query_ids(1000, 3, false)[0] % 2, 1);
        let mixed = bloom_queries(1000, 1000);
        let odd = mixed.iter().filter(|k| k[KEY_LEN - 1] % 2 == 1).count();
        assert!((400..600).contains(&odd), "{odd}");
    }
}
