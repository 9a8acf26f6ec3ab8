//! Criterion benchmarks of data blocks: building one block of the benchmark table's entries,
//! and seeking in it.
//!
//! Run with `cargo bench -p leveltable-benches --bench blocks`.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leveltable::table::BytewiseComparator;
use leveltable::table::block::Block;
use leveltable::table::block_builder::BlockBuilder;
use leveltable_bench::workload::{KEY_LEN, VALUE_LEN, key, table_entries};

/// Entries of one 4 KiB block of the benchmark table (block size 4096, restart 16).
const BLOCK_ENTRIES: u64 = 39;

fn bench_blocks(c: &mut Criterion) {
    let entries: Vec<_> = table_entries(BLOCK_ENTRIES).collect();
    let mut group = c.benchmark_group("block");

    group.throughput(Throughput::Bytes(
        BLOCK_ENTRIES * (KEY_LEN + VALUE_LEN) as u64,
    ));
    group.bench_function("build 39 entries", |b| {
        let mut builder = BlockBuilder::new(16);
        b.iter(|| {
            builder.reset();
            for (k, v) in &entries {
                builder.add(k, v);
            }
            builder.finish().len()
        })
    });

    let mut builder = BlockBuilder::new(16);
    for (k, v) in &entries {
        builder.add(k, v);
    }
    let data = builder.finish().to_vec();
    let block = Block::new(&data).expect("a block we just built");
    // Every key of the block (even numbers) and every absent neighbour (odd numbers).
    let targets: Vec<[u8; KEY_LEN]> = (0..2 * BLOCK_ENTRIES).map(key).collect();
    group.throughput(Throughput::Elements(targets.len() as u64));
    group.bench_function("seek each present and absent key", |b| {
        b.iter(|| {
            let mut iter = block.iter(&BytewiseComparator);
            let mut found = 0usize;
            for t in &targets {
                iter.seek(black_box(t));
                found += usize::from(iter.valid() && iter.key() == t);
            }
            found
        })
    });
    group.bench_function("iterate all entries", |b| {
        b.iter(|| {
            let mut iter = block.iter(&BytewiseComparator);
            iter.seek_to_first();
            let mut bytes = 0usize;
            while iter.valid() {
                bytes += iter.key().len() + iter.value().len();
                iter.next();
            }
            bytes
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench_blocks
}
criterion_main!(benches);
