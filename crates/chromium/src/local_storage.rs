//! Local Storage as Chromium keeps it (`Default/Local Storage/leveldb`, bytewise comparator).
//!
//! | key | value |
//! |---|---|
//! | `VERSION` | the schema version, ASCII (`1`) |
//! | `META:<origin>` | protobuf: 1 last modified (µs since 1601), 2 size of the stored keys and values in bytes |
//! | `METAACCESS:<origin>` | protobuf: 1 last accessed (µs since 1601) |
//! | `_<origin>\0<key>` | the value |
//!
//! Keys (after the `\0`) and values are [Chromium strings](decode_string): a first byte `0`
//! then UTF-16LE, or `1` then Latin-1.

use serde_json::{Value, json};

use crate::coding::{WINDOWS_TO_UNIX_EPOCH_US, latin1_to_string, utf16le_to_string};
use crate::error::{Error, Result};

/// One Local Storage record, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalStorageRecord {
    /// The schema version.
    Version(String),
    /// When an origin's storage last changed and how large it is.
    Meta {
        /// The origin (`https://example.com`).
        origin: String,
        /// Last modification, milliseconds since the Unix epoch.
        last_modified_ms: Option<i64>,
        /// Size of the origin's stored keys and values in bytes (format bytes included).
        size_bytes: Option<u64>,
    },
    /// When an origin's storage was last read.
    MetaAccess {
        /// The origin.
        origin: String,
        /// Last access, milliseconds since the Unix epoch.
        last_accessed_ms: Option<i64>,
    },
    /// One `localStorage` item.
    Entry {
        /// The origin.
        origin: String,
        /// The item's key.
        key: String,
        /// The item's value.
        value: String,
    },
}

impl LocalStorageRecord {
    /// Decodes one record.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<LocalStorageRecord> {
        if key == b"VERSION" {
            return Ok(LocalStorageRecord::Version(latin1_to_string(value)));
        }
        if let Some(origin) = key.strip_prefix(b"METAACCESS:") {
            let fields = protobuf_varints(value)?;
            return Ok(LocalStorageRecord::MetaAccess {
                origin: String::from_utf8_lossy(origin).into_owned(),
                last_accessed_ms: field(&fields, 1).map(|t| to_unix_ms(t as i64)),
            });
        }
        if let Some(origin) = key.strip_prefix(b"META:") {
            let fields = protobuf_varints(value)?;
            return Ok(LocalStorageRecord::Meta {
                origin: String::from_utf8_lossy(origin).into_owned(),
                last_modified_ms: field(&fields, 1).map(|t| to_unix_ms(t as i64)),
                size_bytes: field(&fields, 2),
            });
        }
        if let Some(rest) = key.strip_prefix(b"_") {
            let sep = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| Error::invalid("Local Storage key", 0, "no NUL after the origin"))?;
            let origin = String::from_utf8_lossy(&rest[..sep]).into_owned();
            let item_key = decode_string(&rest[sep + 1..]).map_err(|e| e.shifted(sep + 2))?;
            let value = decode_string(value)?;
            return Ok(LocalStorageRecord::Entry {
                origin,
                key: item_key,
                value,
            });
        }
        Err(Error::invalid(
            "Local Storage key",
            0,
            "not VERSION, META:, METAACCESS: or _<origin>",
        ))
    }

    /// The record as JSON: `{"kind": "entry", "origin": ..., "key": ..., "value": ...}`, ...
    pub fn to_json(&self) -> Value {
        match self {
            LocalStorageRecord::Version(v) => json!({ "kind": "version", "version": v }),
            LocalStorageRecord::Meta {
                origin,
                last_modified_ms,
                size_bytes,
            } => json!({ "kind": "meta", "origin": origin,
                "last_modified_ms": last_modified_ms, "size_bytes": size_bytes }),
            LocalStorageRecord::MetaAccess {
                origin,
                last_accessed_ms,
            } => json!({ "kind": "meta_access", "origin": origin,
                "last_accessed_ms": last_accessed_ms }),
            LocalStorageRecord::Entry { origin, key, value } => {
                json!({ "kind": "entry", "origin": origin, "key": key, "value": value })
            }
        }
    }
}

/// A Chromium string (Local Storage's `StorageFormat`): `0` then UTF-16LE, or `1` then
/// Latin-1. Unpaired surrogates become U+FFFD.
pub fn decode_string(bytes: &[u8]) -> Result<String> {
    match bytes.split_first() {
        Some((0, rest)) if rest.len() % 2 == 0 => Ok(utf16le_to_string(rest)),
        Some((0, _)) => Err(Error::invalid(
            "Local Storage string",
            0,
            "UTF-16 of odd byte length",
        )),
        Some((1, rest)) => Ok(latin1_to_string(rest)),
        Some((&tag, _)) => Err(Error::UnknownTag {
            what: "Local Storage string format",
            tag,
            offset: 0,
        }),
        None => Err(Error::Truncated {
            what: "Local Storage string",
            offset: 0,
        }),
    }
}

/// Every `localStorage` item among `(key, value)` pairs, in order; other records are skipped,
/// items that do not decode are errors.
pub fn entries<K, V>(
    pairs: impl IntoIterator<Item = (K, V)>,
) -> Result<Vec<(String, String, String)>>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut out = Vec::new();
    for (k, v) in pairs {
        if k.as_ref().first() == Some(&b'_') {
            if let LocalStorageRecord::Entry { origin, key, value } =
                LocalStorageRecord::decode(k.as_ref(), v.as_ref())?
            {
                out.push((origin, key, value));
            }
        }
    }
    Ok(out)
}

fn to_unix_ms(us_since_1601: i64) -> i64 {
    us_since_1601.saturating_sub(WINDOWS_TO_UNIX_EPOCH_US) / 1000
}

fn field(fields: &[(u64, u64)], number: u64) -> Option<u64> {
    fields
        .iter()
        .rev()
        .find(|(n, _)| *n == number)
        .map(|(_, v)| *v)
}

/// The varint fields of a protobuf message (other wire types are skipped).
fn protobuf_varints(msg: &[u8]) -> Result<Vec<(u64, u64)>> {
    const WHAT: &str = "Local Storage metadata";
    let mut out = Vec::new();
    let mut pos = 0;
    let varint = |pos: &mut usize| -> Result<u64> {
        let start = *pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *msg.get(*pos).ok_or(Error::Truncated {
                what: WHAT,
                offset: start,
            })?;
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::invalid(WHAT, start, "varint longer than ten bytes"))
    };
    while pos < msg.len() {
        let at = pos;
        let tag = varint(&mut pos)?;
        let skip = match tag & 7 {
            0 => {
                out.push((tag >> 3, varint(&mut pos)?));
                0
            }
            1 => 8,
            2 => varint(&mut pos)?,
            5 => 4,
            wire => {
                return Err(Error::invalid(
                    WHAT,
                    at,
                    format!("protobuf wire type {wire}"),
                ));
            }
        };
        let end = usize::try_from(skip)
            .ok()
            .and_then(|s| pos.checked_add(s))
            .filter(|&e| e <= msg.len())
            .ok_or(Error::Truncated {
                what: WHAT,
                offset: pos,
            })?;
        pos = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_in_both_formats_and_bad_ones() {
        assert_eq!(decode_string(b"\x01caf\xe9").unwrap(), "café");
        assert_eq!(decode_string(b"\x00\xe5\x65").unwrap(), "日");
        assert!(decode_string(b"\x00\xe5").is_err());
        assert!(matches!(
            decode_string(b"\x02x"),
            Err(Error::UnknownTag { tag: 2, .. })
        ));
        assert!(decode_string(b"").is_err());
    }

    #[test]
    fn bad_records_are_errors() {
        assert!(LocalStorageRecord::decode(b"_no-nul", b"\x01v").is_err());
        assert!(LocalStorageRecord::decode(b"other", b"").is_err());
        // A metadata message whose length-delimited field claims more than is there.
        assert!(LocalStorageRecord::decode(b"META:o", b"\x12\x7f").is_err());
        let err = LocalStorageRecord::decode(b"_o\0\x07", b"\x01").unwrap_err();
        assert_eq!(err.offset(), 3);
    }
}
