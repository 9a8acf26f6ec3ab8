//! LevelDB 1.23 reads the dual-filter tables leveltable writes: a table carrying both
//! `filter.leveldb.BuiltinBloomFilter2` and `filter.leveltable.LocalBloom64` opens in
//! LevelDB, which uses its own filter and ignores the other, and every get, lookup and scan
//! is correct. Our reader on a LevelDB-written table keeps using the LevelDB filter.

use std::collections::BTreeMap;

use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy};
use leveltable_interop::require_leveldb;
use leveltable_interop::table::{Compression, Table as LevelDbTable, TableBuilder, TableOptions};
use leveltable_table::{
    BuildOptions, Compression as OurCompression, ReadOptions, Table, TableBuilder as OurBuilder,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Even big-endian integers: the keys LevelDB's filter handles worst.
fn model(n: u64) -> Model {
    (0..n)
        .map(|i| {
            (
                (2 * i).to_be_bytes().to_vec(),
                format!("value-{i}").repeat(8).into_bytes(),
            )
        })
        .collect()
}

fn build_dual(model: &Model, compression: OurCompression) -> Vec<u8> {
    let options = BuildOptions::default()
        .compression(compression)
        .filter_policy(BloomFilterPolicy::new(10))
        .extra_filter_policy(CacheLocalBloomPolicy::new(10));
    let mut builder = OurBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in model {
        builder.add(k, v).unwrap();
    }
    builder.finish().unwrap();
    builder.into_inner()
}

#[test]
fn leveldb_reads_dual_filter_tables() {
    if !require_leveldb() {
        return;
    }
    let model = model(20_000);
    for compression in [OurCompression::None, OurCompression::Snappy] {
        let bytes = build_dual(&model, compression);
        let options = TableOptions {
            bloom_bits_per_key: 10,
            ..TableOptions::default()
        };
        let table = LevelDbTable::open(&bytes, &options).unwrap();

        // Every entry, in order.
        let entries = table.entries(true).unwrap();
        assert_eq!(entries, model.clone().into_iter().collect::<Vec<_>>());

        // Every present key found; absent neighbours not found; LevelDB's own filter decides
        // which absent gets read a block, just as on a table with only its filter.
        let mut skipped = 0;
        for (i, (k, v)) in model.iter().enumerate() {
            assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
            if i % 10 == 0 {
                let absent = (u64::from_be_bytes(k[..].try_into().unwrap()) + 1).to_be_bytes();
                let lookup = table.lookup(&absent, true).unwrap();
                assert_ne!(
                    lookup.entry.as_ref().map(|(k, _)| &k[..]),
                    Some(&absent[..])
                );
                skipped += u64::from(!lookup.block_read);
            }
        }
        // LevelDB used a filter (it skips some reads) even though another one sits beside it.
        assert!(skipped > 0, "{compression:?}: LevelDB skipped no reads");
    }
}

#[test]
fn our_reader_keeps_leveldbs_filter_on_leveldb_tables() {
    if !require_leveldb() {
        return;
    }
    let model = model(5_000);
    let options = TableOptions {
        bloom_bits_per_key: 10,
        compression: Compression::Snappy,
        ..TableOptions::default()
    };
    let mut builder = TableBuilder::new(&options).unwrap();
    for (k, v) in &model {
        builder.add(k, v).unwrap();
    }
    let bytes = builder.finish().unwrap();
    let read = ReadOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .extra_filter_policy(CacheLocalBloomPolicy::new(10));
    let table = Table::open(bytes, read).unwrap();
    assert_eq!(
        table.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    for (k, v) in &model {
        assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
    }
    assert!(table.counters().filter_checks > 0);
}
