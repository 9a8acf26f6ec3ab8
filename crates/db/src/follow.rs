//! Following a live database: each write batch another process commits, once and in order,
//! read from the tails of its write-ahead logs (a change feed).
//!
//! A writer (LevelDB, or [`WritableDb`](crate::WritableDb)) appends each batch to its log as
//! one logical record before it acknowledges the write. A [`Follower`] reads the log from the
//! end of the last record it returned, reading only bytes added since, and returns every
//! complete record as a [`Change`]. What lies past the last complete record — a record the
//! writer is still writing, or reserved zeros — is not read as anything until it is complete,
//! unless the open counted batches past it as committed: LevelDB's reader, as the open's,
//! then reads on past a damaged record, and so does the follower.
//! When a newer log appears the writer is done with the current one: its rest is read as
//! LevelDB reads a log ([`LogReader`]) and the follower moves on.
//!
//! A follower writes, locks, creates and deletes nothing in the directory. It opens each new
//! log as soon as it sees it (it lists the directory at most once a poll interval) and holds
//! it open, so a log the writer deletes meanwhile (after a flush) stays readable to it.
//!
//! Waiting for the writer, a follower sleeps on a watch of the directory where the system
//! has one (inotify on Linux), so that it looks at the log as soon as the writer appends to
//! it; the poll interval bounds each wait, and is the only pace where no watch can be set
//! up or [`poll_only`](Follower::poll_only) asks for none.
//! A batch it needs that is in no log any more (the writer flushed it into a table and
//! deleted the log before the follower got there) is reported as a
//! [`FollowEvent::Gap`]; a consistent way on is a snapshot ([`Db::open`](crate::Db::open),
//! then [`Db::snapshot`](crate::Db::snapshot)) and a new follower from the sequence after it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dbformat::ValueType;
use crate::dir_watch::{Waiter, Wake};
use crate::filename::{FileType, log_file_name, parse_file_name};
use crate::log_tail::{LogTail, RestRecord};
use crate::storage::{LocalDir, Storage};
use crate::write_batch::{BatchOp, WriteBatch};
use crate::{Error, Result};

/// How long [`Follower::next_event`] waits between looks at the log by default (with a
/// watch of the directory, the longest it waits without an event).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(10);

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

impl From<BatchOp<'_>> for ChangeOp {
    /// The operation of a write batch as the change feed hands it out.
    fn from(op: BatchOp<'_>) -> ChangeOp {
        match op.value_type {
            ValueType::Value => ChangeOp::Put {
                key: op.key.to_vec(),
                value: op.value.to_vec(),
            },
            ValueType::Deletion => ChangeOp::Delete {
                key: op.key.to_vec(),
            },
        }
    }
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

/// A change feed of a database directory. Make one with [`Db::follow`](crate::Db::follow)
/// or [`Follower::new`]; iterate it (blocking, polling the log) or call
/// [`try_next_event`](Self::try_next_event) (never blocking).
pub struct Follower {
    dir: PathBuf,
    /// The directory's files (a [`Db`](crate::Db)'s, through its file system).
    storage: Arc<dyn Storage>,
    /// The sequence of the next operation to return.
    next_sequence: u64,
    /// The newest sequence known to be committed when the follower started: a start at or
    /// before it that no log holds is a gap.
    committed: u64,
    log: Option<LogTail>,
    /// Logs newer than the one being read, opened as soon as a listing found them, so that
    /// a writer that deletes one after a flush does not take it away: oldest first.
    queued: VecDeque<LogTail>,
    /// The number of the newest log opened (a listing looks for larger numbers).
    last_log: u64,
    /// Records read from a log by LevelDB's rules and not yet taken, oldest first, and the
    /// log's path: each is taken once, a record that is not a write batch included.
    by_rules: VecDeque<RestRecord>,
    by_rules_path: PathBuf,
    /// When the directory was last listed.
    listed: Option<Instant>,
    ready: VecDeque<FollowEvent>,
    poll: Duration,
    waiter: Waiter,
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
        let dir = dir.into();
        Follower::on(Arc::new(LocalDir::new(&dir)), from, committed)
    }

    /// [`new`](Self::new), reading the files of `storage`.
    fn on(storage: Arc<dyn Storage>, from: u64, committed: u64) -> Follower {
        Follower {
            dir: storage.path(),
            storage,
            next_sequence: from.max(1),
            committed,
            log: None,
            queued: VecDeque::new(),
            last_log: 0,
            by_rules: VecDeque::new(),
            by_rules_path: PathBuf::new(),
            listed: None,
            ready: VecDeque::new(),
            poll: DEFAULT_POLL_INTERVAL,
            waiter: Waiter::new(true),
        }
    }

    /// Waits at most `interval` between looks at the log in
    /// [`next_event`](Self::next_event): with a watch of the directory, the longest wait
    /// without an event; without one, the wait between looks.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Follower {
        self.poll = interval;
        self
    }

    /// With `true`, waits for the writer by looking at the log every poll interval only,
    /// without a watch of the directory. By default a follower waits on an inotify watch
    /// of the directory where it can set one up (Linux, below the per-user limit on
    /// watches), and polls elsewhere.
    #[must_use]
    pub fn poll_only(mut self, poll_only: bool) -> Follower {
        self.waiter = Waiter::new(!poll_only);
        self
    }

    /// Whether the follower waits on a watch of the directory: known once it has been asked
    /// for an event by [`next_event`](Self::next_event) or
    /// [`next_event_timeout`](Self::next_event_timeout), which set the watch up before they
    /// first look; false before.
    pub fn watches_directory(&self) -> bool {
        self.waiter.watching()
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
        self.waiter.prepare(&self.dir);
        loop {
            if let Some(event) = self.try_next_event()? {
                return Ok(event);
            }
            self.waiter.wait(&self.dir, self.poll);
        }
    }

    /// The next event, waiting for the writer at most about `timeout`; `None` if it
    /// committed nothing new meanwhile. A caller that must also watch for something else
    /// (a stop flag, a signal) waits in slices of this; a signal that interrupts a wait on
    /// the directory's watch ends it early, so that its handler's flag is seen at once.
    ///
    /// # Errors
    /// As [`try_next_event`](Self::try_next_event).
    pub fn next_event_timeout(&mut self, timeout: Duration) -> Result<Option<FollowEvent>> {
        let start = Instant::now();
        self.waiter.prepare(&self.dir);
        loop {
            if let Some(event) = self.try_next_event()? {
                return Ok(Some(event));
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(None);
            }
            if self.waiter.wait(&self.dir, left.min(self.poll)) == Wake::Interrupted {
                return self.try_next_event();
            }
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
            if let Some(record) = self.by_rules.pop_front() {
                let path = self.by_rules_path.clone();
                self.take_batch(&record.data, &path, record.offset)?;
                continue;
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
            match log.next_record()? {
                Some((data, end)) => {
                    let path = log.path.clone();
                    self.take_batch(&data, &path, end)?;
                }
                None => {
                    // A newer log means the writer is done with this one: read its rest as
                    // LevelDB reads a log, then move on.
                    self.open_new_logs()?;
                    if self.queued.is_empty() {
                        // Every log read to its end: what was committed at the start and
                        // not found is past a damaged record (LevelDB's reader, as the
                        // open that counted it, reads on after it) or in tables now.
                        if self.log.as_ref().is_some_and(|log| log.read_all) {
                            if self.next_sequence <= self.committed && self.read_committed()? {
                                continue;
                            }
                            self.gap_before_any_log();
                        }
                        return Ok(self.ready.pop_front());
                    }
                    self.finish_log()?;
                }
            }
        }
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
        let skip = self.next_sequence.saturating_sub(first);
        let mut ops = Vec::new();
        let mut index = 0u64;
        batch
            .for_each(|op| {
                if index >= skip {
                    ops.push(ChangeOp::from(op));
                }
                index += 1;
            })
            .map_err(|reason| corrupt(path, offset, reason))?;
        // Only a batch read whole is an event: a record that is not one leaves no trace.
        if first > self.next_sequence {
            self.ready.push_back(FollowEvent::Gap {
                first: self.next_sequence,
                last: first - 1,
            });
        }
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
        let names = self.storage.list().map_err(|e| io_error(&self.dir, e))?;
        let mut numbers = Vec::new();
        for name in names {
            if let Some(FileType::Log(n)) = parse_file_name(&name)
                && n > self.last_log
            {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        for number in numbers {
            if let Some(log) = LogTail::open(&*self.storage, number, &log_file_name(number), 0)? {
                self.queued.push_back(log);
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
    /// a torn tail ends it, a damaged block is skipped. Its records are taken one at a
    /// time, before any of the next log's: one that is not a write batch is reported once
    /// and passed, as LevelDB's recovery passes it.
    ///
    /// A read that fails leaves the log where it was, so that the next call reads the same
    /// records again instead of moving on to the next log without them.
    fn finish_log(&mut self) -> Result<()> {
        let log = self.log.as_mut().expect("a log is open");
        let records = log.read_rest()?;
        let log = self.log.take().expect("a log is open");
        self.by_rules = records.into();
        self.by_rules_path = log.path;
        Ok(())
    }

    /// With the newest log read to where its records stop being whole, and sequences up to
    /// `committed` not yet found: reads the log's rest as LevelDB's reader (and so the open
    /// that counted them) reads it, past a damaged block, and takes the records up to the
    /// last that holds a committed sequence. What follows it is left to be read as the
    /// writer completes it. Returns whether it took any.
    fn read_committed(&mut self) -> Result<bool> {
        let log = self.log.as_mut().expect("a log is open");
        let mut records = log.read_rest()?;
        let committed = self.committed;
        let Some(last) = records.iter().rposition(|r| {
            WriteBatch::new(&r.data).is_ok_and(|b| b.count() > 0 && b.sequence() <= committed)
        }) else {
            return Ok(false);
        };
        records.truncate(last + 1);
        log.skip_to(records[last].end);
        self.by_rules = records.into();
        self.by_rules_path = log.path.clone();
        Ok(true)
    }
}

impl Iterator for Follower {
    type Item = Result<FollowEvent>;

    /// The next event, waiting for the writer (never `None`).
    fn next(&mut self) -> Option<Result<FollowEvent>> {
        Some(self.next_event())
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
        let from = from.unwrap_or(committed.saturating_add(1));
        match self.storage() {
            Some(storage) => Follower::on(storage, from, committed),
            None => Follower::new(self.path(), from, committed),
        }
    }
}
