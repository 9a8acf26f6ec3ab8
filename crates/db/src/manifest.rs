//! The MANIFEST read: `CURRENT` and the MANIFEST it names replayed into a [`Manifest`], the
//! table files of each level and the database's counters (LevelDB's `VersionSet::Recover`).
//! A read-only open, a refresh, a salvage, a repair and the writer's
//! [`VersionSet`](crate::version_set::VersionSet) all start from this replay.
//!
//! The replay is sans-IO: [`Manifest::replay`] takes the MANIFEST's bytes. Its checks are
//! LevelDB's: any dropped byte in the MANIFEST (a bad checksum, a bad length, a fragment out
//! of place) is corruption, except a torn tail (a file cut short, and, but for
//! `paranoid_checks`, a last record whose end a power loss left as zeros: an edit that was
//! never synced, where LevelDB refuses the database); a record that is not a version edit is
//! corruption; a comparator name other than the expected one is refused; and the replay must
//! end knowing the next file number, the log number and the last sequence number.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io;
use std::path::Path;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::{InternalKeyComparator, TAG_LEN, show_key};
use crate::filename::table_file_name;
use crate::filename::{FileType, parse_file_name};
use crate::levels::Levels;
use crate::log_format::{BLOCK_SIZE, HEADER_SIZE, RecordType};
use crate::log_reader::LogReader;
use crate::options::DbOptions;
use crate::storage::{CURRENT_MAX_BYTES, LocalDir, MAX_READ_BYTES, Storage};
use crate::version_edit::{FileMetaData, NUM_LEVELS, VersionEdit};
use crate::{Error, Result};

/// The state a MANIFEST describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The MANIFEST's file name (`MANIFEST-000002`).
    pub file: String,
    /// The comparator named by the MANIFEST (the last edit that names one), if any.
    pub comparator: Option<String>,
    /// Logs numbered at least this are live.
    pub log_number: u64,
    /// A log being compacted when the MANIFEST was last written (0: none); also live.
    pub prev_log_number: u64,
    /// The next file number LevelDB would allocate.
    pub next_file_number: u64,
    /// The last sequence number in the tables (the logs may hold later ones).
    pub last_sequence: u64,
    /// The table files of each level. Level 0 is sorted by smallest key then file number,
    /// as LevelDB keeps it; the files of the other levels do not overlap and are sorted.
    pub(crate) levels: Levels,
    /// Records replayed.
    pub records: u64,
    /// Per level, the internal key its next compaction starts after (empty: none recorded).
    pub compact_pointers: [Vec<u8>; NUM_LEVELS],
    /// The offset just past the last whole record replayed: where the next edit starts.
    pub end: u64,
}

/// The files of one level while edits are applied (LevelDB's `VersionSet::Builder`).
#[derive(Default)]
struct LevelBuilder {
    deleted: BTreeSet<u64>,
    added: Vec<FileMetaData>,
    /// The number and smallest key of each file in `added`: LevelDB keeps added files in a
    /// set ordered by (smallest key, number), so an equal one is not added twice.
    keys: HashSet<(u64, Vec<u8>)>,
}

impl Manifest {
    /// Replays the MANIFEST `file` (its bytes in `data`), expecting the user comparator
    /// `comparator`.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming `file` for dropped bytes (what and offset from the log
    /// reader), a record that is not a version edit (LevelDB's message, at the record's
    /// offset), or a missing counter (`no meta-nextfile entry`, `no meta-lognumber entry`,
    /// `no last-sequence-number entry`); [`Error::UnknownComparator`] for another comparator.
    pub fn replay(file: &str, data: &[u8], comparator: &Arc<dyn Comparator>) -> Result<Manifest> {
        Manifest::replay_with(file, data, comparator, false)
    }

    /// [`replay`](Self::replay), reading a MANIFEST whose last record a power loss tore
    /// (its end zeros from a sector boundary to the end of the file, nothing after it) as
    /// ending before that record if `torn_tail`: a record is written, then synced, so a torn
    /// one was never synced, and the edit it holds never took effect.
    pub(crate) fn replay_with(
        file: &str,
        data: &[u8],
        comparator: &Arc<dyn Comparator>,
        torn_tail: bool,
    ) -> Result<Manifest> {
        let mut reader = LogReader::new(data, true);
        let mut levels: [LevelBuilder; NUM_LEVELS] = Default::default();
        let mut comparator_name = None;
        let (mut log_number, mut prev_log_number) = (None, None);
        let (mut next_file_number, mut last_sequence) = (None, None);
        let mut records = 0u64;
        let mut compact_pointers: [Vec<u8>; NUM_LEVELS] = Default::default();
        let icmp = InternalKeyComparator::new(Arc::clone(comparator));
        loop {
            let record = reader.read_record();
            // LevelDB's reporter turns the first dropped byte into the replay's status, and
            // the record read alongside it is not applied.
            if let Some(d) = reader.dropped().first() {
                // No record after it (the reader returns none only at the end).
                if torn_tail && record.is_none() && ends_in_torn_sectors(data, d.offset, d.reason) {
                    break;
                }
                return Err(Error::corruption(
                    file,
                    format!("record ({}, {} bytes dropped)", d.reason, d.bytes),
                    d.offset,
                ));
            }
            let Some(record) = record else { break };
            records += 1;
            let edit = VersionEdit::decode_from(&mut &record.data[..]).map_err(|what| {
                Error::corruption(file, format!("version edit ({what})"), record.offset)
            })?;
            if let Some(name) = edit_comparator(file, &edit, comparator)? {
                comparator_name = Some(name.clone());
            }
            for (level, key) in &edit.compact_pointers {
                compact_pointers[*level].clone_from(key);
            }
            for &(level, number) in &edit.deleted_files {
                levels[level].deleted.insert(number);
            }
            for (level, meta) in &edit.new_files {
                check_file_range(file, meta, &icmp, record.offset)?;
                let builder = &mut levels[*level];
                builder.deleted.remove(&meta.number);
                if builder.keys.insert((meta.number, meta.smallest.clone())) {
                    builder.added.push(meta.clone());
                }
            }
            log_number = edit.log_number.or(log_number);
            prev_log_number = edit.prev_log_number.or(prev_log_number);
            next_file_number = edit.next_file_number.or(next_file_number);
            last_sequence = edit.last_sequence.or(last_sequence);
        }
        let missing = |what: &'static str| Error::corruption(file, what, data.len() as u64);
        let next_file_number =
            next_file_number.ok_or_else(|| missing("descriptor (no meta-nextfile entry)"))?;
        let log_number =
            log_number.ok_or_else(|| missing("descriptor (no meta-lognumber entry)"))?;
        let last_sequence =
            last_sequence.ok_or_else(|| missing("descriptor (no last-sequence-number entry)"))?;
        let levels = levels.map(|b| {
            let mut files: Vec<Arc<FileMetaData>> = b
                .added
                .into_iter()
                .filter(|f| !b.deleted.contains(&f.number))
                .map(Arc::new)
                .collect();
            files.sort_by(|a, b| {
                icmp.compare(&a.smallest, &b.smallest)
                    .then(a.number.cmp(&b.number))
            });
            files
        });
        check_levels(file, &levels, &icmp, data.len() as u64)?;
        Ok(Manifest {
            file: file.to_string(),
            comparator: comparator_name,
            log_number,
            prev_log_number: prev_log_number.unwrap_or(0),
            next_file_number,
            last_sequence,
            levels: Levels { files: levels },
            records,
            compact_pointers,
            end: reader.last_record_end(),
        })
    }

    /// Every live table file number.
    pub fn live_files(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.numbers()
    }
}

/// The comparator `edit` (of the MANIFEST `file`) names, if it names one; refused with
/// [`Error::UnknownComparator`] if it is not `comparator`.
fn edit_comparator<'e>(
    file: &str,
    edit: &'e VersionEdit,
    comparator: &Arc<dyn Comparator>,
) -> Result<Option<&'e String>> {
    match &edit.comparator {
        Some(name) if name != comparator.name() => Err(Error::UnknownComparator {
            file: file.into(),
            name: name.clone(),
            ours: comparator.name().to_string(),
        }),
        named => Ok(named.as_ref()),
    }
}

/// Applies one more edit, read at `offset` of the MANIFEST, to `manifest`, as LevelDB's
/// `VersionSet::Builder` applies an edit to the version before it: the files it deletes
/// leave their level, the files it adds join theirs (in order), and the counters it names
/// replace the old ones.
///
/// # Errors
/// As [`Manifest::replay`] for the edit: [`Error::UnknownComparator`], or
/// [`Error::Corruption`] for a file whose smallest key is above its largest, or for levels
/// the replay refuses (a file listed twice, files overlapping past level 0). `manifest` is
/// then unchanged.
pub(crate) fn apply_edit(
    manifest: &mut Manifest,
    edit: &VersionEdit,
    icmp: &InternalKeyComparator,
    comparator: &Arc<dyn Comparator>,
    offset: u64,
) -> Result<()> {
    let file = manifest.file.clone();
    let named = edit_comparator(&file, edit, comparator)?;
    for (_, meta) in &edit.new_files {
        check_file_range(&file, meta, icmp, offset)?;
    }
    // Checked as the replay checks the levels it ends with, before anything changes.
    let mut files = manifest.levels.files.clone();
    apply_files(&mut files, edit, icmp);
    check_levels(&file, &files, icmp, offset)?;
    manifest.levels.files = files;
    if let Some(name) = named {
        manifest.comparator = Some(name.clone());
    }
    for (level, key) in &edit.compact_pointers {
        manifest.compact_pointers[*level].clone_from(key);
    }
    manifest.log_number = edit.log_number.unwrap_or(manifest.log_number);
    manifest.prev_log_number = edit.prev_log_number.unwrap_or(manifest.prev_log_number);
    manifest.next_file_number = edit.next_file_number.unwrap_or(manifest.next_file_number);
    manifest.last_sequence = edit.last_sequence.unwrap_or(manifest.last_sequence);
    manifest.records += 1;
    Ok(())
}

/// Refuses levels (of the MANIFEST `file`, as replayed to `offset`) that list a file
/// twice, which would be read twice (more entries out than the files hold), or whose files
/// overlap on a level past 0.
fn check_levels(
    file: &str,
    levels: &[Vec<Arc<FileMetaData>>; NUM_LEVELS],
    icmp: &InternalKeyComparator,
    offset: u64,
) -> Result<()> {
    let mut seen = BTreeMap::new();
    for (level, files) in levels.iter().enumerate() {
        for f in files {
            if let Some(other) = seen.insert(f.number, level) {
                return Err(Error::corruption(
                    file,
                    format!(
                        "descriptor ({} is listed twice, at levels {other} and {level})",
                        table_file_name(f.number)
                    ),
                    offset,
                ));
            }
        }
    }
    for (level, files) in levels.iter().enumerate().skip(1) {
        if let Some(w) = files
            .windows(2)
            .find(|w| icmp.compare(&w[0].largest, &w[1].smallest) != Ordering::Less)
        {
            return Err(Error::corruption(
                file,
                format!(
                    "level {level} (its files {} with keys {} ..= {} and {} with keys \
                     {} ..= {} overlap)",
                    table_file_name(w[0].number),
                    show_key(&w[0].smallest),
                    show_key(&w[0].largest),
                    table_file_name(w[1].number),
                    show_key(&w[1].smallest),
                    show_key(&w[1].largest),
                ),
                offset,
            ));
        }
    }
    Ok(())
}

/// Applies `edit`'s deleted and new files to `levels` (LevelDB's `VersionSet::Builder`
/// for one edit): a deleted file leaves its level, a new one joins its level unless a file
/// of its number is there, and each level changed is sorted by smallest key, then number.
/// The one rule for a refresh's view and the writer's version set; each level the edit
/// changes is filtered and sorted once, whatever the edit's size.
pub(crate) fn apply_files(
    levels: &mut [Vec<Arc<FileMetaData>>; NUM_LEVELS],
    edit: &VersionEdit,
    icmp: &InternalKeyComparator,
) {
    for (level, files) in levels.iter_mut().enumerate() {
        let deleted: HashSet<u64> = edit
            .deleted_files
            .iter()
            .filter(|&&(l, _)| l == level)
            .map(|&(_, number)| number)
            .collect();
        if !deleted.is_empty() {
            files.retain(|f| !deleted.contains(&f.number));
        }
        let mut present: Option<HashSet<u64>> = None;
        let mut added = false;
        for (_, meta) in edit.new_files.iter().filter(|(l, _)| *l == level) {
            let present = present.get_or_insert_with(|| files.iter().map(|f| f.number).collect());
            if present.insert(meta.number) {
                files.push(Arc::new(meta.clone()));
                added = true;
            }
        }
        if added {
            files.sort_by(|a, b| {
                icmp.compare(&a.smallest, &b.smallest)
                    .then(a.number.cmp(&b.number))
            });
        }
    }
}

/// The most bytes of a name read from `CURRENT` that messages show.
const SHOWN_NAME_BYTES: usize = 64;

/// `name` for a message: its first [`SHOWN_NAME_BYTES`] bytes, then `…` if there are more.
fn shown_name(name: &[u8]) -> String {
    match name.get(..SHOWN_NAME_BYTES) {
        Some(head) if name.len() > SHOWN_NAME_BYTES => {
            format!("{}…", String::from_utf8_lossy(head))
        }
        _ => String::from_utf8_lossy(name).into_owned(),
    }
}

/// Whether `data` ends as a power loss inside the record whose damage the log reader
/// reported at `offset` (for `reason`) leaves it: zeros from a sector boundary inside that
/// record to the end (the file's length reached the disk, the data of its last sectors did
/// not).
///
/// The zeros must begin in that record: a physical record wholly before them was written in
/// full, so its damage is no torn write, unless it is a fragment whose logical record goes
/// on into the zeros (the reader names a record's first fragment for an error in its middle).
/// A last record may end in zeros of its own (an internal key's sequence number), and when
/// those cross a sector boundary a record damaged anywhere before would otherwise pass for
/// the torn one, with every edit after it unread.
fn ends_in_torn_sectors(data: &[u8], offset: u64, reason: &str) -> bool {
    const SECTOR: usize = 512;
    let zeros_from = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let cut = zeros_from.div_ceil(SECTOR) * SECTOR;
    let Ok(mut at) = usize::try_from(offset) else {
        return false;
    };
    if cut >= data.len() || cut <= at {
        return false;
    }
    // Each step moves on by a header at least: the walk ends at the zeros.
    loop {
        if at + HEADER_SIZE > cut {
            // A header reaching into the zeros.
            return true;
        }
        let length = usize::from(u16::from_le_bytes([data[at + 4], data[at + 5]]));
        let end = at + HEADER_SIZE + length;
        if end > data.len() {
            return false;
        }
        if end > cut {
            return true;
        }
        let continued = [RecordType::First as u8, RecordType::Middle as u8].contains(&data[at + 6]);
        if reason == "checksum mismatch" || !continued {
            return false;
        }
        at = end;
        let left = BLOCK_SIZE - at % BLOCK_SIZE;
        if left < HEADER_SIZE {
            at += left;
        }
    }
}

/// Reads `CURRENT` and replays the MANIFEST it names, with the user comparator `options`
/// give or, with [`DbOptions::comparators`], the one the MANIFEST names.
pub(crate) fn read_manifest(
    dir: &Path,
    options: &DbOptions,
) -> Result<(Manifest, Arc<dyn Comparator>)> {
    read_manifest_in(&LocalDir::new(dir), options)
}

/// Reads `CURRENT` in `storage` and replays the MANIFEST it names, as [`read_manifest`].
pub(crate) fn read_manifest_in(
    storage: &dyn Storage,
    options: &DbOptions,
) -> Result<(Manifest, Arc<dyn Comparator>)> {
    let (name, data) = manifest_bytes(storage)?;
    let user = user_comparator(options, &name, &data)?;
    let manifest = Manifest::replay_with(&name, &data, &user, !options.paranoid_checks)?;
    Ok((manifest, user))
}

/// The comparator to read the MANIFEST `file` (its bytes `data`) with: the options' own, or
/// with [`DbOptions::comparators`], the registered one the MANIFEST names.
///
/// # Errors
/// [`Error::UnknownComparator`] for a name the registry lacks.
pub(crate) fn user_comparator(
    options: &DbOptions,
    file: &str,
    data: &[u8],
) -> Result<Arc<dyn Comparator>> {
    let Some(registry) = &options.comparators else {
        return Ok(Arc::clone(&options.comparator));
    };
    let name = comparator_name(data);
    registry
        .choose(name.as_deref())
        .map_err(|ours| Error::UnknownComparator {
            file: file.into(),
            name: name.unwrap_or_default(),
            ours,
        })
}

/// The first comparator name the MANIFEST bytes `data` record, reading its records up to
/// the first damaged one; `None` if none before it names one.
pub fn comparator_name(data: &[u8]) -> Option<String> {
    let mut reader = LogReader::new(data, true);
    while let Some(record) = reader.read_record() {
        if !reader.dropped().is_empty() {
            return None;
        }
        let edit = VersionEdit::decode_from(&mut &record.data[..]).ok()?;
        if edit.comparator.is_some() {
            return edit.comparator;
        }
    }
    None
}

/// The comparator the database in `dir` (whose files are `names`) records, and the MANIFEST
/// that names it: the MANIFEST `CURRENT` names, or else the newest MANIFEST of `names`
/// that names one (each read up to its first damaged record); `None` if none does.
pub(crate) fn recorded_comparator(dir: &Path, names: &[String]) -> Option<(String, String)> {
    if let Ok((file, data)) = manifest_bytes(&LocalDir::new(dir))
        && let Some(name) = comparator_name(&data)
    {
        return Some((file, name));
    }
    manifests_newest_first(names).into_iter().find_map(|file| {
        // Bounded as every read of the directory: a larger file is passed over.
        let data = LocalDir::new(dir).read_bounded(file, MAX_READ_BYTES).ok()?;
        comparator_name(&data).map(|name| (file.clone(), name))
    })
}

/// The MANIFESTs among the file names `names`, the newest (highest number) first.
pub(crate) fn manifests_newest_first(names: &[String]) -> Vec<&String> {
    let mut manifests: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|name| match parse_file_name(name) {
            Some(FileType::Manifest(n)) => Some((n, name)),
            _ => None,
        })
        .collect();
    manifests.sort_unstable_by(|a, b| b.cmp(a));
    manifests.into_iter().map(|(_, name)| name).collect()
}

/// Reads `CURRENT` in `storage`, and the MANIFEST it names: its name and bytes.
fn manifest_bytes(storage: &dyn Storage) -> Result<(String, Vec<u8>)> {
    let dir = &storage.path();
    let current = match storage.read_bounded("CURRENT", CURRENT_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            return Err(Error::corruption(
                "CURRENT",
                format!("CURRENT file (longer than its {CURRENT_MAX_BYTES}-byte limit: {e})"),
                0,
            ));
        }
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
        Some(name) if !name.is_empty() => name,
        _ => {
            return Err(Error::corruption(
                "CURRENT",
                "CURRENT file (does not end with newline)",
                0,
            ));
        }
    };
    let name = match std::str::from_utf8(name) {
        Ok(name) if matches!(parse_file_name(name), Some(FileType::Manifest(_))) => name,
        _ => {
            return Err(Error::corruption(
                "CURRENT",
                format!(
                    "CURRENT file (names {:?}, not a MANIFEST)",
                    shown_name(name)
                ),
                0,
            ));
        }
    };
    let data = match storage.read_bounded(name, MAX_READ_BYTES) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::MissingFile {
                file: name.into(),
                what: "CURRENT names it (CURRENT points to a non-existent file)".into(),
            });
        }
        Err(e) => return Err(Error::io(dir.join(name), e)),
    };
    Ok((name.to_string(), data))
}

/// Checks a new-file entry's key range: both keys hold a tag, and the smallest is not after
/// the largest. Reads choose and skip files by these keys, so a range that cannot be true
/// is corruption of the MANIFEST, at the record `offset`.
fn check_file_range(
    file: &str,
    meta: &FileMetaData,
    icmp: &InternalKeyComparator,
    offset: u64,
) -> Result<()> {
    let table = table_file_name(meta.number);
    if meta.smallest.len() < TAG_LEN || meta.largest.len() < TAG_LEN {
        return Err(Error::corruption(
            file,
            format!(
                "version edit (new-file entry for {table}: an internal key shorter than its \
                 {TAG_LEN}-byte tag)"
            ),
            offset,
        ));
    }
    if icmp.compare(&meta.smallest, &meta.largest) == Ordering::Greater {
        return Err(Error::corruption(
            file,
            format!(
                "version edit (new-file entry for {table}: smallest key {} after largest {})",
                show_key(&meta.smallest),
                show_key(&meta.largest)
            ),
            offset,
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
