//! CRC-32C: LevelDB's `crc32c::Extend` against the `crc32c` crate leveltable uses.

use crate::common;

use leveltable_interop::{crc32c, require_leveldb};
use proptest::prelude::*;

/// The vectors of LevelDB's util/crc32c_test.cc (from RFC 3720).
#[test]
fn leveldb_own_vectors() {
    if !require_leveldb() {
        return;
    }
    let ascending: Vec<u8> = (0..32).collect();
    let descending: Vec<u8> = (0..32).rev().collect();
    let mut iscsi = vec![0u8; 48];
    iscsi[0] = 0x01;
    iscsi[1] = 0xc0;
    iscsi[16] = 0x14;
    iscsi[22] = 0x04;
    iscsi[27] = 0x14;
    iscsi[31] = 0x18;
    iscsi[32] = 0x28;
    iscsi[40] = 0x02;
    let cases: [(&[u8], u32); 5] = [
        (&[0u8; 32], 0x8a9136aa),
        (&[0xffu8; 32], 0x62a8ab43),
        (&ascending, 0x46dd794e),
        (&descending, 0x113fdb5c),
        (&iscsi, 0xd9963a56),
    ];
    for (data, expected) in cases {
        assert_eq!(crc32c::value(data), expected);
        assert_eq!(::crc32c::crc32c(data), expected);
    }
    assert_eq!(
        crc32c::value(b"hello world"),
        crc32c::extend(crc32c::value(b"hello "), b"world")
    );
}

/// Whole-buffer and split (extend) CRCs of random data agree with the `crc32c` crate.
#[test]
fn crc32c_equals_leveldb() {
    if !require_leveldb() {
        return;
    }
    let inputs = (
        prop::collection::vec(any::<u8>(), 0..=4096),
        any::<prop::sample::Index>(),
    );
    common::check("tests/regressions/crc32c.txt", inputs, |(data, split)| {
        let expected = crc32c::value(&data);
        prop_assert_eq!(::crc32c::crc32c(&data), expected);
        let at = split.index(data.len() + 1);
        let (a, b) = data.split_at(at);
        prop_assert_eq!(crc32c::extend(crc32c::value(a), b), expected);
        prop_assert_eq!(::crc32c::crc32c_append(::crc32c::crc32c(a), b), expected);
        Ok(())
    });
}
