//! Whole directories, read through [`leveltable_db`]: every Local Storage item, Session
//! Storage item and IndexedDB record as one JSON object, with the names a person looks for
//! (origin, database, object store) beside the decoded key and value.
//!
//! Each reader takes an open [`Db`] and a [`Reading`]: the live view (what Chromium would
//! read), or every stored version (open the database with [`Db::salvage`] for what
//! LevelDB's repair would recover), each labelled with its `sequence` number and its
//! `state`: `live`, `deleted` (the newest version of its key is a deletion; the object has
//! the key and no value) or `shadowed` (an older version, hidden by a newer one).
//!
//! A record that does not decode is not an error of the whole read: its object has the
//! fields that did decode, `null` for the others, an `error` naming what failed and at which
//! offset, and the raw `key_hex` and `value_hex`.

use std::path::Path;
use std::sync::Arc;

use leveltable_db::{ComparatorRegistry, Db, DbOptions, VersionStatus};
use serde_json::{Map, Value};

use crate::IdbCmp1;

pub mod indexeddb;
pub mod local_storage;
pub mod session_storage;

/// The bytewise comparator and [`IdbCmp1`] (`idb_cmp1`): give it to
/// [`DbOptions::comparators`] and [`Db::open`] reads every Chromium LevelDB directory in
/// its own order, IndexedDB databases included.
pub fn comparators() -> ComparatorRegistry {
    ComparatorRegistry::default().with(Arc::new(IdbCmp1))
}

/// Opens the Chromium LevelDB directory `dir` with [`comparators`] (and `options`' other
/// settings): with `salvage`, as LevelDB's repair would recover it ([`Db::salvage`]).
///
/// # Errors
/// As [`Db::open`] and [`Db::salvage`].
pub fn open(dir: impl AsRef<Path>, salvage: bool, options: DbOptions) -> leveltable_db::Result<Db> {
    let options = options.comparators(comparators());
    if salvage {
        Db::salvage(dir, options)
    } else {
        Db::open(dir, options)
    }
}

/// Which entries a reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reading {
    /// The live view: each key's newest value.
    #[default]
    Live,
    /// Every stored version, each object with its `sequence` and `state`.
    Versions,
}

/// One entry or version read.
#[derive(Debug, Clone)]
pub struct StoredEntry {
    /// The key.
    pub key: Vec<u8>,
    /// The value (empty for a deletion).
    pub value: Vec<u8>,
    /// With [`Reading::Versions`], the sequence number and state.
    pub version: Option<(u64, VersionStatus)>,
    /// Whether the version is a deletion (`deleted`, or a `shadowed` deletion).
    pub deletion: bool,
}

/// The entries of `db` as `reading` asks, in key order.
pub fn stored(
    db: &Db,
    reading: Reading,
) -> Box<dyn Iterator<Item = leveltable_db::Result<StoredEntry>> + Send> {
    match reading {
        Reading::Live => Box::new(db.iter().map(|e| {
            e.map(|(key, value)| StoredEntry {
                key,
                value,
                version: None,
                deletion: false,
            })
        })),
        Reading::Versions => Box::new(db.versions().map(|v| {
            v.map(|v| StoredEntry {
                deletion: v.value_type == leveltable_db::dbformat::ValueType::Deletion,
                key: v.user_key,
                value: v.value,
                version: Some((v.sequence, v.status)),
            })
        })),
    }
}

/// The name of a state: `live`, `deleted` or `shadowed`, as `leveltable db dump --salvage`
/// prints it.
pub fn state_name(status: VersionStatus) -> &'static str {
    match status {
        VersionStatus::Live => "live",
        VersionStatus::Deleted => "deleted",
        VersionStatus::Shadowed => "shadowed",
    }
}

/// Adds `sequence` and `state` for a version, `error`, `key_hex` and `value_hex` for a
/// record that did not decode.
pub(crate) fn finish(
    mut object: Map<String, Value>,
    entry: &StoredEntry,
    error: Option<String>,
) -> Value {
    if let Some((sequence, status)) = entry.version {
        object.insert("sequence".into(), sequence.into());
        object.insert("state".into(), state_name(status).into());
    }
    if let Some(error) = error {
        object.insert("error".into(), error.into());
        object.insert("key_hex".into(), hex(&entry.key).into());
        object.insert("value_hex".into(), hex(&entry.value).into());
    }
    Value::Object(object)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
