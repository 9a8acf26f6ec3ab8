//! The filter crates on their own, as another storage engine would use them: a Bloom policy
//! and a filter block for three data blocks, without the table crate.
//!
//! ```sh
//! cargo run --example filter_block
//! ```
//!
//! Depend on `leveltable-filter-policy` and `leveltable-filter-block` (both `no_std`); the
//! bytes are the ones LevelDB 1.23 writes for the same keys and block offsets.

use leveltable_filter_block::{FilterBlockBuilder, FilterBlockReader};
use leveltable_filter_policy::{BloomFilterPolicy, FilterPolicy};

fn main() -> Result<(), leveltable_filter_block::Error> {
    let policy = BloomFilterPolicy::new(10);
    println!(
        "policy {} with {} probes",
        policy.name(),
        policy.num_probes()
    );

    // Three data blocks at these file offsets, each with its keys. The block builder is told
    // where each data block starts, then given its keys: `(start_block add_key*)* finish`.
    let blocks: [(u64, Vec<String>); 3] = [
        (0, (0..500).map(|i| format!("apple:{i}")).collect()),
        (4096, (0..500).map(|i| format!("banana:{i}")).collect()),
        (8192, (0..500).map(|i| format!("cherry:{i}")).collect()),
    ];
    let mut builder = FilterBlockBuilder::new(&policy);
    for (offset, keys) in &blocks {
        builder.start_block(*offset)?;
        for key in keys {
            builder.add_key(key.as_bytes());
        }
    }
    let block = builder.finish();
    println!("filter block: {} bytes for 1500 keys", block.len());

    // Store `block` wherever the engine keeps metadata; reading it back is cheap.
    let reader = FilterBlockReader::new(&policy, &block);
    println!("filters in the block: {}", reader.num_filters());
    for (offset, keys) in &blocks {
        assert!(
            keys.iter()
                .all(|k| reader.key_may_match(*offset, k.as_bytes()))
        );
    }
    // Keys that were never added: the filter rules out almost all of them.
    let mut passed = 0;
    for i in 0..10_000 {
        if reader.key_may_match(4096, format!("durian:{i}").as_bytes()) {
            passed += 1;
        }
    }
    println!(
        "absent keys passed by the data block at 4096's filter: {passed} of 10000 ({:.2}%)",
        passed as f64 / 100.0
    );

    // A policy is usable alone too: one filter over any set of keys.
    let mut filter = Vec::new();
    policy.create_filter(&[b"x", b"y"], &mut filter);
    println!(
        "a filter of two keys: {} bytes; x may match: {}",
        filter.len(),
        policy.key_may_match(b"x", &filter)
    );
    Ok(())
}
