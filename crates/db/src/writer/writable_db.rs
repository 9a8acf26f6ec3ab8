//! A LevelDB database open for writing: puts, deletes and write batches through a queue
//! that commits concurrent writers as one log record (LevelDB's `DBImpl::Write`), reads at
//! any snapshot beside them, and a background thread that flushes and compacts.

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::{Arc, PoisonError, Weak};
use std::thread::JoinHandle;

use crate::db::internal_bounds;
use crate::db_iter::DbIter;
use crate::dbformat::{LookupKey, LookupResult};
use crate::log_format::MAX_WRITE_BATCH_BYTES;
use crate::merger::Merger;
use crate::options::TableInfo;
use crate::version::{SeekStats, Version};
use crate::version_edit::NUM_LEVELS;
use crate::write_batch::{HEADER_SIZE, WriteBatchBuilder};
use crate::writer::background;
use crate::writer::fork;
use crate::writer::options::{WritableOptions, WriteOptions};
use crate::writer::recover;
use crate::writer::shared::{ManualCompaction, Shared};
use crate::writer::write_queue;
use crate::{Error, Result};

/// A LevelDB database open for writing. `Send + Sync`: share it between threads; writes
/// from several threads are committed together.
///
/// Opening locks the directory's `LOCK` file with the lock LevelDB takes, so this process
/// and a LevelDB process never have the database open for writing at once; the lock is
/// released when the handle is dropped. Reads see a consistent snapshot and never wait for
/// a flush or a compaction.
pub struct WritableDb {
    pub(super) shared: Arc<Shared>,
    background: Option<JoinHandle<()>>,
    /// The process that opened it. A child forked from it has a copy of the handle but not
    /// its background thread nor its lock, and shares its log: the copy refuses every
    /// write, and is dropped without touching a file.
    pid: u32,
    /// The forks counted when it was opened ([`fork::forks`]): a cheaper first check than
    /// the process id.
    forks: u64,
    /// The CPUs the process could run on when it was opened, which its [`view`]s share a
    /// large batch of lookups between.
    ///
    /// [`view`]: WritableDb::view
    pub(super) cores: usize,
}

impl std::fmt::Debug for WritableDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WritableDb")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<WritableDb>();
};

/// A snapshot of a database open for writing: reads at it see the database as it was when
/// it was taken, and compactions keep what it sees until it is dropped.
#[derive(Debug)]
pub struct Snapshot {
    sequence: u64,
    shared: Weak<Shared>,
}

impl Snapshot {
    /// The sequence number of the last write it sees.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let mut st = shared.state();
        if let Some(n) = st.snapshots.get_mut(&self.sequence) {
            *n -= 1;
            if *n == 0 {
                st.snapshots.remove(&self.sequence);
            }
        }
    }
}

impl WritableDb {
    /// Opens the database in `path` for writing, as LevelDB's `DB::Open` does: the
    /// directory is locked, created with a new database if missing and
    /// [`create_if_missing`](WritableOptions::create_if_missing), the MANIFEST replayed, each
    /// live log written to a level-0 table, then a new log and a new MANIFEST started and
    /// files no longer needed deleted. A background thread then flushes and compacts.
    ///
    /// `LOCK` is taken before `CURRENT` is looked for, so an open racing another that is
    /// creating the database is refused as locked. Without `create_if_missing`, a missing
    /// directory or one without a database is refused before anything (not even `LOCK`) is
    /// created in it. A directory without `CURRENT` that holds a database's files (a
    /// MANIFEST, tables, logs or `NNNNNN.dbtmp` files) is refused even with
    /// `create_if_missing`, deleting nothing: a new database there would delete them. The
    /// exception is what a creation interrupted before `CURRENT` leaves (`MANIFEST-000001`
    /// recording no table and no write, perhaps `000001.dbtmp` and logs of nothing but
    /// zeros): the database is then created afresh, as LevelDB does.
    ///
    /// # Errors
    /// [`Error::Locked`] naming `LOCK` if another process (or this one) has it open;
    /// [`Error::NoDatabase`] for a missing database without `create_if_missing`;
    /// [`Error::LostCurrent`] for a database's files without `CURRENT`;
    /// [`Error::InvalidArgument`] for an existing one with `error_if_exists`;
    /// [`Error::OptionOutOfRange`] for an option outside its range;
    /// [`Error::LimitExceeded`] if the file numbers the open needs are past
    /// [`MAX_FILE_NUMBER`](crate::MAX_FILE_NUMBER) (nothing is written then); the errors of
    /// [`Db::open`](crate::Db::open) for a damaged database; [`Error::FileOp`] if a file
    /// cannot be written.
    pub fn open(path: impl AsRef<Path>, options: WritableOptions) -> Result<WritableDb> {
        let shared = recover::open(path.as_ref(), &options)?;
        let runner = Arc::clone(&shared);
        let background = std::thread::Builder::new()
            .name("leveltable-compaction".into())
            .spawn(move || background::run(runner))
            .map_err(|e| Error::op("cannot start the compaction thread for", path.as_ref(), e))?;
        shared.work_cv.notify_one();
        Ok(WritableDb {
            shared,
            background: Some(background),
            pid: std::process::id(),
            forks: fork::forks(),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
        })
    }

    /// Refuses a handle copied into a child process by `fork`.
    ///
    /// # Errors
    /// [`Error::ForkedProcess`] in a process other than the one that opened the database.
    pub(super) fn check_process(&self) -> Result<()> {
        if fork::forks() == self.forks || std::process::id() == self.pid {
            return Ok(());
        }
        Err(Error::ForkedProcess {
            path: self.shared.dir.clone(),
            opened_by: self.pid,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.shared.dir
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// Writing the log failed (the database then accepts no more writes: reopen it), or an
    /// earlier background error stopped writes; [`Error::TooLong`] for a key or value of
    /// 4 GiB or more.
    pub fn put(&self, key: &[u8], value: &[u8], options: WriteOptions) -> Result<()> {
        // The header, the tag and two lengths of at most 5 bytes each: no reallocation.
        let bytes = (HEADER_SIZE + 11)
            .saturating_add(key.len())
            .saturating_add(value.len());
        let mut batch = WriteBatchBuilder::with_capacity(0, bytes.min(MAX_WRITE_BATCH_BYTES));
        batch.try_put(key, value)?;
        self.commit(Some(batch), options.sync)
    }

    /// Deletes `key` (nothing happens if it is absent).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete(&self, key: &[u8], options: WriteOptions) -> Result<()> {
        let mut batch = WriteBatchBuilder::new(0);
        batch.try_delete(key)?;
        self.commit(Some(batch), options.sync)
    }

    /// Applies the puts and deletes of `batch` atomically: a read sees all or none of them,
    /// and after a crash the database holds all or none of them. An empty batch is logged
    /// as LevelDB logs it, an empty record: with `sync`, a barrier that makes every write
    /// before it durable.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn write(&self, batch: &WriteBatchBuilder, options: WriteOptions) -> Result<()> {
        // Before the copy, so that a batch too large costs no second copy.
        write_queue::check_batch_size(batch)?;
        self.commit(Some(batch.clone()), options.sync)
    }

    /// [`write`](Self::write), taking the batch (not copying it).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn write_owned(&self, batch: WriteBatchBuilder, options: WriteOptions) -> Result<()> {
        self.commit(Some(batch), options.sync)
    }

    /// Queues `batch` (or, for `None`, a request for a memtable switch) and waits until it
    /// is committed ([`write_queue::commit`]).
    fn commit(&self, batch: Option<WriteBatchBuilder>, sync: bool) -> Result<()> {
        self.check_process()?;
        write_queue::commit(&self.shared, batch, sync)
    }

    /// The value of `key`, `None` if it is absent or deleted.
    ///
    /// # Errors
    /// A table that cannot be read, naming it.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_process()?;
        let (view, sequence) = self.shared.read_view();
        self.get_in(&view, key, sequence)
            .map(LookupResult::into_value)
    }

    /// A get in `view`, charging the seeks LevelDB charges.
    fn get_in(&self, view: &Version, key: &[u8], sequence: u64) -> Result<LookupResult> {
        let mut stats = SeekStats::default();
        let found = view.get_with(&LookupKey::new(key, sequence)?, &mut stats)?;
        if let Some((Some(level), f)) = stats.charge {
            self.shared.charge_seek(level, &f);
        }
        Ok(found)
    }

    /// The value of `key` at `snapshot`.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn get_at(&self, key: &[u8], snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        Ok(self.lookup(key, snapshot)?.into_value())
    }

    /// What a lookup of `key` at `snapshot` finds, with the version's sequence number.
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub fn lookup(&self, key: &[u8], snapshot: &Snapshot) -> Result<LookupResult> {
        let (view, _) = self.shared.read_view();
        self.get_in(&view, key, snapshot.sequence)
    }

    /// A snapshot of the database as it is now.
    pub fn snapshot(&self) -> Snapshot {
        let mut st = self.shared.state();
        let sequence = st.versions.current.last_sequence;
        *st.snapshots.entry(sequence).or_insert(0) += 1;
        Snapshot {
            sequence,
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Every live key and value in key order, double-ended, as of now.
    pub fn iter(&self) -> DbIter {
        self.range::<[u8]>(..)
    }

    /// Every key and value visible at `snapshot`.
    pub fn iter_at(&self, snapshot: &Snapshot) -> DbIter {
        self.range_at::<[u8]>(.., snapshot)
    }

    /// The live keys within `range` (user-key bounds), double-ended, as of now.
    pub fn range<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> DbIter {
        let (view, sequence) = self.shared.read_view();
        self.iter_in(view, &range, sequence)
    }

    /// The keys within `range` visible at `snapshot`.
    pub fn range_at<K: AsRef<[u8]> + ?Sized>(
        &self,
        range: impl RangeBounds<K>,
        snapshot: &Snapshot,
    ) -> DbIter {
        let (view, _) = self.shared.read_view();
        self.iter_in(view, &range, snapshot.sequence)
    }

    fn iter_in<K: AsRef<[u8]> + ?Sized>(
        &self,
        view: Arc<Version>,
        range: &impl RangeBounds<K>,
        sequence: u64,
    ) -> DbIter {
        let (lo, hi) = internal_bounds(range).unwrap_or((Bound::Unbounded, Bound::Unbounded));
        DbIter::new(
            Merger::new(view, lo, hi),
            sequence,
            Arc::clone(&self.shared.user),
        )
    }

    /// Writes the memtable to a table now (it is otherwise written once it holds
    /// [`write_buffer_size`](WritableOptions::write_buffer_size) bytes), and waits until it
    /// is.
    ///
    /// # Errors
    /// A background error, or the new log cannot be created.
    pub fn flush(&self) -> Result<()> {
        self.commit(None, false)?;
        let shared = &*self.shared;
        let mut st = shared.state();
        while st.imm.is_some() && st.bg_error.is_none() {
            shared.work_cv.notify_one();
            st = shared
                .finished_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Shared::check_bg_error(&st)
    }

    /// Waits until the background thread has nothing to do: no memtable waiting to be
    /// written and no compaction due or running (RocksDB's `WaitForCompact`). A reader
    /// opened afterwards sees tables no compaction is about to delete, until the next
    /// writes make one due.
    ///
    /// # Errors
    /// A background error.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.check_process()?;
        let shared = &*self.shared;
        let mut st = shared.state();
        while (st.in_step || background::has_work(&st)) && !st.shutting_down {
            shared.work_cv.notify_one();
            st = shared
                .finished_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Shared::check_bg_error(&st)
    }

    /// Compacts the keys in `[begin, end]` (`None`: unbounded) down the levels, as
    /// LevelDB's `CompactRange` does: the memtable is flushed, then each level holding
    /// such keys is compacted into the next, down to the deepest level that has any.
    /// Deleted and overwritten versions no snapshot sees are dropped. With a
    /// [`compaction_filter`](WritableOptions::compaction_filter), that deepest level is
    /// compacted into the next one too (unless it is level 6), so that the filter sees
    /// every entry in the range (RocksDB's `kIfHaveCompactionFilter`).
    ///
    /// # Errors
    /// A background error.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.check_process()?;
        let max_level_with_files = {
            let st = self.shared.state();
            (1..NUM_LEVELS)
                .filter(|&level| {
                    !st.versions
                        .current
                        .levels
                        .overlapping(level, begin, end, &*self.shared.user)
                        .is_empty()
                })
                .max()
                .unwrap_or(1)
        };
        let last = if self.shared.options.compaction_filter.is_some() {
            (max_level_with_files + 1).min(NUM_LEVELS - 1)
        } else {
            max_level_with_files
        };
        self.flush()?;
        for level in 0..last {
            self.compact_level(level, begin, end)?;
        }
        Ok(())
    }

    /// Runs range compactions of `level` until none of its files overlaps `[begin, end]`.
    fn compact_level(&self, level: usize, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let shared = &*self.shared;
        let mut st = shared.state();
        while st.manual.is_some() && st.bg_error.is_none() {
            st = shared
                .finished_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        st.manual = Some(ManualCompaction {
            level,
            begin: begin.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            done: false,
        });
        while st.manual.as_ref().is_some_and(|m| !m.done) && st.bg_error.is_none() {
            shared.work_cv.notify_one();
            st = shared
                .finished_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        st.manual = None;
        shared.finished_cv.notify_all();
        Shared::check_bg_error(&st)
    }

    /// The table files of each level, with their key ranges.
    pub fn tables(&self) -> Vec<TableInfo> {
        let st = self.shared.state();
        st.versions
            .current
            .levels
            .infos()
            .into_iter()
            .flatten()
            .collect()
    }

    /// The number of table files at `level`.
    pub fn files_at_level(&self, level: usize) -> usize {
        let st = self.shared.state();
        st.versions
            .current
            .levels
            .files
            .get(level)
            .map_or(0, Vec::len)
    }

    /// The sequence number of the last write.
    pub fn last_sequence(&self) -> u64 {
        self.shared.visible_sequence.load(AtomicOrdering::Acquire)
    }

    /// Compactions run since the open (flushes not counted).
    pub fn compactions(&self) -> u64 {
        self.shared.state().compactions
    }

    /// Closes the database, waiting for the background work in progress to end.
    ///
    /// # Errors
    /// The background error that stopped writes, if one did; [`Error::ForkedProcess`] in a
    /// child forked from the process that opened it (the handle is then dropped without a
    /// file being touched: the parent's database goes on).
    pub fn close(mut self) -> Result<()> {
        self.check_process()?;
        self.stop();
        Shared::check_bg_error(&self.shared.state())
    }

    fn stop(&mut self) {
        if std::process::id() != self.pid {
            // A copy in a forked child: the background thread is the parent's, and so are
            // the files. Nothing is joined, and the state is never dropped here (closing
            // the log would cut the parent's log to what this copy knows of it).
            std::mem::forget(self.background.take());
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        {
            let mut st = self.shared.state();
            st.shutting_down = true;
        }
        self.shared.closing.store(true, AtomicOrdering::Release);
        self.shared.work_cv.notify_all();
        if let Some(h) = self.background.take() {
            let _ = h.join();
        }
    }
}

impl Drop for WritableDb {
    fn drop(&mut self) {
        self.stop();
    }
}
