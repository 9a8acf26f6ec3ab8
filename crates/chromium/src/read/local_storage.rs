//! `Default/Local Storage/leveldb`: one object per `localStorage` item,
//! `{"origin", "key", "value"}`.

use leveltable_db::Db;
use serde_json::{Map, Value};

use super::{Reading, StoredEntry, finish, stored};
use crate::local_storage::LocalStorageRecord;

/// Every item of the Local Storage database `db` (other records — the schema version, each
/// origin's metadata — are left out), in key order: by origin, then key.
pub fn records(
    db: &Db,
    reading: Reading,
) -> impl Iterator<Item = leveltable_db::Result<Value>> + Send + use<> {
    stored(db, reading).filter_map(|e| match e {
        Ok(e) => item(&e).map(Ok),
        Err(e) => Some(Err(e)),
    })
}

/// The object for one operation of a committed write batch (from a change feed,
/// [`Db::follow`]): the item's `{"origin", "key", "value"}` as [`records`] prints it (`value`
/// null for a delete), with its `"seq"` and `"op"` (`"put"` or `"del"`); `None` for a record
/// that is not an item.
pub fn change(sequence: u64, key: &[u8], value: Option<&[u8]>) -> Option<Value> {
    let entry = StoredEntry {
        key: key.to_vec(),
        value: value.unwrap_or_default().to_vec(),
        version: None,
        deletion: value.is_none(),
    };
    let Value::Object(mut o) = item(&entry)? else {
        return None;
    };
    o.insert("seq".into(), sequence.into());
    o.insert(
        "op".into(),
        if value.is_some() { "put" } else { "del" }.into(),
    );
    Some(Value::Object(o))
}

/// The object for one entry, `None` if it is not an item.
fn item(e: &StoredEntry) -> Option<Value> {
    if e.key.first() != Some(&b'_') {
        return None;
    }
    let mut o = Map::new();
    // A deletion has no value: decode the key with an empty one.
    let value: &[u8] = if e.deletion { b"\x01" } else { &e.value };
    match LocalStorageRecord::decode(&e.key, value) {
        Ok(LocalStorageRecord::Entry { origin, key, value }) => {
            o.insert("origin".into(), origin.into());
            o.insert("key".into(), key.into());
            o.insert(
                "value".into(),
                if e.deletion {
                    Value::Null
                } else {
                    value.into()
                },
            );
            Some(finish(o, e, None))
        }
        Ok(_) => None,
        Err(err) => {
            let origin = e.key[1..]
                .iter()
                .position(|&b| b == 0)
                .map(|end| String::from_utf8_lossy(&e.key[1..1 + end]).into_owned());
            o.insert("origin".into(), origin.into());
            o.insert("key".into(), Value::Null);
            o.insert("value".into(), Value::Null);
            Some(finish(o, e, Some(err.to_string())))
        }
    }
}
