//! Bounded resources and failing I/O: lengths that claim more than the file holds are errors
//! before any allocation, degenerate blocks are errors, and every I/O failure surfaces as an
//! `Err` without a panic or a wrong value.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use leveltable_table::block::Block;
use leveltable_table::block_builder::BlockBuilder;
use leveltable_table::format::{BlockHandle, BlockTrailer, FOOTER_LEN, Footer};
use leveltable_table::{
    BloomFilterPolicy, BuildOptions, BytewiseComparator, Compression, Error, ReadAt, ReadOptions,
    Table, TableBuilder, create_table,
};

const FOUR_GIB: u64 = 4 << 30;

fn small_table(compression: Compression) -> (Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let options = BuildOptions::default()
        .block_size(128)
        .compression(compression)
        .filter_policy(BloomFilterPolicy::new(10));
    let mut builder = TableBuilder::new(Vec::new(), options).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..50u32 {
        let (k, v) = (
            format!("k{i:04}").into_bytes(),
            format!("v{i}").repeat(3).into_bytes(),
        );
        builder.add(&k, &v).unwrap();
        model.insert(k, v);
    }
    builder.finish().unwrap();
    (builder.into_inner(), model)
}

/// An in-memory source that records the largest read asked of it and hides its bytes, so
/// the reader must go through `read_exact_at` (as for a file).
struct Watched {
    bytes: Vec<u8>,
    largest_read: AtomicU64,
}

impl ReadAt for Watched {
    fn size(&self) -> io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.largest_read
            .fetch_max(buf.len() as u64, Ordering::Relaxed);
        self.bytes.read_exact_at(buf, offset)
    }
}

fn with_footer(table: &[u8], edit: impl FnOnce(&mut Footer)) -> Vec<u8> {
    let footer_at = table.len() - FOOTER_LEN;
    let mut footer = Footer::decode_from(&mut &table[footer_at..]).unwrap();
    edit(&mut footer);
    let mut out = table[..footer_at].to_vec();
    footer.encode_to(&mut out);
    out
}

#[test]
fn handles_claiming_four_gib_fail_before_allocating() {
    let (table, _) = small_table(Compression::None);
    type Edit = (&'static str, fn(&mut Footer));
    let edits: [Edit; 3] = [
        ("index size", |f| f.index.size = FOUR_GIB),
        ("metaindex size", |f| f.metaindex.size = FOUR_GIB),
        ("index offset", |f| f.index.offset = FOUR_GIB),
    ];
    for (what, edit) in edits {
        let bytes = with_footer(&table, edit);
        let len = bytes.len() as u64;
        let source = Watched {
            bytes,
            largest_read: AtomicU64::new(0),
        };
        let err = Table::open(&source, ReadOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{what}: {err}");
        assert!(
            source.largest_read.load(Ordering::Relaxed) <= len,
            "{what}: read past the file"
        );
    }
}

#[test]
fn handle_overflowing_u64_is_corruption() {
    let (table, _) = small_table(Compression::None);
    let bytes = with_footer(&table, |f| f.index = BlockHandle::new(u64::MAX - 2, 10));
    let err = Table::open(&bytes[..], ReadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
}

/// A table whose only data block is snappy-typed with `contents`, and a valid checksum.
fn table_with_snappy_block(contents: &[u8]) -> Vec<u8> {
    table_with_data_handle(contents, |len| BlockHandle::new(0, len))
}

/// A table whose only data block is snappy-typed with `contents` under a valid checksum, and
/// whose one index entry (itself under a valid checksum) holds `handle(contents.len())`.
fn table_with_data_handle(contents: &[u8], handle: impl FnOnce(u64) -> BlockHandle) -> Vec<u8> {
    let mut file = contents.to_vec();
    BlockTrailer::for_block(contents, Compression::Snappy).encode_to(&mut file);
    let data = handle(contents.len() as u64);

    let write_block = |file: &mut Vec<u8>, block: &[u8]| {
        let handle = BlockHandle::new(file.len() as u64, block.len() as u64);
        file.extend_from_slice(block);
        BlockTrailer::for_block(block, Compression::None).encode_to(file);
        handle
    };
    let mut meta = BlockBuilder::new(16);
    let metaindex = write_block(&mut file, meta.finish());
    let mut index = BlockBuilder::new(1);
    let mut handle = Vec::new();
    data.encode_to(&mut handle);
    index.add(b"zzz", &handle);
    let index = write_block(&mut file, index.finish());
    Footer { metaindex, index }.encode_to(&mut file);
    file
}

/// An index entry whose size is near 2^64, under a valid checksum: every read through it
/// is corruption, and nothing overflows on the way (the read counters add the trailer to the
/// size before the handle is checked against the file).
#[test]
fn data_handle_sizes_near_u64_max_are_corruption() {
    for size in [u64::MAX, u64::MAX - 4, u64::MAX - 5, u64::MAX / 2] {
        let file = table_with_data_handle(b"\x00", |_| BlockHandle::new(0, size));
        let table = Table::open(&file[..], ReadOptions::default()).unwrap();
        let err = table.get(b"a").unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{size}: {err}");
        assert!(table.entries().next().unwrap().is_err(), "{size}");
        let mut it = table.iter();
        it.seek_to_first();
        assert!(!it.valid() && it.status().is_err(), "{size}");
        assert!(table.verify().is_err(), "{size}");
        assert!(table.counters().data_bytes_read >= 1, "{size}");
    }
}

#[test]
fn compressed_block_claiming_four_gib_is_corruption() {
    // A snappy stream starts with its uncompressed length as a varint: 4 GiB here.
    let mut contents = Vec::new();
    let mut n = FOUR_GIB;
    while n >= 0x80 {
        contents.push(n as u8 | 0x80);
        n >>= 7;
    }
    contents.push(n as u8);
    contents.extend_from_slice(b"\x00abc");
    let file = table_with_snappy_block(&contents);
    let table = Table::open(&file[..], ReadOptions::default()).unwrap();
    let err = table.get(b"a").unwrap_err();
    assert!(matches!(err, Error::Corruption { offset: 0, .. }), "{err}");
    assert!(table.verify().is_err());
}

#[test]
fn degenerate_blocks_are_errors() {
    let block_with_restarts = |entries: &[u8], restarts: &[u32]| {
        let mut b = entries.to_vec();
        for r in restarts {
            b.extend_from_slice(&r.to_le_bytes());
        }
        b.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
        b
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("shorter than the count", vec![1, 0, 0]),
        ("zero restarts", block_with_restarts(b"", &[])),
        ("count larger than the block", vec![0, 0, 0, 0, 9, 0, 0, 0]),
        ("count of 2^32 - 1", vec![0xff; 8]),
        (
            "first restart not at 0",
            block_with_restarts(b"\x00\x01\x01ab", &[1]),
        ),
        (
            "restart past the entries",
            block_with_restarts(b"\x00\x01\x01ab", &[0, 40]),
        ),
        (
            "restarts out of order",
            block_with_restarts(b"\x00\x01\x01ab\x00\x01\x01cd", &[0, 5, 3]),
        ),
    ];
    for (what, data) in cases {
        let err = Block::new(&data).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{what}: {err}");
    }

    // Varints longer than 5 bytes, and lengths past the block, stop iteration with an error.
    let entries: Vec<(&str, &[u8])> = vec![
        (
            "6-byte shared length",
            b"\x80\x80\x80\x80\x80\x00\x01\x01ab",
        ),
        ("non_shared past the block", b"\x00\x7f\x01ab"),
        ("value past the block", b"\x00\x01\x7fab"),
        ("shared on the first entry", b"\x01\x01\x01ab"),
    ];
    let cmp = BytewiseComparator;
    for (what, entry) in entries {
        let data = block_with_restarts(entry, &[0]);
        let block = Block::new(&data).unwrap();
        let mut iter = block.iter(&cmp);
        iter.seek_to_first();
        assert!(!iter.valid(), "{what}");
        assert!(iter.status().is_err(), "{what}");
        assert!(block.check(&cmp).is_err(), "{what}");
    }
}

#[test]
fn varints_longer_than_ten_bytes_in_handles_are_errors() {
    let long = [0x80u8; 11];
    assert!(BlockHandle::decode_from(&mut &long[..]).is_err());
    let mut footer = vec![0x80u8; FOOTER_LEN - 8];
    footer.extend_from_slice(&0xdb47_7524_8b80_fb57u64.to_le_bytes());
    assert!(Footer::decode_from(&mut &footer[..]).is_err());
}

/// A writer that fails once more than `limit` bytes have been written.
struct FailingWriter {
    written: Vec<u8>,
    limit: usize,
}

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written.len() + buf.len() > self.limit {
            return Err(io::Error::other("disk full"));
        }
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn writer_failing_after_n_bytes_surfaces_as_err() {
    let (table, model) = small_table(Compression::Snappy);
    let options = || {
        BuildOptions::default()
            .block_size(128)
            .compression(Compression::Snappy)
            .filter_policy(BloomFilterPolicy::new(10))
    };
    for limit in 0..table.len() {
        let writer = FailingWriter {
            written: Vec::new(),
            limit,
        };
        let mut builder = TableBuilder::new(writer, options()).unwrap();
        let mut failed = false;
        for (k, v) in &model {
            if let Err(e) = builder.add(k, v) {
                assert!(matches!(e, Error::Io(_)), "limit {limit}: {e}");
                failed = true;
                break;
            }
        }
        if !failed {
            let e = builder.finish().unwrap_err();
            assert!(matches!(e, Error::Io(_)), "limit {limit}: {e}");
        }
        // Once failed, the builder keeps failing rather than writing a torn table.
        assert!(builder.finish().is_err(), "limit {limit}");
    }
    // With room for everything, the same builder writes the table exactly.
    let writer = FailingWriter {
        written: Vec::new(),
        limit: table.len(),
    };
    let mut builder = TableBuilder::new(writer, options()).unwrap();
    for (k, v) in &model {
        builder.add(k, v).unwrap();
    }
    builder.finish().unwrap();
    assert_eq!(builder.into_inner().written, table);
}

/// A source whose reads fail when they touch byte `fail_at`.
struct FailingReader<'a> {
    bytes: &'a [u8],
    fail_at: u64,
}

impl ReadAt for FailingReader<'_> {
    fn size(&self) -> io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if (offset..offset + buf.len() as u64).contains(&self.fail_at) {
            return Err(io::Error::other("injected read error"));
        }
        self.bytes.read_exact_at(buf, offset)
    }
}

#[test]
fn reader_failing_at_chosen_offsets_surfaces_as_err() {
    for compression in [Compression::None, Compression::Snappy] {
        let (table, model) = small_table(compression);
        for fail_at in 0..table.len() as u64 {
            let source = FailingReader {
                bytes: &table,
                fail_at,
            };
            let options = ReadOptions::default().filter_policy(BloomFilterPolicy::new(10));
            let table = match Table::open(source, options) {
                Ok(t) => t,
                Err(e) => {
                    assert!(matches!(e, Error::Io(_)), "open, fail at {fail_at}: {e}");
                    continue;
                }
            };
            let mut errors = 0;
            for (k, v) in &model {
                match table.get(k) {
                    Ok(found) => assert_eq!(found.as_ref(), Some(v), "fail at {fail_at}"),
                    Err(e) => {
                        assert!(matches!(e, Error::Io(_)), "get, fail at {fail_at}: {e}");
                        errors += 1;
                    }
                }
            }
            let scan: Result<Vec<_>, _> = table.entries().collect();
            match scan {
                Ok(entries) => assert_eq!(entries, model.clone().into_iter().collect::<Vec<_>>()),
                Err(e) => {
                    assert!(matches!(e, Error::Io(_)), "scan, fail at {fail_at}: {e}");
                    errors += 1;
                }
            }
            // Every byte of a data block is read by the scan.
            assert!(
                errors > 0 || table.verify().is_ok(),
                "fail at {fail_at} unnoticed"
            );
        }
    }
}

#[test]
fn failed_atomic_builds_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ldb");
    let err = create_table(&path, BuildOptions::default(), |t| {
        t.add(b"b", b"1")?;
        t.add(b"a", b"2")
    })
    .unwrap_err();
    assert!(matches!(err, Error::KeyOutOfOrder { .. }), "{err}");
    assert!(!path.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file left"
    );

    let mut file =
        leveltable_table::AtomicTableFile::create(&path, BuildOptions::default()).unwrap();
    file.add(b"a", b"1").unwrap();
    let temp = file.temp_path().to_owned();
    assert!(temp.exists());
    drop(file);
    assert!(!temp.exists() && !path.exists());
}

/// A table whose only data block is `block`, stored uncompressed under a valid checksum.
fn table_with_raw_data_block(block: &[u8]) -> Vec<u8> {
    let mut file = Vec::new();
    let mut write_block = |block: &[u8]| {
        let handle = BlockHandle::new(file.len() as u64, block.len() as u64);
        file.extend_from_slice(block);
        BlockTrailer::for_block(block, Compression::None).encode_to(&mut file);
        handle
    };
    let data = write_block(block);
    let metaindex = write_block(BlockBuilder::new(16).finish());
    let mut index = BlockBuilder::new(1);
    let mut handle = Vec::new();
    data.encode_to(&mut handle);
    index.add(b"zzz", &handle);
    let index = write_block(index.finish());
    Footer { metaindex, index }.encode_to(&mut file);
    file
}

/// Entry lengths at the top of their 32-bit encoding, under a valid checksum, are corruption
/// on every path that decodes entries: the offsets they would make are never computed.
#[test]
fn entry_lengths_of_u32_max_are_corruption() {
    const MAX: &[u8] = b"\xff\xff\xff\xff\x0f"; // 2^32 - 1 as a varint32
    let blocks: Vec<(&str, Vec<u8>)> = vec![
        ("key and value lengths", [b"\x00", MAX, MAX, b"ab"].concat()),
        ("value length", [b"\x00\x01", MAX, b"ab"].concat()),
        (
            "shared length after a good entry",
            [b"\x00\x01\x01a1", MAX, b"\x01\x01b2"].concat(),
        ),
    ];
    for (what, entries) in blocks {
        let mut block = entries;
        block.extend_from_slice(&0u32.to_le_bytes()); // one restart, at 0
        block.extend_from_slice(&1u32.to_le_bytes());
        let file = table_with_raw_data_block(&block);
        let table = Table::open(&file[..], ReadOptions::default()).unwrap();
        let err = table.get(b"b").unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{what}: {err}");
        let mut it = table.iter();
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        assert!(it.status().is_err(), "{what}");
        it.seek_to_last();
        while it.valid() {
            it.prev();
        }
        assert!(it.status().is_err(), "{what}");
        assert!(table.entries().any(|e| e.is_err()), "{what}");
        assert!(table.verify().is_err(), "{what}");
    }
}
