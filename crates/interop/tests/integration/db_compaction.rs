//! What our writer's compactions leave, opened by LevelDB 1.23: a range compaction run while
//! another thread writes (a memtable flushed in the middle of it), and compactions through a
//! compaction filter that removes and rewrites entries. And where memtables are flushed:
//! after as many entries as LevelDB's.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use leveltable_db::dbformat::ParsedInternalKey;
use leveltable_db::{CompactionFilter, FilterDecision, WritableDb, WritableOptions, WriteOptions};
use leveltable_interop::db::{Db, DbOptions};
use leveltable_interop::require_leveldb;

use crate::common;

use common::same;

/// The table numbers in `dir`.
fn table_numbers(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".ldb")?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

fn ours(db: &WritableDb) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter().collect::<Result<_, _>>().unwrap()
}

/// LevelDB's view of `dir`, opened with paranoid checks.
fn leveldb_view(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let options = DbOptions {
        create_if_missing: false,
        paranoid_checks: true,
        ..DbOptions::default()
    };
    let db = Db::open(dir, &options).unwrap();
    let view = db.scan(None, false).unwrap();
    // LevelDB's own compactions check the levels too.
    db.compact_range(None, None);
    assert_eq!(db.scan(None, false).unwrap(), view);
    db.close();
    view
}

#[test]
fn leveldb_opens_what_a_range_compaction_beside_writes_left() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Level 1: [a..c] and [x..z]; level 2: 6 MB of `b…` keys and `y`.
    {
        let big = WritableOptions::default()
            .create_if_missing(true)
            .write_buffer_size(64 << 20);
        let db = WritableDb::open(dir.path(), big).unwrap();
        let w = WriteOptions::default();
        let value = vec![b'v'; 1000];
        for i in 0..6000 {
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
        assert_eq!((at(0), at(1), at(2)), (0, 2, 2));
        db.close().unwrap();
    }
    let newest = *table_numbers(dir.path()).last().unwrap();
    let options = WritableOptions::default().write_buffer_size(64 << 10);
    let db = Arc::new(WritableDb::open(dir.path(), options).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop, path) = (Arc::clone(&db), Arc::clone(&stop), dir.path().to_owned());
        std::thread::spawn(move || {
            // Writes start once the compaction has created its first output.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !table_numbers(&path).iter().any(|&n| n > newest) {
                assert!(Instant::now() < deadline, "no compaction output appeared");
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) || i < 2000 {
                let key = format!("m{i:08}");
                db.put(key.as_bytes(), &[b'm'; 100], WriteOptions::default())
                    .unwrap();
                i += 1;
            }
        })
    };
    db.compact_range(None, None).unwrap();
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    let want = ours(&db);
    Arc::into_inner(db).unwrap().close().unwrap();
    same(
        &leveldb_view(dir.path()),
        &want,
        "LevelDB after the compaction",
    );
}

/// Removes values starting with `x`; changes a leading `d` to `D` (a decision that depends
/// only on the value, as a filter's should: a later compaction sees its result again).
struct RemoveAndCapitalize;

impl CompactionFilter for RemoveAndCapitalize {
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> FilterDecision {
        match value.first() {
            Some(b'x') => FilterDecision::Remove,
            Some(b'd') => FilterDecision::ChangeValue([b"D", &value[1..]].concat()),
            _ => FilterDecision::Keep,
        }
    }

    fn name(&self) -> &str {
        "remove-and-capitalize"
    }
}

#[test]
fn leveldb_sees_what_a_compaction_filter_left() {
    if !require_leveldb() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(64 << 10)
        .compaction_filter(Some(Arc::new(RemoveAndCapitalize)));
    let db = WritableDb::open(dir.path(), options).unwrap();
    let w = WriteOptions::default();
    // Keys in a scattered order, so that each memtable spans the key space and compactions
    // rewrite every table; older versions of removed keys sit below newer ones.
    let mut model = BTreeMap::new();
    for round in 0..3u64 {
        for j in 0..3000u64 {
            let i = (j * 7919) % 3000;
            let kind = [b'k', b'x', b'd'][((i + round) % 3) as usize];
            let mut value = vec![kind; 1];
            value.extend_from_slice(format!("{round}:{i}:{}", "p".repeat(60)).as_bytes());
            let key = format!("key{i:06}");
            db.put(key.as_bytes(), &value, w).unwrap();
            model.insert(key.into_bytes(), value);
        }
    }
    // A snapshot holds the current state; the compaction must not change what it reads.
    let snapshot = db.snapshot();
    let before_snapshot = db
        .iter_at(&snapshot)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    db.compact_range(None, None).unwrap();
    let at_snapshot = db
        .iter_at(&snapshot)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    same(
        &at_snapshot,
        &before_snapshot,
        "a snapshot across a filtered compaction",
    );
    drop(snapshot);
    db.compact_range(None, None).unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .into_iter()
        .filter_map(|(k, v)| match v[0] {
            b'x' => None,
            b'd' => Some((k, [b"D", &v[1..]].concat())),
            _ => Some((k, v)),
        })
        .collect();
    same(&ours(&db), &want, "our view after the filtered compactions");
    assert!(db.compactions() > 0);
    db.close().unwrap();
    same(
        &leveldb_view(dir.path()),
        &want,
        "LevelDB after the filtered compactions",
    );
}

/// The number of entries in the first table flushed from each database: the same puts of
/// `key_len`-byte keys (in order) and `value_len`-byte values, with a 256 KiB write buffer.
fn first_flush_entries(key_len: usize, value_len: usize) -> (u64, u64) {
    const BUFFER: usize = 256 << 10;
    let puts = 3 * BUFFER / (key_len + value_len + 20);
    let key = |i: usize| format!("{i:0key_len$}").into_bytes();
    let value = vec![b'v'; value_len];

    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions {
        write_buffer_size: BUFFER,
        ..DbOptions::default()
    };
    let db = Db::open(dir.path(), &options).unwrap();
    for i in 0..puts {
        db.put(&key(i), &value).unwrap();
    }
    let text = db.property("leveldb.sstables").unwrap().unwrap();
    db.close();
    // Table lines are " NUMBER:SIZE['first' @ SEQ : 1 .. 'last' @ SEQ : 1]"; keys in order
    // are written with sequence numbers 1, 2, ...: the first table's last is its count.
    let mut tables: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|line| {
            let (number, rest) = line.strip_prefix(' ')?.split_once(':')?;
            let last = rest.rsplit(" @ ").next()?.split(" : ").next()?;
            Some((number.parse().ok()?, last.parse().ok()?))
        })
        .collect();
    tables.sort_unstable();
    assert!(!tables.is_empty(), "{text}");
    let theirs = tables[0].1;

    let dir = tempfile::tempdir().unwrap();
    let options = WritableOptions::default()
        .create_if_missing(true)
        .write_buffer_size(BUFFER);
    let db = WritableDb::open(dir.path(), options).unwrap();
    for i in 0..puts {
        db.put(&key(i), &value, WriteOptions::default()).unwrap();
    }
    db.flush().unwrap();
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.number);
    let largest = ParsedInternalKey::parse(&tables[0].largest).unwrap();
    (largest.sequence, theirs)
}

#[test]
fn memtables_flush_after_as_many_entries_as_leveldbs() {
    if !require_leveldb() {
        return;
    }
    for (key_len, value_len) in [(16, 100), (8, 10), (40, 1000), (20, 5000)] {
        let (ours, theirs) = first_flush_entries(key_len, value_len);
        let off = ours.abs_diff(theirs) as f64 / theirs as f64;
        assert!(
            off < 0.015,
            "{key_len}-byte keys, {value_len}-byte values: our first table holds {ours} \
             entries, LevelDB's {theirs}"
        );
    }
}
