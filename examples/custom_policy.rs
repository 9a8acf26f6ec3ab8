//! A filter policy of your own, stored in a table under its own name and used by readers that
//! know it.
//!
//! ```sh
//! cargo run --example custom_policy
//! ```
//!
//! `SortedHashes` keeps a sorted list of 32-bit key hashes: 32 bits per key for a
//! false-positive rate of about n / 2^32, answered by a binary search. The table stores it
//! as `filter.example.SortedHashes32`; LevelDB and readers without the policy ignore it.

use leveltable::filter_policy::FilterPolicy;
use leveltable::hash::hash;
use leveltable::table::{BuildOptions, ReadOptions, Table, TableBuilder};

/// A filter of sorted 32-bit hashes, little-endian.
struct SortedHashes;

const SEED: u32 = 0x5eed_1e55;

impl FilterPolicy for SortedHashes {
    /// The name is part of the format: a different encoding needs a different name.
    fn name(&self) -> &str {
        "example.SortedHashes32"
    }

    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        let mut hashes: Vec<u32> = keys.iter().map(|k| hash(k, SEED)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        // Append only: `dst` may already hold other filters.
        dst.extend(hashes.iter().flat_map(|h| h.to_le_bytes()));
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        if filter.len() % 4 != 0 {
            return true; // Not ours to judge: a damaged filter must never hide a key.
        }
        let h = hash(key, SEED);
        let at = |i: usize| {
            let bytes = &filter[4 * i..4 * i + 4];
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
        };
        let (mut lo, mut hi) = (0, filter.len() / 4);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match at(mid).cmp(&h) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

fn main() -> Result<(), leveltable::table::Error> {
    let options = BuildOptions::default().filter_policy(SortedHashes);
    let mut builder = TableBuilder::new(Vec::new(), options)?;
    for i in 0..20_000u32 {
        builder.add(format!("item{i:08}").as_bytes(), b"in stock")?;
    }
    let summary = builder.finish()?;
    let bytes = builder.into_inner();
    println!(
        "{} entries, filter {} bytes ({:.1} bits per key)",
        summary.entries,
        summary.filter_size,
        summary.filter_size as f64 * 8.0 / summary.entries as f64
    );

    let table = Table::open(
        bytes.clone(),
        ReadOptions::default().filter_policy(SortedHashes),
    )?;
    let names: Vec<&str> = table
        .properties()
        .filters
        .iter()
        .map(|f| f.policy_name.as_str())
        .collect();
    println!("filters in the metaindex: {names:?}");
    println!(
        "filter used by gets: {:?}",
        table.properties().filter_policy
    );

    assert_eq!(
        table.get(b"item00012345")?.as_deref(),
        Some(&b"in stock"[..])
    );
    // Absent keys between the present ones: each falls in a data block the filter guards.
    for i in 0..10_000u32 {
        assert_eq!(table.get(format!("item{i:08}-sold").as_bytes())?, None);
    }
    let c = table.counters();
    println!(
        "{} filter checks, {} negatives, {} data blocks read",
        c.filter_checks, c.filter_negatives, c.data_blocks_read
    );

    // A reader that does not know the policy still reads the table, without a filter.
    let plain = Table::open(bytes, ReadOptions::default())?;
    assert_eq!(plain.properties().filter_policy, None);
    assert_eq!(
        plain.get(b"item00000001")?.as_deref(),
        Some(&b"in stock"[..])
    );
    println!("a reader without the policy ignores the filter and still finds every key");
    Ok(())
}
