//! Tables written by LevelDB 1.23 itself (see `testdata/golden.txt` for how they were made):
//! read back exactly, and rebuilt byte for byte.

use std::path::PathBuf;

use leveltable_table::{
    BloomFilterPolicy, BuildOptions, Compression, ReadOptions, Table, TableBuilder,
};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let text = std::fs::read_to_string(testdata("entries.tsv")).unwrap();
    let entries: Vec<_> = text
        .lines()
        .map(|line| {
            let (k, v) = line.split_once('\t').expect("KEY<TAB>VALUE");
            (unhex(k), unhex(v))
        })
        .collect();
    assert_eq!(entries.len(), 1000);
    entries
}

/// The options LevelDB used (testdata/golden.txt).
fn options(compression: Compression) -> BuildOptions {
    BuildOptions::default()
        .block_size(1024)
        .block_restart_interval(16)
        .compression(compression)
        .filter_policy(BloomFilterPolicy::new(10))
}

fn read_back(file: &str) {
    let entries = entries();
    let bytes = std::fs::read(testdata(file)).unwrap();
    let table = Table::open(
        std::fs::File::open(testdata(file)).unwrap(),
        ReadOptions::default().filter_policy(BloomFilterPolicy::new(10)),
    )
    .unwrap();
    assert_eq!(table.properties().file_size, bytes.len() as u64);
    assert_eq!(
        table.properties().filter_policy.as_deref(),
        Some("leveldb.BuiltinBloomFilter2")
    );
    let summary = table.verify().unwrap();
    assert_eq!(summary.entries, 1000);

    let scanned: Vec<_> = table.entries().map(Result::unwrap).collect();
    assert_eq!(scanned, entries);
    let mut backwards: Vec<_> = table.entries().rev().map(Result::unwrap).collect();
    backwards.reverse();
    assert_eq!(backwards, entries);
    for (k, v) in &entries {
        assert_eq!(table.get(k).unwrap().as_ref(), Some(v));
        let mut absent = k.clone();
        absent.push(0);
        assert_eq!(table.get(&absent).unwrap(), None);
    }
    let c = table.counters();
    assert_eq!(c.filter_checks, 2000);
    assert!(c.filter_negatives > 900, "{c:?}");
}

#[test]
fn reads_leveldb_table_without_compression() {
    read_back("table_none.ldb");
}

#[test]
fn reads_leveldb_table_with_snappy() {
    read_back("table_snappy.ldb");
}

#[test]
fn builds_leveldb_bytes_exactly() {
    let mut builder = TableBuilder::new(Vec::new(), options(Compression::None)).unwrap();
    for (k, v) in entries() {
        builder.add(&k, &v).unwrap();
    }
    let summary = builder.finish().unwrap();
    let ours = builder.into_inner();
    let leveldb = std::fs::read(testdata("table_none.ldb")).unwrap();
    assert_eq!(ours.len(), leveldb.len());
    if let Some(i) = ours.iter().zip(&leveldb).position(|(a, b)| a != b) {
        panic!("first difference at byte {i} of {}", leveldb.len());
    }
    assert_eq!(summary.file_size, leveldb.len() as u64);
}

#[test]
fn snappy_table_has_the_same_entries_and_layout() {
    // Snappy implementations may encode differently, so compare structure, not bytes.
    let mut builder = TableBuilder::new(Vec::new(), options(Compression::Snappy)).unwrap();
    for (k, v) in entries() {
        builder.add(&k, &v).unwrap();
    }
    let summary = builder.finish().unwrap();
    let leveldb = Table::open(
        std::fs::read(testdata("table_snappy.ldb")).unwrap(),
        ReadOptions::default(),
    )
    .unwrap();
    let ours = Table::open(builder.into_inner(), ReadOptions::default()).unwrap();
    assert_eq!(
        ours.properties().data_blocks,
        leveldb.properties().data_blocks
    );
    assert_eq!(summary.data_blocks, leveldb.properties().data_blocks);
    let a: Vec<_> = ours.entries().map(Result::unwrap).collect();
    let b: Vec<_> = leveldb.entries().map(Result::unwrap).collect();
    assert_eq!(a, b);
}

#[test]
fn golden_file_lengths_and_checksums_match() {
    let golden = std::fs::read_to_string(testdata("golden.txt")).unwrap();
    let mut seen = 0;
    for line in golden.lines().filter(|l| l.starts_with("table\t")) {
        let fields: Vec<&str> = line.split('\t').collect();
        let bytes = std::fs::read(testdata(fields[1])).unwrap();
        assert_eq!(bytes.len().to_string(), fields[2], "{}", fields[1]);
        let crc = crc32c_plain(&bytes);
        assert_eq!(format!("{crc:08x}"), fields[3], "{}", fields[1]);
        seen += 1;
    }
    assert_eq!(seen, 2);
}

/// Bitwise CRC-32C (Castagnoli, reflected 0x82f63b78), independent of the crc32c crate.
fn crc32c_plain(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
