//! The values of an IndexedDB database's keys, and the schema they describe.
//!
//! [`value_json`] decodes the value of any key by the key's kind: ints, varints, booleans,
//! UTF-16BE strings, key paths, blob entries, record versions and the serialized values of
//! records. [`Metadata`] gathers the schema — databases by origin and name, with their
//! versions, object stores (name, key path, auto-increment, key generator) and indexes
//! (name, key path, unique, multi-entry) — from a database's entries in order.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::coding::{
    Reader, WINDOWS_TO_UNIX_EPOCH_US, decode_int, decode_varint, utf16be_to_string,
};
use crate::error::{Error, Result};
use crate::idb_key::IdbKey;
use crate::indexeddb::{IdbRecordKey, KeyType, database, global};
use crate::json;

/// An IndexedDB key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPath {
    /// No key path (keys are given with each record, or generated).
    None,
    /// One path (`"a.b"`).
    String(String),
    /// Several paths; the key is the array of their values.
    Array(Vec<String>),
}

impl KeyPath {
    /// Chromium's `DecodeIDBKeyPath`: typed (`00 00 <type>` then the path) or, in old
    /// databases, a bare UTF-16BE string.
    pub fn decode(bytes: &[u8]) -> Result<KeyPath> {
        if bytes.len() < 3 || bytes[0] != 0 || bytes[1] != 0 {
            return Ok(KeyPath::String(utf16be_to_string(bytes)));
        }
        let mut r = Reader::new(&bytes[3..]);
        let path = match bytes[2] {
            0 => KeyPath::None,
            1 => KeyPath::String(r.string_with_length("key path")?),
            2 => {
                let count = r.length("key path array")?;
                let mut paths = Vec::new();
                for _ in 0..count {
                    paths.push(r.string_with_length("key path array")?);
                }
                KeyPath::Array(paths)
            }
            tag => {
                return Err(Error::UnknownTag {
                    what: "key path type",
                    tag,
                    offset: 2,
                });
            }
        };
        Ok(path)
    }

    /// `null`, the path, or the array of paths.
    pub fn to_json(&self) -> Value {
        match self {
            KeyPath::None => Value::Null,
            KeyPath::String(s) => s.clone().into(),
            KeyPath::Array(a) => a.clone().into(),
        }
    }
}

/// An object store record's value: the record's version and the serialized value after it.
pub fn split_record_value(value: &[u8]) -> Result<(i64, &[u8])> {
    let mut r = Reader::new(value);
    let version = r.varint("record version")?;
    Ok((version, r.rest()))
}

/// One entry of an IndexedDB database as JSON: `{"key": <the decoded key>, "value": <the
/// decoded value>}` ([`IdbRecordKey::to_json`], [`value_json`]).
pub fn entry_json(key: &[u8], value: &[u8]) -> Result<Value> {
    let decoded = IdbRecordKey::decode(key)?;
    let value = value_json(&decoded, value)?;
    Ok(json!({ "key": decoded.to_json(), "value": value }))
}

/// The value of any key of an IndexedDB database as JSON, decoded by the key's kind.
/// Record values become `{"version": n, "value": <V8 value as JSON>}`.
pub fn value_json(key: &IdbRecordKey, value: &[u8]) -> Result<Value> {
    Ok(match key {
        IdbRecordKey::Global { type_byte } => match *type_byte {
            global::RECOVERY_BLOB_JOURNAL | global::ACTIVE_BLOB_JOURNAL => blob_journal(value)?,
            global::DATA_VERSION => {
                let v = decode_int(value);
                json!({ "v8": v >> 32, "blink": v & 0xffff_ffff })
            }
            _ => decode_int(value).into(),
        },
        IdbRecordKey::Scopes { .. } => json::binary(value),
        IdbRecordKey::DatabaseFreeList { .. }
        | IdbRecordKey::ObjectStoreFreeList { .. }
        | IdbRecordKey::IndexFreeList { .. } => json::binary(value),
        IdbRecordKey::DatabaseName { .. }
        | IdbRecordKey::ObjectStoreName { .. }
        | IdbRecordKey::IndexName { .. } => decode_int(value).into(),
        IdbRecordKey::Database { type_byte, .. } => match *type_byte {
            database::ORIGIN_NAME | database::DATABASE_NAME | database::USER_STRING_VERSION => {
                utf16be_to_string(value).into()
            }
            database::USER_VERSION | database::BLOB_KEY_GENERATOR_CURRENT_NUMBER => {
                varint_value(value)?.into()
            }
            _ => decode_int(value).into(),
        },
        IdbRecordKey::ObjectStoreMeta { meta_type, .. } => match meta_type {
            0 => utf16be_to_string(value).into(),
            1 => KeyPath::decode(value)?.to_json(),
            2 | 3 | 6 => boolean(value)?.into(),
            _ => decode_int(value).into(),
        },
        IdbRecordKey::IndexMeta { meta_type, .. } => match meta_type {
            0 => utf16be_to_string(value).into(),
            2 => KeyPath::decode(value)?.to_json(),
            1 | 3 => boolean(value)?.into(),
            _ => json::binary(value),
        },
        IdbRecordKey::Data { kind, .. } => match kind {
            KeyType::ObjectStoreData => {
                let (version, ssv) = split_record_value(value)?;
                let start = value.len() - ssv.len();
                let decoded = crate::v8::deserialize(ssv).map_err(|e| e.shifted(start))?;
                json!({ "version": version, "value": decoded })
            }
            KeyType::BlobEntry => blob_entry(value)?,
            // Chromium's design document says VarInt; Chromium writes an Int.
            _ => decode_int(value).into(),
        },
        IdbRecordKey::IndexData { .. } => {
            let mut r = Reader::new(value);
            let version = r.varint("index entry version")?;
            let primary = IdbKey::read(&mut r)?;
            json!({ "version": version, "primary_key": primary.to_json() })
        }
    })
}

fn varint_value(value: &[u8]) -> Result<i64> {
    match decode_varint(value) {
        Some((v, used)) if used == value.len() => Ok(v),
        _ => Err(Error::invalid("varint value", 0, "not one varint")),
    }
}

fn boolean(value: &[u8]) -> Result<bool> {
    match value {
        [b] => Ok(*b != 0),
        _ => Err(Error::invalid(
            "boolean value",
            0,
            format!("{} bytes", value.len()),
        )),
    }
}

fn blob_journal(value: &[u8]) -> Result<Value> {
    let mut r = Reader::new(value);
    let mut out = Vec::new();
    while !r.is_empty() {
        let database_id = r.varint("blob journal")?;
        let blob_number = r.varint("blob journal")?;
        out.push(json!({ "database_id": database_id, "blob_number": blob_number }));
    }
    Ok(out.into())
}

/// A blob entry's value: the record's blobs, files and file system handles, in order (a
/// serialized value's `{"type":"blob","index":i}` is the `i`th).
pub fn blob_entry(value: &[u8]) -> Result<Value> {
    let mut r = Reader::new(value);
    let mut out = Vec::new();
    while !r.is_empty() {
        let at = r.position();
        let kind = r.byte("blob entry")?;
        let entry = match kind {
            0 | 1 => {
                let blob_number = r.varint("blob entry blob number")?;
                let mime_type = r.string_with_length("blob entry type")?;
                let size = r.varint("blob entry size")?;
                if kind == 0 {
                    json!({ "kind": "blob", "blob_number": blob_number, "mime_type": mime_type,
                        "size": size })
                } else {
                    let name = r.string_with_length("blob entry file name")?;
                    let modified = r.varint("blob entry modification time")?;
                    let unix_ms = modified.saturating_sub(WINDOWS_TO_UNIX_EPOCH_US) / 1000;
                    json!({ "kind": "file", "blob_number": blob_number, "mime_type": mime_type,
                        "size": size, "name": name, "last_modified_ms": unix_ms })
                }
            }
            2 => {
                let len = r.length("file system handle token")?;
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                let token = r.take(len, "file system handle token")?;
                json!({ "kind": "file_system_access_handle", "token": json::binary(token) })
            }
            tag => {
                return Err(Error::UnknownTag {
                    what: "blob entry kind",
                    tag,
                    offset: at,
                });
            }
        };
        out.push(entry);
    }
    Ok(out.into())
}

/// An index of an object store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexInfo {
    /// The index's name.
    pub name: String,
    /// Its key path.
    pub key_path: Option<KeyPath>,
    /// Whether its keys are unique.
    pub unique: bool,
    /// Whether an array value adds one entry per item.
    pub multi_entry: bool,
}

/// An object store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectStoreInfo {
    /// The store's name.
    pub name: String,
    /// Its key path, if records carry their keys.
    pub key_path: Option<KeyPath>,
    /// Whether keys are generated.
    pub auto_increment: bool,
    /// The key generator's next key.
    pub key_generator_current_number: Option<i64>,
    /// Indexes by id.
    pub indexes: BTreeMap<i64, IndexInfo>,
}

/// A database.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseInfo {
    /// The origin it belongs to (Chromium's storage key, `https_example.com_0@1`).
    pub origin: String,
    /// Its name.
    pub name: String,
    /// The version `indexedDB.open` set.
    pub version: Option<i64>,
    /// Object stores by id.
    pub object_stores: BTreeMap<i64, ObjectStoreInfo>,
}

/// The schema of every database in an IndexedDB LevelDB database.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// Databases by id.
    pub databases: BTreeMap<i64, DatabaseInfo>,
}

impl Metadata {
    /// Gathers the schema from `(key, value)` pairs; keys that are not metadata are skipped,
    /// metadata that does not decode is an error.
    pub fn from_entries<K, V>(entries: impl IntoIterator<Item = (K, V)>) -> Result<Metadata>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut m = Metadata::default();
        for (k, v) in entries {
            m.add(k.as_ref(), v.as_ref())?;
        }
        Ok(m)
    }

    /// Takes in one entry.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let Some((prefix, _)) = crate::indexeddb::KeyPrefix::decode_prefix(key) else {
            return Ok(());
        };
        if !matches!(
            prefix.key_type(),
            KeyType::GlobalMetadata | KeyType::DatabaseMetadata
        ) {
            return Ok(());
        }
        match IdbRecordKey::decode(key)? {
            IdbRecordKey::DatabaseName { origin, name } => {
                let db = self.databases.entry(decode_int(value)).or_default();
                db.origin = origin;
                db.name = name;
            }
            IdbRecordKey::Database {
                database_id,
                type_byte: database::USER_VERSION,
            } => {
                self.databases.entry(database_id).or_default().version = Some(varint_value(value)?);
            }
            IdbRecordKey::ObjectStoreMeta {
                database_id,
                object_store_id,
                meta_type,
            } => {
                let store = self
                    .databases
                    .entry(database_id)
                    .or_default()
                    .object_stores
                    .entry(object_store_id)
                    .or_default();
                match meta_type {
                    0 => store.name = utf16be_to_string(value),
                    1 => store.key_path = Some(KeyPath::decode(value)?),
                    2 => store.auto_increment = boolean(value)?,
                    7 => store.key_generator_current_number = Some(decode_int(value)),
                    _ => {}
                }
            }
            IdbRecordKey::IndexMeta {
                database_id,
                object_store_id,
                index_id,
                meta_type,
            } => {
                let index = self
                    .databases
                    .entry(database_id)
                    .or_default()
                    .object_stores
                    .entry(object_store_id)
                    .or_default()
                    .indexes
                    .entry(index_id)
                    .or_default();
                match meta_type {
                    0 => index.name = utf16be_to_string(value),
                    1 => index.unique = boolean(value)?,
                    2 => index.key_path = Some(KeyPath::decode(value)?),
                    3 => index.multi_entry = boolean(value)?,
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The database `name` of `origin`'s storage key (`origin` is matched as a prefix, so
    /// `http_127.0.0.1_8765` finds `http_127.0.0.1_8765@1`), with its id.
    pub fn database(&self, origin: &str, name: &str) -> Option<(i64, &DatabaseInfo)> {
        self.databases
            .iter()
            .find(|(_, d)| d.name == name && d.origin.starts_with(origin))
            .map(|(id, d)| (*id, d))
    }

    /// The schema as JSON.
    pub fn to_json(&self) -> Value {
        let dbs: Vec<Value> = self
            .databases
            .iter()
            .map(|(id, d)| {
                let stores: Vec<Value> = d
                    .object_stores
                    .iter()
                    .map(|(sid, s)| {
                        let indexes: Vec<Value> = s
                            .indexes
                            .iter()
                            .map(|(iid, i)| {
                                json!({ "id": iid, "name": i.name,
                                    "key_path": i.key_path.as_ref().map(KeyPath::to_json),
                                    "unique": i.unique, "multi_entry": i.multi_entry })
                            })
                            .collect();
                        json!({ "id": sid, "name": s.name,
                            "key_path": s.key_path.as_ref().map(KeyPath::to_json),
                            "auto_increment": s.auto_increment,
                            "key_generator_current_number": s.key_generator_current_number,
                            "indexes": indexes })
                    })
                    .collect();
                json!({ "id": id, "origin": d.origin, "name": d.name, "version": d.version,
                    "object_stores": stores })
            })
            .collect();
        json!({ "databases": dbs })
    }
}
