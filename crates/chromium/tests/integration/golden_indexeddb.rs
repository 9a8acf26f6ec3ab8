//! IndexedDB data Chromium 156 wrote (see `testdata/README.md`), decoded and checked against
//! what the page that wrote it says it wrote, and against the order Chromium's own
//! `getAllKeys()` and index cursors returned.

use crate::common;

use std::sync::Arc;

use leveltable_chromium::metadata::{KeyPath, Metadata, value_json};
use leveltable_chromium::{IdbCmp1, IdbKey, IdbRecordKey, KeyType};
use leveltable_db::{Db, DbOptions};
use leveltable_table::Comparator;
use serde_json::{Value, json};

const ORIGIN: &str = "http_127.0.0.1_8765";

fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(
        common::indexeddb_dir(),
        DbOptions::default().comparator(Arc::new(IdbCmp1)),
    )
    .unwrap();
    db.iter().map(|e| e.unwrap()).collect()
}

/// The entries reversed, then sorted by `idb_cmp1`: the order the tests compare with
/// Chromium's is ours, not the order the files happen to hold.
fn in_idb_cmp1_order(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<&(Vec<u8>, Vec<u8>)> {
    let mut sorted: Vec<_> = entries.iter().rev().collect();
    sorted.sort_by(|a, b| IdbCmp1.compare(&a.0, &b.0));
    sorted
}

/// The page's `describeKey`: every number as a float, strings as code points.
fn describe(k: &IdbKey) -> Value {
    match k {
        IdbKey::Number(n) if n.is_finite() => json!({ "number": n + 0.0 }),
        IdbKey::Number(n) => json!({ "number": if *n > 0.0 { "Infinity" } else { "-Infinity" } }),
        IdbKey::Date(ms) => json!({ "date": ms }),
        IdbKey::String(units) => {
            let points: Vec<u32> = char::decode_utf16(units.iter().copied())
                .map(|c| {
                    c.map(u32::from)
                        .unwrap_or_else(|e| u32::from(e.unpaired_surrogate()))
                })
                .collect();
            json!({ "string": points })
        }
        IdbKey::Binary(b) => json!({ "binary": b }),
        IdbKey::Array(items) => json!({ "array": items.iter().map(describe).collect::<Vec<_>>() }),
        other => panic!("{other:?} keys no record"),
    }
}

/// Every JSON number as a float, so that `65535` and `65535.0` compare equal.
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        v => v.clone(),
    }
}

/// JSON trees equal up to the last bit of their floats (serde_json's parser may round a
/// float JavaScript printed exactly one unit off).
fn assert_same(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= x.abs() * 1e-15, "{path}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}: {a} vs {b}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_same(x, y, &format!("{path}/{i}"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{path}"
            );
            for (k, v) in x {
                assert_same(v, &y[k], &format!("{path}/{k}"));
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn the_schema_is_what_the_page_created() {
    let meta = Metadata::from_entries(entries()).unwrap();
    let (_, keys) = meta.database(ORIGIN, "keys").unwrap();
    assert_eq!(keys.version, Some(2));
    let (_, values) = meta.database(ORIGIN, "values").unwrap();
    // 300 takes two bytes, which tells a varint from an int.
    assert_eq!(values.version, Some(300));
    assert!(meta.database(ORIGIN, "scratch").is_none(), "deleted");

    let names: Vec<&str> = keys
        .object_stores
        .values()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "numbers",
            "dates",
            "strings",
            "binaries",
            "arrays",
            "mixed",
            "people",
            "nested_path"
        ],
        "in id order, without the deleted store"
    );
    let people = keys
        .object_stores
        .values()
        .find(|s| s.name == "people")
        .unwrap();
    assert_eq!(people.key_path, Some(KeyPath::String("id".into())));
    assert!(people.auto_increment);
    assert_eq!(people.key_generator_current_number, Some(9));
    let index = |name: &str| people.indexes.values().find(|i| i.name == name).unwrap();
    assert_eq!(
        index("by_name").key_path,
        Some(KeyPath::String("name".into()))
    );
    assert!(!index("by_name").unique && !index("by_name").multi_entry);
    assert!(index("by_email").unique);
    assert!(index("by_tag").multi_entry);
    assert_eq!(
        index("by_name_age").key_path,
        Some(KeyPath::Array(vec!["name".into(), "age".into()]))
    );
    let nested = keys
        .object_stores
        .values()
        .find(|s| s.name == "nested_path")
        .unwrap();
    assert_eq!(nested.key_path, Some(KeyPath::String("a.b".into())));
    assert!(!nested.auto_increment);
    let numbers = keys
        .object_stores
        .values()
        .find(|s| s.name == "numbers")
        .unwrap();
    assert_eq!(numbers.key_path, Some(KeyPath::None));

    let schema = meta.to_json();
    assert_eq!(schema["databases"].as_array().unwrap().len(), 3);
}

#[test]
fn records_come_in_the_order_chromiums_get_all_keys_returned() {
    let entries = entries();
    let meta = Metadata::from_entries(entries.iter().map(|(k, v)| (k, v))).unwrap();
    let (db_id, keys) = meta.database(ORIGIN, "keys").unwrap();
    let report = common::report();
    let order = report["key_order"].as_object().unwrap();
    assert_eq!(order.len(), 8);
    for (store_id, store) in &keys.object_stores {
        let ours: Vec<Value> = in_idb_cmp1_order(&entries)
            .into_iter()
            .filter_map(|(k, _)| match IdbRecordKey::decode(k).unwrap() {
                IdbRecordKey::Data {
                    kind: KeyType::ObjectStoreData,
                    database_id,
                    object_store_id,
                    key,
                } if database_id == db_id && object_store_id == *store_id => Some(describe(&key)),
                _ => None,
            })
            .collect();
        let chromium = norm(&order[&store.name]);
        assert!(!ours.is_empty(), "{}", store.name);
        assert_eq!(norm(&Value::Array(ours)), chromium, "store {}", store.name);
    }
}

#[test]
fn index_entries_come_in_the_order_chromiums_cursors_returned() {
    let entries = entries();
    let meta = Metadata::from_entries(entries.iter().map(|(k, v)| (k, v))).unwrap();
    let (db_id, keys) = meta.database(ORIGIN, "keys").unwrap();
    let (people_id, people) = keys
        .object_stores
        .iter()
        .find(|(_, s)| s.name == "people")
        .unwrap();
    let report = common::report();
    for (index_id, index) in &people.indexes {
        let ours: Vec<Value> = in_idb_cmp1_order(&entries)
            .into_iter()
            .filter_map(|(k, v)| match IdbRecordKey::decode(k).unwrap() {
                IdbRecordKey::IndexData {
                    database_id,
                    object_store_id,
                    index_id: i,
                    key,
                    primary_key,
                    ..
                } if database_id == db_id && object_store_id == *people_id && i == *index_id => {
                    // The value repeats the primary key after the record's version.
                    let value = value_json(&IdbRecordKey::decode(k).unwrap(), v).unwrap();
                    let primary = primary_key.unwrap();
                    assert_eq!(value["primary_key"], primary.to_json());
                    Some(json!([describe(&key), describe(&primary)]))
                }
                _ => None,
            })
            .collect();
        let chromium = norm(&report["index_order"][&index.name]);
        assert_eq!(norm(&Value::Array(ours)), chromium, "index {}", index.name);
    }
}

#[test]
fn every_value_chromium_wrote_decodes() {
    let mut records = 0;
    for (k, v) in entries() {
        let key = IdbRecordKey::decode(&k).unwrap();
        let value = value_json(&key, &v).unwrap_or_else(|e| panic!("{}: {e}", key.to_json()));
        if let IdbRecordKey::Data {
            kind: KeyType::ObjectStoreData,
            ..
        } = key
        {
            assert!(value["version"].as_i64().unwrap() > 0);
            records += 1;
        }
    }
    assert!(records > 150, "{records}");
}

#[test]
fn blob_entries_describe_the_blob_and_the_file() {
    let mut found = Vec::new();
    for (k, v) in entries() {
        let key = IdbRecordKey::decode(&k).unwrap();
        if let IdbRecordKey::Data {
            kind: KeyType::BlobEntry,
            ..
        } = &key
        {
            found.push(value_json(&key, &v).unwrap());
        }
    }
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0],
        json!([{"kind": "blob", "blob_number": 2, "mime_type": "text/plain", "size": 9}])
    );
    assert_eq!(
        found[1],
        json!([{"kind": "file", "blob_number": 3, "mime_type": "text/plain", "size": 9,
            "name": "name.txt", "last_modified_ms": 1_700_000_000_000i64}])
    );
    // The blob files hold the bytes the page wrote.
    let blob_dir = common::golden().join("IndexedDB/http_127.0.0.1_8765.indexeddb.blob/2/00");
    assert_eq!(std::fs::read(blob_dir.join("2")).unwrap(), b"blob body");
    assert_eq!(std::fs::read(blob_dir.join("3")).unwrap(), b"file body");
}

#[test]
fn random_keys_of_every_type_come_in_chromiums_order() {
    // 300 random keys (numbers, dates, strings with unpaired surrogates, binaries, nested
    // arrays), in the order Chromium's getAllKeys() returned them.
    let entries = entries();
    let meta = Metadata::from_entries(entries.iter().map(|(k, v)| (k, v))).unwrap();
    let (db_id, many) = meta.database(ORIGIN, "many").unwrap();
    let (&random_id, _) = many
        .object_stores
        .iter()
        .find(|(_, s)| s.name == "random")
        .unwrap();
    let ours: Vec<Value> = in_idb_cmp1_order(&entries)
        .into_iter()
        .filter_map(|(k, _)| match IdbRecordKey::decode(k).unwrap() {
            IdbRecordKey::Data {
                kind: KeyType::ObjectStoreData,
                database_id,
                object_store_id,
                key,
            } if database_id == db_id && object_store_id == random_id => Some(describe(&key)),
            _ => None,
        })
        .collect();
    let chromium = common::report()["random_key_order"].clone();
    assert!(ours.len() > 90, "{}", ours.len());
    assert_same(&Value::Array(ours), &chromium, "");
}

#[test]
fn ids_past_255_take_two_bytes_and_decode() {
    let mut wide_store = false;
    let mut wide_index = false;
    for (k, _) in entries() {
        let (prefix, _) = leveltable_chromium::KeyPrefix::decode_prefix(&k).unwrap();
        wide_store |= prefix.object_store_id > 255 && (k[0] >> 2) & 7 == 1;
        wide_index |= prefix.index_id > 255 && k[0] & 3 == 1;
    }
    assert!(wide_store && wide_index);
    let meta = Metadata::from_entries(entries()).unwrap();
    let (_, many) = meta.database(ORIGIN, "many").unwrap();
    assert_eq!(many.object_stores.len(), 262);
    let wide = many
        .object_stores
        .values()
        .find(|s| s.name == "wide")
        .unwrap();
    assert_eq!(wide.indexes.len(), 230);
    // Chromium numbers indexes from 31.
    assert_eq!(wide.indexes.keys().next(), Some(&31));
    assert_eq!(wide.indexes.keys().last(), Some(&260));
}

#[test]
fn exists_entries_hold_the_version_of_their_record() {
    use std::collections::BTreeMap;
    let mut record_versions = BTreeMap::new();
    let mut exists_versions = BTreeMap::new();
    for (k, v) in entries() {
        let key = IdbRecordKey::decode(&k).unwrap();
        if let IdbRecordKey::Data {
            kind,
            database_id,
            object_store_id,
            key: user_key,
        } = &key
        {
            let id = (*database_id, *object_store_id, user_key.encoded());
            let value = value_json(&key, &v).unwrap();
            match kind {
                KeyType::ObjectStoreData => {
                    record_versions.insert(id, value["version"].as_i64().unwrap());
                }
                KeyType::ExistsEntry => {
                    exists_versions.insert(id, value.as_i64().unwrap());
                }
                _ => {}
            }
        }
    }
    assert_eq!(record_versions, exists_versions);
    assert!(
        record_versions.values().any(|&v| v > 255),
        "versions of two bytes"
    );
}
