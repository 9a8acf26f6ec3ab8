//! The progress callbacks of long operations (`Db::verify_with_progress`,
//! `Db::salvage_with_progress`, `commit_with_progress`): what they count, that the count only
//! rises and that it ends at its total; and that the plain calls give the same results.

use std::fs;
use std::path::Path;

use leveltable_db::log_writer::LogWriter;
use leveltable_db::write_batch::WriteBatchBuilder;
use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, PartBuilder, commit_with_progress};

/// Entries `k000000`, … with 200-byte values, in tables of about 64 KiB.
fn options() -> BulkOptions {
    BulkOptions::default().max_file_size(64 << 10)
}

fn add_entries(range: std::ops::Range<u32>, mut add: impl FnMut(&[u8], &[u8])) {
    for i in range {
        add(format!("k{i:06}").as_bytes(), &[b'v'; 200]);
    }
}

fn build_db(dir: &Path) {
    let mut builder = DbBuilder::create(dir, options()).unwrap();
    add_entries(0..3000, |k, v| builder.add(k, v).unwrap());
    builder.finish().unwrap();
}

/// Every call, asserting that `done` never falls, never passes `total`, and `total` stays.
fn record(calls: &mut Vec<(u64, u64)>) -> impl FnMut(u64, u64) + '_ {
    move |done, total| {
        if let Some(&(last, last_total)) = calls.last() {
            assert!(done >= last, "{done} after {last}");
            assert_eq!(total, last_total);
        }
        assert!(done <= total, "{done} of {total}");
        calls.push((done, total));
    }
}

/// The bytes of the files in `dir` whose names end with one of `suffixes`.
fn bytes_of(dir: &Path, suffixes: &[&str]) -> (u64, usize) {
    let mut sum = 0;
    let mut count = 0;
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if suffixes.iter().any(|s| name.ends_with(s)) {
            sum += e.metadata().unwrap().len();
            count += 1;
        }
    }
    (sum, count)
}

#[test]
fn verify_counts_the_bytes_of_the_tables_up_to_their_sum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build_db(&dir);
    let (table_bytes, tables) = bytes_of(&dir, &[".ldb"]);
    assert!(tables >= 5, "{tables} tables");
    let db = Db::open(&dir, DbOptions::default()).unwrap();
    let mut calls = Vec::new();
    let summary = db.verify_with_progress(&mut record(&mut calls)).unwrap();
    assert_eq!(summary, db.verify().unwrap());
    assert_eq!(calls.last(), Some(&(table_bytes, table_bytes)));
    // Within tables too: many more calls than tables, and one well before the first ends.
    assert!(calls.len() > 10 * tables, "{} calls", calls.len());
    assert!(
        calls[0].0 < table_bytes / tables as u64 / 2,
        "{:?}",
        calls[0]
    );
}

#[test]
fn verify_of_a_damaged_table_stops_counting_there() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build_db(&dir);
    // The third table's middle byte: its data block fails its checksum.
    let third = dir.join("000004.ldb");
    let mut bytes = fs::read(&third).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&third, &bytes).unwrap();
    let before: u64 = ["000002.ldb", "000003.ldb"]
        .iter()
        .map(|n| fs::metadata(dir.join(n)).unwrap().len())
        .sum();
    let db = Db::open(&dir, DbOptions::default()).unwrap();
    let mut calls = Vec::new();
    db.verify_with_progress(&mut record(&mut calls))
        .unwrap_err();
    let &(done, total) = calls.last().unwrap();
    assert!(done > before && done <= before + middle as u64, "{done}");
    assert!(done < total);
}

#[test]
fn salvage_counts_every_log_and_table_up_to_their_sum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build_db(&dir);
    let mut batch = WriteBatchBuilder::new(1);
    batch.put(b"a", b"1").put(b"k000005", b"new");
    let mut log = LogWriter::new(Vec::new());
    log.add_record(batch.as_bytes()).unwrap();
    fs::write(dir.join("000090.log"), log.into_inner()).unwrap();
    // A table that cannot be read at all is counted as well, then skipped.
    fs::write(dir.join("000091.ldb"), vec![7u8; 5000]).unwrap();
    let (bytes, files) = bytes_of(&dir, &[".ldb", ".log"]);

    let mut calls = Vec::new();
    let db =
        Db::salvage_with_progress(&dir, DbOptions::default(), &mut record(&mut calls)).unwrap();
    // One call before each file and one at the end.
    assert_eq!(calls.len(), files + 1, "{calls:?}");
    assert_eq!(calls[0], (0, bytes));
    assert_eq!(calls.last(), Some(&(bytes, bytes)));
    assert_eq!(db.get(b"k000005").unwrap().as_deref(), Some(&b"new"[..]));
    let plain = Db::salvage(&dir, DbOptions::default()).unwrap();
    assert_eq!(db.properties().skipped, plain.properties().skipped);
    assert_eq!(db.properties().skipped.len(), 1);
}

#[test]
fn commit_counts_the_parts_bytes_checked_then_placed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for (i, range) in [0..1500, 1500..3000].into_iter().enumerate() {
        let staging = tmp.path().join(format!("part{i}"));
        let mut builder = PartBuilder::create(&staging, options()).unwrap();
        add_entries(range, |k, v| builder.add(k, v).unwrap());
        parts.push(builder.finish().unwrap());
    }
    let bytes: u64 = parts.iter().map(|p| p.bytes()).sum();
    let files: usize = parts.iter().map(|p| p.files.len()).sum();
    let dir = tmp.path().join("db");
    let mut calls = Vec::new();
    let summary = commit_with_progress(&dir, &parts, &mut record(&mut calls)).unwrap();
    assert_eq!(summary.bytes, bytes);
    // One call at the start, one per file checked, one per file placed.
    assert_eq!(calls.len(), 1 + 2 * files, "{calls:?}");
    assert_eq!(calls[0], (0, bytes));
    assert_eq!(calls.last(), Some(&(bytes, bytes)));
    // Halfway once every file is checked, before any is placed.
    assert_eq!(calls[files], (bytes / 2, bytes));
    let db = Db::open(&dir, DbOptions::default()).unwrap();
    assert_eq!(db.verify().unwrap().tables, files as u64);
}

#[test]
fn commit_refused_stops_counting_at_the_check() {
    let tmp = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    // Out of order: the second part's keys come first.
    for (i, range) in [1500..3000, 0..1500].into_iter().enumerate() {
        let staging = tmp.path().join(format!("part{i}"));
        let mut builder = PartBuilder::create(&staging, options()).unwrap();
        add_entries(range, |k, v| builder.add(k, v).unwrap());
        parts.push(builder.finish().unwrap());
    }
    let mut calls = Vec::new();
    commit_with_progress(tmp.path().join("db"), &parts, &mut record(&mut calls)).unwrap_err();
    let &(done, total) = calls.last().unwrap();
    assert!(done < total / 2, "{done} of {total}");
    assert!(!tmp.path().join("db").exists());
}
