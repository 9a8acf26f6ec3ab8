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

use leveltable_table::{BytewiseComparator, Comparator, MapAhead};

use crate::dbformat::{InternalKeyComparator, show_key};
use crate::filename::table_file_name;
use crate::memtable::MemTable;
use crate::table_cache::TableCache;
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// An entry taken from the merge: its key, its value and the index of its source.
pub(crate) type Taken<'a> = (&'a [u8], &'a [u8], usize);

/// Most entries read per batch from one source.
const BATCH_ENTRIES: usize = 512;
/// A batch ends once its keys and values reach this many bytes.
const BATCH_BYTES: usize = 64 << 10;
/// A forward batch from a table goes on to the end of the data block it is in (so the
/// next one starts at a block boundary and reads no block twice), up to this many times
/// the limits above.
const BATCH_SLACK: usize = 4;
/// A merge adds the blocks it reads to the block cache until it has read this fraction of
/// the cache's capacity from tables; past that it is a long scan, which would only evict
/// what the lookups use, and it reads on without filling the cache (into one reused
/// buffer, where a cached block needs an allocation of its own).
const FILL_CACHE_FRACTION: u64 = 4;

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
    /// Versions held in memory: the writes of one log, or what a salvage could read of a
    /// damaged table.
    Mem {
        origin: Origin,
        table: Arc<MemTable>,
    },
    /// Tables whose key ranges do not overlap, in order (one level-0 table, or a level).
    Files {
        level: Option<usize>,
        files: Vec<Arc<FileMetaData>>,
    },
}

/// What the merge reads through.
pub(crate) struct Store {
    pub(crate) icmp: InternalKeyComparator,
    /// The internal comparator over [`BytewiseComparator`], statically dispatched, when the
    /// user comparator is bytewise.
    bytewise: Option<InternalKeyComparator<BytewiseComparator>>,
    pub(crate) tables: TableCache,
    pub(crate) sources: Vec<Source>,
}

/// Why reading a batch from one table failed.
enum TableFetchError {
    /// The table could not be read.
    Table(leveltable_table::Error),
    /// A key was not after the one before it, in the data block at `offset`.
    Order { offset: u64 },
}

impl From<leveltable_table::Error> for TableFetchError {
    fn from(e: leveltable_table::Error) -> Self {
        TableFetchError::Table(e)
    }
}

/// How a batch is read from a source.
#[derive(Debug, Clone, Copy)]
struct Fetch {
    /// From the front (ascending), or from the back (descending).
    forward: bool,
    /// The table where the previous forward batch ended at a block's last entry, the key
    /// `lo` excludes.
    resume: Option<u64>,
    /// Whether blocks read from tables go into the block cache.
    fill_cache: bool,
    /// The table the previous forward batch read last, and how far its source was asked to
    /// map itself in: the next batch of that table carries it on.
    mapped: Option<(u64, MapAhead)>,
}

/// What a batch leaves for the next one of its source.
struct Fetched {
    /// The table where the batch ended at a block's last entry, if it did.
    ended: Option<u64>,
    /// The table a forward batch read last, and how far it was mapped in.
    mapped: Option<(u64, MapAhead)>,
}

/// Whether `key` is below the lower bound `lo`.
fn below<C: Comparator + ?Sized>(icmp: &C, key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Unbounded => false,
        Bound::Included(b) => icmp.compare(key, b) == Ordering::Less,
        Bound::Excluded(b) => icmp.compare(key, b) != Ordering::Greater,
    }
}

/// Whether `key` is above the upper bound `hi`.
fn above<C: Comparator + ?Sized>(icmp: &C, key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Unbounded => false,
        Bound::Included(b) => icmp.compare(key, b) == Ordering::Greater,
        Bound::Excluded(b) => icmp.compare(key, b) != Ordering::Less,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

impl Store {
    pub(crate) fn new(
        icmp: InternalKeyComparator,
        tables: TableCache,
        sources: Vec<Source>,
    ) -> Self {
        let bytewise = (icmp.user_comparator().name() == BytewiseComparator.name())
            .then(InternalKeyComparator::bytewise);
        Store {
            icmp,
            bytewise,
            tables,
            sources,
        }
    }

    /// Appends to `out` the next entries of source `i` within `(lo, hi)`, up to a batch's
    /// worth, read as `how` says.
    fn fetch(
        &self,
        i: usize,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        how: Fetch,
        out: &mut Batch,
    ) -> Result<Fetched> {
        let Fetch {
            forward,
            resume,
            mapped,
            ..
        } = how;
        match &self.sources[i] {
            Source::Mem { table, .. } => {
                let slice = table.range(as_ref(lo), as_ref(hi));
                let mut push = |(k, v): &(Vec<u8>, Vec<u8>)| {
                    out.push(k, v);
                    !out.full()
                };
                if forward {
                    slice.iter().all(&mut push);
                } else {
                    slice.iter().rev().all(&mut push);
                }
                Ok(Fetched {
                    ended: None,
                    mapped: None,
                })
            }
            Source::Files { files, .. } => {
                // Files are sorted and disjoint: skip those wholly outside the bounds by
                // binary search, then read on until the batch is full.
                let first = files.partition_point(|f| below(&self.icmp, &f.largest, lo));
                let end = files.partition_point(|f| !above(&self.icmp, &f.smallest, hi));
                let within = files.get(first..end.max(first)).unwrap_or(&[]);
                let mut fetched = Fetched {
                    ended: None,
                    mapped: None,
                };
                let mut visit = |f: &FileMetaData| -> Result<bool> {
                    let table = self.tables.get(f.number)?;
                    let past_block = resume == Some(f.number);
                    let map = mapped
                        .filter(|&(number, _)| number == f.number)
                        .map(|(_, map)| map)
                        .unwrap_or_default();
                    let first = out.ends.len();
                    let (at_end, map) = match &self.bytewise {
                        Some(icmp) => self.fetch_table(
                            icmp,
                            table.table(),
                            lo,
                            hi,
                            (how, map),
                            past_block,
                            out,
                        ),
                        None => self.fetch_table(
                            &self.icmp,
                            table.table(),
                            lo,
                            hi,
                            (how, map),
                            past_block,
                            out,
                        ),
                    }
                    .map_err(|e| match e {
                        TableFetchError::Table(e) => {
                            Error::from(e).in_table(table_file_name(f.number))
                        }
                        TableFetchError::Order { offset } => Error::corruption(
                            table_file_name(f.number),
                            "key order (a key not after the one before it)",
                            offset,
                        ),
                    })?;
                    self.check_claimed_range(f, out, first)?;
                    fetched.ended = at_end.then_some(f.number);
                    fetched.mapped = forward.then_some((f.number, map));
                    Ok(!out.full())
                };
                if forward {
                    for f in within {
                        if !visit(f)? {
                            break;
                        }
                    }
                } else {
                    for f in within.iter().rev() {
                        if !visit(f)? {
                            break;
                        }
                    }
                }
                Ok(fetched)
            }
        }
    }

    /// Appends entries of one table within `(lo, hi)` to `out` until it is full (forward:
    /// and at the end of a data block, within the slack), a forward read carrying on the
    /// mapping-in `map` of the batch before. With `past_block`, the key `lo` excludes is the
    /// last of its data block, which is not read again. Returns whether a forward batch
    /// ended at a block's last entry, and how far the table is now mapped in.
    ///
    /// Invariant: the keys a source hands out strictly ascend from the front and strictly
    /// descend from the back, each within `(lo, hi)`. A table whose keys are out of order
    /// would otherwise make a cursor seek back to keys it already read, again and again; a
    /// key not after the one before it (or not inside the bounds the cursor resumed from)
    /// is an error instead, with the offset of its data block.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site per comparator type"
    )]
    fn fetch_table<C: Comparator + ?Sized, R: leveltable_table::ReadAt>(
        &self,
        icmp: &C,
        table: &leveltable_table::Table<R>,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        (how, map): (Fetch, MapAhead),
        past_block: bool,
        out: &mut Batch,
    ) -> std::result::Result<(bool, MapAhead), TableFetchError> {
        let mut it = table.iter().fill_cache(how.fill_cache).with_map_ahead(map);
        let forward = how.forward;
        let out_of_order = |it: &leveltable_table::TableIter<'_, R>| TableFetchError::Order {
            offset: it.block_offset().unwrap_or(0),
        };
        if forward {
            match lo {
                Bound::Unbounded => it.seek_to_first(),
                Bound::Excluded(k) if past_block => it.seek_past_block_of(k),
                Bound::Included(k) | Bound::Excluded(k) => it.seek(k),
            }
            if let Bound::Excluded(k) = lo {
                if it.valid() && icmp.compare(it.key(), k) == Ordering::Equal {
                    it.next();
                }
            }
            while it.valid() && !above(icmp, it.key(), hi) {
                let in_order = match out.last_read_key() {
                    Some(previous) => icmp.compare(previous, it.key()) == Ordering::Less,
                    None => !below(icmp, it.key(), lo),
                };
                if !in_order {
                    return Err(out_of_order(&it));
                }
                out.push(it.key(), it.value());
                if out.full() {
                    let at_end = it.at_block_end();
                    if at_end || out.overfull() {
                        it.status()?;
                        return Ok((at_end, it.map_ahead()));
                    }
                }
                it.next();
            }
        } else {
            match hi {
                Bound::Unbounded => it.seek_to_last(),
                Bound::Included(k) | Bound::Excluded(k) => {
                    it.seek(k);
                    if !it.valid() {
                        it.status()?;
                        it.seek_to_last();
                    } else if above(icmp, it.key(), hi) {
                        it.prev();
                    }
                }
            }
            while it.valid() && !below(icmp, it.key(), lo) {
                let in_order = match out.last_read_key() {
                    Some(previous) => icmp.compare(it.key(), previous) == Ordering::Less,
                    None => !above(icmp, it.key(), hi),
                };
                if !in_order {
                    return Err(out_of_order(&it));
                }
                out.push(it.key(), it.value());
                if out.full() {
                    break;
                }
                it.prev();
            }
        }
        it.status()?;
        Ok((false, it.map_ahead()))
    }

    /// Checks that the entries a batch read from table `f` (those from `first` on) lie in
    /// the key range the MANIFEST gives it. They ascend (or descend) strictly, so the two
    /// ends suffice. Files are skipped and chosen by their ranges: a key outside its
    /// table's range would be missed by some reads and found by others.
    fn check_claimed_range(&self, f: &FileMetaData, out: &Batch, first: usize) -> Result<()> {
        let Some(last) = out.ends.len().checked_sub(1).filter(|&l| l >= first) else {
            return Ok(());
        };
        let (a, b) = (out.key(first), out.key(last));
        let (low, high) = if self.icmp.compare(a, b) == Ordering::Greater {
            (b, a)
        } else {
            (a, b)
        };
        if self.icmp.compare(low, &f.smallest) == Ordering::Less
            || self.icmp.compare(high, &f.largest) == Ordering::Greater
        {
            let outside = if self.icmp.compare(low, &f.smallest) == Ordering::Less {
                low
            } else {
                high
            };
            return Err(Error::corruption(
                table_file_name(f.number),
                format!(
                    "key range (holds {}, outside the range {}..={} the MANIFEST gives it)",
                    show_key(outside),
                    show_key(&f.smallest),
                    show_key(&f.largest)
                ),
                0,
            ));
        }
        Ok(())
    }

    /// Where the entries of source `i` are stored.
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
}

/// Entries of one source, stored end to end in one buffer, handed out from either end.
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Per entry: where its key ends and where its value ends in `bytes`; each entry starts
    /// where the one before ends.
    ends: Vec<(usize, usize)>,
    /// Entries before `head` and from `tail` on are taken.
    head: usize,
    tail: usize,
}

impl Batch {
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.head = 0;
        self.tail = 0;
    }

    #[inline]
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
        self.tail = self.ends.len();
    }

    #[inline]
    fn full(&self) -> bool {
        self.ends.len() >= BATCH_ENTRIES || self.bytes.len() >= BATCH_BYTES
    }

    /// Past the slack a batch may take to end at a block boundary.
    #[inline]
    fn overfull(&self) -> bool {
        self.ends.len() >= BATCH_SLACK * BATCH_ENTRIES
            || self.bytes.len() >= BATCH_SLACK * BATCH_BYTES
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.head >= self.tail
    }

    /// The key of entry `i`, which must be below `ends.len()`.
    #[inline(always)]
    fn key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        &self.bytes[start..self.ends[i].0]
    }

    /// Entry `i`, which must be below `ends.len()`.
    #[inline]
    fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        let (key_end, end) = self.ends[i];
        (&self.bytes[start..key_end], &self.bytes[key_end..end])
    }

    /// The key of the entry read last (the one at the end of `ends`).
    fn last_read_key(&self) -> Option<&[u8]> {
        self.ends.len().checked_sub(1).map(|i| self.entry(i).0)
    }
}

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
    store: Arc<Store>,
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
    pub(crate) fn new(store: Arc<Store>, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Self {
        let cursors = (0..store.sources.len())
            .map(|_| Cursor {
                batches: Default::default(),
                spares: Default::default(),
                lo: lo.clone(),
                hi: hi.clone(),
                drained: false,
                resume: None,
                mapped: None,
            })
            .collect();
        let fill_budget = store.tables.block_cache_capacity() / FILL_CACHE_FRACTION;
        Merger {
            store,
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

    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Reads the next batch of cursor `i` on side `side` if that side's batch is used up.
    fn fill(&mut self, i: usize, side: usize) -> Result<()> {
        let c = &mut self.cursors[i];
        if !c.batches[side].is_empty() || c.drained {
            return Ok(());
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
        let fetched = self.store.fetch(i, &c.lo, &c.hi, how, batch)?;
        if side == FRONT {
            c.resume = fetched.ended;
            c.mapped = fetched.mapped;
        }
        if matches!(self.store.sources[i], Source::Files { .. }) {
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

    /// Whether cursor `a`'s next entry on side `side` comes before cursor `b`'s (ties go
    /// to the lower source index). Both must have one.
    #[inline(always)]
    fn before(&self, a: usize, b: usize, side: usize) -> bool {
        let (Some(ka), Some(kb)) = (self.key(a, side), self.key(b, side)) else {
            return false;
        };
        let o = match &self.store.bytewise {
            Some(icmp) => icmp.compare(ka, kb),
            None => self.store.icmp.compare(ka, kb),
        };
        let o = if side == FRONT { o } else { o.reverse() };
        o.then(a.cmp(&b)) == Ordering::Less
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
        if self.ordered[side] && !self.taken[side] && !self.failed {
            return Ok(self.order[side].first().copied());
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
    #[inline]
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

    /// Takes the next entry from the front: its key, value and source.
    pub(crate) fn next_front(&mut self) -> Result<Option<Taken<'_>>> {
        self.take(FRONT)
    }

    /// Takes the next entry from the back: its key, value and source.
    pub(crate) fn next_back(&mut self) -> Result<Option<Taken<'_>>> {
        self.take(BACK)
    }

    #[inline]
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
