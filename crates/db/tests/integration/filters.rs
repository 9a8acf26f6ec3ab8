//! A database reads each table with the filter it prefers: a table built with the
//! cache-local filter as well as LevelDB's Bloom filter answers gets from the cache-local
//! one, which on structured keys sends far fewer absent keys to a data block.

use std::sync::Arc;

use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions};
use leveltable_filter_policy::CacheLocalBloomPolicy;
use leveltable_table::Cache;

/// Builds a database of `n` big-endian even numbers, then looks up `queries` odd ones
/// through a fresh block cache; returns how many data blocks the lookups read (the blocks
/// the cache then holds: it is large enough to keep all of them).
fn blocks_read_for_absent_keys(options: BulkOptions, n: u64, queries: u64) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut b = DbBuilder::create(&path, options).unwrap();
    for i in 0..n {
        b.add(&(2 * i).to_be_bytes(), b"v").unwrap();
    }
    b.finish().unwrap();
    let cache = Cache::shared(1 << 30);
    let db = Db::open(&path, DbOptions::default().block_cache(Arc::clone(&cache))).unwrap();
    for q in 0..queries {
        // Odd keys spread over the whole range.
        let key = (2 * (q * (n / queries)) + 1).to_be_bytes();
        assert_eq!(db.get(&key).unwrap(), None);
    }
    cache.len()
}

#[test]
fn gets_use_the_cache_local_filter_when_a_table_has_one() {
    // 200,000 keys fill about 590 data blocks; 20,000 absent keys.
    let (n, queries) = (200_000, 20_000);
    let bloom = blocks_read_for_absent_keys(BulkOptions::default(), n, queries);
    let both = blocks_read_for_absent_keys(
        BulkOptions::default().table(
            BulkOptions::default()
                .table
                .cache_local_bits_per_key(Some(10)),
        ),
        n,
        queries,
    );
    // The cache-local filter's design rate at 10 bits per key: on these structured keys
    // it holds, where LevelDB's Bloom filter passes about 9% of them (some 1,800 reads,
    // 445 distinct blocks).
    let expected = CacheLocalBloomPolicy::expected_fp_rate(10.0) * queries as f64;
    assert!(
        (both as f64) < 2.0 * expected,
        "with the cache-local filter {both} blocks were read, about {expected:.0} expected"
    );
    assert!(
        bloom > 3 * both,
        "Bloom filter only: {bloom} blocks; both: {both}"
    );
}
