//! LevelDB's table builder and reader through the wrappers: tables built by LevelDB read
//! back by LevelDB against a `BTreeMap` model, the filtered lookup's read-or-skip report,
//! checksum verification of corrupted blocks, and the inputs the wrappers refuse.

use crate::common;

use std::collections::BTreeMap;

use leveltable_interop::table::{
    Compression, KeyComparator, Table, TableBuilder, TableOptions, read_block,
};
use leveltable_interop::{Error, StatusCode, require_leveldb};
use proptest::prelude::*;

fn build(options: &TableOptions, entries: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let mut builder = TableBuilder::new(options).expect("builder");
    for (k, v) in entries {
        builder.add(k, v).expect("add");
    }
    assert_eq!(builder.num_entries(), entries.len() as u64);
    builder.finish().expect("finish")
}

fn numbered(n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    (0..n)
        .map(|i| {
            let value = format!("value-{i}").repeat(1 + i % 7);
            (format!("key{i:06}").into_bytes(), value.into_bytes())
        })
        .collect()
}

fn options(compression: Compression, bloom_bits_per_key: u32) -> TableOptions {
    TableOptions {
        block_size: 1024,
        block_restart_interval: 16,
        compression,
        bloom_bits_per_key,
        ..TableOptions::default()
    }
}

fn status_code(e: &Error) -> Option<StatusCode> {
    match e {
        Error::Status { code, .. } => Some(*code),
        _ => None,
    }
}

/// The size of the data block at offset 0: the next block starts 5 trailer bytes after it,
/// and `ApproximateOffsetOf` reports the offset of the block holding a key.
fn first_block_size(table: &Table, entries: &BTreeMap<Vec<u8>, Vec<u8>>) -> u64 {
    let next = entries
        .keys()
        .map(|k| table.approximate_offset_of(k).unwrap())
        .find(|&o| o > 0)
        .expect("more than one data block");
    next - 5
}

#[test]
fn reads_back_every_entry() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(1000);
    for compression in [Compression::None, Compression::Snappy] {
        for bits in [0, 10] {
            let opts = options(compression, bits);
            let file = build(&opts, &entries);
            let table = Table::open(&file, &opts).unwrap();
            let read: BTreeMap<_, _> = table.entries(true).unwrap().into_iter().collect();
            assert_eq!(read, entries);
            for (k, v) in &entries {
                assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
            }
            assert_eq!(table.get(b"key000500x").unwrap(), None);
            assert_eq!(table.get(b"").unwrap(), None);
            assert_eq!(table.get(b"zzz").unwrap(), None);
        }
    }
}

#[test]
fn snappy_compresses_repetitive_blocks() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(1000);
    let plain = build(&options(Compression::None, 0), &entries);
    let snappy = build(&options(Compression::Snappy, 0), &entries);
    assert!(
        snappy.len() < plain.len() / 2,
        "{} vs {}",
        snappy.len(),
        plain.len()
    );
}

#[test]
fn iterator_moves_both_ways() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(300);
    let opts = options(Compression::Snappy, 10);
    let table = Table::open(&build(&opts, &entries), &opts).unwrap();
    let mut iter = table.iter(true);
    assert!(!iter.valid());
    // Stepping an unpositioned iterator is a no-op, not an assertion failure.
    iter.next();
    iter.prev();
    assert_eq!(iter.entry(), None);

    iter.seek_to_last();
    let mut backwards = Vec::new();
    while let Some((k, v)) = iter.entry() {
        backwards.push((k.to_vec(), v.to_vec()));
        iter.prev();
    }
    let mut expected: Vec<_> = entries.clone().into_iter().collect();
    expected.reverse();
    assert_eq!(backwards, expected);

    iter.seek(b"key000099x").unwrap();
    assert_eq!(iter.key(), Some(&b"key000100"[..]));
    iter.prev();
    assert_eq!(iter.key(), Some(&b"key000099"[..]));
    iter.seek(b"key999").unwrap();
    assert!(!iter.valid());
    iter.seek(b"").unwrap();
    assert_eq!(iter.key(), Some(&b"key000000"[..]));
    iter.status().unwrap();
}

#[test]
fn empty_table() {
    if !require_leveldb() {
        return;
    }
    for bits in [0, 10] {
        let opts = options(Compression::Snappy, bits);
        let file = TableBuilder::new(&opts).unwrap().finish().unwrap();
        let table = Table::open(&file, &opts).unwrap();
        assert!(table.entries(true).unwrap().is_empty());
        let lookup = table.lookup(b"anything", true).unwrap();
        assert_eq!(lookup.entry, None);
        assert!(!lookup.block_read);
    }
}

/// With a Bloom filter, most absent keys are answered without reading a data block;
/// without one, every key inside the table's range reads its block; present keys always
/// read it.
#[test]
fn lookup_reports_read_or_skip() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(1000);
    let absent: Vec<Vec<u8>> = (0..999)
        .map(|i| format!("key{i:06}a").into_bytes())
        .collect();
    for compression in [Compression::None, Compression::Snappy] {
        let filtered = options(compression, 10);
        let table = Table::open(&build(&filtered, &entries), &filtered).unwrap();
        for k in entries.keys() {
            let lookup = table.lookup(k, true).unwrap();
            assert!(lookup.block_read);
            assert_eq!(lookup.entry.map(|e| e.0).as_ref(), Some(k));
        }
        let mut skipped = 0;
        for k in &absent {
            let before = table.block_reads();
            let lookup = table.lookup(k, true).unwrap();
            assert_eq!(table.block_reads() - before, u64::from(lookup.block_read));
            if lookup.block_read {
                // The candidate block was searched: the callback saw the next entry.
                assert!(lookup.entry.is_some_and(|(found, _)| found > *k));
            } else {
                assert_eq!(lookup.entry, None);
                skipped += 1;
            }
        }
        // 10 bits per key: about 1% false positives.
        assert!(skipped > 950, "only {skipped} of 999 skipped");

        let unfiltered = options(compression, 0);
        let table = Table::open(&build(&unfiltered, &entries), &unfiltered).unwrap();
        assert!(
            absent
                .iter()
                .all(|k| table.lookup(k, true).unwrap().block_read)
        );
        // Past the last index entry nothing is read, filter or not.
        let past = table.lookup(b"zzzz", true).unwrap();
        assert!(!past.block_read);
        assert_eq!(past.entry, None);
    }
}

#[test]
fn file_builder_and_reader() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.ldb");
    let entries = numbered(500);
    let opts = options(Compression::Snappy, 10);
    let mut builder = TableBuilder::create(&path, &opts).unwrap();
    for (k, v) in &entries {
        builder.add(k, v).unwrap();
    }
    let written = builder.file_size();
    let bytes = builder.finish().unwrap();
    assert!(bytes.len() as u64 > written);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(
        bytes,
        build(&opts, &entries),
        "file and memory builders agree"
    );

    let table = Table::open_file(&path, &opts).unwrap();
    let opened = table.block_reads();
    // Footer, index block, metaindex block, filter block.
    assert_eq!(opened, 4);
    let read: BTreeMap<_, _> = table.entries(true).unwrap().into_iter().collect();
    assert_eq!(read, entries);
    assert!(Table::open_file(&dir.path().join("missing.ldb"), &opts).is_err());
}

/// Dropping a builder before `finish` abandons the table (LevelDB asserts that one of the
/// two happened) and closes its file.
#[test]
fn unfinished_builders_drop_cleanly() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abandoned.ldb");
    let opts = options(Compression::Snappy, 10);
    let entries = numbered(100);
    let mut on_disk = TableBuilder::create(&path, &opts).unwrap();
    let mut in_memory = TableBuilder::new(&opts).unwrap();
    for (k, v) in &entries {
        on_disk.add(k, v).unwrap();
        in_memory.add(k, v).unwrap();
    }
    let written = on_disk.file_size();
    drop(on_disk);
    drop(in_memory);
    // The data blocks written so far stay; no index or footer was added.
    assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
    assert!(Table::open_file(&path, &opts).is_err());
}

/// `flush` cuts a data block early, like LevelDB's own compaction does between files.
#[test]
fn flush_cuts_a_block() {
    if !require_leveldb() {
        return;
    }
    let opts = options(Compression::None, 0);
    let mut builder = TableBuilder::new(&opts).unwrap();
    builder.add(b"a", b"1").unwrap();
    builder.flush().unwrap();
    let after_flush = builder.file_size();
    builder.add(b"b", b"2").unwrap();
    let file = builder.finish().unwrap();
    // "a" alone: 1 shared + 1 unshared + 1 value-length varints, key, value, one restart,
    // restart count, then the 5-byte trailer.
    assert_eq!(after_flush, 3 + 1 + 1 + 4 + 4 + 5);
    let table = Table::open(&file, &opts).unwrap();
    assert_eq!(table.approximate_offset_of(b"b").unwrap(), after_flush);
}

#[test]
fn corrupted_blocks_are_rejected_with_checksums() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(1000);
    for compression in [Compression::None, Compression::Snappy] {
        let opts = options(compression, 10);
        let file = build(&opts, &entries);
        let table = Table::open(&file, &opts).unwrap();
        let size = first_block_size(&table, &entries);
        let block = read_block(&file, 0, size, true).unwrap();
        assert!(block.len() as u64 >= size, "decompressed block");

        for at in [0, 1, size / 2, size - 1, size, size + 1, size + 4] {
            let mut bad = file.clone();
            bad[at as usize] ^= 0x20;
            let err = read_block(&bad, 0, size, true).unwrap_err();
            assert_eq!(
                err.to_string(),
                "interop: leveldb status Corruption: block checksum mismatch"
            );
            // The table opens (the first data block is not read at open) but a verified scan
            // and a verified lookup in that block fail.
            let table = Table::open(&bad, &opts).unwrap();
            assert!(table.entries(true).unwrap_err().is_corruption());
            assert!(
                table
                    .lookup(b"key000000", true)
                    .unwrap_err()
                    .is_corruption()
            );
        }
        // The block type byte with checksums off.
        let mut bad = file.clone();
        bad[size as usize] = 7;
        let err = read_block(&bad, 0, size, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "interop: leveldb status Corruption: bad block type"
        );
    }
}

#[test]
fn malformed_files_and_handles() {
    if !require_leveldb() {
        return;
    }
    let entries = numbered(100);
    let opts = TableOptions {
        paranoid_checks: true,
        ..options(Compression::None, 10)
    };
    let file = build(&opts, &entries);

    let short = Table::open(&file[..47], &opts).unwrap_err();
    assert_eq!(
        short.to_string(),
        "interop: leveldb status Corruption: file is too short to be an sstable"
    );
    let mut magic = file.clone();
    let last = magic.len() - 1;
    magic[last] ^= 1;
    let err = Table::open(&magic, &opts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "interop: leveldb status Corruption: not an sstable (bad magic number)"
    );

    // The index block sits right before the footer; with paranoid checks a flipped byte in
    // it fails the open.
    let mut index = file.clone();
    let at = file.len() - 48 - 10;
    index[at] ^= 0x01;
    assert!(Table::open(&index, &opts).unwrap_err().is_corruption());

    // Handles past the end, including sizes whose size + 5 would wrap in LevelDB.
    for (offset, size) in [
        (0, file.len() as u64),
        (file.len() as u64, 0),
        (0, u64::MAX),
        (0, u64::MAX - 4),
    ] {
        let err = read_block(&file, offset, size, true).unwrap_err();
        assert_eq!(
            status_code(&err),
            Some(StatusCode::Corruption),
            "{offset} {size}: {err}"
        );
    }
}

#[test]
fn refuses_what_leveldb_asserts_on() {
    if !require_leveldb() {
        return;
    }
    let opts = options(Compression::None, 10);
    let bad = TableOptions {
        block_restart_interval: 0,
        ..opts.clone()
    };
    assert!(matches!(
        TableBuilder::new(&bad),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        Table::open(&[0; 64], &bad),
        Err(Error::Rejected { .. })
    ));

    let mut builder = TableBuilder::new(&opts).unwrap();
    builder.add(b"b", b"1").unwrap();
    assert!(matches!(
        builder.add(b"b", b"2"),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        builder.add(b"a", b"2"),
        Err(Error::Rejected { .. })
    ));
    builder.add(b"c", b"3").unwrap();
    assert_eq!(builder.num_entries(), 2);
    let table = Table::open(&builder.finish().unwrap(), &opts).unwrap();
    assert_eq!(
        table.entries(true).unwrap(),
        vec![
            (b"b".to_vec(), b"1".to_vec()),
            (b"c".to_vec(), b"3".to_vec())
        ]
    );

    let internal = TableOptions {
        comparator: KeyComparator::InternalKey,
        ..opts
    };
    let mut builder = TableBuilder::new(&internal).unwrap();
    assert!(matches!(
        builder.add(b"short", b""),
        Err(Error::Rejected { .. })
    ));
    builder.add(&internal_key(b"user", 1, 1), b"v").unwrap();
    let table = Table::open(&builder.finish().unwrap(), &internal).unwrap();
    assert!(matches!(
        table.lookup(b"1234567", true),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        table.iter(true).seek(b""),
        Err(Error::Rejected { .. })
    ));
    assert!(matches!(
        table.approximate_offset_of(b"x"),
        Err(Error::Rejected { .. })
    ));
}

/// A user key followed by LevelDB's 8-byte tag `sequence << 8 | type`, little-endian.
fn internal_key(user: &[u8], sequence: u64, kind: u8) -> Vec<u8> {
    let mut k = user.to_vec();
    k.extend_from_slice(&((sequence << 8) | u64::from(kind)).to_le_bytes());
    k
}

/// Tables as a database writes them: internal keys (newer sequence numbers first within a
/// user key) and a Bloom filter over user keys.
#[test]
fn internal_key_tables() {
    if !require_leveldb() {
        return;
    }
    let opts = TableOptions {
        comparator: KeyComparator::InternalKey,
        ..options(Compression::Snappy, 10)
    };
    let mut builder = TableBuilder::new(&opts).unwrap();
    let mut expected = Vec::new();
    for i in 0..500u64 {
        let user = format!("user{i:05}");
        for seq in [3 * i + 2, 3 * i + 1] {
            let k = internal_key(user.as_bytes(), seq, 1);
            let v = format!("{user}@{seq}").into_bytes();
            builder.add(&k, &v).unwrap();
            expected.push((k, v));
        }
    }
    // Same user key, older sequence after newer: in order. Newer after older: refused.
    assert!(matches!(
        builder.add(&internal_key(b"user00499", 10_000, 1), b""),
        Err(Error::Rejected { .. })
    ));
    let table = Table::open(&builder.finish().unwrap(), &opts).unwrap();
    assert_eq!(table.entries(true).unwrap(), expected);

    // A lookup at the highest sequence finds the newest version of a user key.
    let max_seq = (1u64 << 56) - 1;
    let hit = table
        .lookup(&internal_key(b"user00042", max_seq, 1), true)
        .unwrap();
    assert!(hit.block_read);
    assert_eq!(hit.entry.unwrap().1, b"user00042@128".to_vec());
    // Absent user keys: the filter covers user keys, so most lookups skip the block.
    let skipped = (0..500)
        .filter(|i| {
            let k = internal_key(format!("user{i:05}x").as_bytes(), max_seq, 1);
            !table.lookup(&k, true).unwrap().block_read
        })
        .count();
    assert!(skipped > 450, "only {skipped} of 500 skipped");
}

fn entry_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..=16),
        prop::collection::vec(prop::sample::select(vec![0u8, 0xff]), 0..=4),
        // A long shared prefix.
        prop::collection::vec(any::<u8>(), 0..=4).prop_map(|tail| {
            let mut k = vec![b'p'; 40];
            k.extend(tail);
            k
        }),
    ]
}

fn table_options() -> impl Strategy<Value = TableOptions> {
    (
        prop_oneof![1usize..=64, 64usize..=8192],
        1u32..=32,
        prop::bool::ANY,
        0u32..=30,
    )
        .prop_map(
            |(block_size, block_restart_interval, snappy, bloom_bits_per_key)| TableOptions {
                block_size,
                block_restart_interval,
                compression: if snappy {
                    Compression::Snappy
                } else {
                    Compression::None
                },
                bloom_bits_per_key,
                comparator: KeyComparator::Bytewise,
                paranoid_checks: true,
            },
        )
}

fn entries() -> impl Strategy<Value = BTreeMap<Vec<u8>, Vec<u8>>> {
    prop::collection::btree_map(
        entry_key(),
        prop::collection::vec(any::<u8>(), 0..=300),
        0..=200,
    )
}

/// A table LevelDB builds from random entries (empty keys and values, 0x00/0xff bytes, long
/// shared prefixes, zero entries) with random options reads back in both directions, point
/// lookups and seeks agree with a `BTreeMap` model, and a lookup that skips its block never
/// misses a present key.
#[test]
fn leveldb_tables_match_model() {
    if !require_leveldb() {
        return;
    }
    let inputs = (
        table_options(),
        entries(),
        prop::collection::vec(entry_key(), 0..=30),
    );
    common::check(
        "tests/regressions/table.txt",
        inputs,
        |(opts, entries, probes)| {
            let file = build(&opts, &entries);
            let table = Table::open(&file, &opts).unwrap();
            let forward: Vec<_> = table.entries(true).unwrap();
            prop_assert_eq!(&forward, &entries.clone().into_iter().collect::<Vec<_>>());

            let mut iter = table.iter(true);
            iter.seek_to_last();
            for (k, v) in entries.iter().rev() {
                prop_assert_eq!(iter.entry(), Some((k.as_slice(), v.as_slice())));
                iter.prev();
            }
            prop_assert!(!iter.valid());

            for k in entries.keys().chain(&probes) {
                let expected = entries.get(k);
                prop_assert_eq!(table.get(k).unwrap(), expected.cloned());
                let lookup = table.lookup(k, true).unwrap();
                if expected.is_some() {
                    prop_assert!(lookup.block_read);
                }
                if !lookup.block_read {
                    prop_assert_eq!(lookup.entry, None);
                }
                iter.seek(k).unwrap();
                let next = entries.range(k.clone()..).next();
                prop_assert_eq!(
                    iter.entry(),
                    next.map(|(k, v)| (k.as_slice(), v.as_slice()))
                );
            }
            iter.status().unwrap();
            Ok(())
        },
    );
}
