//! Eight threads doing gets and scans on one `Table` with a shared, small block cache agree
//! with the model.

use std::collections::BTreeMap;
use std::sync::Arc;

use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Cache, Compression, ReadOptions, Table, TableBuilder,
};

const fn assert_send_sync<T: Send + Sync>() {}
const _: () = assert_send_sync::<Table<Vec<u8>>>();
const _: () = assert_send_sync::<Table<std::fs::File>>();
const _: () = assert_send_sync::<Cache>();

#[test]
fn eight_threads_agree_with_the_model() {
    let options = BuildOptions::default()
        .block_size(512)
        .compression(Compression::Snappy)
        .filter_policy(BloomFilterPolicy::new(10));
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..20_000u32 {
        let key = format!("key{:08}", i * 2).into_bytes();
        let value = format!("value{i}").repeat(1 + i as usize % 7).into_bytes();
        builder.add(&key, &value).unwrap();
        model.insert(key, value);
    }
    builder.finish().unwrap();
    let bytes = builder.into_inner();

    // A cache far smaller than the table, so threads evict each other's blocks.
    let cache = Cache::shared(64 * 1024);
    let read = ReadOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .block_cache(Arc::clone(&cache));
    let table = Table::open(bytes, read).unwrap();
    let model = &model;
    let table = &table;

    std::thread::scope(|s| {
        for t in 0..8u32 {
            s.spawn(move || {
                let mut x = 0x9e37_79b9u32.wrapping_mul(t + 1);
                for round in 0..4_000 {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    let i = x % 40_000;
                    let key = format!("key{i:08}").into_bytes();
                    assert_eq!(
                        table.get(&key).unwrap().as_ref(),
                        model.get(&key),
                        "thread {t}"
                    );
                    if round % 500 == 0 {
                        let from = format!("key{:08}", i).into_bytes();
                        let got: Vec<_> = table
                            .range(from.clone()..)
                            .take(300)
                            .collect::<Result<_, _>>()
                            .unwrap();
                        let want: Vec<_> = model
                            .range(from..)
                            .take(300)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        assert_eq!(got, want, "thread {t}");
                    }
                }
            });
        }
    });
    let counters = table.counters();
    assert!(
        counters.cache_hits > 0 && counters.data_blocks_read > 0,
        "{counters:?}"
    );
    assert!(cache.weight() <= cache.capacity());
}
