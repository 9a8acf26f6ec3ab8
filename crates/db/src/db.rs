//! A LevelDB database opened read-only: recovery as `DBImpl::Recover` does it, without
//! writing anything, and reads at any snapshot.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leveltable_filter_policy::BloomFilterPolicy;
use leveltable_table::{Cache, Comparator, ReadOptions};

use crate::db_iter::{DbIter, Versions};
use crate::dbformat::{
    InternalFilterPolicy, InternalKeyComparator, LookupKey, LookupResult, MAX_SEQUENCE, ValueType,
    append_internal_key, lookup_key,
};
use crate::filename::{FileType, log_file_name, parse_file_name, table_file_name};
use crate::merger::{Merger, Origin, Source, Store};
use crate::options::{
    DEFAULT_BLOCK_CACHE_BYTES, DbOptions, DbProperties, DbVerifySummary, LogInfo, TableInfo,
};
use crate::recovery::replay_log;
use crate::storage::{LocalDir, Storage};
use crate::table_cache::TableCache;
use crate::version_edit::FileMetaData;
use crate::version_set::Manifest;
use crate::{Error, Result};

/// Bits per key of the Bloom policy tables are read with; a Bloom filter stores its probe
/// count, so any LevelDB Bloom filter reads correctly.
const READ_BLOOM_BITS: usize = 10;

/// A LevelDB database, open read-only. `Send + Sync`: share it between threads.
///
/// Opening reads `CURRENT`, the MANIFEST it names and the live logs; it creates, locks,
/// modifies and deletes nothing, so a database another process holds open can be read.
/// Tables open lazily through a cache of at most [`DbOptions::max_open_tables`].
pub struct Db {
    pub(crate) dir: PathBuf,
    pub(crate) store: Arc<Store>,
    pub(crate) user: Arc<dyn Comparator>,
    pub(crate) last_sequence: u64,
    /// Gets take the newest version of all sources (a salvage) instead of the first found
    /// in LevelDB's search order.
    pub(crate) newest_wins: bool,
    pub(crate) properties: DbProperties,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.dir)
            .field("last_sequence", &self.last_sequence)
            .field("tables", &self.store.tables)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
};

/// The names in a directory.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Reads a file of the database whole.
pub(crate) fn read_file(dir: &Path, name: &str) -> Result<Vec<u8>> {
    fs::read(dir.join(name)).map_err(|e| Error::io(dir.join(name), e))
}

/// Table read options for a database with the user comparator `user`.
pub(crate) fn table_options(
    user: &Arc<dyn Comparator>,
    options: &DbOptions,
    verify: bool,
) -> ReadOptions {
    let cache = options
        .block_cache
        .clone()
        .unwrap_or_else(|| Cache::shared(DEFAULT_BLOCK_CACHE_BYTES));
    ReadOptions::default()
        .comparator(Arc::new(InternalKeyComparator::new(Arc::clone(user))))
        .filter_policy(InternalFilterPolicy::new(BloomFilterPolicy::new(
            READ_BLOOM_BITS,
        )))
        .verify_checksums(verify)
        .profile(options.profile)
        .block_cache(cache)
}

/// Reads `CURRENT` and replays the MANIFEST it names.
pub(crate) fn read_manifest(dir: &Path, user: &Arc<dyn Comparator>) -> Result<Manifest> {
    read_manifest_in(&LocalDir::new(dir), user)
}

/// Reads `CURRENT` in `storage` and replays the MANIFEST it names.
pub(crate) fn read_manifest_in(
    storage: &dyn Storage,
    user: &Arc<dyn Comparator>,
) -> Result<Manifest> {
    let dir = &storage.path();
    let current = match storage.read("CURRENT") {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::MissingFile {
                file: "CURRENT".into(),
                what: format!(
                    "{} is not a LevelDB database (no CURRENT file)",
                    dir.display()
                )
                .into(),
            });
        }
        Err(e) => return Err(Error::io(dir.join("CURRENT"), e)),
    };
    let name = match current.strip_suffix(b"\n") {
        Some(name) if !name.is_empty() => String::from_utf8_lossy(name).into_owned(),
        _ => {
            return Err(Error::corruption(
                "CURRENT",
                "CURRENT file (does not end with newline)",
                0,
            ));
        }
    };
    if !matches!(parse_file_name(&name), Some(FileType::Manifest(_))) {
        return Err(Error::corruption(
            "CURRENT",
            format!("CURRENT file (names {name:?}, not a MANIFEST)"),
            0,
        ));
    }
    let data = match storage.read(&name) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::MissingFile {
                file: name.into(),
                what: "CURRENT names it (CURRENT points to a non-existent file)".into(),
            });
        }
        Err(e) => return Err(Error::io(dir.join(&name), e)),
    };
    Manifest::replay(&name, &data, user)
}

/// The internal-key bounds of user-key bounds.
/// Opens retried while the directory changes under us.
const OPEN_ATTEMPTS: u32 = 50;

/// Bounds on internal keys.
type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn internal_bounds<K: AsRef<[u8]> + ?Sized>(range: &impl RangeBounds<K>) -> Result<KeyBounds> {
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
    /// options'; [`Error::KeptChanging`] if another process changed the set of files
    /// during each of 50 attempts; [`Error::Io`] if reading fails.
    pub fn open(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        Db::open_storage(Arc::new(LocalDir::new(path)), options)
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
        let user = Arc::clone(&options.comparator);
        let manifest = read_manifest_in(&**storage, &user)?;
        let names = storage.list().map_err(|e| Error::io(&dir, e))?;
        let mut expected: BTreeSet<u64> = manifest.live_files().collect();
        let mut logs = Vec::new();
        for name in &names {
            let Some(t) = parse_file_name(name) else {
                continue;
            };
            let number = match t {
                FileType::Log(n)
                | FileType::Table(n)
                | FileType::Manifest(n)
                | FileType::Temp(n) => n,
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
        let mut last_sequence = manifest.last_sequence;
        let mut sources = Vec::new();
        let mut log_infos: Vec<LogInfo> = Vec::new();
        for &number in &logs {
            let name = log_file_name(number);
            let data = storage
                .read(&name)
                .map_err(|e| Error::io(dir.join(&name), e))?;
            let replayed = replay_log(number, &data, true, options.paranoid_checks, &user)?;
            if let Some(max) = replayed.max_sequence {
                last_sequence = last_sequence.max(max);
            }
            log_infos.push(replayed.info);
            sources.push(Source::Mem {
                origin: Origin::Log { number },
                table: Arc::new(replayed.table),
            });
        }
        // Newest first: logs, then level-0 tables by number, then the deeper levels.
        sources.reverse();
        let mut level0: Vec<Arc<FileMetaData>> = manifest.levels[0].clone();
        level0.sort_by_key(|f| std::cmp::Reverse(f.number));
        for f in level0 {
            sources.push(Source::Files {
                level: Some(0),
                files: vec![f],
            });
        }
        for (level, files) in manifest.levels.iter().enumerate().skip(1) {
            if !files.is_empty() {
                sources.push(Source::Files {
                    level: Some(level),
                    files: files.clone(),
                });
            }
        }
        let levels = manifest
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| {
                files
                    .iter()
                    .map(|f| TableInfo {
                        number: f.number,
                        level: Some(level),
                        size: f.file_size,
                        smallest: f.smallest.clone(),
                        largest: f.largest.clone(),
                    })
                    .collect()
            })
            .collect();
        let properties = DbProperties {
            comparator: user.name().to_string(),
            manifest: Some(manifest.file.clone()),
            last_sequence,
            log_number: manifest.log_number,
            prev_log_number: manifest.prev_log_number,
            next_file_number: manifest.next_file_number,
            levels,
            memtable_versions: log_infos.iter().map(|l| l.versions).sum(),
            log_bytes: log_infos.iter().map(|l| l.size).sum(),
            log_bytes_dropped: log_infos
                .iter()
                .flat_map(|l| &l.dropped)
                .map(|d| d.bytes)
                .sum(),
            log_tail_bytes: log_infos.iter().map(|l| l.tail_bytes).sum(),
            logs: log_infos,
            skipped: Vec::new(),
        };
        let tables = TableCache::with_storage(
            Arc::clone(storage),
            options.max_open_tables,
            table_options(&user, options, options.verify_checksums),
        )
        .with_memory_map(options.memory_map)
        .with_memory_budget(options.table_memory_budget);
        Ok(Db::assemble(
            dir,
            user,
            sources,
            tables,
            last_sequence,
            false,
            properties,
        ))
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
        let store = Store {
            icmp: InternalKeyComparator::new(Arc::clone(&user)),
            tables,
            sources,
        };
        Db {
            dir,
            store: Arc::new(store),
            user,
            last_sequence: last_sequence.min(MAX_SEQUENCE),
            newest_wins,
            properties,
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
    /// number at or below it, `None` if that is a deletion or there is none.
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
        let key = LookupKey::new(key, sequence)?;
        let mut best = LookupResult::NotFound;
        for source in &self.store.sources {
            let found = match source {
                Source::Mem { table, .. } => table.lookup(&key)?,
                Source::Files { files, .. } => self.lookup_files(files, &key)?,
            };
            let seq = |r: &LookupResult| match r {
                LookupResult::Value { sequence, .. } | LookupResult::Deleted { sequence } => {
                    Some(*sequence)
                }
                LookupResult::NotFound => None,
            };
            if found == LookupResult::NotFound {
                continue;
            }
            if !self.newest_wins {
                return Ok(found);
            }
            if seq(&found) > seq(&best) {
                best = found;
            }
        }
        Ok(best)
    }

    fn lookup_files(&self, files: &[Arc<FileMetaData>], key: &LookupKey) -> Result<LookupResult> {
        let (target, user_key) = (key.target(), key.user_key());
        let icmp = &self.store.icmp;
        // The first file whose largest key is not below the target (LevelDB's FindFile).
        let i = files.partition_point(|f| icmp.compare(&f.largest, target) == Ordering::Less);
        let Some(f) = files.get(i) else {
            return Ok(LookupResult::NotFound);
        };
        let smallest_user = &f.smallest[..f.smallest.len().saturating_sub(8)];
        if self.user.compare(user_key, smallest_user) == Ordering::Less {
            return Ok(LookupResult::NotFound);
        }
        let table = self.store.tables.get(f.number)?;
        table
            .lookup(key)
            .map_err(|e| e.in_table(table_file_name(f.number)))
    }

    /// Every live key and value in key order, double-ended.
    pub fn iter(&self) -> DbIter {
        self.iter_at(self.last_sequence)
    }

    /// Every key and value visible at the snapshot `sequence`.
    pub fn iter_at(&self, sequence: u64) -> DbIter {
        let merger = Merger::new(Arc::clone(&self.store), Bound::Unbounded, Bound::Unbounded);
        DbIter::new(merger, sequence, Arc::clone(&self.user))
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
        let merger = Merger::new(Arc::clone(&self.store), lo, hi);
        DbIter::new(merger, sequence, Arc::clone(&self.user))
    }

    /// Every stored version of every key, in key order (newest first per key), labelled
    /// live, deleted or shadowed, with the file it came from: for forensic dumps.
    pub fn versions(&self) -> Versions {
        let merger = Merger::new(Arc::clone(&self.store), Bound::Unbounded, Bound::Unbounded);
        Versions::new(merger, Arc::clone(&self.user))
    }

    /// What the database holds: files per level with their key ranges, the logs replayed
    /// and what was dropped from them, the last sequence number, the comparator.
    pub fn properties(&self) -> &DbProperties {
        &self.properties
    }

    /// How many tables are open now (at most [`DbOptions::max_open_tables`]).
    pub fn open_tables(&self) -> usize {
        self.store.tables.open_tables()
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
        let icmp = &self.store.icmp;
        let mut total = 0u64;
        for source in &self.store.sources {
            let Source::Files { files, .. } = source else {
                continue;
            };
            for f in files {
                let size = if icmp.compare(&f.largest, key) != Ordering::Greater {
                    f.file_size
                } else if icmp.compare(&f.smallest, key) == Ordering::Greater {
                    0
                } else {
                    self.store
                        .tables
                        .get(f.number)?
                        .table()
                        .approximate_offset_of(key)
                };
                total = total.saturating_add(size);
            }
        }
        Ok(total)
    }

    /// Reads and checks every block of every table (checksums, encoding, order) and every
    /// record of the replayed logs.
    ///
    /// # Errors
    /// The first problem, naming the file: a table error, or for a log, the first record
    /// its replay dropped.
    pub fn verify(&self) -> Result<DbVerifySummary> {
        let mut summary = DbVerifySummary::default();
        for source in &self.store.sources {
            let Source::Files { files, .. } = source else {
                continue;
            };
            for f in files {
                let name = table_file_name(f.number);
                let table = self.store.tables.open(f.number)?;
                let s = table
                    .table()
                    .verify()
                    .map_err(|e| Error::from(e).in_table(name))?;
                summary.tables += 1;
                summary.table_entries += s.entries;
                summary.table_bytes += s.bytes_read;
            }
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
