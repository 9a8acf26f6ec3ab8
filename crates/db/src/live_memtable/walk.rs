//! Searches and walks of a memtable's skiplist: what readers do beside the writer.

use std::cmp::Ordering;
use std::ops::Bound;

use super::node::HEAD;
use super::{LiveMemTable, MAX_HEIGHT, Probe, Splice};
use crate::Result;

/// Searches [`LiveMemTable::find_all_before`] runs at once: enough misses in flight to
/// cover a fetch from memory with the steps of the others.
const SEARCH_LANES: usize = 8;

/// A node about to be read is fetched at its first word and at this one, 32 bytes on (on
/// the next cache line when the node starts in the second half of one): between them, the
/// links of its lower levels and, for a short key in a node of at most 5 levels (nearly
/// all), the key.
const NODE_PREFETCH_WORDS: usize = 8;

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
        // `x`'s words, kept from its comparison: each step finds one node in the arena.
        let mut x_node = self.node(HEAD);
        let mut level = self.top_level();
        // The node that ended the search on the level above: met again on the next level
        // down (on nearly half of them), it ends that level too, and is not compared again.
        let mut stopped = HEAD;
        loop {
            let next = x_node.next(level);
            if next != HEAD && next != stopped {
                let next_node = self.node(next);
                let c = self.compare_node(next_node, probe, &mut scratch);
                if c == Ordering::Less || (inclusive && c == Ordering::Equal) {
                    x = next;
                    x_node = next_node;
                    continue;
                }
                stopped = next;
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
    /// The search goes down from the level that brackets `probe`
    /// ([`bracketing_level`](Self::bracketing_level)), each level starting from its splice
    /// node until the search has moved past it (then it is ahead of every lower splice
    /// node).
    pub(super) fn find_from_splice(
        &self,
        probe: &Probe<'_>,
        splice: &Splice,
        prev: &mut [u32; MAX_HEIGHT],
    ) -> Option<u32> {
        let mut scratch = Vec::new();
        let mut level = self.bracketing_level(&splice.prev, probe)?;
        prev[level..].copy_from_slice(&splice.prev[level..]);
        let mut x = splice.prev[level];
        let mut x_node = self.node(x);
        let mut moved = false;
        // As in `find_before`: the node that ended the level above is not compared again.
        let mut stopped = HEAD;
        loop {
            if !moved {
                x = splice.prev[level];
                x_node = self.node(x);
            }
            let next = x_node.next(level);
            if next != HEAD && next != stopped {
                let next_node = self.node(next);
                if self.compare_node(next_node, probe, &mut scratch) == Ordering::Less {
                    x = next;
                    x_node = next_node;
                    moved = true;
                    continue;
                }
                stopped = next;
            }
            prev[level] = x;
            if level == 0 {
                return Some(next);
            }
            level -= 1;
        }
    }

    /// The level a search for `probe` starts on from `from`, the last nodes before some
    /// key on every level, or `None` if `from`'s node on level 0 does not lie before
    /// `probe`: from level 0 up, the first level whose node in `from` is followed by a node
    /// not before `probe` brackets it, and so does every level above (a level's nodes are
    /// on every level below, so the first one past `from` on a higher level is no nearer).
    /// On that level and every one above, `from`'s node is the last one before `probe`.
    fn bracketing_level(&self, from: &[u32; MAX_HEIGHT], probe: &Probe<'_>) -> Option<usize> {
        let mut scratch = Vec::new();
        let mut before =
            |at: u32| at != HEAD && self.compare(at, probe, &mut scratch) == Ordering::Less;
        if !before(from[0]) {
            return None;
        }
        let top = self.top_level();
        let mut level = 0;
        while level < top && before(self.node(from[level]).next(level)) {
            level += 1;
        }
        Some(level)
    }

    /// For each of `probes`, into `out`: the last node before it on every level, as
    /// [`find_before`](Self::find_before) (not inclusive) gives them in `prev` (`HEAD` above
    /// the top level). Sorted probes (by internal key, ascending) are found fastest.
    ///
    /// The probes are shared out in runs among [`SEARCH_LANES`] lanes, each searching for
    /// its probes in turn, each search from where its last one ended if that lies before
    /// the probe (as [`find_from_splice`](Self::find_from_splice) searches: every node it
    /// ended on lies before the probe then), else from the top. The lanes take a step each
    /// in turn: a step fetches the next node of its search, and compares it with its probe
    /// at that lane's next turn, so that the other lanes' steps run while it arrives from
    /// memory.
    pub(super) fn find_all_before(&self, probes: &[Probe<'_>], out: &mut Vec<[u32; MAX_HEIGHT]>) {
        /// One lane's search: its probe (its run ends before `end`), the last node before
        /// it found so far on `level` and that node's next there (fetched), and where the
        /// lane's search before it ended, followed until it moves past it.
        struct Lane {
            probe: usize,
            end: usize,
            at: u32,
            level: usize,
            next: u32,
            from: Option<[u32; MAX_HEIGHT]>,
        }
        out.clear();
        out.resize(probes.len(), [HEAD; MAX_HEIGHT]);
        let top = self.top_level();
        // (A user's comparator needs a copy of each key: `Vec::new` allocates nothing
        // until one does.)
        let before = |at: u32, probe: &Probe<'_>| {
            at != HEAD && self.compare(at, probe, &mut Vec::new()) == Ordering::Less
        };
        // Starts the lane's search for its probe: from the top, or from where its search
        // before ended, on the level that brackets the probe (the nodes compared on the way
        // up are those that ended that search, in cache).
        let start = |lane: &mut Lane, out: &mut [[u32; MAX_HEIGHT]]| {
            let probe = &probes[lane.probe];
            (lane.at, lane.level) = (HEAD, top);
            let from = lane.from.take();
            if let Some((from, level)) =
                from.and_then(|from| Some((from, self.bracketing_level(&from, probe)?)))
            {
                out[lane.probe][level..].copy_from_slice(&from[level..]);
                (lane.at, lane.level, lane.from) = (from[level], level, Some(from));
            }
            lane.next = self.node(lane.at).next(lane.level);
            self.prefetch_node(lane.next);
        };
        let runs = probes.len().div_ceil(SEARCH_LANES).max(1);
        let mut lanes: Vec<Lane> = (0..probes.len())
            .step_by(runs)
            .map(|first| {
                let mut lane = Lane {
                    probe: first,
                    end: (first + runs).min(probes.len()),
                    at: HEAD,
                    level: top,
                    next: HEAD,
                    from: None,
                };
                start(&mut lane, out);
                lane
            })
            .collect();
        while !lanes.is_empty() {
            let mut i = 0;
            while let Some(lane) = lanes.get_mut(i) {
                if before(lane.next, &probes[lane.probe]) {
                    lane.at = lane.next;
                    lane.from = None;
                } else {
                    out[lane.probe][lane.level] = lane.at;
                    if lane.level == 0 {
                        lane.from = Some(out[lane.probe]);
                        lane.probe += 1;
                        if lane.probe < lane.end {
                            start(lane, out);
                            i += 1;
                        } else {
                            lanes.swap_remove(i);
                        }
                        continue;
                    }
                    lane.level -= 1;
                    if let Some(from) = &lane.from {
                        // Not moved past where the search before ended: on with it there.
                        lane.at = from[lane.level];
                    }
                }
                lane.next = self.node(lane.at).next(lane.level);
                self.prefetch_node(lane.next);
                i += 1;
            }
        }
    }

    /// Hints that the node at `at` is to be read: its first words and those of its key.
    fn prefetch_node(&self, at: u32) {
        if at == HEAD {
            return;
        }
        let words = self.arena.words(at);
        for w in [words.first(), words.get(NODE_PREFETCH_WORDS)]
            .into_iter()
            .flatten()
        {
            leveltable_prefetch::start_of(w);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use leveltable_table::{BytewiseComparator, Comparator};

    use super::*;
    use crate::dbformat::{ValueType, pack_tag};

    /// The searches run together find, for every probe, what one search at a time finds:
    /// probes of versions held, between them, before the first and after the last, more
    /// probes than lanes, over a memtable whose tall nodes make many levels.
    #[test]
    fn searches_run_together_find_what_one_search_finds() {
        let m = LiveMemTable::new(&(Arc::new(BytewiseComparator) as Arc<dyn Comparator>));
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Odd numbers are held (at some sequences); even ones lie between them.
        let mut held = Vec::new();
        for sequence in 1..=5_000 {
            let key = format!("{:06}", next() % 20_000 * 2 + 1).into_bytes();
            m.add(sequence, ValueType::Value, &key, b"v").unwrap();
            held.push((key, pack_tag(sequence, ValueType::Value).unwrap()));
        }
        let mut keys: Vec<(Vec<u8>, u64)> = held.iter().step_by(25).cloned().collect();
        for _ in 0..400 {
            let r = next();
            keys.push((format!("{:06}", r % 40_002).into_bytes(), r >> 40));
        }
        keys.push((Vec::new(), 0));
        keys.push((b"999999".to_vec(), u64::MAX));
        let probes: Vec<Probe<'_>> = keys
            .iter()
            .map(|(user, tag)| Probe { user, tag: *tag })
            .collect();
        let mut sorted = probes.clone();
        sorted.sort_by(|a, b| a.user.cmp(b.user).then(b.tag.cmp(&a.tag)));
        let mut together = Vec::new();
        for probes in [probes, sorted] {
            m.find_all_before(&probes, &mut together);
            assert_eq!(together.len(), probes.len());
            for (probe, found) in probes.iter().zip(&together) {
                let mut prev = [HEAD; MAX_HEIGHT];
                m.find_before(probe, false, Some(&mut prev));
                assert_eq!(found, &prev, "{:?}@{}", probe.user, probe.tag);
            }
        }
        m.find_all_before(&[], &mut together);
        assert!(together.is_empty());
    }
}
