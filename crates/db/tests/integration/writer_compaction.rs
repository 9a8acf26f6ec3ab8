//! Compactions of a database open for writing while writes go on: a memtable flushed in the
//! middle of a compaction must not land where the compaction's outputs will.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use leveltable_db::{Db, DbOptions, WritableDb, WritableOptions, WriteOptions};

/// The table numbers in `dir`.
fn table_numbers(dir: &Path) -> BTreeSet<u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".ldb")?.parse().ok()
        })
        .collect()
}

/// The user key of an internal key.
fn user_key(k: &[u8]) -> &[u8] {
    &k[..k.len() - 8]
}

/// Panics unless the files of each level below 0 are disjoint.
fn assert_levels_disjoint(db: &WritableDb) {
    let tables = db.tables();
    for level in 1..7 {
        let mut ranges: Vec<(&[u8], &[u8], u64)> = tables
            .iter()
            .filter(|t| t.level == Some(level))
            .map(|t| (user_key(&t.smallest), user_key(&t.largest), t.number))
            .collect();
        ranges.sort();
        for w in ranges.windows(2) {
            assert!(
                w[0].1 < w[1].0,
                "level {level}: table {} ends at {:?}, table {} starts at {:?}",
                w[0].2,
                String::from_utf8_lossy(w[0].1),
                w[1].2,
                String::from_utf8_lossy(w[1].0),
            );
        }
    }
}

/// Lays out level 1 as `[a..c]` and `[x..z]` over a level 2 of `bulk` bytes of `b…` keys and
/// a `y`: a compaction of level 1 then merges everything, and its last output spans the gap
/// from `b…` to `z` where level 1 and level 2 hold nothing.
pub fn lay_out_gap(dir: &Path, bulk: usize) {
    let big = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 20);
    let db = WritableDb::open(dir, big).unwrap();
    let w = WriteOptions::default();
    let value = vec![b'v'; 1000];
    for i in 0..bulk / 1000 {
        db.put(format!("b{i:08}").as_bytes(), &value, w).unwrap();
    }
    db.flush().unwrap();
    for keys in [&[&b"y"[..]][..], &[b"a", b"c"], &[b"x", b"z"]] {
        for k in keys {
            db.put(k, b"edge", w).unwrap();
        }
        db.flush().unwrap();
    }
    let at = |level| db.files_at_level(level);
    assert_eq!((at(0), at(1), at(2)), (0, 2, 2), "{:?}", db.tables());
    db.close().unwrap();
}

#[test]
fn a_flush_during_a_range_compaction_keeps_levels_disjoint() {
    let dir = tempfile::tempdir().unwrap();
    lay_out_gap(dir.path(), 6 << 20);
    let before = table_numbers(dir.path());
    let options = WritableOptions::default().write_buffer_size(64 << 10);
    let db = Arc::new(WritableDb::open(dir.path(), options).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop, path) = (Arc::clone(&db), Arc::clone(&stop), dir.path().to_owned());
        let newest = *before.last().unwrap();
        std::thread::spawn(move || {
            // Writes start once the compaction has created its first output.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !table_numbers(&path).iter().any(|&n| n > newest) {
                assert!(Instant::now() < deadline, "no compaction output appeared");
                std::thread::sleep(Duration::from_millis(1));
            }
            let value = vec![b'm'; 100];
            let mut written = 0u64;
            while !stop.load(Ordering::Acquire) || written < 2000 {
                db.put(
                    format!("m{written:08}").as_bytes(),
                    &value,
                    WriteOptions::default(),
                )
                .unwrap();
                written += 1;
            }
            written
        })
    };
    db.compact_range(None, None).unwrap();
    stop.store(true, Ordering::Release);
    let written = writer.join().unwrap();
    assert_levels_disjoint(&db);
    let db = Arc::into_inner(db).unwrap();
    db.close().unwrap();

    let read = Db::open(dir.path(), DbOptions::default()).unwrap();
    for i in (0..written).step_by(97).chain([written - 1]) {
        let key = format!("m{i:08}");
        assert_eq!(
            read.get(key.as_bytes()).unwrap().as_deref(),
            Some(&[b'm'; 100][..]),
            "{key}"
        );
    }
    assert_eq!(read.get(b"z").unwrap().as_deref(), Some(&b"edge"[..]));
    drop(read);
    let db = WritableDb::open(dir.path(), WritableOptions::default()).unwrap();
    assert_levels_disjoint(&db);
    assert_eq!(db.get(b"b00000000").unwrap().map(|v| v.len()), Some(1000));
}

/// Once `wait_for_compactions` returns, no flush or compaction is due or running: the files,
/// the levels and the compaction count stay as they are, and level 0 is below the size
/// that triggers a compaction.
#[test]
fn waiting_for_compactions_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(16 << 10);
    let db = WritableDb::open(dir.path(), options).unwrap();
    let value = vec![b'v'; 200];
    for i in 0..4000u64 {
        let key = format!("k{:08}", (i * 7919) % 4000);
        db.put(key.as_bytes(), &value, WriteOptions::default())
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let (files, compactions) = (table_numbers(dir.path()), db.compactions());
    assert!(compactions > 0, "the writes made no compaction due");
    assert!(
        db.files_at_level(0) < 4,
        "{} level-0 tables",
        db.files_at_level(0)
    );
    // Nothing runs on: a reader sees the same files a while later.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(table_numbers(dir.path()), files);
    assert_eq!(db.compactions(), compactions);
    assert_levels_disjoint(&db);
}

/// The rows of LevelDB's `leveldb.stats` table: level, files, then size, seconds, MiB read
/// and MiB written.
fn stats_rows(text: &str) -> Vec<(usize, usize, [u64; 4])> {
    let mut lines = text.lines();
    assert_eq!(
        [lines.next(), lines.next(), lines.next()],
        [
            Some("                               Compactions"),
            Some("Level  Files Size(MB) Time(sec) Read(MB) Write(MB)"),
            Some("--------------------------------------------------"),
        ],
        "{text}"
    );
    lines
        .map(|line| {
            assert_eq!(line.len(), 50, "a row of LevelDB's widths: {line:?}");
            let fields: Vec<u64> = line
                .split_whitespace()
                .map(|f| f.parse().unwrap())
                .collect();
            assert_eq!(fields.len(), 6, "{line:?}");
            (
                fields[0] as usize,
                fields[1] as usize,
                [fields[2], fields[3], fields[4], fields[5]],
            )
        })
        .collect()
}

#[test]
fn leveldb_stats_report_each_levels_files_and_work() {
    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(1 << 20);
    let db = WritableDb::open(dir.path(), options).unwrap();
    let fresh = stats_rows(&db.property("leveldb.stats").unwrap());
    assert!(fresh.is_empty(), "{fresh:?}");
    // 6 MiB of values snappy cannot shrink, in random key order.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..6 * 1024 {
        let key = format!("k{:08}", next() % 100_000);
        let value: Vec<u8> = (0..128).flat_map(|_| next().to_le_bytes()).collect();
        db.put(key.as_bytes(), &value, WriteOptions::default())
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let rows = stats_rows(&db.property("leveldb.stats").unwrap());
    let tables = db.tables();
    let mut listed = Vec::new();
    for level in 0..7 {
        let files: Vec<_> = tables.iter().filter(|t| t.level == Some(level)).collect();
        let bytes: u64 = files.iter().map(|t| t.size).sum();
        let row = rows.iter().find(|r| r.0 == level);
        if let Some(&(_, n, [size, ..])) = row {
            assert_eq!(n, files.len(), "level {level}: {rows:?}");
            assert_eq!(
                size,
                (bytes as f64 / 1_048_576.0).round() as u64,
                "{rows:?}"
            );
            listed.push(level);
        } else {
            assert!(files.is_empty(), "level {level} holds files: {rows:?}");
        }
    }
    // The flushes wrote about 6 MiB (to level 0, or deeper where nothing overlapped) and
    // read nothing; the compactions read and wrote at the levels below level 0.
    let level0 = rows.iter().find(|r| r.0 == 0).expect("a level-0 row");
    assert_eq!(level0.2[2], 0, "{rows:?}");
    let total = |i: usize| rows.iter().map(|r| r.2[i]).sum::<u64>();
    assert!(total(2) >= 5, "{rows:?}");
    assert!(total(3) >= 10, "{rows:?}");
    assert_eq!(
        listed,
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "rows in level order"
    );
}
