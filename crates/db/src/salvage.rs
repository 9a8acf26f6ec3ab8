//! Salvage: what LevelDB's `RepairDB` would recover, read without writing anything
//! (LevelDB's `db/repair`).
//!
//! `RepairDB` ignores the MANIFEST. It turns every log into a table (reading it without
//! checksums, keeping the valid operations of each batch), scans every table (dropping
//! files that cannot be read at all), and writes a MANIFEST that lists every table at
//! level 0 with the largest sequence number found as the last sequence. Reading that
//! database, the newest version of each key wins. [`Db::salvage`] builds the same view in
//! memory: every log and table of the directory is a source, and reads take the newest
//! version among all of them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::db::{Db, read_bounded, table_cache};
use crate::dbformat::{InternalKeyComparator, MAX_SEQUENCE, ParsedInternalKey, show_key};
use crate::filename::{
    FileType, log_file_name, parse_file_name, sst_table_file_name, table_file_name,
};
use crate::live_memtable::LiveMemTable;
use crate::manifest::{comparator_name, manifests_newest_first, read_manifest_in, user_comparator};
use crate::options::{DbOptions, DbProperties, LogInfo, TableInfo};
use crate::recovery::replay_log;
use crate::reused_sequences::reused_by;
use crate::storage::Storage;
use crate::table_cache::TableCache;
use crate::table_scan::{Scan, scan_table};
use crate::torn_tail::{TornTail, read_torn_tail};
use crate::version::{Origin, Source};
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// The comparator a salvage chooses by name from [`DbOptions::comparators`]: the one the
/// MANIFEST that `CURRENT` names records or, if that cannot be read, the newest MANIFEST
/// (of `names`, the directory's files) that records one; bytewise if none does.
fn salvage_comparator(
    storage: &dyn Storage,
    names: &[String],
    options: &DbOptions,
) -> Result<Arc<dyn Comparator>> {
    match read_manifest_in(storage, options) {
        Ok((_, user)) => return Ok(user),
        Err(e @ Error::UnknownComparator { .. }) => return Err(e),
        Err(_) => {}
    }
    for name in manifests_newest_first(names) {
        // Bounded as every read of the directory (read_bounded refuses a file past its limit).
        let Ok(data) = read_bounded(storage, name) else {
            continue;
        };
        if comparator_name(&data).is_some() {
            return user_comparator(options, name, &data);
        }
    }
    user_comparator(options, "MANIFEST", &[])
}

impl Db {
    /// Reads every table and log in `path` as LevelDB's `RepairDB` would recover them,
    /// ignoring the MANIFEST, without writing anything. The newest version of each key
    /// wins. Files that cannot be read are skipped and listed in
    /// [`DbProperties::skipped`]; of a damaged table, what `RepairDB`'s scan reads is kept
    /// (every data block that can be read and decoded) and held in memory.
    ///
    /// [`versions`](Self::versions) then labels every version found, with its file, and
    /// [`Origin::Table::level`] tells whether the MANIFEST (if it can be read) still lists
    /// the table.
    ///
    /// A table whose keys are out of order is read into memory and sorted, each entry
    /// once, and listed in [`DbProperties::skipped`] with the first key out of order.
    ///
    /// # Errors
    /// [`Error::Io`] if the directory cannot be listed; [`Error::UnknownComparator`] if a
    /// readable MANIFEST names another comparator than the options'. With
    /// [`DbOptions::comparators`], the comparator is the registered one named by the
    /// MANIFEST `CURRENT` names or, if that cannot be read, by the newest MANIFEST that
    /// names one (bytewise if none does); a name the registry lacks is refused.
    pub fn salvage(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        Db::salvage_with_progress(path, options, &mut |_, _| {})
    }

    /// [`salvage`](Self::salvage), calling `progress(done, total)` as it goes: `total` is
    /// the bytes of the logs and tables in the directory (as listed when the salvage
    /// starts), `done` how many of them are read, reported before each file and once all
    /// are read, so a caller can show how far a long salvage has got.
    ///
    /// # Errors
    /// As [`salvage`](Self::salvage).
    pub fn salvage_with_progress(
        path: impl AsRef<Path>,
        options: DbOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Db> {
        Db::salvage_checked(path.as_ref(), options, false, TableRead::Whole, progress)
            .map(|(db, _)| db)
    }

    /// [`salvage_with_progress`](Self::salvage_with_progress), checking every checksum if
    /// `checked` (log records and data blocks that fail are lost, as a repair wants), and
    /// telling what of each damaged table was lost. With [`TableRead::Ends`], a table that
    /// opens is read at its ends only: damage further in is found by whoever reads it.
    pub(crate) fn salvage_checked(
        path: &Path,
        options: DbOptions,
        checked: bool,
        read: TableRead,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(Db, Damage)> {
        let dir = path.to_path_buf();
        let storage = options.file_system.storage(&dir);
        let names = storage.list().map_err(|e| Error::io(&dir, e))?;
        let options = match &options.comparators {
            Some(_) => {
                let user = salvage_comparator(&*storage, &names, &options)?;
                options.comparator(user)
            }
            None => options,
        };
        let user = Arc::clone(&options.comparator);
        // The MANIFEST's ranges are not used: every table is read for its own. What a
        // MANIFEST that can be read still gives is each table's level, and its comparator:
        // a database ordered by another comparator is refused, as an open refuses it (its
        // tables would read as out of order throughout).
        let listed: BTreeMap<u64, usize> = match read_manifest_in(&*storage, &options) {
            Ok((m, _)) => m
                .levels
                .files
                .iter()
                .enumerate()
                .flat_map(|(level, files)| files.iter().map(move |f| (f.number, level)))
                .collect(),
            Err(e @ Error::UnknownComparator { .. }) => return Err(e),
            Err(_) => BTreeMap::new(),
        };
        let mut logs = Vec::new();
        let mut tables = Vec::new();
        let mut next_file_number = 1u64;
        for name in &names {
            match parse_file_name(name) {
                Some(FileType::Manifest(n)) => {
                    next_file_number = next_file_number.max(n.saturating_add(1))
                }
                Some(FileType::Log(n)) => logs.push(n),
                Some(FileType::Table(n)) => tables.push(n),
                Some(FileType::Temp(n)) => {
                    next_file_number = next_file_number.max(n.saturating_add(1))
                }
                _ => {}
            }
        }
        for &n in logs.iter().chain(&tables) {
            next_file_number = next_file_number.max(n.saturating_add(1));
        }
        logs.sort_unstable();
        logs.dedup();
        tables.sort_unstable();
        tables.dedup();

        // For the progress count only: each file's size as listed, 0 if it cannot be had.
        let log_sizes: Vec<u64> = logs
            .iter()
            .map(|&n| file_len(&dir.join(log_file_name(n))))
            .collect();
        let table_sizes: Vec<u64> = tables.iter().map(|&n| table_len(&dir, n)).collect();
        let total = log_sizes
            .iter()
            .chain(&table_sizes)
            .fold(0u64, |sum, &n| sum.saturating_add(n));
        let mut done = 0u64;
        let mut file_done = |size: u64, progress: &mut dyn FnMut(u64, u64)| {
            progress(done, total);
            done = done.saturating_add(size);
        };

        let mut sources = Vec::new();
        let mut skipped = Vec::new();
        let mut log_infos: Vec<LogInfo> = Vec::new();
        let mut damage = Damage::default();
        let mut max_sequence = 0u64;
        // Torn tails read again: taken once every file is read.
        let mut tails = Vec::new();
        for (&number, &size) in logs.iter().zip(&log_sizes) {
            file_done(size, progress);
            let data = match read_bounded(&*storage, &log_file_name(number)) {
                Ok(data) => data,
                Err(e) => {
                    skipped.push((log_file_name(number), e.to_string()));
                    continue;
                }
            };
            // RepairDB reads logs without checksums; nothing is paranoid in a salvage.
            let path = dir.join(log_file_name(number));
            let replayed = replay_log(number, &path, &data[..], checked, false, &user)?;
            if checked && !replayed.info.dropped.is_empty() {
                // What the records that failed their checksum hold, read without it, as
                // `RepairDB` reads them: kept apart, as table 0 (no database has one).
                let loose = replay_log(number, &path, &data[..], false, false, &user)?;
                let suspect = LiveMemTable::new(&user);
                let mut keys = Vec::new();
                loose.table.try_for_each(|k, v| {
                    if replayed.table.contains(k) {
                        return Ok(());
                    }
                    if let Ok(p) = ParsedInternalKey::parse(k)
                        && suspect.add(p.sequence, p.value_type, p.user_key, v).is_ok()
                    {
                        keys.push(p.user_key.to_vec());
                    }
                    Ok(())
                })?;
                if !keys.is_empty() {
                    sources.push(Source::Mem {
                        origin: Origin::Table {
                            number: 0,
                            level: None,
                        },
                        table: Arc::new(suspect),
                    });
                }
                damage.logs.push(LogDamage {
                    number,
                    suspect_keys: keys,
                });
            }
            // A repair reads again what a torn tail holds: the records a damaged length
            // hid, and where what cannot be read begins.
            if checked
                && let Some(tail) =
                    read_torn_tail(&data, &replayed.info, replayed.max_sequence, &user)
            {
                max_sequence = max_sequence.max(tail.max_sequence);
                tails.push((number, replayed.max_sequence, data.len() as u64, tail));
            }
            // RepairDB takes the newest sequence from the entries it keeps, so an empty
            // batch (whose numbering the log's `max_sequence` counts) raises nothing here.
            replayed.table.try_for_each(|k, _| {
                max_sequence = max_sequence.max(tag_sequence(k));
                Ok(())
            })?;
            log_infos.push(replayed.info);
            if !replayed.table.is_empty() {
                sources.push(Source::Mem {
                    origin: Origin::Log { number },
                    table: Arc::new(replayed.table),
                });
            }
        }

        // RepairDB scans tables without checking data block checksums.
        let cache = table_cache(Arc::clone(&storage), &user, &options, checked);
        let icmp = InternalKeyComparator::new(Arc::clone(&user));
        let mut infos = Vec::new();
        for (&number, &size) in tables.iter().zip(&table_sizes) {
            file_done(size, progress);
            let level = listed.get(&number).copied();
            // Most tables read whole: keep them on disk, behind the table cache.
            // One cursor, its blocks left out of the cache: no allocation per entry.
            let whole = cache.open(number).and_then(|table| {
                if read == TableRead::Ends {
                    return table_ends(number, table.table());
                }
                let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
                let mut top = 0;
                let mut it = table.table().iter().fill_cache(false);
                it.seek_to_first();
                while it.valid() {
                    let k = it.key();
                    if let Ok(p) = ParsedInternalKey::parse(k) {
                        top = top.max(p.sequence);
                        match &mut range {
                            None => range = Some((k.to_vec(), k.to_vec())),
                            // A table read in place must hold its keys in order: the merge
                            // seeks in it. One that does not is read into memory, sorted.
                            Some((_, largest)) if icmp.compare(largest, k).is_lt() => {
                                largest.clear();
                                largest.extend_from_slice(k);
                            }
                            Some((_, largest)) => {
                                return Err(Error::corruption(
                                    table_file_name(number),
                                    format!(
                                        "key order ({} after {})",
                                        show_key(k),
                                        show_key(largest)
                                    ),
                                    0,
                                ));
                            }
                        }
                    }
                    it.next();
                }
                it.status()?;
                Ok((table.table().properties().file_size, range, top))
            });
            let (size, smallest, largest, damaged) = match whole {
                Ok((_, None, _)) => {
                    skipped.push((table_file_name(number), "no entries".to_string()));
                    damage.tables.push(TableDamage {
                        number,
                        error: "no entries".to_string(),
                        lost_blocks: Some(Vec::new()),
                    });
                    continue;
                }
                Ok((size, Some((smallest, largest)), top)) => {
                    max_sequence = max_sequence.max(top);
                    (size, smallest, largest, None)
                }
                Err(e) => {
                    // Damaged: read what RepairDB's scan would, block by block, into memory.
                    let ldb = table_file_name(number);
                    let name = if names.contains(&ldb) {
                        ldb
                    } else {
                        sst_table_file_name(number)
                    };
                    let Some(scan) = scan_table(&*storage, &name, Arc::clone(&user), checked)
                    else {
                        skipped.push((table_file_name(number), e.to_string()));
                        damage.tables.push(TableDamage {
                            number,
                            error: e.to_string(),
                            lost_blocks: None,
                        });
                        continue;
                    };
                    damage.tables.push(TableDamage {
                        number,
                        error: e.to_string(),
                        lost_blocks: Some(lost_blocks(&scan)),
                    });
                    let mem = LiveMemTable::new(&user);
                    for (k, v) in &scan.entries {
                        if let Ok(p) = ParsedInternalKey::parse(k) {
                            max_sequence = max_sequence.max(p.sequence);
                            mem.add(p.sequence, p.value_type, p.user_key, v)?;
                        }
                    }
                    // What blocks that failed their checksum hold, read without it: kept
                    // apart, as table 0 (no database has one), for a repair to weigh.
                    if !scan.suspect.is_empty() {
                        let suspect = LiveMemTable::new(&user);
                        for (k, v) in &scan.suspect {
                            if let Ok(p) = ParsedInternalKey::parse(k) {
                                let _ = suspect.add(p.sequence, p.value_type, p.user_key, v);
                            }
                        }
                        sources.push(Source::Mem {
                            origin: Origin::Table {
                                number: 0,
                                level: None,
                            },
                            table: Arc::new(suspect),
                        });
                    }
                    let (Some(first), Some(last)) = (mem.first(), mem.last()) else {
                        skipped.push((table_file_name(number), e.to_string()));
                        continue;
                    };
                    skipped.push((
                        table_file_name(number),
                        format!(
                            "read in part ({} damaged data blocks): {e}",
                            scan.damaged_blocks
                        ),
                    ));
                    let (smallest, largest) = (first.0, last.0);
                    (scan.file_size, smallest, largest, Some(mem))
                }
            };
            infos.push(TableInfo {
                number,
                level,
                size,
                smallest: smallest.clone(),
                largest: largest.clone(),
            });
            sources.push(match damaged {
                None => Source::Files {
                    level,
                    files: vec![Arc::new(FileMetaData {
                        number,
                        file_size: size,
                        smallest,
                        largest,
                    })],
                },
                Some(mem) => Source::Mem {
                    origin: Origin::Table { number, level },
                    table: Arc::new(mem),
                },
            });
        }
        for (number, recovered, size, tail) in tails {
            take_torn_tail(
                number,
                recovered,
                size,
                tail,
                &mut sources,
                &cache,
                &mut damage,
            );
        }
        progress(total, total);
        let sources = lanes(sources, &icmp);
        let mut properties = DbProperties {
            comparator: user.name().to_string(),
            manifest: None,
            last_sequence: max_sequence,
            log_number: 0,
            prev_log_number: 0,
            next_file_number,
            levels: vec![infos],
            logs: log_infos,
            skipped,
            ..DbProperties::default()
        };
        properties.count_logs();
        let db = Db::assemble(dir, user, sources, cache, max_sequence, true, properties);
        Ok((db, damage))
    }
}

/// Takes the write batches a torn tail of log `number` held (its readable part's newest
/// sequence `recovered`, its size `size`) as a source, and reports what of it is lost;
/// unless a later file shows that the tail's numbers were given again to other writes:
/// the whole tail is then lost, older than those writes (`reused_sequences.rs`).
fn take_torn_tail(
    number: u64,
    recovered: Option<u64>,
    size: u64,
    tail: TornTail,
    sources: &mut Vec<Source>,
    tables: &TableCache,
    damage: &mut Damage,
) {
    let mut lost = tail.lost;
    let mut reused = None;
    if let Some(table) = tail.table {
        let first = recovered.map_or(tail.first_sequence, |r| r.saturating_add(1));
        reused = reused_by(sources, tables, number, &(first..=tail.max_sequence));
        if reused.is_some() {
            lost = Some((tail.start, size.saturating_sub(tail.start)));
        } else {
            sources.push(Source::Mem {
                origin: Origin::Log { number },
                table: Arc::new(table),
            });
        }
    }
    if let Some((offset, bytes)) = lost {
        damage.tails.push(LogTailDamage {
            number,
            offset,
            bytes,
            batches: tail.batches,
            reused_by: reused,
        });
    }
}

/// `sources` with the tables of one source each gathered into as few sources of tables that
/// do not overlap as they fit in, per level (as the MANIFEST lists them, or none): a merge
/// of them holds a cursor per source, not per table, so that its memory does not grow with
/// the number of tables. The other sources come first, in their order.
fn lanes(sources: Vec<Source>, icmp: &InternalKeyComparator) -> Vec<Source> {
    let mut out = Vec::new();
    let mut by_level: BTreeMap<Option<usize>, Vec<Arc<FileMetaData>>> = BTreeMap::new();
    for source in sources {
        match source {
            Source::Files { level, files } => by_level.entry(level).or_default().extend(files),
            other => out.push(other),
        }
    }
    for (level, mut files) in by_level {
        files.sort_by(|a, b| icmp.compare(&a.smallest, &b.smallest));
        // Each table goes to the first lane whose last table ends before it starts: as
        // many lanes as tables overlap at any key.
        let mut lanes: Vec<Vec<Arc<FileMetaData>>> = Vec::new();
        for f in files {
            let free = lanes.iter_mut().find(|lane| {
                lane.last()
                    .is_some_and(|last| icmp.compare(&last.largest, &f.smallest).is_lt())
            });
            match free {
                Some(lane) => lane.push(f),
                None => lanes.push(vec![f]),
            }
        }
        out.extend(
            lanes
                .into_iter()
                .map(|files| Source::Files { level, files }),
        );
    }
    out
}

/// How a salvage reads each table that opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableRead {
    /// Every entry, in order: a table that fails anywhere is read block by block, into
    /// memory, and what it lost is told.
    Whole,
    /// Its first and last entries only, for a reader that reads every table through in
    /// order, whose checksums and order checks then find any damage further in (a repair
    /// that starts again reading whole). The salvage's newest sequence number is then
    /// unknown: it reads at the newest possible.
    Ends,
}

/// What a salvage reads of a table: its file size, its first and last internal keys
/// (`None` for no entry) and its newest sequence number.
type TableSummary = (u64, Option<(Vec<u8>, Vec<u8>)>, u64);

/// What a salvage reads of a table read at its ends only, the newest possible sequence
/// number for its newest.
fn table_ends<R: leveltable_table::ReadAt>(
    number: u64,
    table: &leveltable_table::Table<R>,
) -> Result<TableSummary> {
    let mut it = table.iter().fill_cache(false);
    it.seek_to_first();
    it.status()?;
    if !it.valid() {
        return Ok((table.properties().file_size, None, 0));
    }
    let first = it.key().to_vec();
    it.seek_to_last();
    it.status()?;
    if !it.valid() {
        return Err(Error::corruption(
            table_file_name(number),
            "no last entry",
            0,
        ));
    }
    let last = it.key().to_vec();
    Ok((
        table.properties().file_size,
        Some((first, last)),
        MAX_SEQUENCE,
    ))
}

/// What a salvage with checksums checked could not read.
#[derive(Debug, Default)]
pub(crate) struct Damage {
    /// Tables read in part or not at all.
    pub(crate) tables: Vec<TableDamage>,
    /// Logs with records that failed their checksum.
    pub(crate) logs: Vec<LogDamage>,
    /// Logs whose torn tail could not be read to the end.
    pub(crate) tails: Vec<LogTailDamage>,
}

/// The part of a log's torn tail that could not be read: a record cut short by the end of
/// the log (a write a crash cut short, or a damaged record) and everything after it.
#[derive(Debug)]
pub(crate) struct LogTailDamage {
    /// The log's number.
    pub(crate) number: u64,
    /// Where it begins.
    pub(crate) offset: u64,
    /// Its bytes, to the end of the log.
    pub(crate) bytes: u64,
    /// The write batches read again before it, past a damaged record length (in it, when
    /// `reused_by`).
    pub(crate) batches: u64,
    /// The later file that holds writes numbered as the tail's batches, which are then
    /// lost with the tail.
    pub(crate) reused_by: Option<String>,
}

/// A log with records that failed their checksum.
#[derive(Debug)]
pub(crate) struct LogDamage {
    /// The log's number.
    pub(crate) number: u64,
    /// The user keys of the versions that only a read without checksums finds, in order.
    pub(crate) suspect_keys: Vec<Vec<u8>>,
}

/// What a salvage could not read of a table.
#[derive(Debug)]
pub(crate) struct TableDamage {
    /// The table's number.
    pub(crate) number: u64,
    /// Why it could not be read whole.
    pub(crate) error: String,
    /// The data blocks lost; `None` if nothing of the table could be read (its footer or
    /// index is damaged, or it is gone).
    pub(crate) lost_blocks: Option<Vec<LostBlock>>,
}

/// A data block a salvage lost, and the user keys around it: every key it held sorts
/// between `after` and `before` (both included; `None`: the table's edge).
#[derive(Debug)]
pub(crate) struct LostBlock {
    /// Offset and stored size, if its index entry decodes.
    pub(crate) handle: Option<(u64, u64)>,
    /// The user key of the last entry read before it (of this block, if it broke off).
    pub(crate) after: Option<Vec<u8>>,
    /// The user key of the first entry read after it.
    pub(crate) before: Option<Vec<u8>>,
}

/// The blocks of `scan` that were lost, with the keys around them.
fn lost_blocks(scan: &Scan) -> Vec<LostBlock> {
    let user_key = |i: usize| {
        scan.entries
            .get(i)
            .and_then(|(k, _)| ParsedInternalKey::parse(k).ok())
            .map(|p| p.user_key.to_vec())
    };
    scan.blocks
        .iter()
        .filter(|b| b.lost)
        .map(|b| LostBlock {
            handle: b.handle,
            after: b.entries.end.checked_sub(1).and_then(user_key),
            before: user_key(b.entries.end),
        })
        .collect()
}

/// The size of the file at `path` for a progress count: 0 for anything but a regular file.
fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| if m.is_file() { m.len() } else { 0 })
}

/// The size of table `number` in `dir` for a progress count: its `.ldb` file, or its
/// `.sst` file when there is no `.ldb` (as the salvage reads it).
fn table_len(dir: &Path, number: u64) -> u64 {
    let ldb = dir.join(table_file_name(number));
    if ldb.exists() {
        file_len(&ldb)
    } else {
        file_len(&dir.join(sst_table_file_name(number)))
    }
}

/// The sequence number of an internal key built by a memtable.
fn tag_sequence(key: &[u8]) -> u64 {
    ParsedInternalKey::parse(key).map_or(0, |p| p.sequence)
}
