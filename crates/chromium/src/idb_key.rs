//! IndexedDB keys as Chromium encodes them in LevelDB keys (`EncodeIDBKey`): a type byte,
//! then the payload.
//!
//! | byte | type | payload |
//! |------|------|---------|
//! | 0 | max (Chromium's "null" type, `MaxIDBKey`) | none |
//! | 1 | string | varint count of UTF-16 code units, the units big-endian |
//! | 2 | date | milliseconds since the epoch, an 8-byte little-endian double |
//! | 3 | number | an 8-byte little-endian double |
//! | 4 | array | varint count of items, the items |
//! | 5 | min (`MinIDBKey`) | none |
//! | 6 | binary | varint count of bytes, the bytes |
//!
//! Chromium writes the doubles in the machine's byte order; every platform it runs on is
//! little-endian. Min and max never key a record, but Chromium encodes them as range bounds;
//! they decode here as [`IdbKey::Min`] and [`IdbKey::Max`] (Chromium's `DecodeIDBKey` refuses
//! them).
//!
//! [`IdbKey::to_json`] writes numbers as JSON numbers, strings as JSON strings, arrays as JSON
//! arrays, and the rest tagged: `{"type":"date","value":ms}`,
//! `{"type":"binary","base64":"..."}`, `{"type":"min"}`, `{"type":"max"}` (see
//! [`crate::json`] for non-finite numbers and strings with unpaired surrogates).

use std::cmp::Ordering;

use serde_json::{Value, json};

use crate::coding::{Reader, encode_varint};
use crate::error::{Error, Result};
use crate::json;

/// The deepest array nesting Chromium accepts in a key (`IndexedDBKey::kMaximumDepth`).
pub const MAX_DEPTH: usize = 2000;

/// Type byte of [`IdbKey::Max`].
pub const MAX_TYPE: u8 = 0;
/// Type byte of [`IdbKey::String`].
pub const STRING_TYPE: u8 = 1;
/// Type byte of [`IdbKey::Date`].
pub const DATE_TYPE: u8 = 2;
/// Type byte of [`IdbKey::Number`].
pub const NUMBER_TYPE: u8 = 3;
/// Type byte of [`IdbKey::Array`].
pub const ARRAY_TYPE: u8 = 4;
/// Type byte of [`IdbKey::Min`].
pub const MIN_TYPE: u8 = 5;
/// Type byte of [`IdbKey::Binary`].
pub const BINARY_TYPE: u8 = 6;

/// A decoded IndexedDB key.
#[derive(Debug, Clone, PartialEq)]
pub enum IdbKey {
    /// A number.
    Number(f64),
    /// A date, in milliseconds since the epoch.
    Date(f64),
    /// A string, as UTF-16 code units (keys may hold unpaired surrogates).
    String(Vec<u16>),
    /// An `ArrayBuffer` or view's bytes.
    Binary(Vec<u8>),
    /// An array of keys.
    Array(Vec<IdbKey>),
    /// The key below every key.
    Min,
    /// The key above every key.
    Max,
}

impl IdbKey {
    /// A string key.
    pub fn string(s: &str) -> IdbKey {
        IdbKey::String(s.encode_utf16().collect())
    }

    /// Decodes `bytes`, which must hold exactly one encoded key.
    pub fn decode(bytes: &[u8]) -> Result<IdbKey> {
        let mut r = Reader::new(bytes);
        let key = IdbKey::read(&mut r)?;
        if !r.is_empty() {
            return Err(Error::invalid(
                "IndexedDB key",
                r.position(),
                format!("{} bytes after the key", r.remaining()),
            ));
        }
        Ok(key)
    }

    /// Decodes one key at the reader's position and moves past it.
    pub fn read(r: &mut Reader<'_>) -> Result<IdbKey> {
        read_key(r)
    }

    /// Appends the key's encoding.
    pub fn encode(&self, into: &mut Vec<u8>) {
        match self {
            IdbKey::Max => into.push(MAX_TYPE),
            IdbKey::Min => into.push(MIN_TYPE),
            IdbKey::Number(n) => {
                into.push(NUMBER_TYPE);
                into.extend_from_slice(&n.to_le_bytes());
            }
            IdbKey::Date(n) => {
                into.push(DATE_TYPE);
                into.extend_from_slice(&n.to_le_bytes());
            }
            IdbKey::String(units) => {
                into.push(STRING_TYPE);
                encode_varint(units.len() as u64, into);
                for u in units {
                    into.extend_from_slice(&u.to_be_bytes());
                }
            }
            IdbKey::Binary(bytes) => {
                into.push(BINARY_TYPE);
                encode_varint(bytes.len() as u64, into);
                into.extend_from_slice(bytes);
            }
            IdbKey::Array(items) => {
                into.push(ARRAY_TYPE);
                encode_varint(items.len() as u64, into);
                for item in items {
                    item.encode(into);
                }
            }
        }
    }

    /// The key's encoding.
    pub fn encoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// The key as JSON (see the [module documentation](self)).
    pub fn to_json(&self) -> Value {
        match self {
            IdbKey::Number(n) => json::number(*n),
            IdbKey::Date(ms) => json::tagged("date", json::plain_number(*ms)),
            IdbKey::String(units) => json::utf16(units),
            IdbKey::Binary(bytes) => json::binary(bytes),
            IdbKey::Array(items) => Value::Array(items.iter().map(IdbKey::to_json).collect()),
            IdbKey::Min => json!({ "type": "min" }),
            IdbKey::Max => json!({ "type": "max" }),
        }
    }

    /// The IndexedDB specification's order of keys ("compare two keys"): min, numbers, dates,
    /// strings (by code unit), binaries (bytewise), arrays (item by item, then by length),
    /// max. Two numbers neither less nor greater than each other (a NaN) are equal, as in
    /// Chromium.
    pub fn spec_cmp(&self, other: &IdbKey) -> Ordering {
        fn rank(k: &IdbKey) -> u8 {
            match k {
                IdbKey::Min => 0,
                IdbKey::Number(_) => 1,
                IdbKey::Date(_) => 2,
                IdbKey::String(_) => 3,
                IdbKey::Binary(_) => 4,
                IdbKey::Array(_) => 5,
                IdbKey::Max => 6,
            }
        }
        match (self, other) {
            (IdbKey::Number(a), IdbKey::Number(b)) | (IdbKey::Date(a), IdbKey::Date(b)) => {
                a.partial_cmp(b).unwrap_or(Ordering::Equal)
            }
            (IdbKey::String(a), IdbKey::String(b)) => a.cmp(b),
            (IdbKey::Binary(a), IdbKey::Binary(b)) => a.cmp(b),
            (IdbKey::Array(a), IdbKey::Array(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.spec_cmp(y) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

/// Reads one key without recursion: arrays being filled wait on a stack whose depth is
/// bounded by [`MAX_DEPTH`].
fn read_key(r: &mut Reader<'_>) -> Result<IdbKey> {
    // Each open array: its items so far and how many more it claims.
    let mut open: Vec<(Vec<IdbKey>, u64)> = Vec::new();
    loop {
        let mut value = match read_scalar(r, open.len())? {
            Scalar::Key(k) => k,
            Scalar::Array(0) => IdbKey::Array(Vec::new()),
            Scalar::Array(count) => {
                // Every item takes at least one byte: the items come from the input, however
                // many the count claims, and the vector grows only by items that exist.
                open.push((Vec::new(), count));
                continue;
            }
        };
        loop {
            let Some((items, left)) = open.last_mut() else {
                return Ok(value);
            };
            items.push(value);
            *left -= 1;
            if *left > 0 {
                break;
            }
            let (items, _) = open.pop().expect("an open array");
            value = IdbKey::Array(items);
        }
    }
}

enum Scalar {
    Key(IdbKey),
    Array(u64),
}

/// One key that is not an array, or an array's count.
fn read_scalar(r: &mut Reader<'_>, depth: usize) -> Result<Scalar> {
    const WHAT: &str = "IndexedDB key";
    let at = r.position();
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep {
            what: WHAT,
            offset: at,
            limit: MAX_DEPTH,
        });
    }
    let tag = r.byte(WHAT)?;
    Ok(Scalar::Key(match tag {
        MAX_TYPE => IdbKey::Max,
        MIN_TYPE => IdbKey::Min,
        NUMBER_TYPE => IdbKey::Number(read_double(r)?),
        DATE_TYPE => IdbKey::Date(read_double(r)?),
        STRING_TYPE => {
            let units = r.length("IndexedDB string key")?;
            let start = r.position();
            let bytes = units
                .checked_mul(2)
                .and_then(|b| usize::try_from(b).ok())
                .filter(|&b| b <= r.remaining())
                .ok_or(Error::Truncated {
                    what: "IndexedDB string key",
                    offset: start,
                })?;
            let raw = r.take(bytes, "IndexedDB string key")?;
            IdbKey::String(
                raw.chunks_exact(2)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect(),
            )
        }
        BINARY_TYPE => {
            let len = r.length("IndexedDB binary key")?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= r.remaining())
                .ok_or(Error::Truncated {
                    what: "IndexedDB binary key",
                    offset: r.position(),
                })?;
            IdbKey::Binary(r.take(len, "IndexedDB binary key")?.to_vec())
        }
        ARRAY_TYPE => return Ok(Scalar::Array(r.length("IndexedDB array key")?)),
        tag => {
            return Err(Error::UnknownTag {
                what: "IndexedDB key type",
                tag,
                offset: at,
            });
        }
    }))
}

fn read_double(r: &mut Reader<'_>) -> Result<f64> {
    let b = r.take(8, "IndexedDB number key")?;
    Ok(f64::from_le_bytes(b.try_into().expect("eight bytes")))
}

/// Moves past one encoded key without building it (Chromium's `ConsumeEncodedIDBKey`), with
/// the nesting bounded by [`MAX_DEPTH`].
pub fn skip(r: &mut Reader<'_>) -> Result<()> {
    // How many items each open array still claims.
    let mut open: Vec<u64> = Vec::new();
    loop {
        let at = r.position();
        if open.len() > MAX_DEPTH {
            return Err(Error::TooDeep {
                what: "IndexedDB key",
                offset: at,
                limit: MAX_DEPTH,
            });
        }
        match r.byte("IndexedDB key")? {
            MAX_TYPE | MIN_TYPE => {}
            NUMBER_TYPE | DATE_TYPE => {
                r.take(8, "IndexedDB number key")?;
            }
            STRING_TYPE => {
                let units = r.length("IndexedDB string key")?;
                let bytes = units.checked_mul(2).ok_or(Error::Truncated {
                    what: "IndexedDB string key",
                    offset: r.position(),
                })?;
                take_u64(r, bytes, "IndexedDB string key")?;
            }
            BINARY_TYPE => {
                let len = r.length("IndexedDB binary key")?;
                take_u64(r, len, "IndexedDB binary key")?;
            }
            ARRAY_TYPE => {
                let count = r.length("IndexedDB array key")?;
                if count > 0 {
                    open.push(count);
                    continue;
                }
            }
            tag => {
                return Err(Error::UnknownTag {
                    what: "IndexedDB key type",
                    tag,
                    offset: at,
                });
            }
        }
        // One item done: close every array it completes.
        loop {
            let Some(left) = open.last_mut() else {
                return Ok(());
            };
            *left -= 1;
            if *left > 0 {
                break;
            }
            open.pop();
        }
    }
}

fn take_u64(r: &mut Reader<'_>, n: u64, what: &'static str) -> Result<()> {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    r.take(n, what).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(key: IdbKey) {
        let bytes = key.encoded();
        assert_eq!(IdbKey::decode(&bytes).unwrap(), key);
        let mut r = Reader::new(&bytes);
        skip(&mut r).unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn every_type_round_trips() {
        round_trip(IdbKey::Number(-1.5));
        round_trip(IdbKey::Date(1.7e12));
        round_trip(IdbKey::string("日本 😀"));
        round_trip(IdbKey::Binary(vec![0, 1, 255]));
        round_trip(IdbKey::Array(vec![
            IdbKey::Number(1.0),
            IdbKey::Array(vec![IdbKey::string("a"), IdbKey::Array(vec![])]),
        ]));
        round_trip(IdbKey::Min);
        round_trip(IdbKey::Max);
    }

    #[test]
    fn json_tags_what_json_has_no_type_for() {
        let key = IdbKey::Array(vec![
            IdbKey::Number(3.0),
            IdbKey::Date(5.0),
            IdbKey::string("s"),
            IdbKey::Binary(b"hi".to_vec()),
            IdbKey::Number(f64::INFINITY),
        ]);
        assert_eq!(
            key.to_json(),
            json!([3, {"type": "date", "value": 5}, "s", {"type": "binary", "base64": "aGk="},
                {"type": "number", "value": "Infinity"}])
        );
    }

    #[test]
    fn bad_keys_are_errors_naming_the_offset() {
        assert_eq!(
            IdbKey::decode(&[7]),
            Err(Error::UnknownTag {
                what: "IndexedDB key type",
                tag: 7,
                offset: 0
            })
        );
        assert!(matches!(
            IdbKey::decode(&[3, 0, 0]),
            Err(Error::Truncated { offset: 1, .. })
        ));
        // An array claiming 2^62 items with one present: an error, no huge allocation.
        let mut claim = vec![ARRAY_TYPE];
        encode_varint(1 << 62, &mut claim);
        claim.push(MIN_TYPE);
        assert!(matches!(
            IdbKey::decode(&claim),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            IdbKey::decode(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            Err(Error::Invalid { offset: 9, .. })
        ));
    }

    #[test]
    fn nesting_beyond_chromiums_limit_is_refused_without_overflowing_the_stack() {
        let mut deep = Vec::new();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend_from_slice(&[ARRAY_TYPE, 1]);
        }
        deep.push(MIN_TYPE);
        assert!(matches!(IdbKey::decode(&deep), Err(Error::TooDeep { .. })));
        assert!(matches!(
            skip(&mut Reader::new(&deep)),
            Err(Error::TooDeep { .. })
        ));
    }
}
