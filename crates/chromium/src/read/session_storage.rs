//! `Default/Session Storage`: one object per `sessionStorage` item and namespace (tab) that
//! holds it, `{"namespace", "origin", "key", "value", "map_id"}`.

use std::collections::{BTreeMap, BTreeSet};

use leveltable_db::Db;
use serde_json::{Map, Value};

use super::{Reading, StoredEntry, finish, stored};
use crate::session_storage::SessionStorageRecord;

/// Every item of the Session Storage database `db`, in key order (by map, then key), once
/// for each namespace and origin whose map holds it; an item of a map no namespace names
/// (a closed tab's) once, with `namespace` and `origin` `null`. With
/// [`Reading::Versions`], a namespace's older maps count as well as its current one.
///
/// # Errors
/// Reading the namespaces fails.
pub fn records(
    db: &Db,
    reading: Reading,
) -> leveltable_db::Result<impl Iterator<Item = leveltable_db::Result<Value>> + Send + use<>> {
    let mut maps: BTreeMap<i64, BTreeSet<(String, String)>> = BTreeMap::new();
    for e in stored(db, reading) {
        let e = e?;
        if e.deletion || !e.key.starts_with(b"namespace-") {
            continue;
        }
        if let Ok(SessionStorageRecord::Namespace {
            namespace,
            origin,
            map_id,
        }) = SessionStorageRecord::decode(&e.key, &e.value)
        {
            maps.entry(map_id).or_default().insert((namespace, origin));
        }
    }
    Ok(stored(db, reading).flat_map(move |e| match e {
        Ok(e) => items(&e, &maps).into_iter().map(Ok).collect::<Vec<_>>(),
        Err(e) => vec![Err(e)],
    }))
}

/// The objects for one entry: none if it is not an item.
fn items(e: &StoredEntry, maps: &BTreeMap<i64, BTreeSet<(String, String)>>) -> Vec<Value> {
    if !e.key.starts_with(b"map-") {
        return Vec::new();
    }
    let value: &[u8] = if e.deletion { b"" } else { &e.value };
    match SessionStorageRecord::decode(&e.key, value) {
        Ok(SessionStorageRecord::Entry { map_id, key, value }) => {
            let one = |names: Option<&(String, String)>| {
                let mut o = Map::new();
                o.insert("namespace".into(), names.map(|n| n.0.clone()).into());
                o.insert("origin".into(), names.map(|n| n.1.clone()).into());
                o.insert("key".into(), key.clone().into());
                o.insert(
                    "value".into(),
                    if e.deletion {
                        Value::Null
                    } else {
                        value.clone().into()
                    },
                );
                o.insert("map_id".into(), map_id.into());
                finish(o, e, None)
            };
            match maps.get(&map_id) {
                Some(names) if !names.is_empty() => names.iter().map(|n| one(Some(n))).collect(),
                _ => vec![one(None)],
            }
        }
        Ok(_) => Vec::new(),
        Err(err) => {
            let mut o = Map::new();
            for field in ["namespace", "origin", "key", "value", "map_id"] {
                o.insert(field.into(), Value::Null);
            }
            vec![finish(o, e, Some(err.to_string()))]
        }
    }
}
