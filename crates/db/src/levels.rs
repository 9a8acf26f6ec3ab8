//! The table files of each level (LevelDB's `Version` and `VersionSet::Builder`), as a
//! MANIFEST's replay, a refresh and a writer keep them: edits applied, overlaps found, the
//! level most in need of a compaction scored.

use std::cmp::Ordering;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::TAG_LEN;
use crate::options::TableInfo;
use crate::version_edit::{FileMetaData, NUM_LEVELS};

/// Level-0 files that start a compaction (`config::kL0_CompactionTrigger`).
pub(crate) const L0_COMPACTION_TRIGGER: usize = 4;
/// Level-0 files at which each write is delayed by 1 ms (`kL0_SlowdownWritesTrigger`).
pub(crate) const L0_SLOWDOWN_WRITES_TRIGGER: usize = 8;
/// Level-0 files at which writes wait for a compaction (`kL0_StopWritesTrigger`).
pub(crate) const L0_STOP_WRITES_TRIGGER: usize = 12;
/// The deepest level a flushed memtable may be placed in (`kMaxMemCompactLevel`).
const MAX_MEM_COMPACT_LEVEL: usize = 2;

/// The user key of an internal key.
pub(crate) fn user_key(key: &[u8]) -> &[u8] {
    &key[..key.len().saturating_sub(TAG_LEN)]
}

/// The bytes of `files`.
pub(crate) fn total_size(files: &[Arc<FileMetaData>]) -> u64 {
    // Sizes a MANIFEST claims: saturating, as every sum of them.
    files
        .iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.file_size))
}

/// LevelDB's `MaxBytesForLevel`: 10 MB for level 1, ten times more for each level below.
fn max_bytes_for_level(level: usize) -> f64 {
    let mut result = 10.0 * 1_048_576.0;
    for _ in 1..level {
        result *= 10.0;
    }
    result
}

/// Where a compaction in progress puts its outputs: their level and the user keys its
/// inputs span, which holds every output.
#[derive(Clone, Debug)]
pub(crate) struct OutputRange {
    pub(crate) level: usize,
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
}

impl OutputRange {
    /// Whether the user keys `[smallest, largest]` overlap the range.
    fn overlaps(&self, smallest: &[u8], largest: &[u8], user: &dyn Comparator) -> bool {
        user.compare(&self.largest, smallest) != Ordering::Less
            && user.compare(&self.smallest, largest) != Ordering::Greater
    }
}

/// The files of each level. Level 0 is sorted by smallest key then number; the deeper
/// levels do not overlap and are sorted by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Levels {
    pub(crate) files: [Vec<Arc<FileMetaData>>; NUM_LEVELS],
}

impl Levels {
    /// The level that most needs compacting and its score (LevelDB's `Finalize`): level 0
    /// by its number of files over 4, the others by their bytes over their limit.
    pub(crate) fn compaction_score(&self) -> (usize, f64) {
        let mut best = (0, -1.0);
        for level in 0..NUM_LEVELS - 1 {
            let score = if level == 0 {
                self.files[0].len() as f64 / L0_COMPACTION_TRIGGER as f64
            } else {
                total_size(&self.files[level]) as f64 / max_bytes_for_level(level)
            };
            if score > best.1 {
                best = (level, score);
            }
        }
        best
    }

    /// The files of `level` whose user-key ranges overlap `[begin, end]` (`None`: unbounded),
    /// LevelDB's `GetOverlappingInputs`: in level 0, a file that widens the range restarts
    /// the search with the wider range, so overlapping files are taken together.
    pub(crate) fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        user: &dyn Comparator,
    ) -> Vec<Arc<FileMetaData>> {
        let mut begin = begin.map(<[u8]>::to_vec);
        let mut end = end.map(<[u8]>::to_vec);
        let mut out = Vec::new();
        let mut i = 0;
        let files = &self.files[level];
        while i < files.len() {
            let f = &files[i];
            i += 1;
            let (start, limit) = (user_key(&f.smallest), user_key(&f.largest));
            if begin
                .as_deref()
                .is_some_and(|b| user.compare(limit, b) == Ordering::Less)
                || end
                    .as_deref()
                    .is_some_and(|e| user.compare(start, e) == Ordering::Greater)
            {
                continue;
            }
            out.push(Arc::clone(f));
            if level == 0 {
                if begin
                    .as_deref()
                    .is_some_and(|b| user.compare(start, b) == Ordering::Less)
                {
                    begin = Some(start.to_vec());
                    out.clear();
                    i = 0;
                } else if end
                    .as_deref()
                    .is_some_and(|e| user.compare(limit, e) == Ordering::Greater)
                {
                    end = Some(limit.to_vec());
                    out.clear();
                    i = 0;
                }
            }
        }
        out
    }

    /// Whether some file of `level` overlaps the user keys `[smallest, largest]`.
    pub(crate) fn overlap_in_level(
        &self,
        level: usize,
        smallest: &[u8],
        largest: &[u8],
        user: &dyn Comparator,
    ) -> bool {
        self.files[level].iter().any(|f| {
            user.compare(user_key(&f.largest), smallest) != Ordering::Less
                && user.compare(user_key(&f.smallest), largest) != Ordering::Greater
        })
    }

    /// The level a flushed memtable holding `[smallest, largest]` goes to (LevelDB's
    /// `PickLevelForMemTableOutput`): below level 0 while it overlaps nothing in the next
    /// level and not too much in the one after, down to level 2.
    ///
    /// `busy` is where a compaction in progress will put its outputs. Those are not in
    /// these levels yet, and one of them may span a gap of its inputs, so the flush stays
    /// above the compaction's output level wherever it overlaps the compaction's key range
    /// (RocksDB's `RangeOverlapWithCompaction`; LevelDB 1.23 places it there and later
    /// fails its level checks).
    pub(crate) fn level_for_flush(
        &self,
        smallest: &[u8],
        largest: &[u8],
        max_grandparent_bytes: u64,
        busy: Option<&OutputRange>,
        user: &dyn Comparator,
    ) -> usize {
        let mut level = 0;
        if self.overlap_in_level(0, smallest, largest, user) {
            return 0;
        }
        while level < MAX_MEM_COMPACT_LEVEL {
            if self.overlap_in_level(level + 1, smallest, largest, user) {
                break;
            }
            if busy.is_some_and(|b| b.level == level + 1 && b.overlaps(smallest, largest, user)) {
                break;
            }
            if level + 2 < NUM_LEVELS {
                let over = self.overlapping(level + 2, Some(smallest), Some(largest), user);
                if total_size(&over) > max_grandparent_bytes {
                    break;
                }
            }
            level += 1;
        }
        level
    }

    /// The tables of each level, as properties give them.
    pub(crate) fn infos(&self) -> Vec<Vec<TableInfo>> {
        self.files
            .iter()
            .enumerate()
            .map(|(level, files)| {
                files
                    .iter()
                    .map(|f| TableInfo::of(Some(level), f))
                    .collect()
            })
            .collect()
    }

    /// Every file number the levels list.
    pub(crate) fn numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.files.iter().flatten().map(|f| f.number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::InternalKeyComparator;
    use crate::dbformat::{ValueType, append_internal_key};
    use crate::manifest::apply_files;
    use crate::version_edit::VersionEdit;
    use leveltable_table::BytewiseComparator;

    fn file(number: u64, a: &[u8], b: &[u8]) -> FileMetaData {
        let key = |k: &[u8]| {
            let mut v = Vec::new();
            append_internal_key(&mut v, k, 1, ValueType::Value).unwrap();
            v
        };
        FileMetaData {
            number,
            file_size: 1,
            smallest: key(a),
            largest: key(b),
        }
    }

    #[test]
    fn level_zero_overlaps_widen_the_range() {
        let icmp = InternalKeyComparator::new(Arc::new(BytewiseComparator) as Arc<dyn Comparator>);
        let mut edit = VersionEdit::default();
        edit.new_files.push((0, file(1, b"a", b"c")));
        edit.new_files.push((0, file(2, b"b", b"f")));
        edit.new_files.push((0, file(3, b"e", b"g")));
        edit.new_files.push((0, file(4, b"x", b"z")));
        edit.new_files.push((1, file(5, b"a", b"b")));
        edit.new_files.push((1, file(6, b"m", b"n")));
        let mut levels = Levels::default();
        apply_files(&mut levels.files, &edit, &icmp);
        let numbers = |v: Vec<Arc<FileMetaData>>| v.iter().map(|f| f.number).collect::<Vec<_>>();
        let user = BytewiseComparator;
        assert_eq!(
            numbers(levels.overlapping(0, Some(b"a"), Some(b"a"), &user)),
            [1, 2, 3]
        );
        assert_eq!(
            numbers(levels.overlapping(1, Some(b"c"), Some(b"m"), &user)),
            [6]
        );
        assert_eq!(numbers(levels.overlapping(1, None, None, &user)), [5, 6]);
        assert_eq!(levels.level_for_flush(b"p", b"q", 20 << 20, None, &user), 2);
        assert_eq!(levels.level_for_flush(b"b", b"b", 20 << 20, None, &user), 0);
        // A compaction into level 2 whose inputs span [m..z]: the flush stays above it.
        let busy = OutputRange {
            level: 2,
            smallest: b"m".to_vec(),
            largest: b"z".to_vec(),
        };
        assert_eq!(
            levels.level_for_flush(b"p", b"q", 20 << 20, Some(&busy), &user),
            1
        );
        assert_eq!(
            levels.level_for_flush(
                b"p",
                b"q",
                20 << 20,
                Some(&OutputRange { level: 1, ..busy }),
                &user
            ),
            0
        );
        let mut remove = VersionEdit::default();
        remove.deleted_files.insert((0, 2));
        let mut removed = levels.clone();
        apply_files(&mut removed.files, &remove, &icmp);
        assert_eq!(removed.files[0].len(), 3);
        assert_eq!(levels.compaction_score(), (0, 1.0));
    }
}
