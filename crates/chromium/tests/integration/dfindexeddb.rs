//! dfindexeddb (Google's forensic IndexedDB parser, PyPI `dfindexeddb`) as the oracle for
//! the records and keys of Chromium's IndexedDB directories: every record it finds (key,
//! sequence number, put or deletion, newest or older) is one this crate's salvage finds,
//! and every key it decodes (key class, database, object store and index ids, the names,
//! metadata types and ids in metadata keys, IndexedDB keys) decodes here to the same. Where they differ, the difference is the one
//! `README.md` ("Differences from dfindexeddb") explains. Values are not compared:
//! dfindexeddb does not decode the V8 format version 16 that Chromium 156 writes.
//!
//! Runs `tests/dfindexeddb_keys.py` with the Python that `LEVELTABLE_DFINDEXEDDB_PYTHON`
//! names (one with dfindexeddb installed). Without it the tests print one line and pass,
//! unless `LEVELTABLE_REQUIRE_SERVERS=1`: then they fail.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use leveltable_chromium::{IdbKey, IdbRecordKey, KeyPrefix, KeyType, read};
use leveltable_db::dbformat::ValueType;
use leveltable_db::{DbOptions, VersionStatus};
use serde_json::{Value, json};

/// The Python to run dfindexeddb with, or `None` (after printing why) to skip.
fn python() -> Option<PathBuf> {
    match std::env::var_os("LEVELTABLE_DFINDEXEDDB_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var("LEVELTABLE_REQUIRE_SERVERS").as_deref() == Ok("1") => {
            panic!(
                "LEVELTABLE_DFINDEXEDDB_PYTHON must name a Python with dfindexeddb installed (LEVELTABLE_REQUIRE_SERVERS=1)"
            )
        }
        None => {
            println!(
                "skipped: set LEVELTABLE_DFINDEXEDDB_PYTHON to a Python with dfindexeddb installed"
            );
            None
        }
    }
}

/// dfindexeddb's records of `dir`, or its error if it stopped.
fn dfindexeddb(python: &Path, dir: &Path) -> Result<Vec<Value>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dfindexeddb_keys.py");
    let out = Command::new(python).arg(script).arg(dir).output().unwrap();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(last.trim().to_string());
    }
    Ok(String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An IndexedDB key as the script writes dfindexeddb's.
fn key_json(k: &IdbKey) -> Value {
    let number = |x: f64| json!(format!("{:016x}", x.to_bits()));
    match k {
        IdbKey::Number(x) => json!({ "number": number(*x) }),
        IdbKey::Date(ms) => json!({ "date": number(*ms) }),
        IdbKey::String(units) => json!({ "string": units }),
        IdbKey::Binary(b) => json!({ "binary": hex(b) }),
        IdbKey::Array(items) => json!({ "array": items.iter().map(key_json).collect::<Vec<_>>() }),
        IdbKey::Min => json!({ "min": null }),
        IdbKey::Max => json!({ "max": null }),
    }
}

/// A key as the script writes dfindexeddb's: its class, prefix ids and IndexedDB key.
fn ours(key: &[u8]) -> Value {
    let (p, _) = KeyPrefix::decode_prefix(key).unwrap();
    let decoded = IdbRecordKey::decode(key).unwrap();
    let class = match &decoded {
        IdbRecordKey::Global { type_byte } => [
            "SchemaVersionKey",
            "MaxDatabaseIdKey",
            "DataVersionKey",
            "RecoveryBlobJournalKey",
            "ActiveBlobJournalKey",
            "EarliestSweepKey",
            "EarliestCompactionTimeKey",
        ][usize::from(*type_byte)],
        IdbRecordKey::Scopes { .. } => "ScopesPrefixKey",
        IdbRecordKey::DatabaseFreeList { .. } => "DatabaseFreeListKey",
        IdbRecordKey::DatabaseName { .. } => "DatabaseNameKey",
        IdbRecordKey::Database { .. } => "DatabaseMetaDataKey",
        IdbRecordKey::ObjectStoreMeta { .. } => "ObjectStoreMetaDataKey",
        IdbRecordKey::IndexMeta { .. } => "IndexMetaDataKey",
        IdbRecordKey::ObjectStoreFreeList { .. } => "ObjectStoreFreeListKey",
        IdbRecordKey::IndexFreeList { .. } => "IndexFreeListKey",
        IdbRecordKey::ObjectStoreName { .. } => "ObjectStoreNamesKey",
        IdbRecordKey::IndexName { .. } => "IndexNamesKey",
        IdbRecordKey::Data { kind, .. } => match kind {
            KeyType::ObjectStoreData => "ObjectStoreDataKey",
            KeyType::ExistsEntry => "ExistsEntryKey",
            KeyType::BlobEntry => "BlobEntryKey",
            other => panic!("{other:?}"),
        },
        IdbRecordKey::IndexData { .. } => "IndexDataKey",
    };
    let mut out = json!({ "class": class,
        "prefix": [p.database_id, p.object_store_id, p.index_id] });
    let fields = match &decoded {
        IdbRecordKey::DatabaseName { origin, name } => json!({ "origin": origin, "name": name }),
        IdbRecordKey::ObjectStoreName { name, .. } | IdbRecordKey::IndexName { name, .. } => {
            json!({ "name": name })
        }
        IdbRecordKey::Database { type_byte, .. } => json!({ "type": type_byte }),
        IdbRecordKey::ObjectStoreMeta {
            object_store_id,
            meta_type,
            ..
        } => json!({ "object_store_id": object_store_id, "type": meta_type }),
        IdbRecordKey::IndexMeta {
            object_store_id,
            index_id,
            meta_type,
            ..
        } => json!({ "object_store_id": object_store_id, "index_id": index_id, "type": meta_type }),
        IdbRecordKey::DatabaseFreeList { database_id } => json!({ "database_id": database_id }),
        IdbRecordKey::ObjectStoreFreeList {
            object_store_id, ..
        }
        | IdbRecordKey::IndexFreeList {
            object_store_id, ..
        } => json!({ "object_store_id": object_store_id }),
        _ => Value::Null,
    };
    if !fields.is_null() {
        out["fields"] = fields;
    }
    match &decoded {
        IdbRecordKey::Data { key, .. } => out["key"] = key_json(key),
        IdbRecordKey::IndexData {
            key,
            sequence,
            primary_key,
            ..
        } => {
            out["key"] = key_json(key);
            out["sequence_number"] = json!(sequence);
            out["primary_key"] = primary_key.as_ref().map_or(Value::Null, key_json);
        }
        _ => {}
    }
    out
}

/// Whether a decoded key holds a string that is not valid UTF-16 (an unpaired surrogate),
/// or a date outside the years 1 to 9999.
fn has(key: &IdbKey, unpaired: bool) -> bool {
    match key {
        IdbKey::String(units) if unpaired => {
            char::decode_utf16(units.iter().copied()).any(|c| c.is_err())
        }
        IdbKey::Date(ms) if !unpaired => {
            !(-62_135_596_800_000.0..253_402_300_800_000.0).contains(ms)
        }
        IdbKey::Array(items) => items.iter().any(|k| has(k, unpaired)),
        _ => false,
    }
}

fn key_has(key: &[u8], unpaired: bool) -> bool {
    match IdbRecordKey::decode(key).unwrap() {
        IdbRecordKey::Data { key, .. } => has(&key, unpaired),
        IdbRecordKey::IndexData {
            key, primary_key, ..
        } => has(&key, unpaired) || primary_key.is_some_and(|k| has(&k, unpaired)),
        IdbRecordKey::DatabaseName { .. } | IdbRecordKey::ObjectStoreName { .. } => unpaired,
        _ => false,
    }
}

/// What one comparison found beyond agreement.
#[derive(Debug, Default, PartialEq, Eq)]
struct Differences {
    /// dfindexeddb could not decode the key: it holds an unpaired surrogate.
    unpaired_surrogate: usize,
    /// dfindexeddb could not decode the key: a date outside Python's years 1 to 9999.
    date_out_of_range: usize,
}

/// Compares dfindexeddb's records of `dir` with this crate's salvage of it.
fn compare(theirs: &[Value], dir: &Path) -> Differences {
    let db = read::open(dir, true, DbOptions::default()).unwrap();
    // (key, sequence) -> (put?, newest?)
    let mut ours_by_version = BTreeMap::new();
    for v in db.versions() {
        let v = v.unwrap();
        let put = v.value_type == ValueType::Value;
        let newest = v.status != VersionStatus::Shadowed;
        let previous =
            ours_by_version.insert((hex(&v.user_key), v.sequence), (put, newest, v.user_key));
        assert!(previous.is_none(), "one version per key and sequence");
    }
    let mut seen = BTreeSet::new();
    let mut differences = Differences::default();
    for r in theirs {
        let id = (
            r["key_hex"].as_str().unwrap().to_string(),
            r["sequence"].as_u64().unwrap(),
        );
        let (put, newest, key) = ours_by_version
            .get(&id)
            .unwrap_or_else(|| panic!("dfindexeddb's record is not ours: {r}"));
        assert_eq!(
            (r["type"] == 1, r["recovered"] == false),
            (*put, *newest),
            "{r}"
        );
        seen.insert(id);
        match r["error"].as_str() {
            None => {
                let mut theirs = r.clone();
                for field in ["file", "sequence", "type", "recovered", "key_hex"] {
                    theirs.as_object_mut().unwrap().remove(field);
                }
                assert_eq!(common::norm(&theirs), common::norm(&ours(key)), "{r}");
            }
            Some(e) if e.starts_with("UnicodeDecodeError: 'utf-16-be' codec can't decode") => {
                assert!(key_has(key, true), "{r}");
                differences.unpaired_surrogate += 1;
            }
            Some(e) if e.starts_with("ValueError: year ") && e.ends_with(" is out of range") => {
                assert!(key_has(key, false), "{r}");
                differences.date_out_of_range += 1;
            }
            Some(e) => panic!("dfindexeddb failed on {r}: {e}"),
        }
    }
    let missing: Vec<_> = ours_by_version
        .keys()
        .filter(|id| !seen.contains(*id))
        .collect();
    assert!(missing.is_empty(), "ours, not dfindexeddb's: {missing:?}");
    differences
}

#[test]
fn the_golden_records_and_keys_are_dfindexeddbs() {
    let Some(python) = python() else { return };
    let dir = common::indexeddb_dir();
    let theirs = dfindexeddb(&python, &dir).unwrap();
    assert_eq!(theirs.len(), 19758);
    // Every record agrees but 48 whose keys dfindexeddb cannot decode: 40 with random string
    // keys holding unpaired surrogates (records and exists entries of 7 of the 260 stores of
    // `many` and 13 keys, 2 of them with older versions, of its `random` store), and the
    // records and exists entries of the dates -8.64e15 and 8.64e15 in the stores `dates` and
    // `mixed`.
    assert_eq!(
        compare(&theirs, &dir),
        Differences {
            unpaired_surrogate: 40,
            date_out_of_range: 8
        }
    );
}

#[test]
fn the_compressed_values_records_are_dfindexeddbs() {
    let Some(python) = python() else { return };
    let dir = common::live().join("IndexedDB/http_127.0.0.1_8766.indexeddb.leveldb");
    let theirs = dfindexeddb(&python, &dir).unwrap();
    assert_eq!(compare(&theirs, &dir), Differences::default());
}

#[test]
fn the_copies_taken_while_chromium_wrote() {
    let Some(python) = python() else { return };
    let dir = common::live().join("copies/most");
    let theirs = dfindexeddb(&python, &dir).unwrap();
    assert_eq!(compare(&theirs, &dir), Differences::default());
    // A log whose last record is cut short stops dfindexeddb: it reads none of the copy's
    // records. (This crate's salvage reads every whole one: see tests/live_copy.rs.)
    let dir = common::live().join("copies/torn_log");
    assert_eq!(
        dfindexeddb(&python, &dir).unwrap_err(),
        "dfindexeddb.errors.DecoderError: Read 1650 bytes, but wanted 6404 at offset 6542"
    );
}
