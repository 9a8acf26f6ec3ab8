//! A compact search tree over the index block's restart keys, for tables whose comparator
//! has a [bytewise view](crate::Comparator::bytewise_view) (bytewise tables, and LevelDB's
//! internal keys over bytewise user keys).
//!
//! Binary search over a block touches one entry per step, and a table's index block is large
//! (tens of thousands of entries for a million-entry table): nearly every step is a cache
//! miss. The fence keeps, per restart point, 8 bytes of its key's view — the bytes right
//! after the prefix all the views share — as a big-endian `u64`, in a tree of cache lines
//! (below). Only restart keys whose 8 bytes equal the target's are compared in full, with
//! the table's comparator.
//!
//! Zero-padded big-endian prefixes are monotone in bytewise order: if `p(s) < p(t)` then
//! `s < t` (and `p(s) > p(t)` implies `s > t`), and a view's order never contradicts the
//! comparator's. So the fence answers exactly the question binary search over the block
//! answers.
//!
//! Beside each prefix the fence can hold the block handle of its index entry, packed into
//! 64 bits, so that a lookup finds the data block without touching the index block at all,
//! and where to find that block's filter, so that a lookup the filter turns away touches
//! neither the index nor the filter block's offset array.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;
use std::sync::Arc;

use crate::block::{Layout, restart_entry, restart_key};
use crate::format::BlockHandle;

/// Values per line: one 64-byte cache line of `u64`s.
const FANOUT: usize = 8;

/// The most targets one batched search walks the tree with together: enough for their
/// misses to overlap, and small enough for its working arrays to live on the stack.
pub(crate) const BATCH: usize = 64;

/// One cache line of sorted prefixes (unused slots hold `u64::MAX`), or of the handles or
/// filters beside a line of leaves.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; FANOUT]);

/// How many of `slots` are `< target`. The slots are sorted and padding is `u64::MAX`, so
/// this is the position of `target` among them: a binary search without branches (each
/// step a compare and a conditional move; `N` is a power of two).
#[inline]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "i + half <= N - 1 at every step and i <= N - 1 at the end"
)]
fn count_below<const N: usize>(slots: &[u64; N], target: u64) -> usize {
    let mut i = 0;
    let mut half = N / 2;
    while half > 0 {
        if slots[i + half - 1] < target {
            i += half;
        }
        half /= 2;
    }
    i + usize::from(slots[i] < target)
}

/// A handle that does not pack (or is unknown).
const NO_HANDLE: u64 = u64::MAX;
/// Bits of a packed handle that hold the block size.
const SIZE_BITS: u32 = 24;

/// `handle` as `offset << 24 | size`, if the offset is below 2^40 (1 TiB) and the size
/// below 2^24 - 1 (16 MiB; all ones is [`NO_HANDLE`]'s).
pub(crate) fn pack_handle(handle: &BlockHandle) -> Option<u64> {
    let fits = handle.offset < 1 << (64 - SIZE_BITS) && handle.size < (1 << SIZE_BITS) - 1;
    fits.then_some(handle.offset << SIZE_BITS | handle.size)
}

fn unpack_handle(packed: u64) -> Option<BlockHandle> {
    (packed != NO_HANDLE)
        .then(|| BlockHandle::new(packed >> SIZE_BITS, packed & ((1 << SIZE_BITS) - 1)))
}

/// Where a data block's filter lies in the filter block, as the filter block's reader
/// answers for the block's offset: `start << 32 | limit` for the bytes `start..limit`
/// (both offsets in the block are 32-bit), or [`FILTER_UNDECIDED`].
pub(crate) type PackedFilter = u64;

/// The reader cannot decide (no such filter, or its bounds do not decode): a start past
/// the limit.
const FILTER_UNDECIDED: PackedFilter = 1 << 32;

/// A filter not recorded: the filter block must be asked.
const NO_FILTER: PackedFilter = u64::MAX;

/// The most bytes of filters a leaf line's span may cover for a lookup to request them all
/// with the line: 8 cache lines. A 4 KiB block of 100-byte entries has about 44 bytes of
/// filter at 10 bits a key, so 8 blocks' filters take about 6 lines; blocks of much smaller
/// entries would make the requests cost more than the miss they hide.
const SPAN_LIMIT: usize = 512;

/// `range` packed, if its ends fit in 32 bits.
pub(crate) fn pack_filter(range: Option<std::ops::Range<usize>>) -> PackedFilter {
    let Some(range) = range else {
        return FILTER_UNDECIDED;
    };
    match (u32::try_from(range.start), u32::try_from(range.end)) {
        (Ok(start), Ok(limit)) if start <= limit => u64::from(start) << 32 | u64::from(limit),
        _ => NO_FILTER,
    }
}

/// The range [`pack_filter`] packed (`None` where undecided).
pub(crate) fn unpack_filter(packed: PackedFilter) -> Option<std::ops::Range<usize>> {
    let (start, limit) = (
        (packed >> 32) as usize,
        (packed & u64::from(u32::MAX)) as usize,
    );
    (start <= limit).then_some(start..limit)
}

/// 8 bytes of each restart key of an index block, after their common prefix, as a search
/// tree of cache lines.
///
/// The leaves hold the prefixes in order, 8 to a line; the handles and filters of a leaf
/// line, when kept, are one line each in arrays of their own. Each level above holds the last
/// prefix of every line of the level below, 8 to a line, until one line remains. A search
/// reads one line per level, top down — a few compares per line instead of one dependent load
/// per halving — and the upper levels are small enough to stay in cache. Once the level above
/// the leaves has chosen a leaf line, its handle and filter lines are requested too, so their
/// misses overlap the leaf's instead of following it; so are the filters of the line's 8
/// blocks, where they lie within a few cache lines of one another (see
/// [`with_filter_block`](Self::with_filter_block)). For a million-entry table's 25,642 data
/// blocks that is 5 lines of prefixes (the top ones hot) where binary search reads 15
/// entries.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    /// The prefix every fenced restart key (hence every key before the tail) starts with.
    common: Vec<u8>,
    /// `common` zero-padded to 16 bytes as a big-endian number, and the mask of its bytes,
    /// when it is that short.
    common_word: Option<(u128, u128)>,
    leaves: Vec<Line>,
    /// Packed handles ([`NO_HANDLE`] where unknown), a line for each line of `leaves`;
    /// empty when the fence keeps none.
    handles: Vec<Line>,
    /// Packed filters ([`NO_FILTER`] where unknown), likewise.
    filters: Vec<Line>,
    /// The filter block the packed filters point into, and for each leaf line the bytes
    /// holding the filters of its blocks, packed as a filter is (see
    /// [`with_filter_block`](Self::with_filter_block)); empty when not given.
    filter_block: Option<Arc<[u8]>>,
    spans: Vec<PackedFilter>,
    /// Upper levels, bottom up; the last is a single line. Every level below the top (the
    /// leaves included) ends with an extra line of `u64::MAX`, so that a search whose target
    /// exceeds a whole level lands on a line that counts nothing.
    upper: Vec<Vec<Line>>,
    /// Number of fenced restart points: 0 up to `len`.
    len: usize,
    /// Whether the last restart point is left out of the fence. The last index key is often
    /// a short successor (`"1"` after `"0000000001999998"`) sharing nothing with the others;
    /// including it would shrink the common prefix to nothing.
    tail: bool,
}

/// The 8 bytes of `key` after `skip`, zero-padded, as a big-endian number.
#[inline]
fn prefix_at(key: &[u8], skip: usize) -> u64 {
    // Most keys hold 8 bytes past the skip: one load, where the padded copy below is a
    // call to `memcpy` of a length known only at run time.
    if let Some(bytes) = key.get(skip..).and_then(|rest| rest.first_chunk::<8>()) {
        return u64::from_be_bytes(*bytes);
    }
    let rest = key.get(skip..).unwrap_or_default();
    let mut buf = [0u8; 8];
    let n = rest.len().min(8);
    buf[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(buf)
}

/// What the fence keeps beside the prefixes.
#[derive(Debug, Clone, Copy)]
struct Keep {
    handles: bool,
    filters: bool,
}

/// One fenced restart point: its prefix, packed handle and packed filter.
#[derive(Debug, Clone, Copy)]
struct Entry {
    prefix: u64,
    handle: u64,
    filter: PackedFilter,
}

fn common_prefix<'k>(a: &'k [u8], b: &[u8]) -> &'k [u8] {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &a[..n]
}

/// Packs `values` into lines, padding the last with `u64::MAX`.
fn lines(values: impl ExactSizeIterator<Item = u64>) -> Vec<Line> {
    // One more line of room for the sentinel line levels below the top get.
    let n = values.len().div_ceil(FANOUT);
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "n is at most usize::MAX / 8 + 1"
    )]
    let mut out = Vec::with_capacity(n + 1);
    out.resize(n, Line([u64::MAX; FANOUT]));
    for (i, v) in values.enumerate() {
        out[i / FANOUT].0[i % FANOUT] = v;
    }
    out
}

impl Fence {
    /// Builds the fence of an index block over the views `view` gives of its restart keys,
    /// or `None` if a restart key does not decode (the ordinary search then reports the
    /// corruption) or has no view.
    ///
    /// With `handles`, the caller has checked that every index entry sits at its own restart
    /// point; the fence then keeps the handles that pack ([`pack_handle`]) and
    /// [`handle`](Self::handle) answers from them. With `handles` and `filter_of` it also
    /// keeps, for each handle, `filter_of(handle)`, which [`filter`](Self::filter) answers.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "n >= 1 (a parsed layout), n >= 2 where 2 is taken, and tail implies n >= 2"
    )]
    pub(crate) fn build(
        data: &[u8],
        layout: Layout,
        handles: bool,
        filter_of: Option<&dyn Fn(&BlockHandle) -> PackedFilter>,
        view: impl Fn(&[u8]) -> Option<&[u8]>,
    ) -> Option<Fence> {
        let n = layout.num_restarts;
        let key = |i| restart_key(data, layout, i).and_then(&view);
        let first = key(0)?;
        let last = key(n - 1)?;
        // Keys are sorted, so what the first and the second-to-last share, every key between
        // shares. (In an out-of-order block the fence is wrong the way the block is.)
        let before_last = if n >= 2 { key(n - 2)? } else { first };
        let mut common = common_prefix(first, before_last);
        let tail = n >= 2 && !last.starts_with(common);
        if n == 1 {
            common = first;
        }
        let fenced = if tail { n - 1 } else { n };
        let skip = common.len();
        let entry = |i| {
            let (k, v) = restart_entry(data, layout, i)?;
            let k = view(k)?;
            if !k.starts_with(common) {
                return None;
            }
            let (handle, filter) = match handles.then(|| BlockHandle::decode_from(&mut &v[..])) {
                Some(Ok(handle)) => (
                    pack_handle(&handle).unwrap_or(NO_HANDLE),
                    filter_of.map_or(NO_FILTER, |f| f(&handle)),
                ),
                _ => (NO_HANDLE, NO_FILTER),
            };
            Some(Entry {
                prefix: prefix_at(k, skip),
                handle,
                filter,
            })
        };
        let keep = Keep {
            handles,
            filters: handles && filter_of.is_some(),
        };
        Fence::from_entries(common.to_vec(), fenced, tail, keep, entry)
    }

    /// The fence over `len` entries, `entry(i)` giving the `i`-th (sorted) entry; `None` if an
    /// entry is `None`. Builds the lines in place: an index of half a million blocks allocates
    /// its 4 MB of leaves (and as much for each of handles and filters) and nothing else of
    /// that size.
    fn from_entries(
        common: Vec<u8>,
        len: usize,
        tail: bool,
        keep: Keep,
        entry: impl Fn(usize) -> Option<Entry>,
    ) -> Option<Fence> {
        // Room for the sentinel line from the start: growing the vectors later would copy.
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "len.div_ceil(8) is at most usize::MAX / 8 + 1"
        )]
        let lines_for = |kept: bool, fill: u64| {
            let n = if kept { len.div_ceil(FANOUT) } else { 0 };
            let mut v = Vec::with_capacity(n + 1);
            v.resize(n, Line([fill; FANOUT]));
            v
        };
        let mut leaves = lines_for(true, u64::MAX);
        let mut handles = lines_for(keep.handles, NO_HANDLE);
        let mut filters = lines_for(keep.filters, NO_FILTER);
        for i in 0..len {
            let e = entry(i)?;
            let (line, slot) = (i / FANOUT, i % FANOUT);
            leaves[line].0[slot] = e.prefix;
            if let Some(h) = handles.get_mut(line) {
                h.0[slot] = e.handle;
            }
            if let Some(f) = filters.get_mut(line) {
                f.0[slot] = e.filter;
            }
        }
        let mut upper: Vec<Vec<Line>> = Vec::new();
        if leaves.len() > 1 {
            upper.push(lines(leaves.iter().map(|leaf| leaf.0[FANOUT - 1])));
            while let [.., below] = &upper[..]
                && below.len() > 1
            {
                let maxes = below.iter().map(|line| line.0[FANOUT - 1]);
                upper.push(lines(maxes));
            }
            leaves.push(Line([u64::MAX; FANOUT]));
            // Every level but the top (the last) gets a sentinel line.
            if let Some((_top, below_top)) = upper.split_last_mut() {
                for level in below_top {
                    level.push(Line([u64::MAX; FANOUT]));
                }
            }
        }
        let common_word = (common.len() <= 16).then(|| {
            let (mut word, mut mask) = ([0u8; 16], [0u8; 16]);
            word[..common.len()].copy_from_slice(&common);
            mask[..common.len()].fill(0xff);
            (u128::from_be_bytes(word), u128::from_be_bytes(mask))
        });
        Some(Fence {
            common,
            common_word,
            leaves,
            handles,
            filters,
            filter_block: None,
            spans: Vec::new(),
            upper,
            len,
            tail,
        })
    }

    /// The fence, given the filter block its packed filters point into: a lookup then
    /// requests the filters of a leaf line's blocks together with the line, when they span
    /// at most [`SPAN_LIMIT`] bytes, so that the filter's miss overlaps the leaf's instead
    /// of following it.
    pub(crate) fn with_filter_block(mut self, block: Arc<[u8]>) -> Fence {
        self.spans = self
            .filters
            .iter()
            .map(|line| {
                let ranges = line.0.iter().filter_map(|&packed| {
                    (packed != NO_FILTER)
                        .then(|| unpack_filter(packed))
                        .flatten()
                });
                let span = ranges.reduce(|a, b| a.start.min(b.start)..a.end.max(b.end));
                match span {
                    Some(span) if span.len() <= SPAN_LIMIT && span.end <= block.len() => {
                        pack_filter(Some(span))
                    }
                    _ => NO_FILTER,
                }
            })
            .collect();
        self.filter_block = Some(block);
        self
    }

    /// The bytes the fence holds on the heap, less the filter block it shares with the
    /// table's filter (which counts it).
    pub(crate) fn heap_bytes(&self) -> usize {
        let line = std::mem::size_of::<Line>();
        let lines = [&self.leaves, &self.handles, &self.filters]
            .into_iter()
            .map(Vec::capacity)
            .fold(0usize, usize::saturating_add);
        let upper = self
            .upper
            .iter()
            .map(Vec::capacity)
            .fold(0usize, usize::saturating_add);
        let words = std::mem::size_of::<PackedFilter>().saturating_mul(self.spans.capacity());
        lines
            .saturating_add(upper)
            .saturating_mul(line)
            .saturating_add(words)
            .saturating_add(self.common.capacity())
            .saturating_add(std::mem::size_of::<Vec<Line>>().saturating_mul(self.upper.capacity()))
    }

    /// How many fenced prefixes are `< target`.
    #[inline]
    fn rank(&self, target: u64) -> usize {
        self.rank_from_leaf(self.leaf_line(target), target)
    }

    /// [`rank`](Self::rank) given the leaf line the upper levels chose: the handle and
    /// filter lines beside it and its blocks' filters requested, its prefixes below `target`
    /// counted.
    #[inline]
    fn rank_from_leaf(&self, at: usize, target: u64) -> usize {
        self.request_beside(at);
        self.request_filters(at);
        self.count_in_leaf(at, target)
    }

    /// How many prefixes before leaf line `at` and in it are `< target`.
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "each level's position is below the count of prefixes it covers (the \
                  invariant in leaf_line), at most len"
    )]
    fn count_in_leaf(&self, at: usize, target: u64) -> usize {
        at * FANOUT
            + self
                .leaves
                .get(at)
                .map_or(0, |leaf| count_below(&leaf.0, target))
    }

    /// The leaf line the upper levels choose for `target`.
    #[inline]
    #[expect(clippy::arithmetic_side_effects, reason = "as in count_in_leaf")]
    fn leaf_line(&self, target: u64) -> usize {
        let mut at = 0;
        for level in self.upper.iter().rev() {
            // In bounds: `at` counts entries of the level above, one per line of this level
            // (sentinel excluded), so it is at most the index of the sentinel line.
            at = at * FANOUT + level.get(at).map_or(0, |line| count_below(&line.0, target));
        }
        at
    }

    /// Requests the handle and filter lines beside leaf line `at` from memory.
    #[inline]
    fn request_beside(&self, at: usize) {
        if let Some(line) = self.handles.get(at) {
            leveltable_prefetch::start_of(line);
        }
        if let Some(line) = self.filters.get(at) {
            leveltable_prefetch::start_of(line);
        }
    }

    /// Requests the filters of leaf line `at`'s blocks from memory, where the fence knows
    /// their span. A batch does not: it requests each key's own filter once the leaves have
    /// answered, before it asks any.
    #[inline]
    fn request_filters(&self, at: usize) {
        if let (Some(block), Some(&span)) = (&self.filter_block, self.spans.get(at))
            && span != NO_FILTER
            && let Some(filters) = unpack_filter(span).and_then(|span| block.get(span))
        {
            leveltable_prefetch::lines(filters);
        }
    }

    /// [`rank`](Self::rank) of many targets (`None`s skipped): the tree is walked a level at
    /// a time for all of them, so the cache misses of different targets overlap instead of
    /// each search waiting for the one before.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "as in count_in_leaf, for each target"
    )]
    fn ranks(&self, targets: &[Option<u64>], out: &mut [Option<usize>]) {
        let mut at = [0usize; BATCH];
        let at = &mut at[..targets.len().min(BATCH)];
        for level in self.upper.iter().rev() {
            for (a, t) in at.iter_mut().zip(targets) {
                if let Some(t) = *t {
                    *a = *a * FANOUT + level.get(*a).map_or(0, |line| count_below(&line.0, t));
                }
            }
        }
        for ((rank, &a), t) in out.iter_mut().zip(&*at).zip(targets) {
            *rank = t.map(|t| {
                self.request_beside(a);
                self.count_in_leaf(a, t)
            });
        }
    }

    /// Prefix `i` (`i < len`).
    #[inline]
    fn prefix(&self, i: usize) -> u64 {
        self.leaves[i / FANOUT].0[i % FANOUT]
    }

    /// The handle of the index entry at restart point `i`, if the fence holds it.
    #[inline]
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        unpack_handle(self.beside(&self.handles, i)?)
    }

    /// Where the filter of the data block at restart point `i` lies, if the fence holds it.
    #[inline]
    pub(crate) fn filter(&self, i: usize) -> Option<PackedFilter> {
        self.beside(&self.filters, i)
            .filter(|&packed| packed != NO_FILTER)
    }

    /// Slot `i` of `lines` (the handles or the filters), if `i` is fenced and they are kept.
    #[inline]
    fn beside(&self, lines: &[Line], i: usize) -> Option<u64> {
        if i >= self.len {
            return None;
        }
        Some(lines.get(i / FANOUT)?.0[i % FANOUT])
    }

    /// The first restart point whose key is `>= target` (`num_restarts` if none), given
    /// `target`'s view. `is_less(i)` compares restart key `i` in full with the target, for
    /// ties and for the tail: `Some(true)` if it sorts before, `None` if it does not decode.
    pub(crate) fn first_at_or_after(
        &self,
        target: &[u8],
        is_less: impl Fn(usize) -> Option<bool>,
    ) -> usize {
        self.first_at_or_after_ranked(target, None, is_less)
    }

    /// [`first_at_or_after`](Self::first_at_or_after) for up to [`BATCH`] targets at once,
    /// into `out` (as long as `targets`; targets past [`BATCH`] are left out): `is_less(j, i)`
    /// compares restart key `i` with target `j`.
    pub(crate) fn first_at_or_after_batch(
        &self,
        targets: &[&[u8]],
        is_less: impl Fn(usize, usize) -> Option<bool>,
        out: &mut [usize],
    ) {
        let n = targets.len().min(BATCH);
        let mut prefixes = [None; BATCH];
        for (p, t) in prefixes.iter_mut().zip(&targets[..n]) {
            *p = self.target_prefix(t);
        }
        let mut ranks = [None; BATCH];
        self.ranks(&prefixes[..n], &mut ranks[..n]);
        for (j, ((first, t), rank)) in out.iter_mut().zip(targets).zip(ranks).enumerate() {
            *first = self.first_at_or_after_ranked(t, rank, |i| is_less(j, i));
        }
    }

    /// [`first_at_or_after`](Self::first_at_or_after), given the target's rank if known.
    fn first_at_or_after_ranked(
        &self,
        target: &[u8],
        rank: Option<usize>,
        is_less: impl Fn(usize) -> Option<bool>,
    ) -> usize {
        let m = self.len;
        let found = self.search_fenced(target, rank, &is_less);
        if found < m || !self.tail {
            return found;
        }
        // Every fenced key is < target; the tail key is the only candidate. A tail key that
        // does not decode is left to the cursor, which reports it.
        match is_less(m) {
            #[expect(
                clippy::arithmetic_side_effects,
                reason = "with a tail, m = num_restarts - 1"
            )]
            Some(true) => m + 1,
            _ => m,
        }
    }

    /// The 8 bytes of `target` the tree is searched with, or `None` when the common prefix
    /// alone places it (before or after every fenced key).
    fn target_prefix(&self, target: &[u8]) -> Option<u64> {
        let c = self.common.len();
        // A target shorter than the common prefix and a prefix of it sorts first.
        (self.against_common(target) == Ordering::Equal && target.len() >= c)
            .then(|| prefix_at(target, c))
    }

    /// How `target`'s first bytes, as many as it and the common prefix both have, sort
    /// against the common prefix's.
    #[inline]
    fn against_common(&self, target: &[u8]) -> Ordering {
        // A target of 16 bytes or more against a common prefix of at most 16: one load,
        // masked to the prefix's length, and one compare, where comparing the slices is a
        // call to `memcmp`.
        if let (Some((common, mask)), Some(head)) = (self.common_word, target.first_chunk::<16>()) {
            return (u128::from_be_bytes(*head) & mask).cmp(&common);
        }
        let c = self.common.len();
        let head = &target[..target.len().min(c)];
        head.cmp(&self.common[..head.len()])
    }

    fn search_fenced(
        &self,
        target: &[u8],
        rank: Option<usize>,
        is_less: &impl Fn(usize) -> Option<bool>,
    ) -> usize {
        let m = self.len;
        let c = self.common.len();
        match self.against_common(target) {
            Ordering::Less => return 0,
            Ordering::Greater => return m,
            // A target shorter than the common prefix and a prefix of it sorts first.
            Ordering::Equal if target.len() < c => return 0,
            Ordering::Equal => {}
        }
        let tp = prefix_at(target, c);
        // Keys before `lo` are < target (their prefixes are smaller).
        let lo = rank.unwrap_or_else(|| self.rank(tp));
        if lo == m || self.prefix(lo) != tp {
            // Prefix at `lo` is greater (or `lo == m`): that key is the first >= target.
            return lo;
        }
        // Ties: restart points `lo..hi` share the target's 8 bytes; compare them in full.
        let hi = tp.checked_add(1).map_or(m, |next| self.rank(next));
        // Invariant: keys before `lo` are < target, keys at or after `hi` are >= target.
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            #[expect(
                clippy::arithmetic_side_effects,
                reason = "lo <= mid < hi <= len inside the loop"
            )]
            let (mid, after_mid) = {
                let mid = lo + (hi - lo) / 2;
                (mid, mid + 1)
            };
            // A restart key that does not decode stops the fast search here; the cursor
            // then reports the corruption when it reads that entry.
            if is_less(mid) == Some(true) {
                lo = after_mid;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests;
