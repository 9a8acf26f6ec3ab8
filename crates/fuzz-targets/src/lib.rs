//! The bodies of leveltable's fuzz targets.
//!
//! Each function takes the fuzzer's bytes and drives one decoder or builder over them,
//! asserting what must hold for any input: no panic, no out-of-bounds access, and for the
//! builder, agreement with a `BTreeMap` model. `fuzz/` (a cargo-fuzz workspace) calls these
//! from its targets; this crate's tests replay the kept inputs under `fuzz/regressions/` and
//! the seed corpora under `fuzz/seeds/`, so every crash ever found stays a test.

#![forbid(unsafe_code)]

pub mod chromium;
pub mod db;
pub mod db_lies;
pub mod follow;
pub mod follow_live;
pub mod repair;

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use leveltable_filter_block::FilterBlockReader;
use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy};
use leveltable_table::block::Block;
use leveltable_table::format::{BlockHandle, Footer};
use leveltable_table::{
    BuildOptions, BytewiseComparator, Compression, Error, Profile, ReadOptions, Table,
    TableBuilder, codec,
};

/// The names of all targets, as used for their directories under `fuzz/`.
pub const TARGETS: [&str; 16] = [
    "block",
    "filter_block",
    "bloom",
    "footer",
    "table",
    "builder",
    "log",
    "version_edit",
    "write_batch",
    "db_dir",
    "codec",
    "db_lies",
    "db_lies_direct",
    "chromium",
    "follow",
    "follow_live",
];

/// Runs the target called `name` on `data`.
///
/// # Panics
/// If `name` is not one of [`TARGETS`], or if the target finds a bug.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "block" => block(data),
        "filter_block" => filter_block(data),
        "bloom" => bloom(data),
        "footer" => footer(data),
        "table" => table(data),
        "builder" => builder(data),
        "log" => db::log(data),
        "version_edit" => db::version_edit(data),
        "write_batch" => db::write_batch(data),
        "db_dir" => db::db_dir(data),
        "codec" => codec(data),
        "chromium" => chromium::chromium(data),
        "follow" => follow::follow(data),
        "follow_live" => follow_live::follow_live(data),
        "db_lies" => {
            db_lies::db_lies(data);
        }
        "db_lies_direct" => {
            db_lies::db_lies_direct(data);
        }
        _ => panic!("no fuzz target named {name}"),
    }
}

/// Keys to probe an arbitrary structure with: prefixes of the input and a few fixed ones.
fn probe_keys(data: &[u8]) -> Vec<&[u8]> {
    let mut keys: Vec<&[u8]> = vec![b"", b"\x00", b"a", b"m", b"\xff\xff"];
    for len in [1, 3, 8, 17] {
        if let Some(k) = data.get(..len) {
            keys.push(k);
        }
    }
    keys
}

/// Decodes `data` as a block and iterates it forwards, backwards and by seeks.
pub fn block(data: &[u8]) {
    let Ok(block) = Block::new(data) else { return };
    let cmp = BytewiseComparator;
    let _ = block.check(&cmp);
    let mut iter = block.iter(&cmp);
    iter.seek_to_first();
    let mut forward = 0usize;
    while iter.valid() && forward < 10_000 {
        let _ = (iter.key(), iter.value());
        iter.next();
        forward += 1;
    }
    let _ = iter.status();
    iter.seek_to_last();
    let mut backward = 0usize;
    while iter.valid() && backward < 10_000 {
        iter.prev();
        backward += 1;
    }
    for key in probe_keys(data) {
        iter.seek(key);
        if iter.valid() {
            let _ = iter.key();
            iter.next();
        }
    }
}

/// Block decompression: the first byte picks a compression, the rest is a block's stored
/// bytes. Decoding them must fail cleanly or stay under the expansion cap; every profile
/// maps the type byte without a panic; and the bytes compressed and decompressed again are
/// the same.
pub fn codec(data: &[u8]) {
    let Some((&pick, stored)) = data.split_first() else {
        return;
    };
    let compression = Compression::ALL[usize::from(pick) % Compression::ALL.len()];
    for profile in Profile::ALL {
        let _ = profile.compression(pick, stored);
    }
    let mut out = vec![0xa5; usize::from(pick)];
    if codec::decompress(compression, stored, &mut out).is_ok() {
        assert!(out.len() <= codec::max_decompressed_len(compression, stored.len()));
    }
    if let Ok(packed) = codec::compress(compression, stored) {
        let mut back = Vec::new();
        codec::decompress(compression, &packed, &mut back).expect("our own output decodes");
        assert_eq!(back, stored, "{compression:?} round trip");
    }
}

/// Reads `data` as a filter block under both policies, at several block offsets.
pub fn filter_block(data: &[u8]) {
    let bloom = BloomFilterPolicy::new(10);
    let local = CacheLocalBloomPolicy::new(10);
    let readers: [&dyn FilterPolicy; 2] = [&bloom, &local];
    for policy in readers {
        let reader = FilterBlockReader::new(policy, data);
        for offset in [0, 1, 2047, 2048, 4096, 1 << 20, u64::MAX] {
            for key in probe_keys(data) {
                let _ = reader.key_may_match(offset, key);
            }
        }
    }
}

/// Asks both Bloom policies about keys in an arbitrary filter; also checks that a filter
/// made from keys taken out of the input has no false negatives.
pub fn bloom(data: &[u8]) {
    let split = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let (keys_part, filter) = data.split_at(split);
    let keys: Vec<&[u8]> = keys_part.chunks(3).collect();
    let policies: [Box<dyn FilterPolicy>; 4] = [
        Box::new(BloomFilterPolicy::new(10)),
        Box::new(CacheLocalBloomPolicy::new(10)),
        Box::new(BloomFilterPolicy::new(usize::from(data.len() as u8 % 31))),
        Box::new(CacheLocalBloomPolicy::new(usize::from(
            data.len() as u8 % 31,
        ))),
    ];
    for policy in &policies {
        for key in probe_keys(data) {
            let _ = policy.key_may_match(key, filter);
        }
        let mut made = Vec::new();
        policy.create_filter(&keys, &mut made);
        for key in &keys {
            assert!(policy.key_may_match(key, &made), "false negative");
        }
    }
}

/// Decodes a footer and a block handle; whatever decodes re-encodes to the same value.
pub fn footer(data: &[u8]) {
    if let Ok(footer) = Footer::decode_from(&mut &data[..]) {
        let mut encoded = Vec::new();
        footer.encode_to(&mut encoded);
        assert_eq!(Footer::decode_from(&mut &encoded[..]).ok(), Some(footer));
    }
    let mut src = data;
    if let Ok(handle) = BlockHandle::decode_from(&mut src) {
        let mut encoded = Vec::new();
        handle.encode_to(&mut encoded);
        assert_eq!(
            BlockHandle::decode_from(&mut &encoded[..]).ok(),
            Some(handle)
        );
        let _ = handle.end_with_trailer();
    }
}

/// Opens `data` as a table and exercises every read path, once verifying checksums and
/// once not.
pub fn table(data: &[u8]) {
    table_passes(data);
}

/// The body of [`table`]: returns, for the passes with checksums verified and not, whether
/// the table opened (and so whether that pass read it).
pub fn table_passes(data: &[u8]) -> [bool; 2] {
    let mut opened = [false; 2];
    for (pass, verify) in [true, false].into_iter().enumerate() {
        let options = ReadOptions::default()
            .filter_policy(BloomFilterPolicy::new(10))
            .extra_filter_policy(CacheLocalBloomPolicy::new(10))
            .verify_checksums(verify);
        // A failed open under one setting says nothing about the other: an input whose
        // index checksum is wrong still opens unverified and must be read that way too.
        let Ok(table) = Table::open(data, options) else {
            continue;
        };
        opened[pass] = true;
        for key in probe_keys(data) {
            let _ = table.get(key);
            let _ = table.approximate_offset_of(key);
        }
        let _ = table.verify();
        let mut iter = table.iter();
        iter.seek_to_first();
        let mut steps = 0;
        while iter.valid() && steps < 10_000 {
            iter.next();
            steps += 1;
        }
        iter.seek_to_last();
        steps = 0;
        while iter.valid() && steps < 10_000 {
            iter.prev();
            steps += 1;
        }
        for key in probe_keys(data) {
            iter.seek(key);
        }
        let _ = iter.status();
        for entry in table.entries().take(10_000) {
            if entry.is_err() {
                break;
            }
        }
    }
    opened
}

/// Options and operations for the builder target.
#[derive(Debug, Arbitrary)]
struct BuildPlan {
    block_size: u16,
    restart_interval: u8,
    snappy: bool,
    bloom_bits: u8,
    local_bits: Option<u8>,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    probes: Vec<Vec<u8>>,
}

/// Builds a table from arbitrary operations and checks it against a `BTreeMap` model:
/// keys out of order are refused without harm, and every get and the full scan agree.
pub fn builder(data: &[u8]) {
    let Ok(plan) = BuildPlan::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut options = BuildOptions::default()
        .block_size(usize::from(plan.block_size).max(1))
        .block_restart_interval(usize::from(plan.restart_interval % 32).max(1))
        .compression(if plan.snappy {
            Compression::Snappy
        } else {
            Compression::None
        });
    let bloom_bits = usize::from(plan.bloom_bits % 31);
    if bloom_bits > 0 {
        options = options.filter_policy(BloomFilterPolicy::new(bloom_bits));
    }
    if let Some(bits) = plan.local_bits {
        options = options.extra_filter_policy(CacheLocalBloomPolicy::new(usize::from(bits % 31)));
    }
    let mut builder = TableBuilder::new(Vec::new(), options).expect("in-memory builder");
    let mut model = BTreeMap::new();
    for (key, value) in &plan.entries {
        let in_order = model
            .last_key_value()
            .is_none_or(|(last, _): (&Vec<u8>, _)| key > last);
        match builder.add(key, value) {
            Ok(()) => {
                assert!(in_order, "accepted a key out of order");
                model.insert(key.clone(), value.clone());
            }
            Err(Error::KeyOutOfOrder { .. }) => assert!(!in_order, "refused a key in order"),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    let summary = builder.finish().expect("finish in memory");
    assert_eq!(summary.entries, model.len() as u64);

    let read = ReadOptions::default()
        .filter_policy(BloomFilterPolicy::new(bloom_bits.max(1)))
        .extra_filter_policy(CacheLocalBloomPolicy::new(10));
    let table = Table::open(Arc::new(builder.into_inner()), read).expect("open what we built");
    for (key, value) in &model {
        assert_eq!(table.get(key).expect("get"), Some(value.clone()));
    }
    for probe in &plan.probes {
        assert_eq!(table.get(probe).expect("get"), model.get(probe).cloned());
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = table.entries().collect::<Result<_, _>>().expect("scan");
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(scanned, expected);
    table.verify().expect("verify what we built");
}
