//! The reader's behaviour beyond plain correctness: filters sparing block reads, the cache,
//! counters, properties, concurrency, and hostile bytes.

use std::collections::BTreeMap;
use std::sync::Arc;

use leveltable_table::format::Footer;
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Cache, Compression, Error, FilterPolicy, ReadOptions, Table,
    TableBuilder,
};

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Well-mixed keys: LevelDB's Bloom hash has no final mix, so keys differing only in their
/// last bytes (sequential integers) would show its known weakness instead of the filter's
/// design rate.
fn key(i: u64) -> Vec<u8> {
    format!("{:016x}", splitmix(i)).into_bytes()
}

fn build(n: u64, options: BuildOptions) -> (Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let model: BTreeMap<Vec<u8>, Vec<u8>> = (0..n)
        .map(|i| {
            (
                key(i),
                format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes(),
            )
        })
        .collect();
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in &model {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    (b.into_inner(), model)
}

#[test]
fn ten_bit_filter_spares_98_percent_of_absent_reads() {
    const N: u64 = 20_000;
    let options = BuildOptions::default().filter_policy(BloomFilterPolicy::new(10));
    let (bytes, model) = build(N, options);
    let bytes: Arc<[u8]> = bytes.into();

    let with = Table::open(
        Arc::clone(&bytes),
        ReadOptions::default().filter_policy(BloomFilterPolicy::new(10)),
    )
    .unwrap();
    let without = Table::open(Arc::clone(&bytes), ReadOptions::default()).unwrap();
    assert_eq!(
        with.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    assert_eq!(without.properties().filter_policy, None);
    assert_eq!(
        without.properties().filters.len(),
        1,
        "listed even when unused"
    );

    // Absent keys from the same distribution (indices the table does not hold).
    for i in N..2 * N {
        let k = key(i);
        assert!(!model.contains_key(&k));
        assert_eq!(with.get(&k).unwrap(), None);
        assert_eq!(without.get(&k).unwrap(), None);
    }
    let (w, wo) = (with.counters(), without.counters());
    assert_eq!(w.filter_checks, w.filter_negatives + w.data_blocks_read);
    assert_eq!(wo.filter_checks, 0);
    // Without a filter nearly every absent get reads a block (all but keys past the end).
    assert!(wo.data_blocks_read > N * 9 / 10, "{wo:?}");
    let ratio = w.data_blocks_read as f64 / wo.data_blocks_read as f64;
    assert!(
        ratio <= 0.02,
        "with filter {w:?}, without {wo:?}: ratio {ratio}"
    );

    // Present keys always read their block: the filter has no false negatives.
    with.reset_counters();
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(with.get(k).unwrap().as_ref(), Some(v));
    }
    let c = with.counters();
    assert_eq!(c.filter_negatives, 0);
    assert_eq!(c.data_blocks_read, model.len().div_ceil(7) as u64);
}

/// `at_block_end` marks exactly the last entry of each data block (the entry after it is
/// the first of another block), and `seek_past_block_of` at such an entry lands where
/// `next` does.
#[test]
fn resuming_past_a_block_lands_where_next_does() {
    let (bytes, model) = build(3_000, BuildOptions::default().block_size(256));
    let table = Table::open(bytes, ReadOptions::default()).unwrap();
    let blocks = table.properties().data_blocks;
    let mut it = table.iter();
    it.seek_to_first();
    let (mut ends, mut seen) = (0u64, 0usize);
    while it.valid() {
        seen += 1;
        if it.at_block_end() {
            ends += 1;
            let key = it.key().to_vec();
            let mut resumed = table.iter();
            resumed.seek_past_block_of(&key);
            it.next();
            assert_eq!(resumed.valid(), it.valid());
            assert_eq!(resumed.key(), it.key());
            assert_eq!(resumed.value(), it.value());
            resumed.status().unwrap();
        } else {
            it.next();
        }
    }
    it.status().unwrap();
    assert_eq!(seen, model.len());
    assert_eq!(ends, blocks);
}

#[test]
fn cache_serves_repeated_reads_and_is_shared() {
    let (bytes, model) = build(
        5_000,
        BuildOptions::default().compression(Compression::None),
    );
    let cache = Cache::shared(64 << 20);
    let opaque_source = || {
        // A File-like source (no borrowed bytes), so blocks are owned and cacheable.
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &bytes).unwrap();
        f
    };
    let a = Table::open(
        opaque_source(),
        ReadOptions::default().block_cache(Arc::clone(&cache)),
    )
    .unwrap();
    let b = Table::open(
        opaque_source(),
        ReadOptions::default().block_cache(Arc::clone(&cache)),
    )
    .unwrap();
    for _ in 0..3 {
        for (k, v) in &model {
            assert_eq!(a.get(k).unwrap().as_ref(), Some(v));
        }
    }
    let blocks = a.properties().data_blocks;
    let c = a.counters();
    assert_eq!(c.data_blocks_read, blocks, "each block read once");
    assert_eq!(c.cache_hits, 3 * model.len() as u64 - blocks);
    assert_eq!(cache.len() as u64, blocks);
    // The second table has its own keys in the shared cache.
    assert!(b.get(model.keys().next().unwrap()).unwrap().is_some());
    assert_eq!(b.counters().data_blocks_read, 1);
    assert_eq!(cache.len() as u64, blocks + 1);

    // fill_cache off: reads bypass insertion.
    let cache2 = Cache::shared(64 << 20);
    let c2 = Table::open(
        opaque_source(),
        ReadOptions::default()
            .block_cache(Arc::clone(&cache2))
            .fill_cache(false),
    )
    .unwrap();
    for k in model.keys().take(100) {
        c2.get(k).unwrap();
    }
    assert!(cache2.is_empty());
    assert_eq!(c2.counters().cache_hits, 0);

    // A cursor told not to fill the cache reads what is cached from the cache and adds
    // nothing; by default it fills the cache as the table's options say.
    let cache3 = Cache::shared(64 << 20);
    let d = Table::open(
        opaque_source(),
        ReadOptions::default().block_cache(Arc::clone(&cache3)),
    )
    .unwrap();
    let first = model.keys().next().unwrap();
    assert!(d.get(first).unwrap().is_some());
    assert_eq!(cache3.len(), 1);
    let mut it = d.iter().fill_cache(false);
    it.seek_to_first();
    let mut seen = 0;
    while it.valid() {
        assert_eq!(model.get(it.key()).map(Vec::as_slice), Some(it.value()));
        seen += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, model.len());
    assert_eq!(cache3.len(), 1);
    assert_eq!(
        d.counters().cache_hits,
        1,
        "the cached block came from the cache"
    );
    assert_eq!(d.counters().data_blocks_read, blocks);
    let mut it = d.iter();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    assert_eq!(cache3.len() as u64, blocks);
}

#[test]
fn properties_describe_the_table() {
    let options = BuildOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .block_size(1024);
    let (bytes, _) = build(3_000, options.clone());
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    let (_, model) = build(3_000, BuildOptions::default());
    for (k, v) in &model {
        builder.add(k, v).unwrap();
    }
    let summary = builder.finish().unwrap();
    assert_eq!(builder.into_inner(), bytes);
    let table = Table::open(
        bytes,
        ReadOptions::default().filter_policy(BloomFilterPolicy::new(10)),
    )
    .unwrap();
    let p = table.properties();
    assert_eq!(p.file_size, summary.file_size);
    assert_eq!(p.data_blocks, summary.data_blocks);
    assert_eq!(p.data_size, summary.data_size);
    assert_eq!(p.index_size, summary.index_size);
    assert_eq!(p.metaindex_size, summary.metaindex_size);
    assert_eq!(p.filter_size, summary.filter_size);
    assert_eq!(p.filters.len(), 1);
    assert_eq!(p.filters[0].policy_name, "leveldb.BuiltinBloomFilter2");
    assert_eq!(p.filters[0].handle.size, summary.filter_size);
}

/// A second filter under another name, as a future better policy would add.
struct Named(&'static str, BloomFilterPolicy);

impl FilterPolicy for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
        self.1.create_filter(keys, dst)
    }
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        self.1.key_may_match(key, filter)
    }
}

#[test]
fn extra_filters_are_written_after_the_leveldb_one_and_preferred() {
    let plain = BuildOptions::default()
        .compression(Compression::None)
        .filter_policy(BloomFilterPolicy::new(10));
    let dual = plain
        .clone()
        .extra_filter_policy(Named("test.Other", BloomFilterPolicy::new(20)));
    let (single_bytes, model) = build(2_000, plain);
    let (dual_bytes, _) = build(2_000, dual);
    assert!(dual_bytes.len() > single_bytes.len());
    // Data blocks and the LevelDB filter block are at the same offsets, same bytes.
    let single = Table::open(single_bytes.clone(), ReadOptions::default()).unwrap();
    let data_and_filter = single.properties().filters[0].handle.offset as usize
        + single.properties().filter_size as usize;
    assert_eq!(
        dual_bytes[..data_and_filter],
        single_bytes[..data_and_filter]
    );

    let read = ReadOptions::default()
        .filter_policy(BloomFilterPolicy::new(10))
        .extra_filter_policy(Named("test.Other", BloomFilterPolicy::new(20)));
    let table = Table::open(dual_bytes.clone(), read).unwrap();
    let names: Vec<&str> = table
        .properties()
        .filters
        .iter()
        .map(|f| f.policy_name.as_str())
        .collect();
    assert_eq!(names, ["leveldb.BuiltinBloomFilter2", "test.Other"]);
    assert_eq!(
        table.properties().filter_policy.as_deref(),
        Some("test.Other")
    );
    for (k, v) in &model {
        assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
    }
    let summary = table.verify().unwrap();
    assert_eq!(summary.filter_blocks, 2);

    // A reader that only knows LevelDB's policy uses that one.
    let leveldb_only = Table::open(
        dual_bytes,
        ReadOptions::default().filter_policy(BloomFilterPolicy::new(10)),
    )
    .unwrap();
    assert_eq!(
        leveldb_only.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
}

#[test]
fn concurrent_gets_and_scans_agree() {
    let (bytes, model) = build(
        4_000,
        BuildOptions::default()
            .block_size(512)
            .filter_policy(BloomFilterPolicy::new(10)),
    );
    let mut f = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut f, &bytes).unwrap();
    let table = Table::open(
        f,
        ReadOptions::default()
            .filter_policy(BloomFilterPolicy::new(10))
            .block_cache(Cache::shared(32 * 1024)),
    )
    .unwrap();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (table, model) = (&table, &model);
            s.spawn(move || {
                for (i, (k, v)) in model.iter().enumerate() {
                    if i as u64 % 8 == t {
                        assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
                        assert_eq!(table.get(&key(1_000_000 + i as u64)).unwrap(), None);
                    }
                }
                let scanned = table
                    .range(model.keys().nth(100 * t as usize).unwrap().as_slice()..)
                    .count();
                assert_eq!(scanned, model.len() - 100 * t as usize);
            });
        }
    });
}

/// Opens and reads everything through every path; returns the first error.
fn read_all(bytes: Vec<u8>, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<(), Error> {
    let table = Table::open(
        bytes,
        ReadOptions::default().filter_policy(BloomFilterPolicy::new(10)),
    )?;
    let mut first_error = None;
    for (k, v) in model {
        match table.get(k) {
            // A value is either right or reported missing; never a wrong one.
            Ok(Some(got)) => assert_eq!(&got, v, "wrong value for {k:?}"),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    for e in table.entries() {
        match e {
            Ok((k, v)) => {
                // Bit flips can invent keys in a table read without checksums, but with
                // checksums (the default) every entry seen must be a real one.
                assert_eq!(model.get(&k), Some(&v), "invented entry {k:?}");
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let mut it = table.iter();
    it.seek_to_last();
    while it.valid() {
        it.prev();
    }
    table.verify()?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[test]
fn every_bit_flip_and_truncation_is_detected_or_harmless() {
    let mut sizes = Vec::new();
    for compression in [Compression::None, Compression::Snappy] {
        let options = BuildOptions::default()
            .compression(compression)
            .block_size(100)
            .block_restart_interval(3)
            .filter_policy(BloomFilterPolicy::new(10));
        let model: BTreeMap<Vec<u8>, Vec<u8>> = (0..24)
            .map(|i| {
                (
                    key(i),
                    format!("v{i}{}", "xyz".repeat(i as usize % 12)).into_bytes(),
                )
            })
            .collect();
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for (k, v) in &model {
            b.add(k, v).unwrap();
        }
        b.finish().unwrap();
        let bytes = b.into_inner();
        sizes.push(bytes.len());
        read_all(bytes.clone(), &model).unwrap();
        let footer_at = bytes.len() - 48;
        let footer = Footer::decode_from(&mut &bytes[footer_at..]).unwrap();
        let mut undetected = 0;
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                if read_all(bad.clone(), &model).is_ok() {
                    // Every block is covered by its checksum. What may change unnoticed is
                    // footer bytes that do not change what the footer says: its zero padding,
                    // and the high bit of a handle's last varint byte when the next byte is
                    // padding (a longer encoding of the same number).
                    assert!(i >= footer_at, "flip at {i} bit {bit} unnoticed");
                    let decoded = Footer::decode_from(&mut &bad[footer_at..]).unwrap();
                    assert_eq!(decoded, footer, "flip at {i} bit {bit} changed the footer");
                    undetected += 1;
                }
            }
        }
        let mut handles = Vec::new();
        footer.metaindex.encode_to(&mut handles);
        footer.index.encode_to(&mut handles);
        let padding = 40 - handles.len();
        assert_eq!(undetected, 8 * padding + 1);
        for len in 0..bytes.len() {
            assert!(
                read_all(bytes[..len].to_vec(), &model).is_err(),
                "truncated to {len}"
            );
        }
    }
    assert!(
        sizes[1] < sizes[0],
        "snappy compressed some blocks: {sizes:?}"
    );
}

#[test]
fn handles_past_the_end_fail_before_allocating() {
    let (bytes, _) = build(10, BuildOptions::default());
    let footer_at = bytes.len() - 48;
    let mut bad = bytes.clone();
    // Index handle claiming 4 GiB at offset 0: the footer's second handle.
    let mut handles = Vec::new();
    let table = Table::open(bytes.clone(), ReadOptions::default()).unwrap();
    table.properties().footer.metaindex.encode_to(&mut handles);
    leveltable_table::format::BlockHandle::new(0, 4 << 30).encode_to(&mut handles);
    bad[footer_at..footer_at + handles.len()].copy_from_slice(&handles);
    let err = Table::open(bad, ReadOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("table: corrupt block handle at offset {footer_at}")
    );

    let err = Table::open(vec![0u8; 47], ReadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::TooShort { size: 47 }));
    let err = Table::open(vec![0u8; 100], ReadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::NotATable));
}

/// The worked example of docs/format.md: data blocks (0, 52) and (57, 23), filter (85, 18),
/// metaindex (108, 47), index (160, 30), footer at 195.
fn worked_example() -> Vec<u8> {
    let options = BuildOptions::default()
        .compression(Compression::None)
        .block_size(40)
        .block_restart_interval(2)
        .filter_policy(BloomFilterPolicy::new(10));
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in [
        ("apple", "red"),
        ("apricot", "orange"),
        ("avocado", "green"),
        ("banana", "yellow"),
    ] {
        b.add(k.as_bytes(), v.as_bytes()).unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

/// Recomputes the trailer of the block at `offset` of `size` bytes after an edit, so that
/// the checksum passes and deeper checks are reached.
fn reseal(bytes: &mut [u8], offset: usize, size: usize) {
    use leveltable_table::format::{BlockTrailer, block_checksum, mask_crc};
    let block_type = bytes[offset + size];
    let crc = mask_crc(block_checksum(&bytes[offset..offset + size], block_type));
    let t = BlockTrailer {
        block_type,
        masked_crc: crc,
    };
    bytes[offset + size..offset + size + 5].copy_from_slice(&t.to_bytes());
}

/// Opens `bytes` and gets `key`, returning the error message.
fn get_error(bytes: Vec<u8>, key: &[u8], verify: bool) -> String {
    let options = ReadOptions::default().verify_checksums(verify);
    match Table::open(bytes, options).and_then(|t| t.get(key)) {
        Ok(v) => panic!("no error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_tables_report_what_and_where() {
    let good = worked_example();
    assert_eq!(good.len(), 243);
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let cases: Vec<(Vec<u8>, &[u8], bool, &str)> = vec![
        // A flipped byte in data block 1 (offset 57).
        (
            edit(&|b| b[60] ^= 1),
            b"banana",
            true,
            "table: block checksum mismatch at offset 57",
        ),
        // Entry header of block 1 with a value length running past the restart array.
        (
            edit(&|b| {
                b[59] = 0x7f;
                reseal(b, 57, 23);
            }),
            b"banana",
            true,
            "table: corrupt block entry at offset 57",
        ),
        // Restart count of data block 0 (count at 48) claims more than the block holds.
        (
            edit(&|b| {
                b[48] = 200;
                reseal(b, 0, 52);
            }),
            b"apple",
            true,
            "table: corrupt block restart array at offset 48",
        ),
        // A type byte no writer uses, checksum resealed: unsupported, not corrupt.
        (
            edit(&|b| {
                b[52] = 7;
                reseal(b, 0, 52);
            }),
            b"apple",
            true,
            "table: unsupported block compression type 7 at offset 0 \
             (profile auto; no known writer uses it)",
        ),
        // Without checksum verification the type byte itself is what gives it away.
        (
            edit(&|b| b[52] = 7),
            b"apple",
            false,
            "table: unsupported block compression type 7 at offset 0 \
             (profile auto; no known writer uses it)",
        ),
        // Index entry 0's handle (0, 52) at 170..172 made (127, 127): past the end of the file.
        (
            edit(&|b| {
                b[170] = 0x7f;
                b[171] = 0x7f;
                reseal(b, 160, 30);
            }),
            b"apple",
            true,
            "table: corrupt block handle at offset 160",
        ),
        // Index entry 1 (at 172) holds a handle cut short: both varint bytes say "more".
        (
            edit(&|b| {
                b[176] = 0x80;
                b[177] = 0x80;
                reseal(b, 160, 30);
            }),
            b"banana",
            true,
            "table: corrupt block handle at offset 172",
        ),
        // Metaindex checksum.
        (
            edit(&|b| b[120] ^= 0x20),
            b"apple",
            true,
            "table: block checksum mismatch at offset 108",
        ),
        // Footer magic.
        (
            edit(&|b| b[242] = 0),
            b"apple",
            true,
            "table: not an sstable (bad magic number)",
        ),
    ];
    for (bytes, key, verify, want) in cases {
        let got = get_error(bytes, key, verify);
        assert!(got.starts_with(want), "got {got:?}, want {want:?}");
    }
}

#[test]
fn corrupt_snappy_block_is_reported() {
    let options = BuildOptions::default().compression(Compression::Snappy);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    b.add(b"key", &[b'a'; 500]).unwrap();
    b.finish().unwrap();
    let good = b.into_inner();
    let table = Table::open(good.clone(), ReadOptions::default()).unwrap();
    let size = table.properties().footer.metaindex.offset as usize - 5;
    assert!(size < 100, "the block is compressed");
    assert_eq!(good[size], 1, "snappy type byte");
    // The uncompressed length claims far more than the block could expand to.
    let mut bad = good.clone();
    bad[0] = 0xff;
    bad[1] = 0xff;
    bad[2] = 0xff;
    bad[3] = 0x7f;
    reseal(&mut bad, 0, size);
    assert_eq!(
        get_error(bad, b"key", true),
        "table: corrupt snappy block that decompresses to more than 968 bytes (type 1) \
         at offset 0"
    );
    // Garbage after a plausible length.
    let mut bad = good.clone();
    for byte in &mut bad[2..size] {
        *byte = 0xfe;
    }
    reseal(&mut bad, 0, size);
    assert_eq!(
        get_error(bad, b"key", true),
        "table: corrupt snappy block contents (type 1, profile auto) at offset 0"
    );
}
