//! How scans use the block cache: a short scan fills it like a get; a long one stops
//! filling it once it has read a quarter of its capacity, so it does not evict what the
//! lookups use. Compactions never fill it.

use std::path::Path;
use std::sync::Arc;

use leveltable_db::{
    BulkOptions, Db, DbBuilder, DbOptions, Error, WritableDb, WritableOptions, WriteOptions,
};
use leveltable_table::Cache;

const ENTRIES: u64 = 40_000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// 200 bytes that snappy halves: blocks are stored compressed, and only blocks
/// decompressed into memory of their own are cached (uncompressed ones are read in place
/// from the memory map).
fn value(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..200)
        .map(|j| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if j < 100 { x as u8 } else { b'v' }
        })
        .collect()
}

/// Bulk-builds the database `dir` of entries 0 to `n` - 1.
fn bulk_build(dir: &Path, n: u64) {
    let mut builder = DbBuilder::create(dir, BulkOptions::default()).unwrap();
    for i in 0..n {
        builder.add(&key(i), &value(i)).unwrap();
    }
    builder.finish().unwrap();
}

/// Opens the database `dir` with a block cache of its own of `capacity` bytes.
fn open_with_cache(dir: &Path, capacity: u64) -> (Db, Arc<Cache>) {
    let cache = Cache::shared(capacity);
    let db = Db::open(dir, DbOptions::default().block_cache(Arc::clone(&cache))).unwrap();
    (db, cache)
}

/// Reads `db` entry by entry, checking that it holds entries 0 to `n` - 1 in order.
fn assert_entry_by_entry(db: &Db, n: u64) {
    let mut i = 0;
    let mut iter = db.iter();
    while let Some(entry) = iter.next_entry() {
        let (k, v) = entry.unwrap();
        assert_eq!((k, v), (&key(i)[..], &value(i)[..]));
        i += 1;
    }
    assert_eq!(i, n);
}

#[test]
fn long_scans_leave_the_cache_to_lookups() {
    let dir = tempfile::tempdir().unwrap();
    bulk_build(dir.path(), ENTRIES);
    // About 8.6 MB of entries against a 4 MiB cache: a scan that filled the cache would
    // leave it full.
    let capacity = 4u64 << 20;
    let (db, cache) = open_with_cache(dir.path(), capacity);

    // A short scan fills the cache as gets do.
    let short: Vec<_> = db
        .range(key(100)..key(400))
        .collect::<Result<_, Error>>()
        .unwrap();
    assert_eq!(short.len(), 300);
    let after_short = cache.weight();
    assert!(after_short > 0, "a short scan fills the cache");

    assert_entry_by_entry(&db, ENTRIES);
    // Filled up to a quarter of the capacity, and at most one batch (256 KiB) past it.
    let weight = cache.weight();
    assert!(
        weight <= capacity / 4 + (256 << 10) + after_short,
        "{weight} bytes cached after a scan of the whole database"
    );
    assert!(weight > after_short, "the scan's first blocks are cached");
}

#[test]
fn a_scan_that_does_not_fill_the_cache_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    bulk_build(dir.path(), ENTRIES);
    let (db, cache) = open_with_cache(dir.path(), 4 << 20);

    // Short and long, by entries and by batches of entries: all of them, in order.
    let short: Vec<_> = db
        .range(key(100)..key(400))
        .fill_cache(false)
        .collect::<Result<_, Error>>()
        .unwrap();
    assert_eq!(short.len(), 300);
    assert_eq!(short[0], (key(100), value(100)));
    let mut n = 0;
    let mut iter = db.iter().fill_cache(false);
    while iter
        .next_entries(|k, v| {
            assert_eq!((k, v), (&key(n)[..], &value(n)[..]));
            n += 1;
            n % 1000 != 0
        })
        .unwrap()
    {}
    assert_eq!(n, ENTRIES);
    assert_eq!(cache.weight(), 0, "no block was cached");

    // The same scan filling the cache (the default) caches its first blocks.
    let mut iter = db.iter().fill_cache(true);
    while iter.next_entries(|_, _| true).unwrap() {}
    assert!(cache.weight() > 0);
}

#[test]
fn a_cache_of_no_bytes_is_no_cache() {
    let dir = tempfile::tempdir().unwrap();
    bulk_build(dir.path(), ENTRIES / 4);
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    assert_eq!(db.block_cache_bytes(), 8 << 20);
    drop(db);

    let (db, cache) = open_with_cache(dir.path(), 0);
    assert_eq!(db.block_cache_bytes(), 0);
    // Every read works, each block read from its file: the scans in batches, entry by
    // entry and straight from the blocks, and lookups.
    assert_entry_by_entry(&db, ENTRIES / 4);
    let mut n = 0;
    let mut iter = db.range(key(7)..key(9000));
    while iter
        .next_entries(|k, v| {
            assert_eq!((k, v), (&key(n + 7)[..], &value(n + 7)[..]));
            n += 1;
            true
        })
        .unwrap()
    {}
    assert_eq!(n, 9000 - 7);
    for i in [0, 4321, ENTRIES / 4 - 1] {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)));
    }
    assert_eq!(cache.weight(), 0);
}

#[test]
fn compactions_leave_the_cache_to_reads() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::shared(8 << 20);
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(256 << 10)
        .read(DbOptions::default().block_cache(Arc::clone(&cache)));
    let db = WritableDb::open(dir.path(), options).unwrap();
    for i in 0..ENTRIES {
        let i = i.wrapping_mul(7919) % ENTRIES;
        db.put(&key(i), &value(i), WriteOptions::default()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(db.compactions() > 0);
    // The compactions read every block of about 8 MB of tables, none into the cache.
    assert_eq!(cache.weight(), 0);
    assert_eq!(db.get(&key(7)).unwrap(), Some(value(7)));
    assert!(cache.weight() > 0, "a get fills the cache");
}
