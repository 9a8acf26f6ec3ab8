//! The keys of an IndexedDB LevelDB database: the [`KeyPrefix`] every key starts with, and
//! what each kind of key holds ([`IdbRecordKey`]).
//!
//! A key prefix is one byte of lengths — bits 7–5: the database id's length minus one, bits
//! 4–2: the object store id's, bits 1–0: the index id's — then the three ids, each
//! little-endian in that many bytes. The ids say what the key is ([`KeyType`]):
//!
//! | database id | object store id | index id | kind |
//! |---|---|---|---|
//! | 0 | any | any | global metadata: a type byte, then its fields |
//! | > 0 | 0 | any | database metadata: a type byte, then its fields |
//! | > 0 | > 0 | 1 | object store data: the record's encoded key |
//! | > 0 | > 0 | 2 | exists entry: the record's encoded key |
//! | > 0 | > 0 | 3 | blob entry: the record's encoded key |
//! | > 0 | > 0 | ≥ 30 | index data: index key, sequence number, primary key |

use std::cmp::Ordering;

use serde_json::{Value, json};

use crate::coding::{Reader, decode_int, encode_int};
use crate::error::{Error, Result};
use crate::idb_key::IdbKey;

/// The smallest id of a user index (`kMinimumIndexId`).
pub const MINIMUM_INDEX_ID: i64 = 30;
/// Index id of object store data keys.
pub const OBJECT_STORE_DATA_INDEX_ID: i64 = 1;
/// Index id of exists entries.
pub const EXISTS_ENTRY_INDEX_ID: i64 = 2;
/// Index id of blob entries.
pub const BLOB_ENTRY_INDEX_ID: i64 = 3;

/// What a key is, by its prefix's ids (Chromium's `KeyPrefix::Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// Database id 0.
    GlobalMetadata,
    /// Object store id 0.
    DatabaseMetadata,
    /// Index id 1: a record.
    ObjectStoreData,
    /// Index id 2: a record's version.
    ExistsEntry,
    /// Index id 3: a record's blobs.
    BlobEntry,
    /// Index id 30 and up: an index entry.
    IndexData,
    /// Index id 0 or 4 to 29 in a store's key space: no kind.
    Invalid,
}

/// The ids every key starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyPrefix {
    /// Database id (0 for global metadata).
    pub database_id: i64,
    /// Object store id (0 for database metadata).
    pub object_store_id: i64,
    /// Index id (1, 2, 3 or a user index's id).
    pub index_id: i64,
}

impl KeyPrefix {
    /// The prefix at the start of `key` and the bytes after it, or `None` if the lengths in
    /// the first byte run past the key's end (Chromium's `KeyPrefix::Decode`).
    pub fn decode_prefix(key: &[u8]) -> Option<(KeyPrefix, &[u8])> {
        let (&first, rest) = key.split_first()?;
        let db_len = usize::from((first >> 5) & 7) + 1;
        let os_len = usize::from((first >> 2) & 7) + 1;
        let index_len = usize::from(first & 3) + 1;
        if db_len + os_len + index_len > rest.len() {
            return None;
        }
        let (db, rest) = rest.split_at(db_len);
        let (os, rest) = rest.split_at(os_len);
        let (index, rest) = rest.split_at(index_len);
        Some((
            KeyPrefix {
                database_id: decode_int(db),
                object_store_id: decode_int(os),
                index_id: decode_int(index),
            },
            rest,
        ))
    }

    /// Reads the prefix at the reader's position.
    pub fn read(r: &mut Reader<'_>) -> Result<KeyPrefix> {
        let at = r.position();
        let (prefix, rest) = KeyPrefix::decode_prefix(r.rest()).ok_or(Error::Truncated {
            what: "IndexedDB key prefix",
            offset: at,
        })?;
        let used = r.remaining() - rest.len();
        r.take(used, "IndexedDB key prefix")?;
        Ok(prefix)
    }

    /// The prefix's encoding (Chromium's `KeyPrefix::Encode`). Ids must not be negative and
    /// the index id must fit four bytes, as in Chromium.
    pub fn encode(&self) -> Result<Vec<u8>> {
        if self.database_id < 0
            || self.object_store_id < 0
            || !(0..=i64::from(u32::MAX)).contains(&self.index_id)
        {
            return Err(Error::invalid(
                "IndexedDB key prefix",
                0,
                format!("ids {self:?} out of range"),
            ));
        }
        let mut db = Vec::new();
        let mut os = Vec::new();
        let mut index = Vec::new();
        encode_int(self.database_id as u64, &mut db);
        encode_int(self.object_store_id as u64, &mut os);
        encode_int(self.index_id as u64, &mut index);
        let first = (((db.len() - 1) as u8) << 5)
            | (((os.len() - 1) as u8) << 2)
            | ((index.len() - 1) as u8);
        let mut out = vec![first];
        out.extend_from_slice(&db);
        out.extend_from_slice(&os);
        out.extend_from_slice(&index);
        Ok(out)
    }

    /// What the key is.
    pub fn key_type(&self) -> KeyType {
        if self.database_id == 0 {
            KeyType::GlobalMetadata
        } else if self.object_store_id == 0 {
            KeyType::DatabaseMetadata
        } else {
            match self.index_id {
                OBJECT_STORE_DATA_INDEX_ID => KeyType::ObjectStoreData,
                EXISTS_ENTRY_INDEX_ID => KeyType::ExistsEntry,
                BLOB_ENTRY_INDEX_ID => KeyType::BlobEntry,
                i if i >= MINIMUM_INDEX_ID => KeyType::IndexData,
                _ => KeyType::Invalid,
            }
        }
    }

    /// Chromium's `KeyPrefix::Compare`: database id, then object store id, then index id.
    pub fn cmp_ids(&self, other: &KeyPrefix) -> Ordering {
        self.database_id
            .cmp(&other.database_id)
            .then(self.object_store_id.cmp(&other.object_store_id))
            .then(self.index_id.cmp(&other.index_id))
    }
}

/// Type bytes of global metadata keys.
pub mod global {
    /// Schema version of the backing store (value: int).
    pub const SCHEMA_VERSION: u8 = 0;
    /// Largest database id handed out (value: int).
    pub const MAX_DATABASE_ID: u8 = 1;
    /// Data format version (value: int).
    pub const DATA_VERSION: u8 = 2;
    /// Blobs to delete after a crash (value: blob journal).
    pub const RECOVERY_BLOB_JOURNAL: u8 = 3;
    /// Blobs to delete (value: blob journal).
    pub const ACTIVE_BLOB_JOURNAL: u8 = 4;
    /// Earliest time of the next tombstone sweep (value: int, microseconds).
    pub const EARLIEST_SWEEP_TIME: u8 = 5;
    /// Earliest time of the next compaction (value: int, microseconds).
    pub const EARLIEST_COMPACTION_TIME: u8 = 6;
    /// Keys of LevelDB scopes (Chromium's undo log).
    pub const SCOPES_PREFIX: u8 = 50;
    /// Free database ids.
    pub const DATABASE_FREE_LIST: u8 = 100;
    /// Database name → id (key: origin, name; value: int).
    pub const DATABASE_NAME: u8 = 201;
}

/// Type bytes of database metadata keys.
pub mod database {
    /// The origin (value: UTF-16BE string).
    pub const ORIGIN_NAME: u8 = 0;
    /// The database's name (value: UTF-16BE string).
    pub const DATABASE_NAME: u8 = 1;
    /// The legacy string version (value: UTF-16BE string).
    pub const USER_STRING_VERSION: u8 = 2;
    /// Largest object store id handed out (value: int).
    pub const MAX_OBJECT_STORE_ID: u8 = 3;
    /// The version `indexedDB.open` set (value: varint).
    pub const USER_VERSION: u8 = 4;
    /// Next blob number (value: varint).
    pub const BLOB_KEY_GENERATOR_CURRENT_NUMBER: u8 = 5;
    /// Object store metadata (key: store id varint, metadata type byte).
    pub const OBJECT_STORE_META_DATA: u8 = 50;
    /// Index metadata (key: store id, index id varints, metadata type byte).
    pub const INDEX_META_DATA: u8 = 100;
    /// Free object store ids (key: store id varint).
    pub const OBJECT_STORE_FREE_LIST: u8 = 150;
    /// Free index ids (key: store id, index id varints).
    pub const INDEX_FREE_LIST: u8 = 151;
    /// Object store name → id (key: name; value: int).
    pub const OBJECT_STORE_NAMES: u8 = 200;
    /// Index name → id (key: store id, name; value: int).
    pub const INDEX_NAMES: u8 = 201;
}

/// What a key of an IndexedDB database says, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum IdbRecordKey {
    /// Global metadata with no fields in the key (schema version, max database id, ...).
    Global {
        /// The type byte (see [`global`]).
        type_byte: u8,
    },
    /// A LevelDB scopes key (the rest of the key is Chromium-internal).
    Scopes {
        /// The bytes after the type byte.
        rest: Vec<u8>,
    },
    /// A free database id.
    DatabaseFreeList {
        /// The id.
        database_id: i64,
    },
    /// A database's name; the value is its id.
    DatabaseName {
        /// The origin (`https_example.com_0`).
        origin: String,
        /// The database's name.
        name: String,
    },
    /// Database metadata with no fields in the key (see [`database`]).
    Database {
        /// The database.
        database_id: i64,
        /// The type byte.
        type_byte: u8,
    },
    /// One property of an object store.
    ObjectStoreMeta {
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The property: 0 name, 1 key path, 2 auto increment, 3 evictable, 4 last version,
        /// 5 max index id, 6 has key path, 7 key generator current number.
        meta_type: u8,
    },
    /// One property of an index.
    IndexMeta {
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The index.
        index_id: i64,
        /// The property: 0 name, 1 unique, 2 key path, 3 multi entry.
        meta_type: u8,
    },
    /// A free object store id.
    ObjectStoreFreeList {
        /// The database.
        database_id: i64,
        /// The free id.
        object_store_id: i64,
    },
    /// A free index id.
    IndexFreeList {
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The free id.
        index_id: i64,
    },
    /// An object store's name; the value is its id.
    ObjectStoreName {
        /// The database.
        database_id: i64,
        /// The name.
        name: String,
    },
    /// An index's name; the value is its id.
    IndexName {
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The name.
        name: String,
    },
    /// A record (value: version varint, then the serialized value), an exists entry (value:
    /// version) or a blob entry (value: the record's blobs).
    Data {
        /// Which of the three.
        kind: KeyType,
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The record's key.
        key: IdbKey,
    },
    /// An index entry (value: version varint, then the encoded primary key).
    IndexData {
        /// The database.
        database_id: i64,
        /// The store.
        object_store_id: i64,
        /// The index.
        index_id: i64,
        /// The index key.
        key: IdbKey,
        /// The sequence number, if present.
        sequence: Option<i64>,
        /// The record's primary key, if present.
        primary_key: Option<IdbKey>,
    },
}

impl IdbRecordKey {
    /// Decodes a whole key. Bytes left after the fields the key's kind has are an error.
    pub fn decode(key: &[u8]) -> Result<IdbRecordKey> {
        let mut r = Reader::new(key);
        let prefix = KeyPrefix::read(&mut r)?;
        let out = match prefix.key_type() {
            KeyType::GlobalMetadata => {
                let type_byte = r.byte("global metadata type")?;
                match type_byte {
                    0..=6 => IdbRecordKey::Global { type_byte },
                    global::SCOPES_PREFIX => {
                        let rest = r.rest().to_vec();
                        r.take(rest.len(), "scopes key")?;
                        IdbRecordKey::Scopes { rest }
                    }
                    global::DATABASE_FREE_LIST => IdbRecordKey::DatabaseFreeList {
                        database_id: r.varint("database free list key")?,
                    },
                    global::DATABASE_NAME => IdbRecordKey::DatabaseName {
                        origin: r.string_with_length("database name key origin")?,
                        name: r.string_with_length("database name key name")?,
                    },
                    tag => {
                        return Err(Error::UnknownTag {
                            what: "global metadata type",
                            tag,
                            offset: r.position() - 1,
                        });
                    }
                }
            }
            KeyType::DatabaseMetadata => {
                let database_id = prefix.database_id;
                let type_byte = r.byte("database metadata type")?;
                match type_byte {
                    0..=5 => IdbRecordKey::Database {
                        database_id,
                        type_byte,
                    },
                    database::OBJECT_STORE_META_DATA => IdbRecordKey::ObjectStoreMeta {
                        database_id,
                        object_store_id: r.varint("object store metadata key")?,
                        meta_type: r.byte("object store metadata key")?,
                    },
                    database::INDEX_META_DATA => IdbRecordKey::IndexMeta {
                        database_id,
                        object_store_id: r.varint("index metadata key")?,
                        index_id: r.varint("index metadata key")?,
                        meta_type: r.byte("index metadata key")?,
                    },
                    database::OBJECT_STORE_FREE_LIST => IdbRecordKey::ObjectStoreFreeList {
                        database_id,
                        object_store_id: r.varint("object store free list key")?,
                    },
                    database::INDEX_FREE_LIST => IdbRecordKey::IndexFreeList {
                        database_id,
                        object_store_id: r.varint("index free list key")?,
                        index_id: r.varint("index free list key")?,
                    },
                    database::OBJECT_STORE_NAMES => IdbRecordKey::ObjectStoreName {
                        database_id,
                        name: r.string_with_length("object store name key")?,
                    },
                    database::INDEX_NAMES => IdbRecordKey::IndexName {
                        database_id,
                        object_store_id: r.varint("index name key")?,
                        name: r.string_with_length("index name key")?,
                    },
                    tag => {
                        return Err(Error::UnknownTag {
                            what: "database metadata type",
                            tag,
                            offset: r.position() - 1,
                        });
                    }
                }
            }
            kind @ (KeyType::ObjectStoreData | KeyType::ExistsEntry | KeyType::BlobEntry) => {
                IdbRecordKey::Data {
                    kind,
                    database_id: prefix.database_id,
                    object_store_id: prefix.object_store_id,
                    key: IdbKey::read(&mut r)?,
                }
            }
            KeyType::IndexData => {
                let key = IdbKey::read(&mut r)?;
                let sequence = if r.is_empty() {
                    None
                } else {
                    Some(r.varint("index data sequence number")?)
                };
                let primary_key = if r.is_empty() {
                    None
                } else {
                    Some(IdbKey::read(&mut r)?)
                };
                IdbRecordKey::IndexData {
                    database_id: prefix.database_id,
                    object_store_id: prefix.object_store_id,
                    index_id: prefix.index_id,
                    key,
                    sequence,
                    primary_key,
                }
            }
            KeyType::Invalid => {
                return Err(Error::invalid(
                    "IndexedDB key prefix",
                    0,
                    format!("index id {} names no kind of key", prefix.index_id),
                ));
            }
        };
        if !r.is_empty() {
            return Err(Error::invalid(
                "IndexedDB key",
                r.position(),
                format!("{} bytes after the key's fields", r.remaining()),
            ));
        }
        Ok(out)
    }

    /// The key as JSON: `{"kind": ..., ids..., fields...}`, record keys as
    /// [`IdbKey::to_json`].
    pub fn to_json(&self) -> Value {
        match self {
            IdbRecordKey::Global { type_byte } => json!({
                "kind": "global_metadata", "type": type_byte, "name": global_name(*type_byte),
            }),
            IdbRecordKey::Scopes { rest } => {
                json!({ "kind": "scopes", "rest": crate::json::binary(rest) })
            }
            IdbRecordKey::DatabaseFreeList { database_id } => {
                json!({ "kind": "database_free_list", "database_id": database_id })
            }
            IdbRecordKey::DatabaseName { origin, name } => {
                json!({ "kind": "database_name", "origin": origin, "name": name })
            }
            IdbRecordKey::Database {
                database_id,
                type_byte,
            } => json!({
                "kind": "database_metadata", "database_id": database_id, "type": type_byte,
                "name": database_name(*type_byte),
            }),
            IdbRecordKey::ObjectStoreMeta {
                database_id,
                object_store_id,
                meta_type,
            } => json!({
                "kind": "object_store_metadata", "database_id": database_id,
                "object_store_id": object_store_id, "type": meta_type,
                "name": object_store_meta_name(*meta_type),
            }),
            IdbRecordKey::IndexMeta {
                database_id,
                object_store_id,
                index_id,
                meta_type,
            } => json!({
                "kind": "index_metadata", "database_id": database_id,
                "object_store_id": object_store_id, "index_id": index_id, "type": meta_type,
                "name": index_meta_name(*meta_type),
            }),
            IdbRecordKey::ObjectStoreFreeList {
                database_id,
                object_store_id,
            } => json!({
                "kind": "object_store_free_list", "database_id": database_id,
                "object_store_id": object_store_id,
            }),
            IdbRecordKey::IndexFreeList {
                database_id,
                object_store_id,
                index_id,
            } => json!({
                "kind": "index_free_list", "database_id": database_id,
                "object_store_id": object_store_id, "index_id": index_id,
            }),
            IdbRecordKey::ObjectStoreName { database_id, name } => json!({
                "kind": "object_store_name", "database_id": database_id, "name": name,
            }),
            IdbRecordKey::IndexName {
                database_id,
                object_store_id,
                name,
            } => json!({
                "kind": "index_name", "database_id": database_id,
                "object_store_id": object_store_id, "name": name,
            }),
            IdbRecordKey::Data {
                kind,
                database_id,
                object_store_id,
                key,
            } => json!({
                "kind": match kind {
                    KeyType::ExistsEntry => "exists_entry",
                    KeyType::BlobEntry => "blob_entry",
                    _ => "object_store_data",
                },
                "database_id": database_id, "object_store_id": object_store_id,
                "key": key.to_json(),
            }),
            IdbRecordKey::IndexData {
                database_id,
                object_store_id,
                index_id,
                key,
                sequence,
                primary_key,
            } => json!({
                "kind": "index_data", "database_id": database_id,
                "object_store_id": object_store_id, "index_id": index_id,
                "key": key.to_json(), "sequence": sequence,
                "primary_key": primary_key.as_ref().map(IdbKey::to_json),
            }),
        }
    }
}

/// The name of a global metadata type byte.
pub fn global_name(type_byte: u8) -> &'static str {
    match type_byte {
        global::SCHEMA_VERSION => "schema_version",
        global::MAX_DATABASE_ID => "max_database_id",
        global::DATA_VERSION => "data_version",
        global::RECOVERY_BLOB_JOURNAL => "recovery_blob_journal",
        global::ACTIVE_BLOB_JOURNAL => "active_blob_journal",
        global::EARLIEST_SWEEP_TIME => "earliest_sweep_time",
        global::EARLIEST_COMPACTION_TIME => "earliest_compaction_time",
        _ => "unknown",
    }
}

/// The name of a database metadata type byte.
pub fn database_name(type_byte: u8) -> &'static str {
    match type_byte {
        database::ORIGIN_NAME => "origin_name",
        database::DATABASE_NAME => "database_name",
        database::USER_STRING_VERSION => "user_string_version",
        database::MAX_OBJECT_STORE_ID => "max_object_store_id",
        database::USER_VERSION => "user_version",
        database::BLOB_KEY_GENERATOR_CURRENT_NUMBER => "blob_key_generator_current_number",
        _ => "unknown",
    }
}

/// The name of an object store metadata type.
pub fn object_store_meta_name(meta_type: u8) -> &'static str {
    match meta_type {
        0 => "name",
        1 => "key_path",
        2 => "auto_increment",
        3 => "evictable",
        4 => "last_version",
        5 => "max_index_id",
        6 => "has_key_path",
        7 => "key_generator_current_number",
        _ => "unknown",
    }
}

/// The name of an index metadata type.
pub fn index_meta_name(meta_type: u8) -> &'static str {
    match meta_type {
        0 => "name",
        1 => "unique",
        2 => "key_path",
        3 => "multi_entry",
        _ => "unknown",
    }
}
