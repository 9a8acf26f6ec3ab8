//! Bulk builds: the tables and MANIFEST they write, parallel builds byte-identical to
//! sequential ones, parts and their checks, and the external sort.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::Path;

use leveltable_db::InternalTable;
use leveltable_db::dbformat::{ParsedInternalKey, ValueType};
use leveltable_db::log_reader::LogReader;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::{
    BULK_LEVEL, BulkOptions, DbBuilder, Duplicates, Error, ExternalSorter, Part, PartBuilder,
    TableOptions, commit,
};
use leveltable_table::Compression;
use proptest::prelude::*;

/// Every entry of the database at `dir` as the MANIFEST lists its files, checked against
/// what the MANIFEST says of each, in file order.
fn read_back(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    assert_eq!(
        fs::read_to_string(dir.join("CURRENT")).unwrap(),
        "MANIFEST-000001\n"
    );
    let manifest = fs::read(dir.join("MANIFEST-000001")).unwrap();
    let mut reader = LogReader::new(&manifest, true);
    let record = reader.read_record().expect("one record");
    assert!(reader.read_record().is_none());
    let edit = VersionEdit::decode_from(&mut &record.data[..]).unwrap();
    assert_eq!(
        edit.comparator.as_deref(),
        Some("leveldb.BytewiseComparator")
    );
    assert_eq!((edit.log_number, edit.last_sequence), (Some(0), Some(0)));
    let mut entries = Vec::new();
    let mut last_number = 1;
    for (level, meta) in &edit.new_files {
        assert_eq!(*level, BULK_LEVEL);
        assert_eq!(meta.number, last_number + 1, "numbered in key order from 2");
        last_number = meta.number;
        let path = dir.join(format!("{:06}.ldb", meta.number));
        assert_eq!(fs::metadata(&path).unwrap().len(), meta.file_size);
        let table = InternalTable::open(File::open(&path).unwrap()).unwrap();
        let file: Vec<_> = table.entries().map(Result::unwrap).collect();
        let first = &file[0];
        let last = &file[file.len() - 1];
        let smallest = ParsedInternalKey::parse(&meta.smallest).unwrap();
        let largest = ParsedInternalKey::parse(&meta.largest).unwrap();
        assert_eq!(smallest.user_key, &first.user_key[..]);
        assert_eq!(largest.user_key, &last.user_key[..]);
        for e in file {
            assert_eq!((e.sequence, e.value_type), (0, ValueType::Value));
            entries.push((e.user_key, e.value));
        }
    }
    assert_eq!(edit.next_file_number, Some(last_number + 1));
    let names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The tables, MANIFEST, CURRENT and LOCK (left, as LevelDB leaves it).
    assert_eq!(names.len(), edit.new_files.len() + 3, "{names:?}");
    assert!(names.iter().any(|n| n == "LOCK"), "{names:?}");
    entries
}

fn input(n: usize, seed: u64, value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut x = seed;
    let mut next = move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z ^ (z >> 31)
    };
    let mut map = BTreeMap::new();
    while map.len() < n {
        let key = format!("{:016x}", next() % (n as u64 * 16)).into_bytes();
        let len = (next() as usize) % (value_len + 1);
        map.insert(key, vec![b'v'; len]);
    }
    map.into_iter().collect()
}

fn build(dir: &Path, entries: &[(Vec<u8>, Vec<u8>)], options: BulkOptions) {
    let mut builder = DbBuilder::create(dir, options).unwrap();
    for (k, v) in entries {
        builder.add(k, v).unwrap();
    }
    let summary = builder.finish().unwrap();
    assert_eq!(summary.entries, entries.len() as u64);
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn builds_read_back_and_threads_change_no_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = input(20_000, 1, 300);
    let options = BulkOptions::default().max_file_size(256 << 10);
    let mut built = Vec::new();
    for threads in [1, 2, 4] {
        let dir = tmp.path().join(format!("db{threads}"));
        build(&dir, &entries, options.clone().threads(threads));
        assert_eq!(read_back(&dir), entries);
        built.push(files(&dir));
    }
    assert!(built[0].len() > 10, "{} files", built[0].len());
    assert_eq!(built[0], built[1]);
    assert_eq!(built[0], built[2]);
    // Nothing is left beside the database.
    let mut names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["db1", "db2", "db4"]);
}

#[test]
fn empty_input_and_one_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("empty");
    build(&dir, &[], BulkOptions::default());
    assert_eq!(read_back(&dir), []);
    let dir = tmp.path().join("one");
    let one = vec![(b"k".to_vec(), b"v".to_vec())];
    build(&dir, &one, BulkOptions::default().threads(3));
    assert_eq!(read_back(&dir), one);
}

#[test]
fn big_keys_and_values() {
    let tmp = tempfile::tempdir().unwrap();
    let entries: Vec<_> = (0..40u8)
        .map(|i| {
            (
                vec![i; 10 << 10],
                vec![i; if i % 7 == 0 { 1 << 20 } else { 10 }],
            )
        })
        .collect();
    let dir = tmp.path().join("db");
    build(
        &dir,
        &entries,
        BulkOptions::default()
            .table(TableOptions::default().compression(Compression::None))
            .threads(2),
    );
    assert_eq!(read_back(&dir), entries);
}

#[test]
fn keys_out_of_order_are_refused_and_nothing_is_left() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut builder = DbBuilder::create(&dir, BulkOptions::default().max_file_size(1)).unwrap();
    builder.add(b"b", b"1").unwrap();
    for bad in [&b"a"[..], b"b"] {
        let err = builder.add(bad, b"x").unwrap_err();
        assert!(
            matches!(
                err,
                Error::Table(leveltable_table::Error::KeyOutOfOrder { .. })
            ),
            "{err}"
        );
    }
    builder.add(b"c", b"2").unwrap();
    builder.abandon();
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// Inside a file and across files, streamed or handed to threads: a key out of order is
/// refused naming both user keys, and the build goes on unchanged.
#[test]
fn keys_out_of_order_are_named_and_the_build_goes_on() {
    for (max_file_size, threads) in [(1, 1), (1 << 20, 1), (1, 2), (1 << 20, 2)] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let options = BulkOptions::default()
            .max_file_size(max_file_size)
            .threads(threads);
        let mut builder = DbBuilder::create(&dir, options).unwrap();
        builder.add(b"a", b"0").unwrap();
        builder.add(b"b", b"1").unwrap();
        for bad in [&b"a"[..], b"b", b""] {
            match builder.add(bad, b"x").unwrap_err() {
                Error::Table(leveltable_table::Error::KeyOutOfOrder { previous, got }) => {
                    assert_eq!((previous.as_slice(), got.as_slice()), (&b"b"[..], bad));
                }
                other => panic!("{max_file_size} {threads}: {other}"),
            }
        }
        builder.add(b"c", b"2").unwrap();
        builder.finish().unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = [("a", "0"), ("b", "1"), ("c", "2")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(read_back(&dir), want, "{max_file_size} {threads}");
    }
}

#[test]
fn targets_must_be_new_or_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("x"), b"").unwrap();
    let err = DbBuilder::create(&full, BulkOptions::default()).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    build(
        &empty,
        &[(b"a".to_vec(), b"1".to_vec())],
        BulkOptions::default(),
    );
    assert_eq!(read_back(&empty).len(), 1);
    let err =
        DbBuilder::create(tmp.path().join("no/such/parent"), BulkOptions::default()).unwrap_err();
    assert!(matches!(err, Error::FileOp { .. }), "{err}");
    assert!(
        err.to_string().contains("cannot create a directory in"),
        "{err}"
    );
    for zero in [
        BulkOptions::default().threads(0),
        BulkOptions::default().max_file_size(0),
        BulkOptions::default().table(TableOptions::default().block_size(0)),
    ] {
        assert!(DbBuilder::create(tmp.path().join("z"), zero).is_err());
    }
}

fn part(dir: &Path, entries: &[(Vec<u8>, Vec<u8>)], options: &BulkOptions) -> Part {
    let mut builder = PartBuilder::create(dir, options.clone()).unwrap();
    for (k, v) in entries {
        builder.add(k, v).unwrap();
    }
    builder.finish().unwrap()
}

#[test]
fn parts_commit_in_order_and_are_refused_out_of_order() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = input(5000, 2, 100);
    let options = BulkOptions::default().max_file_size(32 << 10);
    let ranges = [0..1000, 1000..1001, 1001..1001, 1001..5000];
    let make = |name: &str| -> Vec<Part> {
        ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                part(
                    &tmp.path().join(format!("{name}-{i}")),
                    &entries[r.clone()],
                    &options,
                )
            })
            .collect()
    };
    // Reversed: refused, and the files stay staged.
    let mut parts = make("a");
    parts.reverse();
    let err = commit(tmp.path().join("db"), &parts).unwrap_err();
    assert!(err.to_string().contains("out of order or overlap"), "{err}");
    assert!(!tmp.path().join("db").exists());
    parts.reverse();
    // Records travel as JSON and load from their staging directories.
    let loaded: Vec<Part> = parts
        .iter()
        .map(|p| Part::load(&p.staging).unwrap())
        .collect();
    assert_eq!(loaded, parts);
    let summary = commit(tmp.path().join("db"), &loaded).unwrap();
    assert_eq!((summary.parts, summary.entries), (4, 5000));
    assert_eq!(read_back(&tmp.path().join("db")), entries);
    for p in &parts {
        assert!(
            !p.staging.exists(),
            "staging {} removed",
            p.staging.display()
        );
    }

    // Overlapping parts are refused.
    let a = part(&tmp.path().join("o-0"), &entries[0..600], &options);
    let b = part(&tmp.path().join("o-1"), &entries[500..1000], &options);
    let err = commit(tmp.path().join("db2"), &[a, b]).unwrap_err();
    assert!(err.to_string().contains("out of order or overlap"), "{err}");
    // A file of another size than recorded is refused.
    let c = part(&tmp.path().join("s-0"), &entries[0..600], &options);
    fs::write(c.staging.join(&c.files[0].name), b"short").unwrap();
    let err = commit(tmp.path().join("db3"), &[c]).unwrap_err();
    assert!(err.to_string().contains("part record says"), "{err}");
    assert!(!tmp.path().join("db3").exists());
}

#[test]
fn part_records_are_checked() {
    let good = "leveltable-part 1\nstaging 2f78\nfile 000001.ldb 10 1 61 62\n";
    let part = Part::from_record(good).unwrap();
    assert_eq!(part.staging, Path::new("/x"));
    assert_eq!(
        (part.files[0].smallest.as_slice(), part.entries()),
        (&b"a"[..], 1)
    );
    assert_eq!(Part::from_record(&part.to_record()).unwrap(), part);
    for text in [
        "",
        "{}",
        "leveltable-part 3\nstaging 2f78\n",
        "leveltable-part 1\n",
        "leveltable-part 1\nstaging 2f7\n",
        "leveltable-part 1\nstaging 2f78\nfile ../../etc/passwd 1 1 61 62\n",
        "leveltable-part 1\nstaging 2f78\nfile 000001.ldb 1 1 62 61\n",
        "leveltable-part 1\nstaging 2f78\nfile 000001.ldb 1 1 6 61\n",
        "leveltable-part 1\nstaging 2f78\nfile 000001.ldb 1 0 61 61\n",
        "leveltable-part 1\nstaging 2f78\nfile 000001.ldb x 1 61 61\n",
        "leveltable-part 1\nstaging 2f78\nfile 000001.ldb 1 1 61\n",
    ] {
        assert!(Part::from_record(text).is_err(), "{text:?}");
    }
}

#[test]
fn external_sort_spills_merges_and_handles_duplicates() {
    let tmp = tempfile::tempdir().unwrap();
    let entries = input(30_000, 3, 120);
    let mut shuffled = entries.clone();
    let mut x = 7u64;
    for i in (1..shuffled.len()).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        shuffled.swap(i, (x >> 33) as usize % (i + 1));
    }
    let sort = |items: &[(Vec<u8>, Vec<u8>)], duplicates| {
        // A budget of 1 MiB: several runs.
        let mut sorter = ExternalSorter::new(1 << 20, duplicates, tmp.path()).unwrap();
        for (k, v) in items {
            sorter.add(k, v).unwrap();
        }
        let mut out = Vec::new();
        sorter
            .finish(|k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .map(|()| out)
    };
    assert_eq!(sort(&shuffled, Duplicates::Error).unwrap(), entries);
    // A key given twice: refused by name, or the last value kept.
    let mut twice = shuffled.clone();
    twice.push((entries[123].0.clone(), b"newer".to_vec()));
    let err = sort(&twice, Duplicates::Error).unwrap_err();
    assert!(
        err.to_string()
            .contains(&String::from_utf8_lossy(&entries[123].0).into_owned()),
        "{err}"
    );
    let mut expected = entries.clone();
    expected[123].1 = b"newer".to_vec();
    assert_eq!(sort(&twice, Duplicates::KeepLast).unwrap(), expected);
    // Duplicates inside one in-memory buffer too.
    let small = vec![
        (b"b".to_vec(), b"1".to_vec()),
        (b"a".to_vec(), b"2".to_vec()),
        (b"b".to_vec(), b"3".to_vec()),
    ];
    assert!(sort(&small, Duplicates::Error).is_err());
    assert_eq!(
        sort(&small, Duplicates::KeepLast).unwrap(),
        [
            (b"a".to_vec(), b"2".to_vec()),
            (b"b".to_vec(), b"3".to_vec())
        ]
    );
    // The sorter's temporary runs are gone.
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random inputs and options: what is read back is what went in, and the files do not
    /// depend on the thread count.
    #[test]
    fn random_builds(
        n in 0usize..3000,
        seed in any::<u64>(),
        value_len in 0usize..400,
        max_file_size in 1u64..200_000,
        block_size in 1usize..8192,
        restart_interval in 1usize..32,
        snappy in any::<bool>(),
        bloom in proptest::option::of(1usize..20),
        threads in 2usize..5,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let entries = input(n, seed, value_len);
        let options = BulkOptions::default()
            .max_file_size(max_file_size)
            .table(
                TableOptions::default()
                    .block_size(block_size)
                    .block_restart_interval(restart_interval)
                    .compression(if snappy { Compression::Snappy } else { Compression::None })
                    .filter_policy(bloom.map(leveltable_table::BloomFilterPolicy::new)),
            );
        build(&tmp.path().join("one"), &entries, options.clone());
        build(&tmp.path().join("many"), &entries, options.threads(threads));
        prop_assert_eq!(read_back(&tmp.path().join("one")), entries);
        prop_assert_eq!(files(&tmp.path().join("one")), files(&tmp.path().join("many")));
    }
}
