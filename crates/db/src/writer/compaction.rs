//! Which files a compaction merges, and where its outputs are cut (LevelDB's
//! `VersionSet::PickCompaction`, `CompactRange` and `Compaction`).

use std::cmp::Ordering;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::InternalKeyComparator;
use crate::levels::{Levels, OutputRange, total_size, user_key};
use crate::version_edit::{FileMetaData, NUM_LEVELS, VersionEdit};

/// A compaction's plan: the files of `level` and of `level + 1` to merge into `level + 1`.
#[derive(Debug)]
pub(crate) struct Compaction {
    pub(crate) level: usize,
    pub(crate) inputs: [Vec<Arc<FileMetaData>>; 2],
    /// The files of `level + 2` the inputs overlap: an output is cut before it overlaps too
    /// many of their bytes, so that its own compaction stays small.
    grandparents: Vec<Arc<FileMetaData>>,
    grandparent_index: usize,
    seen_key: bool,
    overlapped_bytes: u64,
    pub(crate) max_output_file_size: u64,
    /// Changes other than the inputs and outputs (the compaction pointer).
    pub(crate) edit: VersionEdit,
}

/// Finds whether a level below a compaction's output level may hold a user key.
pub(crate) struct BaseLevel<'l> {
    levels: &'l Levels,
    user: &'l dyn Comparator,
    /// The first level below the output level.
    first: usize,
    /// Per level: how far the search got (keys come in increasing order).
    level_ptrs: [usize; NUM_LEVELS],
}

impl BaseLevel<'_> {
    /// Whether no level below the output level holds `user_key`: a deletion of it may then
    /// be dropped (LevelDB's `IsBaseLevelForKey`). Keys come in increasing order.
    pub(crate) fn is_base_level_for_key(&mut self, key: &[u8]) -> bool {
        let user = self.user;
        for level in self.first..NUM_LEVELS {
            let files = &self.levels.files[level];
            while let Some(f) = files.get(self.level_ptrs[level]) {
                if user.compare(key, user_key(&f.largest)) != Ordering::Greater {
                    if user.compare(key, user_key(&f.smallest)) != Ordering::Less {
                        return false;
                    }
                    break;
                }
                self.level_ptrs[level] += 1;
            }
        }
        true
    }
}

/// Limits derived from `max_file_size`, as LevelDB derives them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_file_size: u64,
}

impl Limits {
    /// Bytes of grandparent overlap at which an output is cut (`MaxGrandParentOverlapBytes`).
    pub(crate) fn max_grandparent_overlap(self) -> u64 {
        self.max_file_size.saturating_mul(10)
    }

    /// The most bytes a compaction grows to when it takes more inputs of its level
    /// (`ExpandedCompactionByteSizeLimit`).
    fn expanded_limit(self) -> u64 {
        self.max_file_size.saturating_mul(25)
    }
}

/// The smallest and largest internal keys of `files`.
fn key_range(files: &[Arc<FileMetaData>], icmp: &InternalKeyComparator) -> (Vec<u8>, Vec<u8>) {
    let mut smallest = &files[0].smallest;
    let mut largest = &files[0].largest;
    for f in &files[1..] {
        if icmp.compare(&f.smallest, smallest) == Ordering::Less {
            smallest = &f.smallest;
        }
        if icmp.compare(&f.largest, largest) == Ordering::Greater {
            largest = &f.largest;
        }
    }
    (smallest.clone(), largest.clone())
}

/// LevelDB's `AddBoundaryInputs`: while a file of `level_files` starts with the user key the
/// inputs end with (at a smaller internal key), it joins them, so that no newer version of a
/// key stays behind in `level` while an older one moves down.
fn add_boundary_inputs(
    icmp: &InternalKeyComparator,
    level_files: &[Arc<FileMetaData>],
    inputs: &mut Vec<Arc<FileMetaData>>,
) {
    if inputs.is_empty() {
        return;
    }
    let mut largest = key_range(inputs, icmp).1;
    loop {
        let user = icmp.user_comparator();
        let boundary = level_files
            .iter()
            .filter(|f| {
                icmp.compare(&f.smallest, &largest) == Ordering::Greater
                    && user.compare(user_key(&f.smallest), user_key(&largest)) == Ordering::Equal
            })
            .min_by(|a, b| icmp.compare(&a.smallest, &b.smallest));
        match boundary {
            Some(f) => {
                largest = f.largest.clone();
                inputs.push(Arc::clone(f));
            }
            None => return,
        }
    }
}

impl Compaction {
    fn new(level: usize, inputs0: Vec<Arc<FileMetaData>>, limits: Limits) -> Compaction {
        Compaction {
            level,
            inputs: [inputs0, Vec::new()],
            grandparents: Vec::new(),
            grandparent_index: 0,
            seen_key: false,
            overlapped_bytes: 0,
            max_output_file_size: limits.max_file_size,
            edit: VersionEdit::default(),
        }
    }

    /// The compaction the levels most need, if any (LevelDB's `PickCompaction`, size
    /// compactions; `seek` names a file read past too often).
    pub(crate) fn pick(
        levels: &Levels,
        pointers: &[Vec<u8>; NUM_LEVELS],
        icmp: &InternalKeyComparator,
        limits: Limits,
        seek: Option<(usize, u64)>,
    ) -> Option<Compaction> {
        let (level, score) = levels.compaction_score();
        let mut c = if score >= 1.0 {
            let files = &levels.files[level];
            let pointer = &pointers[level];
            let first = files
                .iter()
                .find(|f| {
                    pointer.is_empty() || icmp.compare(&f.largest, pointer) == Ordering::Greater
                })
                .or_else(|| files.first())?;
            Compaction::new(level, vec![Arc::clone(first)], limits)
        } else {
            let (level, number) = seek?;
            let f = levels.files[level].iter().find(|f| f.number == number)?;
            Compaction::new(level, vec![Arc::clone(f)], limits)
        };
        if c.level == 0 {
            // Level-0 files overlap: take every one the first overlaps.
            let (smallest, largest) = key_range(&c.inputs[0], icmp);
            c.inputs[0] = levels.overlapping(
                0,
                Some(user_key(&smallest)),
                Some(user_key(&largest)),
                &**icmp.user_comparator(),
            );
        }
        c.setup_other_inputs(levels, icmp, limits);
        Some(c)
    }

    /// A compaction of the files of `level` overlapping `[begin, end]` (user keys), at most
    /// about `max_file_size` of them below level 0 (LevelDB's `CompactRange`).
    pub(crate) fn range(
        levels: &Levels,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        icmp: &InternalKeyComparator,
        limits: Limits,
    ) -> Option<Compaction> {
        let mut inputs = levels.overlapping(level, begin, end, &**icmp.user_comparator());
        if inputs.is_empty() {
            return None;
        }
        if level > 0 {
            let mut total = 0u64;
            for i in 0..inputs.len() {
                total = total.saturating_add(inputs[i].file_size);
                if total >= limits.max_file_size {
                    inputs.truncate(i + 1);
                    break;
                }
            }
        }
        let mut c = Compaction::new(level, inputs, limits);
        c.setup_other_inputs(levels, icmp, limits);
        Some(c)
    }

    /// LevelDB's `SetupOtherInputs`: the overlapping files of the next level, more files of
    /// this level where they add none there, the grandparents, the new compaction pointer.
    fn setup_other_inputs(
        &mut self,
        levels: &Levels,
        icmp: &InternalKeyComparator,
        limits: Limits,
    ) {
        let level = self.level;
        let user = &**icmp.user_comparator();
        add_boundary_inputs(icmp, &levels.files[level], &mut self.inputs[0]);
        let (smallest, largest) = key_range(&self.inputs[0], icmp);
        self.inputs[1] = levels.overlapping(
            level + 1,
            Some(user_key(&smallest)),
            Some(user_key(&largest)),
            user,
        );
        add_boundary_inputs(icmp, &levels.files[level + 1], &mut self.inputs[1]);
        let all = |c: &Compaction| {
            let mut v = c.inputs[0].clone();
            v.extend(c.inputs[1].iter().cloned());
            key_range(&v, icmp)
        };
        let (mut all_start, mut all_limit) = all(self);
        if !self.inputs[1].is_empty() {
            let mut expanded0 = levels.overlapping(
                level,
                Some(user_key(&all_start)),
                Some(user_key(&all_limit)),
                user,
            );
            add_boundary_inputs(icmp, &levels.files[level], &mut expanded0);
            let inputs1_size = total_size(&self.inputs[1]);
            let expanded0_size = total_size(&expanded0);
            if expanded0.len() > self.inputs[0].len()
                && inputs1_size.saturating_add(expanded0_size) < limits.expanded_limit()
            {
                let (new_start, new_limit) = key_range(&expanded0, icmp);
                let mut expanded1 = levels.overlapping(
                    level + 1,
                    Some(user_key(&new_start)),
                    Some(user_key(&new_limit)),
                    user,
                );
                add_boundary_inputs(icmp, &levels.files[level + 1], &mut expanded1);
                if expanded1.len() == self.inputs[1].len() {
                    self.inputs = [expanded0, expanded1];
                    (all_start, all_limit) = all(self);
                }
            }
        }
        if level + 2 < NUM_LEVELS {
            self.grandparents = levels.overlapping(
                level + 2,
                Some(user_key(&all_start)),
                Some(user_key(&all_limit)),
                user,
            );
        }
        let largest = key_range(&self.inputs[0], icmp).1;
        self.edit.compact_pointers.push((level, largest));
    }

    /// Where the compaction's outputs go: the next level, within the user keys its inputs
    /// span.
    pub(crate) fn output_range(&self, icmp: &InternalKeyComparator) -> OutputRange {
        let mut all = self.inputs[0].clone();
        all.extend(self.inputs[1].iter().cloned());
        let (smallest, largest) = key_range(&all, icmp);
        OutputRange {
            level: self.level + 1,
            smallest: user_key(&smallest).to_vec(),
            largest: user_key(&largest).to_vec(),
        }
    }

    /// Whether the compaction can move its one input file down a level unchanged.
    pub(crate) fn is_trivial_move(&self, limits: Limits) -> bool {
        self.inputs[0].len() == 1
            && self.inputs[1].is_empty()
            && total_size(&self.grandparents) <= limits.max_grandparent_overlap()
    }

    /// Records the inputs' deletion in `edit`.
    pub(crate) fn add_input_deletions(&self, edit: &mut VersionEdit) {
        for (which, files) in self.inputs.iter().enumerate() {
            for f in files {
                edit.deleted_files.insert((self.level + which, f.number));
            }
        }
    }

    /// The search for the levels below the output level that may hold a key, over `levels`
    /// (the levels the compaction was planned on).
    pub(crate) fn base_level<'l>(
        &self,
        levels: &'l Levels,
        user: &'l dyn Comparator,
    ) -> BaseLevel<'l> {
        BaseLevel {
            levels,
            user,
            first: self.level + 2,
            level_ptrs: [0; NUM_LEVELS],
        }
    }

    /// Whether the output should be cut before `key` (an internal key), because it would
    /// overlap too many bytes of the grandparents (LevelDB's `ShouldStopBefore`).
    pub(crate) fn should_stop_before(
        &mut self,
        key: &[u8],
        icmp: &InternalKeyComparator,
        limits: Limits,
    ) -> bool {
        while let Some(g) = self.grandparents.get(self.grandparent_index) {
            if icmp.compare(key, &g.largest) != Ordering::Greater {
                break;
            }
            if self.seen_key {
                self.overlapped_bytes = self.overlapped_bytes.saturating_add(g.file_size);
            }
            self.grandparent_index += 1;
        }
        self.seen_key = true;
        if self.overlapped_bytes > limits.max_grandparent_overlap() {
            self.overlapped_bytes = 0;
            true
        } else {
            false
        }
    }
}
