//! `leveltable_filter_policy::BloomFilterPolicy` against LevelDB's `NewBloomFilterPolicy`.

use crate::common;

use common::{hex, unhex};
use leveltable_filter_policy::{BloomFilterPolicy as Ours, FilterPolicy};
use leveltable_interop::bloom::BloomFilterPolicy as LevelDb;
use leveltable_interop::require_leveldb;
use proptest::prelude::*;

fn leveldb_filter(bits: usize, keys: &[&[u8]]) -> Vec<u8> {
    let mut dst = Vec::new();
    LevelDb::new(bits)
        .create_filter(keys, &mut dst)
        .expect("create_filter");
    dst
}

/// Filters computed by the linked library match the vectors our crate was written against.
#[test]
fn golden_filters() {
    if !require_leveldb() {
        return;
    }
    assert_eq!(
        hex(&leveldb_filter(10, &[b"hello", b"world"])),
        "114000414410401006"
    );
    assert_eq!(hex(&leveldb_filter(10, &[])), "000000000000000006");
    assert_eq!(hex(&leveldb_filter(30, &[b"a"])), "3870e0c08103070c14");
    assert_eq!(hex(&leveldb_filter(1, &[b"a"])), "000000000000010001");
    assert_eq!(LevelDb::new(10).name(), Ours::new(10).name());
}

/// LevelDB's answers on hand-made filters: too short never matches, a probe count above 30
/// always matches, a zero probe count always matches.
#[test]
fn leveldb_reads_odd_filters() {
    if !require_leveldb() {
        return;
    }
    let p = LevelDb::new(10);
    assert!(!p.key_may_match(b"x", &[]));
    assert!(!p.key_may_match(b"x", &[0x06]));
    assert!(p.key_may_match(b"x", &unhex("0000000000000000ff")));
    assert!(p.key_may_match(b"x", &unhex("000000000000000000")));
    assert!(!p.key_may_match(b"x", &unhex("000000000000000001")));
}

/// The filter is appended after whatever `dst` already holds.
#[test]
fn create_filter_appends() {
    if !require_leveldb() {
        return;
    }
    let mut dst = b"prefix".to_vec();
    LevelDb::new(10)
        .create_filter(&[b"hello", b"world"], &mut dst)
        .unwrap();
    assert_eq!(&dst[..6], b"prefix");
    assert_eq!(hex(&dst[6..]), "114000414410401006");
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..=24),
        // Few distinct bytes, so duplicates and shared prefixes are common.
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x61, 0xff]), 0..=6),
    ]
}

/// Bits per key 0–30 over random key sets (0–300 keys, duplicates allowed): byte-equal
/// filters, also when appended after existing bytes; `key_may_match` agrees on the keys and
/// on random probes, each side reading the other's filter; no false negatives.
#[test]
fn filters_equal_leveldb() {
    if !require_leveldb() {
        return;
    }
    let inputs = (
        0usize..=30,
        prop::collection::vec(key(), 0..=300),
        prop::collection::vec(key(), 0..=40),
        prop::collection::vec(any::<u8>(), 0..=8),
    );
    common::check(
        "tests/regressions/bloom.txt",
        inputs,
        |(bits, keys, probes, prefix)| {
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let theirs = LevelDb::new(bits);
            let ours = Ours::new(bits);

            let mut their_filter = prefix.clone();
            theirs.create_filter(&keys, &mut their_filter).unwrap();
            let mut our_filter = prefix.clone();
            ours.create_filter(&keys, &mut our_filter);
            prop_assert_eq!(hex(&our_filter), hex(&their_filter));

            let their_filter = &their_filter[prefix.len()..];
            let our_filter = &our_filter[prefix.len()..];
            for probe in keys.iter().copied().chain(probes.iter().map(Vec::as_slice)) {
                let answer = theirs.key_may_match(probe, their_filter);
                prop_assert_eq!(ours.key_may_match(probe, their_filter), answer);
                prop_assert_eq!(theirs.key_may_match(probe, our_filter), answer);
                prop_assert_eq!(ours.key_may_match(probe, our_filter), answer);
            }
            for k in &keys {
                prop_assert!(theirs.key_may_match(k, their_filter), "false negative");
            }
            Ok(())
        },
    );
}

/// A policy reads filters made with other bits per key by their stored probe count, and
/// arbitrary bytes (lengths 0–40, any probe byte, including 0 and above 30) get the same
/// answer from both sides.
#[test]
fn foreign_and_garbage_filters() {
    if !require_leveldb() {
        return;
    }
    let inputs = (
        0usize..=30,
        0usize..=30,
        prop::collection::vec(key(), 0..=50),
        prop::collection::vec(any::<u8>(), 0..=40),
        prop::collection::vec(key(), 1..=20),
    );
    common::check(
        "tests/regressions/bloom_foreign.txt",
        inputs,
        |(make_bits, read_bits, keys, garbage, probes)| {
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let filter = leveldb_filter(make_bits, &keys);
            let theirs = LevelDb::new(read_bits);
            let ours = Ours::new(read_bits);
            for probe in keys.iter().copied().chain(probes.iter().map(Vec::as_slice)) {
                prop_assert_eq!(
                    ours.key_may_match(probe, &filter),
                    theirs.key_may_match(probe, &filter)
                );
                prop_assert_eq!(
                    ours.key_may_match(probe, &garbage),
                    theirs.key_may_match(probe, &garbage),
                    "garbage filter {}",
                    hex(&garbage)
                );
            }
            Ok(())
        },
    );
}

/// Batch queries (`keys_may_match`) against filters of 20,000 keys, large enough for the
/// grouped path (up to 62 KB), answer every probe as LevelDB's `KeyMayMatch` does, on
/// LevelDB's filters and ours, for probe counts 1 to 30.
#[test]
fn batch_queries_equal_leveldb() {
    if !require_leveldb() {
        return;
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let keys: Vec<Vec<u8>> = (0..20_000)
        .map(|i| {
            let len = (next() % 24) as usize;
            let mut k = format!("{i:06}").into_bytes();
            k.extend((0..len).map(|_| next() as u8));
            k
        })
        .collect();
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let probes: Vec<Vec<u8>> = (0..3001)
        .map(|i| {
            if i % 2 == 0 {
                keys[(next() % 20_000) as usize].to_vec()
            } else {
                next().to_le_bytes()[..(i % 9)].to_vec()
            }
        })
        .collect();
    let probes: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    for bits in [1, 2, 5, 10, 16, 25, 44] {
        let theirs = LevelDb::new(bits);
        let ours = Ours::new(bits);
        let filter = leveldb_filter(bits, &keys);
        let mut answers = Vec::new();
        ours.keys_may_match(&probes, &filter, &mut answers);
        assert_eq!(answers.len(), probes.len());
        for (probe, &answer) in probes.iter().zip(&answers) {
            assert_eq!(
                answer,
                theirs.key_may_match(probe, &filter),
                "{bits} bits/key, {probe:?}"
            );
        }
        for k in &keys {
            assert!(theirs.key_may_match(k, &filter));
        }
        let mut all_present = Vec::new();
        ours.keys_may_match(&keys, &filter, &mut all_present);
        assert!(
            all_present.iter().all(|&a| a),
            "false negative at {bits} bits/key"
        );
    }
}
