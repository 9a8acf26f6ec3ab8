//! The background thread of a database open for writing: it flushes full memtables and
//! compacts levels (LevelDB's `BackgroundCall`, `BackgroundCompaction` and
//! `DoCompactionWork`), one step at a time, with the state unlocked while it reads and
//! writes tables.

use std::ops::Bound;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use crate::levels::{total_size, user_key};
use crate::merger::Merger;
use crate::syncer::Syncer;
use crate::table_writer::{Durability, TableWriter};
use crate::version::{Source, Version};
use crate::version_edit::FileMetaData;
use crate::writer::compaction::{Compaction, Limits};
use crate::writer::compaction_iter::{CompactionIter, Filtering};
use crate::writer::compaction_stats::{CompactionStats, micros_since};
use crate::writer::shared::{Shared, State, create_output, finish_output};
use crate::{Error, Result};

/// Whether the background thread has work (LevelDB's `MaybeScheduleCompaction`).
pub(crate) fn has_work(st: &State) -> bool {
    st.bg_error.is_none()
        && (st.imm.is_some()
            || st.manual.as_ref().is_some_and(|m| !m.done)
            || st.file_to_compact.is_some()
            || st.versions.current.levels.compaction_score().1 >= 1.0)
}

/// The background thread's loop: waits for work, does one step, signals, until shutdown.
pub(crate) fn run(shared: Arc<Shared>) {
    let mut st = shared.state();
    loop {
        while !st.shutting_down && !has_work(&st) {
            st = shared
                .work_cv
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if st.shutting_down {
            break;
        }
        st.in_step = true;
        let (next, result) = step(&shared, st);
        st = next;
        st.in_step = false;
        // A compaction given up because the handle is being dropped is no error.
        if let Err(e) = result
            && !st.shutting_down
        {
            shared.record_bg_error(&mut st, e);
        }
        shared.finished_cv.notify_all();
    }
    shared.finished_cv.notify_all();
}

/// One step of background work: a memtable flush if one waits, else the range compaction
/// asked for, else the compaction the levels most need.
fn step<'a>(shared: &'a Shared, st: MutexGuard<'a, State>) -> (MutexGuard<'a, State>, Result<()>) {
    if st.imm.is_some() {
        return shared.flush_imm(st, None);
    }
    let limits = Limits {
        max_file_size: shared.options.max_file_size,
    };
    let icmp = &shared.icmp;
    let mut st = st;
    let manual = st
        .manual
        .as_ref()
        .filter(|m| !m.done)
        .map(|m| (m.level, m.begin.clone(), m.end.clone()));
    let compaction = match &manual {
        Some((level, begin, end)) => Compaction::range(
            &st.versions.current.levels,
            *level,
            begin.as_deref(),
            end.as_deref(),
            icmp,
            limits,
        ),
        None => {
            // A new version follows this step: the candidate is LevelDB's for one version.
            let seek = st.file_to_compact.take();
            Compaction::pick(
                &st.versions.current.levels,
                &st.versions.current.compact_pointers,
                icmp,
                limits,
                seek,
            )
        }
    };
    let Some(mut c) = compaction else {
        if manual.is_some()
            && let Some(m) = &mut st.manual
        {
            m.done = true;
        }
        return (st, Ok(()));
    };
    let manual_end = c.inputs[0].last().map(|f| user_key(&f.largest).to_vec());
    let result = if manual.is_none() && c.is_trivial_move(limits) {
        // Move the file down a level without reading it.
        let f = Arc::clone(&c.inputs[0][0]);
        let mut edit = std::mem::take(&mut c.edit);
        edit.deleted_files.insert((c.level, f.number));
        edit.new_files.push((c.level + 1, (*f).clone()));
        let (next, r) = shared.log_and_apply_unlocked(st, &mut edit);
        st = next;
        if r.is_ok() {
            shared.install_view(&mut st);
        }
        r.map(|()| true)
    } else {
        let (next, r) = compact(shared, st, c);
        st = next;
        r
    };
    let applied = matches!(result, Ok(true));
    let result = result.map(drop);
    if applied {
        st.compactions += 1;
    }
    // Only the range compaction asked for moves on: one that began during this step
    // starts where it was asked to. One given up is run again.
    if manual.is_some()
        && let Some(m) = &mut st.manual
    {
        if result.is_err() || manual_end.is_none() {
            m.done = true;
        } else if applied {
            m.begin = manual_end;
        }
    }
    if result.is_ok() {
        st = shared.remove_obsolete_files(st);
    }
    (st, result)
}

/// Merges the compaction's inputs into new tables of the next level, dropping versions no
/// snapshot can see, then records the change (LevelDB's `DoCompactionWork`).
///
/// `Ok(false)`: the compaction was given up, its outputs left to be deleted, because the
/// compaction filter changed entries and a snapshot taken meanwhile may have read them as
/// they were (the filter was shown them before that snapshot existed). It runs again.
fn compact<'a>(
    shared: &'a Shared,
    st: MutexGuard<'a, State>,
    mut c: Compaction,
) -> (MutexGuard<'a, State>, Result<bool>) {
    let snapshots = Snapshots {
        smallest: st
            .snapshots
            .keys()
            .next()
            .copied()
            .unwrap_or(st.versions.current.last_sequence),
        latest: st.snapshots.keys().next_back().copied(),
    };
    let levels = st.versions.current.levels.clone();
    let mut outputs: Vec<FileMetaData> = Vec::new();
    let mut numbers: Vec<u64> = Vec::new();
    drop(st);
    let start = Instant::now();
    let mut flushing = 0;
    let result = merge_inputs(
        shared,
        &mut c,
        &levels,
        snapshots,
        &mut outputs,
        &mut numbers,
        &mut flushing,
    );
    let read = c
        .inputs
        .iter()
        .map(|files| total_size(files))
        .fold(0, u64::saturating_add);
    let written = outputs
        .iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.file_size));
    let mut st = shared.state();
    st.stats[c.level + 1].add(CompactionStats::since(start, flushing, read, written));
    let result = match result {
        Err(e) => Err(e),
        Ok(filter_changes)
            if filter_changes > 0
                && st.snapshots.keys().next_back().copied() > snapshots.latest =>
        {
            Ok(false)
        }
        Ok(filter_changes) => {
            let mut edit = std::mem::take(&mut c.edit);
            c.add_input_deletions(&mut edit);
            for meta in &outputs {
                edit.new_files.push((c.level + 1, meta.clone()));
            }
            if filter_changes > 0 {
                // The state stays locked from the check above to the new view: a snapshot
                // taken in between could read the filter's changes as if made before it.
                st.versions.log_and_apply(&mut edit).map(|()| true)
            } else {
                // Unlocked while the MANIFEST syncs: a snapshot taken meanwhile sees the
                // same entries in the inputs as in the outputs, since the versions dropped
                // are older than every snapshot to come.
                let (next, r) = shared.log_and_apply_unlocked(st, &mut edit);
                st = next;
                r.map(|()| true)
            }
        }
    };
    for n in &numbers {
        st.pending_outputs.remove(n);
    }
    if let Ok(true) = result {
        shared.install_view(&mut st);
    }
    (st, result)
}

/// The live snapshots as a compaction sees them.
#[derive(Clone, Copy)]
struct Snapshots {
    /// The oldest live snapshot, or the last sequence number when none is live.
    smallest: u64,
    /// The newest live snapshot.
    latest: Option<u64>,
}

/// The merge loop of a compaction: reads the inputs in order and writes the versions kept.
/// Returns how many entries the compaction filter removed or changed; adds the
/// microseconds spent flushing memtables meanwhile to `flushing`.
fn merge_inputs(
    shared: &Shared,
    c: &mut Compaction,
    levels: &crate::levels::Levels,
    snapshots: Snapshots,
    outputs: &mut Vec<FileMetaData>,
    numbers: &mut Vec<u64>,
    flushing: &mut u64,
) -> Result<u64> {
    let limits = Limits {
        max_file_size: shared.options.max_file_size,
    };
    let mut sources = Vec::new();
    if c.level == 0 {
        for f in &c.inputs[0] {
            sources.push(Source::Files {
                level: Some(0),
                files: vec![Arc::clone(f)],
            });
        }
    } else {
        sources.push(Source::Files {
            level: Some(c.level),
            files: c.inputs[0].clone(),
        });
    }
    if !c.inputs[1].is_empty() {
        sources.push(Source::Files {
            level: Some(c.level + 1),
            files: c.inputs[1].clone(),
        });
    }
    let version = Version::new(
        (*shared.icmp).clone(),
        Arc::clone(&shared.tables),
        sources,
        false,
    );
    let mut merger = Merger::new(Arc::new(version), Bound::Unbounded, Bound::Unbounded);
    // As LevelDB's compactions read (`fill_cache = false`): their blocks are read once,
    // and in the block cache they would only push out what reads use.
    merger.no_fill_cache();
    let busy = c.output_range(&shared.icmp);
    let user = &*shared.user;
    let mut base = c.base_level(levels, user);
    let filter = shared
        .options
        .compaction_filter
        .as_deref()
        .map(|filter| Filtering {
            filter,
            level: c.level + 1,
            latest_snapshot: snapshots.latest,
        });
    let mut entries = CompactionIter::new(
        merger,
        user,
        snapshots.smallest,
        |k: &[u8]| base.is_base_level_for_key(k),
        filter,
    );
    // The outputs are synced on a thread of their own while the merge goes on, each one's
    // writes started as it is handed over; all are durable before this returns. Without
    // that thread, each is synced here as it is finished.
    let syncing = Syncer::start(OUTPUT_SYNC_BACKLOG).ok();
    let durability = || match &syncing {
        Some((_, syncs)) => Durability::Queued(syncs),
        None => Durability::Synced,
    };
    let mut out: Option<(u64, TableWriter)> = None;
    let finish =
        |out: &mut Option<(u64, TableWriter)>, outputs: &mut Vec<FileMetaData>| -> Result<()> {
            if let Some((number, o)) = out.take() {
                outputs.push(finish_output(o, number, &shared.tables, durability())?);
            }
            Ok(())
        };
    let result = (|| -> Result<u64> {
        loop {
            if shared.closing.load(AtomicOrdering::Acquire) {
                return Err(Error::InvalidArgument(
                    "the database was closed during a compaction".into(),
                ));
            }
            if shared.has_imm.load(AtomicOrdering::Acquire) {
                // A full memtable waits: flush it first, or writes would stall behind this
                // compaction.
                let flush_start = Instant::now();
                let st = shared.state();
                let (st, r) = shared.flush_imm(st, Some(&busy));
                drop(st);
                *flushing = flushing.saturating_add(micros_since(flush_start));
                r?;
            }
            let Some((key, value)) = entries.next()? else {
                break;
            };
            if out.is_some() && c.should_stop_before(key, &shared.icmp, limits) {
                finish(&mut out, outputs)?;
            }
            if out.is_none() {
                let number = {
                    let mut st = shared.state();
                    let n = st.versions.new_file_number()?;
                    st.pending_outputs.insert(n);
                    n
                };
                numbers.push(number);
                out = Some((
                    number,
                    create_output(
                        &shared.options.file_system,
                        &shared.dir,
                        number,
                        &shared.build,
                    )?,
                ));
            }
            let (_, o) = out.as_mut().expect("an output is open");
            o.add(key, value)?;
            if o.file_size() >= c.max_output_file_size {
                finish(&mut out, outputs)?;
            }
        }
        finish(&mut out, outputs)?;
        Ok(entries.filter_changes())
    })();
    if result.is_err()
        && let Some((_, o)) = out.take()
    {
        o.abandon();
    }
    let synced = match syncing {
        Some((mut syncer, syncs)) => {
            drop(syncs);
            syncer.finish()
        }
        None => Ok(()),
    };
    result.and_then(|changes| synced.map(|()| changes))
}

/// Outputs of a compaction waiting for the syncing thread, beyond those whose writes it has
/// started: the merge goes on while they are written.
const OUTPUT_SYNC_BACKLOG: usize = 4;
