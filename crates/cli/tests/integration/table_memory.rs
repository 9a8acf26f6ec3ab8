//! `db dump`, `db get` and `db verify` keep the memory open tables hold within
//! `--table-memory` (default 512 MiB): a database of 16 tiny tables whose zstd index blocks
//! each decompress to 48 MiB (768 MiB in all, from about 200 KB of files) is read with a
//! peak resident set of at most the budget plus 64 MiB, measured by `/usr/bin/time`.
//!
//! The tables are written by hand: 16 data blocks of ten keys, and an index block of 16
//! entries whose separator keys are 3 MiB each (valid: each sorts between the blocks it
//! separates), compressed with zstd.

use crate::common;

use std::path::{Path, PathBuf};

use leveltable_db::dbformat::{ValueType, append_internal_key};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::{FileMetaData, VersionEdit};
use leveltable_table::block_builder::BlockBuilder;
use leveltable_table::codec;
use leveltable_table::format::{BlockHandle, BlockTrailer, Footer};
use leveltable_table::{BytewiseComparator, Comparator, Compression};

const MIB: u64 = 1 << 20;
/// Tables in the database, all at level 0 with the same keys.
const TABLES: u64 = 16;
/// The bytes each table's index block decompresses to.
const INDEX_BYTES: usize = 48 << 20;
/// The slack the peak may exceed the budget by: the program, its block cache (8 MiB) and
/// the buffers of one table being read.
const SLACK: u64 = 64 * MIB;

fn ikey(user_key: &[u8], sequence: u64) -> Vec<u8> {
    let mut k = Vec::new();
    append_internal_key(&mut k, user_key, sequence, ValueType::Value).unwrap();
    k
}

/// Appends `contents` as a block of type `compression` to `file`; returns its handle.
fn put_block(file: &mut Vec<u8>, contents: &[u8], compression: Compression) -> BlockHandle {
    let handle = BlockHandle::new(file.len() as u64, contents.len() as u64);
    file.extend_from_slice(contents);
    file.extend_from_slice(&BlockTrailer::for_block(contents, compression).to_bytes());
    handle
}

/// Data blocks per table, each with one index entry.
const BLOCKS: usize = 16;

/// A table of the keys `k000..k009`, `k010..k019`, ... (`BLOCKS` blocks of ten, values
/// `v`, sequence 1), whose index block decompresses to about `index_bytes`: the separator
/// after block `i` is `k{i}z` followed by filler.
fn inflating_table(index_bytes: usize) -> Vec<u8> {
    let mut file = Vec::new();
    let mut index = BlockBuilder::new(1);
    // 4 KiB of noise repeated: compresses well, but not into zstd's run-length blocks, so
    // the stored block stays well within the codec's expansion cap.
    let pattern = common::noise(7, 4096);
    let filler = |n: usize| -> Vec<u8> { pattern.iter().copied().cycle().take(n).collect() };
    for block in 0..BLOCKS {
        let mut data = BlockBuilder::new(16);
        for digit in 0..10 {
            data.add(&ikey(format!("k{block:02}{digit}").as_bytes(), 1), b"v");
        }
        let handle = put_block(&mut file, data.finish(), Compression::None);
        let mut separator = format!("k{block:02}z").into_bytes();
        separator.extend(filler(index_bytes / BLOCKS));
        let mut value = Vec::new();
        handle.encode_to(&mut value);
        index.add(&ikey(&separator, 1), &value);
    }
    let metaindex = put_block(&mut file, BlockBuilder::new(1).finish(), Compression::None);
    let stored = codec::compress(Compression::Zstd, index.finish()).unwrap();
    assert!(stored.len() < 1 << 20, "{} bytes", stored.len());
    let index = put_block(&mut file, &stored, Compression::Zstd);
    Footer { metaindex, index }.encode_to(&mut file);
    file
}

/// The database: `TABLES` copies of one inflating table at level 0.
fn build_db(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let table = inflating_table(INDEX_BYTES);
    let mut edit = VersionEdit {
        comparator: Some(BytewiseComparator.name().to_string()),
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(10),
        ..VersionEdit::default()
    };
    for i in 0..TABLES {
        let number = 10 + i;
        std::fs::write(dir.join(format!("{number:06}.ldb")), &table).unwrap();
        edit.new_files.push((
            0,
            FileMetaData {
                number,
                file_size: table.len() as u64,
                smallest: ikey(b"k000", 1),
                largest: ikey(format!("k{:02}9", BLOCKS - 1).as_bytes(), 1),
            },
        ));
    }
    let mut manifest = LogWriter::new(Vec::new());
    manifest.add_record(&edit.encode()).unwrap();
    std::fs::write(dir.join("MANIFEST-000002"), manifest.into_inner()).unwrap();
    std::fs::write(dir.join("CURRENT"), "MANIFEST-000002\n").unwrap();
}

/// Runs `leveltable ARGS` under `/usr/bin/time`: its exit code, standard output and peak
/// resident set in bytes.
fn measured(args: &[&str]) -> (Option<i32>, String, u64) {
    let (out, peak) = common::run_measuring_memory(args);
    let code = out.status.code();
    // The command's own messages, less the measurement (and time's note on a failure).
    let stdout = common::stdout_of(&out);
    if code != Some(0) && code != Some(1) {
        panic!(
            "leveltable {args:?} failed ({code:?}): {}",
            common::stderr_of(&out)
        );
    }
    (code, stdout, peak)
}

fn db_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build_db(&dir);
    (tmp, dir)
}

/// Checks dump, get and verify under `budget` (`None`: the default, 512 MiB).
fn within(dir: &Path, budget: Option<u64>) {
    let flag = budget.map(|b| b.to_string());
    let limit = budget.unwrap_or(512 * MIB) + SLACK;
    let with = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.push(dir.display().to_string());
        if let Some(b) = &flag {
            all.extend(["--table-memory".to_owned(), b.clone()]);
        }
        all
    };
    let run = |args: &[&str]| {
        let all = with(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        measured(&all)
    };

    let (code, out, peak) = run(&["db", "dump"]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), BLOCKS * 10, "{out}");
    assert!(out.starts_with("k000\tv\nk001\tv\n"), "{out}");
    println!("dump, budget {budget:?}: peak {} MiB", peak / MIB);
    assert!(peak <= limit, "dump: peak {peak} over {limit}");

    // A key within every table's range that none holds: each of the 16 tables is searched.
    let mut get = with(&["db", "get"]);
    get.push("k05x".into());
    let get: Vec<&str> = get.iter().map(String::as_str).collect();
    let (code, _, peak) = measured(&get);
    assert_eq!(code, Some(1), "k05x is not in the database");
    println!("get, budget {budget:?}: peak {} MiB", peak / MIB);
    assert!(peak <= limit, "get: peak {peak} over {limit}");

    let (code, out, peak) = run(&["db", "verify"]);
    assert_eq!(code, Some(0));
    let entries = TABLES as usize * BLOCKS * 10;
    assert!(
        out.starts_with(&format!("ok: 16 tables, {entries} entries")),
        "{out}"
    );
    println!("verify, budget {budget:?}: peak {} MiB", peak / MIB);
    assert!(peak <= limit, "verify: peak {peak} over {limit}");
}

#[test]
fn inflating_index_blocks_stay_within_a_small_budget() {
    if !common::time_available() {
        return;
    }
    let (_tmp, dir) = db_dir();
    within(&dir, Some(128 * MIB));
}

#[test]
fn inflating_index_blocks_stay_within_the_default_budget() {
    if !common::time_available() {
        return;
    }
    let (_tmp, dir) = db_dir();
    within(&dir, None);
}

#[test]
fn a_table_over_the_budget_is_named_with_both_sizes() {
    let (_tmp, dir) = db_dir();
    let out = common::leveltable()
        .args(["db", "dump"])
        .arg(&dir)
        .args(["--table-memory", &(32 * MIB).to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr_of(&out);
    // The newest level-0 table is read first.
    assert!(err.contains("000025.ldb"), "{err}");
    assert!(
        err.contains(&format!("budget of {} bytes", 32 * MIB)),
        "{err}"
    );
    assert!(err.contains("(48."), "{err}");
    assert!(err.contains("--table-memory"), "{err}");
}
