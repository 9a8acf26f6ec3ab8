//! Blink's envelope around V8's data (`SerializedScriptValue`), and IndexedDB's wrapping of
//! large values.
//!
//! ```text
//! version ≥ 21:  FF <blink version> FE <trailer offset: u64 BE> <trailer size: u32 BE>
//!                FF <V8 version> <value> [trailer]
//! 16 ≤ v < 21:   FF <blink version> FF <V8 version> <value>
//! v < 16:        FF <version> <value>               (one envelope for both)
//! ```
//!
//! The trailer, when its offset and size are not zero, lists the interfaces the value needs
//! (`A0 <count: u32 BE> <count tag bytes>`); the V8 data ends where it starts.
//!
//! IndexedDB stores some values wrapped (Blink's `IDBValueWrapper`): `FF 11 01 <size>
//! <index>` means the value was too large and is in the record's blob number `index` (a file
//! of `size` bytes that holds the serialized value); `FF 11 02 <snappy data>` is the value
//! compressed with Snappy (raw format).

use crate::error::{Error, Result};

const WHAT: &str = "Blink envelope";

/// How an IndexedDB value is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrapping<'a> {
    /// Not wrapped: a serialized value.
    Plain(&'a [u8]),
    /// Stored in the record's blob number `index`, `size` bytes long.
    InBlob {
        /// The blob's size.
        size: u64,
        /// Which of the record's blobs (its position in the blob entry).
        index: u64,
    },
    /// Compressed with Snappy (raw format); these are the compressed bytes.
    Snappy(&'a [u8]),
}

/// Tells how an IndexedDB value is stored (see the module documentation).
pub fn unwrap_idb_value(bytes: &[u8]) -> Result<Wrapping<'_>> {
    match bytes {
        [0xff, 0x11, 0x01, rest @ ..] => {
            let (size, used) = varint(rest, 3, "wrapped value size")?;
            let (index, _) = varint(&rest[used..], 3 + used, "wrapped value blob index")?;
            Ok(Wrapping::InBlob { size, index })
        }
        [0xff, 0x11, 0x02, rest @ ..] => Ok(Wrapping::Snappy(rest)),
        _ => Ok(Wrapping::Plain(bytes)),
    }
}

/// Blink's envelope, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Blink's format version.
    pub blink_version: u32,
    /// Where V8's data (starting with its own `FF <version>`) starts.
    pub v8_start: usize,
    /// Where it ends: the trailer's offset, or the end of the input.
    pub v8_end: usize,
    /// The interface tags the trailer lists (empty without a trailer).
    pub requires_interfaces: Vec<u8>,
}

impl Envelope {
    /// Parses the envelope at the start of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Envelope> {
        if bytes.first() != Some(&0xff) {
            return Err(Error::invalid(WHAT, 0, "no version tag (0xff)"));
        }
        let (version, used) = varint(&bytes[1..], 1, "Blink version")?;
        let blink_version = u32::try_from(version)
            .map_err(|_| Error::invalid(WHAT, 1, format!("version {version}")))?;
        let mut pos = 1 + used;
        if blink_version < 16 {
            // One envelope for both: V8's data is the version tag and what follows.
            return Ok(Envelope {
                blink_version,
                v8_start: 0,
                v8_end: bytes.len(),
                requires_interfaces: Vec::new(),
            });
        }
        let mut v8_end = bytes.len();
        let mut requires_interfaces = Vec::new();
        if blink_version >= 21 {
            let header = bytes.get(pos..pos + 13).ok_or(Error::Truncated {
                what: "Blink trailer offset",
                offset: pos,
            })?;
            if header[0] != 0xfe {
                return Err(Error::UnknownTag {
                    what: "Blink envelope tag",
                    tag: header[0],
                    offset: pos,
                });
            }
            let offset = u64::from_be_bytes(header[1..9].try_into().expect("8 bytes"));
            let size = u32::from_be_bytes(header[9..13].try_into().expect("4 bytes"));
            if offset != 0 || size != 0 {
                let start = usize::try_from(offset)
                    .ok()
                    .filter(|&s| s >= pos + 13)
                    .filter(|&s| {
                        s.checked_add(size as usize)
                            .is_some_and(|e| e <= bytes.len())
                    });
                let Some(start) = start else {
                    return Err(Error::invalid(
                        WHAT,
                        pos,
                        format!("trailer at {offset}, {size} bytes, outside the value"),
                    ));
                };
                requires_interfaces = parse_trailer(&bytes[start..start + size as usize], start)?;
                v8_end = start;
            }
            pos += 13;
        }
        Ok(Envelope {
            blink_version,
            v8_start: pos,
            v8_end,
            requires_interfaces,
        })
    }
}

fn parse_trailer(trailer: &[u8], base: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < trailer.len() {
        let tag = trailer[pos];
        if tag != 0xa0 {
            return Err(Error::UnknownTag {
                what: "Blink trailer tag",
                tag,
                offset: base + pos,
            });
        }
        let count = trailer.get(pos + 1..pos + 5).ok_or(Error::Truncated {
            what: "Blink trailer",
            offset: base + pos,
        })?;
        let count = u32::from_be_bytes(count.try_into().expect("4 bytes")) as usize;
        let tags = trailer
            .get(pos + 5..)
            .and_then(|t| t.get(..count))
            .ok_or(Error::Truncated {
                what: "Blink trailer",
                offset: base + pos + 5,
            })?;
        out.extend_from_slice(tags);
        pos += 5 + count;
    }
    Ok(out)
}

/// A base-128 varint (as Blink and V8 write them) and its length; `base` is the offset of
/// `data` for errors.
fn varint(data: &[u8], base: usize, what: &'static str) -> Result<(u64, usize)> {
    let mut value: u64 = 0;
    for (i, &b) in data.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    if data.len() >= 10 {
        Err(Error::invalid(what, base, "varint longer than ten bytes"))
    } else {
        Err(Error::Truncated { what, offset: base })
    }
}
