//! A double-ended merge of the database's sorted sources: the memtables of the logs, each
//! level-0 table, and each deeper level as one run of non-overlapping tables (LevelDB's
//! `table/merger` and the level iterator of `db/version_set`).
//!
//! Cursors own their position instead of borrowing open tables: each reads a batch of
//! entries at a time through the table cache, stored end to end in one buffer, and remembers
//! the last key it read, so an iterator holds no table open between batches and the cache's
//! bound on open tables holds however many iterators are alive. Each source's unread keys
//! are an interval narrowed from both ends; every entry is handed out once, from the front
//! or from the back, lent from its batch.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use leveltable_table::{Comparator, MapAhead};

use crate::batch::{Batch, Fetch};
use crate::version::{Source, Version};
use crate::{Error, Result};

mod direct;

pub(crate) use direct::Visited;

/// An entry taken from the merge: its key, its value and the index of its source.
pub(crate) type Taken<'a> = (&'a [u8], &'a [u8], usize);

/// A merge adds the blocks it reads to the block cache until it has read this fraction of
/// the cache's capacity from tables; past that it is a long scan, which would only evict
/// what the lookups use, and it reads on without filling the cache (into one reused
/// buffer, where a cached block needs an allocation of its own).
const FILL_CACHE_FRACTION: u64 = 4;

/// Sets `bound` to exclude `key`, reusing its buffer.
fn exclude(bound: &mut Bound<Vec<u8>>, key: &[u8]) {
    match bound {
        Bound::Excluded(b) | Bound::Included(b) => {
            b.clear();
            b.extend_from_slice(key);
            let b = std::mem::take(b);
            *bound = Bound::Excluded(b);
        }
        Bound::Unbounded => *bound = Bound::Excluded(key.to_vec()),
    }
}

/// The unread part of one source.
#[derive(Debug)]
struct Cursor {
    /// Per side (front, back): the batch read from that side (from the back: largest
    /// unread entry first).
    batches: [Batch; 2],
    /// Per side: a batch kept aside, holding the entry taken last (see [`Held`]) while
    /// that side reads on, or an empty buffer to reuse.
    spares: [Batch; 2],
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// No entry of the source is left in `(lo, hi)`.
    drained: bool,
    /// The table whose data block the key `lo` excludes ends, when the last forward batch
    /// stopped at a block's end: the next one starts at the block after it.
    resume: Option<u64>,
    /// The table the last forward batch read last, and how far it was mapped in.
    mapped: Option<(u64, MapAhead)>,
    /// Per side: the error that ended that side's last batch, which held entries read
    /// before it: returned when that batch is used up, so every entry before the damage is
    /// handed out first.
    pending: [Option<Error>; 2],
}

/// The merge of all sources within internal-key bounds, double-ended. Yields each entry,
/// lent until the next call, with the index of its source.
///
/// Each direction keeps the cursors that have an entry in order of their next entry. After
/// an entry is taken only its cursor's next entry changes, and it is put back in place with
/// a compare or two (its next key usually still sorts first): a step costs about one key
/// comparison however many sources there are. Taking from one end invalidates the other
/// end's order, rebuilt (sorted) on its next use.
pub(crate) struct Merger {
    version: Arc<Version>,
    cursors: Vec<Cursor>,
    /// Per direction (front, back): the cursors with an entry on that side, next first.
    order: [Vec<usize>; 2],
    /// Per direction: whether `order` is up to date.
    ordered: [bool; 2],
    /// Per direction: the first cursor of `order` lost its entry and must be refilled and
    /// put back in place before `order` is used.
    taken: [bool; 2],
    /// The entry taken last, readable until the next take.
    held: Option<Held>,
    /// Bytes of entries read from tables so far, and how many may be read into the block
    /// cache (see [`FILL_CACHE_FRACTION`]).
    table_bytes: u64,
    fill_budget: u64,
    failed: bool,
}

/// Where the entry taken last is: entry `index` of cursor `cursor`'s batch on side `side`,
/// or of its spare on that side. When that batch is to be read into again, it becomes the
/// spare first, so the entry stays where it is until the next take.
#[derive(Debug, Clone, Copy)]
struct Held {
    cursor: usize,
    side: usize,
    index: usize,
    spare: bool,
}

const FRONT: usize = 0;
const BACK: usize = 1;

impl Merger {
    pub(crate) fn new(version: Arc<Version>, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Self {
        let cursors = (0..version.sources.len())
            .map(|_| Cursor {
                batches: Default::default(),
                spares: Default::default(),
                lo: lo.clone(),
                hi: hi.clone(),
                drained: false,
                resume: None,
                mapped: None,
                pending: [None, None],
            })
            .collect();
        let fill_budget = version.tables.block_cache_capacity() / FILL_CACHE_FRACTION;
        Merger {
            version,
            cursors,
            order: [Vec::new(), Vec::new()],
            ordered: [false; 2],
            taken: [false; 2],
            held: None,
            table_bytes: 0,
            fill_budget,
            failed: false,
        }
    }

    /// Stops the merge from adding the blocks it reads to the block cache: a bulk scan,
    /// which then reads straight from the blocks from its start.
    pub(crate) fn no_fill_cache(&mut self) {
        self.fill_budget = 0;
    }

    pub(crate) fn version(&self) -> &Arc<Version> {
        &self.version
    }

    /// Reads the next batch of cursor `i` on side `side` if that side's batch is used up.
    /// Asked at every step, and usually it is not: only the reading is a call.
    #[inline(always)]
    fn fill(&mut self, i: usize, side: usize) -> Result<()> {
        let c = &self.cursors[i];
        if !c.batches[side].is_empty() || c.drained {
            return Ok(());
        }
        self.read_batch(i, side)
    }

    /// Reads the next batch of cursor `i` on side `side`, whose batch is used up.
    #[inline(never)]
    fn read_batch(&mut self, i: usize, side: usize) -> Result<()> {
        let c = &mut self.cursors[i];
        if let Some(e) = c.pending[side].take() {
            return Err(e);
        }
        if let Some(h) = &mut self.held {
            if h.cursor == i && h.side == side && !h.spare {
                std::mem::swap(&mut c.batches[side], &mut c.spares[side]);
                h.spare = true;
            }
        }
        let batch = &mut c.batches[side];
        batch.clear();
        let (resume, mapped) = if side == FRONT {
            (c.resume.take(), c.mapped.take())
        } else {
            (None, None)
        };
        let how = Fetch {
            forward: side == FRONT,
            resume,
            fill_cache: self.table_bytes < self.fill_budget,
            mapped,
        };
        let fetched = match crate::batch::fetch(&self.version, i, &c.lo, &c.hi, how, batch) {
            Ok(fetched) => fetched,
            Err(e) if batch.is_empty() => return Err(e),
            Err(e) => {
                c.pending[side] = Some(e);
                crate::batch::Fetched {
                    ended: None,
                    mapped: None,
                }
            }
        };
        if side == FRONT {
            c.resume = fetched.ended;
            c.mapped = fetched.mapped;
        }
        if matches!(self.version.sources[i], Source::Files { .. }) {
            self.table_bytes += batch.bytes.len() as u64;
        }
        match batch.last_read_key() {
            None => c.drained = true,
            Some(last) if side == FRONT => exclude(&mut c.lo, last),
            Some(last) => exclude(&mut c.hi, last),
        }
        Ok(())
    }

    /// The key of cursor `i`'s next entry on side `side`.
    #[inline(always)]
    fn key(&self, i: usize, side: usize) -> Option<&[u8]> {
        // As `front_item`/`back_item`, but computing only the key: the merge asks for keys
        // on every step, and a key alone comes back in registers.
        let c = &self.cursors[i];
        let (near, far) = (&c.batches[side], &c.batches[1 - side]);
        if !near.is_empty() {
            Some(near.key(near.head))
        } else if !far.is_empty() {
            Some(far.key(far.tail - 1))
        } else {
            None
        }
    }

    /// Whether cursor `a`'s next entry on side `side` comes before cursor `b`'s. Equal
    /// internal keys (the same version in two sources: reused sequence numbers) are taken
    /// newer source first from the front, so from the back in the reverse order: the
    /// lower source index, the newer, goes first from the front, last from the back, and
    /// both ways the newer source's version decides the key, as a get finds it. Both must
    /// have one.
    #[inline(always)]
    fn before(&self, a: usize, b: usize, side: usize) -> bool {
        let (Some(ka), Some(kb)) = (self.key(a, side), self.key(b, side)) else {
            return false;
        };
        let o = match &self.version.bytewise {
            Some(icmp) => icmp.compare(ka, kb),
            None => self.version.icmp.compare(ka, kb),
        };
        let o = if side == FRONT {
            o.then(a.cmp(&b))
        } else {
            o.reverse().then(b.cmp(&a))
        };
        o == Ordering::Less
    }

    /// Whether key `a` of cursor `ca` comes before key `b` of cursor `cb` from the front
    /// (ties go to the lower source index, as in [`before`](Self::before)).
    #[inline(always)]
    fn key_before(&self, a: &[u8], ca: usize, b: &[u8], cb: usize) -> bool {
        let o = match &self.version.bytewise {
            Some(icmp) => icmp.compare(a, b),
            None => self.version.icmp.compare(a, b),
        };
        o.then(ca.cmp(&cb)) == Ordering::Less
    }

    /// Brings `order[side]` up to date: sorts it afresh, or puts its first cursor, whose
    /// entry was taken, back in place.
    fn reorder(&mut self, side: usize) -> Result<()> {
        if !self.ordered[side] {
            for i in 0..self.cursors.len() {
                self.fill(i, side)?;
            }
            let mut order = std::mem::take(&mut self.order[side]);
            order.clear();
            order.extend((0..self.cursors.len()).filter(|&i| self.key(i, side).is_some()));
            order.sort_by(|&a, &b| {
                if self.before(a, b, side) {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            });
            self.order[side] = order;
            self.ordered[side] = true;
            self.taken[side] = false;
        } else if self.taken[side] {
            self.taken[side] = false;
            let i = self.order[side][0];
            self.fill(i, side)?;
            let order = &self.order[side];
            if self.key(i, side).is_none() {
                self.order[side].remove(0);
            } else if order.len() > 1 && !self.before(i, order[1], side) {
                // It lost its place: move it behind the cursors now before it. Usually
                // it keeps its place, and that costs the one comparison above.
                let at = order[2..]
                    .iter()
                    .position(|&j| self.before(i, j, side))
                    .map_or(order.len(), |p| p + 2);
                self.order[side][..at].rotate_left(1);
            }
        }
        Ok(())
    }

    /// The index of the cursor holding the next entry on side `side`.
    #[inline]
    fn pick(&mut self, side: usize) -> Result<Option<usize>> {
        if self.ordered[side] && !self.failed {
            let first = self.order[side].first().copied();
            if !self.taken[side] {
                return Ok(first);
            }
            // The usual step: the cursor whose entry was taken has its next one in its
            // batch and keeps its place, as `reorder` would find.
            if let Some(i) = first {
                if !self.cursors[i].batches[side].is_empty()
                    && self.order[side]
                        .get(1)
                        .is_none_or(|&j| self.before(i, j, side))
                {
                    self.taken[side] = false;
                    return Ok(Some(i));
                }
            }
        }
        self.pick_slow(side)
    }

    #[inline(never)]
    fn pick_slow(&mut self, side: usize) -> Result<Option<usize>> {
        if self.failed {
            return Ok(None);
        }
        if let Err(e) = self.reorder(side) {
            self.failed = true;
            return Err(e);
        }
        Ok(self.order[side].first().copied())
    }

    /// The key of the next entry from the front, without taking it.
    pub(crate) fn peek_front(&mut self) -> Result<Option<&[u8]>> {
        Ok(self.pick(FRONT)?.and_then(|i| self.key(i, FRONT)))
    }

    /// The key of the next entry from the back, without taking it.
    pub(crate) fn peek_back(&mut self) -> Result<Option<&[u8]>> {
        Ok(self.pick(BACK)?.and_then(|i| self.key(i, BACK)))
    }

    /// Makes the next entry from the front ready for [`front_key`](Self::front_key).
    pub(crate) fn ready_front(&mut self) -> Result<()> {
        self.pick(FRONT).map(drop)
    }

    /// The key of the next entry from the front, as of the last
    /// [`ready_front`](Self::ready_front) or [`peek_front`](Self::peek_front) (`None` also
    /// when a take came after it).
    pub(crate) fn front_key(&self) -> Option<&[u8]> {
        if !self.ordered[FRONT] || self.taken[FRONT] {
            return None;
        }
        self.order[FRONT].first().and_then(|&i| self.key(i, FRONT))
    }

    /// The entry taken last (empty before the first take): still readable after the merge
    /// moved on to make the next entry ready, until the next take.
    #[inline(always)]
    pub(crate) fn held(&self) -> (&[u8], &[u8]) {
        let Some(h) = self.held else {
            return (&[], &[]);
        };
        let c = &self.cursors[h.cursor];
        let batch = if h.spare {
            &c.spares[h.side]
        } else {
            &c.batches[h.side]
        };
        batch.entry(h.index)
    }

    /// The run at the front of the merge: the entries of one source's front batch that
    /// come before the next entry of every other source, as `(cursor, end)`: entries
    /// `head..end` of [`front_batch(cursor)`](Self::front_batch), `end > head`. `None`
    /// when the merge is done or its next entry is not in a front batch.
    ///
    /// A run is found with a comparison or two when one source leads for long (keys
    /// written in order, one level holding the range), and in about two times the
    /// logarithm of its length otherwise (a galloping search).
    pub(crate) fn front_run(&mut self) -> Result<Option<(usize, usize)>> {
        let Some(i) = self.pick(FRONT)? else {
            return Ok(None);
        };
        let batch = &self.cursors[i].batches[FRONT];
        if batch.is_empty() {
            return Ok(None);
        }
        let (head, tail) = (batch.head, batch.tail);
        // `pick` left `order` up to date: its second cursor holds the next entry of all
        // the others.
        let Some(bound) = self.order[FRONT]
            .get(1)
            .and_then(|&j| Some((self.key(j, FRONT)?, j)))
        else {
            return Ok(Some((i, tail)));
        };
        let below = |at: usize| self.key_before(batch.key(at), i, bound.0, bound.1);
        if below(tail - 1) {
            return Ok(Some((i, tail)));
        }
        // Invariant: entry `lo` is below the bound (the head is: `i` leads the order),
        // entry `hi` is not.
        let (mut lo, mut hi, mut step) = (head, tail - 1, 1);
        while lo + step < hi {
            if below(lo + step) {
                lo += step;
                step *= 2;
            } else {
                hi = lo + step;
                break;
            }
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some((i, hi)))
    }

    /// Cursor `i`'s front batch, as [`front_run`](Self::front_run) names it.
    #[inline(always)]
    pub(crate) fn front_batch(&self, i: usize) -> &Batch {
        &self.cursors[i].batches[FRONT]
    }

    /// Takes the entries of a [`front_run`](Self::front_run) of cursor `i` before entry
    /// `to`, at least one of the run left untaken (`to < end`), so that the cursor keeps
    /// the lead it has in the order.
    pub(crate) fn skip_front(&mut self, i: usize, to: usize) {
        let batch = &mut self.cursors[i].batches[FRONT];
        debug_assert!(batch.head <= to && to < batch.tail);
        batch.head = to.min(batch.tail.saturating_sub(1)).max(batch.head);
        self.ordered[BACK] = false;
        self.held = None;
    }

    /// Takes the next entry from the front: its key, value and source.
    #[inline(always)]
    pub(crate) fn next_front(&mut self) -> Result<Option<Taken<'_>>> {
        self.take(FRONT)
    }

    /// Takes the next entry from the back: its key, value and source.
    pub(crate) fn next_back(&mut self) -> Result<Option<Taken<'_>>> {
        self.take(BACK)
    }

    #[inline(always)]
    fn take(&mut self, side: usize) -> Result<Option<Taken<'_>>> {
        let Some(i) = self.pick(side)? else {
            return Ok(None);
        };
        self.taken[side] = true;
        self.ordered[1 - side] = false;
        let c = &mut self.cursors[i];
        // The near batch's first entry, or (once it is used up) the far batch's last.
        let (held_side, index) = if !c.batches[side].is_empty() {
            let b = &mut c.batches[side];
            b.head += 1;
            (side, b.head - 1)
        } else {
            let b = &mut c.batches[1 - side];
            if b.is_empty() {
                return Ok(None);
            }
            b.tail -= 1;
            (1 - side, b.tail)
        };
        self.held = Some(Held {
            cursor: i,
            side: held_side,
            index,
            spare: false,
        });
        let (k, v) = self.cursors[i].batches[held_side].entry(index);
        Ok(Some((k, v, i)))
    }
}
