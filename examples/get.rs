//! Point lookups through the Bloom filter, with the table's counters showing the data-block
//! reads the filter saves.
//!
//! ```sh
//! cargo run --example get
//! ```
//!
//! Builds a table of 100,000 entries in memory, then looks up 10,000 present and 10,000
//! absent keys, once with the filter and once without.

use leveltable::table::{
    BloomFilterPolicy, BuildOptions, Counters, ReadOptions, Table, TableBuilder,
};

const ENTRIES: u64 = 100_000;

/// Keys shaped like hashed identifiers: LevelDB's Bloom filter reaches its design rate on
/// them (on sequential integers it does not; see `docs/filters.md`).
fn key(i: u64) -> String {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    format!("user:{:016x}", z ^ (z >> 31))
}

fn lookups(table: &Table<Vec<u8>>, keys: impl Iterator<Item = String>) -> (u64, Counters) {
    table.reset_counters();
    let mut found = 0;
    for k in keys {
        // `get_with` lends the value instead of copying it out.
        if let Some(len) = table.get_with(k.as_bytes(), |value| value.len()).unwrap() {
            assert!(len > 0);
            found += 1;
        }
    }
    (found, table.counters())
}

fn main() -> Result<(), leveltable::table::Error> {
    let mut keys: Vec<String> = (0..ENTRIES).map(key).collect();
    keys.sort();
    let options = BuildOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let mut builder = TableBuilder::new(Vec::new(), options)?;
    for k in &keys {
        builder.add(k.as_bytes(), format!("profile of {k}").as_bytes())?;
    }
    builder.finish()?;
    let bytes = builder.into_inner();

    // The reader uses a filter only if it is given the policy the table was built with.
    let filtered = ReadOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let with = Table::open(bytes.clone(), filtered)?;
    let without = Table::open(bytes, ReadOptions::default())?;
    println!(
        "table: {} data blocks, filter {:?} ({} bytes)",
        with.properties().data_blocks,
        with.properties().filter_policy.as_deref().unwrap_or("none"),
        with.properties().filter_size
    );

    let present = || (0..ENTRIES).step_by(10).map(key);
    let absent = || (ENTRIES..ENTRIES + ENTRIES / 10).map(key);
    for (name, table) in [("with the filter", &with), ("without a filter", &without)] {
        let (found, c) = lookups(table, present());
        println!(
            "{name}: present keys: {found} found, {} data blocks read",
            c.data_blocks_read
        );
        let (found, c) = lookups(table, absent());
        println!(
            "{name}: absent keys: {found} found, {} data blocks read, {} filter checks, \
             {} filter negatives",
            c.data_blocks_read, c.filter_checks, c.filter_negatives
        );
    }
    Ok(())
}
