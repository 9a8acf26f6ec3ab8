//! Criterion benchmarks of the filter crates: LevelDB's hash, Bloom filter creation and
//! matching (LevelDB's policy and the cache-local one), and filter blocks.
//!
//! Run with `cargo bench -p leveltable-benches --bench filters`. Inputs are the fixed
//! workloads of `leveltable_bench::workload`.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leveltable::filter_block::{FilterBlockBuilder, FilterBlockReader};
use leveltable::filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy};
use leveltable::hash::{BLOOM_SEED, hash};
use leveltable_bench::workload::{KEY_LEN, bloom_queries, hash_input, key};

/// Keys in the filter of the match benchmarks.
const FILTER_KEYS: u64 = 1_000_000;
/// Keys per filter in the create benchmarks.
const CREATE_BATCH: u64 = 1_000;

fn bench_hash(c: &mut Criterion) {
    let input = hash_input(1 << 20);
    let mut group = c.benchmark_group("hash");
    for len in [16usize, 1024] {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{len}B slices of 1MiB"), |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for slice in input.chunks_exact(len) {
                    acc ^= hash(black_box(slice), BLOOM_SEED);
                }
                acc
            })
        });
    }
    group.finish();
}

fn owned_keys(range: std::ops::Range<u64>) -> Vec<[u8; KEY_LEN]> {
    range.map(key).collect()
}

fn bench_policy<P: FilterPolicy>(c: &mut Criterion, label: &str, policy: &P) {
    let mut group = c.benchmark_group(format!("bloom/{label}"));

    let batch = owned_keys(0..CREATE_BATCH);
    let refs: Vec<&[u8]> = batch.iter().map(|k| &k[..]).collect();
    group.throughput(Throughput::Elements(CREATE_BATCH));
    group.bench_function("create 1000 keys", |b| {
        let mut dst = Vec::new();
        b.iter(|| {
            dst.clear();
            policy.create_filter(black_box(&refs), &mut dst);
            dst.len()
        })
    });

    let keys: Vec<[u8; KEY_LEN]> = (0..FILTER_KEYS).map(|i| key(2 * i)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let mut filter = Vec::new();
    policy.create_filter(&refs, &mut filter);
    let queries = bloom_queries(FILTER_KEYS, FILTER_KEYS as usize);
    group.throughput(Throughput::Elements(queries.len() as u64));
    group.bench_function("match 1M-key filter", |b| {
        b.iter(|| {
            queries
                .iter()
                .filter(|q| policy.key_may_match(&q[..], &filter))
                .count()
        })
    });
    group.finish();
}

fn bench_bloom(c: &mut Criterion) {
    bench_policy(c, "leveldb", &BloomFilterPolicy::new(10));
    bench_policy(c, "local", &CacheLocalBloomPolicy::new(10));
}

/// Data-block offsets of a table of 4 KiB blocks holding `entries` keys, 40 keys a block.
fn block_layout(entries: u64) -> Vec<(u64, std::ops::Range<u64>)> {
    (0..entries.div_ceil(40))
        .map(|b| (b * 4096, b * 40..((b + 1) * 40).min(entries)))
        .collect()
}

fn bench_filter_block(c: &mut Criterion) {
    const ENTRIES: u64 = 100_000;
    let policy = BloomFilterPolicy::new(10);
    let layout = block_layout(ENTRIES);
    let keys = owned_keys(0..ENTRIES);
    let build = || {
        let mut builder = FilterBlockBuilder::new(&policy);
        for (offset, range) in &layout {
            builder
                .start_block(*offset)
                .expect("offsets increase and stay small");
            for i in range.clone() {
                builder.add_key(&keys[i as usize]);
            }
        }
        builder.finish()
    };

    let mut group = c.benchmark_group("filter_block");
    group.throughput(Throughput::Elements(ENTRIES));
    group.bench_function("build 100k keys", |b| b.iter(build));

    let block = build();
    let reader = FilterBlockReader::new(&policy, &block);
    let probes: Vec<(u64, [u8; KEY_LEN])> = layout
        .iter()
        .flat_map(|(offset, range)| range.clone().map(move |i| (*offset, key(i + ENTRIES))))
        .collect();
    group.bench_function("match 100k absent keys", |b| {
        b.iter(|| {
            probes
                .iter()
                .filter(|(o, k)| reader.key_may_match(*o, k))
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_hash, bench_bloom, bench_filter_block);
criterion_main!(benches);
