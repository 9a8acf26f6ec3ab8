//! Searches and walks of a memtable's skiplist: what readers do beside the writer.

use std::cmp::Ordering;
use std::ops::Bound;

use super::node::HEAD;
use super::{LiveMemTable, MAX_HEIGHT, Probe, Splice};
use crate::Result;

impl LiveMemTable {
    /// The last node before `probe` (or at it, if `inclusive`) on each level from the top,
    /// into `prev`; returns the last one of level 0 (`HEAD`: none) and the node after it
    /// that the search saw (`HEAD`: none). That one, not a second read of the link, is the
    /// first node past `probe`: a node inserted meanwhile may lie between.
    pub(super) fn find_before(
        &self,
        probe: &Probe<'_>,
        inclusive: bool,
        mut prev: Option<&mut [u32; MAX_HEIGHT]>,
    ) -> (u32, u32) {
        let mut scratch = Vec::new();
        let mut x = HEAD;
        let mut level = self.top_level();
        loop {
            let next = self.node(x).next(level);
            let before = next != HEAD && {
                let c = self.compare(next, probe, &mut scratch);
                c == Ordering::Less || (inclusive && c == Ordering::Equal)
            };
            if before {
                x = next;
                continue;
            }
            if let Some(prev) = prev.as_deref_mut() {
                prev[level] = x;
            }
            if level == 0 {
                return (x, next);
            }
            level -= 1;
        }
    }

    /// [`find_before`](Self::find_before) (not inclusive, into `prev`) starting from
    /// `splice`, where a version sorting before `probe` was just inserted; returns the node
    /// after `probe` on level 0, or `None` (and `prev` untouched) if `probe` does not sort
    /// after that version.
    ///
    /// From level 0 up, the first level whose splice node is followed by a node not before
    /// `probe` brackets it, and so does every level above (a level's nodes are on every
    /// level below, so the first one past the splice on a higher level is no nearer). The
    /// search goes down from there, each level starting from its splice node until the
    /// search has moved past it (then it is ahead of every lower splice node).
    pub(super) fn find_from_splice(
        &self,
        probe: &Probe<'_>,
        splice: &Splice,
        prev: &mut [u32; MAX_HEIGHT],
    ) -> Option<u32> {
        let mut scratch = Vec::new();
        let last = splice.prev[0];
        if last == HEAD || self.compare(last, probe, &mut scratch) != Ordering::Less {
            return None;
        }
        let before = |at: u32, scratch: &mut Vec<u8>| {
            at != HEAD && self.compare(at, probe, scratch) == Ordering::Less
        };
        let top = self.top_level();
        let mut level = 0;
        while level < top && before(self.node(splice.prev[level]).next(level), &mut scratch) {
            level += 1;
        }
        prev[level..].copy_from_slice(&splice.prev[level..]);
        let mut x = splice.prev[level];
        let mut moved = false;
        loop {
            if !moved {
                x = splice.prev[level];
            }
            let next = self.node(x).next(level);
            if before(next, &mut scratch) {
                x = next;
                moved = true;
                continue;
            }
            prev[level] = x;
            if level == 0 {
                return Some(next);
            }
            level -= 1;
        }
    }

    /// The first node at or after `probe` (`HEAD`: none).
    pub(super) fn find_at_or_after(&self, probe: &Probe<'_>) -> u32 {
        self.find_before(probe, false, None).1
    }

    /// The last node (`HEAD`: none).
    fn find_last(&self) -> u32 {
        let mut x = HEAD;
        let mut level = self.top_level();
        loop {
            let next = self.node(x).next(level);
            if next != HEAD {
                x = next;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Calls `push` with the entries within internal-key bounds, in order (or in reverse),
    /// until it returns `false`.
    pub(crate) fn visit_range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        push: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) {
        let mut scratch = Vec::new();
        // Whether the node at `at` is past the bound the walk runs towards.
        let mut beyond = |at: u32, bound: Bound<&[u8]>, forward: bool| -> bool {
            let (key, inclusive) = match bound {
                Bound::Unbounded => return false,
                Bound::Included(k) => (k, true),
                Bound::Excluded(k) => (k, false),
            };
            let c = self.compare(at, &Probe::of(key), &mut scratch);
            let c = if forward { c } else { c.reverse() };
            c == Ordering::Greater || (c == Ordering::Equal && !inclusive)
        };
        let (mut key, mut value) = (Vec::new(), Vec::new());
        if forward {
            let mut at = match lo {
                Bound::Unbounded => self.node(HEAD).next(0),
                Bound::Included(k) => self.find_at_or_after(&Probe::of(k)),
                Bound::Excluded(k) => self.find_before(&Probe::of(k), true, None).1,
            };
            while at != HEAD && !beyond(at, hi, true) {
                key.clear();
                value.clear();
                let node = self.node(at);
                self.read_entry(node, &mut key, &mut value);
                if !push(&key, &value) {
                    return;
                }
                at = node.next(0);
            }
        } else {
            let mut at = match hi {
                Bound::Unbounded => self.find_last(),
                Bound::Included(k) => self.find_before(&Probe::of(k), true, None).0,
                Bound::Excluded(k) => self.find_before(&Probe::of(k), false, None).0,
            };
            while at != HEAD && !beyond(at, lo, false) {
                key.clear();
                value.clear();
                self.read_entry(self.node(at), &mut key, &mut value);
                if !push(&key, &value) {
                    return;
                }
                at = self.find_before(&Probe::of(&key), false, None).0;
            }
        }
    }

    /// Calls `f` with every entry in internal-key order (a flush).
    ///
    /// # Errors
    /// The first error `f` returns.
    pub(crate) fn try_for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let mut at = self.node(HEAD).next(0);
        while at != HEAD {
            key.clear();
            value.clear();
            let node = self.node(at);
            self.read_entry(node, &mut key, &mut value);
            f(&key, &value)?;
            at = node.next(0);
        }
        Ok(())
    }

    /// The entry with the smallest internal key: internal key and value.
    pub(crate) fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.entry_of(self.node(HEAD).next(0))
    }

    /// The entry with the largest internal key: internal key and value.
    pub(crate) fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.entry_of(self.find_last())
    }

    /// The internal key and value of the node at `at` (`HEAD`: none).
    fn entry_of(&self, at: u32) -> Option<(Vec<u8>, Vec<u8>)> {
        (at != HEAD).then(|| {
            let (mut key, mut value) = (Vec::new(), Vec::new());
            self.read_entry(self.node(at), &mut key, &mut value);
            (key, value)
        })
    }

    /// Whether a version of internal key `key` is held.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        let probe = Probe::of(key);
        let at = self.find_at_or_after(&probe);
        at != HEAD && self.compare(at, &probe, &mut Vec::new()) == Ordering::Equal
    }
}
