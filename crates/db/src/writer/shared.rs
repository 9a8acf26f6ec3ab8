//! What the writers, the readers and the background thread of a database open for writing
//! share (the members of LevelDB's `DBImpl`), and the steps more than one of them takes:
//! publishing a new view, deleting obsolete files, writing a table (the flush is in
//! `flush`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock, Weak};

use leveltable_table::{BuildOptions, Comparator};

use crate::arena::BlockPool;
use crate::dbformat::InternalKeyComparator;
use crate::filename::{FileType, parse_file_name, table_file_name};
use crate::levels::Levels;
use crate::live_memtable::LiveMemTable;
use crate::lock::DbLock;
use crate::storage::list_dir;
use crate::table_cache::TableCache;
use crate::table_writer::{Durability, TableWriter};
use crate::version::{Origin, Source, Version, file_sources};
use crate::version_edit::{FileMetaData, NUM_LEVELS, VersionEdit};
use crate::version_set::VersionSet;
use crate::write_batch::WriteBatchBuilder;
use crate::writer::compaction_stats::CompactionStats;
use crate::writer::file_system::FileSystem;
use crate::writer::log_file::LogFile;
use crate::writer::options::WritableOptions;
use crate::{Error, Result};

/// A write waiting in the queue.
pub(crate) struct Pending {
    /// `None`: no write, only room for one (a memtable flush asked for).
    pub(crate) batch: Option<WriteBatchBuilder>,
    pub(crate) sync: bool,
}

/// A range compaction asked for by [`compact_range`](crate::WritableDb::compact_range).
pub(crate) struct ManualCompaction {
    pub(crate) level: usize,
    pub(crate) begin: Option<Vec<u8>>,
    pub(crate) end: Option<Vec<u8>>,
    pub(crate) done: bool,
}

/// What the state mutex guards (the members LevelDB's `mutex_` guards).
pub(crate) struct State {
    pub(crate) versions: VersionSet,
    pub(crate) mem: Arc<LiveMemTable>,
    pub(crate) imm: Option<Arc<LiveMemTable>>,
    /// The number of the log the memtable's writes go to.
    pub(crate) log_number: u64,
    /// Writers in arrival order, by id; the front one commits for the group.
    pub(crate) writers: VecDeque<u64>,
    pub(crate) pending: HashMap<u64, Pending>,
    /// Results of writes committed by another writer, until their writer collects them.
    pub(crate) done: HashMap<u64, Result<()>>,
    pub(crate) next_writer: u64,
    /// Writers asleep on [`Shared::writers_cv`]: only they need a system call to wake.
    pub(crate) sleeping: usize,
    /// Live snapshots: sequence number and how many hold it.
    pub(crate) snapshots: BTreeMap<u64, usize>,
    /// Tables being written, not yet in the MANIFEST: never deleted as obsolete.
    pub(crate) pending_outputs: BTreeSet<u64>,
    /// The error that stopped writes (LevelDB's `bg_error_`).
    pub(crate) bg_error: Option<Arc<Error>>,
    pub(crate) manual: Option<ManualCompaction>,
    pub(crate) shutting_down: bool,
    /// Views handed to readers: their files are not deleted while any is alive.
    pub(crate) views: Vec<Weak<Version>>,
    /// Compactions run since the open (`WritableDb::compactions`).
    pub(crate) compactions: u64,
    /// The work of flushes and compactions since the open, per level written, for the
    /// properties.
    pub(crate) stats: [CompactionStats; NUM_LEVELS],
    /// A table read past too often, and its level: compacted when nothing else is due
    /// (LevelDB's `file_to_compact_`).
    pub(crate) file_to_compact: Option<(usize, u64)>,
    /// The background thread is in a step (a flush or a compaction), with or without the
    /// state locked.
    pub(crate) in_step: bool,
}

/// Everything a database open for writing shares between its handle, its readers and its
/// background thread.
pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    pub(crate) options: WritableOptions,
    pub(crate) user: Arc<dyn Comparator>,
    pub(crate) icmp: Arc<InternalKeyComparator>,
    pub(crate) build: BuildOptions,
    pub(crate) tables: Arc<TableCache>,
    pub(crate) state: Mutex<State>,
    /// Signalled when a writer leaves the queue.
    pub(crate) writers_cv: Condvar,
    /// Groups committed so far: a queued writer spins on it briefly before it sleeps.
    pub(crate) commits: AtomicU64,
    /// Signalled when background work ends a step (LevelDB's
    /// `background_work_finished_signal_`).
    pub(crate) finished_cv: Condvar,
    /// Wakes the background thread.
    pub(crate) work_cv: Condvar,
    /// What reads see: the memtables and the tables, newest first.
    pub(crate) view: RwLock<Arc<Version>>,
    /// The sequence number of the last write readers may see.
    pub(crate) visible_sequence: AtomicU64,
    /// The handle is being dropped: a compaction in progress gives up.
    pub(crate) closing: AtomicBool,
    /// A memtable waits to be flushed: a compaction in progress stops to flush it.
    pub(crate) has_imm: AtomicBool,
    /// Seeks each table may still be charged before it is compacted (LevelDB's
    /// `allowed_seeks`), for the tables charged so far.
    pub(crate) seeks: Mutex<HashMap<u64, i64>>,
    /// The blocks of flushed memtables, for the next memtables.
    pub(crate) blocks: Arc<BlockPool>,
    /// The log; only the writer at the front of the queue appends to it.
    pub(crate) log: Mutex<LogFile>,
    pub(crate) _lock: DbLock,
    /// Run once by the next [`read_view`](Shared::read_view), holding the view's lock: a
    /// test's pause there.
    #[cfg(test)]
    pub(crate) read_view_pause: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// Locks `m`, ignoring poisoning: the state stays consistent between steps.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The view reads start from, with the sequence number they read at, both taken under
    /// the view's lock. A compaction keeps the versions the newest sequence at its start
    /// sees, and installs its view under that lock: a sequence read with the view it
    /// installed is at least that one (a sequence read before it, with its view, could
    /// miss a version the compaction dropped). Every write at or below the sequence is in
    /// the view: a new memtable takes no write before the view holding it is installed.
    pub(crate) fn read_view(&self) -> (Arc<Version>, u64) {
        let view = self.view.read().unwrap_or_else(PoisonError::into_inner);
        #[cfg(test)]
        if let Some(pause) = lock(&self.read_view_pause).take() {
            pause();
        }
        let sequence = self.visible_sequence.load(AtomicOrdering::Acquire);
        (Arc::clone(&view), sequence)
    }

    /// Records `edit` in the MANIFEST and applies it (LevelDB's `LogAndApply`), with the
    /// state unlocked while the record is written and synced, so that writes and reads go
    /// on meanwhile. Only the background thread calls it: no other change is prepared
    /// while one is written.
    pub(crate) fn log_and_apply_unlocked<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        edit: &mut VersionEdit,
    ) -> (MutexGuard<'a, State>, Result<()>) {
        let mut change = match st.versions.prepare(edit) {
            Ok(change) => change,
            Err(e) => return (st, Err(e)),
        };
        drop(st);
        let written = change.write();
        st = self.state();
        let applied = st.versions.finish(change, written);
        (st, applied)
    }

    /// Publishes the state's memtables and levels as the view new reads start from.
    pub(crate) fn install_view(&self, st: &mut State) {
        let view = Arc::new(view_of(
            &self.icmp,
            &self.tables,
            &st.mem,
            st.imm.as_ref(),
            &st.versions.current.levels,
        ));
        st.views.retain(|v| v.strong_count() > 0);
        st.views.push(Arc::downgrade(&view));
        self.has_imm
            .store(st.imm.is_some(), AtomicOrdering::Release);
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = view;
    }

    /// Charges a table a seek (LevelDB's `Version::UpdateStats`): a get looked in it, found
    /// nothing, and looked on. Once a table has cost about as much as compacting it would
    /// (one seek per 16 KiB, at least 100), it is compacted.
    pub(crate) fn charge_seek(&self, level: usize, f: &FileMetaData) {
        let exhausted = {
            let mut seeks = lock(&self.seeks);
            let left = seeks.entry(f.number).or_insert_with(|| {
                i64::try_from(f.file_size / 16384)
                    .unwrap_or(i64::MAX)
                    .max(100)
            });
            *left -= 1;
            *left <= 0
        };
        if exhausted {
            let mut st = self.state();
            if st.file_to_compact.is_none() {
                st.file_to_compact = Some((level, f.number));
                self.work_cv.notify_one();
            }
        }
    }

    /// The error writes stop at, if any.
    pub(crate) fn check_bg_error(st: &State) -> Result<()> {
        match &st.bg_error {
            Some(e) => Err(Error::Shared(Arc::clone(e))),
            None => Ok(()),
        }
    }

    /// Records a background error: no more writes until the database is reopened.
    pub(crate) fn record_bg_error(&self, st: &mut State, e: Error) -> Arc<Error> {
        let e = match e {
            Error::Shared(e) => e,
            other => Arc::new(other),
        };
        if st.bg_error.is_none() {
            st.bg_error = Some(Arc::clone(&e));
        }
        self.finished_cv.notify_all();
        e
    }

    /// Deletes the files no view needs (LevelDB's `RemoveObsoleteFiles`): logs older than
    /// the MANIFEST's log number, older MANIFESTs, and tables and temporary files no live
    /// view or write in progress names. They are chosen under the state lock and deleted
    /// with it released, as LevelDB deletes them: deleting a log of megabytes can take
    /// milliseconds, which writers would otherwise wait out. A file chosen is never needed
    /// again (file numbers are not reused).
    pub(crate) fn remove_obsolete_files<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
    ) -> MutexGuard<'a, State> {
        let obsolete = self.obsolete_files(&mut st);
        if obsolete.is_empty() {
            return st;
        }
        drop(st);
        for path in obsolete {
            let _ = self.options.file_system.remove(&path);
        }
        self.state()
    }

    /// The files [`remove_obsolete_files`](Self::remove_obsolete_files) deletes; the tables
    /// among them are forgotten by the table cache.
    fn obsolete_files(&self, st: &mut State) -> Vec<PathBuf> {
        if st.bg_error.is_some() {
            // Whether the last change reached the MANIFEST is unknown: keep everything.
            return Vec::new();
        }
        let mut live: BTreeSet<u64> = st.pending_outputs.clone();
        live.extend(st.versions.current.levels.numbers());
        st.views.retain(|v| v.strong_count() > 0);
        for view in st.views.iter().filter_map(Weak::upgrade) {
            for source in &view.sources {
                if let Source::Files { files, .. } = source {
                    live.extend(files.iter().map(|f| f.number));
                }
            }
        }
        let Ok(names) = list_dir(&self.dir) else {
            return Vec::new();
        };
        let v = &st.versions;
        let mut obsolete = Vec::new();
        for name in names {
            let kind = parse_file_name(&name);
            let keep = match kind {
                Some(FileType::Log(n)) => {
                    n >= v.current.log_number || n == v.current.prev_log_number
                }
                Some(FileType::Manifest(n)) => n >= v.manifest_number,
                Some(FileType::Table(n) | FileType::Temp(n)) => live.contains(&n),
                _ => true,
            };
            if keep {
                continue;
            }
            if let Some(FileType::Table(n)) = kind {
                self.tables.forget(n);
                lock(&self.seeks).remove(&n);
            }
            obsolete.push(self.dir.join(&name));
        }
        obsolete
    }
}

/// The view of a database open for writing: the memtable, the one being flushed, each
/// level-0 table newest first, each deeper level as one run.
pub(crate) fn view_of(
    icmp: &InternalKeyComparator,
    tables: &Arc<TableCache>,
    mem: &Arc<LiveMemTable>,
    imm: Option<&Arc<LiveMemTable>>,
    levels: &Levels,
) -> Version {
    // The live memtables' log numbers are not kept here: their versions show as of log 0.
    let mut sources = vec![Source::Mem {
        origin: Origin::Log { number: 0 },
        table: Arc::clone(mem),
    }];
    if let Some(imm) = imm {
        sources.push(Source::Mem {
            origin: Origin::Log { number: 0 },
            table: Arc::clone(imm),
        });
    }
    sources.extend(file_sources(&levels.files));
    Version::new(icmp.clone(), Arc::clone(tables), sources, false)
}

/// A visitor of sorted entries: called with a function to pass each entry to.
pub(crate) type Entries<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<()>;

/// Writes the entries `visit` passes (internal keys in order) as table `number` of `dir`
/// (LevelDB's `BuildTable`); `None`, and no file, if there are none. The table is synced
/// and opened through `tables` before it is returned, as LevelDB checks it.
pub(crate) fn write_table(
    fs: &Arc<dyn FileSystem>,
    dir: &std::path::Path,
    build: &BuildOptions,
    tables: &TableCache,
    number: u64,
    visit: impl FnOnce(Entries<'_>) -> Result<()>,
) -> Result<Option<FileMetaData>> {
    let mut out: Option<TableWriter> = None;
    let added = visit(&mut |k, v| {
        if out.is_none() {
            out = Some(create_output(fs, dir, number, build)?);
        }
        out.as_mut().expect("created above").add(k, v)
    });
    let Some(out) = out else {
        return added.map(|()| None);
    };
    if let Err(e) = added {
        out.abandon();
        return Err(e);
    }
    finish_output(out, number, tables, Durability::Synced).map(Some)
}

/// Creates table `number` of `dir`, written by a flush or a compaction.
pub(crate) fn create_output(
    fs: &Arc<dyn FileSystem>,
    dir: &std::path::Path,
    number: u64,
    build: &BuildOptions,
) -> Result<TableWriter> {
    TableWriter::create(fs, dir.join(table_file_name(number)), build)
}

/// Finishes `out`, table `number`: synced and closed (removed if that fails) or handed
/// to a syncing thread as `durability` says, then opened through `tables`, as LevelDB
/// checks a table it wrote. It must be durable before a MANIFEST names it.
pub(crate) fn finish_output(
    out: TableWriter,
    number: u64,
    tables: &TableCache,
    durability: Durability<'_>,
) -> Result<FileMetaData> {
    let finished = out.finish(durability)?;
    tables.get(number)?;
    Ok(FileMetaData {
        number,
        file_size: finished.file_size,
        smallest: finished.smallest,
        largest: finished.largest,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::{WritableDb, WritableOptions, WriteOptions};

    /// A get paused inside `read_view` while a newer value is written and everything is
    /// compacted (which drops the versions only older sequences see) reads the value of
    /// its own sequence or the newest, never nothing: the key always held a value.
    #[test]
    fn a_read_racing_a_compaction_sees_a_value_the_key_held() {
        let dir = tempfile::tempdir().unwrap();
        let options = WritableOptions::default().create_if_missing(true);
        let db = WritableDb::open(dir.path(), options).unwrap();
        let w = WriteOptions::default();
        for value in [&b"old"[..], b"mid"] {
            db.put(b"k", value, w).unwrap();
            db.flush().unwrap();
        }
        let (paused_tx, paused) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        *super::lock(&db.shared.read_view_pause) = Some(Box::new(move || {
            paused_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        }));
        let db = &db;
        std::thread::scope(|s| {
            let reader = s.spawn(|| db.get(b"k").unwrap());
            paused.recv().unwrap();
            let (done_tx, done) = mpsc::channel();
            let compactor = s.spawn(move || {
                db.put(b"k", b"new", w).unwrap();
                db.compact_range(None, None).unwrap();
                done_tx.send(()).unwrap();
            });
            // The compaction cannot install its view while the read holds the lock; were
            // the lock not held, it would be done well within this.
            let _ = done.recv_timeout(Duration::from_secs(1));
            go.send(()).unwrap();
            let got = reader.join().unwrap();
            compactor.join().unwrap();
            assert!(
                matches!(got.as_deref(), Some(b"mid" | b"new")),
                "the get read {:?}",
                got.map(|v| String::from_utf8_lossy(&v).into_owned())
            );
        });
    }
}
