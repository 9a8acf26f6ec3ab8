//! Opening a database for writing (LevelDB's `DB::Open` and `DBImpl::Recover`): the
//! directory locked, a new database created if asked, the MANIFEST replayed, each live log
//! written to a level-0 table, a new log and a new MANIFEST started, obsolete files deleted.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use crate::arena::BlockPool;
use crate::db::{logs_to_replay, table_cache};
use crate::dbformat::InternalKeyComparator;
use crate::durable::create_dirs_on;
use crate::filename::log_file_name;
use crate::live_memtable::LiveMemTable;
use crate::lock::{DbLock, LOCK_FILE};
use crate::manifest::read_manifest_in;
use crate::recovery::replay_log;
use crate::storage::MAX_READ_BYTES;
use crate::version_edit::{NUM_LEVELS, VersionEdit};
use crate::version_set::{VersionSet, create_new_db};
use crate::writer::compaction_stats::CompactionStats;
use crate::writer::log_file::LogFile;
use crate::writer::no_current::{WithoutCurrent, lost_current, without_current};
use crate::writer::options::WritableOptions;
use crate::writer::shared::{Shared, State, view_of, write_table};
use crate::{Error, Result};

/// Opens (or creates) the database in `dir` for writing.
pub(crate) fn open(dir: &Path, options: &WritableOptions) -> Result<Arc<Shared>> {
    let options = options.sanitized()?;
    let lock = lock_database(dir, &options)?;
    if dir.join("CURRENT").exists() {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(
                format!("{}: exists (error_if_exists is true)", dir.display()).into(),
            ));
        }
    } else {
        match without_current(dir)? {
            WithoutCurrent::DatabaseFiles(files) => return Err(lost_current(dir, files)),
            // Another process removed CURRENT since it was seen.
            _ if !options.create_if_missing => {
                return Err(Error::NoDatabase {
                    path: dir.to_path_buf(),
                    exists: true,
                });
            }
            // A creation interrupted before CURRENT: its files are replaced (and an empty
            // log replayed and deleted), as LevelDB starts afresh there.
            WithoutCurrent::Nothing | WithoutCurrent::InterruptedCreation => {
                create_new_db(&*options.file_system, dir, options.read.comparator.name())?;
            }
        }
    }
    let storage = options.file_system.storage(dir);
    let (manifest, user) = read_manifest_in(&*storage, &options.read)?;
    let icmp = Arc::new(InternalKeyComparator::new(Arc::clone(&user)));
    let fs = Arc::clone(&options.file_system);
    let mut versions = VersionSet::recovered(Arc::clone(&fs), dir, Arc::clone(&icmp), &manifest);
    let names = storage.list().map_err(|e| Error::io(dir, e))?;
    let logs = logs_to_replay(&manifest, &names)?;
    // Before any file is written: numbers for a table per log, the new log and the new
    // MANIFEST, past every log's own number.
    // (The numbers are then allotted in LevelDB's order.)
    let next = versions.current.next_file_number;
    for &number in &logs {
        versions.mark_file_number_used(number);
    }
    versions.check_file_numbers(logs.len() as u64 + 2)?;
    versions.current.next_file_number = next;
    let read = &options.read;
    let tables = Arc::new(table_cache(
        Arc::clone(&storage),
        &user,
        read,
        read.verify_checksums,
    ));
    let build = options.build_options(&icmp);

    // Each live log becomes a level-0 table (LevelDB writes one per memtable's worth; the
    // tables hold the same versions).
    let mut edit = VersionEdit::default();
    let mut stats = [CompactionStats::default(); NUM_LEVELS];
    let mut max_sequence = versions.current.last_sequence;
    for &number in &logs {
        let path = dir.join(log_file_name(number));
        let source = storage
            .read_stream(&log_file_name(number), MAX_READ_BYTES)
            .map_err(|e| Error::io(&path, e))?;
        let replayed = replay_log(number, &path, source, true, read.paranoid_checks, &user)?;
        if let Some(max) = replayed.max_sequence {
            max_sequence = max_sequence.max(max);
        }
        if !replayed.table.is_empty() {
            let table = versions.new_file_number()?;
            let start = Instant::now();
            let meta = write_table(&fs, dir, &build, &tables, table, |add| {
                replayed.table.try_for_each(|k, v| add(k, v))
            })?;
            if let Some(meta) = meta {
                stats[0].add(CompactionStats::since(start, 0, 0, meta.file_size));
                edit.new_files.push((0, meta));
            }
        }
        versions.mark_file_number_used(number);
    }
    versions.current.last_sequence = max_sequence.min(crate::dbformat::MAX_SEQUENCE);
    let log_number = versions.new_file_number()?;
    let mut log = LogFile::create_log(&fs, dir, log_number, options.write_buffer_size)?;
    edit.log_number = Some(log_number);
    edit.prev_log_number = Some(0);
    if let Err(e) = versions.log_and_apply(&mut edit) {
        drop(log);
        let _ = fs.remove(&dir.join(log_file_name(log_number)));
        return Err(e);
    }
    // The change synced the directory before it was applied: the log's name is durable.
    log.name_is_durable();
    // A memtable's blocks go to the next once it is flushed: one memtable's worth is kept.
    let blocks = BlockPool::new(options.write_buffer_size);
    let mem = Arc::new(LiveMemTable::for_writes(
        &user,
        options.write_buffer_size,
        &blocks,
    ));
    let view = Arc::new(view_of(
        &icmp,
        &tables,
        &mem,
        None,
        &versions.current.levels,
    ));
    let last_sequence = versions.current.last_sequence;
    let state = State {
        versions,
        mem,
        imm: None,
        log_number,
        writers: VecDeque::new(),
        pending: HashMap::new(),
        done: HashMap::new(),
        next_writer: 0,
        sleeping: 0,
        snapshots: BTreeMap::new(),
        pending_outputs: BTreeSet::new(),
        bg_error: None,
        manual: None,
        shutting_down: false,
        views: vec![Arc::downgrade(&view)],
        compactions: 0,
        stats,
        file_to_compact: None,
        in_step: false,
    };
    let shared = Arc::new(Shared {
        dir: dir.to_path_buf(),
        user,
        icmp,
        build,
        tables,
        state: Mutex::new(state),
        writers_cv: Condvar::new(),
        commits: AtomicU64::new(0),
        finished_cv: Condvar::new(),
        work_cv: Condvar::new(),
        view: RwLock::new(view),
        visible_sequence: AtomicU64::new(last_sequence),
        closing: AtomicBool::new(false),
        has_imm: AtomicBool::new(false),
        seeks: Mutex::new(HashMap::new()),
        blocks,
        log: Mutex::new(log),
        options,
        _lock: lock,
        #[cfg(test)]
        read_view_pause: Mutex::new(None),
    });
    drop(shared.remove_obsolete_files(shared.state()));
    Ok(shared)
}

/// Takes the directory's `LOCK` as LevelDB's `DB::Open` does, creating the directory first
/// if `create_if_missing`. The lock comes before `CURRENT` is looked for, so that an open
/// racing another one that is creating the database is told the database is locked.
/// Without `create_if_missing`, a directory that is missing or holds no database is refused
/// before anything (not even `LOCK`) is created in it.
///
/// # Errors
/// [`Error::NoDatabase`], [`Error::LostCurrent`], [`Error::Locked`]; a path that is not a
/// directory, or a directory that cannot be created.
fn lock_database(dir: &Path, options: &WritableOptions) -> Result<DbLock> {
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            let e = std::io::Error::from(std::io::ErrorKind::NotADirectory);
            return Err(Error::op("cannot open", dir, e));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && options.create_if_missing => {
            create_database_dir(dir, options)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::NoDatabase {
                path: dir.to_path_buf(),
                exists: false,
            });
        }
        Err(e) => return Err(Error::op("cannot open", dir, e)),
    }
    let current = dir.join("CURRENT").exists();
    let lock_file = dir.join(LOCK_FILE).exists();
    // A database's files without CURRENT and without LOCK: no process is creating a
    // database here (LOCK comes first), so it lost CURRENT; refused creating nothing.
    if !current
        && !lock_file
        && let WithoutCurrent::DatabaseFiles(files) = without_current(dir)?
    {
        return Err(lost_current(dir, files));
    }
    if options.create_if_missing || current {
        return DbLock::acquire_on(&*options.file_system, dir);
    }
    // No CURRENT, and none to be made: refused, creating nothing. If another process holds
    // LOCK (it may be creating the database right now), that is the answer.
    if lock_file {
        DbLock::acquire_on(&*options.file_system, dir)?;
    }
    match without_current(dir)? {
        WithoutCurrent::DatabaseFiles(files) => Err(lost_current(dir, files)),
        WithoutCurrent::Nothing | WithoutCurrent::InterruptedCreation => Err(Error::NoDatabase {
            path: dir.to_path_buf(),
            exists: true,
        }),
    }
}

/// Creates the database's directory and its missing parents, syncing the parent of each, so
/// that the directory's path survives a power loss once the open returns (LevelDB creates
/// it without syncing anything).
fn create_database_dir(dir: &Path, options: &WritableOptions) -> Result<()> {
    create_dirs_on(&*options.file_system, dir)
}
