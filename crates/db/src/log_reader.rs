//! Reading logs as LevelDB's `log::Reader` does, torn tails and bad records included.
//!
//! The reader reads a log a block at a time, from a file or from memory, and yields logical
//! records: it holds one block and the record it is joining, never the whole log. What it cannot read it skips and reports as [`Dropped`], with
//! LevelDB's rules:
//!
//! - A truncated header or a truncated payload in the last, partial block is a torn tail:
//!   the writer died mid-record. It ends the log without a report, as does the end of the
//!   log inside a fragmented record (its fragments are dropped silently);
//!   [`LogReader::torn_tail`] says where it begins.
//! - A zero type with a zero length is preallocated space: the rest of the block is skipped
//!   without a report.
//! - A checksum mismatch drops the rest of the block (the length may be what is corrupt);
//!   a length running past a block that is not the last drops the block; an unknown type,
//!   a MIDDLE or LAST without a FIRST, and a FIRST or FULL interrupting a fragmented record
//!   drop the fragments concerned. Each is reported.
//!
//! - A stored type 5 or 6 is read as LevelDB reads it: LevelDB's reader returns its
//!   internal sentinels for end of file (5) and bad record (6) through the same value as
//!   record types, so a record of type 5 silently ends the log and one of type 6 is skipped
//!   silently (dropping a fragmented record in progress, reported).
//!
//! The reader never panics and never allocates more than the log holds (a block, and the
//! fragments of the record being joined).

use std::io::Read;

use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, Header, RecordType};

/// The type byte LevelDB's reader takes for its end-of-file sentinel (`kMaxRecordType + 1`).
const LEVELDB_EOF: u8 = 5;
/// The type byte LevelDB's reader takes for its bad-record sentinel (`kMaxRecordType + 2`).
const LEVELDB_BAD_RECORD: u8 = 6;

/// Bytes the reader skipped, and why (LevelDB's `Reporter::Corruption`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// How many bytes were dropped.
    pub bytes: u64,
    /// LevelDB's reason: `checksum mismatch`, `bad record length`, `unknown record type`,
    /// `partial record without end(1)`, `partial record without end(2)`,
    /// `missing start of fragmented record(1)`, `missing start of fragmented record(2)`,
    /// `error in middle of record`.
    pub reason: &'static str,
    /// The offset in the log of the physical record that revealed the problem.
    pub offset: u64,
}

/// One logical record and where its first fragment starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The payload, fragments joined.
    pub data: Vec<u8>,
    /// The offset of the header of its first physical record.
    pub offset: u64,
}

/// What reading one physical record gave: its payload is `block[start..end]`.
enum Physical {
    Record {
        kind: u8,
        start: usize,
        end: usize,
        offset: u64,
    },
    Eof,
    Bad,
}

/// A reader of logical records from a log, read a block at a time from `R` (a file, or a
/// log's bytes in memory: `&[u8]`). Iterate it; [`dropped`](Self::dropped) lists what was
/// skipped so far, [`error`](Self::error) says whether reading stopped at an I/O error.
pub struct LogReader<R> {
    source: R,
    checksum: bool,
    /// The current block; its unread part is `block[pos..len]`.
    block: Box<[u8]>,
    pos: usize,
    len: usize,
    /// The file offset just past the current block.
    end_of_buffer: u64,
    /// The last block has been loaded (LevelDB's `eof_`: a read returned less than a block).
    eof: bool,
    /// The error that ended reading, if one did.
    error: Option<std::io::Error>,
    dropped: Vec<Dropped>,
    done: bool,
    /// The offset just past the last record returned.
    last_record_end: u64,
    /// Where the torn tail that ended the log begins, if one did.
    torn: Option<u64>,
}

impl<R> std::fmt::Debug for LogReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field(
                "offset",
                &(self.end_of_buffer - (self.len - self.pos) as u64),
            )
            .field("eof", &self.eof)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
}

impl<'a> LogReader<&'a [u8]> {
    /// A reader over a whole log in memory. With `checksum` false, as LevelDB's repair reads
    /// logs, the checksums are not checked.
    pub fn new(data: &'a [u8], checksum: bool) -> Self {
        LogReader::from_reader(data, checksum)
    }
}

impl<R: Read> LogReader<R> {
    /// A reader of the log `source` yields, from its start, holding one block of it at a
    /// time (besides the record being joined).
    pub(crate) fn from_reader(source: R, checksum: bool) -> Self {
        LogReader {
            source,
            checksum,
            block: vec![0u8; BLOCK_SIZE].into_boxed_slice(),
            pos: 0,
            len: 0,
            end_of_buffer: 0,
            eof: false,
            error: None,
            dropped: Vec::new(),
            done: false,
            last_record_end: 0,
            torn: None,
        }
    }

    /// What was dropped so far, in order.
    pub fn dropped(&self) -> &[Dropped] {
        &self.dropped
    }

    /// The offset just past the last record returned (0 before the first): bytes after it
    /// are a torn tail, padding, or dropped.
    pub(crate) fn last_record_end(&self) -> u64 {
        self.last_record_end
    }

    /// Where the torn tail that ended the log begins, once reading ended at one: the header
    /// of a physical record cut short by the end of the log, or the first fragment of a
    /// record whose last fragment never came. From there to the end nothing was returned
    /// or reported: a writer dying mid-record leaves such a tail, and so does damage to a
    /// record's length.
    pub fn torn_tail(&self) -> Option<u64> {
        self.torn
    }

    /// The total of [`dropped`](Self::dropped) bytes.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped.iter().map(|d| d.bytes).sum()
    }

    /// The bytes of the log read so far: all of it once [`read_record`](Self::read_record)
    /// returned `None` without an [`error`](Self::error).
    pub fn bytes_read(&self) -> u64 {
        self.end_of_buffer
    }

    /// The I/O error that ended the log early, if one did (LevelDB reports it as a drop of
    /// the block and ends the log; the caller decides).
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    /// Takes the I/O error that ended the log early, if one did.
    pub fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }

    /// Gives back the source.
    pub fn into_inner(self) -> R {
        self.source
    }

    /// The offset of the first unread byte of the current block.
    fn block_position(&self) -> u64 {
        // Invariant: `block[pos..len]` is a suffix of the block ending at `end_of_buffer`.
        self.end_of_buffer - (self.len - self.pos) as u64
    }

    fn report(&mut self, bytes: usize, reason: &'static str, offset: u64) {
        self.dropped.push(Dropped {
            bytes: bytes as u64,
            reason,
            offset,
        });
    }

    /// Loads the next block (less than a block only at the end of the log).
    fn load_block(&mut self) {
        let mut filled = 0;
        while filled < BLOCK_SIZE {
            match self.source.read(&mut self.block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(e);
                    filled = 0;
                    break;
                }
            }
        }
        self.pos = 0;
        self.len = filled;
        self.end_of_buffer += filled as u64;
        if filled < BLOCK_SIZE {
            self.eof = true;
        }
    }

    fn read_physical(&mut self) -> Physical {
        loop {
            let left = self.len - self.pos;
            if left < HEADER_SIZE {
                if self.eof {
                    // A truncated header at the end: the writer died writing it.
                    if left > 0 {
                        self.torn = Some(self.block_position());
                    }
                    self.pos = self.len;
                    return Physical::Eof;
                }
                // Skip the block's padding and load the next block.
                self.load_block();
                continue;
            }
            let offset = self.block_position();
            let header = Header::decode(&self.block[self.pos..]);
            let (length, kind) = (header.length, header.kind);
            // `length` is at most 65535, so the sum cannot overflow.
            if HEADER_SIZE + length > left {
                self.pos = self.len;
                if !self.eof {
                    self.report(left, "bad record length", offset);
                    return Physical::Bad;
                }
                // A payload cut short at the end: the writer died writing it.
                self.torn = Some(offset);
                return Physical::Eof;
            }
            if header.is_preallocated() {
                // Preallocated space: skip the rest of the block without a report.
                self.pos = self.len;
                return Physical::Bad;
            }
            let start = self.pos + HEADER_SIZE;
            let end = start + length;
            if self.checksum && !header.matches(&self.block[start..end]) {
                // The length itself may be corrupt: trusting it could land on a fragment of
                // a real record that looks valid, so drop the rest of the block.
                self.pos = self.len;
                self.report(left, "checksum mismatch", offset);
                return Physical::Bad;
            }
            self.pos = end;
            return Physical::Record {
                kind,
                start,
                end,
                offset,
            };
        }
    }

    /// The next logical record, `None` at the end of the log (or at an I/O error, see
    /// [`error`](Self::error)).
    pub fn read_record(&mut self) -> Option<Record> {
        let record = self.read_logical();
        if record.is_some() {
            self.last_record_end = self.block_position();
        }
        record
    }

    fn read_logical(&mut self) -> Option<Record> {
        if self.done {
            return None;
        }
        let mut scratch: Vec<u8> = Vec::new();
        let mut start = 0u64;
        let mut in_fragmented = false;
        loop {
            match self.read_physical() {
                Physical::Record {
                    kind,
                    start: from,
                    end: to,
                    offset,
                } => {
                    let len = to - from;
                    match RecordType::from_byte(kind) {
                        Some(RecordType::Full) => {
                            // Earlier writers could leave an empty FIRST at a block's end
                            // before a FULL in the next: only a non-empty one is reported.
                            if in_fragmented && !scratch.is_empty() {
                                self.report(scratch.len(), "partial record without end(1)", start);
                            }
                            return Some(Record {
                                data: self.block[from..to].to_vec(),
                                offset,
                            });
                        }
                        Some(RecordType::First) => {
                            if in_fragmented && !scratch.is_empty() {
                                self.report(scratch.len(), "partial record without end(2)", start);
                            }
                            scratch.clear();
                            scratch.extend_from_slice(&self.block[from..to]);
                            start = offset;
                            in_fragmented = true;
                        }
                        Some(RecordType::Middle) => {
                            if in_fragmented {
                                scratch.extend_from_slice(&self.block[from..to]);
                            } else {
                                self.report(len, "missing start of fragmented record(1)", offset);
                            }
                        }
                        Some(RecordType::Last) => {
                            if in_fragmented {
                                scratch.extend_from_slice(&self.block[from..to]);
                                return Some(Record {
                                    data: scratch,
                                    offset: start,
                                });
                            }
                            self.report(len, "missing start of fragmented record(2)", offset);
                        }
                        // LevelDB's reader returns its own sentinels `kEof` (5) and
                        // `kBadRecord` (6) from the same function as record types, so a
                        // stored type 5 ends the log and a type 6 is a bad record, silently.
                        None if kind == LEVELDB_EOF => {
                            self.done = true;
                            return None;
                        }
                        None if kind == LEVELDB_BAD_RECORD => {
                            if in_fragmented {
                                self.report(scratch.len(), "error in middle of record", start);
                                in_fragmented = false;
                                scratch.clear();
                            }
                        }
                        Some(RecordType::Zero) | None => {
                            let bytes = len + if in_fragmented { scratch.len() } else { 0 };
                            self.report(bytes, "unknown record type", offset);
                            in_fragmented = false;
                            scratch.clear();
                        }
                    }
                }
                Physical::Eof => {
                    // A fragmented record cut by the end of the log is dropped silently:
                    // the writer died between its fragments.
                    if in_fragmented {
                        self.torn = Some(start);
                    }
                    self.done = true;
                    return None;
                }
                Physical::Bad => {
                    if in_fragmented {
                        self.report(scratch.len(), "error in middle of record", start);
                        in_fragmented = false;
                        scratch.clear();
                    }
                }
            }
        }
    }
}

impl<R: Read> Iterator for LogReader<R> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.read_record()
    }
}

impl<R: Read> std::iter::FusedIterator for LogReader<R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_format::{mask_crc, record_crc};
    use crate::log_writer::LogWriter;

    fn write(records: &[Vec<u8>]) -> Vec<u8> {
        let mut w = LogWriter::new(Vec::new());
        for r in records {
            w.add_record(r).unwrap();
        }
        w.into_inner()
    }

    fn read(data: &[u8]) -> (Vec<Vec<u8>>, Vec<Dropped>) {
        let mut r = LogReader::new(data, true);
        let records = r.by_ref().map(|r| r.data).collect();
        (records, r.dropped().to_vec())
    }

    fn big(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn header(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut h = mask_crc(record_crc(kind, payload)).to_le_bytes().to_vec();
        h.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        h.push(kind);
        h.extend_from_slice(payload);
        h
    }

    #[test]
    fn round_trips_across_blocks() {
        let records = vec![
            b"".to_vec(),
            b"foo".to_vec(),
            big(BLOCK_SIZE - HEADER_SIZE, 1),
            big(3 * BLOCK_SIZE + 17, 2),
            b"bar".to_vec(),
            big(BLOCK_SIZE - 2 * HEADER_SIZE - 3 - 5, 3),
            b"x".to_vec(),
        ];
        let data = write(&records);
        let (got, dropped) = read(&data);
        assert_eq!(got, records);
        assert!(dropped.is_empty());
    }

    #[test]
    fn every_truncation_is_a_prefix_of_the_records() {
        let records = vec![b"alpha".to_vec(), big(40_000, 7), b"omega".to_vec()];
        let data = write(&records);
        for len in (0..data.len())
            .step_by(97)
            .chain([data.len() - 1, 7, 6, 12])
        {
            let (got, dropped) = read(&data[..len]);
            assert!(records.starts_with(&got), "len {len}");
            // A torn tail inside the last, partial block is silent; a cut exactly at a
            // block boundary leaves whole blocks and nothing to report either.
            assert!(dropped.is_empty(), "len {len}: {dropped:?}");
        }
    }

    #[test]
    fn checksum_mismatch_drops_the_rest_of_the_block() {
        let mut data = write(&[b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
        data[HEADER_SIZE + 3 + HEADER_SIZE] ^= 1; // a payload byte of "two"
        let (got, dropped) = read(&data);
        assert_eq!(got, [b"one".to_vec()]);
        assert_eq!(
            dropped,
            [Dropped {
                bytes: (2 * HEADER_SIZE + 3 + 5) as u64,
                reason: "checksum mismatch",
                offset: (HEADER_SIZE + 3) as u64,
            }]
        );
        // Without checksums (repair's reading) the flipped record is returned.
        let got: Vec<_> = LogReader::new(&data, false).map(|r| r.data).collect();
        assert_eq!(got, [b"one".to_vec(), b"uwo".to_vec(), b"three".to_vec()]);
    }

    #[test]
    fn bad_length_in_a_full_block_is_reported() {
        let mut data = write(&[big(BLOCK_SIZE, 1), b"tail".to_vec()]);
        assert!(data.len() > BLOCK_SIZE);
        // First fragment of the big record: claim more than the block holds.
        data[4] = 0xff;
        data[5] = 0xff;
        let (got, dropped) = read(&data);
        // The LAST fragment in block 2 has no start; "tail" survives.
        assert_eq!(got, [b"tail".to_vec()]);
        assert_eq!(dropped[0].reason, "bad record length");
        assert_eq!(dropped[0].bytes, BLOCK_SIZE as u64);
        assert_eq!(dropped[1].reason, "missing start of fragmented record(2)");
        assert_eq!(dropped[1].bytes, (HEADER_SIZE) as u64);
    }

    #[test]
    fn zero_padding_and_odd_types() {
        // A zero header is skipped silently, with the rest of its block.
        let mut data = vec![0u8; 20];
        data.extend_from_slice(&[0u8; BLOCK_SIZE - 20]);
        data.extend(header(1, b"after"));
        let (got, dropped) = read(&data);
        assert_eq!(got, [b"after".to_vec()]);
        assert!(dropped.is_empty());

        let mut data = header(9, b"weird");
        data.extend(header(3, b"mid"));
        data.extend(header(4, b"last"));
        data.extend(header(2, b"first"));
        data.extend(header(1, b"full"));
        data.extend(header(2, b"f2"));
        data.extend(header(2, b"f3"));
        data.extend(header(4, b"end"));
        data.extend(header(2, b"cut"));
        let (got, dropped) = read(&data);
        assert_eq!(got, [b"full".to_vec(), b"f3end".to_vec()]);
        let reasons: Vec<_> = dropped.iter().map(|d| (d.reason, d.bytes)).collect();
        assert_eq!(
            reasons,
            [
                ("unknown record type", 5),
                ("missing start of fragmented record(1)", 3),
                ("missing start of fragmented record(2)", 4),
                ("partial record without end(1)", 5),
                ("partial record without end(2)", 2),
            ]
        );
        // An unknown type inside a fragmented record drops the fragments too.
        let mut data = header(2, b"ab");
        data.extend(header(7, b"cd"));
        data.extend(header(4, b"ef"));
        let (got, dropped) = read(&data);
        assert!(got.is_empty());
        assert_eq!(dropped[0].bytes, 4);
        assert_eq!(dropped[1].reason, "missing start of fragmented record(2)");
    }

    #[test]
    fn types_5_and_6_are_leveldbs_sentinels() {
        let mut data = header(1, b"one");
        data.extend(header(6, b"skipped silently"));
        data.extend(header(1, b"two"));
        data.extend(header(5, b"the end"));
        data.extend(header(1, b"never read"));
        let (got, dropped) = read(&data);
        assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
        assert!(dropped.is_empty(), "{dropped:?}");
        let mut data = header(2, b"ab");
        data.extend(header(6, b""));
        data.extend(header(1, b"cd"));
        let (got, dropped) = read(&data);
        assert_eq!(got, [b"cd".to_vec()]);
        assert_eq!(dropped[0].reason, "error in middle of record");
    }

    #[test]
    fn error_in_middle_of_record() {
        let mut data = header(2, b"abc");
        let mut bad = header(3, b"def");
        bad[0] ^= 0x80;
        data.extend(bad);
        let (got, dropped) = read(&data);
        assert!(got.is_empty());
        assert_eq!(dropped[0].reason, "checksum mismatch");
        assert_eq!(
            dropped[1],
            Dropped {
                bytes: 3,
                reason: "error in middle of record",
                offset: 0
            }
        );
    }

    #[test]
    fn every_bit_flip_gives_a_subset_never_a_panic() {
        let records = vec![b"k1".to_vec(), big(200, 3), b"k3".to_vec()];
        let data = write(&records);
        for bit in 0..data.len() * 8 {
            let mut d = data.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            let (got, dropped) = read(&d);
            for r in &got {
                assert!(records.contains(r), "bit {bit}: invented {r:?}");
            }
            // Order is kept: what survives is a subsequence of what was written.
            let mut rest = records.iter();
            assert!(got.iter().all(|r| rest.any(|w| w == r)), "bit {bit}");
            if got.len() < records.len() && dropped.is_empty() {
                // Only a torn tail loses records silently: a length now running past the
                // end of the log, which is what a writer dying mid-record leaves. The
                // reader says where it begins.
                let mut r = LogReader::new(&d, true);
                r.by_ref().for_each(drop);
                let torn = r.torn_tail().expect("a torn tail");
                assert!(d.len() as u64 - torn >= HEADER_SIZE as u64, "bit {bit}");
                let headers = [0, HEADER_SIZE + 2, 2 * HEADER_SIZE + 2 + 200];
                assert!(
                    headers.iter().any(|h| bit / 8 == h + 4 || bit / 8 == h + 5),
                    "bit {bit}"
                );
            }
        }
    }
}
