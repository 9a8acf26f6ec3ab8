//! Criterion benchmarks of point lookups: present and absent keys, with and without the
//! Bloom filter, with and without an 8 MiB block cache, with checksum verification on and
//! off. The table (200,000 entries of the benchmark table, snappy) is a file in a temporary
//! directory read through a memory map, as LevelDB reads tables.
//!
//! Run with `cargo bench -p leveltable-benches --bench get`; add `-- "absent/filter"` to run
//! a subset. The comparison runner (`cargo run --release -p leveltable-bench -- get`) runs the
//! million-entry workload beside LevelDB 1.23.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::io::BufWriter;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leveltable::filter_policy::BloomFilterPolicy;
use leveltable::table::{BuildOptions, Cache, Compression, ReadOptions, Table, TableBuilder};
use leveltable_bench::mmap;
use leveltable_bench::workload::{get_queries, table_entries};

const ENTRIES: u64 = 200_000;
/// Gets per measured iteration.
const BATCH: usize = 1000;

fn bench_get(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("get.ldb");
    {
        let options = BuildOptions::default()
            .compression(Compression::Snappy)
            .filter_policy(BloomFilterPolicy::new(10));
        let file = BufWriter::new(std::fs::File::create(&path).expect("create the table"));
        let mut builder = TableBuilder::new(file, options).expect("options");
        for (k, v) in table_entries(ENTRIES) {
            builder.add(&k, &v).expect("keys ascend");
        }
        builder.finish().expect("write the table");
    }

    let mut group = c.benchmark_group("get");
    group.throughput(Throughput::Elements(BATCH as u64));
    for present in [true, false] {
        let queries = get_queries(ENTRIES, BATCH, present);
        for filter in [true, false] {
            for cache in [false, true] {
                for verify in [false, true] {
                    let name = format!(
                        "{}/{}/{}/{}",
                        if present { "present" } else { "absent" },
                        if filter { "filter" } else { "no filter" },
                        if cache { "8 MiB cache" } else { "no cache" },
                        if verify { "verify" } else { "no verify" },
                    );
                    let mut options = ReadOptions::default().verify_checksums(verify);
                    if filter {
                        options = options.filter_policy(BloomFilterPolicy::new(10));
                    }
                    if cache {
                        options = options.block_cache(Cache::shared(8 << 20));
                    }
                    let map = mmap::map(&path).expect("map the table");
                    let table = Table::open(map, options).expect("open the table");
                    group.bench_function(name, |b| {
                        let mut value = Vec::new();
                        b.iter(|| {
                            let mut found = 0usize;
                            for q in &queries {
                                let hit = table
                                    .get_with(q, |v| {
                                        value.clear();
                                        value.extend_from_slice(v);
                                    })
                                    .expect("a sound table");
                                found += usize::from(hit.is_some());
                            }
                            assert_eq!(found, if present { BATCH } else { 0 });
                            found
                        })
                    });
                }
            }
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = bench_get
}
criterion_main!(benches);
