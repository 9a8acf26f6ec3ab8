//! Writes the seed corpora of the fuzz targets under `fuzz/seeds/<target>/`: small real
//! tables (with and without compression and filters), their blocks, filter blocks and
//! footers, and LevelDB-written tables from `crates/table/testdata`.
//!
//! ```sh
//! cargo run -p leveltable-fuzz-targets --example make_seeds
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy};
use leveltable_table::format::{FOOTER_LEN, Footer};
use leveltable_table::{BuildOptions, Compression, TableBuilder};

fn build(entries: usize, block_size: usize, compression: Compression, filters: bool) -> Vec<u8> {
    let mut options = BuildOptions::default()
        .block_size(block_size)
        .block_restart_interval(4)
        .compression(compression);
    if filters {
        options = options
            .filter_policy(BloomFilterPolicy::new(10))
            .extra_filter_policy(CacheLocalBloomPolicy::new(10));
    }
    let mut builder = TableBuilder::new(Vec::new(), options).expect("in-memory builder");
    for i in 0..entries {
        let key = format!("key{:05}", i * 7);
        let value = format!("value{i}").repeat(i % 5 + 1);
        builder
            .add(key.as_bytes(), value.as_bytes())
            .expect("sorted keys");
    }
    builder.finish().expect("finish in memory");
    builder.into_inner()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::create_dir_all(dir).expect("create seed directory");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let tables = [
        ("plain-none", build(20, 64, Compression::None, false)),
        ("filtered-none", build(30, 128, Compression::None, true)),
        ("filtered-snappy", build(40, 256, Compression::Snappy, true)),
        ("empty", build(0, 4096, Compression::None, true)),
    ];
    for (name, bytes) in &tables {
        write(&root.join("table"), name, bytes);
        let footer_at = bytes.len() - FOOTER_LEN;
        let footer_bytes = &bytes[footer_at..];
        write(&root.join("footer"), name, footer_bytes);
        let footer = Footer::decode_from(&mut &footer_bytes[..]).expect("our own footer");
        let index = &bytes[footer.index.offset as usize..][..footer.index.size as usize];
        write(&root.join("block"), &format!("{name}-index"), index);
        let meta = &bytes[footer.metaindex.offset as usize..][..footer.metaindex.size as usize];
        write(&root.join("block"), &format!("{name}-metaindex"), meta);
    }
    // The first data block of the uncompressed tables starts at offset 0.
    let (_, plain) = &tables[0];
    let first_block_len = 64usize.min(plain.len());
    write(
        &root.join("block"),
        "plain-data-prefix",
        &plain[..first_block_len],
    );

    let testdata = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../table/testdata");
    for name in ["table_none.ldb", "table_snappy.ldb"] {
        if let Ok(bytes) = fs::read(testdata.join(name)) {
            write(&root.join("table"), &format!("leveldb-{name}"), &bytes);
        }
    }

    let policy = BloomFilterPolicy::new(10);
    let mut builder = leveltable_filter_block::FilterBlockBuilder::new(&policy);
    for (offset, key) in [(0u64, &b"foo"[..]), (3100, b"bar"), (9000, b"box")] {
        builder.start_block(offset).expect("increasing offsets");
        builder.add_key(key);
    }
    write(
        &root.join("filter_block"),
        "three-filters",
        &builder.finish(),
    );
    let mut bloom = Vec::new();
    leveltable_filter_policy::FilterPolicy::create_filter(
        &CacheLocalBloomPolicy::new(10),
        &[b"hello", b"world"],
        &mut bloom,
    );
    write(
        &root.join("bloom"),
        "local-two-keys",
        &[&[0u8][..], &bloom].concat(),
    );
    write(
        &root.join("bloom"),
        "leveldb-two-keys",
        &[0, 0x11, 0x40, 0, 0x41, 0x44, 0x10, 0x40, 0x10, 6],
    );
    write(
        &root.join("builder"),
        "sample",
        b"\x00\x10\x04\x01\x0a\x01\x07\x02\x03abc\x02xy\x01q",
    );
    db_seeds(&root);
    eprintln!("wrote seeds under {}", root.display());
}

/// Seeds of the database targets: logs, MANIFEST records, write batches, and a MANIFEST
/// with a log for the directory target.
fn db_seeds(root: &Path) {
    use leveltable_db::log_writer::LogWriter;
    use leveltable_db::version_edit::{FileMetaData, VersionEdit};
    use leveltable_db::write_batch::WriteBatchBuilder;

    let log_of = |records: &[Vec<u8>]| {
        let mut log = Vec::new();
        let mut writer = LogWriter::new(&mut log);
        for r in records {
            writer.add_record(r).expect("in memory");
        }
        log
    };
    let mut batch = WriteBatchBuilder::new(1);
    batch
        .put(b"k\x03", b"new")
        .delete(b"k\x05")
        .put(b"zz", b"added");
    let batch = batch.as_bytes().to_vec();
    let mut other = WriteBatchBuilder::new(4);
    other.put(b"k\x03", b"newer");
    let other = other.as_bytes().to_vec();
    write(&root.join("write_batch"), "three-ops", &batch);
    write(&root.join("write_batch"), "one-op", &other);

    write(
        &root.join("log"),
        "two-batches",
        &log_of(&[batch.clone(), other.clone()]),
    );
    // A record longer than a block: FIRST, MIDDLE and LAST fragments.
    write(
        &root.join("log"),
        "fragmented",
        &log_of(&[vec![7u8; 70_000], b"tail".to_vec()]),
    );
    // The follower reads a live log: whole batches, then one cut short by the writer.
    let mut big = WriteBatchBuilder::new(5);
    big.put(b"big", &[9u8; 40_000]);
    let whole = log_of(&[batch.clone(), other.clone(), big.as_bytes().to_vec()]);
    write(&root.join("follow"), "three-batches", &whole);
    write(
        &root.join("follow"),
        "cut-in-a-fragment",
        &whole[..whole.len() - 9_000],
    );
    // The torn-chunk follower reads the writer's decisions from its input: any bytes do,
    // so its seeds are pseudo-random bytes of a few lengths.
    let mut state = 1000u64;
    for (i, len) in [200, 600, 1500, 4000].into_iter().enumerate() {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        write(&root.join("follow_live"), &format!("seed-{i}"), &bytes);
    }

    let mut edit = VersionEdit {
        comparator: Some("leveldb.BytewiseComparator".to_owned()),
        log_number: Some(9),
        prev_log_number: Some(0),
        next_file_number: Some(10),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    edit.compact_pointers
        .push((1, b"k\x04\x01\0\0\0\0\0\0\0".to_vec()));
    edit.deleted_files.insert((2, 5));
    for (number, lo, hi) in [(2u64, 0u8, 3u8), (3, 4, 7)] {
        let key = |i: u8| [b'k', i, 1, 0, 0, 0, 0, 0, 0, 0].to_vec();
        edit.new_files.push((
            6,
            FileMetaData {
                number,
                file_size: 200,
                smallest: key(lo),
                largest: key(hi),
            },
        ));
    }
    let record = edit.encode();
    write(&root.join("version_edit"), "every-tag", &record);
    // The directory target: its first byte splits the rest into MANIFEST and log.
    let manifest = log_of(&[record]);
    let log = log_of(&[batch, other]);
    let split = u8::try_from(manifest.len() * 256 / (manifest.len() + log.len())).unwrap_or(255);
    write(
        &root.join("db_dir"),
        "manifest-and-log",
        &[&[split][..], &manifest, &log].concat(),
    );
    write(
        &root.join("db_dir"),
        "log-only",
        &[&[0u8][..], &log].concat(),
    );
}
