//! `leveltable db` on directories whose checksums are valid but whose claims lie: MANIFEST
//! ranges the tables do not hold, and a table whose keys are out of order. Every command
//! ends, prints no entry twice, and names the file it blames.

use crate::common;

use std::cmp::Ordering;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use leveltable_db::dbformat::{ValueType, append_internal_key, ldb_build_options};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::{FileMetaData, VersionEdit};
use leveltable_db::{Db, DbOptions};
use leveltable_table::{BytewiseComparator, Comparator, TableBuilder};

/// A command that may not run longer than this: a read that loops fails the test.
const LIMIT: Duration = Duration::from_secs(60);

fn ikey(user: &[u8], sequence: u64) -> Vec<u8> {
    let mut k = Vec::new();
    append_internal_key(&mut k, user, sequence, ValueType::Value).unwrap();
    k
}

fn rewrite_manifest(dir: &Path, files: Vec<(usize, FileMetaData)>) {
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.starts_with("MANIFEST-") {
            fs::remove_file(dir.join(name)).unwrap();
        }
    }
    let edit = VersionEdit {
        comparator: Some(BytewiseComparator.name().to_string()),
        log_number: Some(0),
        next_file_number: Some(1000),
        last_sequence: Some(1000),
        new_files: files,
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    fs::write(dir.join("MANIFEST-000001"), w.into_inner()).unwrap();
    fs::write(dir.join("CURRENT"), "MANIFEST-000001\n").unwrap();
}

/// Runs `leveltable db ARGS DIR`, bounded in time, returning exit code, stdout, stderr.
fn db(args: &[&str], dir: &Path) -> (i32, String, String) {
    db_with(args, dir, &[])
}

/// Runs `leveltable db ARGS DIR MORE`, bounded in time.
fn db_with(args: &[&str], dir: &Path, more: &[&str]) -> (i32, String, String) {
    let out = leveltable()
        .arg("db")
        .args(args)
        .arg(dir)
        .args(more)
        .timeout(LIMIT)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A database of 1,000 keys in several tables on the last level.
fn built(dir: &Path) -> Vec<(u64, u64)> {
    leveltable()
        .args(["db", "build"])
        .arg(dir)
        .args(["--max-file-size", "4096"])
        .write_stdin(sorted_tsv(1000))
        .assert()
        .success();
    let db = Db::open(dir, DbOptions::default()).unwrap();
    db.properties().levels[6]
        .iter()
        .map(|t| (t.number, t.size))
        .collect()
}

#[test]
fn ranges_that_lie_are_refused_or_named_and_salvage_reads_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let tables = built(&dir);
    assert!(tables.len() > 2);

    // Every table claims a..b: the level's files overlap.
    let lying = |files: &[(u64, u64)]| {
        files
            .iter()
            .map(|&(number, size)| {
                let meta = FileMetaData {
                    number,
                    file_size: size,
                    smallest: ikey(b"a", 0),
                    largest: ikey(b"b", 0),
                };
                (6, meta)
            })
            .collect()
    };
    rewrite_manifest(&dir, lying(&tables));
    for (args, keys) in [
        (&["verify"][..], &[][..]),
        (&["dump"], &[]),
        (&["get"], &["key000500"]),
    ] {
        let (code, _, err) = db_with(args, &dir, keys);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("MANIFEST-000001") && err.contains("overlap"),
            "{err}"
        );
        // Naming the two tables whose ranges overlap (equal ranges sort by number).
        let mut numbers: Vec<u64> = tables.iter().map(|&(number, _)| number).collect();
        numbers.sort_unstable();
        for number in &numbers[..2] {
            assert!(err.contains(&format!("{number:06}.ldb")), "{args:?}: {err}");
        }
    }
    let (code, out, err) = db(&["dump", "--salvage"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1000);

    // One table only, claiming a..b: verify names it with both ranges; dump refuses.
    rewrite_manifest(&dir, lying(&tables[..1]));
    let (code, _, err) = db(&["verify"], &dir);
    assert_eq!(code, 2, "{err}");
    let name = format!("{:06}.ldb", tables[0].0);
    assert!(err.contains(&name) && err.contains("key range"), "{err}");
    assert!(
        err.contains("\"key000000\"") && err.contains("\"a\" @ 0"),
        "{err}"
    );
    let (code, out, err) = db(&["dump"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&name) && err.contains("key range"), "{err}");
    assert!(out.lines().count() < 1000);
}

/// Every key follows the one before: the builder writes entries in the order given.
struct AsGiven;

impl Comparator for AsGiven {
    fn name(&self) -> &str {
        "test.AsGiven"
    }
    fn compare(&self, _: &[u8], _: &[u8]) -> Ordering {
        Ordering::Greater
    }
    fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
    fn find_short_successor(&self, _: &mut Vec<u8>) {}
}

#[test]
fn a_table_out_of_order_ends_every_dump_and_salvage_lists_each_entry_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    fs::create_dir(&dir).unwrap();
    // 700 keys, written in an order that interleaves the two halves.
    let mut order: Vec<u64> = (0..700).collect();
    order.sort_by_key(|&i| (i % 2, i));
    let options = ldb_build_options(Some(10))
        .block_size(256)
        .comparator(Arc::new(AsGiven));
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for &i in &order {
        b.add(&ikey(format!("key{i:06}").as_bytes(), i + 1), b"value")
            .unwrap();
    }
    b.finish().unwrap();
    let bytes = b.into_inner();
    fs::write(dir.join("000005.ldb"), &bytes).unwrap();
    rewrite_manifest(
        &dir,
        vec![(
            0,
            FileMetaData {
                number: 5,
                file_size: bytes.len() as u64,
                smallest: ikey(b"key000000", 1),
                largest: ikey(b"key000699", 700),
            },
        )],
    );
    for args in [&["dump"][..], &["dump", "--internal"]] {
        let (code, out, err) = db(args, &dir);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("000005.ldb") && err.contains("key order"),
            "{err}"
        );
        assert!(
            out.lines().count() <= 700,
            "{args:?} printed an entry twice"
        );
    }
    let (code, _, err) = db(&["verify"], &dir);
    assert_eq!(code, 2);
    assert!(
        err.contains("000005.ldb") && err.contains("key order"),
        "{err}"
    );
    for args in [
        &["dump", "--salvage"][..],
        &["dump", "--salvage", "--internal"],
    ] {
        let (code, out, err) = db(args, &dir);
        assert_eq!(code, 0, "{args:?}: {err}");
        let mut lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 700, "{args:?}");
        lines.dedup();
        assert_eq!(lines.len(), 700, "{args:?} printed an entry twice");
    }
}
