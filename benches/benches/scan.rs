//! Criterion benchmarks of full scans: every entry of a 200,000-entry benchmark table, with
//! snappy and without, checksums on and off, through the cursor (`Table::iter`) and the
//! owned-pair iterator (`Table::entries`).
//!
//! Run with `cargo bench -p leveltable-benches --bench scan`.

#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented items"
)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leveltable::table::{BuildOptions, Compression, ReadOptions, Table, TableBuilder};
use leveltable_bench::workload::{KEY_LEN, VALUE_LEN, table_entries};

const ENTRIES: u64 = 200_000;

fn bench_scan(c: &mut Criterion) {
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(ENTRIES * (KEY_LEN + VALUE_LEN) as u64));
    group.sample_size(10);
    for (compression, label) in [(Compression::Snappy, "snappy"), (Compression::None, "none")] {
        let mut builder =
            TableBuilder::new(Vec::new(), BuildOptions::default().compression(compression))
                .expect("options");
        for (k, v) in table_entries(ENTRIES) {
            builder.add(&k, &v).expect("keys ascend");
        }
        builder.finish().expect("in-memory writes succeed");
        let bytes = builder.into_inner();
        for verify in [false, true] {
            let table = Table::open(&bytes[..], ReadOptions::default().verify_checksums(verify))
                .expect("open the table");
            let check = if verify { "verify" } else { "no verify" };
            group.bench_function(format!("{label}/{check}/cursor"), |b| {
                b.iter(|| {
                    let mut iter = table.iter();
                    iter.seek_to_first();
                    let mut n = 0usize;
                    while iter.valid() {
                        n += iter.key().len() + iter.value().len();
                        iter.next();
                    }
                    n
                })
            });
            group.bench_function(format!("{label}/{check}/entries"), |b| {
                b.iter(|| {
                    table
                        .entries()
                        .map(|e| e.map(|(k, v)| k.len() + v.len()))
                        .sum::<Result<usize, _>>()
                        .expect("a sound table")
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_scan
}
criterion_main!(benches);
