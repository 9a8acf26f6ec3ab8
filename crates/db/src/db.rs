//! A LevelDB database opened read-only: recovery as `DBImpl::Recover` does it, without
//! writing anything, and reads at any snapshot.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_table::{Cache, Comparator, ReadOptions};

use crate::db_iter::{DbIter, Versions};
use crate::dbformat::{
    InternalKeyComparator, LookupKey, LookupResult, MAX_SEQUENCE, ValueType, append_internal_key,
    ldb_read_options_for, lookup_key, show_key,
};
use crate::filename::{FileType, log_file_name, parse_file_name, table_file_name};
use crate::manifest::{Manifest, read_manifest_in};
use crate::merger::Merger;
use crate::options::{
    DEFAULT_BLOCK_CACHE_BYTES, DbOptions, DbProperties, DbVerifySummary, LogInfo,
};
use crate::recovery::replay_log;
use crate::storage::{MAX_READ_BYTES, Storage};
use crate::table_cache::TableCache;
use crate::version::{Origin, Source, Version, file_sources};
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// A LevelDB database, open read-only. `Send + Sync`: share it between threads.
///
/// Opening reads `CURRENT`, the MANIFEST it names and the live logs; it creates, locks,
/// modifies and deletes nothing, so a database another process holds open can be read.
/// Tables open lazily through a cache of at most [`DbOptions::max_open_tables`].
pub struct Db {
    pub(crate) dir: PathBuf,
    pub(crate) version: Arc<Version>,
    pub(crate) user: Arc<dyn Comparator>,
    pub(crate) last_sequence: u64,
    pub(crate) properties: DbProperties,
    /// The CPUs this process could run on when the database was opened (its affinity and
    /// CPU quota counted), which a large batch of lookups is shared between: asked once,
    /// since asking reads files (the cgroup's quota) and cost more than a batch's lookups
    /// of cached blocks.
    pub(crate) cores: usize,
    /// How far the MANIFEST and the logs were read, for [`refresh`](Self::refresh); `None`
    /// for a view that cannot be refreshed.
    pub(crate) tail: Option<crate::tail::TailRef>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.dir)
            .field("last_sequence", &self.last_sequence)
            .field("tables", &self.version.tables)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
};

/// Reads the log or MANIFEST `name` of `storage` whole, at most [`MAX_READ_BYTES`]; a
/// larger file is an I/O error naming it.
pub(crate) fn read_bounded(storage: &dyn Storage, name: &str) -> Result<Vec<u8>> {
    storage
        .read_bounded(name, MAX_READ_BYTES)
        .map_err(|e| Error::io(storage.path().join(name), e))
}

/// The logs an open replays, in order, given the names in the directory (LevelDB's
/// `DBImpl::Recover`): those numbered at least the MANIFEST's log number, and its previous
/// log.
///
/// # Errors
/// [`Error::MissingFile`] naming the first table the MANIFEST lists that no file of the
/// directory has the number of.
pub(crate) fn logs_to_replay(manifest: &Manifest, names: &[String]) -> Result<Vec<u64>> {
    let mut expected: BTreeSet<u64> = manifest.live_files().collect();
    let mut logs = Vec::new();
    for name in names {
        let Some(t) = parse_file_name(name) else {
            continue;
        };
        let number = match t {
            FileType::Log(n) | FileType::Table(n) | FileType::Manifest(n) | FileType::Temp(n) => n,
            _ => continue,
        };
        // As LevelDB: a file of any kind with a live table's number counts as it.
        expected.remove(&number);
        if let FileType::Log(n) = t
            && (n >= manifest.log_number || n == manifest.prev_log_number)
        {
            logs.push(n);
        }
    }
    if let Some(&missing) = expected.iter().next() {
        return Err(Error::MissingFile {
            file: table_file_name(missing).into(),
            what: format!(
                "{} lists it ({} table file{} missing)",
                manifest.file,
                expected.len(),
                if expected.len() == 1 { "" } else { "s" }
            )
            .into(),
        });
    }
    logs.sort_unstable();
    logs.dedup();
    Ok(logs)
}

/// Table read options for a database with the user comparator `user`.
fn table_options(user: &Arc<dyn Comparator>, options: &DbOptions, verify: bool) -> ReadOptions {
    let cache = options
        .block_cache
        .clone()
        .unwrap_or_else(|| Cache::shared(DEFAULT_BLOCK_CACHE_BYTES));
    let read = ldb_read_options_for(Arc::clone(user))
        .verify_checksums(verify)
        .profile(options.profile);
    // A cache of no bytes is none: every block is read from its file each time.
    if cache.capacity() == 0 {
        read
    } else {
        read.block_cache(cache)
    }
}

/// The cache of the tables of `storage`, read as `options` say (checksums checked if
/// `verify`).
pub(crate) fn table_cache(
    storage: Arc<dyn Storage>,
    user: &Arc<dyn Comparator>,
    options: &DbOptions,
    verify: bool,
) -> TableCache {
    TableCache::with_storage(
        storage,
        options.max_open_tables,
        table_options(user, options, verify),
    )
    .with_memory_map(options.memory_map)
    .with_memory_budget(options.table_memory_budget)
}

/// The internal-key bounds of user-key bounds.
/// Opens retried while the directory changes under us.
const OPEN_ATTEMPTS: u32 = 50;

/// Bounds on internal keys.
pub(crate) type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

pub(crate) fn internal_bounds<K: AsRef<[u8]> + ?Sized>(
    range: &impl RangeBounds<K>,
) -> Result<KeyBounds> {
    let key = |k: &K, sequence, t| -> Result<Vec<u8>> {
        let mut v = Vec::new();
        append_internal_key(&mut v, k.as_ref(), sequence, t)?;
        Ok(v)
    };
    let lo = match range.start_bound() {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(key(k, MAX_SEQUENCE, ValueType::FOR_SEEK)?),
        Bound::Excluded(k) => Bound::Excluded(key(k, 0, ValueType::Deletion)?),
    };
    let hi = match range.end_bound() {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(key(k, 0, ValueType::Deletion)?),
        Bound::Excluded(k) => Bound::Excluded(key(k, MAX_SEQUENCE, ValueType::FOR_SEEK)?),
    };
    Ok((lo, hi))
}

impl Db {
    /// Opens the database in `path` read-only, recovering as LevelDB's `DB::Open` does:
    /// `CURRENT` names the MANIFEST, whose edits give the tables of each level; logs
    /// numbered at least the MANIFEST's log number (and its previous log) are replayed in
    /// order into memory. Corrupt log records are skipped and counted (see
    /// [`properties`](Self::properties)), unless [`DbOptions::paranoid_checks`].
    ///
    /// # Errors
    /// [`Error::MissingFile`] for no `CURRENT`, a `CURRENT` naming a missing MANIFEST, or a
    /// table the MANIFEST lists that the directory lacks (naming `NNNNNN.ldb`);
    /// [`Error::Corruption`] naming the file for a malformed `CURRENT`, MANIFEST (bad
    /// checksum, bad edit, missing counter) or, when paranoid, log;
    /// [`Error::UnknownComparator`] if the MANIFEST names a comparator other than the
    /// options' (with [`DbOptions::comparators`], one the registry lacks);
    /// [`Error::KeptChanging`] if another process changed the set of files
    /// during each of 50 attempts; [`Error::Io`] if reading fails.
    pub fn open(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let storage = options.file_system.storage(path.as_ref());
        Db::open_storage(storage, options)
    }

    /// Opens the database whose files `storage` holds (a directory, or an object-store
    /// prefix through `leveltable-object`), as [`open`](Self::open) does.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_storage(storage: Arc<dyn Storage>, options: DbOptions) -> Result<Db> {
        let fingerprint = || storage.fingerprint();
        // A writer may change the directory while we read it: it appends an edit to the
        // MANIFEST (or switches to a new one) before it deletes the files the edit makes
        // obsolete. If CURRENT and the MANIFEST's size are the same after the open as
        // before, no file we needed was removed in between.
        let mut attempts = 0;
        loop {
            let before = fingerprint();
            let result = Db::open_once(&storage, &options);
            if before.is_none() || fingerprint() == before {
                return result;
            }
            attempts += 1;
            if attempts == OPEN_ATTEMPTS {
                return Err(Error::KeptChanging {
                    path: storage.path(),
                });
            }
            std::thread::yield_now();
        }
    }

    fn open_once(storage: &Arc<dyn Storage>, options: &DbOptions) -> Result<Db> {
        let dir = storage.path();
        let (manifest, user) = read_manifest_in(&**storage, options)?;
        let names = storage.list().map_err(|e| Error::io(&dir, e))?;
        let logs = logs_to_replay(&manifest, &names)?;
        let mut last_sequence = manifest.last_sequence;
        let mut sources = Vec::new();
        let mut log_infos: Vec<LogInfo> = Vec::new();
        let mut held = Vec::new();
        for &number in &logs {
            let name = log_file_name(number);
            let path = dir.join(&name);
            let source = storage
                .read_stream(&name, MAX_READ_BYTES)
                .map_err(|e| Error::io(&path, e))?;
            let replayed = replay_log(number, &path, source, true, options.paranoid_checks, &user)?;
            if let Some(max) = replayed.max_sequence {
                last_sequence = last_sequence.max(max);
            }
            replayed.table.build_key_filter();
            let table = Arc::new(replayed.table);
            held.push((replayed.info.clone(), Arc::clone(&table)));
            log_infos.push(replayed.info);
            sources.push(Source::Mem {
                origin: Origin::Log { number },
                table,
            });
        }
        // Newest first: logs, then level-0 tables by number, then the deeper levels.
        sources.reverse();
        sources.extend(file_sources(&manifest.levels.files));
        let levels = manifest.levels.infos();
        let mut properties = DbProperties {
            comparator: user.name().to_string(),
            manifest: Some(manifest.file.clone()),
            last_sequence,
            log_number: manifest.log_number,
            prev_log_number: manifest.prev_log_number,
            next_file_number: manifest.next_file_number,
            levels,
            logs: log_infos,
            ..DbProperties::default()
        };
        properties.count_logs();
        let tables = table_cache(
            Arc::clone(storage),
            &user,
            options,
            options.verify_checksums,
        );
        let mut db = Db::assemble(dir, user, sources, tables, last_sequence, false, properties);
        // A local directory only: a refresh reads the files' tails where they are.
        if db.dir.is_dir() {
            db.tail = Some(crate::tail::TailRef::new(crate::tail::Tail::new(
                Arc::clone(storage),
                manifest,
                held,
                db.last_sequence,
            )));
        }
        Ok(db)
    }

    pub(crate) fn assemble(
        dir: PathBuf,
        user: Arc<dyn Comparator>,
        sources: Vec<Source>,
        tables: TableCache,
        last_sequence: u64,
        newest_wins: bool,
        properties: DbProperties,
    ) -> Db {
        let version = Version::new(
            InternalKeyComparator::new(Arc::clone(&user)),
            Arc::new(tables),
            sources,
            newest_wins,
        );
        Db {
            dir,
            version: Arc::new(version),
            user,
            last_sequence: last_sequence.min(MAX_SEQUENCE),
            properties,
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            tail: None,
        }
    }

    /// A view over `version`, whose tables its own table cache opens, read at
    /// `last_sequence`: what a database open for writing shows as read-only.
    pub(crate) fn of_version(
        dir: PathBuf,
        version: Arc<Version>,
        last_sequence: u64,
        properties: DbProperties,
        cores: usize,
    ) -> Db {
        Db {
            dir,
            user: Arc::clone(version.icmp.user_comparator()),
            version,
            last_sequence: last_sequence.min(MAX_SEQUENCE),
            properties,
            cores,
            tail: None,
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The newest sequence number: reads without a snapshot read at it.
    pub fn snapshot(&self) -> u64 {
        self.last_sequence
    }

    /// The value of `key`, `None` if it is absent or deleted.
    ///
    /// # Errors
    /// A table that cannot be read ([`Error::TableFile`]), or was deleted since the open
    /// ([`Error::MissingFile`]: reopen the database).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_at(key, self.last_sequence)
    }

    /// The value of `key` at the snapshot `sequence`: the newest version with a sequence
    /// number at or below it, `None` if that is a deletion or there is none. A sequence
    /// past [`snapshot`](Self::snapshot) reads at it.
    ///
    /// # Errors
    /// As [`get`](Self::get); an invalid-argument error for a sequence beyond 2^56 - 1.
    pub fn get_at(&self, key: &[u8], sequence: u64) -> Result<Option<Vec<u8>>> {
        Ok(self.lookup(key, sequence)?.into_value())
    }

    /// What a lookup of `key` at `sequence` finds, with the sequence number of the version.
    ///
    /// # Errors
    /// As [`get_at`](Self::get_at).
    pub fn lookup(&self, key: &[u8], sequence: u64) -> Result<LookupResult> {
        let sequence = self.read_sequence(sequence);
        self.version.get(&LookupKey::new(key, sequence)?)
    }

    /// The sequence a read at `sequence` reads at: none newer than the handle's own. Its
    /// memtables may be shared with a handle that adds to them (the writer of a
    /// `WritableDb::view`, the handles refreshed from this one), and what is added after
    /// the handle was taken is not in it. A sequence past 2^56 - 1 stays, to be refused.
    pub(crate) fn read_sequence(&self, sequence: u64) -> u64 {
        if sequence > MAX_SEQUENCE {
            sequence
        } else {
            sequence.min(self.last_sequence)
        }
    }

    /// Every live key and value in key order, double-ended.
    pub fn iter(&self) -> DbIter {
        self.iter_at(self.last_sequence)
    }

    /// Every key and value visible at the snapshot `sequence` (at most
    /// [`snapshot`](Self::snapshot)).
    pub fn iter_at(&self, sequence: u64) -> DbIter {
        self.range_at::<[u8]>(.., sequence)
    }

    /// The live keys within `range` (user-key bounds), double-ended:
    /// `db.range(&b"a"[..]..&b"c"[..])`.
    pub fn range<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> DbIter {
        self.range_at(range, self.last_sequence)
    }

    /// The keys within `range` visible at the snapshot `sequence`.
    pub fn range_at<K: AsRef<[u8]> + ?Sized>(
        &self,
        range: impl RangeBounds<K>,
        sequence: u64,
    ) -> DbIter {
        // Keys longer than the tag's limits cannot fail to encode: only the sequence can,
        // and these bounds use 0 and MAX_SEQUENCE.
        let (lo, hi) = internal_bounds(&range).unwrap_or((Bound::Unbounded, Bound::Unbounded));
        let merger = Merger::new(Arc::clone(&self.version), lo, hi);
        DbIter::new(
            merger,
            sequence.min(self.last_sequence),
            Arc::clone(&self.user),
        )
    }

    /// Every stored version of every key, in key order (newest first per key), labelled
    /// live, deleted or shadowed, with the file it came from: for forensic dumps.
    pub fn versions(&self) -> Versions {
        let merger = Merger::new(
            Arc::clone(&self.version),
            Bound::Unbounded,
            Bound::Unbounded,
        );
        Versions::new(merger, Arc::clone(&self.user))
    }

    /// The stored versions of the keys within `range` (user-key bounds), in key order
    /// (newest first per key), labelled as [`versions`](Self::versions) labels them.
    pub fn versions_range<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Versions {
        // As in `range_at`: only the sequence can fail to encode, and these use fixed ones.
        let (lo, hi) = internal_bounds(&range).unwrap_or((Bound::Unbounded, Bound::Unbounded));
        let merger = Merger::new(Arc::clone(&self.version), lo, hi);
        Versions::new(merger, Arc::clone(&self.user))
    }

    /// What the database holds: files per level with their key ranges, the logs replayed
    /// and what was dropped from them, the last sequence number, the comparator.
    pub fn properties(&self) -> &DbProperties {
        &self.properties
    }

    /// The comparator the database's keys are ordered by.
    pub fn comparator(&self) -> &Arc<dyn Comparator> {
        self.version.icmp.user_comparator()
    }

    /// The capacity in bytes of the block cache (0 without one: see
    /// [`DbOptions::block_cache`]).
    pub fn block_cache_bytes(&self) -> u64 {
        self.version.tables.block_cache_capacity()
    }

    /// How many tables are open now (at most [`DbOptions::max_open_tables`]).
    pub fn open_tables(&self) -> usize {
        self.version.tables.open_tables()
    }

    /// The approximate bytes of table files holding the user keys in `[start, limit)`
    /// (LevelDB's `GetApproximateSizes`; the logs are not counted).
    ///
    /// # Errors
    /// A table that cannot be opened.
    pub fn approximate_size(&self, start: &[u8], limit: &[u8]) -> Result<u64> {
        let a = self.approximate_offset_of(&lookup_key(start, MAX_SEQUENCE)?)?;
        let b = self.approximate_offset_of(&lookup_key(limit, MAX_SEQUENCE)?)?;
        Ok(b.saturating_sub(a))
    }

    fn approximate_offset_of(&self, key: &[u8]) -> Result<u64> {
        let files = self.tables().map(|f| &**f);
        crate::version::approximate_offset_of(&self.version.icmp, &self.version.tables, files, key)
    }

    /// The tables the MANIFEST lists, in the order [`verify`](Self::verify) reads them.
    fn tables(&self) -> impl Iterator<Item = &Arc<FileMetaData>> {
        self.version.sources.iter().flat_map(|source| match source {
            Source::Files { files, .. } => files.as_slice(),
            Source::Mem { .. } => &[],
        })
    }

    /// Checks that the first and last keys of `table` are the range `f` gives it.
    fn check_range<R: leveltable_table::ReadAt>(
        &self,
        f: &FileMetaData,
        table: &leveltable_table::Table<R>,
    ) -> Result<()> {
        let mut it = table.iter();
        it.seek_to_first();
        let first = it.valid().then(|| it.key().to_vec());
        it.status()?;
        it.seek_to_last();
        let last = it.valid().then(|| it.key().to_vec());
        it.status()?;
        let icmp = &self.version.icmp;
        let same = |a: &Option<Vec<u8>>, b: &[u8]| {
            a.as_deref()
                .is_some_and(|a| icmp.compare(a, b) == Ordering::Equal)
        };
        if same(&first, &f.smallest) && same(&last, &f.largest) {
            return Ok(());
        }
        let held = match (&first, &last) {
            (Some(a), Some(b)) => format!("{} ..= {}", show_key(a), show_key(b)),
            _ => "no entries".to_string(),
        };
        Err(Error::corruption(
            table_file_name(f.number),
            format!(
                "key range (the table holds {held}, the MANIFEST gives it {} ..= {})",
                show_key(&f.smallest),
                show_key(&f.largest)
            ),
            0,
        ))
    }

    /// Reads and checks every block of every table (checksums, encoding, order), that each
    /// table's first and last keys are the range the MANIFEST gives it, and every record of
    /// the replayed logs.
    ///
    /// # Errors
    /// The first problem, naming the file: a table error, a table whose keys are not the
    /// range the MANIFEST gives it ([`Error::Corruption`] showing both ranges), or for a
    /// log, the first record its replay dropped.
    pub fn verify(&self) -> Result<DbVerifySummary> {
        self.verify_with_progress(&mut |_, _| {})
    }

    /// [`verify`](Self::verify), calling `progress(done, total)` as it goes: `total` is the
    /// bytes of the tables the MANIFEST lists (by the sizes it gives them), `done` how many
    /// of them are checked, reported after each data block and each table, so a caller can
    /// show how far a long verification has got.
    ///
    /// # Errors
    /// As [`verify`](Self::verify).
    pub fn verify_with_progress(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<DbVerifySummary> {
        let mut summary = DbVerifySummary::default();
        let total = self
            .tables()
            .fold(0u64, |sum, f| sum.saturating_add(f.file_size));
        let mut done = 0u64;
        for f in self.tables() {
            let name = table_file_name(f.number);
            let table = self.version.tables.open(f.number)?;
            // The MANIFEST's size is used for the count only; the table is read as it is.
            let size = f.file_size;
            let s = table
                .table()
                .verify_with_progress(&mut |at, _| {
                    progress(done.saturating_add(at.min(size)), total);
                })
                .map_err(|e| Error::from(e).in_table(name.clone()))?;
            self.check_range(f, table.table())
                .map_err(|e| e.in_table(name))?;
            summary.tables += 1;
            summary.table_entries += s.entries;
            summary.table_bytes += s.bytes_read;
            done = done.saturating_add(size);
            progress(done, total);
        }
        for log in &self.properties.logs {
            if let Some(d) = log.dropped.first() {
                return Err(Error::corruption(
                    log_file_name(log.number),
                    format!("log record ({}, {} bytes dropped)", d.reason, d.bytes),
                    d.offset,
                ));
            }
            summary.logs += 1;
            summary.log_records += log.records;
        }
        Ok(summary)
    }
}
