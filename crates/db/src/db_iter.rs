//! LevelDB's visibility rules over the merge of a database's sources (`db/db_iter`): for
//! each user key, the newest version at or below the snapshot's sequence number decides; a
//! deletion hides the key and every older version of it.
//!
//! Each step takes all versions of one user key at once, so the front and the back of a
//! double-ended iteration never split a key between them.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use leveltable_table::comparator::compare_bytes;
use leveltable_table::{BytewiseComparator, Comparator};

use crate::dbformat::{ParsedInternalKey, TAG_LEN, ValueType};
use crate::merger::{Merger, Visited};
use crate::version::Origin;
use crate::{Error, Result};

/// A key that is not an internal key, in a table or (never) in a memtable.
fn bad_key(merger: &Merger, key: &[u8], source: usize, e: impl fmt::Display) -> Error {
    let what = format!("internal key ({e})");
    match merger.version().origin(source, key) {
        Origin::Table { number, .. } => {
            Error::corruption(crate::filename::table_file_name(number), what, 0)
        }
        Origin::Log { number } => {
            Error::corruption(crate::filename::log_file_name(number), what, 0)
        }
    }
}

#[inline(always)]
fn user_key(key: &[u8]) -> &[u8] {
    &key[..key.len().saturating_sub(TAG_LEN)]
}

/// The live keys and values of a database at a snapshot, in key order, double-ended.
/// Made by [`Db::iter`](crate::Db::iter), [`Db::range`](crate::Db::range) and their `_at`
/// forms.
///
/// As an [`Iterator`] it yields owned keys and values. [`next_entry`](Self::next_entry) and
/// [`next_back_entry`](Self::next_back_entry) lend them instead, allocating nothing per
/// entry; [`next_entries`](Self::next_entries) lends many to a closure, skipping the
/// merge's step for each entry of a stretch one source leads: the fastest way through a
/// database.
///
/// An error (a table that cannot be read, or deleted since the open) is yielded once as
/// `Some(Err(..))`; the iteration then ends.
///
/// The blocks it reads go into the block cache until it has read a quarter of the cache's
/// capacity; a longer scan reads on without filling the cache, leaving it to the lookups.
pub struct DbIter {
    merger: Merger,
    sequence: u64,
    user: Arc<dyn Comparator>,
    /// Whether `user` is the bytewise order, whose equality is byte equality.
    bytewise: bool,
    done: bool,
    /// The user key being resolved, its buffer reused from key to key.
    current: Vec<u8>,
    /// The value of the version that decides `current`, its buffer reused likewise.
    value: Vec<u8>,
    /// The key found last is the merge's held entry (its only version), lent from there
    /// instead of `current` and `value`.
    lent: bool,
}

impl fmt::Debug for DbIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbIter")
            .field("sequence", &self.sequence)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl DbIter {
    pub(crate) fn new(merger: Merger, sequence: u64, user: Arc<dyn Comparator>) -> Self {
        DbIter {
            merger,
            sequence,
            bytewise: user.name() == BytewiseComparator.name(),
            user,
            done: false,
            current: Vec::new(),
            value: Vec::new(),
            lent: false,
        }
    }

    /// Whether the blocks this iterator reads from tables go into the block cache (as
    /// LevelDB's `ReadOptions::fill_cache`). By default they do until it has read a
    /// quarter of the cache's capacity; with `false` (a bulk scan) none do, and a scan
    /// reads straight from the blocks from its first entry, leaving the cache to lookups.
    /// Blocks already in the cache are read from it either way.
    pub fn fill_cache(mut self, fill: bool) -> Self {
        if !fill {
            self.merger.no_fill_cache();
        }
        self
    }

    #[inline(always)]
    fn same_user_key(&self, a: &[u8], b: &[u8]) -> bool {
        if self.bytewise {
            compare_bytes(a, b) == Ordering::Equal
        } else {
            self.user.compare(a, b) == Ordering::Equal
        }
    }

    /// Resolves the next user key from the front that has a live value. A key of one
    /// version, the usual case, is decided without copying it: the merge still holds the
    /// entry once it has made the next one ready, and `lent` says to read it there.
    fn step_front(&mut self) -> Result<bool> {
        loop {
            let Some((key, _, source)) = self.merger.next_front()? else {
                return Ok(false);
            };
            let (visible, value_type) = match ParsedInternalKey::parse(key) {
                Ok(p) => (p.sequence <= self.sequence, p.value_type),
                Err(e) => {
                    let key = key.to_vec();
                    return Err(bad_key(&self.merger, &key, source, e));
                }
            };
            self.merger.ready_front()?;
            let (key, value) = self.merger.held();
            let more = self
                .merger
                .front_key()
                .is_some_and(|next| self.same_user_key(user_key(key), user_key(next)));
            if !more {
                if visible && value_type == ValueType::Value {
                    self.lent = true;
                    return Ok(true);
                }
                // A deletion, or no version at or below the snapshot.
                continue;
            }
            // Older versions follow: copy this one out and take them all.
            self.current.clear();
            self.current.extend_from_slice(user_key(key));
            let mut chosen = None;
            if visible {
                chosen = Some(value_type);
                self.value.clear();
                self.value.extend_from_slice(value);
            }
            self.take_versions(true, &mut chosen)?;
            if chosen == Some(ValueType::Value) {
                self.lent = false;
                return Ok(true);
            }
        }
    }

    /// Takes the next version from the front (or back) and, if it decides its key so far,
    /// makes it the chosen one, its value copied into `self.value`; `first` starts a new
    /// user key. `Ok(None)` when the merge is exhausted.
    fn take(
        &mut self,
        forward: bool,
        chosen: &mut Option<ValueType>,
        first: bool,
    ) -> Result<Option<()>> {
        let taken = if forward {
            self.merger.next_front()?
        } else {
            self.merger.next_back()?
        };
        let Some((key, value, source)) = taken else {
            return Ok(None);
        };
        if first {
            self.current.clear();
            self.current.extend_from_slice(user_key(key));
        }
        // From the front, versions come newest first: the first one at or below the
        // snapshot decides. From the back they come oldest first: the last one does.
        if forward && chosen.is_some() {
            return Ok(Some(()));
        }
        match ParsedInternalKey::parse(key) {
            Ok(p) if p.sequence <= self.sequence => {
                *chosen = Some(p.value_type);
                // The key shown is the deciding version's own, as LevelDB's: under a
                // comparator that holds different bytes equal (idb_cmp1's 0 and -0), the
                // versions of one user key may differ in their bytes.
                if !first && !self.bytewise {
                    self.current.clear();
                    self.current.extend_from_slice(p.user_key);
                }
                self.value.clear();
                self.value.extend_from_slice(value);
            }
            Ok(_) => {}
            Err(e) => {
                let key = key.to_vec();
                return Err(bad_key(&self.merger, &key, source, e));
            }
        }
        Ok(Some(()))
    }

    /// Resolves the next user key from the back that has a live value, into `current` and
    /// `value`. `false` when there is none.
    fn step_back(&mut self) -> Result<bool> {
        loop {
            let mut chosen = None;
            if self.take(false, &mut chosen, true)?.is_none() {
                return Ok(false);
            }
            self.take_versions(false, &mut chosen)?;
            if chosen == Some(ValueType::Value) {
                self.lent = false;
                return Ok(true);
            }
        }
    }

    /// Takes every other version of the key `current` from the front (or back).
    fn take_versions(&mut self, forward: bool, chosen: &mut Option<ValueType>) -> Result<()> {
        loop {
            let next = if forward {
                self.merger.peek_front()?
            } else {
                self.merger.peek_back()?
            };
            let same = match next {
                Some(k) if self.bytewise => {
                    compare_bytes(&self.current, user_key(k)) == Ordering::Equal
                }
                Some(k) => self.user.compare(&self.current, user_key(k)) == Ordering::Equal,
                None => false,
            };
            if !same || self.take(forward, chosen, false)?.is_none() {
                return Ok(());
            }
        }
    }

    fn advance(&mut self, forward: bool) -> Option<Result<(&[u8], &[u8])>> {
        if self.done {
            return None;
        }
        let step = if forward {
            self.step_front()
        } else {
            self.step_back()
        };
        match step {
            Ok(true) if self.lent => {
                let (key, value) = self.merger.held();
                Some(Ok((user_key(key), value)))
            }
            Ok(true) => Some(Ok((&self.current, &self.value))),
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    /// The next live key and value from the front, lent until the next call.
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        self.advance(true)
    }

    /// Hands the next live keys and values from the front to `sink`, in order, each lent
    /// for the call, until `sink` returns `false` (then `Ok(true)`: more may follow) or
    /// the range ends (`Ok(false)`). The entries are those
    /// [`next_entry`](Self::next_entry) lends, and the two may be mixed; this is faster
    /// where one source leads for a stretch of keys (a level, or a table written in key
    /// order), as each entry of that stretch is read from its batch without a step of the
    /// merge.
    ///
    /// # Errors
    /// As `next_entry`: an error is returned once, and the iteration then ends.
    pub fn next_entries(&mut self, mut sink: impl FnMut(&[u8], &[u8]) -> bool) -> Result<bool> {
        loop {
            if self.done {
                return Ok(false);
            }
            match self.merger.front_run() {
                Ok(Some((i, end))) => {
                    let (to, stopped) = self.run(i, end, &mut sink);
                    if !stopped && self.merger.can_direct(i, to, end) {
                        // A long run of a table source: read on straight from its blocks.
                        if self.direct(i, to, &mut sink)? {
                            return Ok(true);
                        }
                        continue;
                    }
                    self.merger.skip_front(i, to);
                    if stopped {
                        return Ok(true);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
            // The run's last entry, whose key may have older versions in other sources,
            // and anything a run leaves (a key of several versions, a bad key), one step.
            match self.advance(true) {
                None => return Ok(false),
                Some(Err(e)) => return Err(e),
                Some(Ok((key, value))) => {
                    if !sink(key, value) {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Hands the live entries of a run (entries `head..end` of cursor `i`'s front batch,
    /// which come before every other source's) to `sink`, up to the first of them that
    /// needs a step of the merge. Returns the index of that entry and whether `sink`
    /// stopped.
    ///
    /// Entry `j` is decided alone when entry `j + 1`, also in the run, has another user
    /// key: the run comes before every other source, so no other version of `j`'s key is
    /// left anywhere, and (by induction from the head, the newest version of its key)
    /// `j` is its key's newest. A key of several versions, a key too short for its tag and
    /// the run's last entry are left to [`advance`](Self::advance).
    fn run(
        &self,
        i: usize,
        end: usize,
        sink: &mut impl FnMut(&[u8], &[u8]) -> bool,
    ) -> (usize, bool) {
        let batch = self.merger.front_batch(i);
        let mut j = batch.head;
        while j + 1 < end {
            let (key, value) = batch.entry(j);
            let Some((user, tag)) = key.split_last_chunk::<TAG_LEN>() else {
                break;
            };
            let next = user_key(batch.key(j + 1));
            if self.same_user_key(user, next) {
                break;
            }
            let tag = u64::from_le_bytes(*tag);
            let live = match tag & 0xff {
                t if t == ValueType::Value as u64 => tag >> 8 <= self.sequence,
                t if t == ValueType::Deletion as u64 => false,
                _ => break,
            };
            j += 1;
            if live && !sink(user, value) {
                return (j, true);
            }
        }
        (j, false)
    }

    /// Hands `sink` the live entries the merge reads straight from source `i`'s tables, from
    /// entry `to` of its front batch on ([`Merger::front_direct`]); whether `sink` stopped.
    /// The first version of a user key at or below the snapshot decides it, as in
    /// [`step_front`](Self::step_front); older versions of the key decided last, in this
    /// source or another, are taken before returning.
    fn direct(
        &mut self,
        i: usize,
        to: usize,
        sink: &mut impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        let sequence = self.sequence;
        let (mut decided, mut stopped) = (false, false);
        let last = self.merger.front_direct(i, to, &mut |e: Visited<'_>| {
            if e.same_user && decided {
                return true;
            }
            decided = e.sequence <= sequence;
            if decided && e.is_value && !sink(e.user, e.value) {
                stopped = true;
                return false;
            }
            true
        });
        let r = last.map(|last| {
            self.current.clear();
            self.current.extend_from_slice(last);
        });
        let r = r.and_then(|()| {
            if decided {
                self.take_versions(true, &mut Some(ValueType::Value))
            } else {
                Ok(())
            }
        });
        if let Err(e) = r {
            self.done = true;
            return Err(e);
        }
        Ok(stopped)
    }

    /// The next live key and value from the back, lent until the next call.
    pub fn next_back_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        self.advance(false)
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_entry()
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }
}

impl std::iter::FusedIterator for DbIter {}

/// What a stored version is to a reader at the latest sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionStatus {
    /// The newest version of its key, a value: what a read returns.
    Live,
    /// The newest version of its key, a deletion.
    Deleted,
    /// An older version, hidden by a newer one.
    Shadowed,
}

/// One stored version of a key: an entry of a table or a write in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    /// The user key.
    pub user_key: Vec<u8>,
    /// Its sequence number.
    pub sequence: u64,
    /// Put or delete.
    pub value_type: ValueType,
    /// The value (empty for deletions).
    pub value: Vec<u8>,
    /// The file it came from.
    pub origin: Origin,
    /// Live, deleted or shadowed.
    pub status: VersionStatus,
}

/// Every stored version of every key in internal-key order (user key ascending, newest
/// first), each labelled. Made by [`Db::versions`](crate::Db::versions).
pub struct Versions {
    merger: Merger,
    user: Arc<dyn Comparator>,
    previous: Option<Vec<u8>>,
    done: bool,
}

impl fmt::Debug for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Versions")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Versions {
    pub(crate) fn new(merger: Merger, user: Arc<dyn Comparator>) -> Self {
        Versions {
            merger,
            user,
            previous: None,
            done: false,
        }
    }

    fn step(&mut self) -> Result<Option<StoredVersion>> {
        let Some((key, value, source)) = self.merger.next_front()? else {
            return Ok(None);
        };
        let (key, value) = (key.to_vec(), value.to_vec());
        let p =
            ParsedInternalKey::parse(&key).map_err(|e| bad_key(&self.merger, &key, source, e))?;
        let origin = self.merger.version().origin(source, &key);
        let newest = self
            .previous
            .as_deref()
            .is_none_or(|prev| self.user.compare(prev, p.user_key) != Ordering::Equal);
        let status = match (newest, p.value_type) {
            (false, _) => VersionStatus::Shadowed,
            (true, ValueType::Value) => VersionStatus::Live,
            (true, ValueType::Deletion) => VersionStatus::Deleted,
        };
        let version = StoredVersion {
            user_key: p.user_key.to_vec(),
            sequence: p.sequence,
            value_type: p.value_type,
            value,
            origin,
            status,
        };
        self.previous = Some(version.user_key.clone());
        Ok(Some(version))
    }
}

impl Iterator for Versions {
    type Item = Result<StoredVersion>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        self.done = !matches!(r, Some(Ok(_)));
        r
    }
}
