//! Local Storage and Session Storage Chromium 156 wrote for `testdata/make/page.html`,
//! decoded and checked against the items the page set.

use crate::common;

use leveltable_chromium::local_storage::{self, LocalStorageRecord};
use leveltable_chromium::session_storage::{self, SessionStorageRecord};
use leveltable_db::{Db, DbOptions};

fn pairs(dir: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(common::golden().join(dir), DbOptions::default()).unwrap();
    db.iter().map(|e| e.unwrap()).collect()
}

fn written(name: &str) -> Vec<(String, String)> {
    let mut items: Vec<(String, String)> = common::report()[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect();
    items.sort();
    items
}

#[test]
fn local_storage_holds_the_items_the_page_set() {
    let pairs = pairs("local_storage/leveldb");
    let entries = local_storage::entries(pairs.iter().map(|(k, v)| (k, v))).unwrap();
    let mut items: Vec<(String, String)> = entries
        .iter()
        .map(|(origin, k, v)| {
            assert_eq!(origin, "http://127.0.0.1:8765");
            (k.clone(), v.clone())
        })
        .collect();
    items.sort();
    assert_eq!(items, written("local_storage"));
    // Both of Chromium's string formats are in the data: Latin-1 and UTF-16.
    let raw_formats: std::collections::BTreeSet<u8> = pairs
        .iter()
        .filter(|(k, _)| k[0] == b'_')
        .map(|(_, v)| v[0])
        .collect();
    assert_eq!(raw_formats, [0, 1].into());
}

#[test]
fn local_storage_metadata_decodes() {
    let mut kinds = Vec::new();
    for (k, v) in pairs("local_storage/leveldb") {
        let record = LocalStorageRecord::decode(&k, &v).unwrap();
        match &record {
            LocalStorageRecord::Version(v) => assert_eq!(v, "1"),
            LocalStorageRecord::Meta {
                origin,
                last_modified_ms,
                size_bytes,
            } => {
                assert_eq!(origin, "http://127.0.0.1:8765");
                // Written in 2020 or later, and not in the future of this test's data.
                let ms = last_modified_ms.unwrap();
                assert!(ms > 1_577_836_800_000 && ms < 4_102_444_800_000, "{ms}");
                // The bytes of the stored keys and values: a format byte, then Latin-1 when
                // every character fits, UTF-16 otherwise.
                let stored = |s: &str| {
                    if s.chars().all(|c| u32::from(c) < 256) {
                        1 + s.chars().count()
                    } else {
                        1 + 2 * s.encode_utf16().count()
                    }
                };
                let bytes: usize = written("local_storage")
                    .iter()
                    .map(|(k, v)| stored(k) + stored(v))
                    .sum();
                assert_eq!(*size_bytes, Some(bytes as u64));
            }
            LocalStorageRecord::MetaAccess {
                last_accessed_ms, ..
            } => assert!(last_accessed_ms.unwrap() > 1_577_836_800_000),
            LocalStorageRecord::Entry { .. } => {}
        }
        kinds.push(record.to_json()["kind"].as_str().unwrap().to_string());
    }
    for kind in ["version", "meta", "meta_access", "entry"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind}");
    }
}

#[test]
fn session_storage_holds_the_items_the_page_set() {
    let pairs = pairs("session_storage");
    let entries = session_storage::entries(pairs.iter().map(|(k, v)| (k, v))).unwrap();
    let mut items: Vec<(String, String)> = entries
        .iter()
        .map(|e| {
            assert_eq!(e.origin, "http://127.0.0.1:8765/");
            assert_eq!(e.namespace.len(), 36);
            (e.key.clone(), e.value.clone())
        })
        .collect();
    items.sort();
    assert_eq!(items, written("session_storage"));
    for (k, v) in &pairs {
        let record = SessionStorageRecord::decode(k, v).unwrap();
        assert!(record.to_json()["kind"].is_string());
    }
}
