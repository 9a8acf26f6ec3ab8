//! A database open for writing answers what a read-only one answers, by the same code:
//! batched gets (now and at a snapshot), approximate sizes, properties and verification,
//! through its read-only `view`, while its memtable, level 0 and deeper levels all hold
//! versions of the keys.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use leveltable_db::{Db, DbOptions, WritableDb, WritableOptions, WriteOptions};

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A value of about 100 bytes that says which round wrote it.
fn value(i: u64, round: u64) -> Vec<u8> {
    format!("{round}:{i}:{}", "v".repeat(90)).into_bytes()
}

/// A database whose keys have versions at several levels and in the memtable: three rounds
/// of puts and deletes with flushes and a compaction between them, then a round left in the
/// memtable. Returns it with the model of what it holds.
fn layered(dir: &std::path::Path) -> (WritableDb, BTreeMap<Vec<u8>, Vec<u8>>) {
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .max_file_size(64 << 10);
    let db = WritableDb::open(dir, options).unwrap();
    let w = WriteOptions::default();
    let mut model = BTreeMap::new();
    for round in 0..4u64 {
        for i in (0..3000u64).filter(|i| i % (round + 2) == 0) {
            if (i + round) % 7 == 0 {
                db.delete(&key(i), w).unwrap();
                model.remove(&key(i));
            } else {
                db.put(&key(i), &value(i, round), w).unwrap();
                model.insert(key(i), value(i, round));
            }
        }
        match round {
            0 => {
                db.compact_range(None, None).unwrap();
            }
            1 | 2 => db.flush().unwrap(),
            _ => {}
        }
    }
    (db, model)
}

#[test]
fn batched_gets_answer_as_single_gets_now_and_at_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut model) = layered(dir.path());
    // (The background thread may have compacted level 0 by now; tables and the memtable
    // hold versions either way.)
    let files: usize = (0..7).map(|l| db.files_at_level(l)).sum();
    assert!(files > 1, "{files} tables");

    // Present, deleted and never-written keys, unsorted and repeated.
    let keys: Vec<Vec<u8>> = (0..3100u64)
        .rev()
        .step_by(3)
        .map(key)
        .chain([key(6), key(6)])
        .collect();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert_eq!(db.get_many(&keys).unwrap(), want);
    let singles: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
    assert_eq!(singles, want);

    // Overwrites and deletes after a snapshot, then a compaction of everything: the
    // snapshot's batched gets still answer as before, the current ones as now.
    let snapshot = db.snapshot();
    let before = want;
    let w = WriteOptions::default();
    for i in (0..3000u64).step_by(5) {
        if i % 2 == 0 {
            db.delete(&key(i), w).unwrap();
            model.remove(&key(i));
        } else {
            db.put(&key(i), b"after", w).unwrap();
            model.insert(key(i), b"after".to_vec());
        }
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get_many_at(&keys, &snapshot).unwrap(), before);
    let now: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert_eq!(db.get_many(&keys).unwrap(), now);
    assert_ne!(before, now);
}

#[test]
fn a_view_holds_its_tables_through_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, model) = layered(dir.path());
    let view = db.view().unwrap();
    db.put(b"zzz", b"later", WriteOptions::default()).unwrap();
    db.compact_range(None, None).unwrap();
    // The view's tables were replaced by the compaction, but are read still.
    let seen: BTreeMap<Vec<u8>, Vec<u8>> = view.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(seen, model);
    assert_eq!(view.get(b"zzz").unwrap(), None);
    assert_eq!(
        db.view().unwrap().get(b"zzz").unwrap(),
        Some(b"later".to_vec())
    );
}

#[test]
fn properties_sizes_and_verification_match_a_read_only_open() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = layered(dir.path());
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let view = db.view().unwrap();
    let ours = view.properties().clone();
    let files: usize = (0..7).map(|l| db.files_at_level(l)).sum();
    assert_eq!(ours.levels.iter().map(Vec::len).sum::<usize>(), files);
    assert_eq!(ours.last_sequence, db.last_sequence());
    let verified = db.verify().unwrap();
    assert_eq!(verified.tables as usize, files);
    let (lo, hi) = (key(500), key(2500));
    let size = db.approximate_size(&lo, &hi).unwrap();
    assert!(size > 0);
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = view.iter().collect::<Result<_, _>>().unwrap();
    drop(view);
    db.close().unwrap();

    // A read-only open of the closed database sees the same tables, sizes and entries.
    let read = Db::open(dir.path(), DbOptions::default()).unwrap();
    let theirs = read.properties();
    // Each level's tables (level 0's in whichever order each lists them).
    let by_number = |levels: &[Vec<leveltable_db::TableInfo>]| -> Vec<Vec<(u64, u64)>> {
        levels
            .iter()
            .map(|l| {
                let mut t: Vec<(u64, u64)> = l.iter().map(|t| (t.number, t.size)).collect();
                t.sort_unstable();
                t
            })
            .collect()
    };
    assert_eq!(by_number(&theirs.levels), by_number(&ours.levels));
    assert_eq!(theirs.next_file_number, ours.next_file_number);
    assert_eq!(theirs.log_number, ours.log_number);
    assert_eq!(read.approximate_size(&lo, &hi).unwrap(), size);
    let summary = read.verify().unwrap();
    assert_eq!(
        (summary.tables, summary.table_entries, summary.table_bytes),
        (
            verified.tables,
            verified.table_entries,
            verified.table_bytes
        )
    );
    let again: Vec<(Vec<u8>, Vec<u8>)> = read.iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(again, pairs);
}

/// A flushed memtable's memory is kept for the next memtables (one write buffer's worth at
/// most), and `leveldb.approximate-memory-usage` counts it.
#[test]
fn memory_kept_from_flushed_memtables_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let block = 256 << 10;
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(4 * block);
    let db = WritableDb::open(dir.path(), options).unwrap();
    let usage = || -> usize {
        db.property("leveldb.approximate-memory-usage")
            .unwrap()
            .parse()
            .unwrap()
    };
    // An empty memtable: the block holding its skiplist's head, and its key filter.
    let empty = usage();
    assert!(empty >= block, "{empty}");
    let w = WriteOptions::default();
    for round in 0..3u64 {
        for i in 0..5000u64 {
            db.put(&key(i), &value(i, round), w).unwrap();
        }
        db.flush().unwrap();
        // An empty memtable, and the three blocks 5,000 entries of ~140 bytes filled, kept
        // once the flushed memtable is dropped (the background thread drops its handle
        // after the flush returns).
        let kept = empty + 3 * block;
        let deadline = Instant::now() + Duration::from_secs(10);
        while usage() != kept && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(usage(), kept, "round {round}");
    }
    for i in 0..5000u64 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 2)));
    }
}

/// A view shares the writer's memtable, which grows on: a read at a sequence past the
/// view's own (a get, a batched get, an iterator, a range) reads at the view's, and shows
/// none of the writes made after it was taken.
#[test]
fn a_view_read_past_its_sequence_shows_no_later_write() {
    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default().create_if_missing(true);
    let db = WritableDb::open(dir.path(), options).unwrap();
    let w = WriteOptions::default();
    db.put(b"k", b"old", w).unwrap();
    let view = db.view().unwrap();
    db.put(b"k", b"new", w).unwrap();
    db.put(b"later", b"x", w).unwrap();
    let past = view.snapshot() + 2;
    let old = Some(b"old".to_vec());
    assert_eq!(view.get_at(b"k", past).unwrap(), old);
    assert_eq!(
        view.get_many_at(&[b"k"], past).unwrap(),
        std::slice::from_ref(&old)
    );
    let only = vec![(b"k".to_vec(), b"old".to_vec())];
    let all: Vec<_> = view.iter_at(past).map(Result::unwrap).collect();
    assert_eq!(all, only);
    let ranged: Vec<_> = view
        .range_at::<[u8]>(.., past)
        .map(Result::unwrap)
        .collect();
    assert_eq!(ranged, only);
    assert!(
        view.get_at(b"k", u64::MAX).is_err(),
        "past 2^56 - 1: refused"
    );
}
