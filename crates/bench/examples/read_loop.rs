//! One leveltable workload of the comparison runner, repeated alone, for profilers.
//!
//! ```text
//! cargo run --release -p leveltable-bench --example read_loop -- get-absent-none 7
//! perf record -e cpu-clock target/release/examples/read_loop get-absent-none 60
//! ```
//!
//! Workloads: `get-present-none`, `get-absent-none`, `get-present-snappy`,
//! `get-absent-snappy` (200,000 gets with the Bloom filter, no cache, checksums off; add
//! `-cache` for a fresh 8 MiB block cache each pass, as the runner's cached rows have), the
//! same as `get_many` in batches of 64 (`many-present-none`, …, `many-absent-snappy`),
//! `scan-none`, `scan-snappy`, `bloom-create` (1M keys in batches of 1,000), `bloom-match`
//! and `bloom-batch` (1M queries against a 1M-key filter, one at a time or through
//! `keys_may_match`). The tables are the runner's million-entry tables, written by
//! leveltable (byte-identical to LevelDB's without compression) into the system temporary
//! directory on first use and memory-mapped afresh for every pass, as the runner maps them.
//! A third argument sets the tables' entries instead (`read_loop get-absent-none 3
//! 30000000`: a 3.5 GB table whose fence and filter no longer fit in the caches).
//! Prints each pass and the best.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use leveltable_bench::mmap;
use leveltable_bench::workload::{
    GET_QUERIES, TABLE_ENTRIES, bloom_queries, get_queries, key, table_entries,
};
use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};
use leveltable_table::{BuildOptions, Cache, Compression, ReadOptions, Table, TableBuilder};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const BITS_PER_KEY: usize = 10;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(workload) = args.get(1) else {
        return Err("usage: read_loop WORKLOAD [PASSES [ENTRIES]]".into());
    };
    let passes: usize = args.get(2).map_or(Ok(7), |p| p.parse())?;
    let entries: u64 = args.get(3).map_or(Ok(TABLE_ENTRIES), |n| n.parse())?;
    let mut best = f64::MAX;
    for _ in 0..passes {
        let (per_op, unit) = pass(workload, entries)?;
        println!("{workload}: {per_op:.1} {unit}");
        best = if unit == "MB/s" {
            if best == f64::MAX {
                per_op
            } else {
                best.max(per_op)
            }
        } else {
            best.min(per_op)
        };
    }
    println!("best of {passes}: {best:.1}");
    Ok(())
}

/// One timed pass over tables of `entries` entries: (figure, unit).
fn pass(workload: &str, entries: u64) -> Result<(f64, &'static str)> {
    // A `-cache` suffix: the table gets a fresh 8 MiB block cache, as the runner's rows do.
    let cached = workload.ends_with("-cache");
    let workload = workload.trim_end_matches("-cache");
    let compression = if workload.ends_with("snappy") {
        Compression::Snappy
    } else {
        Compression::None
    };
    match workload {
        "bloom-create" => Ok((bloom_create(), "ns/key")),
        "bloom-match" | "bloom-batch" => Ok((bloom_match(workload == "bloom-batch"), "ns/query")),
        _ if workload.starts_with("scan-") => {
            let table = open(compression, cached, entries)?;
            let start = Instant::now();
            let mut iter = table.iter();
            iter.seek_to_first();
            let mut bytes = 0usize;
            while iter.valid() {
                bytes += iter.key().len() + iter.value().len();
                iter.next();
            }
            iter.status()?;
            Ok((bytes as f64 / start.elapsed().as_secs_f64() / 1e6, "MB/s"))
        }
        _ if workload.starts_with("many-") => {
            // The runner's get_many rows: batches of 64 keys.
            let present = workload.starts_with("many-present");
            let queries = get_queries(entries, GET_QUERIES, present);
            let table = open(compression, cached, entries)?;
            let start = Instant::now();
            let mut found = 0usize;
            for batch in queries.chunks(64) {
                table.get_many_with(batch, |_, _| found += 1)?;
            }
            let elapsed = start.elapsed().as_secs_f64();
            let want = if present { queries.len() } else { 0 };
            if found != want {
                return Err(format!("found {found} keys, expected {want}").into());
            }
            Ok((elapsed * 1e9 / queries.len() as f64, "ns/get"))
        }
        _ if workload.starts_with("get-") => {
            let present = workload.starts_with("get-present");
            let queries = get_queries(entries, GET_QUERIES, present);
            let table = open(compression, cached, entries)?;
            let mut value = Vec::with_capacity(128);
            let start = Instant::now();
            let mut found = 0usize;
            for q in &queries {
                let hit = table.get_with(q, |v| {
                    value.clear();
                    value.extend_from_slice(v);
                })?;
                found += usize::from(hit.is_some());
            }
            let elapsed = start.elapsed().as_secs_f64();
            let want = if present { queries.len() } else { 0 };
            if found != want {
                return Err(format!("found {found} keys, expected {want}").into());
            }
            Ok((elapsed * 1e9 / queries.len() as f64, "ns/get"))
        }
        _ => Err(format!("unknown workload {workload}").into()),
    }
}

/// The benchmark table of `compression` and `entries`, built on first use and mapped afresh.
fn open(compression: Compression, cached: bool, entries: u64) -> Result<Table<memmap2::Mmap>> {
    let name = match compression {
        Compression::Snappy => "snappy",
        _ => "none",
    };
    let file = if entries == TABLE_ENTRIES {
        format!("leveltable-read-loop-{name}.ldb")
    } else {
        format!("leveltable-read-loop-{name}-{entries}.ldb")
    };
    let path: PathBuf = std::env::temp_dir().join(file);
    if !path.exists() {
        let options = BuildOptions::default()
            .compression(compression)
            .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
        let partial = path.with_extension("partial");
        let mut builder = TableBuilder::new(BufWriter::new(File::create(&partial)?), options)?;
        for (k, v) in table_entries(entries) {
            builder.add(&k, &v)?;
        }
        builder.finish()?;
        builder.into_inner().flush()?;
        std::fs::rename(&partial, &path)?;
    }
    let mut options = ReadOptions::default()
        .verify_checksums(false)
        .filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    if cached {
        options = options.block_cache(Cache::shared(8 << 20));
    }
    Ok(Table::open(mmap::map(&path)?, options)?)
}

fn bloom_create() -> f64 {
    let keys: Vec<[u8; 16]> = (0..TABLE_ENTRIES).map(key).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let policy = BloomFilterPolicy::new(BITS_PER_KEY);
    let mut filter = Vec::new();
    let start = Instant::now();
    for batch in refs.chunks(1000) {
        filter.clear();
        policy.create_filter(batch, &mut filter);
    }
    start.elapsed().as_secs_f64() * 1e9 / refs.len() as f64
}

fn bloom_match(batch: bool) -> f64 {
    let keys: Vec<[u8; 16]> = (0..TABLE_ENTRIES).map(|i| key(2 * i)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let policy = BloomFilterPolicy::new(BITS_PER_KEY);
    let mut filter = Vec::new();
    policy.create_filter(&refs, &mut filter);
    let queries = bloom_queries(TABLE_ENTRIES, TABLE_ENTRIES as usize);
    let queries: Vec<&[u8]> = queries.iter().map(|k| &k[..]).collect();
    let mut answers = Vec::with_capacity(queries.len());
    let start = Instant::now();
    let hits = if batch {
        policy.keys_may_match(&queries, &filter, &mut answers);
        answers.iter().filter(|&&a| a).count()
    } else {
        queries
            .iter()
            .filter(|q| policy.key_may_match(q, &filter))
            .count()
    };
    let elapsed = start.elapsed().as_secs_f64();
    assert!(hits >= queries.len() / 2, "{hits} hits");
    elapsed * 1e9 / queries.len() as f64
}
