//! The directory readers (`leveltable_chromium::read`): the golden directories open by their
//! comparator's name, and a record that does not decode is a line with its error and bytes,
//! not the end of the read.

use crate::common;

use std::path::Path;

use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_chromium::{IdbKey, KeyPrefix};
use leveltable_db::log_writer::LogWriter;
use leveltable_db::version_edit::VersionEdit;
use leveltable_db::write_batch::WriteBatchBuilder;
use leveltable_db::{DbOptions, Error};
use serde_json::{Value, json};

/// A database in `dir` whose MANIFEST names `comparator` and whose log holds `puts`.
fn write_db(dir: &Path, comparator: &str, puts: &[(&[u8], &[u8])]) {
    let edit = VersionEdit {
        comparator: Some(comparator.to_string()),
        log_number: Some(3),
        next_file_number: Some(4),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    let mut w = LogWriter::new(Vec::new());
    w.add_record(&edit.encode()).unwrap();
    std::fs::write(dir.join("MANIFEST-000002"), w.into_inner()).unwrap();
    std::fs::write(dir.join("CURRENT"), b"MANIFEST-000002\n").unwrap();
    let mut batch = WriteBatchBuilder::new(1);
    for (k, v) in puts {
        batch.put(k, v);
    }
    let mut log = LogWriter::new(Vec::new());
    log.add_record(batch.as_bytes()).unwrap();
    std::fs::write(dir.join("000003.log"), log.into_inner()).unwrap();
}

fn all(iter: impl Iterator<Item = leveltable_db::Result<Value>>) -> Vec<Value> {
    iter.map(Result::unwrap).collect()
}

#[test]
fn the_golden_indexeddb_opens_by_its_comparators_name() {
    let db = read::open(common::indexeddb_dir(), false, DbOptions::default()).unwrap();
    assert_eq!(db.properties().comparator, "idb_cmp1");
    let records = all(read::indexeddb::records(&db, Reading::Live, &Filter::default()).unwrap());
    assert_eq!(records.len(), 544);
    // Without the registry, the bytewise default refuses it, naming idb_cmp1.
    let refused =
        leveltable_db::Db::open(common::indexeddb_dir(), DbOptions::default()).unwrap_err();
    assert!(
        matches!(&refused, Error::UnknownComparator { name, .. } if name == "idb_cmp1"),
        "{refused}"
    );
    let local = read::open(
        common::golden().join("local_storage/leveldb"),
        true,
        DbOptions::default(),
    )
    .unwrap();
    assert_eq!(local.properties().comparator, "leveldb.BytewiseComparator");
}

#[test]
fn an_undecodable_indexeddb_value_is_a_record_with_its_error_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = KeyPrefix {
        database_id: 1,
        object_store_id: 1,
        index_id: 1,
    }
    .encode()
    .unwrap();
    let good = [prefix.clone(), IdbKey::Number(1.0).encoded()].concat();
    let bad = [prefix, IdbKey::Number(2.0).encoded()].concat();
    // Record 1: version 1, Blink envelope 21 with its (empty) trailer offset, V8 16, the
    // string "a". Record 2: Blink's envelope cut short.
    let mut good_value = vec![1, 0xff, 0x15, 0xfe];
    good_value.extend([0; 12]);
    good_value.extend([0xff, 0x10, b'"', 1, b'a']);
    let bad_value = [1, 0xff, 0x15, 0xfe];
    write_db(
        dir.path(),
        "idb_cmp1",
        &[(&good, &good_value), (&bad, &bad_value)],
    );
    let db = read::open(dir.path(), false, DbOptions::default()).unwrap();
    let records = all(read::indexeddb::records(&db, Reading::Live, &Filter::default()).unwrap());
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(
        records[0],
        json!({ "origin": null, "database": null, "store": null, "key": 1, "value": "a" })
    );
    let r = &records[1];
    assert_eq!(r["key"], 2);
    assert_eq!(r["value"], Value::Null);
    assert!(
        r["error"].as_str().unwrap().starts_with("chromium: "),
        "{r}"
    );
    assert_eq!(r["value_hex"], "01ff15fe");
    assert_eq!(
        r["key_hex"],
        bad.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    // A filter on a name matches nothing whose name is unknown.
    let filter = Filter {
        database: Some("x".into()),
        store: None,
    };
    assert!(all(read::indexeddb::records(&db, Reading::Live, &filter).unwrap()).is_empty());
    // With every version: the same records, each live at its sequence.
    let versions =
        all(read::indexeddb::records(&db, Reading::Versions, &Filter::default()).unwrap());
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["state"], "live");
    assert_eq!(versions[0]["sequence"], 1);
    assert_eq!(versions[1]["sequence"], 2);
}

#[test]
fn an_undecodable_local_storage_item_is_a_record_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    write_db(
        dir.path(),
        "leveldb.BytewiseComparator",
        &[
            (b"VERSION", b"1"),
            (b"_https://a.example\0\x01k", b"\x01v"),
            (b"_https://b.example\0\x01k", b"\x07?"),
        ],
    );
    let db = read::open(dir.path(), false, DbOptions::default()).unwrap();
    let records = all(read::local_storage::records(&db, Reading::Live));
    assert_eq!(records.len(), 2);
    assert_eq!(
        records[0],
        json!({ "origin": "https://a.example", "key": "k", "value": "v" })
    );
    assert_eq!(records[1]["origin"], "https://b.example");
    assert_eq!(records[1]["value"], Value::Null);
    assert!(
        records[1]["error"].as_str().unwrap().contains("0x07"),
        "{}",
        records[1]
    );
}

#[test]
fn session_storage_items_of_a_map_no_tab_names_have_null_names() {
    let dir = tempfile::tempdir().unwrap();
    let ns = "namespace-0123456789abcdef0123456789abcdef0123-https://a.example/";
    write_db(
        dir.path(),
        "leveldb.BytewiseComparator",
        &[
            (ns.as_bytes(), b"1"),
            (b"map-1-k", b"v\0"),
            (b"map-2-orphan", b"w\0"),
        ],
    );
    let db = read::open(dir.path(), false, DbOptions::default()).unwrap();
    let records = all(read::session_storage::records(&db, Reading::Live).unwrap());
    assert_eq!(
        records,
        [
            json!({ "namespace": "0123456789abcdef0123456789abcdef0123", "origin": "https://a.example/",
                "key": "k", "value": "v", "map_id": 1 }),
            json!({ "namespace": null, "origin": null, "key": "orphan", "value": "w", "map_id": 2 }),
        ]
    );
}
