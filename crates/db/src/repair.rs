//! Repair: a new database holding, for each key, the newest version the evidence of a
//! damaged one supports, and a report of what was lost ([`repair`](crate::repair())).
//!
//! LevelDB's `RepairDB` counts every file of the directory and lets the newest sequence
//! number win. That brings back what was deleted: a table the MANIFEST no longer lists (a
//! compaction's input a crash left behind, a file of an older database in the directory)
//! still holds versions whose deletion a later compaction dropped with them. A repair trusts
//! the MANIFEST instead, when it can be read: the tables it lists and the logs it has not
//! retired are the live files, and only they decide a key, except where a live table or
//! block was lost. There the obsolete files may still hold the key's newest surviving
//! version; it is taken, and the key reported uncertain.
//!
//! - `repair/report.rs`: the report ([`RepairReport`]);
//! - `repair/lost.rs`: what was lost, and the key ranges each key falls in;
//! - `repair/in_place.rs`: a repair swapped in place of the damaged database;
//! - `repair/progress.rs`: how far a merge that reads each table once has got;
//! - `repair/origins.rs`: which file each entry of the merge comes from;
//! - `repair/copy.rs`: the tables copied as they are, verified, instead of merged;
//! - `repair/output.rs`: the repaired database, built and copied tables committed.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use leveltable_process::TemporaryDir;
use leveltable_table::{BytewiseComparator, Comparator};

use crate::db::Db;
use crate::dbformat::{ParsedInternalKey, ValueType, extract_user_key};
use crate::durable::sync_dir;
use crate::filename::{log_file_name, named, parent_dir, table_file_name};
use crate::manifest::{Manifest, read_manifest, recorded_comparator};
use crate::merger::Merger;
use crate::options::DbOptions;
use crate::salvage::TableRead;
use crate::storage::list_dir;
use crate::version::Origin;
use crate::{BulkOptions, Error, Result};

mod copy;
mod in_place;
mod lost;
mod origins;
mod output;
mod progress;
mod report;
mod report_file;

pub use in_place::repair_in_place;
pub use report::{IgnoredFile, KeyRange, LostData, LostKind, RepairReport, UncertainRange};

use lost::{Layer, LostRanges, collect_lost};
use origins::Origins;
use output::Output;
use progress::MergeProgress;

/// The name of LevelDB's bytewise comparator.
const BYTEWISE: &str = "leveldb.BytewiseComparator";

/// How to repair.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RepairOptions {
    /// How to read the source: its comparator (or a registry to choose it by the
    /// MANIFEST's name), table cache and memory budget. Its
    /// [`memory_map`](DbOptions::memory_map) is not used: the source's tables are read
    /// through reads, so that the repair's resident memory stays within
    /// [`table_memory_budget`](DbOptions::table_memory_budget) and a few buffers, whatever
    /// the source's size.
    pub db: DbOptions,
    /// How to write the repaired database's tables. Its compression is replaced by the
    /// source's (the first data block's) unless [`keep_compression`](Self::keep_compression)
    /// is false.
    pub bulk: BulkOptions,
    /// Write the repaired tables with the compression the source's tables use (so that
    /// the LevelDB that wrote it, Mojang's for a Bedrock world, reads the repair). Default
    /// true; the source's compression is [`bulk`](Self::bulk)'s when no table tells it.
    pub keep_compression: bool,
    /// Leave the uncertain keys out of the repaired database. Default false: they are kept
    /// and reported.
    pub drop_uncertain: bool,
    /// Uncertain keys listed per lost range in the report. Default 10.
    pub sample: usize,
}

impl Default for RepairOptions {
    fn default() -> RepairOptions {
        RepairOptions {
            db: DbOptions::default(),
            bulk: BulkOptions::default(),
            keep_compression: true,
            drop_uncertain: false,
            sample: 10,
        }
    }
}

impl RepairOptions {
    /// Sets [`db`](Self::db).
    pub fn db(mut self, options: DbOptions) -> Self {
        self.db = options;
        self
    }

    /// Sets [`bulk`](Self::bulk).
    pub fn bulk(mut self, options: BulkOptions) -> Self {
        self.bulk = options;
        self
    }

    /// Sets [`keep_compression`](Self::keep_compression).
    pub fn keep_compression(mut self, keep: bool) -> Self {
        self.keep_compression = keep;
        self
    }

    /// Sets [`drop_uncertain`](Self::drop_uncertain).
    pub fn drop_uncertain(mut self, drop: bool) -> Self {
        self.drop_uncertain = drop;
        self
    }

    /// Sets [`sample`](Self::sample).
    pub fn sample(mut self, keys: usize) -> Self {
        self.sample = keys;
        self
    }
}

/// Repairs the database `src` into the new database `dest`, writing nothing in `src`.
///
/// Every log and table of `src` is read with its checksums checked; what cannot be read is
/// lost and reported. A log's torn tail, which an open takes silently for a write a crash
/// cut short, is read again past a record whose checksum proves a damaged length, and what
/// cannot be read of it is reported ([`LostKind::LogTail`]).
///
/// If the MANIFEST `CURRENT` names can be read, the tables it lists and the logs it has not
/// retired are live, and of each key the newest live version wins: a deletion found in a
/// live file stays a deletion (the key is left out of `dest`), and a file the MANIFEST no
/// longer lists is ignored, but for keys in the range of a lost live table or block that no
/// newer live version decides, where its newest version is taken and the key reported
/// uncertain. If no MANIFEST can be read, every file is live and the newest sequence number
/// wins (`RepairDB`'s rule), and the report says so.
///
/// A key is uncertain when a lost table or block covers it and its newest version found is
/// no newer than that table or block (by LevelDB's order of levels: logs, then level-0
/// tables newest first, then each level), so that a newer version, or its deletion, may
/// have been lost. Uncertain keys are kept unless
/// [`drop_uncertain`](RepairOptions::drop_uncertain).
///
/// A live table whose keys no other file (or lost range) reaches is copied as it is, and
/// the copy verified whole (checksums, key order, index, filter, internal keys); the
/// others are merged. `dest` is built through a bulk build, beside the copies, in a hidden
/// directory beside it and renamed into place once whole: it must not exist, or be an empty directory. LevelDB 1.23 opens it.
/// It is ordered by the comparator the source's MANIFEST names, and its MANIFEST names
/// that comparator: the options must know it, in their registry
/// ([`DbOptions::comparators`], where Chromium's `idb_cmp1` is registered by
/// `leveltable_chromium::comparators()`) or as their comparator. A source whose MANIFEST
/// names none is read and written bytewise with a registry, else by the options'
/// comparator.
///
/// # Errors
/// [`Error::RepairComparator`], naming the MANIFEST and the comparator, for a source whose
/// MANIFEST records a comparator the options do not know, found before anything is read
/// whole or written;
/// [`Error::InvalidArgument`] for a `dest` that is not empty or lies inside `src`;
/// [`Error::UnknownComparator`] as [`Db::salvage`]; errors listing `src`,
/// reading a table that was read whole before, or building `dest` (nothing is left at
/// `dest`).
pub fn repair(
    src: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    options: &RepairOptions,
) -> Result<RepairReport> {
    repair_with_progress(src, dest, options, &mut |_, _| {})
}

/// [`repair()`], calling `progress(done, total)` as the source's files are read (bytes, as
/// [`Db::salvage_with_progress`] counts them).
///
/// # Errors
/// As [`repair()`].
pub fn repair_with_progress(
    src: impl AsRef<Path>,
    dest: impl AsRef<Path>,
    options: &RepairOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let (src, dest) = (src.as_ref(), dest.as_ref());
    check_order(src, options)?;
    let resolved = named(dest)?;
    check_dest(src, &resolved)?;
    let parent = parent_dir(&resolved);
    let staging = TemporaryDir::new_in(parent, ".leveltable-repair-")
        .map_err(|e| Error::op("cannot create a directory in", parent, e))?;
    let built = staging.path().join("db");
    let mut report = build(src, &built, options, progress)?;
    report.dest = dest.to_owned();
    // Whole: under its final name in one rename (onto nothing, or an empty directory).
    std::fs::rename(&built, &resolved)
        .map_err(|e| Error::op(format!("cannot rename {} to", built.display()), dest, e))?;
    sync_dir(parent)?;
    drop(staging);
    Ok(report)
}

/// The comparator a repair of `src` reads and writes it by, found before anything is read
/// whole or written: the one its MANIFEST records (the one `CURRENT` names, or else the
/// newest that names one), taken from the options' registry or, without one, the options'
/// own comparator if it has that name; for a source whose MANIFEST names none, bytewise
/// (with a registry, as LevelDB reads it) or the options' own.
///
/// # Errors
/// [`Error::RepairComparator`] for a comparator the options do not know; errors listing
/// `src`.
pub(crate) fn check_order(src: &Path, options: &RepairOptions) -> Result<Arc<dyn Comparator>> {
    let db = &options.db;
    match recorded_comparator(src, &list_dir(src)?) {
        Some((file, name)) => {
            let known = match &db.comparators {
                Some(registry) => registry.get(&name).cloned(),
                None => (db.comparator.name() == name).then(|| Arc::clone(&db.comparator)),
            };
            known.ok_or_else(|| Error::RepairComparator {
                file: src.join(file),
                name,
            })
        }
        None if db.comparators.is_some() => Ok(Arc::new(BytewiseComparator)),
        None => Ok(Arc::clone(&db.comparator)),
    }
}

/// Refuses a `dest` that exists and is not an empty directory, or that lies in `src`.
fn check_dest(src: &Path, dest: &Path) -> Result<()> {
    match std::fs::read_dir(dest).map(|mut entries| entries.next().is_none()) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Error::InvalidArgument(
                format!(
                    "{} is not empty: a repair writes a new database",
                    dest.display()
                )
                .into(),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(Error::io(dest, source)),
    }
    let src = std::fs::canonicalize(src).map_err(|e| Error::io(src, e))?;
    let parent = std::fs::canonicalize(parent_dir(dest)).map_err(|e| Error::io(dest, e))?;
    if parent.starts_with(&src) {
        return Err(Error::InvalidArgument(
            format!(
                "{} is inside {}: a repair writes nothing in the database it reads",
                dest.display(),
                src.display()
            )
            .into(),
        ));
    }
    Ok(())
}

/// Reads `src` and builds the repaired database at `dest` (a path that does not exist).
///
/// The salvage reads the tables that open at their ends only; those whose keys no other
/// file reaches are then copied as they are and each copy verified whole (`repair/copy.rs`),
/// and the merge reads the others through, checking every checksum and the order of their
/// keys. A table damaged further in fails its copy's verification (it is merged instead)
/// or the merge; the repair then starts again, with the salvage reading every table whole
/// first, to tell what was lost and where.
pub(crate) fn build(
    src: &Path,
    dest: &Path,
    options: &RepairOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    match build_reading(src, dest, options, TableRead::Ends, progress)? {
        Ok(report) => Ok(report),
        Err(_damaged) => build_reading(src, dest, options, TableRead::Whole, progress)?,
    }
}

/// [`build`], the salvage reading tables as `read` says. `Ok(Err(e))` is an error reading
/// the source in the merge (nothing is left at `dest`); `Err(e)` one of anything else.
fn build_reading(
    src: &Path,
    dest: &Path,
    options: &RepairOptions,
    read: TableRead,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Result<RepairReport>> {
    // Read by the comparator the MANIFEST names even when the MANIFEST itself is not the
    // one `CURRENT` names (or `CURRENT` is lost), and written by it.
    let order = check_order(src, options)?;
    // Through reads, not maps: each table is read once, in order, and the pages of mapped
    // tables would stay resident while the table cache keeps them open (up to its tables'
    // whole size), where reads keep memory within the budget whatever the source's size.
    // A damaged source's file that shrinks meanwhile is then an error, not a SIGBUS.
    let read_options = options.db.clone().comparator(order).memory_map(false);
    // Read at their ends only, the tables are read through in the merge: its progress is
    // counted there.
    let (db, damage) = match read {
        TableRead::Whole => Db::salvage_checked(src, read_options.clone(), true, read, progress)?,
        TableRead::Ends => {
            Db::salvage_checked(src, read_options.clone(), true, read, &mut |_, _| {})?
        }
    };
    let mut merged = (read == TableRead::Ends).then(|| MergeProgress::new(&db));
    if let Some(m) = &merged {
        let (done, total) = m.now();
        progress(done, total);
    }
    let user = Arc::clone(&db.user);
    let manifest = read_manifest(src, &read_options);
    let (manifest, manifest_error) = match manifest {
        Ok((m, _)) => (Some(m), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut report = RepairReport {
        source: src.to_owned(),
        manifest: manifest.as_ref().map(|m| m.file.clone()),
        manifest_error,
        comparator: user.name().to_string(),
        uncertain_dropped: options.drop_uncertain,
        ..RepairReport::default()
    };
    let live = LiveFiles::new(manifest.as_ref());
    let ranges = collect_lost(&db, &damage, manifest.as_ref(), &live, &mut report);

    let mut bulk = options.bulk.clone();
    if options.keep_compression
        && let Some(c) = lost::source_compression(&db)
    {
        bulk.table.compression = c;
    }
    let order = (user.name() != BYTEWISE).then(|| Arc::clone(&user));
    let mut output = Output::create(dest, bulk, order, Arc::clone(&user))?;
    // Tables whose keys no other file reaches are copied as they are (their compression
    // kept: not when the options ask for the bulk options' own).
    let copied = if options.keep_compression {
        let candidates = copy::copyable(&db.version, &ranges, &live, user.as_ref());
        copy::copy_tables(
            src,
            &candidates,
            &output.copies_dir(),
            &read_options,
            &user,
            &mut |size| {
                if let Some(m) = &mut merged {
                    m.add(size);
                    let (done, total) = m.now();
                    progress(done, total);
                }
            },
        )?
    } else {
        Vec::new()
    };
    for c in &copied {
        report.keys += c.keys;
        report.deleted += c.deleted;
    }
    report.tables_copied = copied.len() as u64;
    let skip: BTreeSet<u64> = copied.iter().map(|c| c.number).collect();
    if let Some(m) = &mut merged {
        m.skip(&skip);
    }
    output.set_copied(copied);
    let mut resolver = Resolver {
        user: Arc::clone(&user),
        live,
        ranges,
        drop_uncertain: options.drop_uncertain,
        sample: options.sample,
        uncertain: BTreeMap::new(),
        report: &mut report,
    };
    // The merge of every source, read with no allocation per entry: each key's versions
    // (up to its first live one) are copied into slots whose buffers are reused.
    let version = Arc::new(copy::without(&db.version, &skip));
    let mut merger = Merger::new(Arc::clone(&version), Bound::Unbounded, Bound::Unbounded);
    // Each entry's origin and whether it is live, found without a lookup per entry.
    let mut origins = Origins::new(&version, &resolver.live);
    let mut key: Vec<u8> = Vec::new();
    let mut slots: Vec<Candidate> = Vec::new();
    let mut held = 0usize;
    // Whether a live version is among the held ones: only the versions up to the first
    // live one can be taken, so no more are kept.
    let mut holds_live = false;
    // Keys until the progress is looked at again.
    let mut until_progress = 0u32;
    loop {
        let (internal, source) = match merger.next_front() {
            Ok(Some((internal, _, source))) => (internal, source),
            Ok(None) => break,
            Err(e) => return Ok(Err(e)),
        };
        let p = match ParsedInternalKey::parse(internal) {
            Ok(p) => p,
            Err(e) => {
                let what = format!("internal key ({e})");
                return Ok(Err(match version.origin(source, internal) {
                    Origin::Table { number, .. } => {
                        Error::corruption(table_file_name(number), what, 0)
                    }
                    Origin::Log { number } => Error::corruption(log_file_name(number), what, 0),
                }));
            }
        };
        let value_type = p.value_type;
        let (origin, live) = origins.of(&version, &resolver.live, source, internal);
        if held > 0 && user.compare(&key, p.user_key) != Ordering::Equal {
            if let Some(i) = resolver.resolve(&key, &slots[..held]) {
                output.add(&key, &slots[i].value)?;
            }
            held = 0;
            holds_live = false;
        }
        if held == 0 {
            key.clear();
            key.extend_from_slice(p.user_key);
            if let Some(m) = &mut merged {
                if until_progress == 0 {
                    until_progress = PROGRESS_KEYS;
                    if m.reached(&key, user.as_ref()) {
                        let (done, total) = m.now();
                        progress(done, total);
                    }
                }
                until_progress -= 1;
            }
            // A key of one version (the next entry is another key's, the usual case): decided
            // at once, its value added as the merge lends it, without a copy.
            if let Err(e) = merger.ready_front() {
                return Ok(Err(e));
            }
            let single = merger.front_key().is_none_or(|next| {
                extract_user_key(next).is_none_or(|u| user.compare(u, &key) != Ordering::Equal)
            });
            if single {
                fill_slot(&mut slots, 0, origin, live, value_type, &[]);
                if resolver.resolve(&key, &slots[..1]).is_some() {
                    output.add(&key, merger.held().1)?;
                }
                continue;
            }
        }
        if !holds_live {
            held = fill_slot(&mut slots, held, origin, live, value_type, merger.held().1) + 1;
            holds_live = live;
        } else if !live {
            resolver.report.obsolete_ignored += 1;
        }
    }
    if held > 0
        && let Some(i) = resolver.resolve(&key, &slots[..held])
    {
        output.add(&key, &slots[i].value)?;
    }
    if let Some(m) = &mut merged {
        m.finish();
        let (done, total) = m.now();
        progress(done, total);
    }
    let uncertain = std::mem::take(&mut resolver.uncertain);
    report.uncertain = uncertain.into_values().collect();
    let summary = output.finish()?;
    report.tables = summary.tables;
    report.bytes = summary.bytes;
    Ok(Ok(report))
}

/// Keys a repair merges between two looks at how far it has got.
const PROGRESS_KEYS: u32 = 1024;

/// Sets `slots[i]` (pushed if `i` is their number) to a version; returns `i`.
fn fill_slot(
    slots: &mut Vec<Candidate>,
    i: usize,
    origin: Origin,
    live: bool,
    value_type: ValueType,
    value: &[u8],
) -> usize {
    if i == slots.len() {
        slots.push(Candidate {
            origin,
            live,
            value_type,
            value: Vec::new(),
        });
    }
    let slot = &mut slots[i];
    slot.origin = origin;
    slot.live = live;
    slot.value_type = value_type;
    slot.value.clear();
    slot.value.extend_from_slice(value);
    i
}

/// Which files the MANIFEST counts live.
pub(crate) struct LiveFiles {
    /// `None`: no MANIFEST, every file is live.
    tables: Option<BTreeSet<u64>>,
    log_number: u64,
    prev_log_number: u64,
    /// Tables numbered from here on were made after the MANIFEST's last edit that could be
    /// read (one lost to a torn record, say): they are live.
    next_file_number: u64,
}

impl LiveFiles {
    fn new(manifest: Option<&Manifest>) -> LiveFiles {
        LiveFiles {
            tables: manifest.map(|m| m.live_files().collect()),
            log_number: manifest.map_or(0, |m| m.log_number),
            prev_log_number: manifest.map_or(0, |m| m.prev_log_number),
            next_file_number: manifest.map_or(0, |m| m.next_file_number),
        }
    }

    /// Whether the MANIFEST read counts the file live (every file, without one).
    pub(crate) fn is_live(&self, origin: Origin) -> bool {
        let Some(tables) = &self.tables else {
            return true;
        };
        match origin {
            // Versions a salvage read from a damaged block without its checksum come as
            // table 0, which no database has: they count as obsolete.
            Origin::Table { number, .. } => {
                number != 0 && (tables.contains(&number) || number >= self.next_file_number)
            }
            Origin::Log { number } => self.is_live_log(number),
        }
    }

    /// Whether the MANIFEST read lists the table `number` (every table, without one).
    pub(crate) fn is_live_table(&self, number: u64) -> bool {
        self.tables
            .as_ref()
            .is_none_or(|t| t.contains(&number) || number >= self.next_file_number)
    }

    /// Whether the log `number` is live: not retired by the MANIFEST's log number.
    pub(crate) fn is_live_log(&self, number: u64) -> bool {
        self.tables.is_none()
            || number >= self.log_number
            || (self.prev_log_number != 0 && number == self.prev_log_number)
    }

    /// How new a live file's versions are against others', for a key: the smaller the
    /// newer. Without a MANIFEST nothing is known, and every file is alike.
    pub(crate) fn layer(&self, origin: Origin) -> Layer {
        if self.tables.is_none() || !self.is_live(origin) {
            return Layer::Unknown;
        }
        match origin {
            Origin::Log { .. } => Layer::Known(0, 0),
            Origin::Table {
                number,
                level: Some(0),
            } => Layer::Known(1, u64::MAX - number),
            Origin::Table {
                level: Some(level), ..
            } => Layer::Known(1 + level as u64, 0),
            Origin::Table { level: None, .. } => Layer::Unknown,
        }
    }
}

/// One stored version of the key at hand, as the merge found it.
struct Candidate {
    /// The file it came from.
    origin: Origin,
    /// Whether the MANIFEST counts that file live.
    live: bool,
    /// Put or delete.
    value_type: ValueType,
    /// The value (empty for deletions).
    value: Vec<u8>,
}

/// Decides each key from its versions.
struct Resolver<'r> {
    user: Arc<dyn Comparator>,
    live: LiveFiles,
    ranges: LostRanges,
    drop_uncertain: bool,
    sample: usize,
    uncertain: BTreeMap<usize, UncertainRange>,
    report: &'r mut RepairReport,
}

impl Resolver<'_> {
    /// Which of `key`'s versions (newest first, up to the first live one) gives its value
    /// in the repaired database; `None` to leave it out.
    fn resolve(&mut self, key: &[u8], versions: &[Candidate]) -> Option<usize> {
        self.ranges.advance(key, self.user.as_ref());
        let lost_here = !self.ranges.active.is_empty();
        // The newest live version decides, if it is newer than every lost range covering
        // the key; otherwise, in a lost range, the newest version of any file.
        let newest_live = versions.iter().position(|v| v.live);
        let certain_live = newest_live.filter(|&i| {
            if !lost_here {
                return true;
            }
            let layer = self.live.layer(versions[i].origin);
            self.ranges
                .active
                .iter()
                .all(|&r| layer.newer_than(self.ranges.ranges[r].layer))
        });
        let chosen = match (certain_live, newest_live) {
            (Some(i), _) => Some(i),
            (None, _) if lost_here => (!versions.is_empty()).then_some(0),
            (None, live) => live,
        };
        let taken_obsolete = chosen.is_some_and(|i| !versions[i].live);
        let obsolete_before = versions[..chosen.unwrap_or(versions.len())]
            .iter()
            .filter(|v| !v.live)
            .count() as u64;
        self.report.obsolete_ignored += obsolete_before;
        self.report.obsolete_used += u64::from(taken_obsolete);
        let index = chosen?;
        let v = &versions[index];
        if v.value_type == ValueType::Deletion {
            self.report.deleted += 1;
            return None;
        }
        // Uncertain: a lost range covers the key and the version taken is no newer.
        let mut uncertain = false;
        for &r in &self.ranges.active {
            let layer = self.live.layer(v.origin);
            let range = &self.ranges.ranges[r];
            if !layer.newer_than(range.layer) {
                uncertain = true;
                let entry = self
                    .uncertain
                    .entry(range.lost)
                    .or_insert_with(|| UncertainRange {
                        lost: range.lost,
                        keys: 0,
                        sample: Vec::new(),
                    });
                entry.keys += 1;
                if entry.sample.len() < self.sample {
                    entry.sample.push(key.to_vec());
                }
            }
        }
        if uncertain {
            self.report.uncertain_keys += 1;
            if self.drop_uncertain {
                return None;
            }
        }
        self.report.keys += 1;
        Some(index)
    }
}
