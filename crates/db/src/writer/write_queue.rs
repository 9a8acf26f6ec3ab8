//! The write queue and its group commit (LevelDB's `DBImpl::Write`, `BuildBatchGroup` and
//! `MakeRoomForWrite`): each writer queues its batch; the one at the front takes the
//! batches queued behind it that may join, appends them to the log as one record, inserts
//! them into the memtable with the state unlocked, and answers for all of them. Before
//! that, it makes room: a full memtable is switched for a new one with a new log, and
//! writes slow down and then wait while level 0 holds too many files.

use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::dbformat::MAX_SEQUENCE;
use crate::levels::{L0_SLOWDOWN_WRITES_TRIGGER, L0_STOP_WRITES_TRIGGER};
use crate::live_memtable::{LiveMemTable, SHARED_BATCH_BYTES};
use crate::log_format::MAX_WRITE_BATCH_BYTES;
use crate::write_batch::{HEADER_SIZE, WriteBatch, WriteBatchBuilder};
use crate::writer::log_file::LogFile;
use crate::writer::shared::{Pending, Shared, State, lock};
use crate::{Error, Limit, Result};

/// How long a queued writer spins before it sleeps until the writers in front commit.
const SPIN: Duration = Duration::from_micros(20);

/// A group of writes grows to at most this many bytes…
const MAX_GROUP_BYTES: usize = 1 << 20;
/// …or, after a small first write, to this many bytes more than it, so that a small write
/// is not slowed down by much (LevelDB's `BuildBatchGroup`).
const SMALL_WRITE_BYTES: usize = 128 << 10;

/// The result `r` for each writer of a group.
fn share(r: &Result<()>) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(Error::Shared(e)) => Err(Error::Shared(Arc::clone(e))),
        Err(e) => Err(Error::InvalidArgument(e.to_string().into())),
    }
}

/// Queues `batch` (or, for `None`, a request for a memtable switch) and waits until it
/// is committed, by this thread if it reaches the front of the queue first, or as part
/// of the group of the writer in front of it.
pub(crate) fn commit(shared: &Shared, batch: Option<WriteBatchBuilder>, sync: bool) -> Result<()> {
    if let Some(batch) = &batch {
        check_batch_size(batch)?;
    }
    let mut st = shared.state();
    let id = st.next_writer;
    st.next_writer = st.next_writer.wrapping_add(1);
    let force = batch.is_none();
    // A writer arriving at an empty queue leads its group: no other writer takes its
    // batch, which stays here; the others leave theirs for the leader to take.
    let mut own = None;
    if st.writers.is_empty() {
        own = Some(Pending { batch, sync });
    } else {
        st.pending.insert(id, Pending { batch, sync });
    }
    st.writers.push_back(id);
    if own.is_none() {
        match wait_for_turn(shared, st, id) {
            Turn::Front(front) => st = front,
            Turn::Committed(r) => return r,
        }
    }
    let (mut st, room) = make_room_for_write(shared, st, force);
    let own = own.or_else(|| st.pending.remove(&id));
    // The writers of the group: the first ones of the queue, this one first.
    let mut members = 1;
    let result = match (room, own.and_then(|p| p.batch)) {
        (Err(e), _) => Err(e),
        (Ok(()), None) => Ok(()),
        (Ok(()), Some(batch)) => {
            let (next, r) = commit_group(shared, st, batch, sync, &mut members);
            st = next;
            r
        }
    };
    for _ in 0..members {
        if let Some(g) = st.writers.pop_front()
            && g != id
        {
            st.done.insert(g, share(&result));
        }
    }
    // Wake the writers whose writes were committed, and the next at the front: those
    // spinning see the count, those asleep need the condition variable.
    shared.commits.fetch_add(1, AtomicOrdering::Release);
    if st.sleeping > 0 {
        shared.writers_cv.notify_all();
    }
    result
}

/// How a queued writer's wait ends.
enum Turn<'a> {
    /// It is at the front of the queue, to commit its own write.
    Front(MutexGuard<'a, State>),
    /// The writer in front committed its write in its group.
    Committed(Result<()>),
}

/// Waits until the writer `id`, queued behind others, is at the front of the queue or its
/// write was committed by the group of a writer in front. (Out of line: a lone writer,
/// the usual case, never waits, and its commit's code stays small.)
#[cold]
#[inline(never)]
fn wait_for_turn<'a>(shared: &'a Shared, mut st: MutexGuard<'a, State>, id: u64) -> Turn<'a> {
    let mut spin_until = None;
    loop {
        if let Some(r) = st.done.remove(&id) {
            return Turn::Committed(r);
        }
        if st.writers.front() == Some(&id) {
            return Turn::Front(st);
        }
        // The writer in front usually commits within microseconds (the log is one
        // `write` of its record): wait for it on this core rather than sleep and be
        // woken, which costs two system calls and a wake-up longer than the commit.
        let seen = shared.commits.load(AtomicOrdering::Acquire);
        let spin_until = *spin_until.get_or_insert_with(|| Instant::now() + SPIN);
        if Instant::now() < spin_until {
            drop(st);
            let mut spins = 0u32;
            while shared.commits.load(AtomicOrdering::Acquire) == seen {
                std::hint::spin_loop();
                spins += 1;
                if spins % 64 == 0 && Instant::now() >= spin_until {
                    break;
                }
            }
            st = shared.state();
            continue;
        }
        st.sleeping += 1;
        st = shared
            .writers_cv
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner);
        st.sleeping -= 1;
    }
}

/// Commits `batch` with the writes queued behind it that may join it, as one log
/// record; `members` gets the number of writers committed, the first of the queue.
fn commit_group<'a>(
    shared: &'a Shared,
    mut st: MutexGuard<'a, State>,
    mut batch: WriteBatchBuilder,
    sync: bool,
    members: &mut usize,
) -> (MutexGuard<'a, State>, Result<()>) {
    let size = batch.approximate_size();
    let max = if size <= SMALL_WRITE_BYTES {
        size + SMALL_WRITE_BYTES
    } else {
        MAX_GROUP_BYTES
    };
    let mut total = size;
    let State {
        writers, pending, ..
    } = &mut *st;
    for other in writers.iter().skip(1) {
        let Some(p) = pending.get(other) else {
            break;
        };
        // A synced write does not join an unsynced leader; a memtable switch ends it.
        let Some(b) = p.batch.as_ref().filter(|_| sync || !p.sync) else {
            break;
        };
        total += b.approximate_size() - HEADER_SIZE;
        if total > max {
            break;
        }
        *members += 1;
    }
    for other in writers.iter().skip(1).take(*members - 1) {
        if let Some(Pending { batch: Some(b), .. }) = pending.remove(other) {
            batch.append(&b);
        }
    }
    let last = st.versions.current.last_sequence;
    let count = u64::from(batch.count());
    if last.saturating_add(count) > MAX_SEQUENCE {
        let e = Error::LimitExceeded {
            limit: Limit::SequenceNumbers,
            path: shared.dir.clone(),
            value: last.saturating_add(count),
        };
        return (st, Err(e));
    }
    batch.set_sequence(last + 1);
    let mem = Arc::clone(&st.mem);
    drop(st);
    if let Ok(b) = WriteBatch::new(batch.as_bytes()) {
        mem.prefetch_filter(&b);
    }
    // Only the writer at the front of the queue gets here: the log and the memtable
    // have one writer at a time, without the state lock.
    let written = lock(&shared.log)
        .append(batch.as_bytes(), sync)
        .and_then(|()| {
            let inserted = if batch.approximate_size() >= SHARED_BATCH_BYTES {
                // Kept whole rather than copied: a large batch costs its bytes once.
                mem.insert_shared_batch(Arc::new(batch.into_bytes()))
            } else {
                WriteBatch::new(batch.as_bytes()).and_then(|b| mem.insert_batch(&b))
            };
            inserted.map_err(|e| Error::InvalidArgument(e.into()))
        });
    let mut st = shared.state();
    match written {
        Ok(()) => {
            st.versions.current.last_sequence = last + count;
            shared
                .visible_sequence
                .store(last + count, AtomicOrdering::Release);
            (st, Ok(()))
        }
        Err(e) => {
            // The log may end in part of a record: accept no more writes until the
            // database is reopened (LevelDB stops only after a failed sync).
            let e = shared.record_bg_error(&mut st, e);
            (st, Err(Error::Shared(e)))
        }
    }
}

/// Makes room in the memtable for a write (LevelDB's `MakeRoomForWrite`): delays it by
/// 1 ms once level 0 has 8 files, switches to a new memtable and log when the memtable
/// is full (or `force`), and waits while the previous memtable is still being flushed
/// or level 0 has 12 files.
fn make_room_for_write<'a>(
    shared: &'a Shared,
    mut st: MutexGuard<'a, State>,
    mut force: bool,
) -> (MutexGuard<'a, State>, Result<()>) {
    let mut allow_delay = !force;
    loop {
        if let Err(e) = Shared::check_bg_error(&st) {
            return (st, Err(e));
        }
        let level0 = st.versions.current.levels.files[0].len();
        if allow_delay && level0 >= L0_SLOWDOWN_WRITES_TRIGGER {
            drop(st);
            std::thread::sleep(Duration::from_millis(1));
            st = shared.state();
            allow_delay = false;
        } else if !force && st.mem.approximate_bytes() <= shared.options.write_buffer_size {
            return (st, Ok(()));
        } else if st.imm.is_some() || level0 >= L0_STOP_WRITES_TRIGGER {
            shared.work_cv.notify_one();
            st = shared
                .finished_cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        } else {
            if let Err(e) = switch_memtable(shared, &mut st) {
                return (st, Err(e));
            }
            force = false;
        }
    }
}

/// Switches the full memtable for a new one with a new log, and wakes the background
/// thread to flush it. (Out of line: one write in thousands switches, and the others'
/// commit keeps its code small.)
#[cold]
#[inline(never)]
fn switch_memtable(shared: &Shared, st: &mut MutexGuard<'_, State>) -> Result<()> {
    // The old log is made durable before a write reaches the new one, so that a power
    // loss never keeps a later log's records without the earlier log's (LevelDB syncs
    // neither here, its issue #193).
    if let Err(e) = lock(&shared.log).sync() {
        return Err(Error::Shared(shared.record_bg_error(st, e)));
    }
    let number = st.versions.new_file_number()?;
    let log = LogFile::create_log(
        &shared.options.file_system,
        &shared.dir,
        number,
        shared.options.write_buffer_size,
    )?;
    // The old log is closed; its writes are in the memtable being flushed.
    *lock(&shared.log) = log;
    st.log_number = number;
    let full = std::mem::replace(
        &mut st.mem,
        Arc::new(LiveMemTable::for_writes(
            &shared.user,
            shared.options.write_buffer_size,
            &shared.blocks,
        )),
    );
    st.imm = Some(full);
    shared.install_view(st);
    shared.work_cv.notify_one();
    Ok(())
}

/// Refuses a batch of more than [`MAX_WRITE_BATCH_BYTES`], naming the limit.
pub(crate) fn check_batch_size(batch: &WriteBatchBuilder) -> Result<()> {
    let len = batch.approximate_size();
    if len > MAX_WRITE_BATCH_BYTES {
        return Err(Error::TooLong {
            what: "write batch",
            len: len as u64,
            limit: MAX_WRITE_BATCH_BYTES as u64,
        });
    }
    Ok(())
}
