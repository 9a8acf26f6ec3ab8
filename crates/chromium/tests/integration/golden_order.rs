//! The oracle for `idb_cmp1`: table files Chromium 156 wrote with its own comparator. Every
//! adjacent pair of keys in them must be in order under ours, decided by Chromium's rules
//! (never by the bytewise fallback for keys Chromium cannot decode).

use crate::common;

use std::cmp::Ordering;
use std::sync::Arc;

use leveltable_chromium::comparator::compare_keys;
use leveltable_chromium::{IdbCmp1, IdbRecordKey};
use leveltable_db::dbformat::{InternalKeyComparator, ParsedInternalKey};
use leveltable_db::{Db, DbOptions};
use leveltable_table::{Comparator, ReadOptions, Table};

fn table_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(common::indexeddb_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ldb"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_adjacent_pair_in_chromiums_tables_is_in_idb_cmp1_order() {
    let files = table_files();
    assert!(!files.is_empty(), "the golden data has table files");
    let cmp = InternalKeyComparator::new(Arc::new(IdbCmp1));
    let mut pairs = 0;
    for path in files {
        let options = ReadOptions::default().comparator(Arc::new(cmp.clone()));
        let table = Table::open(std::fs::File::open(&path).unwrap(), options).unwrap();
        let keys: Vec<Vec<u8>> = table.entries().map(|e| e.unwrap().0).collect();
        assert!(keys.len() > 100, "{}: {} keys", path.display(), keys.len());
        for w in keys.windows(2) {
            assert_eq!(
                cmp.compare(&w[0], &w[1]),
                Ordering::Less,
                "{}",
                path.display()
            );
            let a = ParsedInternalKey::parse(&w[0]).unwrap().user_key;
            let b = ParsedInternalKey::parse(&w[1]).unwrap().user_key;
            let decided = compare_keys(a, b);
            assert!(
                decided.is_some(),
                "Chromium's rules decide {a:x?} vs {b:x?}"
            );
            assert_ne!(decided, Some(Ordering::Greater), "{a:x?} vs {b:x?}");
            // The reverse pair answers the reverse.
            assert_eq!(compare_keys(b, a), decided.map(Ordering::reverse));
            pairs += 1;
        }
    }
    assert!(pairs > 100);
}

#[test]
fn every_key_chromium_wrote_decodes() {
    let db = Db::open(
        common::indexeddb_dir(),
        DbOptions::default().comparator(Arc::new(IdbCmp1)),
    )
    .unwrap();
    let mut previous: Option<Vec<u8>> = None;
    let mut kinds = std::collections::BTreeMap::new();
    for entry in db.iter() {
        let (key, _) = entry.unwrap();
        let decoded = IdbRecordKey::decode(&key).unwrap_or_else(|e| panic!("{key:x?}: {e}"));
        let kind = decoded.to_json()["kind"].as_str().unwrap().to_string();
        *kinds.entry(kind).or_insert(0) += 1;
        if let Some(p) = &previous {
            assert_eq!(compare_keys(p, &key), Some(Ordering::Less));
        }
        previous = Some(key);
    }
    for kind in [
        "global_metadata",
        "database_name",
        "database_metadata",
        "object_store_metadata",
        "index_metadata",
        "object_store_name",
        "object_store_data",
        "exists_entry",
        "index_data",
    ] {
        assert!(kinds.contains_key(kind), "no {kind} key in {kinds:?}");
    }
}

#[test]
fn the_golden_tables_are_not_in_bytewise_order() {
    // The order test above can fail: the keys Chromium wrote are not bytewise sorted (numbers
    // are little-endian doubles, key types are not in byte order), so a comparator that got
    // Chromium's rules wrong would put some adjacent pair the wrong way round.
    let mut out_of_bytewise_order = 0;
    for path in table_files() {
        let options = ReadOptions::default()
            .comparator(Arc::new(InternalKeyComparator::new(Arc::new(IdbCmp1))));
        let table = Table::open(std::fs::File::open(&path).unwrap(), options).unwrap();
        let keys: Vec<Vec<u8>> = table.entries().map(|e| e.unwrap().0).collect();
        for w in keys.windows(2) {
            let a = ParsedInternalKey::parse(&w[0]).unwrap().user_key;
            let b = ParsedInternalKey::parse(&w[1]).unwrap().user_key;
            if a > b {
                out_of_bytewise_order += 1;
            }
        }
    }
    assert!(out_of_bytewise_order > 10, "{out_of_bytewise_order}");
}
