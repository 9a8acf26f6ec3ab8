//! Tables with LevelDB's filter and leveltable's cache-local filter side by side.
//!
//! On a table of consecutive even big-endian u64 keys, absent gets of the odd neighbours get
//! past LevelDB's Bloom filter far more often than its bits per key promise; the extra
//! `leveltable.LocalBloom64` filter, preferred by the reader, spares almost every read.

use leveltable_filter_policy::CacheLocalBloomPolicy;
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};

const ENTRIES: u64 = 1_000_000;
const PROBES: u64 = 100_000;

fn build(extra: bool) -> Vec<u8> {
    let mut options = BuildOptions::default()
        .compression(Compression::None)
        .filter_policy(BloomFilterPolicy::new(10));
    if extra {
        options = options.extra_filter_policy(CacheLocalBloomPolicy::new(10));
    }
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    for i in 0..ENTRIES {
        builder.add(&(2 * i).to_be_bytes(), &[b'v'; 100]).unwrap();
    }
    builder.finish().unwrap();
    builder.into_inner()
}

/// Data blocks read by `PROBES` gets of `key(i)` spread over the table.
fn blocks_read(table: &Table<Vec<u8>>, key: impl Fn(u64) -> u64, present: bool) -> u64 {
    table.reset_counters();
    for j in 0..PROBES {
        let i = j * (ENTRIES / PROBES);
        let found = table.get(&key(i).to_be_bytes()).unwrap();
        assert_eq!(found.is_some(), present);
    }
    table.counters().data_blocks_read
}

#[test]
fn extra_filter_spares_reads_that_leveldbs_filter_does_not() {
    let options = || {
        ReadOptions::default()
            .filter_policy(BloomFilterPolicy::new(10))
            .extra_filter_policy(CacheLocalBloomPolicy::new(10))
    };

    let leveldb_only = Table::open(build(false), options()).unwrap();
    assert_eq!(
        leveldb_only.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    let present = blocks_read(&leveldb_only, |i| 2 * i, true);
    let absent = blocks_read(&leveldb_only, |i| 2 * i + 1, false);
    println!(
        "LevelDB filter only: {absent} blocks read for {PROBES} absent gets, {present} for present \
         ({:.2}%)",
        100.0 * absent as f64 / present as f64
    );

    let dual = Table::open(build(true), options()).unwrap();
    assert_eq!(
        dual.properties().filter_policy.as_deref(),
        Some("leveltable.LocalBloom64")
    );
    assert_eq!(dual.properties().filters.len(), 2);
    let dual_present = blocks_read(&dual, |i| 2 * i, true);
    let dual_absent = blocks_read(&dual, |i| 2 * i + 1, false);
    println!(
        "with LocalBloom64: {dual_absent} blocks read for {PROBES} absent gets, {dual_present} for \
         present ({:.2}%)",
        100.0 * dual_absent as f64 / dual_present as f64
    );

    assert_eq!(present, PROBES);
    assert_eq!(dual_present, PROBES);
    assert!(
        dual_absent * 1000 <= dual_present * 15,
        "at most 1.5%: {dual_absent}"
    );
    assert!(
        absent > 5 * dual_absent,
        "LevelDB's filter: {absent}, ours: {dual_absent}"
    );
}

#[test]
fn extra_filter_leaves_the_data_blocks_unchanged() {
    // Adding the extra policy changes only what follows the data blocks.
    let plain = build(false);
    let dual = build(true);
    let data_end = {
        let table = Table::open(plain.clone(), ReadOptions::default()).unwrap();
        table.properties().data_size as usize
    };
    assert_eq!(plain[..data_end], dual[..data_end]);
    assert!(dual.len() > plain.len());
}
