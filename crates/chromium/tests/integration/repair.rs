//! A repair of Chromium's IndexedDB LevelDB directory (ordered by `idb_cmp1`) given
//! [`comparators`](leveltable_chromium::comparators): the repaired database is ordered by
//! `idb_cmp1`, its MANIFEST names it, and the IndexedDB reader reads it. Undamaged, it reads
//! as the source did; with a data block damaged, it reads as the source did but for the keys
//! in the range the report lists as lost.

use crate::common;

use std::cmp::Ordering;
use std::fs;
use std::path::Path;

use leveltable_chromium::IdbCmp1;
use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_db::{DbOptions, KeyRange, LostKind, RepairOptions, repair, repair_in_place};
use leveltable_table::Comparator;
use serde_json::Value;

/// A copy of the golden IndexedDB directory at `to`.
fn copy_golden(to: &Path) {
    fs::create_dir(to).unwrap();
    for e in fs::read_dir(common::indexeddb_dir()).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn options() -> RepairOptions {
    RepairOptions::default()
        .db(DbOptions::default().comparators(leveltable_chromium::comparators()))
}

/// Every live entry of the IndexedDB database `dir`, in its order, read as Chromium would.
fn view(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = read::open(dir, false, DbOptions::default()).unwrap();
    assert_eq!(db.properties().comparator, "idb_cmp1", "{}", dir.display());
    db.iter().collect::<leveltable_db::Result<_>>().unwrap()
}

/// Every IndexedDB record of `dir`, decoded.
fn records(dir: &Path) -> Vec<Value> {
    let db = read::open(dir, false, DbOptions::default()).unwrap();
    read::indexeddb::records(&db, Reading::Live, &Filter::default())
        .unwrap()
        .collect::<leveltable_db::Result<_>>()
        .unwrap()
}

/// Whether `key` lies in `range` (both ends included, `None` unbounded) by `idb_cmp1`.
fn in_range(key: &[u8], range: &KeyRange) -> bool {
    let (first, last) = range;
    first
        .as_deref()
        .is_none_or(|f| IdbCmp1.compare(f, key) != Ordering::Greater)
        && last
            .as_deref()
            .is_none_or(|l| IdbCmp1.compare(key, l) != Ordering::Greater)
}

#[test]
fn an_undamaged_indexeddb_directory_repairs_to_the_same_view() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    copy_golden(&src);
    let dest = tmp.path().join("dest");
    let report = repair(&src, &dest, &options()).unwrap();
    assert_eq!(report.comparator, "idb_cmp1");
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    assert_eq!(report.uncertain_keys, 0);
    let before = view(&src);
    assert!(before.len() > 1000, "{} entries", before.len());
    assert_eq!(view(&dest), before);
    assert_eq!(report.keys, before.len() as u64);
    assert_eq!(records(&dest), records(&src));

    // In place too: the directory reads as it did, the original kept in lost/.
    repair_in_place(&src, &options()).unwrap();
    assert_eq!(view(&src), before);
    assert!(src.join("lost").is_dir());
}

/// One byte flipped at each tenth of the table up to the eighth (the filter and index
/// blocks are in its last tenth): the data blocks there fail their checksums.
/// Outside the reported range the repair reads exactly as the source did; inside it, each
/// key kept is reported uncertain, and with `drop_uncertain` none is kept.
#[test]
fn a_damaged_indexeddb_directory_loses_only_the_reported_range() {
    let tmp = tempfile::tempdir().unwrap();
    let before = view(&common::indexeddb_dir());
    // Blocks whose range held live keys (a block may hold only deleted versions).
    let mut live_lost = 0;
    for tenth in 1..9 {
        let src = tmp.path().join(format!("src{tenth}"));
        copy_golden(&src);
        let table = src.join("000005.ldb");
        let mut bytes = fs::read(&table).unwrap();
        let at = bytes.len() * tenth / 10;
        bytes[at] ^= 0x40;
        fs::write(&table, bytes).unwrap();

        let mut kept_uncertain = 0;
        for drop_uncertain in [false, true] {
            let dest = tmp.path().join(format!("dest{tenth}-{drop_uncertain}"));
            let report = repair(&src, &dest, &options().drop_uncertain(drop_uncertain)).unwrap();
            assert_eq!(report.comparator, "idb_cmp1");
            let ranges: Vec<&KeyRange> = report
                .lost
                .iter()
                .map(|l| {
                    assert_eq!((l.kind, l.file.as_str()), (LostKind::Block, "000005.ldb"));
                    l.range.as_ref().expect("a lost block's key range")
                })
                .collect();
            assert!(!ranges.is_empty(), "byte {at}: nothing lost");
            let lost = |key: &[u8]| ranges.iter().any(|r| in_range(key, r));
            let after = view(&dest);
            let outside = |v: &[(Vec<u8>, Vec<u8>)]| -> Vec<(Vec<u8>, Vec<u8>)> {
                v.iter().filter(|(k, _)| !lost(k)).cloned().collect()
            };
            assert_eq!(outside(&after), outside(&before), "byte {at}");
            let inside: Vec<&(Vec<u8>, Vec<u8>)> = after.iter().filter(|(k, _)| lost(k)).collect();
            // Each kept and reported (its version read from the damaged block, unchecked, or
            // an older one whose deletion was lost), or, reported still, left out.
            if drop_uncertain {
                assert_eq!(after, outside(&before), "byte {at}");
                assert_eq!(report.uncertain_keys, kept_uncertain, "byte {at}");
            } else {
                assert_eq!(report.uncertain_keys, inside.len() as u64, "byte {at}");
                kept_uncertain = report.uncertain_keys;
            }
            assert_eq!(report.keys, after.len() as u64);
            if before.iter().any(|(k, _)| lost(k)) {
                live_lost += 1;
                if drop_uncertain {
                    assert!(after.len() < before.len(), "byte {at}");
                }
            }
        }
    }
    assert!(live_lost > 0, "no damaged block held live keys");
}

/// The copies taken while Chromium wrote (a table and a log missing; a torn log) repair
/// into databases the IndexedDB reader opens, each record one the salvage read.
#[test]
fn the_damaged_live_copies_repair_into_readable_databases() {
    for copy in ["most", "torn_log"] {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join(copy);
        fs::create_dir(&src).unwrap();
        for e in fs::read_dir(common::live().join("copies").join(copy)).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), src.join(e.file_name())).unwrap();
        }
        let dest = tmp.path().join("dest");
        let report = repair(&src, &dest, &options()).unwrap();
        assert_eq!(report.comparator, "idb_cmp1");
        assert!(!report.lost.is_empty(), "{copy}: nothing lost");
        let after = view(&dest);
        assert_eq!(report.keys, after.len() as u64, "{copy}");
        let salvaged = read::open(&src, true, DbOptions::default()).unwrap();
        let versions: Vec<(Vec<u8>, Vec<u8>)> = salvaged
            .versions()
            .map(|v| v.map(|v| (v.user_key, v.value)))
            .collect::<leveltable_db::Result<_>>()
            .unwrap();
        assert!(after.iter().all(|e| versions.contains(e)), "{copy}");
        assert!(!records(&dest).is_empty(), "{copy}");
    }
}

/// A MANIFEST naming `idb_cmp1` is still refused when the options do not know it.
#[test]
fn without_the_comparator_the_repair_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    copy_golden(&src);
    let dest = tmp.path().join("dest");
    let err = repair(&src, &dest, &RepairOptions::default()).unwrap_err();
    assert!(
        matches!(&err, leveltable_db::Error::RepairComparator { name, .. } if name == "idb_cmp1"),
        "{err}"
    );
    assert!(!dest.exists());
}
