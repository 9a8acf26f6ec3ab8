//! Tables to read: built here in several shapes, plus the LevelDB-written test tables of the
//! table crate.

use leveltable_table::{BloomFilterPolicy, BuildOptions, Compression, ReadOptions, TableBuilder};

/// A table shape.
pub struct Shape {
    pub name: &'static str,
    pub entries: u32,
    pub value_len: usize,
    pub block_size: usize,
    pub compression: Compression,
    pub filter: bool,
}

pub const SHAPES: &[Shape] = &[
    Shape {
        name: "small",
        entries: 100,
        value_len: 10,
        block_size: 4096,
        compression: Compression::None,
        filter: true,
    },
    Shape {
        name: "snappy",
        entries: 20_000,
        value_len: 100,
        block_size: 4096,
        compression: Compression::Snappy,
        filter: true,
    },
    Shape {
        name: "nofilter",
        entries: 20_000,
        value_len: 50,
        block_size: 1024,
        compression: Compression::None,
        filter: false,
    },
    // An index and filter larger than the default tail: open needs a second request.
    Shape {
        name: "bigindex",
        entries: 200_000,
        value_len: 8,
        block_size: 256,
        compression: Compression::Snappy,
        filter: true,
    },
];

pub fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i * 2).into_bytes()
}

/// A key between two present ones.
pub fn absent_key(i: u32) -> Vec<u8> {
    format!("key{:08}", i * 2 + 1).into_bytes()
}

pub fn value(i: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(len.max(v.len()), b'a' + (i % 26) as u8);
    v
}

pub fn build_options(s: &Shape) -> BuildOptions {
    let o = BuildOptions::default()
        .compression(s.compression)
        .block_size(s.block_size);
    if s.filter {
        o.filter_policy(BloomFilterPolicy::new(10))
    } else {
        o
    }
}

pub fn read_options(filter: bool) -> ReadOptions {
    let o = ReadOptions::default().verify_checksums(true);
    if filter {
        o.filter_policy(BloomFilterPolicy::new(10))
    } else {
        o
    }
}

/// The bytes of a table of shape `s`.
pub fn build(s: &Shape) -> Vec<u8> {
    let mut b = TableBuilder::new(Vec::new(), build_options(s)).unwrap();
    for i in 0..s.entries {
        b.add(&key(i), &value(i, s.value_len)).unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

/// The LevelDB-written tables of the table crate's tests.
pub fn leveldb_tables() -> Vec<(&'static str, Vec<u8>)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../table/testdata/");
    ["table_snappy.ldb", "table_none.ldb", "db_internal.ldb"]
        .into_iter()
        .map(|n| (n, std::fs::read(format!("{dir}{n}")).unwrap()))
        .collect()
}
