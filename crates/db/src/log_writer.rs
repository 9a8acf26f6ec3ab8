//! Writing logs as LevelDB's `log::Writer` does: the same bytes for the same records.

use std::io::{self, Write};

use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, Header, RecordType};

/// Appends logical records to a log (a write-ahead log or a MANIFEST) in `W`.
///
/// A record that does not fit in the rest of the block is cut into FIRST, MIDDLE and LAST
/// fragments; a block tail shorter than a header is filled with zeros.
#[derive(Debug)]
pub struct LogWriter<W> {
    dest: W,
    block_offset: usize,
}

impl<W: Write> LogWriter<W> {
    /// A writer at the start of an empty log.
    pub fn new(dest: W) -> Self {
        LogWriter {
            dest,
            block_offset: 0,
        }
    }

    /// A writer appending to a log that already holds `len` bytes.
    pub fn with_offset(dest: W, len: u64) -> Self {
        LogWriter {
            dest,
            // The remainder is below BLOCK_SIZE, so it fits in usize.
            block_offset: (len % BLOCK_SIZE as u64) as usize,
        }
    }

    /// Appends one logical record.
    ///
    /// # Errors
    /// Whatever writing to `W` reports; the log may then end with a partial record, which
    /// readers treat as a torn tail.
    pub fn add_record(&mut self, record: &[u8]) -> io::Result<()> {
        let mut left = record;
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                // Too small for a header: pad with zeros and switch to a new block.
                self.dest.write_all(&[0u8; HEADER_SIZE][..leftover])?;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let fragment = left.len().min(avail);
            let end = fragment == left.len();
            let kind = match (begin, end) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, true) => RecordType::Last,
                (false, false) => RecordType::Middle,
            };
            self.emit(kind, &left[..fragment])?;
            left = &left[fragment..];
            begin = false;
            if left.is_empty() {
                return Ok(());
            }
        }
    }

    fn emit(&mut self, kind: RecordType, payload: &[u8]) -> io::Result<()> {
        // Invariant: a fragment fits in a block after its header, so its length fits in u16.
        u16::try_from(payload.len()).map_err(io::Error::other)?;
        self.dest.write_all(&Header::of(kind, payload).encode())?;
        self.dest.write_all(payload)?;
        self.block_offset += HEADER_SIZE + payload.len();
        Ok(())
    }

    /// Flushes `W`.
    ///
    /// # Errors
    /// Whatever `W` reports.
    pub fn flush(&mut self) -> io::Result<()> {
        self.dest.flush()
    }

    /// The destination.
    pub fn get_ref(&self) -> &W {
        &self.dest
    }

    /// The destination, mutably (to sync it).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.dest
    }

    /// Gives back the destination.
    pub fn into_inner(self) -> W {
        self.dest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_format::mask_crc;

    #[test]
    fn bytes_are_leveldbs() {
        let mut w = LogWriter::new(Vec::new());
        w.add_record(b"foo").unwrap();
        let bytes = w.into_inner();
        assert_eq!(bytes.len(), HEADER_SIZE + 3);
        assert_eq!(&bytes[4..], b"\x03\x00\x01foo");
        let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        assert_eq!(crc, mask_crc(crc32c::crc32c(b"\x01foo")));
    }

    #[test]
    fn block_tails_are_padded() {
        let mut w = LogWriter::new(Vec::new());
        // Leave exactly 6 bytes in the first block.
        w.add_record(&vec![b'a'; BLOCK_SIZE - HEADER_SIZE - 6])
            .unwrap();
        w.add_record(b"b").unwrap();
        let bytes = w.into_inner();
        assert_eq!(&bytes[BLOCK_SIZE - 6..BLOCK_SIZE], &[0; 6]);
        assert_eq!(bytes[BLOCK_SIZE + 6], RecordType::Full as u8);
        assert_eq!(bytes.len(), BLOCK_SIZE + HEADER_SIZE + 1);
        // Exactly a header's room left: an empty FIRST there, then a LAST.
        let mut w = LogWriter::new(Vec::new());
        w.add_record(&vec![b'a'; BLOCK_SIZE - 2 * HEADER_SIZE])
            .unwrap();
        w.add_record(b"cd").unwrap();
        let bytes = w.into_inner();
        assert_eq!(bytes[BLOCK_SIZE - 1], RecordType::First as u8);
        assert_eq!(bytes[BLOCK_SIZE + 6], RecordType::Last as u8);
    }

    #[test]
    fn appending_continues_the_block() {
        let mut w = LogWriter::new(Vec::new());
        w.add_record(b"one").unwrap();
        let first = w.into_inner();
        let len = first.len() as u64;
        let mut w = LogWriter::with_offset(first, len);
        w.add_record(&vec![7; BLOCK_SIZE]).unwrap();
        let mut whole = LogWriter::new(Vec::new());
        whole.add_record(b"one").unwrap();
        whole.add_record(&vec![7; BLOCK_SIZE]).unwrap();
        assert_eq!(w.into_inner(), whole.into_inner());
    }
}
