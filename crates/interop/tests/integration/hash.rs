//! `leveltable_hash::hash` against LevelDB's `leveldb::Hash`.

use crate::common;

use leveltable_interop::{hash, require_leveldb};
use proptest::prelude::*;

/// The vectors of LevelDB's util/hash_test.cc, computed by the linked library.
#[test]
fn leveldb_own_vectors() {
    if !require_leveldb() {
        return;
    }
    let data4: [u8; 48] = [
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
        0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00,
    ];
    let cases: [(&[u8], u32, u32); 6] = [
        (&[], 0xbc9f1d34, 0xbc9f1d34),
        (&[0x62], 0xbc9f1d34, 0xef1345c4),
        (&[0xc3, 0x97], 0xbc9f1d34, 0x5b663814),
        (&[0xe2, 0x99, 0xa5], 0xbc9f1d34, 0x323c078f),
        (&[0xe1, 0x80, 0xb9, 0x32], 0xbc9f1d34, 0xed21633a),
        (&data4, 0x12345678, 0xf333dabb),
    ];
    for (data, seed, expected) in cases {
        assert_eq!(hash::hash(data, seed), expected, "data {data:02x?}");
        assert_eq!(
            leveltable_hash::hash(data, seed),
            expected,
            "data {data:02x?}"
        );
    }
}

/// Random bytes of length 0–100 (covering every tail length and the sign-extension pitfall
/// of bytes ≥ 0x80) and random seeds.
#[test]
fn hash_equals_leveldb() {
    if !require_leveldb() {
        return;
    }
    let inputs = (prop::collection::vec(any::<u8>(), 0..=100), any::<u32>());
    common::check("tests/regressions/hash.txt", inputs, |(data, seed)| {
        prop_assert_eq!(leveltable_hash::hash(&data, seed), hash::hash(&data, seed));
        Ok(())
    });
}
