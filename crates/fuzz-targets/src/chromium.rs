//! Fuzz target body for the Chromium decoders: IndexedDB keys and record keys, metadata and
//! record values (V8 inside Blink's envelope), Local and Session Storage records, and the
//! `idb_cmp1` order over them.

use std::cmp::Ordering;

use leveltable_chromium::local_storage::LocalStorageRecord;
use leveltable_chromium::session_storage::SessionStorageRecord;
use leveltable_chromium::{IdbCmp1, IdbKey, IdbRecordKey, KeyPrefix, metadata, v8};
use leveltable_table::Comparator;

/// Splits `data` into a key and a value where its first byte says, decodes them every way:
/// never a panic; a key that decodes encodes back to bytes that decode to the same key; the
/// comparator is antisymmetric and reflexive on the pieces.
pub fn chromium(data: &[u8]) {
    let (split, rest) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) * rest.len() / 256, rest),
        None => (0, data),
    };
    let (key, value) = rest.split_at(split.min(rest.len()));
    let _ = v8::deserialize(value);
    let _ = v8::deserialize_v8(value);
    let _ = metadata::entry_json(key, value);
    let _ = LocalStorageRecord::decode(key, value);
    let _ = SessionStorageRecord::decode(key, value);
    let _ = KeyPrefix::decode_prefix(key);
    if let Ok(record) = IdbRecordKey::decode(key) {
        let _ = record.to_json();
    }
    if let Ok(idb_key) = IdbKey::decode(key) {
        let _ = idb_key.to_json();
        let again = IdbKey::decode(&idb_key.encoded()).expect("an encoded key decodes");
        assert_eq!(again.spec_cmp(&idb_key), Ordering::Equal);
    }
    let cmp = IdbCmp1;
    assert_eq!(
        cmp.compare(key, key),
        Ordering::Equal,
        "a key equals itself"
    );
    assert_eq!(
        cmp.compare(key, value),
        cmp.compare(value, key).reverse(),
        "idb_cmp1 is antisymmetric"
    );
}
