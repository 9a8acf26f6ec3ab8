//! What LevelDB calls a version (`db/version_set.h`: `Version`): the sources a consistent
//! view of the database is read from, newest first, and how a get walks them.

use std::cmp::Ordering;
use std::sync::Arc;

use leveltable_table::{BytewiseComparator, Comparator};

use crate::Result;
use crate::dbformat::{InternalKeyComparator, LookupKey, LookupResult};
use crate::filename::table_file_name;
use crate::live_memtable::LiveMemTable;
use crate::table_cache::TableCache;
use crate::version_edit::FileMetaData;

/// Where a version is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A write-ahead log, `NNNNNN.log`, replayed into memory.
    Log {
        /// The log's number.
        number: u64,
    },
    /// A table file, `NNNNNN.ldb` (or `.sst`).
    Table {
        /// The table's number.
        number: u64,
        /// Its level in the MANIFEST; `None` for a table the MANIFEST does not list (or,
        /// in a salvage, does not exist or could not be read).
        level: Option<usize>,
    },
}

/// A sorted source of entries.
#[derive(Debug)]
pub(crate) enum Source {
    /// Versions held in memory: the writes of one log (replayed, or the memtable of a
    /// database open for writing, which grows as it is read), or what a salvage could read
    /// of a damaged table.
    Mem {
        origin: Origin,
        table: Arc<LiveMemTable>,
    },
    /// Tables whose key ranges do not overlap, in order (one level-0 table, or a level).
    Files {
        level: Option<usize>,
        files: Vec<Arc<FileMetaData>>,
    },
}

/// The sources of a MANIFEST's levels in the order gets search them: each level-0 table,
/// newest (highest number) first, then each deeper level as one run.
pub(crate) fn file_sources(levels: &[Vec<Arc<FileMetaData>>]) -> Vec<Source> {
    let mut sources = Vec::new();
    if let Some(level0) = levels.first() {
        let mut level0 = level0.clone();
        level0.sort_by_key(|f| std::cmp::Reverse(f.number));
        for f in level0 {
            sources.push(Source::Files {
                level: Some(0),
                files: vec![f],
            });
        }
    }
    for (level, files) in levels.iter().enumerate().skip(1) {
        if !files.is_empty() {
            sources.push(Source::Files {
                level: Some(level),
                files: files.clone(),
            });
        }
    }
    sources
}

/// Which tables a get looked in (LevelDB's `Version::GetStats`): a get that looked in more
/// than one charges the first a seek, and a table charged too often is compacted.
#[derive(Debug, Default)]
pub(crate) struct SeekStats {
    last: Option<(Option<usize>, Arc<FileMetaData>)>,
    /// The table to charge and its level.
    pub(crate) charge: Option<(Option<usize>, Arc<FileMetaData>)>,
}

impl SeekStats {
    fn looked_in(&mut self, level: Option<usize>, f: &Arc<FileMetaData>) {
        if self.charge.is_none() && self.last.is_some() {
            self.charge = self.last.take();
        }
        self.last = Some((level, Arc::clone(f)));
    }
}

/// What LevelDB calls a version: the sources of one consistent view of the database, newest
/// first (the memtables of the live logs, each level-0 table, each deeper level as one run of
/// tables), and the table cache their files are read through.
pub(crate) struct Version {
    pub(crate) icmp: InternalKeyComparator,
    /// The internal comparator over [`BytewiseComparator`], statically dispatched, when the
    /// user comparator is bytewise.
    pub(crate) bytewise: Option<InternalKeyComparator<BytewiseComparator>>,
    pub(crate) tables: Arc<TableCache>,
    pub(crate) sources: Vec<Source>,
    /// Gets take the newest version of all sources (a salvage) instead of the first found
    /// in LevelDB's search order.
    pub(crate) newest_wins: bool,
}

impl Version {
    pub(crate) fn new(
        icmp: InternalKeyComparator,
        tables: Arc<TableCache>,
        sources: Vec<Source>,
        newest_wins: bool,
    ) -> Self {
        let bytewise = (icmp.user_comparator().name() == BytewiseComparator.name())
            .then(InternalKeyComparator::bytewise);
        Version {
            icmp,
            bytewise,
            tables,
            sources,
            newest_wins,
        }
    }

    /// Where the entries of source `i` are stored.
    /// The origin of every entry of source `i`, if it does not depend on the key: a
    /// memtable's, or the one table of a source of one.
    pub(crate) fn fixed_origin(&self, i: usize) -> Option<Origin> {
        match &self.sources[i] {
            Source::Files { files, .. } if files.len() > 1 => None,
            _ => Some(self.origin(i, &[])),
        }
    }

    pub(crate) fn origin(&self, i: usize, key: &[u8]) -> Origin {
        match &self.sources[i] {
            Source::Mem { origin, .. } => *origin,
            Source::Files { level, files } => {
                // The file whose range holds the key: the first whose largest key is not
                // below it (files of a source do not overlap).
                let j = files
                    .partition_point(|f| self.icmp.compare(&f.largest, key) == Ordering::Less)
                    .min(files.len().saturating_sub(1));
                Origin::Table {
                    number: files.get(j).map_or(0, |f| f.number),
                    level: *level,
                }
            }
        }
    }

    /// What a get of `key` finds, searching as LevelDB's `Version::Get` does: each source
    /// in order, the first that has a version at or below the key's snapshot decides (with
    /// `newest_wins`, the newest of all of them).
    pub(crate) fn get(&self, key: &LookupKey) -> Result<LookupResult> {
        self.get_with(key, &mut SeekStats::default())
    }

    /// [`get`](Self::get), noting in `stats` the tables it looked in.
    pub(crate) fn get_with(&self, key: &LookupKey, stats: &mut SeekStats) -> Result<LookupResult> {
        let mut best = LookupResult::NotFound;
        for source in &self.sources {
            let found = match source {
                Source::Mem { table, .. } => table.lookup(key)?,
                Source::Files { files, level } => self.get_in_files(files, *level, key, stats)?,
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

    /// A get in one run of non-overlapping files: only the file whose range holds the key.
    fn get_in_files(
        &self,
        files: &[Arc<FileMetaData>],
        level: Option<usize>,
        key: &LookupKey,
        stats: &mut SeekStats,
    ) -> Result<LookupResult> {
        let (target, user_key) = (key.target(), key.user_key());
        let icmp = &self.icmp;
        // The first file whose largest key is not below the target (LevelDB's FindFile).
        let i = files.partition_point(|f| icmp.compare(&f.largest, target) == Ordering::Less);
        let Some(f) = files.get(i) else {
            return Ok(LookupResult::NotFound);
        };
        let smallest_user = &f.smallest[..f.smallest.len().saturating_sub(8)];
        if self.icmp.user_comparator().compare(user_key, smallest_user) == Ordering::Less {
            return Ok(LookupResult::NotFound);
        }
        stats.looked_in(level, f);
        let table = self.tables.get(f.number)?;
        table
            .lookup(key)
            .map_err(|e| e.in_table(table_file_name(f.number)))
    }
}

/// The bytes of `files` before internal key `key` (LevelDB's
/// `VersionSet::ApproximateOffsetOf`): a file wholly before it counts whole, one wholly after
/// it not at all, and one that spans it by where its index puts the key.
///
/// # Errors
/// A table that cannot be opened.
pub(crate) fn approximate_offset_of<'a>(
    icmp: &InternalKeyComparator,
    tables: &TableCache,
    files: impl IntoIterator<Item = &'a FileMetaData>,
    key: &[u8],
) -> Result<u64> {
    let mut total = 0u64;
    for f in files {
        let size = if icmp.compare(&f.largest, key) != Ordering::Greater {
            f.file_size
        } else if icmp.compare(&f.smallest, key) == Ordering::Greater {
            0
        } else {
            tables.get(f.number)?.table().approximate_offset_of(key)
        };
        total = total.saturating_add(size);
    }
    Ok(total)
}
