//! Criterion benchmarks of building a table: 100,000 entries of the benchmark table (block
//! size 4096, restart 16, 10-bit Bloom filter) into memory, with snappy and without.
//!
//! Run with `cargo bench -p leveltable-benches --bench table_build`. The comparison runner
//! (`cargo run --release -p leveltable-bench -- build`) builds the full million-entry table
//! to files beside LevelDB 1.23.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leveltable::filter_policy::BloomFilterPolicy;
use leveltable::table::{BuildOptions, Compression, TableBuilder};
use leveltable_bench::workload::{KEY_LEN, VALUE_LEN, table_entries};

const ENTRIES: u64 = 100_000;

fn bench_build(c: &mut Criterion) {
    let entries: Vec<_> = table_entries(ENTRIES).collect();
    let mut group = c.benchmark_group("table_build");
    group.throughput(Throughput::Bytes(ENTRIES * (KEY_LEN + VALUE_LEN) as u64));
    group.sample_size(10);
    for (compression, label) in [(Compression::Snappy, "snappy"), (Compression::None, "none")] {
        group.bench_function(format!("100k entries, {label}"), |b| {
            b.iter(|| {
                let options = BuildOptions::default()
                    .compression(compression)
                    .filter_policy(BloomFilterPolicy::new(10));
                let mut builder =
                    TableBuilder::new(Vec::with_capacity(12 << 20), options).expect("options");
                for (k, v) in &entries {
                    builder.add(k, v).expect("keys ascend");
                }
                builder.finish().expect("in-memory writes succeed");
                builder.into_inner().len()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_build
}
criterion_main!(benches);
