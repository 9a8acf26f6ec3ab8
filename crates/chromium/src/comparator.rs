//! `idb_cmp1`, the order of the keys in an IndexedDB LevelDB database, as Chromium's
//! `content::indexed_db::Compare` (`indexed_db_leveldb_coding.cc`) defines it.
//!
//! A key starts with a [key prefix](crate::indexeddb::KeyPrefix) (database id, object store
//! id, index id), compared as numbers. Keys with equal prefixes are compared by what their
//! prefix says they are:
//!
//! - global metadata (database id 0): by type byte; types below 7 have nothing more to
//!   compare; the scopes keys (type 50) compare the rest bytewise; database free-list keys
//!   (100) by database id; database name keys (201) by origin, then name (UTF-16 code units);
//! - database metadata (object store id 0): by type byte; types below 6 have nothing more;
//!   object store metadata (50) by store id, then metadata type; index metadata (100) by
//!   store, index, metadata type; free lists (150, 151) by ids; object store names (200) by
//!   name; index names (201) by store id, then name;
//! - object store data (index id 1), exists entries (2), blob entries (3): by the encoded
//!   IndexedDB key that follows; if either key has nothing after the prefix, the shorter
//!   rest sorts first;
//! - index data (index id 30 and up): by the index key, then (when both have more) the
//!   primary key, then the sequence number; a key without sequence number or primary key
//!   sorts before one with them;
//! - encoded IndexedDB keys: min < number < date < string < binary < array < max; numbers
//!   and dates as doubles, strings and binaries bytewise on their content (strings are
//!   UTF-16BE, so this is code-unit order), arrays item by item, then by length.
//!
//! # Where this differs from Chromium
//!
//! Only on keys Chromium never writes:
//!
//! - Chromium's `Compare` answers 0, "equal", for two keys it cannot decode (a prefix that
//!   does not fit, an index id 4 to 29, an unknown metadata or key type byte, a length
//!   running past the end, a sequence number that is not a varint). LevelDB would then treat
//!   different keys as one and hide all but one of them, so [`IdbCmp1`] orders such a pair
//!   bytewise, whole key against whole key, instead.
//! - Chromium subtracts 64-bit ids and array lengths (`CompareInts`, `length_a - length_b`
//!   truncated to `int`), which overflows for ids of 2^63 and more and array lengths that
//!   differ by 2^31 or more; these are compared here as the numbers they are.
//!
//! Like Chromium, the order calls some different byte strings equal: the numbers `0` and
//! `-0`, and keys that differ only in bytes after the fields their kind has (Chromium stops
//! reading there). A lookup of `0` finds a record stored under `-0`, as in Chromium.
//!
//! `find_shortest_separator` and `find_short_successor` leave keys unchanged, as Chromium's
//! comparator does.

use std::cmp::Ordering;

use leveltable_table::Comparator;

use crate::coding::decode_varint;
use crate::indexeddb::{KeyPrefix, KeyType};

/// The name Chromium gives its IndexedDB comparator, stored in the database's MANIFEST.
pub const NAME: &str = "idb_cmp1";

/// Chromium's IndexedDB key order, named `idb_cmp1` (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdbCmp1;

impl Comparator for IdbCmp1 {
    fn name(&self) -> &str {
        NAME
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_keys(a, b).unwrap_or_else(|| a.cmp(b))
    }

    fn find_shortest_separator(&self, _start: &mut Vec<u8>, _limit: &[u8]) {}

    fn find_short_successor(&self, _key: &mut Vec<u8>) {}
}

/// Chromium's `Compare(a, b, /*only_compare_index_keys=*/false)`, or `None` where Chromium
/// finds a key it cannot decode (and answers "equal").
pub fn compare_keys(a: &[u8], b: &[u8]) -> Option<Ordering> {
    compare(a, b, false)
}

/// Chromium's `CompareIndexKeys`: as [`compare_keys`], but index data keys are compared by
/// their index key alone.
pub fn compare_index_keys(a: &[u8], b: &[u8]) -> Option<Ordering> {
    compare(a, b, true)
}

fn compare(a: &[u8], b: &[u8], only_index_keys: bool) -> Option<Ordering> {
    let (prefix_a, mut sa) = KeyPrefix::decode_prefix(a)?;
    let (prefix_b, mut sb) = KeyPrefix::decode_prefix(b)?;
    let by_prefix = prefix_a.cmp_ids(&prefix_b);
    if by_prefix != Ordering::Equal {
        return Some(by_prefix);
    }
    match prefix_a.key_type() {
        KeyType::GlobalMetadata => {
            let (&ta, ra) = sa.split_first()?;
            let (&tb, rb) = sb.split_first()?;
            if ta != tb {
                return Some(ta.cmp(&tb));
            }
            match ta {
                0..=6 => Some(Ordering::Equal),
                50 => Some(ra.cmp(rb)),
                100 => {
                    let (x, _) = varint(ra)?;
                    let (y, _) = varint(rb)?;
                    Some(x.cmp(&y))
                }
                201 => {
                    let (origin_a, rest_a) = string_with_length(ra)?;
                    let (name_a, _) = string_with_length(rest_a)?;
                    let (origin_b, rest_b) = string_with_length(rb)?;
                    let (name_b, _) = string_with_length(rest_b)?;
                    Some(origin_a.cmp(origin_b).then(name_a.cmp(name_b)))
                }
                _ => None,
            }
        }
        KeyType::DatabaseMetadata => {
            let (&ta, ra) = sa.split_first()?;
            let (&tb, rb) = sb.split_first()?;
            if ta != tb {
                return Some(ta.cmp(&tb));
            }
            match ta {
                0..=5 => Some(Ordering::Equal),
                // Object store metadata: store id, metadata type.
                50 => {
                    let (sa_id, ra) = varint(ra)?;
                    let (&ma, _) = ra.split_first()?;
                    let (sb_id, rb) = varint(rb)?;
                    let (&mb, _) = rb.split_first()?;
                    Some(sa_id.cmp(&sb_id).then(ma.cmp(&mb)))
                }
                // Index metadata: store id, index id, metadata type.
                100 => {
                    let (sa_id, ra) = varint(ra)?;
                    let (ia, ra) = varint(ra)?;
                    let (&ma, _) = ra.split_first()?;
                    let (sb_id, rb) = varint(rb)?;
                    let (ib, rb) = varint(rb)?;
                    let (&mb, _) = rb.split_first()?;
                    Some(sa_id.cmp(&sb_id).then(ia.cmp(&ib)).then(ma.cmp(&mb)))
                }
                // Object store free list: store id.
                150 => Some(varint(ra)?.0.cmp(&varint(rb)?.0)),
                // Index free list: store id, index id.
                151 => {
                    let (sa_id, ra) = varint(ra)?;
                    let (ia, _) = varint(ra)?;
                    let (sb_id, rb) = varint(rb)?;
                    let (ib, _) = varint(rb)?;
                    Some(sa_id.cmp(&sb_id).then(ia.cmp(&ib)))
                }
                // Object store names: name.
                200 => Some(string_with_length(ra)?.0.cmp(string_with_length(rb)?.0)),
                // Index names: store id, name.
                201 => {
                    let (sa_id, ra) = varint(ra)?;
                    let (na, _) = string_with_length(ra)?;
                    let (sb_id, rb) = varint(rb)?;
                    let (nb, _) = string_with_length(rb)?;
                    Some(sa_id.cmp(&sb_id).then(na.cmp(nb)))
                }
                _ => None,
            }
        }
        KeyType::ObjectStoreData | KeyType::ExistsEntry | KeyType::BlobEntry => {
            if sa.is_empty() || sb.is_empty() {
                return Some(sa.len().cmp(&sb.len()));
            }
            compare_encoded_idb_keys(&mut sa, &mut sb)
        }
        KeyType::IndexData => {
            if sa.is_empty() || sb.is_empty() {
                return Some(sa.len().cmp(&sb.len()));
            }
            let by_key = compare_encoded_idb_keys(&mut sa, &mut sb)?;
            if by_key != Ordering::Equal || only_index_keys {
                return Some(by_key);
            }
            let mut seq_a = -1;
            let mut seq_b = -1;
            if !sa.is_empty() {
                (seq_a, sa) = varint(sa)?;
            }
            if !sb.is_empty() {
                (seq_b, sb) = varint(sb)?;
            }
            if sa.is_empty() || sb.is_empty() {
                return Some(sa.len().cmp(&sb.len()));
            }
            let by_primary = compare_encoded_idb_keys(&mut sa, &mut sb)?;
            Some(by_primary.then(seq_a.cmp(&seq_b)))
        }
        KeyType::Invalid => None,
    }
}

/// Chromium's `CompareEncodedIDBKeys`: compares the encoded IndexedDB keys at the start of
/// `a` and `b` and moves both past them. `None` where Chromium's answer is "not ok": a key
/// that is cut short or has an unknown type byte.
pub fn compare_encoded_idb_keys(a: &mut &[u8], b: &mut &[u8]) -> Option<Ordering> {
    compare_encoded(a, b)
}

/// Chromium's order of key types: `b - a` over `blink::mojom::IDBKeyType` (invalid 0,
/// array 1, binary 2, string 3, date 4, number 5, min 7), so a larger enum value sorts first.
/// Type byte 0 is Chromium's "null" type, `MaxIDBKey`, which maps to "invalid" and sorts
/// last.
fn type_rank(type_byte: u8) -> Option<u8> {
    Some(match type_byte {
        5 => 0, // min
        3 => 1, // number
        2 => 2, // date
        1 => 3, // string
        6 => 4, // binary
        4 => 5, // array
        0 => 6, // null: max
        _ => return None,
    })
}

/// Compares without recursion: for each array both keys are inside, how many item pairs are
/// left to compare and the two claimed lengths.
fn compare_encoded(a: &mut &[u8], b: &mut &[u8]) -> Option<Ordering> {
    let mut open: Vec<(i64, i64, i64)> = Vec::new();
    loop {
        if open.len() > crate::idb_key::MAX_DEPTH {
            return None;
        }
        match compare_one(a, b)? {
            Step::Decided(Ordering::Equal) => {}
            Step::Decided(o) => return Some(o),
            Step::Arrays(len_a, len_b) => {
                open.push((len_a.min(len_b), len_a, len_b));
            }
        }
        // Close every array whose common items are all equal.
        loop {
            let Some(&mut (ref mut left, len_a, len_b)) = open.last_mut() else {
                return Some(Ordering::Equal);
            };
            if *left > 0 {
                *left -= 1;
                break;
            }
            open.pop();
            match len_a.cmp(&len_b) {
                Ordering::Equal => {}
                o => return Some(o),
            }
        }
    }
}

enum Step {
    Decided(Ordering),
    Arrays(i64, i64),
}

/// Compares the keys' type bytes and, for keys that are not arrays, their payloads.
fn compare_one(a: &mut &[u8], b: &mut &[u8]) -> Option<Step> {
    let (&ta, ra) = a.split_first()?;
    let (&tb, rb) = b.split_first()?;
    *a = ra;
    *b = rb;
    let by_type = type_rank(ta)?.cmp(&type_rank(tb)?);
    if by_type != Ordering::Equal {
        return Some(Step::Decided(by_type));
    }
    Some(Step::Decided(match ta {
        0 | 5 => Ordering::Equal,
        4 => {
            let (len_a, ra) = varint(a)?;
            let (len_b, rb) = varint(b)?;
            *a = ra;
            *b = rb;
            return Some(Step::Arrays(len_a, len_b));
        }
        6 => {
            let (x, ra) = sized(a, 1)?;
            let (y, rb) = sized(b, 1)?;
            *a = ra;
            *b = rb;
            x.cmp(y)
        }
        1 => {
            let (x, ra) = sized(a, 2)?;
            let (y, rb) = sized(b, 2)?;
            *a = ra;
            *b = rb;
            x.cmp(y)
        }
        _ => {
            // 2 (date) and 3 (number): little-endian doubles; a NaN is equal to everything.
            let x = double(a)?;
            let y = double(b)?;
            *a = &a[8..];
            *b = &b[8..];
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }))
}

fn varint(s: &[u8]) -> Option<(i64, &[u8])> {
    let (v, used) = decode_varint(s)?;
    Some((v, &s[used..]))
}

/// A varint count of `unit`-byte elements, then the elements: the element bytes and the rest.
fn sized(s: &[u8], unit: u64) -> Option<(&[u8], &[u8])> {
    let (len, rest) = varint(s)?;
    let bytes = u64::try_from(len).ok()?.checked_mul(unit)?;
    let bytes = usize::try_from(bytes).ok().filter(|&n| n <= rest.len())?;
    Some(rest.split_at(bytes))
}

/// Chromium's `DecodeStringWithLength` for comparing: the UTF-16BE bytes (bytewise order is
/// code-unit order) and the rest. Fails on an empty input, as Chromium does.
fn string_with_length(s: &[u8]) -> Option<(&[u8], &[u8])> {
    if s.is_empty() {
        return None;
    }
    sized(s, 2)
}

fn double(s: &[u8]) -> Option<f64> {
    let bytes: [u8; 8] = s.get(..8)?.try_into().ok()?;
    Some(f64::from_le_bytes(bytes))
}
