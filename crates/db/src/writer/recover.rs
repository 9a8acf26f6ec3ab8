//! Opening a database for writing (LevelDB's `DB::Open` and `DBImpl::Recover`): the
//! directory locked, a new database created if asked, the MANIFEST replayed, each live log
//! written to a level-0 table, a new log and a new MANIFEST started, obsolete files deleted.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use crate::db::{list_dir, logs_to_replay, table_options};
use crate::dbformat::InternalKeyComparator;
use crate::filename::log_file_name;
use crate::live_memtable::LiveMemTable;
use crate::lock::DbLock;
use crate::recovery::replay_log;
use crate::storage::{LocalDir, MAX_READ_BYTES, Storage};
use crate::table_cache::TableCache;
use crate::version_edit::VersionEdit;
use crate::version_set::read_manifest_in;
use crate::writer::log_file::LogFile;
use crate::writer::options::WritableOptions;
use crate::writer::shared::{Shared, State, view_of, write_table};
use crate::writer::version_set::{VersionSet, create_new_db};
use crate::{Error, Result};

/// Opens (or creates) the database in `dir` for writing.
pub(crate) fn open(dir: &Path, options: &WritableOptions) -> Result<Arc<Shared>> {
    let options = options.sanitized()?;
    let missing = || {
        Error::InvalidArgument(
            format!(
                "{}: does not exist (create_if_missing is false)",
                dir.display()
            )
            .into(),
        )
    };
    // Checked before the lock as well, so that a directory without a database gets no
    // LOCK file from an open that will not create one.
    if !options.create_if_missing && !dir.join("CURRENT").exists() {
        return Err(missing());
    }
    if options.create_if_missing {
        fs::create_dir_all(dir).map_err(|e| Error::op("cannot create", dir, e))?;
    }
    let lock = DbLock::acquire(dir)?;
    if !dir.join("CURRENT").exists() {
        if !options.create_if_missing {
            return Err(missing());
        }
        create_new_db(&*options.file_system, dir, options.read.comparator.name())?;
    } else if options.error_if_exists {
        return Err(Error::InvalidArgument(
            format!("{}: exists (error_if_exists is true)", dir.display()).into(),
        ));
    }
    let storage = Arc::new(LocalDir::new(dir));
    let (manifest, user) = read_manifest_in(&*storage, &options.read)?;
    let icmp = Arc::new(InternalKeyComparator::new(Arc::clone(&user)));
    let fs = Arc::clone(&options.file_system);
    let mut versions = VersionSet::recovered(Arc::clone(&fs), dir, Arc::clone(&icmp), &manifest);
    let names = list_dir(dir)?;
    let logs = logs_to_replay(&manifest, &names)?;
    let read = &options.read;
    let tables = Arc::new(
        TableCache::with_storage(
            storage,
            read.max_open_tables,
            table_options(&user, read, read.verify_checksums),
        )
        .with_memory_map(read.memory_map)
        .with_memory_budget(read.table_memory_budget),
    );
    let build = options.build_options(&icmp);

    // Each live log becomes a level-0 table (LevelDB writes one per memtable's worth; the
    // tables hold the same versions).
    let mut edit = VersionEdit::default();
    let mut max_sequence = versions.last_sequence;
    let log_dir = LocalDir::new(dir);
    for &number in &logs {
        let path = dir.join(log_file_name(number));
        let source = log_dir
            .read_stream(&log_file_name(number), MAX_READ_BYTES)
            .map_err(|e| Error::io(&path, e))?;
        let replayed = replay_log(number, &path, source, true, read.paranoid_checks, &user)?;
        if let Some(max) = replayed.max_sequence {
            max_sequence = max_sequence.max(max);
        }
        if !replayed.table.is_empty() {
            let table = versions.new_file_number();
            let meta = write_table(&fs, dir, &build, &tables, table, |add| {
                replayed.table.entries().try_for_each(|(k, v)| add(k, v))
            })?;
            if let Some(meta) = meta {
                edit.new_files.push((0, meta));
            }
        }
        versions.mark_file_number_used(number);
    }
    versions.last_sequence = max_sequence.min(crate::dbformat::MAX_SEQUENCE);
    let log_number = versions.new_file_number();
    let log = LogFile::create_log(&*fs, dir, log_number)?;
    edit.log_number = Some(log_number);
    edit.prev_log_number = Some(0);
    if let Err(e) = versions.log_and_apply(&mut edit) {
        drop(log);
        let _ = fs.remove(&dir.join(log_file_name(log_number)));
        return Err(e);
    }
    let mem = Arc::new(LiveMemTable::new(&user));
    let view = Arc::new(view_of(&icmp, &tables, &mem, None, &versions.levels));
    let last_sequence = versions.last_sequence;
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
        file_to_compact: None,
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
        log: Mutex::new(log),
        options,
        _lock: lock,
    });
    shared.remove_obsolete_files(&mut shared.state());
    Ok(shared)
}
