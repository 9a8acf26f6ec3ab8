//! Corruption torture: every bit of small tables flipped, sampled bits of a larger one, and
//! every truncation. Whatever the damage, opening, gets, seeks, scans and `verify` never
//! panic and never return a value that was not written for that key; with checksums on, every
//! flip outside the footer's zero padding is reported by `verify`.
//!
//! Two kinds of flip are harmless and go unnoticed, by LevelDB as by us: any bit of the
//! footer's zero padding (between the end of the two varint handles and the magic number),
//! which no reader interprets; and the continuation bit of the handles' last byte, which makes
//! that varint absorb one zero padding byte and so decode to the same value.

use std::collections::BTreeMap;

use leveltable_table::format::{FOOTER_LEN, Footer};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn build(entries: usize, compression: Compression, filter: bool) -> (Vec<u8>, Model) {
    let mut options = BuildOptions::default()
        .block_size(256)
        .block_restart_interval(4)
        .compression(compression);
    if filter {
        options = options.filter_policy(BloomFilterPolicy::new(10));
    }
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    let mut model = Model::new();
    for i in 0..entries {
        let key = format!("key{:06}", i * 3).into_bytes();
        // Repetitive values so snappy really compresses.
        let value = format!("value-{i}-").repeat(1 + i % 4).into_bytes();
        builder.add(&key, &value).unwrap();
        model.insert(key, value);
    }
    builder.finish().unwrap();
    (builder.into_inner(), model)
}

fn read_options(verify: bool) -> ReadOptions {
    ReadOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .verify_checksums(verify)
}

/// The byte range of the footer's zero padding; the byte before it ends the last handle.
fn footer_padding(table: &[u8]) -> std::ops::Range<usize> {
    let footer_at = table.len() - FOOTER_LEN;
    let footer = Footer::decode_from(&mut &table[footer_at..]).unwrap();
    let mut handles = Vec::new();
    footer.metaindex.encode_to(&mut handles);
    footer.index.encode_to(&mut handles);
    footer_at + handles.len()..table.len() - 8
}

/// Reads everything `damaged` offers. With checksum verification on, checks that every value
/// returned was written for its key; with it off, a flipped value bit cannot be noticed, so
/// only the absence of panics is checked. Returns whether any read reported an error.
fn read_all_checked(damaged: &[u8], model: &Model, verify: bool) -> bool {
    let check = |key: &[u8], value: &[u8], what: &str| {
        if verify {
            assert_eq!(
                model.get(key).map(Vec::as_slice),
                Some(value),
                "{what} returned a value not written for {:?}",
                String::from_utf8_lossy(key)
            );
        }
    };
    let Ok(table) = Table::open(damaged, read_options(verify)) else {
        return true;
    };
    let mut saw_error = false;
    let absent: [&[u8]; 3] = [b"", b"key000001", b"zzz"];
    for key in model.keys().map(Vec::as_slice).chain(absent) {
        match table.get(key) {
            Ok(Some(value)) => check(key, &value, "get"),
            Ok(None) => {}
            Err(_) => saw_error = true,
        }
    }
    for entry in table.entries() {
        match entry {
            Ok((key, value)) => check(&key, &value, "scan"),
            Err(_) => {
                saw_error = true;
                break;
            }
        }
    }
    let mut iter = table.iter();
    iter.seek(b"key000100");
    if iter.valid() {
        check(iter.key(), iter.value(), "seek");
    }
    iter.seek_to_last();
    let mut steps = 0;
    while iter.valid() && steps < model.len() + 1 {
        check(iter.key(), iter.value(), "reverse scan");
        iter.prev();
        steps += 1;
    }
    saw_error |= iter.status().is_err();
    saw_error |= table.verify().is_err();
    saw_error
}

/// Flips the given bits one at a time; returns how many flips were tried.
fn flip_bits(table: &[u8], model: &Model, bits: impl Iterator<Item = usize>) -> usize {
    let padding = footer_padding(table);
    let mut flips = 0;
    let mut damaged = table.to_vec();
    for bit in bits {
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        damaged[byte] ^= mask;
        let detected = read_all_checked(&damaged, model, true);
        if flips % 5 == 0 {
            read_all_checked(&damaged, model, false);
        }
        let verify_ok = Table::open(&damaged[..], read_options(true))
            .and_then(|t| t.verify())
            .is_ok();
        let absorbs_padding = byte + 1 == padding.start && mask == 0x80;
        if padding.contains(&byte) || absorbs_padding {
            assert!(verify_ok && !detected, "flip in byte {byte} is harmless");
        } else {
            assert!(
                !verify_ok,
                "flip of bit {} in byte {byte} went unnoticed",
                bit % 8
            );
        }
        damaged[byte] ^= mask;
        flips += 1;
    }
    flips
}

fn every_bit(entries: usize, compression: Compression, filter: bool) {
    let (table, model) = build(entries, compression, filter);
    assert!(
        !read_all_checked(&table, &model, true),
        "the intact table reads cleanly"
    );
    let flips = flip_bits(&table, &model, 0..table.len() * 8);
    println!(
        "{compression:?} filter={filter}: {flips} bit flips, {} bytes",
        table.len()
    );
}

#[test]
fn every_bit_uncompressed_with_filter() {
    every_bit(40, Compression::None, true);
}

#[test]
fn every_bit_uncompressed_without_filter() {
    every_bit(40, Compression::None, false);
}

#[test]
fn every_bit_snappy_with_filter() {
    every_bit(40, Compression::Snappy, true);
}

#[test]
fn every_bit_snappy_without_filter() {
    every_bit(40, Compression::Snappy, false);
}

#[test]
fn sampled_bits_of_a_larger_plain_table() {
    sampled_bits_of_a_larger_table(Compression::None);
}

#[test]
fn sampled_bits_of_a_larger_snappy_table() {
    sampled_bits_of_a_larger_table(Compression::Snappy);
}

/// About 1,500 bits of a 2,000-entry table flipped in turn, one at a time.
fn sampled_bits_of_a_larger_table(compression: Compression) {
    let (table, model) = build(2_000, compression, true);
    let bits = table.len() * 8;
    // A fixed stride that is coprime to 8 visits every bit position within a byte.
    let flips = flip_bits(&table, &model, (0..bits).step_by((bits / 1_500) | 1));
    println!(
        "{compression:?}: {flips} sampled flips of a {} byte table",
        table.len()
    );
}

#[test]
fn every_truncation() {
    for compression in [Compression::None, Compression::Snappy] {
        let (table, model) = build(60, compression, true);
        for len in 0..table.len() {
            let truncated = &table[..len];
            assert!(
                Table::open(truncated, read_options(true)).is_err(),
                "length {len}"
            );
            read_all_checked(truncated, &model, false);
        }
        println!("{compression:?}: {} truncations, none opened", table.len());
    }
}

/// A table in memory checks each block's checksum the first time it reads it and
/// remembers it, block by block: with every other block read (and checked) first, a get
/// from the one block whose stored checksum is wrong (its contents intact, so only the
/// checksum tells) still fails, every time, single or batched; the others still answer.
#[test]
fn blocks_checked_once_are_remembered_one_by_one() {
    for compression in [Compression::None, Compression::Snappy] {
        let (mut bytes, model) = build(2000, compression, true);
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let probe = Table::open(bytes.clone(), ReadOptions::default()).unwrap();
        let block_of = |k: &[u8]| probe.data_block_offset_for(k).unwrap();
        let victim = keys[1000];
        let offset = block_of(victim).unwrap();
        // Blocks are stored end to end, each followed by its type byte and checksum: the
        // next block starts right after this one's checksum.
        let next = keys
            .iter()
            .filter_map(|k| block_of(k))
            .find(|&o| o > offset)
            .unwrap();
        bytes[next as usize - 1] ^= 0x10;
        let unchecked = ReadOptions::default().verify_checksums(false);
        let unchecked = Table::open(bytes.clone(), unchecked).unwrap();
        assert_eq!(unchecked.get(victim).unwrap().as_ref(), model.get(victim));
        let options = ReadOptions::default()
            .verify_checksums(true)
            .filter_policy(BloomFilterPolicy::new(10));
        let table = Table::open(bytes, options).unwrap();
        let healthy: Vec<&Vec<u8>> = keys
            .iter()
            .copied()
            .filter(|k| block_of(k) != Some(offset))
            .collect();
        assert!(healthy.len() < keys.len() && healthy.len() > 1900);
        for _ in 0..2 {
            for k in &healthy {
                assert_eq!(
                    table.get(k).unwrap().as_ref(),
                    model.get(*k),
                    "{compression:?}"
                );
            }
            assert!(table.get(victim).is_err(), "{compression:?}");
            assert!(
                table.get_many(&[keys[0], victim]).is_err(),
                "{compression:?}"
            );
        }
    }
}
