#![doc = include_str!("../README.md")]
#![no_std]
#![forbid(unsafe_code)]

/// The seed LevelDB's Bloom filter policy passes to [`hash`].
pub const BLOOM_SEED: u32 = 0xbc9f_1d34;

/// The multiplier of LevelDB's hash.
const M: u32 = 0xc6a4_a793;
/// The right shift LevelDB's hash applies after each word.
const R: u32 = 24;

/// Hashes `data` with `seed` exactly as LevelDB 1.23's `leveldb::Hash` does.
///
/// The result depends only on the bytes and the seed, never on the host's endianness.
#[inline]
pub fn hash(data: &[u8], seed: u32) -> u32 {
    // LevelDB multiplies the length as a size_t and then truncates to 32 bits; doing the
    // truncation first gives the same low 32 bits.
    let mut h = seed ^ (data.len() as u32).wrapping_mul(M);

    let mut words = data.chunks_exact(4);
    for word in &mut words {
        // Invariant: chunks_exact(4) yields slices of exactly four bytes.
        let w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        h = h.wrapping_add(w);
        h = h.wrapping_mul(M);
        h ^= h >> 16;
    }

    let tail = words.remainder();
    // The tail bytes are added as unsigned values, highest first, like LevelDB's
    // fall-through switch.
    if !tail.is_empty() {
        if tail.len() == 3 {
            h = h.wrapping_add(u32::from(tail[2]) << 16);
        }
        if tail.len() >= 2 {
            h = h.wrapping_add(u32::from(tail[1]) << 8);
        }
        h = h.wrapping_add(u32::from(tail[0]));
        h = h.wrapping_mul(M);
        h ^= h >> R;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values from LevelDB's own `util/hash_test.cc`.
    #[test]
    fn matches_leveldb_signed_unsigned_vectors() {
        assert_eq!(hash(&[], BLOOM_SEED), 0xbc9f_1d34);
        assert_eq!(hash(&[0x62], BLOOM_SEED), 0xef13_45c4);
        assert_eq!(hash(&[0xc3, 0x97], BLOOM_SEED), 0x5b66_3814);
        assert_eq!(hash(&[0xe2, 0x99, 0xa5], BLOOM_SEED), 0x323c_078f);
        assert_eq!(hash(&[0xe1, 0x80, 0xb9, 0x32], BLOOM_SEED), 0xed21_633a);
    }

    #[test]
    fn matches_leveldb_48_byte_vector() {
        let data: [u8; 48] = [
            0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14,
            0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        assert_eq!(hash(&data, 0x1234_5678), 0xf333_dabb);
    }

    #[test]
    fn seed_and_length_change_the_result() {
        assert_ne!(hash(b"abc", 1), hash(b"abc", 2));
        assert_ne!(hash(b"abc", 1), hash(b"abcd", 1));
        // A zero tail byte still changes the hash through the length term.
        assert_ne!(hash(b"ab", 1), hash(b"ab\0", 1));
    }
}
