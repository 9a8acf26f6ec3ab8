//! How far a repair that reads each table once, in the merge, has got: the bytes of the
//! logs (read before the merge), of the tables copied as they are (verified before it) and
//! of the tables whose keys the merge has passed.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use leveltable_table::Comparator;

use crate::db::Db;
use crate::dbformat::extract_user_key;

/// The tables of a salvage, by largest key, counted done as the merge passes each.
pub(super) struct MergeProgress {
    /// Each table's largest user key, size and number, largest key last (popped as
    /// passed).
    ahead: Vec<(Vec<u8>, u64, u64)>,
    done: u64,
    total: u64,
}

impl MergeProgress {
    /// The progress of a merge of `db`'s sources, its logs read.
    pub(super) fn new(db: &Db) -> MergeProgress {
        let logs: u64 = db.properties.logs.iter().map(|l| l.size).sum();
        let mut ahead: Vec<(Vec<u8>, u64, u64)> = db
            .properties
            .levels
            .iter()
            .flatten()
            .map(|t| {
                let key = extract_user_key(&t.largest).unwrap_or(&t.largest);
                (key.to_vec(), t.size, t.number)
            })
            .collect();
        // Largest key last.
        ahead.sort_by(|a, b| db.user.compare(&b.0, &a.0));
        let tables: u64 = ahead.iter().map(|t| t.1).sum();
        MergeProgress {
            ahead,
            done: logs,
            total: logs.saturating_add(tables),
        }
    }

    /// Counts `size` more bytes read (a table copied).
    pub(super) fn add(&mut self, size: u64) {
        self.done = self.done.saturating_add(size).min(self.total);
    }

    /// The tables `numbers` are not merged (they were copied and counted).
    pub(super) fn skip(&mut self, numbers: &BTreeSet<u64>) {
        self.ahead.retain(|t| !numbers.contains(&t.2));
    }

    /// Bytes read and bytes in all, so far.
    pub(super) fn now(&self) -> (u64, u64) {
        (self.done, self.total)
    }

    /// The merge has reached `key`: the tables whose keys all sort before it are read.
    /// Returns whether that counted a table done.
    pub(super) fn reached(&mut self, key: &[u8], user: &dyn Comparator) -> bool {
        let mut moved = false;
        while let Some((largest, size, _)) = self.ahead.last() {
            if user.compare(largest, key) != Ordering::Less {
                break;
            }
            self.done = self.done.saturating_add(*size);
            self.ahead.pop();
            moved = true;
        }
        moved
    }

    /// Every table is read.
    pub(super) fn finish(&mut self) {
        self.ahead.clear();
        self.done = self.total;
    }
}
