//! A repair reads and writes a database by the comparator its MANIFEST names, which the
//! options must know; one they do not (Chromium's IndexedDB `idb_cmp1` without
//! `leveltable_chromium::comparators()`, an application's own) is refused, naming the
//! MANIFEST and the comparator, before anything is written: no DEST, and for a repair in
//! place the directory exactly as it was (not even a `LOCK` file added).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use leveltable_db::{
    ComparatorRegistry, Db, DbOptions, Error, RepairOptions, repair, repair_in_place,
};

use crate::common::comparators::{Reverse, write_db};

/// Every entry of `dir` with its bytes (directories as empty).
fn state(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (e.file_name().into_string().unwrap(), bytes)
        })
        .collect()
}

/// Checks that `result` is the refusal naming `dir`'s MANIFEST-000002 and `name`.
fn assert_refused<T: std::fmt::Debug>(result: leveltable_db::Result<T>, dir: &Path, name: &str) {
    match result {
        Err(Error::RepairComparator { file, name: found }) => {
            assert_eq!(file, dir.join("MANIFEST-000002"));
            assert_eq!(found, name);
            let e = Error::RepairComparator { file, name: found };
            let text = e.to_string();
            assert!(text.contains("MANIFEST-000002"), "{text}");
            assert!(text.contains(name), "{text}");
            assert!(text.contains("wrote nothing"), "{text}");
        }
        other => panic!("not refused for {name}: {other:?}"),
    }
}

#[test]
fn a_source_ordered_by_an_unknown_comparator_is_refused_and_nothing_written() {
    let reverse = || DbOptions::default().comparator(Arc::new(Reverse));
    // (comparator named, options, CURRENT kept)
    let cases: [(&str, RepairOptions, bool); 6] = [
        // A comparator the options do not know.
        ("idb_cmp1", RepairOptions::default(), true),
        // Another one than the options' own.
        ("idb_cmp1", RepairOptions::default().db(reverse()), true),
        // A registry without it.
        (
            "test.Reverse",
            RepairOptions::default().db(DbOptions::default().comparators(Default::default())),
            true,
        ),
        // CURRENT lost: the MANIFEST left in the directory still tells the order.
        ("idb_cmp1", RepairOptions::default(), false),
        ("idb_cmp1", RepairOptions::default().db(reverse()), false),
        ("test.Reverse", RepairOptions::default(), false),
    ];
    for (name, options, current) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        write_db(&src, Some(name));
        if !current {
            fs::remove_file(src.join("CURRENT")).unwrap();
        }
        let before = state(&src);
        let dest = tmp.path().join("dest");
        assert_refused(repair(&src, &dest, &options), &src, name);
        assert!(!dest.exists(), "{name}: {} written", dest.display());
        assert_eq!(state(&src), before, "{name}");
        assert_refused(repair_in_place(&src, &options), &src, name);
        assert_eq!(state(&src), before, "{name}: changed in place");
        // Nothing beside it either (no staging directory left).
        let beside: Vec<String> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(beside, ["src"], "{name}");
    }
}

/// A source ordered by a comparator the options know (in their registry, or as their own)
/// is read and written by it: the repaired tables hold its keys in its order, and the
/// MANIFEST names it, also when `CURRENT` was lost and only the MANIFEST left tells it.
#[test]
fn a_source_ordered_by_a_known_comparator_is_repaired_in_its_order() {
    let registry = ComparatorRegistry::default().with(Arc::new(Reverse));
    let by_registry = RepairOptions::default().db(DbOptions::default().comparators(registry));
    let by_own = RepairOptions::default().db(DbOptions::default().comparator(Arc::new(Reverse)));
    for (options, current) in [(&by_registry, true), (&by_own, true), (&by_registry, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        write_db(&src, Some("test.Reverse"));
        if !current {
            fs::remove_file(src.join("CURRENT")).unwrap();
        }
        let dest = tmp.path().join("dest");
        let report = repair(&src, &dest, options).unwrap();
        assert_eq!(
            (report.comparator.as_str(), report.keys),
            ("test.Reverse", 3)
        );
        let db = Db::open(&dest, DbOptions::default().comparator(Arc::new(Reverse))).unwrap();
        assert_eq!(db.properties().comparator, "test.Reverse");
        let keys: Vec<Vec<u8>> = db.iter().map(|e| e.unwrap().0).collect();
        assert_eq!(keys, [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        // The bytewise order does not open it.
        assert!(matches!(
            Db::open(&dest, DbOptions::default()),
            Err(Error::UnknownComparator { .. })
        ));
    }
}

/// The same database, its MANIFEST naming the bytewise comparator or none, is repaired.
#[test]
fn a_bytewise_source_is_repaired() {
    for named in [Some("leveldb.BytewiseComparator"), None] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        write_db(&src, named);
        let report = repair(&src, tmp.path().join("dest"), &RepairOptions::default()).unwrap();
        assert_eq!(report.keys, 3, "{named:?}");
        assert_eq!(report.comparator, "leveldb.BytewiseComparator");
    }
}

/// The damaged copies of a live Chromium IndexedDB database in the repository's corpus
/// (a table and a log missing; a torn log) are ordered by `idb_cmp1`, which the default
/// options do not know: refused, with nothing written.
#[test]
fn the_damaged_chromium_copies_are_refused() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../chromium/testdata/live/copies");
    for copy in ["most", "torn_log"] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join(copy);
        fs::create_dir(&src).unwrap();
        for (name, bytes) in state(&corpus.join(copy)) {
            fs::write(src.join(name), bytes).unwrap();
        }
        let before = state(&src);
        let dest = tmp.path().join("dest");
        let result = repair(&src, &dest, &RepairOptions::default());
        match result {
            Err(Error::RepairComparator { file, name }) => {
                assert_eq!(file, src.join("MANIFEST-000001"), "{copy}");
                assert_eq!(name, "idb_cmp1", "{copy}");
            }
            other => panic!("{copy}: {other:?}"),
        }
        assert!(!dest.exists());
        assert_eq!(state(&src), before);
    }
}
