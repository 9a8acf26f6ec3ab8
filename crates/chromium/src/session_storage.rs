//! Session Storage as Chromium keeps it (`Default/Session Storage`, bytewise comparator).
//!
//! | key | value |
//! |---|---|
//! | `version` | the schema version, ASCII |
//! | `next-map-id` | the next map id, ASCII decimal |
//! | `namespace-<36-character id>-<origin>` | the id of the origin's map, ASCII decimal |
//! | `map-<map id>-<key>` | the value, UTF-16LE |
//!
//! A namespace is a tab's (or a cloned tab's) session storage; its maps, one per origin,
//! hold the items. Two namespaces may share a map until one of them writes. Keys in map
//! records are UTF-8.

use serde_json::{Value, json};

use crate::coding::utf16le_to_string;
use crate::error::{Error, Result};

/// One Session Storage record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStorageRecord {
    /// The schema version.
    Version(String),
    /// The next map id to hand out.
    NextMapId(i64),
    /// A namespace's map for an origin.
    Namespace {
        /// The namespace id (a GUID with `_` for `-`).
        namespace: String,
        /// The origin, as Chromium writes it (`https://example.com/`).
        origin: String,
        /// The map holding the origin's items.
        map_id: i64,
    },
    /// One `sessionStorage` item.
    Entry {
        /// The map it belongs to.
        map_id: i64,
        /// The item's key.
        key: String,
        /// The item's value.
        value: String,
    },
}

const NAMESPACE_ID_LEN: usize = 36;

impl SessionStorageRecord {
    /// Decodes one record.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<SessionStorageRecord> {
        if key == b"version" {
            return Ok(SessionStorageRecord::Version(
                String::from_utf8_lossy(value).into_owned(),
            ));
        }
        if key == b"next-map-id" {
            return Ok(SessionStorageRecord::NextMapId(decimal(value, 0)?));
        }
        if let Some(rest) = key.strip_prefix(b"namespace-") {
            let start = "namespace-".len();
            if rest.len() < NAMESPACE_ID_LEN + 1 || rest[NAMESPACE_ID_LEN] != b'-' {
                return Err(Error::invalid(
                    "Session Storage namespace key",
                    start,
                    "no 36-character namespace id followed by '-'",
                ));
            }
            return Ok(SessionStorageRecord::Namespace {
                namespace: String::from_utf8_lossy(&rest[..NAMESPACE_ID_LEN]).into_owned(),
                origin: String::from_utf8_lossy(&rest[NAMESPACE_ID_LEN + 1..]).into_owned(),
                map_id: decimal(value, 0)?,
            });
        }
        if let Some(rest) = key.strip_prefix(b"map-") {
            let start = "map-".len();
            let dash = rest.iter().position(|&b| b == b'-').ok_or_else(|| {
                Error::invalid("Session Storage map key", start, "no '-' after the map id")
            })?;
            let map_id = decimal(&rest[..dash], start)?;
            if value.len() % 2 != 0 {
                return Err(Error::invalid(
                    "Session Storage value",
                    0,
                    "UTF-16 of odd byte length",
                ));
            }
            return Ok(SessionStorageRecord::Entry {
                map_id,
                key: String::from_utf8_lossy(&rest[dash + 1..]).into_owned(),
                value: utf16le_to_string(value),
            });
        }
        Err(Error::invalid(
            "Session Storage key",
            0,
            "not version, next-map-id, namespace- or map-",
        ))
    }

    /// The record as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            SessionStorageRecord::Version(v) => json!({ "kind": "version", "version": v }),
            SessionStorageRecord::NextMapId(id) => json!({ "kind": "next_map_id", "map_id": id }),
            SessionStorageRecord::Namespace {
                namespace,
                origin,
                map_id,
            } => json!({ "kind": "namespace", "namespace": namespace, "origin": origin,
                "map_id": map_id }),
            SessionStorageRecord::Entry { map_id, key, value } => {
                json!({ "kind": "entry", "map_id": map_id, "key": key, "value": value })
            }
        }
    }
}

/// A `sessionStorage` item with the namespace and origin it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    /// The namespace id.
    pub namespace: String,
    /// The origin.
    pub origin: String,
    /// The item's key.
    pub key: String,
    /// The item's value.
    pub value: String,
}

/// Every item among `(key, value)` pairs, once for each namespace whose map holds it (ordered
/// by namespace, origin, then the map's order). Items of maps no namespace names are left
/// out; records that do not decode are errors.
pub fn entries<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Vec<SessionEntry>>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut namespaces = Vec::new();
    let mut items: Vec<(i64, String, String)> = Vec::new();
    for (k, v) in pairs {
        match SessionStorageRecord::decode(k.as_ref(), v.as_ref())? {
            SessionStorageRecord::Namespace {
                namespace,
                origin,
                map_id,
            } => namespaces.push((namespace, origin, map_id)),
            SessionStorageRecord::Entry { map_id, key, value } => items.push((map_id, key, value)),
            _ => {}
        }
    }
    namespaces.sort();
    let mut out = Vec::new();
    for (namespace, origin, map_id) in namespaces {
        for (_, key, value) in items.iter().filter(|(m, _, _)| *m == map_id) {
            out.push(SessionEntry {
                namespace: namespace.clone(),
                origin: origin.clone(),
                key: key.clone(),
                value: value.clone(),
            });
        }
    }
    Ok(out)
}

/// An ASCII decimal number.
fn decimal(bytes: &[u8], offset: usize) -> Result<i64> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid("Session Storage number", offset, "not a decimal number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_bad_ones() {
        assert_eq!(
            SessionStorageRecord::decode(b"map-12-k\xc3\xa9", b"v\x00").unwrap(),
            SessionStorageRecord::Entry {
                map_id: 12,
                key: "ké".into(),
                value: "v".into()
            }
        );
        assert!(SessionStorageRecord::decode(b"map-x-k", b"").is_err());
        assert!(SessionStorageRecord::decode(b"map-1", b"").is_err());
        assert!(SessionStorageRecord::decode(b"map-1-k", b"v").is_err());
        assert!(SessionStorageRecord::decode(b"namespace-short-o", b"1").is_err());
        assert!(SessionStorageRecord::decode(b"unknown", b"").is_err());
        assert_eq!(
            SessionStorageRecord::decode(b"next-map-id", b"7").unwrap(),
            SessionStorageRecord::NextMapId(7)
        );
    }
}
