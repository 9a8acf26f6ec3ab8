//! The log format shared by write-ahead logs (`NNNNNN.log`) and MANIFESTs (LevelDB's
//! `db/log_format.h`).
//!
//! A log is a sequence of 32 KiB blocks. Each block holds physical records, each a 7-byte
//! header followed by its payload:
//!
//! ```text
//! 4 bytes: masked crc32c of the type byte and the payload (little-endian)
//! 2 bytes: payload length (little-endian)
//! 1 byte:  record type (FULL, FIRST, MIDDLE, LAST; 0 is reserved for preallocated space)
//! length bytes: payload
//! ```
//!
//! A record never spans a block boundary: a logical record too long for the rest of the
//! block is cut into a FIRST fragment, MIDDLE fragments and a LAST fragment. A block tail
//! shorter than a header (at most 6 bytes) is zero padding.

/// The size of a log block.
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;

/// The header of a physical record: checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 4 + 2 + 1;

/// The most bytes of one write batch (one log record) a database open for writing accepts:
/// 1 GiB, LevelDB's largest write buffer. A larger batch is refused with
/// [`Error::TooLong`](crate::Error::TooLong) before anything is written, so that every log
/// the writer leaves holds at most a write buffer and a batch, which every reader of the
/// database (this crate's, a read whole from object storage, LevelDB's) can replay. LevelDB
/// sets no limit.
pub const MAX_WRITE_BATCH_BYTES: usize = 1 << 30;

/// The type byte of a physical record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// Reserved for preallocated files: a zero header with a zero length is padding.
    Zero = 0,
    /// A whole logical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// A fragment between the first and the last.
    Middle = 3,
    /// The last fragment of a logical record.
    Last = 4,
}

impl RecordType {
    /// The type stored as `byte`, if it is one.
    pub(crate) const fn from_byte(byte: u8) -> Option<RecordType> {
        match byte {
            0 => Some(RecordType::Zero),
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

/// Added to a rotated crc32c before it is stored (LevelDB's `crc32c::Mask`): computing the
/// CRC of a string that contains embedded CRCs is problematic, so stored CRCs are masked.
const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's `crc32c::Mask`.
pub const fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// LevelDB's `crc32c::Unmask`, the inverse of [`mask_crc`].
pub const fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The crc32c a header stores for a record of `record_type` with `payload`, unmasked.
pub(crate) fn record_crc(record_type: u8, payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&[record_type]), payload)
}

/// A physical record's header as stored; nothing in it is checked by decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// The checksum of the type byte and the payload, unmasked.
    pub(crate) crc: u32,
    /// The payload's length as the header claims it.
    pub(crate) length: usize,
    /// The type byte, which need not name a [`RecordType`].
    pub(crate) kind: u8,
}

impl Header {
    /// The header of a record of `kind` holding `payload` (at most 65,535 bytes: a
    /// fragment fits in a block).
    pub(crate) fn of(kind: RecordType, payload: &[u8]) -> Header {
        Header {
            crc: record_crc(kind as u8, payload),
            length: payload.len(),
            kind: kind as u8,
        }
    }

    /// Reads the header at the start of `bytes`, which holds at least [`HEADER_SIZE`] bytes.
    pub(crate) fn decode(bytes: &[u8]) -> Header {
        Header {
            crc: unmask_crc(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            length: usize::from(u16::from_le_bytes([bytes[4], bytes[5]])),
            kind: bytes[6],
        }
    }

    /// The stored form: the checksum masked, then the length and the type.
    pub(crate) fn encode(&self) -> [u8; HEADER_SIZE] {
        debug_assert!(self.length <= usize::from(u16::MAX));
        let mut out = [0u8; HEADER_SIZE];
        out[..4].copy_from_slice(&mask_crc(self.crc).to_le_bytes());
        out[4..6].copy_from_slice(&(self.length as u16).to_le_bytes());
        out[6] = self.kind;
        out
    }

    /// Zeros where a header should be: space a writer preallocated, not a record.
    pub(crate) fn is_preallocated(&self) -> bool {
        self.kind == RecordType::Zero as u8 && self.length == 0
    }

    /// Whether `payload` (of any length) is what the checksum was computed over.
    pub(crate) fn matches(&self, payload: &[u8]) -> bool {
        record_crc(self.kind, payload) == self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_round_trips_and_changes_the_crc() {
        for crc in [0, 1, 0xdead_beef, u32::MAX, crc32c::crc32c(b"foo")] {
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
            assert_ne!(mask_crc(crc), crc);
            assert_ne!(mask_crc(mask_crc(crc)), mask_crc(crc));
        }
    }

    #[test]
    fn crc_covers_type_then_payload() {
        // LevelDB's crc32c test vector: the CRC of "a" extended by "bc" is that of "abc".
        assert_eq!(record_crc(b'a', b"bc"), crc32c::crc32c(b"abc"));
        assert_eq!(RecordType::from_byte(4), Some(RecordType::Last));
        assert_eq!(RecordType::from_byte(5), None);
    }

    #[test]
    fn a_header_round_trips_and_checks_its_payload() {
        let header = Header::of(RecordType::First, b"payload");
        let stored = header.encode();
        assert_eq!(&stored[4..], &[7, 0, RecordType::First as u8]);
        assert_eq!(Header::decode(&stored), header);
        assert!(header.matches(b"payload"));
        assert!(!header.matches(b"payloaD"));
        assert!(!header.is_preallocated());
        assert!(Header::decode(&[0; HEADER_SIZE]).is_preallocated());
    }
}
