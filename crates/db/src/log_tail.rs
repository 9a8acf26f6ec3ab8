//! Reading the tail of a log (a write-ahead log or a MANIFEST) that a writer is still
//! appending to: each complete, checksummed logical record once, from the end of the last
//! one taken, reading only the bytes added since the last look.
//!
//! What lies past the last complete record — a record the writer is still writing, or
//! reserved zeros — is not read as anything until it is complete. Once the writer is done
//! with the log (a newer one exists), [`LogTail::rest`] reads what is left as LevelDB reads
//! a log ([`LogReader`]): a torn tail ends it, a damaged block is skipped.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, Header, RecordType};
use crate::log_reader::LogReader;
use crate::storage::{Storage, TailFile};
use crate::{Error, Result};

/// The most bytes read from a log in one look: a record larger than this is read over
/// several looks.
const READ_CHUNK: u64 = 16 << 20;

/// A log being read from its tail: its file and how far it has been read.
pub(crate) struct LogTail {
    pub(crate) number: u64,
    pub(crate) path: PathBuf,
    file: Box<dyn TailFile>,
    /// The file offset just past the last complete logical record taken from the log.
    pub(crate) pos: u64,
    /// Bytes of the file from `pos` on, read but not yet taken.
    pending: Vec<u8>,
    /// Every byte the file held at the last look has been read.
    pub(crate) read_all: bool,
}

/// What scanning the pending bytes of a log found.
enum Scan {
    /// A logical record, and the offset just past it.
    Record(Vec<u8>, u64),
    /// Nothing complete yet: the physical record at `at` is not whole (or not written).
    Incomplete { at: u64 },
}

impl LogTail {
    /// Opens the log `number`, the file `name` of `storage` ([`Storage::open_tail`]; a local
    /// one reads only a regular file), to read it from `pos`, the end of a logical record (0:
    /// its start). `Ok(None)` if there is no such file.
    ///
    /// # Errors
    /// The file cannot be opened (other than not existing), or is not a regular file.
    pub(crate) fn open(
        storage: &dyn Storage,
        number: u64,
        name: &str,
        pos: u64,
    ) -> Result<Option<LogTail>> {
        let path = storage.path().join(name);
        match storage.open_tail(name) {
            Ok(file) => Ok(Some(LogTail {
                number,
                path,
                file,
                pos,
                pending: Vec::new(),
                read_all: false,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    /// The next complete logical record and the offset just past it, reading what was
    /// added to the file since the last look; `None` if there is none yet.
    ///
    /// # Errors
    /// Reading the file fails.
    pub(crate) fn next_record(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let found = match scan(&self.pending, self.pos) {
            Scan::Record(data, end) => Scan::Record(data, end),
            Scan::Incomplete { .. } => {
                self.read_more()?;
                scan(&self.pending, self.pos)
            }
        };
        match found {
            Scan::Record(data, end) => {
                let consumed = usize::try_from(end - self.pos).expect("within the pending bytes");
                self.pending.drain(..consumed);
                self.pos = end;
                Ok(Some((data, end)))
            }
            Scan::Incomplete { at } => {
                // Bytes from the first physical record not yet whole on are read again at
                // the next look: a log written through a memory map holds zeros there
                // until the writer's copy reaches them.
                self.pending
                    .truncate(usize::try_from(at - self.pos).expect("within the pending bytes"));
                Ok(None)
            }
        }
    }

    /// Whether the file holds a complete logical record not taken yet (reading what was
    /// added since the last look).
    ///
    /// # Errors
    /// Reading the file fails.
    pub(crate) fn has_record(&mut self) -> Result<bool> {
        if let Scan::Record(..) = scan(&self.pending, self.pos) {
            return Ok(true);
        }
        self.read_more()?;
        let found = scan(&self.pending, self.pos);
        if let Scan::Incomplete { at } = found {
            self.pending
                .truncate(usize::try_from(at - self.pos).expect("within the pending bytes"));
        }
        Ok(matches!(found, Scan::Record(..)))
    }

    /// Reads up to [`READ_CHUNK`] bytes added to the file past the pending ones.
    fn read_more(&mut self) -> Result<()> {
        let have = self.pos + self.pending.len() as u64;
        let size = self.file.size().map_err(|e| io_error(&self.path, e))?;
        let want = size.saturating_sub(have).min(READ_CHUNK);
        let start = self.pending.len();
        // `want` is at most READ_CHUNK: no larger buffer is ever made.
        self.pending.resize(start + want as usize, 0);
        let read = match self
            .file
            .seek(SeekFrom::Start(have))
            .and_then(|_| read_up_to(&mut self.file, &mut self.pending[start..]))
        {
            Ok(read) => read,
            Err(e) => {
                // Nothing of this look is kept: the next one reads the same bytes again.
                self.pending.truncate(start);
                return Err(io_error(&self.path, e));
            }
        };
        self.pending.truncate(start + read);
        self.read_all = have + read as u64 >= size;
        Ok(())
    }

    /// The records of the rest of a log the writer is done with, each with its offset, read
    /// as LevelDB's reader reads a log: a torn tail ends it, a damaged block is skipped.
    /// The tail moves past them.
    ///
    /// # Errors
    /// Reading the file fails.
    pub(crate) fn rest(&mut self) -> Result<Vec<(Vec<u8>, u64)>> {
        let records = self.read_rest()?;
        if let Some(last) = records.last() {
            self.pos = self.pos.max(last.end);
        }
        self.pending.clear();
        Ok(records.into_iter().map(|r| (r.data, r.offset)).collect())
    }

    /// The records from `pos` on, read as [`rest`](Self::rest) reads them, without moving
    /// past them: [`skip_to`](Self::skip_to) takes them.
    ///
    /// # Errors
    /// Reading the file fails.
    pub(crate) fn read_rest(&mut self) -> Result<Vec<RestRecord>> {
        let block_start = self.pos - self.pos % BLOCK_SIZE as u64;
        self.file
            .seek(SeekFrom::Start(block_start))
            .map_err(|e| io_error(&self.path, e))?;
        let mut records = Vec::new();
        let mut reader = LogReader::from_reader(&mut self.file, true);
        while let Some(record) = reader.read_record() {
            let offset = block_start + record.offset;
            if offset >= self.pos {
                records.push(RestRecord {
                    data: record.data,
                    offset,
                    end: block_start + reader.last_record_end(),
                });
            }
        }
        if let Some(e) = reader.take_error() {
            return Err(io_error(&self.path, e));
        }
        Ok(records)
    }

    /// Moves the tail to `end`, the end of a record [`read_rest`](Self::read_rest) returned:
    /// what lies before it is taken.
    pub(crate) fn skip_to(&mut self, end: u64) {
        if end > self.pos {
            self.pos = end;
            self.pending.clear();
        }
    }
}

/// A record read by [`LogTail::read_rest`].
pub(crate) struct RestRecord {
    pub(crate) data: Vec<u8>,
    /// Where it begins in the file.
    pub(crate) offset: u64,
    /// The offset just past it.
    pub(crate) end: u64,
}

/// Reads into `buf` until it is full or the file ends; the bytes read.
fn read_up_to(file: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Scans `bytes` (the log from offset `start`, the end of a logical record) for the next
/// complete logical record. Anything that is not yet a whole, checksummed record — a
/// header or payload cut by the end of what was read, zeros, a checksum that does not match
/// yet — is incomplete: the writer may still be writing it.
fn scan(bytes: &[u8], start: u64) -> Scan {
    let block = BLOCK_SIZE as u64;
    let end = start + bytes.len() as u64;
    let mut at = start;
    let mut record: Option<Vec<u8>> = None;
    loop {
        let left = block - at % block;
        if left < HEADER_SIZE as u64 {
            if at + left > end {
                return Scan::Incomplete { at };
            }
            at += left; // the block's trailer
            continue;
        }
        if end - at < HEADER_SIZE as u64 {
            return Scan::Incomplete { at };
        }
        let header = Header::decode(&bytes[(at - start) as usize..]);
        let (length, kind) = (header.length as u64, header.kind);
        if HEADER_SIZE as u64 + length > left || end - at - (HEADER_SIZE as u64) < length {
            return Scan::Incomplete { at };
        }
        let payload_at = (at - start) as usize + HEADER_SIZE;
        let payload = &bytes[payload_at..payload_at + length as usize];
        if kind == RecordType::Zero as u8 || !header.matches(payload) {
            return Scan::Incomplete { at };
        }
        let record_start = at;
        at += HEADER_SIZE as u64 + length;
        // Writers before 2011 could leave an empty FIRST at a block's end before a FULL or
        // a FIRST in the next block: LevelDB's reader drops it and reads on, and so do we.
        let empty_first = record.as_ref().is_some_and(Vec::is_empty);
        match (RecordType::from_byte(kind), record.as_mut()) {
            (Some(RecordType::Full), None) => return Scan::Record(payload.to_vec(), at),
            (Some(RecordType::Full), Some(_)) if empty_first => {
                return Scan::Record(payload.to_vec(), at);
            }
            (Some(RecordType::First), None) => record = Some(payload.to_vec()),
            (Some(RecordType::First), Some(_)) if empty_first => record = Some(payload.to_vec()),
            (Some(RecordType::Middle), Some(data)) => data.extend_from_slice(payload),
            (Some(RecordType::Last), Some(data)) => {
                data.extend_from_slice(payload);
                return Scan::Record(std::mem::take(data), at);
            }
            // Out of place (a fragment without its first, a first inside a record): not
            // read here; once the writer is done with the log, LevelDB's rules read it.
            _ => return Scan::Incomplete { at: record_start },
        }
    }
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
