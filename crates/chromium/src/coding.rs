//! The primitive encodings of Chromium's IndexedDB backing store: varints, little-endian
//! integers of a given width, UTF-16BE strings with and without a length.
//!
//! [`Reader`] walks an input and names the offset of whatever fails to decode.

use crate::error::{Error, Result};

/// Microseconds from 1601-01-01 (the epoch of Chromium's `base::Time`) to 1970-01-01.
pub const WINDOWS_TO_UNIX_EPOCH_US: i64 = 11_644_473_600_000_000;

/// A cursor over an input that remembers the offset of each read.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// The offset of the next byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next byte, not consumed.
    pub fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// One byte.
    pub fn byte(&mut self, what: &'static str) -> Result<u8> {
        let b = self.peek().ok_or(Error::Truncated {
            what,
            offset: self.pos,
        })?;
        self.pos += 1;
        Ok(b)
    }

    /// The next `n` bytes; fails without consuming anything if fewer are left.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what,
                offset: self.pos,
            });
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Chromium's varint (`DecodeVarInt`): 7 bits a byte, least significant first, at most
    /// ten bytes; a zero byte after the first and bits shifted beyond 64 are refused, as
    /// Chromium refuses them. The value is the 64 bits read as a signed number.
    pub fn varint(&mut self, what: &'static str) -> Result<i64> {
        let start = self.pos;
        match decode_varint(self.rest()) {
            Some((value, used)) => {
                self.pos += used;
                Ok(value)
            }
            None if self.remaining() == 0 => Err(Error::Truncated {
                what,
                offset: start,
            }),
            None => Err(Error::invalid(what, start, "malformed varint")),
        }
    }

    /// A varint that must not be negative, as a length or id.
    pub fn length(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let v = self.varint(what)?;
        u64::try_from(v).map_err(|_| Error::invalid(what, start, format!("negative value {v}")))
    }

    /// A UTF-16BE string of `units` code units (Chromium's `DecodeString` over a length it
    /// read first). Unpaired surrogates become U+FFFD.
    pub fn utf16be(&mut self, units: u64, what: &'static str) -> Result<String> {
        let start = self.pos;
        let bytes = units
            .checked_mul(2)
            .and_then(|b| usize::try_from(b).ok())
            .filter(|&b| b <= self.remaining())
            .ok_or(Error::Truncated {
                what,
                offset: start,
            })?;
        Ok(utf16be_to_string(self.take(bytes, what)?))
    }

    /// Chromium's `DecodeStringWithLength`: a varint count of UTF-16 code units, then the
    /// units big-endian.
    pub fn string_with_length(&mut self, what: &'static str) -> Result<String> {
        let units = self.length(what)?;
        self.utf16be(units, what)
    }
}

/// Chromium's `DecodeVarInt` on the start of `data`: the value and how many bytes it used, or
/// `None` if `data` does not start with a well-formed varint.
pub fn decode_varint(data: &[u8]) -> Option<(i64, usize)> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    for (i, &c) in data.iter().enumerate() {
        if shift >= 64 || (shift != 0 && c == 0) {
            return None;
        }
        let bits = u64::from(c & 0x7f);
        let shifted = bits << shift;
        if shifted >> shift != bits {
            return None;
        }
        value |= shifted;
        shift += 7;
        if c & 0x80 == 0 {
            return Some((value as i64, i + 1));
        }
    }
    None
}

/// Chromium's `EncodeVarInt` of a non-negative value.
pub fn encode_varint(value: u64, into: &mut Vec<u8>) {
    let mut n = value;
    loop {
        let c = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            into.push(c);
            return;
        }
        into.push(c | 0x80);
    }
}

/// Chromium's `DecodeInt`: all of `data` as a little-endian integer (the metadata values and
/// the key prefix ids are stored in as few bytes as they need). Bytes past the eighth are
/// shifted out, as in Chromium.
pub fn decode_int(data: &[u8]) -> i64 {
    let mut value: u64 = 0;
    for (i, &b) in data.iter().enumerate().take(8) {
        value |= u64::from(b) << (8 * i);
    }
    value as i64
}

/// Chromium's `EncodeInt` of a non-negative value: little-endian, at least one byte, no
/// trailing zero bytes.
pub fn encode_int(value: u64, into: &mut Vec<u8>) {
    let mut n = value;
    loop {
        into.push(n as u8);
        n >>= 8;
        if n == 0 {
            return;
        }
    }
}

/// UTF-16BE bytes as a string; unpaired surrogates become U+FFFD and an odd last byte is
/// ignored.
pub fn utf16be_to_string(bytes: &[u8]) -> String {
    let units = bytes
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]));
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// UTF-16LE bytes as a string; unpaired surrogates become U+FFFD and an odd last byte is
/// ignored.
pub fn utf16le_to_string(bytes: &[u8]) -> String {
    let units = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]));
    char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// Latin-1 bytes as a string (every byte is the code point of the same value).
pub fn latin1_to_string(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A string as UTF-16BE with its length first, as Chromium's `EncodeStringWithLength`.
pub fn encode_string_with_length(value: &str, into: &mut Vec<u8>) {
    let units: Vec<u16> = value.encode_utf16().collect();
    encode_varint(units.len() as u64, into);
    for u in units {
        into.extend_from_slice(&u.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_malformed_ones_are_refused() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, i64::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            encode_varint(v, &mut buf);
            assert_eq!(decode_varint(&buf), Some((v as i64, buf.len())), "{v}");
        }
        assert_eq!(decode_varint(&[]), None);
        assert_eq!(decode_varint(&[0x80]), None, "unterminated");
        assert_eq!(
            decode_varint(&[0x80, 0x00]),
            None,
            "zero byte after the first"
        );
        let mut eleven = vec![0xffu8; 10];
        eleven.push(0x01);
        assert_eq!(decode_varint(&eleven), None, "more than ten bytes");
        let mut overflow = vec![0xffu8; 9];
        overflow.push(0x02);
        assert_eq!(decode_varint(&overflow), None, "bits beyond 64");
    }

    #[test]
    fn ints_are_little_endian_and_minimal() {
        let mut buf = Vec::new();
        encode_int(0x0102, &mut buf);
        assert_eq!(buf, [2, 1]);
        assert_eq!(decode_int(&buf), 0x0102);
        buf.clear();
        encode_int(0, &mut buf);
        assert_eq!(buf, [0]);
        assert_eq!(decode_int(&[]), 0);
    }

    #[test]
    fn a_claimed_length_beyond_the_input_is_an_error_not_an_allocation() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f, b'a']);
        let err = r.string_with_length("name").unwrap_err();
        assert_eq!(err.offset(), 5);
    }
}
