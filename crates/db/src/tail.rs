//! What a read-only database handle keeps to refresh its view: the MANIFEST and each live
//! log read so far, their readers held open, and the views taken ([`Tail`]).
//!
//! A refresh reads only what was added since the last view: the new records at the end of
//! the MANIFEST (tables added and removed, log switches), and the new records at the end of
//! each live log. It follows the order a writer keeps: a writer (LevelDB, or
//! [`WritableDb`](crate::WritableDb)) appends a batch to its log before the batch's sequence
//! number can appear in a MANIFEST edit, and deletes a file only after an edit that no
//! longer needs it. So the MANIFEST is read first and the logs after it; and a view is
//! taken only when the MANIFEST gained no edit while the logs were listed, opened and read
//! and the tables it added were opened. Otherwise the refresh reads the new edits and looks
//! again (it re-plans): a table deleted before it was opened, or a log deleted before it was
//! listed, is then no longer in the plan.
//!
//! Each log is held open from the first refresh that needs it until an edit makes it
//! obsolete, so a log the writer deletes meanwhile stays readable; tables are read through
//! the table cache, whose open handles keep a table the writer deletes readable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use leveltable_table::Comparator;

use crate::dbformat::{InternalKeyComparator, MAX_SEQUENCE};
use crate::filename::{FileType, log_file_name, parse_file_name};
use crate::live_memtable::LiveMemTable;
use crate::log_reader::Dropped;
use crate::log_tail::LogTail;
use crate::manifest::{Manifest, apply_edit};
use crate::options::{DbProperties, LogInfo};
use crate::storage::{CURRENT_MAX_BYTES, MAX_READ_BYTES, Storage};
use crate::table_cache::TableCache;
use crate::version::{Origin, Source, Version, file_sources};
use crate::version_edit::VersionEdit;
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// How old the directory's modification time must be for an unchanged one to show that no
/// file was created or deleted since the last listing.
const SETTLED: Duration = Duration::from_secs(2);

/// How many times a refresh looks again while the writer keeps changing the MANIFEST.
const REFRESH_ATTEMPTS: u32 = 50;

/// A live log as a refresh holds it.
struct HeldLog {
    /// What the open replayed of it.
    replayed: Option<Arc<LiveMemTable>>,
    /// The batches read from it since.
    added: Option<Arc<LiveMemTable>>,
    /// The log, open, from the end of the last record read; `None` before the first
    /// refresh (the open did not keep it), or if it was gone by then.
    reader: Option<LogTail>,
    /// The end of the last record the open replayed, where the reader starts.
    start: u64,
    /// Read to its end once a newer log showed the writer was done with it.
    finished: bool,
    info: LogInfo,
}

/// Where a database's view was last brought to: the MANIFEST's state and how far it was
/// read, and the live logs.
pub(crate) struct Tail {
    /// The database's files, as the open read them (through its file system).
    storage: Arc<dyn Storage>,
    manifest: Manifest,
    /// The MANIFEST, open at the end of the last edit applied; opened at the first refresh.
    manifest_file: Option<LogTail>,
    logs: BTreeMap<u64, HeldLog>,
    /// The largest log number seen.
    newest_log: u64,
    /// The directory's modification time when it was last listed.
    listed_at: Option<SystemTime>,
    /// The newest sequence number read from a log or the MANIFEST.
    last_sequence: u64,
    /// Batches read from the logs since the last view was published (by refreshes that
    /// failed, too: what they read is in the logs' memtables).
    unpublished_batches: u64,
    /// The tables of the view a refresh opened (the open opens them as reads need them).
    opened: BTreeSet<u64>,
    /// The MANIFEST's state changed since the last generation.
    manifest_changed: bool,
    /// The last generation the MANIFEST's state changed at.
    manifest_generation: u64,
    /// Tables of the MANIFEST's state may not be open yet.
    tables_unchecked: bool,
    /// Counts the states views were taken at: one more each time a refresh read something.
    generation: u64,
}

impl Tail {
    /// The state an open of `storage` reached: the MANIFEST it replayed and the logs it
    /// replayed (each with what it read of it), up to `last_sequence`.
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        manifest: Manifest,
        replayed: Vec<(LogInfo, Arc<LiveMemTable>)>,
        last_sequence: u64,
    ) -> Tail {
        let newest_log = replayed.iter().map(|(info, _)| info.number).max();
        let logs = replayed
            .into_iter()
            .map(|(info, table)| {
                let start = info.size.saturating_sub(info.tail_bytes);
                let held = HeldLog {
                    replayed: Some(table),
                    added: None,
                    reader: None,
                    start,
                    finished: false,
                    info,
                };
                (held.info.number, held)
            })
            .collect();
        Tail {
            storage,
            newest_log: newest_log.unwrap_or(manifest.log_number.saturating_sub(1)),
            manifest,
            manifest_file: None,
            listed_at: None,
            logs,
            last_sequence,
            unpublished_batches: 0,
            opened: BTreeSet::new(),
            manifest_changed: false,
            tables_unchecked: true,
            generation: 0,
            manifest_generation: 0,
        }
    }

    /// Reads what the writer added until the MANIFEST holds still across a look at the
    /// logs and tables. What was read stays read if this fails: a later call goes on from
    /// there, and [`publish`](Self::publish) counts it.
    pub(crate) fn advance(
        &mut self,
        user: &Arc<dyn Comparator>,
        tables: &TableCache,
    ) -> Result<()> {
        let mut last_error = None;
        for _ in 0..REFRESH_ATTEMPTS {
            let current = self.read_current()?;
            if current != self.manifest.file {
                self.switch_manifest(&current, user)?;
            } else {
                self.read_manifest_tail(user)?;
            }
            self.drop_obsolete_logs();
            self.open_new_logs()?;
            self.read_logs(user)?;
            match self.open_new_tables(tables) {
                Ok(()) => {}
                Err(e @ Error::MissingFile { .. }) => {
                    // Deleted before we opened it: a newer edit no longer lists it.
                    last_error = Some(e);
                    std::thread::yield_now();
                    continue;
                }
                Err(e) => return Err(e),
            }
            if self.read_current()? == self.manifest.file
                && !self
                    .manifest_file
                    .as_mut()
                    .expect("opened above")
                    .has_record()?
            {
                return Ok(());
            }
            std::thread::yield_now();
        }
        Err(last_error.unwrap_or_else(|| Error::KeptChanging {
            path: self.storage.path(),
        }))
    }

    /// Takes the state read so far as a new view's if anything was read since the last
    /// view: one more generation (the MANIFEST's too, if its state changed). Returns the
    /// batches read since the last view.
    pub(crate) fn publish(&mut self) -> u64 {
        let batches = std::mem::take(&mut self.unpublished_batches);
        if batches != 0 || self.manifest_changed {
            self.generation += 1;
            if self.manifest_changed {
                self.manifest_generation = self.generation;
            }
            self.manifest_changed = false;
        }
        batches
    }

    /// The files read.
    pub(crate) fn storage(&self) -> Arc<dyn Storage> {
        Arc::clone(&self.storage)
    }

    /// The generation of the state last published.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the MANIFEST's state (the tables) changed after the view of `generation`.
    pub(crate) fn tables_changed_since(&self, generation: u64) -> bool {
        self.manifest_generation > generation
    }

    /// The newest sequence number read, from a log or the MANIFEST.
    pub(crate) fn last_sequence(&self) -> u64 {
        self.last_sequence.max(self.manifest.last_sequence)
    }

    /// The numbers of the tables the MANIFEST's state lists.
    pub(crate) fn live_tables(&self) -> BTreeSet<u64> {
        self.manifest.live_files().collect()
    }

    /// The tables' sources of the view, by level.
    pub(crate) fn table_sources(&self) -> Vec<Source> {
        file_sources(&self.manifest.levels.files)
    }

    /// CURRENT names a new MANIFEST (the writer reopened the database): reads it whole; it
    /// starts with the whole state.
    fn switch_manifest(&mut self, name: &str, user: &Arc<dyn Comparator>) -> Result<()> {
        let path = self.storage.path().join(name);
        let data = self
            .storage
            .read_bounded(name, MAX_READ_BYTES)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Error::MissingFile {
                        file: name.into(),
                        what: "CURRENT names it (CURRENT points to a non-existent file)".into(),
                    }
                } else {
                    Error::io(&path, e)
                }
            })?;
        let manifest = Manifest::replay(name, &data, user)?;
        let file = LogTail::open(&*self.storage, 0, name, manifest.end)?.ok_or_else(|| {
            Error::MissingFile {
                file: name.into(),
                what: "CURRENT names it (deleted while it was read)".into(),
            }
        })?;
        self.manifest = manifest;
        self.manifest_file = Some(file);
        self.manifest_changed = true;
        self.tables_unchecked = true;
        Ok(())
    }

    /// Applies the edits appended to the MANIFEST since the last look.
    fn read_manifest_tail(&mut self, user: &Arc<dyn Comparator>) -> Result<()> {
        if self.manifest_file.is_none() {
            self.manifest_file =
                LogTail::open(&*self.storage, 0, &self.manifest.file, self.manifest.end)?;
            if self.manifest_file.is_none() {
                // Deleted since the open: CURRENT names a newer one now.
                let current = self.read_current()?;
                return self.switch_manifest(&current, user);
            }
        }
        let file = self.manifest_file.as_mut().expect("opened above");
        let icmp = InternalKeyComparator::new(Arc::clone(user));
        while let Some((record, end)) = file.next_record()? {
            let edit = VersionEdit::decode_from(&mut &record[..]).map_err(|what| {
                Error::corruption(&self.manifest.file, format!("version edit ({what})"), end)
            })?;
            apply_edit(&mut self.manifest, &edit, &icmp, user, end)?;
            self.manifest.end = end;
            self.manifest_changed = true;
            self.tables_unchecked = true;
        }
        Ok(())
    }

    /// Lets go of the logs the MANIFEST no longer needs: their batches are in tables.
    fn drop_obsolete_logs(&mut self) {
        let (log_number, prev) = (self.manifest.log_number, self.manifest.prev_log_number);
        self.logs.retain(|&n, _| n >= log_number || n == prev);
    }

    /// Opens the readers of the logs the open replayed, and the logs newer than any seen.
    fn open_new_logs(&mut self) -> Result<()> {
        let storage = &*self.storage;
        for (&number, log) in &mut self.logs {
            if log.reader.is_none() && !log.finished {
                log.reader = LogTail::open(storage, number, &log_file_name(number), log.start)?;
                // Gone: the writer made it obsolete; the MANIFEST will say so.
                log.finished = log.reader.is_none();
            }
        }
        // A log created or deleted since the last listing changed the directory's
        // modification time. A time coarser than the clock could hide a change right after
        // the listing; such a change is recent, so a recent time is listed again. A storage
        // that does not know the time is listed each time.
        let dir = storage.path();
        let modified = storage.modified().map_err(|e| Error::io(&dir, e))?;
        let settled = modified.is_some_and(|modified| {
            SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age > SETTLED)
        });
        if settled && self.listed_at == modified {
            return Ok(());
        }
        let mut numbers: Vec<u64> = storage
            .list()
            .map_err(|e| Error::io(&dir, e))?
            .iter()
            .filter_map(|name| match parse_file_name(name) {
                Some(FileType::Log(n)) if n > self.newest_log && n >= self.manifest.log_number => {
                    Some(n)
                }
                _ => None,
            })
            .collect();
        numbers.sort_unstable();
        for number in numbers {
            if let Some(reader) = LogTail::open(storage, number, &log_file_name(number), 0)? {
                self.logs.insert(
                    number,
                    HeldLog {
                        replayed: None,
                        added: None,
                        reader: Some(reader),
                        start: 0,
                        finished: false,
                        info: LogInfo {
                            number,
                            size: 0,
                            records: 0,
                            versions: 0,
                            dropped: Vec::new(),
                            tail_bytes: 0,
                        },
                    },
                );
            }
            self.newest_log = number;
        }
        // Only once every new log is held: a listing that failed is made again.
        self.listed_at = modified;
        Ok(())
    }

    /// Reads the new records of each held log, oldest first; a log with a newer one after
    /// it is read to its end as LevelDB reads a log. Counts the batches read as not yet
    /// published.
    fn read_logs(&mut self, user: &Arc<dyn Comparator>) -> Result<()> {
        let newest = self.logs.keys().next_back().copied();
        for (&number, log) in &mut self.logs {
            let Some(reader) = log.reader.as_mut() else {
                continue;
            };
            // The records taken from the reader are applied even if a read after them
            // fails: the reader is past them.
            let mut records = Vec::new();
            let mut failed = None;
            loop {
                match reader.next_record() {
                    Ok(Some(record)) => records.push(record),
                    Ok(None) => break,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if failed.is_none() && Some(number) != newest && !log.finished {
                // A failed read of the rest takes nothing from the reader.
                match reader.rest() {
                    Ok(rest) => {
                        records.extend(rest);
                        log.finished = true;
                    }
                    Err(e) => failed = Some(e),
                }
            }
            log.info.size = log.info.size.max(reader.pos);
            for (data, offset) in records {
                self.unpublished_batches += 1;
                self.last_sequence = self
                    .last_sequence
                    .max(apply_record(log, user, &data, offset));
            }
            if log.finished {
                log.reader = None;
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Opens the tables the MANIFEST lists that no refresh opened yet (as many as the table
    /// cache holds), so that a writer's later delete does not take them away.
    fn open_new_tables(&mut self, tables: &TableCache) -> Result<()> {
        if !self.tables_unchecked {
            return Ok(());
        }
        let live: BTreeSet<u64> = self.manifest.live_files().collect();
        self.opened.retain(|n| live.contains(n));
        for number in live {
            if self.opened.len() >= tables.capacity() {
                break;
            }
            if !self.opened.contains(&number) {
                tables.get(number)?;
                self.opened.insert(number);
            }
        }
        self.tables_unchecked = false;
        Ok(())
    }

    /// The logs' sources of the view, newest first.
    pub(crate) fn log_sources(&self) -> Vec<Source> {
        let mut sources = Vec::new();
        for (&number, log) in self.logs.iter().rev() {
            if let Some(table) = &log.added {
                sources.push(Source::Mem {
                    origin: Origin::Log { number },
                    table: Arc::clone(table),
                });
            }
            if let Some(table) = &log.replayed {
                sources.push(Source::Mem {
                    origin: Origin::Log { number },
                    table: Arc::clone(table),
                });
            }
        }
        sources
    }
}

/// Adds the write batch `data` (the record at `offset` of `log`) to the log's memtable; the
/// newest sequence it holds (0 for one that is not a batch, which is counted as dropped).
fn apply_record(log: &mut HeldLog, user: &Arc<dyn Comparator>, data: &[u8], offset: u64) -> u64 {
    log.info.records += 1;
    let dropped = |reason| Dropped {
        bytes: data.len() as u64,
        reason,
        offset,
    };
    let batch = match WriteBatch::new(data) {
        Ok(batch) => batch,
        Err(reason) => {
            log.info.dropped.push(dropped(reason));
            return 0;
        }
    };
    let table = log
        .added
        .get_or_insert_with(|| Arc::new(LiveMemTable::new(user)));
    if let Err(reason) = table.insert_batch(&batch) {
        log.info.dropped.push(dropped(reason));
    }
    log.info.versions += u64::from(batch.count());
    batch.last_sequence().min(MAX_SEQUENCE)
}

impl Tail {
    /// The MANIFEST `CURRENT` names.
    fn read_current(&self) -> Result<String> {
        read_current(&*self.storage)
    }
}

/// The MANIFEST `CURRENT` of `storage` names.
fn read_current(storage: &dyn Storage) -> Result<String> {
    let bytes = storage
        .read_bounded("CURRENT", CURRENT_MAX_BYTES)
        .map_err(|e| Error::io(storage.path().join("CURRENT"), e))?;
    match bytes
        .strip_suffix(b"\n")
        .and_then(|name| std::str::from_utf8(name).ok())
    {
        Some(name) if matches!(parse_file_name(name), Some(FileType::Manifest(_))) => {
            Ok(name.to_string())
        }
        _ => Err(Error::corruption(
            "CURRENT",
            "CURRENT file (does not name a MANIFEST)",
            0,
        )),
    }
}

/// The table numbers of a version.
pub(crate) fn table_numbers(version: &Version) -> BTreeSet<u64> {
    version
        .sources
        .iter()
        .flat_map(|source| match source {
            Source::Files { files, .. } => files.as_slice(),
            Source::Mem { .. } => &[],
        })
        .map(|f| f.number)
        .collect()
}

/// A database handle's hold on the shared [`Tail`]: handles made from one open by
/// [`Db::refreshed`] share it, each knowing which of its states its view was taken at.
pub(crate) struct TailRef {
    pub(crate) shared: Arc<Mutex<Tail>>,
    /// The tail's generation the handle's view was taken at.
    pub(crate) generation: u64,
}

impl TailRef {
    pub(crate) fn new(tail: Tail) -> TailRef {
        TailRef {
            generation: tail.generation,
            shared: Arc::new(Mutex::new(tail)),
        }
    }
}

impl Tail {
    /// Sets what `properties` says of the MANIFEST (with `levels`, its tables too) and the
    /// logs to this state.
    pub(crate) fn describe(&self, p: &mut DbProperties, last_sequence: u64, levels: bool) {
        let m = &self.manifest;
        p.manifest = Some(m.file.clone());
        p.last_sequence = last_sequence;
        p.log_number = m.log_number;
        p.prev_log_number = m.prev_log_number;
        p.next_file_number = m.next_file_number;
        if levels {
            p.levels = self.manifest.levels.infos();
        }
        p.logs = self.logs.values().map(|l| l.info.clone()).collect();
        p.count_logs();
    }
}
