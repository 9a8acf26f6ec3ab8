//! Values Chromium 156 compressed (`testdata/live/IndexedDB`, written by
//! `testdata/make/live.html`): Blink compresses a serialized value of 64 KiB or more with
//! Snappy (`FF 11 02`, then Snappy's raw format) when that saves at least 10%, and moves a
//! value still over 64 KiB into a blob file (`FF 11 01 <size> <blob index>`), which then
//! holds the compressed bytes.

use crate::common;

use std::path::PathBuf;

use leveltable_chromium::metadata::{split_record_value, value_json};
use leveltable_chromium::read::{self, Reading, indexeddb::Filter};
use leveltable_chromium::v8::{self, Wrapping};
use leveltable_chromium::{IdbKey, IdbRecordKey, KeyType};
use leveltable_db::DbOptions;
use serde_json::{Value, json};

fn leveldb_dir() -> PathBuf {
    common::live().join("IndexedDB/http_127.0.0.1_8766.indexeddb.leveldb")
}

fn blob_dir() -> PathBuf {
    common::live().join("IndexedDB/http_127.0.0.1_8766.indexeddb.blob")
}

/// The `large` database's entry of this kind and string key: the key and the raw value.
fn entry(kind: KeyType, name: &str) -> (IdbRecordKey, Vec<u8>) {
    let db = read::open(leveldb_dir(), false, DbOptions::default()).unwrap();
    for e in db.iter() {
        let (k, v) = e.unwrap();
        let key = IdbRecordKey::decode(&k).unwrap();
        if let IdbRecordKey::Data {
            kind: k,
            database_id: 1,
            key: IdbKey::String(n),
            ..
        } = &key
            && *k == kind
            && String::from_utf16(n).unwrap() == name
        {
            return (key, v);
        }
    }
    panic!("no {kind:?} {name}")
}

fn record(name: &str) -> Vec<u8> {
    let (_, value) = entry(KeyType::ObjectStoreData, name);
    split_record_value(&value).unwrap().1.to_vec()
}

/// live.html's `randomText(seed, n)`: xorshift32 numbers modulo 64, as characters.
fn random_text(seed: u32, n: usize) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            alphabet[(x % 64) as usize] as char
        })
        .collect()
}

/// What live.html's `largeValues()` stored.
fn compressed() -> Value {
    let numbers: Vec<u32> = (0..2000).map(|i| i % 100).collect();
    json!({"text": "leveltable ".repeat(8000), "numbers": numbers})
}

fn compressed_in_blob() -> String {
    let block = |seed| random_text(seed, 30000) + &"x".repeat(35520);
    block(1) + &block(2)
}

#[test]
fn a_value_chromium_compressed_decodes_to_what_the_page_stored() {
    let bytes = record("compressed");
    let Wrapping::Snappy(snappy) = v8::unwrap_idb_value(&bytes).unwrap() else {
        panic!("not compressed: {:02x?}", &bytes[..8]);
    };
    // Well compressed: about 90 KB serialized.
    assert!(snappy.len() < 20_000, "{}", snappy.len());
    let value = v8::deserialize(&bytes).unwrap();
    assert_eq!(common::norm(&value), common::norm(&compressed()));
}

#[test]
fn a_value_too_large_even_compressed_is_a_reference_to_its_blob_file() {
    let bytes = record("compressed_in_blob");
    assert_eq!(
        v8::unwrap_idb_value(&bytes).unwrap(),
        Wrapping::InBlob {
            size: 66879,
            index: 0
        }
    );
    assert_eq!(
        v8::deserialize(&bytes).unwrap(),
        json!({"type": "wrapped_in_blob", "size": 66879, "index": 0})
    );
    // The record's blob entry: blob 0 is blob number 2, of Blink's wrapper type.
    let (key, value) = entry(KeyType::BlobEntry, "compressed_in_blob");
    assert_eq!(
        value_json(&key, &value).unwrap(),
        json!([{"kind": "blob", "blob_number": 2,
            "mime_type": "application/vnd.blink-idb-value-wrapper", "size": 66879}])
    );
    // Blob number 2 of database 1: <blob dir>/1/00/2, holding the value compressed.
    let file = std::fs::read(blob_dir().join("1/00/2")).unwrap();
    assert_eq!(file.len(), 66879);
    assert!(matches!(
        v8::unwrap_idb_value(&file).unwrap(),
        Wrapping::Snappy(_)
    ));
    assert_eq!(v8::deserialize(&file).unwrap(), json!(compressed_in_blob()));
}

#[test]
fn the_directory_reader_decompresses_and_reports_the_blob() {
    let db = read::open(leveldb_dir(), false, DbOptions::default()).unwrap();
    let filter = Filter {
        database: Some("large".into()),
        store: None,
    };
    let records: Vec<Value> = read::indexeddb::records(&db, Reading::Live, &filter)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["key"], "compressed");
    assert_eq!(
        common::norm(&records[0]["value"]),
        common::norm(&compressed())
    );
    assert_eq!(records[1]["key"], "compressed_in_blob");
    assert_eq!(
        records[1]["value"],
        json!({"type": "wrapped_in_blob", "size": 66879, "index": 0})
    );
}
