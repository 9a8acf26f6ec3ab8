//! Every decoder on truncated, bit-flipped and random inputs: errors, never panics. The inputs
//! start from the real entries in the golden data, so the damage lands in every kind of field.

use crate::common;

use std::sync::Arc;

use leveltable_chromium::local_storage::LocalStorageRecord;
use leveltable_chromium::metadata::{KeyPath, blob_entry, entry_json};
use leveltable_chromium::session_storage::SessionStorageRecord;
use leveltable_chromium::v8::Envelope;
use leveltable_chromium::{IdbCmp1, IdbKey, IdbRecordKey};
use leveltable_db::{Db, DbOptions};
use leveltable_table::Comparator;

fn pairs(dir: std::path::PathBuf, idb: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let options = if idb {
        DbOptions::default().comparator(Arc::new(IdbCmp1))
    } else {
        DbOptions::default()
    };
    let db = Db::open(dir, options).unwrap();
    db.iter().map(|e| e.unwrap()).collect()
}

/// Prefixes, and copies with one byte changed, of `bytes` (every position for short inputs,
/// a sample of positions for long ones).
fn damaged(bytes: &[u8]) -> Vec<Vec<u8>> {
    let step = (bytes.len() / 64).max(1);
    let mut out = Vec::new();
    for i in (0..bytes.len()).step_by(step) {
        out.push(bytes[..i].to_vec());
        for flip in [0x01, 0x80, 0xff] {
            let mut b = bytes.to_vec();
            b[i] ^= flip;
            out.push(b);
        }
    }
    out
}

#[test]
fn damaged_indexeddb_entries_never_panic() {
    let entries = pairs(common::indexeddb_dir(), true);
    // Every 7th entry keeps the test fast while covering every kind of key.
    for (k, v) in entries.iter().step_by(7) {
        entry_json(k, v).unwrap();
        for bad_key in damaged(k) {
            let _ = IdbRecordKey::decode(&bad_key);
            let _ = entry_json(&bad_key, v);
            let _ = IdbCmp1.compare(&bad_key, k);
        }
        for bad_value in damaged(v) {
            let _ = entry_json(k, &bad_value);
            let _ = KeyPath::decode(&bad_value);
            let _ = blob_entry(&bad_value);
            let _ = Envelope::parse(&bad_value);
        }
    }
}

#[test]
fn damaged_web_storage_entries_never_panic() {
    for (k, v) in pairs(common::golden().join("local_storage/leveldb"), false) {
        LocalStorageRecord::decode(&k, &v).unwrap();
        for bad in damaged(&k) {
            let _ = LocalStorageRecord::decode(&bad, &v);
        }
        for bad in damaged(&v) {
            let _ = LocalStorageRecord::decode(&k, &bad);
        }
    }
    for (k, v) in pairs(common::golden().join("session_storage"), false) {
        SessionStorageRecord::decode(&k, &v).unwrap();
        for bad in damaged(&k) {
            let _ = SessionStorageRecord::decode(&bad, &v);
        }
        for bad in damaged(&v) {
            let _ = SessionStorageRecord::decode(&k, &bad);
        }
    }
}

#[test]
fn random_bytes_never_panic_any_decoder() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 32) as usize;
        let a: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let b: Vec<u8> = (0..(next() % 32) as usize).map(|_| next() as u8).collect();
        let _ = IdbKey::decode(&a);
        let _ = IdbRecordKey::decode(&a);
        let _ = entry_json(&a, &b);
        let _ = KeyPath::decode(&a);
        let _ = blob_entry(&a);
        let _ = Envelope::parse(&a);
        let _ = LocalStorageRecord::decode(&a, &b);
        let _ = SessionStorageRecord::decode(&a, &b);
        assert_eq!(IdbCmp1.compare(&a, &b), IdbCmp1.compare(&b, &a).reverse());
    }
}
