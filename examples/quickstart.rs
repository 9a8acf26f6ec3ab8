//! Build a table of a million entries with a Bloom filter, then look keys up with and
//! without the filter and see what it saves.
//!
//! Run with `cargo run --release --example quickstart`.
//!
//! Keys are `user` followed by 16 hex digits of a 64-bit mixing function of the entry number,
//! the shape of hashed or random identifiers. Absent keys come from the same function at
//! numbers the table does not hold. LevelDB's Bloom filter reaches its design rate (about 1%
//! at 10 bits per key) on keys like these; its hash has no final mixing step, so on keys that
//! differ only in their last bytes (consecutive integers, zero-padded counters) it passes far
//! more absent keys (`docs/filters.md`, "Where LevelDB's filter fails").

use std::fs::File;
use std::time::{Duration, Instant};

use leveltable::table::{
    BloomFilterPolicy, BuildOptions, Counters, ReadOptions, Table, create_table,
};

const ENTRIES: u64 = 1_000_000;
const BITS_PER_KEY: usize = 10;

/// SplitMix64's output function: a bijection on u64 that scatters consecutive inputs.
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key(i: u64) -> String {
    format!("user{:016x}", mix(i))
}

/// A small JSON-like record.
fn value_into(i: u64, out: &mut String) {
    use std::fmt::Write;
    let score = mix(!i) % 1000;
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{{\"id\":{i},\"name\":\"user number {i}\",\"score\":{score}}}"
    );
}

struct Run {
    gets: u64,
    found: u64,
    elapsed: Duration,
    counters: Counters,
}

/// Looks up every key of `keys` in a fresh table over `path`.
fn run(
    path: &std::path::Path,
    options: ReadOptions,
    keys: &[String],
) -> Result<Run, Box<dyn std::error::Error>> {
    let table = Table::open(File::open(path)?, options)?;
    let start = Instant::now();
    let mut found = 0;
    for k in keys {
        if table.get_with(k.as_bytes(), |v| v.len())?.is_some() {
            found += 1;
        }
    }
    Ok(Run {
        gets: keys.len() as u64,
        found,
        elapsed: start.elapsed(),
        counters: table.counters(),
    })
}

fn per_second(r: &Run) -> f64 {
    r.gets as f64 / r.elapsed.as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("000001.ldb");

    // Keys must be added in sorted order.
    let mut keys: Vec<(String, u64)> = (0..ENTRIES).map(|i| (key(i), i)).collect();
    keys.sort_unstable();

    let start = Instant::now();
    let build = BuildOptions::default().filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    let mut value_buf = String::new();
    let summary = create_table(&path, build, |table| {
        for (k, i) in &keys {
            value_buf.clear();
            value_into(*i, &mut value_buf);
            table.add(k.as_bytes(), value_buf.as_bytes())?;
        }
        Ok(())
    })?;
    let build_time = start.elapsed();

    println!("built {} entries in {:.2?}", summary.entries, build_time);
    println!(
        "  file size    {:>11} bytes ({} data blocks, snappy)",
        summary.file_size, summary.data_blocks
    );
    println!(
        "  filter size  {:>11} bytes ({:.2} bits per key)",
        summary.filter_size,
        summary.filter_size as f64 * 8.0 / summary.entries as f64
    );

    // Every tenth present key, and as many absent ones.
    let present: Vec<String> = (0..ENTRIES).step_by(10).map(key).collect();
    let absent: Vec<String> = (ENTRIES..).take(present.len()).map(key).collect();

    let filtered = || ReadOptions::default().filter_policy(BloomFilterPolicy::new(BITS_PER_KEY));
    let present_with = run(&path, filtered(), &present)?;
    let present_without = run(&path, ReadOptions::default(), &present)?;
    let absent_with = run(&path, filtered(), &absent)?;
    let absent_without = run(&path, ReadOptions::default(), &absent)?;
    assert_eq!(present_with.found, present_with.gets);
    assert_eq!(present_without.found, present_without.gets);
    assert_eq!(absent_with.found + absent_without.found, 0);

    let c = absent_with.counters;
    let false_positives = c.filter_checks - c.filter_negatives;
    println!(
        "\nabsent keys: {} gets; the filter let {} through: false-positive rate {:.3}%",
        absent_with.gets,
        false_positives,
        100.0 * false_positives as f64 / c.filter_checks as f64
    );
    let blocks_per_get = |r: &Run| r.counters.data_blocks_read as f64 / r.gets as f64;
    println!(
        "  data blocks read per absent get: {:.4} with the filter, {:.4} without ({:.1}x fewer)",
        blocks_per_get(&absent_with),
        blocks_per_get(&absent_without),
        blocks_per_get(&absent_without) / blocks_per_get(&absent_with)
    );

    println!("\ngets per second (file in the page cache, no block cache):");
    println!("                  with filter   without filter");
    println!(
        "  present keys   {:>11.0}   {:>14.0}",
        per_second(&present_with),
        per_second(&present_without)
    );
    println!(
        "  absent keys    {:>11.0}   {:>14.0}",
        per_second(&absent_with),
        per_second(&absent_without)
    );
    Ok(())
}
