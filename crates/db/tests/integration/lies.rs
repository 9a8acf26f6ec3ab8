//! Directories whose files carry valid checksums but lie: MANIFEST ranges the tables do not
//! hold, keys too short for their tag, tables whose keys are out of order. Every read ends,
//! emits no more entries than the files hold, and either reads correctly or fails naming the
//! file.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use leveltable_db::dbformat::{
    InternalKeyComparator, ParsedInternalKey, ValueType, append_internal_key, ldb_build_options,
};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::{FileMetaData, VersionEdit};
use leveltable_db::{BulkOptions, Db, DbBuilder, DbOptions, Error};
use leveltable_table::{BytewiseComparator, Comparator, TableBuilder};

fn ikey(user: &[u8], sequence: u64) -> Vec<u8> {
    let mut k = Vec::new();
    append_internal_key(&mut k, user, sequence, ValueType::Value).unwrap();
    k
}

/// A comparator under which every key follows the one before: the table builder then
/// writes entries in the order given, with valid checksums, whatever that order is.
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

/// Writes `entries` (internal key, value) in the order given as table `number`, in small
/// blocks so that a few dozen entries span several.
fn write_table(dir: &Path, number: u64, entries: &[(Vec<u8>, Vec<u8>)]) -> u64 {
    let options = ldb_build_options(Some(10))
        .block_size(64)
        .comparator(Arc::new(AsGiven));
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    let bytes = b.into_inner();
    std::fs::write(dir.join(format!("{number:06}.ldb")), &bytes).unwrap();
    bytes.len() as u64
}

/// Writes `MANIFEST-000001` listing `files` (level, metadata) and `CURRENT` naming it.
fn write_manifest(dir: &Path, files: Vec<(usize, FileMetaData)>, last_sequence: u64) {
    let edit = VersionEdit {
        comparator: Some(BytewiseComparator.name().to_string()),
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(last_sequence),
        new_files: files,
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    std::fs::write(dir.join("MANIFEST-000001"), w.into_inner()).unwrap();
    std::fs::write(dir.join("CURRENT"), b"MANIFEST-000001\n").unwrap();
}

/// `n` entries `k000`, `k001`, … at sequences 1.., as (internal key, value).
fn entries(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| (ikey(format!("k{i:03}").as_bytes(), i + 1), vec![b'v'; 8]))
        .collect()
}

fn meta(number: u64, size: u64, smallest: &[u8], largest: &[u8]) -> FileMetaData {
    FileMetaData {
        number,
        file_size: size,
        smallest: smallest.to_vec(),
        largest: largest.to_vec(),
    }
}

/// Everything each kind of read gives, each bounded by `limit` entries, or its error.
fn read_all(db: &Db, limit: usize) -> [Result<usize, Error>; 4] {
    let count = |it: &mut dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), Error>>| {
        let mut n = 0;
        for entry in it {
            entry?;
            n += 1;
            assert!(
                n <= limit,
                "a read emitted more than the {limit} entries stored"
            );
        }
        Ok(n)
    };
    let versions = || {
        let mut n = 0;
        for v in db.versions() {
            v?;
            n += 1;
            assert!(n <= limit, "versions emitted more than the {limit} stored");
        }
        Ok(n)
    };
    [
        count(&mut db.iter()),
        count(&mut db.iter().rev()),
        count(&mut db.range(&b"k005"[..]..&b"k030"[..])),
        versions(),
    ]
}

fn corruption_in(e: &Error, file: &str, what: &str) -> bool {
    let s = e.to_string();
    s.contains(file) && s.contains(what)
}

#[test]
fn a_range_the_table_does_not_hold_fails_reads_and_verify_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = entries(40);
    let size = write_table(dir.path(), 5, &e);
    // The table holds k000..k039; the MANIFEST says a..b.
    write_manifest(
        dir.path(),
        vec![(1, meta(5, size, &ikey(b"a", 1), &ikey(b"b", 1)))],
        40,
    );
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    let [fwd, back, range, versions] = read_all(&db, 40);
    for result in [fwd, back, versions] {
        let err = result.expect_err("a read of a table outside its range fails");
        assert!(corruption_in(&err, "000005.ldb", "key range"), "{err}");
    }
    // The MANIFEST says no table holds k005..k030, so this read opens none: ranges and
    // gets choose tables by the MANIFEST, as LevelDB does, and `verify` checks it.
    assert_eq!(range.unwrap(), 0);
    let err = db.verify().unwrap_err();
    let text = err.to_string();
    assert!(corruption_in(&err, "000005.ldb", "key range"), "{text}");
    assert!(text.contains("\"k000\" @ 1 ..= \"k039\" @ 40"), "{text}");
    assert!(text.contains("\"a\" @ 1 ..= \"b\" @ 1"), "{text}");
    // A salvage ignores the MANIFEST's ranges and reads every entry.
    let salvaged = Db::salvage(dir.path(), DbOptions::default()).unwrap();
    assert_eq!(salvaged.iter().count(), 40);
    salvaged.verify().unwrap();
}

#[test]
fn a_range_that_only_covers_part_of_the_table_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let e = entries(40);
    let size = write_table(dir.path(), 5, &e);
    // Claims k000..k020: the read of what is claimed would drop k021..k039 silently.
    write_manifest(dir.path(), vec![(2, meta(5, size, &e[0].0, &e[20].0))], 40);
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    assert!(corruption_in(
        &db.verify().unwrap_err(),
        "000005.ldb",
        "key range"
    ));
    for result in read_all(&db, 40) {
        let err = result.expect_err("no read drops entries silently");
        assert!(corruption_in(&err, "000005.ldb", "key range"), "{err}");
    }
}

#[test]
fn overlapping_ranges_above_level_zero_are_corruption_at_open() {
    // A real database of several tables on the last level, its MANIFEST rewritten so that
    // every table claims the same range.
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let mut b = DbBuilder::create(&db_dir, BulkOptions::default().max_file_size(512)).unwrap();
    for i in 0..1000u32 {
        b.add(format!("{i:06}").as_bytes(), b"value").unwrap();
    }
    b.finish().unwrap();
    let db = Db::open(&db_dir, DbOptions::default()).unwrap();
    let tables: Vec<_> = db.properties().levels[6].clone();
    assert!(tables.len() > 2);
    drop(db);
    let lying = tables
        .iter()
        .map(|t| (6, meta(t.number, t.size, &ikey(b"a", 0), &ikey(b"b", 0))))
        .collect();
    std::fs::remove_file(db_dir.join("MANIFEST-000001")).unwrap();
    write_manifest(&db_dir, lying, 0);
    let err = Db::open(&db_dir, DbOptions::default()).unwrap_err();
    assert!(corruption_in(&err, "MANIFEST-000001", "overlap"), "{err}");
    // The two tables are named, not only their ranges: equal ranges sort by file number.
    let mut numbers: Vec<u64> = tables.iter().map(|t| t.number).collect();
    numbers.sort_unstable();
    for number in &numbers[..2] {
        assert!(
            err.to_string().contains(&format!("{number:06}.ldb")),
            "{err}"
        );
    }
    let salvaged = Db::salvage(&db_dir, DbOptions::default()).unwrap();
    assert_eq!(salvaged.iter().count(), 1000);
}

#[test]
fn a_manifest_key_shorter_than_its_tag_is_corruption_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let e = entries(4);
    let size = write_table(dir.path(), 5, &e);
    for (smallest, largest) in [(&b"k"[..], &e[3].0[..]), (&e[0].0[..], &b"k003"[..])] {
        write_manifest(dir.path(), vec![(0, meta(5, size, smallest, largest))], 4);
        let err = Db::open(dir.path(), DbOptions::default()).unwrap_err();
        assert!(
            corruption_in(&err, "MANIFEST-000001", "8-byte tag"),
            "{err}"
        );
    }
    // A smallest key after the largest.
    write_manifest(dir.path(), vec![(0, meta(5, size, &e[3].0, &e[0].0))], 4);
    let err = Db::open(dir.path(), DbOptions::default()).unwrap_err();
    assert!(
        corruption_in(&err, "MANIFEST-000001", "after largest"),
        "{err}"
    );
}

/// A permutation of `0..n` from a fixed seed.
fn shuffled(n: usize, mut seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        order.swap(i, (seed >> 33) as usize % (i + 1));
    }
    order
}

#[test]
fn a_table_whose_keys_are_out_of_order_ends_every_read() {
    for (seed, level) in [(1u64, 0usize), (2, 1), (3, 6)] {
        let dir = tempfile::tempdir().unwrap();
        let sorted = entries(200);
        let e: Vec<_> = shuffled(sorted.len(), seed)
            .into_iter()
            .map(|i| sorted[i].clone())
            .collect();
        let size = write_table(dir.path(), 7, &e);
        // The true range: only the order lies.
        write_manifest(
            dir.path(),
            vec![(level, meta(7, size, &sorted[0].0, &sorted[199].0))],
            200,
        );
        let db = Db::open(dir.path(), DbOptions::default()).unwrap();
        for result in read_all(&db, 200) {
            // A read may finish before it meets a key out of order, or fail naming the
            // file; it never repeats entries (read_all bounds them).
            if let Err(err) = result {
                assert!(corruption_in(&err, "000007.ldb", "key order"), "{err}");
            }
        }
        let err = db
            .iter()
            .find_map(Result::err)
            .expect("a full scan meets it");
        assert!(corruption_in(&err, "000007.ldb", "key order"), "{err}");
        assert!(corruption_in(
            &db.verify().unwrap_err(),
            "000007.ldb",
            "key order"
        ));

        // A salvage lists each entry once, sorted, and says why the table was read whole.
        let salvaged = Db::salvage(dir.path(), DbOptions::default()).unwrap();
        let keys: Vec<Vec<u8>> = salvaged.iter().map(|r| r.unwrap().0).collect();
        let expected: Vec<Vec<u8>> = sorted
            .iter()
            .map(|(k, _)| ParsedInternalKey::parse(k).unwrap().user_key.to_vec())
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(salvaged.versions().count(), 200);
        let skipped = &salvaged.properties().skipped;
        assert!(
            skipped
                .iter()
                .any(|(file, why)| file == "000007.ldb" && why.contains("key order")),
            "{skipped:?}"
        );
    }
}

#[test]
fn salvage_refuses_a_comparator_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let e = entries(4);
    let size = write_table(dir.path(), 5, &e);
    let edit = VersionEdit {
        comparator: Some("idb_cmp1".to_string()),
        log_number: Some(0),
        next_file_number: Some(100),
        last_sequence: Some(4),
        new_files: vec![(0, meta(5, size, &e[0].0, &e[3].0))],
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    std::fs::write(dir.path().join("MANIFEST-000001"), w.into_inner()).unwrap();
    std::fs::write(dir.path().join("CURRENT"), b"MANIFEST-000001\n").unwrap();
    for err in [
        Db::open(dir.path(), DbOptions::default()).unwrap_err(),
        Db::salvage(dir.path(), DbOptions::default()).unwrap_err(),
    ] {
        assert!(matches!(err, Error::UnknownComparator { .. }), "{err}");
        assert!(err.to_string().contains("idb_cmp1"), "{err}");
    }
}

#[test]
fn a_true_manifest_still_reads_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let e = entries(60);
    let icmp = InternalKeyComparator::new(Arc::new(BytewiseComparator) as Arc<dyn Comparator>);
    assert!(e.windows(2).all(|w| icmp.compare(&w[0].0, &w[1].0).is_lt()));
    let a = write_table(dir.path(), 5, &e[..30]);
    let b = write_table(dir.path(), 6, &e[30..]);
    write_manifest(
        dir.path(),
        vec![
            (1, meta(5, a, &e[0].0, &e[29].0)),
            (1, meta(6, b, &e[30].0, &e[59].0)),
        ],
        60,
    );
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    let [fwd, back, range, versions] = read_all(&db, 60);
    assert_eq!(
        (
            fwd.unwrap(),
            back.unwrap(),
            range.unwrap(),
            versions.unwrap()
        ),
        (60, 60, 25, 60)
    );
    assert_eq!(db.verify().unwrap().table_entries, 60);
}

/// The entries `next_entries` hands out from the front, each checked to come after the one
/// before and bounded by `limit`, or the error that ended the read.
fn bulk_read(db: &Db, limit: usize) -> Result<usize, Error> {
    let mut it = db.iter();
    let mut previous: Option<Vec<u8>> = None;
    let mut n = 0;
    loop {
        let more = it.next_entries(|k, _| {
            assert!(
                previous.as_deref().is_none_or(|p| p < k),
                "a key handed out of order"
            );
            previous = Some(k.to_vec());
            n += 1;
            assert!(n <= limit, "more than the {limit} entries stored");
            n % 700 != 0
        })?;
        if !more {
            return Ok(n);
        }
    }
}

/// Options with a block cache so small that a scan soon counts as long, and reads on
/// straight from the blocks of the source that leads the merge.
fn small_cache() -> DbOptions {
    DbOptions::default().block_cache(leveltable_table::Cache::shared(1024))
}

#[test]
fn a_bulk_read_meets_lies_far_past_its_first_batch() {
    // Far past the first batch a merge reads, where a long scan reads on straight from the
    // blocks of the source that leads it.
    let sorted: Vec<(Vec<u8>, Vec<u8>)> = (0..3000u64)
        .map(|i| (ikey(format!("k{i:05}").as_bytes(), i + 1), vec![b'v'; 8]))
        .collect();
    let swapped = {
        let mut e = sorted.clone();
        e.swap(2000, 2001);
        e
    };
    let short = {
        let mut e = sorted.clone();
        e[2000].0 = b"k02000".to_vec();
        e
    };
    let bad_type = {
        let mut e = sorted.clone();
        let tag = e[2000].0.len() - 8;
        e[2000].0[tag] = 7;
        e
    };
    type Entries = [(Vec<u8>, Vec<u8>)];
    let cases: [(&Entries, usize, &str); 4] = [
        (&swapped, 2999, "key order"),
        (&short, 2999, "internal key"),
        (&bad_type, 2999, "internal key"),
        // The MANIFEST gives the table half the range it holds.
        (&sorted, 1500, "key range"),
    ];
    for (e, largest, what) in cases {
        for level in [0, 1] {
            let dir = tempfile::tempdir().unwrap();
            let size = write_table(dir.path(), 7, e);
            write_manifest(
                dir.path(),
                vec![(level, meta(7, size, &sorted[0].0, &sorted[largest].0))],
                3000,
            );
            let db = Db::open(dir.path(), small_cache()).unwrap();
            let err = bulk_read(&db, 3000).expect_err(what);
            assert!(corruption_in(&err, "000007.ldb", what), "{what}: {err}");
        }
    }
    // The true table reads whole.
    let dir = tempfile::tempdir().unwrap();
    let size = write_table(dir.path(), 7, &sorted);
    write_manifest(
        dir.path(),
        vec![(1, meta(7, size, &sorted[0].0, &sorted[2999].0))],
        3000,
    );
    let db = Db::open(dir.path(), small_cache()).unwrap();
    assert_eq!(bulk_read(&db, 3000).unwrap(), 3000);
}

/// Table sizes whose sum passes `u64::MAX`: the writer's compaction scores, its stats and
/// the read-only open's properties add them without overflowing (a panic in a build with
/// overflow checks), and the writer's compaction of the tables fails naming one, or runs.
#[test]
fn table_sizes_past_u64_in_sum_are_added_without_overflow() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (low, high) = (entries(20), entries(40).split_off(20));
    write_table(dir, 5, &low);
    write_table(dir, 6, &high);
    let huge = u64::MAX / 2 + 1;
    write_manifest(
        dir,
        vec![
            (1, meta(5, huge, &low[0].0, &low[19].0)),
            (1, meta(6, huge, &high[0].0, &high[19].0)),
        ],
        40,
    );
    let db = Db::open(dir, DbOptions::default()).unwrap();
    let _ = db.properties();
    drop(db);
    let path = dir.to_owned();
    let opened = std::thread::spawn(move || {
        let db = leveltable_db::WritableDb::open(&path, Default::default())?;
        let _ = db.property("leveldb.stats");
        db.wait_for_compactions()
    })
    .join();
    assert!(opened.is_ok(), "the writer panicked");
}

/// An edit appended after the open that lists a table at a second level, or makes level
/// 1's tables overlap: an open refuses the MANIFEST, and so does a refresh of a handle
/// opened before it, which keeps the view it had.
#[test]
fn a_refresh_refuses_an_edit_an_open_refuses() {
    for overlap in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let low = entries(3);
        let size = write_table(dir, 10, &low);
        write_manifest(dir, vec![(1, meta(10, size, &low[0].0, &low[2].0))], 3);
        let mut db = Db::open(dir, DbOptions::default()).unwrap();
        let before: Vec<_> = db.iter().map(Result::unwrap).collect();
        let added = if overlap {
            let more = vec![
                (ikey(b"k001", 4), b"x".to_vec()),
                (ikey(b"k009", 5), b"y".to_vec()),
            ];
            let size = write_table(dir, 11, &more);
            (1, meta(11, size, &more[0].0, &more[1].0))
        } else {
            (2, meta(10, size, &low[0].0, &low[2].0))
        };
        let edit = VersionEdit {
            last_sequence: Some(5),
            new_files: vec![added],
            ..VersionEdit::default()
        };
        let path = dir.join("MANIFEST-000001");
        let len = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let mut w = LogWriter::with_offset(file, len);
        w.add_record(&edit.encode()).unwrap();
        drop(w);
        let refused = |e: &Error| matches!(e, Error::Corruption { file, .. } if file.to_string_lossy() == "MANIFEST-000001");
        let opened = Db::open(dir, DbOptions::default());
        assert!(
            opened.as_ref().is_err_and(refused),
            "overlap {overlap}: {opened:?}"
        );
        let refreshed = db.refresh();
        assert!(
            refreshed.as_ref().is_err_and(refused),
            "overlap {overlap}: {refreshed:?}"
        );
        let after: Vec<_> = db.iter().map(Result::unwrap).collect();
        assert_eq!(after, before);
        assert_eq!(db.versions().count(), 3);
    }
}

/// Writes log `number` holding one batch: `key` = `value` at `sequence`.
fn write_log(dir: &Path, number: u64, sequence: u64, key: &[u8], value: &[u8]) {
    let mut batch = leveltable_db::WriteBatchBuilder::new(sequence);
    batch.put(key, value);
    let mut log = LogWriter::new(Vec::new());
    log.add_record(batch.as_bytes()).unwrap();
    std::fs::write(dir.join(format!("{number:06}.log")), log.into_inner()).unwrap();
}

/// The same version (user key and sequence) with two values, in two logs or two level-0
/// tables, as reused sequence numbers leave it: a get, a forward and a backward scan all
/// take the newer file's, as LevelDB's get does (LevelDB's iterator orders level 0 by
/// smallest key, and may take the other).
#[test]
fn one_version_in_two_files_reads_as_the_newer_files_both_ways() {
    for in_tables in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        if in_tables {
            let older = [
                (ikey(b"a", 1), b"a".to_vec()),
                (ikey(b"k", 2), b"old".to_vec()),
            ];
            let newer = [(ikey(b"k", 2), b"new".to_vec())];
            let (s10, s11) = (write_table(dir, 10, &older), write_table(dir, 11, &newer));
            write_manifest(
                dir,
                vec![
                    (0, meta(10, s10, &older[0].0, &older[1].0)),
                    (0, meta(11, s11, &newer[0].0, &newer[0].0)),
                ],
                2,
            );
        } else {
            write_manifest(dir, Vec::new(), 0);
            write_log(dir, 5, 1, b"k", b"old");
            write_log(dir, 6, 1, b"k", b"new");
        }
        let db = Db::open(dir, DbOptions::default()).unwrap();
        let value = |entries: Vec<(Vec<u8>, Vec<u8>)>| {
            entries.into_iter().find(|(k, _)| k == b"k").map(|(_, v)| v)
        };
        let new = Some(b"new".to_vec());
        assert_eq!(db.get(b"k").unwrap(), new, "tables: {in_tables}");
        assert_eq!(value(db.iter().map(Result::unwrap).collect()), new);
        assert_eq!(value(db.iter().rev().map(Result::unwrap).collect()), new);
        if leveltable_interop::require_leveldb() {
            let copy = tmp.path().join("leveldb");
            std::fs::create_dir(&copy).unwrap();
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_file() {
                    std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
                }
            }
            let options = leveltable_interop::db::DbOptions::default();
            let theirs = leveltable_interop::db::Db::open(&copy, &options).unwrap();
            assert_eq!(theirs.get(b"k").unwrap(), new, "LevelDB's get");
        }
    }
}
