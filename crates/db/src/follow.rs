//! Following a live database: each write batch another process commits, once and in order,
//! read from the tails of its write-ahead logs (a change feed).
//!
//! A writer (LevelDB, or [`WritableDb`](crate::WritableDb)) appends each batch to its log as
//! one logical record before it acknowledges the write. A [`Follower`] reads the log from the
//! end of the last record it returned, reading only bytes added since, and returns every
//! complete record as a [`Change`]. What lies past the last complete record — a record the
//! writer is still writing, or reserved zeros — is not read as anything until it is complete.
//! When a newer log appears the writer is done with the current one: its rest is read as
//! LevelDB reads a log ([`LogReader`]) and the follower moves on.
//!
//! A follower writes, locks, creates and deletes nothing in the directory. It opens each new
//! log as soon as it sees it (it lists the directory at most once a poll interval) and holds
//! it open, so a log the writer deletes meanwhile (after a flush) stays readable to it.
//! A batch it needs that is in no log any more (the writer flushed it into a table and
//! deleted the log before the follower got there) is reported as a
//! [`FollowEvent::Gap`]; a consistent way on is a snapshot ([`Db::open`](crate::Db::open),
//! then [`Db::snapshot`](crate::Db::snapshot)) and a new follower from the sequence after it.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::dbformat::ValueType;
use crate::filename::{FileType, log_file_name, parse_file_name};
use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, RecordType, record_crc, unmask_crc};
use crate::log_reader::LogReader;
use crate::storage::open_regular;
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// How long [`Follower::next_event`] waits between looks at the log by default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The most bytes read from a log in one look: a record larger than this is read over
/// several looks.
const READ_CHUNK: u64 = 16 << 20;

/// One operation of a committed write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeOp {
    /// `key` was set to `value`.
    Put {
        /// The user key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `key` was deleted.
    Delete {
        /// The user key.
        key: Vec<u8>,
    },
}

/// A committed write batch: its operations in order, the first at `sequence`, each next one
/// at the sequence after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The sequence number of the first operation.
    pub sequence: u64,
    /// The operations, in the order the batch holds them.
    pub ops: Vec<ChangeOp>,
}

/// What a [`Follower`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowEvent {
    /// A committed write batch.
    Batch(Change),
    /// Sequences `first..=last` are in no log any more: the writer moved them into tables
    /// and deleted their logs. The batches after them follow.
    Gap {
        /// The first sequence missing.
        first: u64,
        /// The last sequence missing.
        last: u64,
    },
}

/// The log being read: its file and how far it has been read.
struct OpenLog {
    number: u64,
    path: PathBuf,
    file: File,
    /// The file offset just past the last complete logical record taken from the log.
    pos: u64,
    /// Bytes of the file from `pos` on, read but not yet taken.
    pending: Vec<u8>,
    /// Every byte the file held at the last look has been read.
    read_all: bool,
}

/// What scanning the pending bytes of a log found.
enum Scan {
    /// A logical record, and the offset just past it.
    Record(Vec<u8>, u64),
    /// Nothing complete yet: the physical record at `at` is not whole (or not written).
    Incomplete {
        /// Where the first physical record not yet whole starts.
        at: u64,
    },
}

/// A change feed of a database directory. Make one with [`Db::follow`](crate::Db::follow)
/// or [`Follower::new`]; iterate it (blocking, polling the log) or call
/// [`try_next_event`](Self::try_next_event) (never blocking).
pub struct Follower {
    dir: PathBuf,
    /// The sequence of the next operation to return.
    next_sequence: u64,
    /// The newest sequence known to be committed when the follower started: a start at or
    /// before it that no log holds is a gap.
    committed: u64,
    log: Option<OpenLog>,
    /// Logs newer than the one being read, opened as soon as a listing found them, so that
    /// a writer that deletes one after a flush does not take it away: oldest first.
    queued: VecDeque<OpenLog>,
    /// The number of the newest log opened (a listing looks for larger numbers).
    last_log: u64,
    /// When the directory was last listed.
    listed: Option<Instant>,
    ready: VecDeque<FollowEvent>,
    poll: Duration,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("dir", &self.dir)
            .field("next_sequence", &self.next_sequence)
            .field("log", &self.log.as_ref().map(|l| (l.number, l.pos)))
            .finish_non_exhaustive()
    }
}

impl Follower {
    /// A follower of the database in `dir` that returns the operations from sequence `from`
    /// on. `committed` is the newest sequence the caller knows to be committed (a read-only
    /// open's [`snapshot`](crate::Db::snapshot)): a start at or before it that no log holds
    /// any more is reported as a gap.
    pub fn new(dir: impl Into<PathBuf>, from: u64, committed: u64) -> Follower {
        Follower {
            dir: dir.into(),
            next_sequence: from.max(1),
            committed,
            log: None,
            queued: VecDeque::new(),
            last_log: 0,
            listed: None,
            ready: VecDeque::new(),
            poll: DEFAULT_POLL_INTERVAL,
        }
    }

    /// Waits `interval` between looks at the log in [`next_event`](Self::next_event).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Follower {
        self.poll = interval;
        self
    }

    /// The sequence of the next operation the follower will return.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// The next event, waiting for the writer as long as it takes.
    ///
    /// # Errors
    /// As [`try_next_event`](Self::try_next_event).
    pub fn next_event(&mut self) -> Result<FollowEvent> {
        loop {
            if let Some(event) = self.try_next_event()? {
                return Ok(event);
            }
            std::thread::sleep(self.poll);
        }
    }

    /// The next event if the writer has committed one the follower has not returned yet;
    /// `None` otherwise. Reads only what was added to the log since the last call.
    ///
    /// # Errors
    /// The directory or a log cannot be read; a log's record is not a write batch.
    pub fn try_next_event(&mut self) -> Result<Option<FollowEvent>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            // Every poll interval, new logs are opened while the writer still has them.
            if self.listed.is_none_or(|at| at.elapsed() >= self.poll) {
                self.open_new_logs()?;
            }
            if self.log.is_none() && !self.open_next_log()? {
                self.gap_before_any_log();
                return Ok(self.ready.pop_front());
            }
            let log = self.log.as_mut().expect("a log is open");
            match scan_more(log)? {
                Scan::Record(data, end) => {
                    self.take_record(&data, end)?;
                }
                Scan::Incomplete { .. } => {
                    // A newer log means the writer is done with this one: read its rest as
                    // LevelDB reads a log, then move on.
                    self.open_new_logs()?;
                    if self.queued.is_empty() {
                        // Every log read to its end: what was committed at the start and
                        // not found is in tables now.
                        if self.log.as_ref().is_some_and(|log| log.read_all) {
                            self.gap_before_any_log();
                        }
                        return Ok(self.ready.pop_front());
                    }
                    self.finish_log()?;
                }
            }
        }
    }

    /// Takes the logical record ending at `end` of the current log.
    fn take_record(&mut self, data: &[u8], end: u64) -> Result<()> {
        let log = self.log.as_mut().expect("a log is open");
        let consumed = usize::try_from(end - log.pos).expect("within the pending bytes");
        log.pending.drain(..consumed);
        log.pos = end;
        let path = log.path.clone();
        self.take_batch(data, &path, end)
    }

    /// Turns a record into a batch event, skipping what was returned already.
    fn take_batch(&mut self, data: &[u8], path: &Path, offset: u64) -> Result<()> {
        let batch = WriteBatch::new(data).map_err(|reason| corrupt(path, offset, reason))?;
        let first = batch.sequence();
        let count = u64::from(batch.count());
        let Some(last) = first.checked_add(count).and_then(|end| end.checked_sub(1)) else {
            return Ok(()); // an empty batch holds no operation
        };
        if last < self.next_sequence {
            return Ok(());
        }
        if first > self.next_sequence {
            self.ready.push_back(FollowEvent::Gap {
                first: self.next_sequence,
                last: first - 1,
            });
        }
        let skip = self.next_sequence.saturating_sub(first);
        let mut ops = Vec::new();
        let mut index = 0u64;
        batch
            .for_each(|op| {
                if index >= skip {
                    ops.push(match op.value_type {
                        ValueType::Value => ChangeOp::Put {
                            key: op.key.to_vec(),
                            value: op.value.to_vec(),
                        },
                        ValueType::Deletion => ChangeOp::Delete {
                            key: op.key.to_vec(),
                        },
                    });
                }
                index += 1;
            })
            .map_err(|reason| corrupt(path, offset, reason))?;
        self.ready.push_back(FollowEvent::Batch(Change {
            sequence: first + skip,
            ops,
        }));
        self.next_sequence = last + 1;
        Ok(())
    }

    /// With every log read to its end: sequences up to what was committed at the start that
    /// no log held are a gap.
    fn gap_before_any_log(&mut self) {
        if self.next_sequence <= self.committed {
            self.ready.push_back(FollowEvent::Gap {
                first: self.next_sequence,
                last: self.committed,
            });
            self.next_sequence = self.committed + 1;
        }
    }

    /// Opens the directory's logs newer than any opened so far, oldest first, and queues
    /// them. A log deleted between the listing and the open is passed over (its batches are
    /// in tables now).
    fn open_new_logs(&mut self) -> Result<()> {
        self.listed = Some(Instant::now());
        let entries = std::fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, e))?;
        let mut numbers = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.dir, e))?;
            if let Some(FileType::Log(n)) = entry.file_name().to_str().and_then(parse_file_name)
                && n > self.last_log
            {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        for number in numbers {
            let path = self.dir.join(log_file_name(number));
            match open_regular(&path) {
                Ok((file, _)) => self.queued.push_back(OpenLog {
                    number,
                    path,
                    file,
                    pos: 0,
                    pending: Vec::new(),
                    read_all: false,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error(&path, e)),
            }
            self.last_log = number;
        }
        Ok(())
    }

    /// Takes up the oldest queued log; false if there is none.
    fn open_next_log(&mut self) -> Result<bool> {
        if self.queued.is_empty() {
            self.open_new_logs()?;
        }
        self.log = self.queued.pop_front();
        Ok(self.log.is_some())
    }

    /// Reads the rest of a log the writer is done with, as LevelDB's reader reads a log:
    /// a torn tail ends it, a damaged block is skipped.
    fn finish_log(&mut self) -> Result<()> {
        let mut log = self.log.take().expect("a log is open");
        let block_start = log.pos - log.pos % BLOCK_SIZE as u64;
        let mut rest = Vec::new();
        log.file
            .seek(SeekFrom::Start(block_start))
            .and_then(|_| log.file.read_to_end(&mut rest))
            .map_err(|e| io_error(&log.path, e))?;
        let mut records = Vec::new();
        for record in LogReader::new(&rest, true) {
            let offset = block_start + record.offset;
            if offset >= log.pos {
                records.push((record.data, offset));
            }
        }
        for (data, offset) in records {
            self.take_batch(&data, &log.path, offset)?;
        }
        Ok(())
    }
}

impl Iterator for Follower {
    type Item = Result<FollowEvent>;

    /// The next event, waiting for the writer (never `None`).
    fn next(&mut self) -> Option<Result<FollowEvent>> {
        Some(self.next_event())
    }
}

/// Reads what was added to `log` and scans its pending bytes for the next complete logical
/// record. Bytes from the first physical record not yet whole on are dropped after the scan
/// and read again at the next look: a log written through a memory map holds zeros there
/// until the writer's copy reaches them.
fn scan_more(log: &mut OpenLog) -> Result<Scan> {
    let found = scan(&log.pending, log.pos);
    if let Scan::Record(..) = found {
        return Ok(found);
    }
    let have = log.pos + log.pending.len() as u64;
    let size = log
        .file
        .metadata()
        .map_err(|e| io_error(&log.path, e))?
        .len();
    let want = size.saturating_sub(have).min(READ_CHUNK);
    let start = log.pending.len();
    log.pending.resize(start + want as usize, 0);
    let read = log
        .file
        .seek(SeekFrom::Start(have))
        .and_then(|_| read_up_to(&mut log.file, &mut log.pending[start..]))
        .map_err(|e| io_error(&log.path, e))?;
    log.pending.truncate(start + read);
    log.read_all = have + read as u64 >= size;
    let found = scan(&log.pending, log.pos);
    if let Scan::Incomplete { at } = found {
        log.pending
            .truncate(usize::try_from(at - log.pos).expect("within the pending bytes"));
    }
    Ok(found)
}

/// Reads into `buf` until it is full or the file ends; the bytes read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
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
        let header = &bytes[(at - start) as usize..][..HEADER_SIZE];
        let length = u64::from(u16::from_le_bytes([header[4], header[5]]));
        let kind = header[6];
        if HEADER_SIZE as u64 + length > left || end - at - (HEADER_SIZE as u64) < length {
            return Scan::Incomplete { at };
        }
        let payload_at = (at - start) as usize + HEADER_SIZE;
        let payload = &bytes[payload_at..payload_at + length as usize];
        let stored = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        if kind == RecordType::Zero as u8 || unmask_crc(stored) != record_crc(kind, payload) {
            return Scan::Incomplete { at };
        }
        let record_start = at;
        at += HEADER_SIZE as u64 + length;
        match (RecordType::from_byte(kind), record.as_mut()) {
            (Some(RecordType::Full), None) => return Scan::Record(payload.to_vec(), at),
            (Some(RecordType::First), None) => record = Some(payload.to_vec()),
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

fn corrupt(path: &Path, offset: u64, what: &'static str) -> Error {
    Error::Corruption {
        file: path
            .file_name()
            .map_or_else(|| path.to_path_buf(), PathBuf::from),
        what: what.into(),
        offset,
    }
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl crate::Db {
    /// A change feed of this database's directory: the operations from sequence `from` on
    /// or, with `None`, those committed after this handle's [`snapshot`](Self::snapshot).
    /// The handle's snapshot and a feed from the sequence after it are consistent: together
    /// they are the database at every sequence the writer commits.
    pub fn follow(&self, from: Option<u64>) -> Follower {
        let committed = self.snapshot();
        Follower::new(
            self.path(),
            from.unwrap_or(committed.saturating_add(1)),
            committed,
        )
    }
}
