//! `Default/IndexedDB/<origin>.indexeddb.leveldb`: the databases, object stores and indexes
//! ([`summary`]), and one object per record ([`records`]),
//! `{"origin", "database", "store", "key", "value"}`.

use std::collections::BTreeMap;

use leveltable_db::Db;
use serde_json::{Map, Value, json};

use super::{Reading, StoredEntry, finish, stored};
use crate::indexeddb::{IdbRecordKey, KeyPrefix, KeyType};
use crate::metadata::{KeyPath, Metadata, value_json};

/// Which records [`records`] reads: those of the database and object store of these names
/// (`None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The database's name.
    pub database: Option<String>,
    /// The object store's name.
    pub store: Option<String>,
}

/// The names of databases and object stores: from the live view, and with
/// [`Reading::Versions`], from older versions of the metadata for ids the live view no
/// longer names (deleted databases and stores). Metadata that does not decode is left out:
/// its records then have `null` names.
struct Names {
    live: Metadata,
    older: Metadata,
}

impl Names {
    fn read(db: &Db, reading: Reading) -> leveltable_db::Result<Names> {
        let mut live = Metadata::default();
        for e in db.iter() {
            let (k, v) = e?;
            if is_metadata(&k) {
                let _ = live.add(&k, &v);
            }
        }
        let mut older = Metadata::default();
        if reading == Reading::Versions {
            for e in db.versions() {
                let v = e?;
                if v.value_type == leveltable_db::dbformat::ValueType::Value
                    && is_metadata(&v.user_key)
                {
                    let _ = older.add(&v.user_key, &v.value);
                }
            }
        }
        Ok(Names { live, older })
    }

    /// Origin, database name and store name of a record's prefix.
    fn of(&self, p: &KeyPrefix) -> (Option<String>, Option<String>, Option<String>) {
        let find = |m: &Metadata| {
            let d = m.databases.get(&p.database_id)?;
            let named = |s: &String| (!s.is_empty()).then(|| s.clone());
            Some((
                named(&d.origin),
                named(&d.name),
                d.object_stores
                    .get(&p.object_store_id)
                    .and_then(|s| named(&s.name)),
            ))
        };
        let (lo, ld, ls) = find(&self.live).unwrap_or_default();
        let (oo, od, os) = find(&self.older).unwrap_or_default();
        (lo.or(oo), ld.or(od), ls.or(os))
    }
}

fn is_metadata(key: &[u8]) -> bool {
    KeyPrefix::decode_prefix(key).is_some_and(|(p, _)| {
        matches!(
            p.key_type(),
            KeyType::GlobalMetadata | KeyType::DatabaseMetadata
        )
    })
}

/// Every record of the IndexedDB database `db` that `filter` selects, in `idb_cmp1` order
/// (by database id, store id, then key): `key` is the IndexedDB key as JSON
/// ([`IdbKey::to_json`](crate::IdbKey::to_json)), `value` the V8 value as JSON
/// ([`v8`](crate::v8)), `null` for a deletion.
///
/// # Errors
/// Reading the metadata fails.
pub fn records(
    db: &Db,
    reading: Reading,
    filter: &Filter,
) -> leveltable_db::Result<impl Iterator<Item = leveltable_db::Result<Value>> + Send + use<>> {
    let names = Names::read(db, reading)?;
    let filter = filter.clone();
    Ok(stored(db, reading).filter_map(move |e| match e {
        Ok(e) => record(&e, &names, &filter).map(Ok),
        Err(e) => Some(Err(e)),
    }))
}

fn record(e: &StoredEntry, names: &Names, filter: &Filter) -> Option<Value> {
    let (prefix, _) = KeyPrefix::decode_prefix(&e.key)?;
    if prefix.key_type() != KeyType::ObjectStoreData {
        return None;
    }
    let (origin, database, store) = names.of(&prefix);
    let selects = |wanted: &Option<String>, name: &Option<String>| {
        wanted.as_ref().is_none_or(|w| name.as_ref() == Some(w))
    };
    if !selects(&filter.database, &database) || !selects(&filter.store, &store) {
        return None;
    }
    let mut o = Map::new();
    o.insert("origin".into(), origin.into());
    o.insert("database".into(), database.into());
    o.insert("store".into(), store.into());
    let decoded = IdbRecordKey::decode(&e.key).and_then(|k| {
        let IdbRecordKey::Data { key, .. } = &k else {
            return Ok((Value::Null, Value::Null));
        };
        let value = if e.deletion {
            Value::Null
        } else {
            value_json(&k, &e.value)?["value"].take()
        };
        Ok((key.to_json(), value))
    });
    let error = match decoded {
        Ok((key, value)) => {
            o.insert("key".into(), key);
            o.insert("value".into(), value);
            None
        }
        Err(err) => {
            // The key alone may still decode.
            let key = match IdbRecordKey::decode(&e.key) {
                Ok(IdbRecordKey::Data { key, .. }) => key.to_json(),
                _ => Value::Null,
            };
            o.insert("key".into(), key);
            o.insert("value".into(), Value::Null);
            Some(err.to_string())
        }
    };
    Some(finish(o, e, error))
}

/// One object per database of the IndexedDB database `db` (live view): `origin`,
/// `database`, `id`, `version` and its `object_stores`, each with `name`, `id`, `key_path`,
/// `auto_increment`, `records` (how many) and `indexes`, each with `name`, `id`,
/// `key_path`, `unique`, `multi_entry` and `entries` (how many). Stores and indexes that
/// hold entries but have no metadata are listed with a `null` name.
///
/// # Errors
/// Reading fails.
pub fn summary(db: &Db) -> leveltable_db::Result<Vec<Value>> {
    let mut metadata = Metadata::default();
    let mut records: BTreeMap<(i64, i64), u64> = BTreeMap::new();
    let mut entries: BTreeMap<(i64, i64, i64), u64> = BTreeMap::new();
    for e in db.iter() {
        let (k, v) = e?;
        let Some((p, _)) = KeyPrefix::decode_prefix(&k) else {
            continue;
        };
        match p.key_type() {
            KeyType::GlobalMetadata | KeyType::DatabaseMetadata => {
                let _ = metadata.add(&k, &v);
            }
            KeyType::ObjectStoreData => {
                *records
                    .entry((p.database_id, p.object_store_id))
                    .or_default() += 1;
            }
            KeyType::IndexData => {
                *entries
                    .entry((p.database_id, p.object_store_id, p.index_id))
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    // Ids that hold entries but have no metadata.
    for &(d, s) in records.keys() {
        metadata
            .databases
            .entry(d)
            .or_default()
            .object_stores
            .entry(s)
            .or_default();
    }
    for &(d, s, i) in entries.keys() {
        metadata
            .databases
            .entry(d)
            .or_default()
            .object_stores
            .entry(s)
            .or_default()
            .indexes
            .entry(i)
            .or_default();
    }
    let named = |s: &String| -> Value {
        if s.is_empty() {
            Value::Null
        } else {
            s.clone().into()
        }
    };
    let key_path = |k: &Option<KeyPath>| k.as_ref().map_or(Value::Null, KeyPath::to_json);
    Ok(metadata
        .databases
        .iter()
        .map(|(&d, db)| {
            let stores: Vec<Value> = db
                .object_stores
                .iter()
                .map(|(&s, store)| {
                    let indexes: Vec<Value> = store
                        .indexes
                        .iter()
                        .map(|(&i, index)| {
                            json!({ "name": named(&index.name), "id": i,
                                "key_path": key_path(&index.key_path),
                                "unique": index.unique, "multi_entry": index.multi_entry,
                                "entries": entries.get(&(d, s, i)).copied().unwrap_or(0) })
                        })
                        .collect();
                    json!({ "name": named(&store.name), "id": s,
                        "key_path": key_path(&store.key_path),
                        "auto_increment": store.auto_increment,
                        "records": records.get(&(d, s)).copied().unwrap_or(0),
                        "indexes": indexes })
                })
                .collect();
            json!({ "origin": named(&db.origin), "database": named(&db.name), "id": d,
                "version": db.version, "object_stores": stores })
        })
        .collect())
}
