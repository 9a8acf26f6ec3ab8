//! Replaying a MANIFEST into the current version: the table files of each level and the
//! database's counters (LevelDB's `VersionSet::Recover`).
//!
//! The replay is sans-IO: [`Manifest::replay`] takes the MANIFEST's bytes. Its checks are
//! LevelDB's: any dropped byte in the MANIFEST (a bad checksum, a bad length, a fragment out
//! of place) is corruption, except a torn tail; a record that is not a version edit is
//! corruption; a comparator name other than the expected one is refused; and the replay must
//! end knowing the next file number, the log number and the last sequence number.

use std::collections::BTreeSet;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::InternalKeyComparator;
use crate::log_reader::LogReader;
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
    pub levels: [Vec<Arc<FileMetaData>>; NUM_LEVELS],
    /// Records replayed.
    pub records: u64,
}

/// The files of one level while edits are applied (LevelDB's `VersionSet::Builder`).
#[derive(Default)]
struct LevelBuilder {
    deleted: BTreeSet<u64>,
    added: Vec<FileMetaData>,
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
        let mut reader = LogReader::new(data, true);
        let mut levels: [LevelBuilder; NUM_LEVELS] = Default::default();
        let mut comparator_name = None;
        let (mut log_number, mut prev_log_number) = (None, None);
        let (mut next_file_number, mut last_sequence) = (None, None);
        let mut records = 0u64;
        loop {
            let record = reader.read_record();
            // LevelDB's reporter turns the first dropped byte into the replay's status, and
            // the record read alongside it is not applied.
            if let Some(d) = reader.dropped().first() {
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
            if let Some(name) = &edit.comparator {
                if name != comparator.name() {
                    return Err(Error::UnknownComparator {
                        file: file.into(),
                        name: name.clone(),
                        ours: comparator.name().to_string(),
                    });
                }
                comparator_name = Some(name.clone());
            }
            for &(level, number) in &edit.deleted_files {
                levels[level].deleted.insert(number);
            }
            for (level, meta) in &edit.new_files {
                let builder = &mut levels[*level];
                builder.deleted.remove(&meta.number);
                // LevelDB keeps added files in a set ordered by (smallest key, number): an
                // equal one is not added twice.
                if !builder
                    .added
                    .iter()
                    .any(|f| f.number == meta.number && f.smallest == meta.smallest)
                {
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
        let icmp = InternalKeyComparator::new(Arc::clone(comparator));
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
        Ok(Manifest {
            file: file.to_string(),
            comparator: comparator_name,
            log_number,
            prev_log_number: prev_log_number.unwrap_or(0),
            next_file_number,
            last_sequence,
            levels,
            records,
        })
    }

    /// Every live table file number.
    pub fn live_files(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }
}
