//! LevelDB's visibility rules over the merge of a database's sources (`db/db_iter`): for
//! each user key, the newest version at or below the snapshot's sequence number decides; a
//! deletion hides the key and every older version of it.
//!
//! Each step takes all versions of one user key at once, so the front and the back of a
//! double-ended iteration never split a key between them.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::{ParsedInternalKey, TAG_LEN, ValueType};
use crate::merger::{Entry, Merger, Origin};
use crate::{Error, Result};

/// A key that is not an internal key, in a table or (never) in a memtable.
fn bad_key(merger: &Merger, key: &[u8], source: usize, e: impl fmt::Display) -> Error {
    let what = format!("internal key ({e})");
    match merger.store().origin(source, key) {
        Origin::Table { number, .. } => {
            Error::corruption(crate::filename::table_file_name(number), what, 0)
        }
        Origin::Log { number } => {
            Error::corruption(crate::filename::log_file_name(number), what, 0)
        }
    }
}

fn user_key(key: &[u8]) -> &[u8] {
    &key[..key.len().saturating_sub(TAG_LEN)]
}

/// The live keys and values of a database at a snapshot, in key order, double-ended.
/// Made by [`Db::iter`](crate::Db::iter), [`Db::range`](crate::Db::range) and their `_at`
/// forms.
///
/// An error (a table that cannot be read, or deleted since the open) is yielded once as
/// `Some(Err(..))`; the iteration then ends.
pub struct DbIter {
    merger: Merger,
    sequence: u64,
    user: Arc<dyn Comparator>,
    done: bool,
    /// The user key being resolved, its buffer reused from key to key.
    current: Vec<u8>,
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
            user,
            done: false,
            current: Vec::new(),
        }
    }

    /// Parses a version taken from the merge; remembers it if it is visible.
    fn consider(
        &self,
        entry: Entry,
        source: usize,
        chosen: &mut Option<(Entry, ValueType)>,
    ) -> Result<()> {
        let p = ParsedInternalKey::parse(&entry.0)
            .map_err(|e| bad_key(&self.merger, &entry.0, source, e))?;
        if p.sequence <= self.sequence {
            let t = p.value_type;
            *chosen = Some((entry, t));
        }
        Ok(())
    }

    fn step_front(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let Some((first, source)) = self.merger.next_front()? else {
                return Ok(None);
            };
            // From the front, versions come newest first: the first one at or below the
            // snapshot decides. Every other version of the key is taken now.
            self.current.clear();
            self.current.extend_from_slice(user_key(&first.0));
            let mut chosen = None;
            self.consider(first, source, &mut chosen)?;
            while let Some(next) = self.merger.peek_front()? {
                if self.user.compare(&self.current, user_key(next)) != Ordering::Equal {
                    break;
                }
                let Some((entry, source)) = self.merger.next_front()? else {
                    break;
                };
                if chosen.is_none() {
                    self.consider(entry, source, &mut chosen)?;
                }
            }
            if let Some(((mut k, v), ValueType::Value)) = chosen {
                k.truncate(k.len() - TAG_LEN);
                return Ok(Some((k, v)));
            }
        }
    }

    fn step_back(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let Some((first, source)) = self.merger.next_back()? else {
                return Ok(None);
            };
            // From the back, versions come oldest first: the last one at or below the
            // snapshot decides.
            self.current.clear();
            self.current.extend_from_slice(user_key(&first.0));
            let mut chosen = None;
            self.consider(first, source, &mut chosen)?;
            while let Some(next) = self.merger.peek_back()? {
                if self.user.compare(&self.current, user_key(next)) != Ordering::Equal {
                    break;
                }
                let Some((entry, source)) = self.merger.next_back()? else {
                    break;
                };
                self.consider(entry, source, &mut chosen)?;
            }
            if let Some(((mut k, v), ValueType::Value)) = chosen {
                k.truncate(k.len() - TAG_LEN);
                return Ok(Some((k, v)));
            }
        }
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step_front().transpose();
        self.done = !matches!(r, Some(Ok(_)));
        r
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step_back().transpose();
        self.done = !matches!(r, Some(Ok(_)));
        r
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
        let Some(((key, value), source)) = self.merger.next_front()? else {
            return Ok(None);
        };
        let p =
            ParsedInternalKey::parse(&key).map_err(|e| bad_key(&self.merger, &key, source, e))?;
        let origin = self.merger.store().origin(source, &key);
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
