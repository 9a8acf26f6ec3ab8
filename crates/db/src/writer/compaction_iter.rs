//! The compaction's merge with its drop rules (the loop of LevelDB's `DoCompactionWork`,
//! RocksDB's `CompactionIterator`): the inputs' entries in internal-key order in, the
//! entries the outputs keep out, after the compaction filter had its say.
//!
//! The drop rules, for the versions of one user key, newest first:
//! - a version is dropped when a newer version of the key is at or below the smallest
//!   snapshot (every reader sees that newer one instead);
//! - a deletion at or below the smallest snapshot is dropped when no level below the
//!   output level may hold the key (LevelDB's `IsBaseLevelForKey`): there is nothing left
//!   for it to hide.
//!
//! An entry whose key does not parse is kept as it is and ends the run of its user key.

use std::cmp::Ordering;

use leveltable_table::Comparator;

use crate::Result;
use crate::dbformat::{MAX_SEQUENCE, ParsedInternalKey, ValueType, append_internal_key};
use crate::merger::Merger;
use crate::writer::compaction_filter::{CompactionFilter, FilterDecision};

/// Sorted internal entries a compaction reads: moved to, then read (LevelDB's iterator).
pub(crate) trait Entries {
    /// Moves to the next entry; false at the end.
    fn advance(&mut self) -> Result<bool>;
    /// The entry moved to last.
    fn current(&self) -> (&[u8], &[u8]);
}

impl Entries for Merger {
    #[inline]
    fn advance(&mut self) -> Result<bool> {
        Ok(self.next_front()?.is_some())
    }

    #[inline]
    fn current(&self) -> (&[u8], &[u8]) {
        self.held()
    }
}

/// A compaction filter as one compaction applies it.
pub(crate) struct Filtering<'a> {
    pub(crate) filter: &'a dyn CompactionFilter,
    /// The level the outputs go to.
    pub(crate) level: usize,
    /// The newest live snapshot: versions at or below it are not shown to the filter.
    pub(crate) latest_snapshot: Option<u64>,
}

/// What the rules make of one entry.
enum Verdict {
    Drop,
    Keep,
    /// Kept as the rules' own key and value (the filter changed it).
    Rewritten,
}

/// The drop rules' state along the merge.
struct Rules<'a, B> {
    user: &'a dyn Comparator,
    smallest_snapshot: u64,
    /// Whether no level below the output level may hold a user key; asked with user keys
    /// in increasing order.
    is_base_level: B,
    filter: Option<Filtering<'a>>,
    current_user_key: Vec<u8>,
    has_current_user_key: bool,
    /// The sequence number of the previous version of the current user key
    /// ([`MAX_SEQUENCE`] before its first).
    last_sequence_for_key: u64,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Entries the filter removed or changed.
    filter_changes: u64,
}

/// The entries a compaction keeps, in order.
pub(crate) struct CompactionIter<'a, I, B> {
    input: I,
    rules: Rules<'a, B>,
}

impl<'a, I: Entries, B: FnMut(&[u8]) -> bool> CompactionIter<'a, I, B> {
    /// Applies the drop rules (and `filter`, if any) to `input`, for readers whose oldest
    /// view is `smallest_snapshot` (the last sequence number when no snapshot is live).
    pub(crate) fn new(
        input: I,
        user: &'a dyn Comparator,
        smallest_snapshot: u64,
        is_base_level: B,
        filter: Option<Filtering<'a>>,
    ) -> Self {
        CompactionIter {
            input,
            rules: Rules {
                user,
                smallest_snapshot,
                is_base_level,
                filter,
                current_user_key: Vec::new(),
                has_current_user_key: false,
                last_sequence_for_key: MAX_SEQUENCE,
                key: Vec::new(),
                value: Vec::new(),
                filter_changes: 0,
            },
        }
    }

    /// How many entries the filter removed or changed so far.
    pub(crate) fn filter_changes(&self) -> u64 {
        self.rules.filter_changes
    }

    /// The next entry kept: an internal key and its value.
    ///
    /// # Errors
    /// A read of the inputs failed.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        loop {
            if !self.input.advance()? {
                return Ok(None);
            }
            let (key, value) = self.input.current();
            match self.rules.decide(key, value)? {
                Verdict::Drop => continue,
                Verdict::Keep => return Ok(Some(self.input.current())),
                Verdict::Rewritten => return Ok(Some((&self.rules.key, &self.rules.value))),
            }
        }
    }
}

impl<B: FnMut(&[u8]) -> bool> Rules<'_, B> {
    #[inline]
    fn decide(&mut self, key: &[u8], value: &[u8]) -> Result<Verdict> {
        let Ok(parsed) = ParsedInternalKey::parse(key) else {
            self.has_current_user_key = false;
            self.last_sequence_for_key = MAX_SEQUENCE;
            return Ok(Verdict::Keep);
        };
        let first = !self.has_current_user_key
            || self.user.compare(parsed.user_key, &self.current_user_key) != Ordering::Equal;
        if first {
            self.current_user_key.clear();
            self.current_user_key.extend_from_slice(parsed.user_key);
            self.has_current_user_key = true;
            self.last_sequence_for_key = MAX_SEQUENCE;
        }
        let mut verdict = Verdict::Keep;
        let mut value_type = parsed.value_type;
        if first
            && value_type == ValueType::Value
            && let Some(f) = &self.filter
            && f.latest_snapshot.is_none_or(|s| parsed.sequence > s)
        {
            match f.filter.filter(f.level, parsed.user_key, value) {
                FilterDecision::Keep => {}
                FilterDecision::Remove => {
                    value_type = ValueType::Deletion;
                    self.key.clear();
                    append_internal_key(
                        &mut self.key,
                        parsed.user_key,
                        parsed.sequence,
                        ValueType::Deletion,
                    )?;
                    self.value.clear();
                    self.filter_changes += 1;
                    verdict = Verdict::Rewritten;
                }
                FilterDecision::ChangeValue(v) => {
                    self.key.clear();
                    self.key.extend_from_slice(key);
                    self.value = v;
                    self.filter_changes += 1;
                    verdict = Verdict::Rewritten;
                }
            }
        }
        let drop = if self.last_sequence_for_key <= self.smallest_snapshot {
            // A newer version of the key is visible to every snapshot.
            true
        } else {
            value_type == ValueType::Deletion
                && parsed.sequence <= self.smallest_snapshot
                && (self.is_base_level)(parsed.user_key)
        };
        self.last_sequence_for_key = parsed.sequence;
        Ok(if drop { Verdict::Drop } else { verdict })
    }
}

#[cfg(test)]
#[path = "compaction_iter_tests.rs"]
mod tests;
