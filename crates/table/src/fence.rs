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
//! Next to each prefix the fence can hold the block handle of its index entry, packed into
//! 64 bits, so that a lookup finds the data block without touching the index block at all.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;

use crate::block::{Layout, restart_entry, restart_key};
use crate::format::BlockHandle;

/// Prefixes per line of the upper levels: one 64-byte cache line of `u64`s.
const FANOUT: usize = 8;
/// Prefixes per leaf line, each beside its packed handle.
const LEAF: usize = 4;

/// One cache line of sorted prefixes; unused slots hold `u64::MAX`.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; FANOUT]);

/// One cache line of the bottom level: sorted prefixes (unused slots `u64::MAX`) and the
/// packed handles of their index entries ([`NO_HANDLE`] where unknown).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Leaf {
    prefixes: [u64; LEAF],
    handles: [u64; LEAF],
}

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

/// 8 bytes of each restart key of an index block, after their common prefix, as a search
/// tree of cache lines.
///
/// The leaves hold the prefixes in order, 4 to a line beside their handles. Each level above
/// holds the last prefix of every line of the level below, 8 to a line, until one line
/// remains. A search reads one line per level, top down — a few compares per line instead of
/// one dependent load per halving — and the upper levels are small enough to stay in cache.
/// For a million-entry table's 25,642 data blocks that is 6 lines (the top ones hot) where
/// binary search reads 15 entries, and the leaf line that answers also holds the handle.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    /// The prefix every fenced restart key (hence every key before the tail) starts with.
    common: Vec<u8>,
    leaves: Vec<Leaf>,
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
    let rest = key.get(skip..).unwrap_or_default();
    let mut buf = [0u8; 8];
    let n = rest.len().min(8);
    buf[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(buf)
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
    /// point and that every handle packs ([`pack_handle`]); the fence then keeps the handles
    /// and [`handle`](Self::handle) answers from them.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "n >= 1 (a parsed layout), n >= 2 where 2 is taken, and tail implies n >= 2"
    )]
    pub(crate) fn build(
        data: &[u8],
        layout: Layout,
        handles: bool,
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
            let handle = if handles {
                BlockHandle::decode_from(&mut &v[..])
                    .ok()
                    .as_ref()
                    .and_then(pack_handle)
                    .unwrap_or(NO_HANDLE)
            } else {
                NO_HANDLE
            };
            Some((prefix_at(k, skip), handle))
        };
        Fence::from_entries(common.to_vec(), fenced, tail, entry)
    }

    /// The fence over `len` entries, `entry(i)` giving the `i`-th sorted prefix and its
    /// packed handle; `None` if an entry is `None`. Builds the lines in place: an index of
    /// half a million blocks allocates its 8 MB of leaves and nothing else of that size.
    fn from_entries(
        common: Vec<u8>,
        len: usize,
        tail: bool,
        entry: impl Fn(usize) -> Option<(u64, u64)>,
    ) -> Option<Fence> {
        let empty = Leaf {
            prefixes: [u64::MAX; LEAF],
            handles: [NO_HANDLE; LEAF],
        };
        // Room for the sentinel leaf from the start: growing the vector later would copy it.
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "len.div_ceil(4) is at most usize::MAX / 4 + 1"
        )]
        let mut leaves = Vec::with_capacity(len.div_ceil(LEAF) + 1);
        leaves.resize(len.div_ceil(LEAF), empty);
        for i in 0..len {
            let (prefix, handle) = entry(i)?;
            let leaf = &mut leaves[i / LEAF];
            leaf.prefixes[i % LEAF] = prefix;
            leaf.handles[i % LEAF] = handle;
        }
        let mut upper: Vec<Vec<Line>> = Vec::new();
        if leaves.len() > 1 {
            upper.push(lines(leaves.iter().map(|leaf| leaf.prefixes[LEAF - 1])));
            while let [.., below] = &upper[..]
                && below.len() > 1
            {
                let maxes = below.iter().map(|line| line.0[FANOUT - 1]);
                upper.push(lines(maxes));
            }
            leaves.push(empty);
            // Every level but the top (the last) gets a sentinel line.
            if let Some((_top, below_top)) = upper.split_last_mut() {
                for level in below_top {
                    level.push(Line([u64::MAX; FANOUT]));
                }
            }
        }
        Some(Fence {
            common,
            leaves,
            upper,
            len,
            tail,
        })
    }

    /// How many fenced prefixes are `< target`.
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "each level's position is below the count of prefixes it covers (the \
                  invariant below), at most len"
    )]
    fn rank(&self, target: u64) -> usize {
        let mut at = 0;
        for level in self.upper.iter().rev() {
            // In bounds: `at` counts entries of the level above, one per line of this level
            // (sentinel excluded), so it is at most the index of the sentinel line.
            at = at * FANOUT + level.get(at).map_or(0, |line| count_below(&line.0, target));
        }
        at * LEAF
            + self
                .leaves
                .get(at)
                .map_or(0, |leaf| count_below(&leaf.prefixes, target))
    }

    /// [`rank`](Self::rank) of many targets (`None`s skipped): the tree is walked a level at
    /// a time for all of them, so the cache misses of different targets overlap instead of
    /// each search waiting for the one before.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "as in rank, for each target"
    )]
    fn ranks(&self, targets: &[Option<u64>]) -> Vec<Option<usize>> {
        let mut at = vec![0usize; targets.len()];
        for level in self.upper.iter().rev() {
            for (a, t) in at.iter_mut().zip(targets) {
                if let Some(t) = *t {
                    *a = *a * FANOUT + level.get(*a).map_or(0, |line| count_below(&line.0, t));
                }
            }
        }
        at.iter()
            .zip(targets)
            .map(|(&a, t)| {
                let t = (*t)?;
                let leaf = self
                    .leaves
                    .get(a)
                    .map_or(0, |leaf| count_below(&leaf.prefixes, t));
                Some(a * LEAF + leaf)
            })
            .collect()
    }

    /// Prefix `i` (`i < len`).
    #[inline]
    fn prefix(&self, i: usize) -> u64 {
        self.leaves[i / LEAF].prefixes[i % LEAF]
    }

    /// The handle of the index entry at restart point `i`, if the fence holds it.
    #[inline]
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        if i >= self.len {
            return None;
        }
        unpack_handle(self.leaves[i / LEAF].handles[i % LEAF])
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

    /// [`first_at_or_after`](Self::first_at_or_after) for many targets: `is_less(j, i)`
    /// compares restart key `i` with target `j`.
    pub(crate) fn first_at_or_after_many(
        &self,
        targets: &[&[u8]],
        is_less: impl Fn(usize, usize) -> Option<bool>,
    ) -> Vec<usize> {
        let prefixes: Vec<Option<u64>> = targets.iter().map(|t| self.target_prefix(t)).collect();
        let ranks = self.ranks(&prefixes);
        targets
            .iter()
            .zip(ranks)
            .enumerate()
            .map(|(j, (t, rank))| self.first_at_or_after_ranked(t, rank, |i| is_less(j, i)))
            .collect()
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
        let head = &target[..target.len().min(c)];
        // A target shorter than the common prefix and a prefix of it sorts first.
        (head == &self.common[..] && target.len() >= c).then(|| prefix_at(target, c))
    }

    fn search_fenced(
        &self,
        target: &[u8],
        rank: Option<usize>,
        is_less: &impl Fn(usize) -> Option<bool>,
    ) -> usize {
        let m = self.len;
        let c = self.common.len();
        let head = &target[..target.len().min(c)];
        match head.cmp(&self.common[..head.len()]) {
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
mod tests {
    use super::*;
    use crate::block_builder::BlockBuilder;

    fn check(keys: &[&[u8]], interval: usize, probes: &[&[u8]]) {
        let mut b = BlockBuilder::new(interval);
        for k in keys {
            b.add(k, b"");
        }
        let data = b.finish().to_vec();
        let layout = Layout::parse(&data).unwrap();
        let fence = Fence::build(&data, layout, false, |k| Some(k)).unwrap();
        let restart_keys: Vec<&[u8]> = (0..layout.num_restarts)
            .map(|i| restart_key(&data, layout, i).unwrap())
            .collect();
        let targets: Vec<&[u8]> = probes.iter().chain(keys).copied().collect();
        let many = fence.first_at_or_after_many(&targets, |j, i| {
            Some(restart_key(&data, layout, i)? < targets[j])
        });
        for (&t, got_many) in targets.iter().zip(many) {
            let want = restart_keys
                .iter()
                .position(|k| *k >= t)
                .unwrap_or(restart_keys.len());
            let got = fence.first_at_or_after(t, |i| Some(restart_key(&data, layout, i)? < t));
            assert_eq!(got, want, "target {t:?}");
            assert_eq!(got_many, want, "target {t:?} in a batch");
        }
    }

    /// Internal-key style ordering: the key without its last 8 bytes bytewise, then those 8
    /// bytes (little-endian) descending, viewed through the first part only.
    struct Suffixed;

    impl crate::Comparator for Suffixed {
        fn name(&self) -> &str {
            "test.Suffixed"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            let ((au, at), (bu, bt)) = (
                a.split_at(a.len().saturating_sub(8)),
                b.split_at(b.len().saturating_sub(8)),
            );
            au.cmp(bu)
                .then_with(|| bt.iter().rev().cmp(at.iter().rev()))
        }
        fn find_shortest_separator(&self, _: &mut Vec<u8>, _: &[u8]) {}
        fn find_short_successor(&self, _: &mut Vec<u8>) {}
        fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
            key.len().checked_sub(8).map(|n| &key[..n])
        }
    }

    /// With a comparator whose view is a part of the key, the fence still finds what a
    /// linear search with the comparator finds: runs of one user key under many tags tie on
    /// the view and are resolved with the comparator.
    #[test]
    fn views_agree_with_linear_search_by_comparator() {
        use crate::Comparator;
        let with_tag = |user: &[u8], tag: u64| {
            let mut k = user.to_vec();
            k.extend_from_slice(&tag.to_le_bytes());
            k
        };
        let users: Vec<Vec<u8>> = [&b"a"[..], b"a\x00", b"ab", b"abcdefgh", b"abcdefghi", b"b"]
            .iter()
            .map(|u| u.to_vec())
            .chain((0..60).map(|i| format!("user{:05}", i * 3).into_bytes()))
            .collect();
        let mut keys: Vec<Vec<u8>> = users
            .iter()
            .flat_map(|u| [9u64, 5, 1].map(|t| with_tag(u, t << 8 | 1)))
            .collect();
        keys.sort_by(|a, b| Suffixed.compare(a, b));
        let probes: Vec<Vec<u8>> = users
            .iter()
            .cloned()
            .chain([
                b"".to_vec(),
                b"a\x00\x00".to_vec(),
                b"user00004".to_vec(),
                b"z".to_vec(),
            ])
            .flat_map(|u| [u64::MAX, 6 << 8 | 1, 0].map(|t| with_tag(&u, t)))
            .collect();
        for interval in [1, 2, 5] {
            let mut b = BlockBuilder::new(interval);
            for k in &keys {
                b.add(k, b"");
            }
            let data = b.finish().to_vec();
            let layout = Layout::parse(&data).unwrap();
            let fence = Fence::build(&data, layout, false, |k| Suffixed.bytewise_view(k)).unwrap();
            let restart_keys: Vec<&[u8]> = (0..layout.num_restarts)
                .map(|i| restart_key(&data, layout, i).unwrap())
                .collect();
            for t in &probes {
                let want = restart_keys
                    .iter()
                    .position(|k| Suffixed.compare(k, t) != Ordering::Less)
                    .unwrap_or(restart_keys.len());
                let view = Suffixed.bytewise_view(t).unwrap();
                let got = fence.first_at_or_after(view, |i| {
                    Some(Suffixed.compare(restart_key(&data, layout, i)?, t) == Ordering::Less)
                });
                assert_eq!(got, want, "interval {interval}, target {t:?}");
            }
        }
    }

    /// The line tree counts exactly what a binary search over the sorted prefixes counts,
    /// for every size from one line to four levels, with runs of equal prefixes and prefixes
    /// of `u64::MAX` (which equal the padding).
    #[test]
    fn rank_agrees_with_partition_point() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 20
        };
        for len in (1..=80).chain([511, 512, 513, 4095, 4096, 4097, 5000]) {
            let mut prefixes: Vec<u64> = (0..len).map(|_| next() % 1000 * 3).collect();
            if len % 3 == 0 {
                prefixes[len - 1] = u64::MAX;
            }
            prefixes.sort_unstable();
            let fence =
                Fence::from_entries(Vec::new(), len, false, |i| Some((prefixes[i], i as u64)))
                    .unwrap();
            if let Some(top) = fence.upper.last() {
                assert_eq!(top.len(), 1);
            }
            for t in (0..3002).chain([u64::MAX - 1, u64::MAX]) {
                let want = prefixes.partition_point(|&p| p < t);
                assert_eq!(fence.rank(t), want, "len {len}, target {t}");
                if want < len {
                    assert_eq!(fence.prefix(want), prefixes[want]);
                    assert_eq!(fence.handle(want), Some(BlockHandle::new(0, want as u64)));
                } else {
                    assert_eq!(fence.handle(want), None);
                }
            }
        }
    }

    #[test]
    fn agrees_with_linear_search() {
        let decimal: Vec<Vec<u8>> = (0..300)
            .map(|i| format!("{:016}", i * 7).into_bytes())
            .collect();
        let keys: Vec<&[u8]> = decimal.iter().map(|k| &k[..]).collect();
        let probes: Vec<Vec<u8>> = (0..2200)
            .map(|i| format!("{:016}", i).into_bytes())
            .chain([
                b"".to_vec(),
                b"0".to_vec(),
                b"00000000000000000".to_vec(),
                b"1".to_vec(),
            ])
            .collect();
        let probes: Vec<&[u8]> = probes.iter().map(|k| &k[..]).collect();
        for interval in [1, 3, 16] {
            check(&keys, interval, &probes);
        }
        // Keys with zero bytes and lengths around the 8-byte window.
        let odd: Vec<&[u8]> = vec![
            b"a",
            b"a\x00",
            b"a\x00\x00",
            b"a\x00\x00\x00\x00\x00\x00\x00\x00\x01",
            b"a\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefghi",
            b"abcdefghij",
            b"b",
            b"\xff\xff",
        ];
        let probes: Vec<&[u8]> = vec![b"", b"a\x00\x00\x00", b"abcdefgh\x00", b"c", b"\xff"];
        for interval in [1, 2] {
            check(&odd, interval, &probes);
        }
        // All keys identical up to the end of the shortest: common prefix is a whole key.
        check(
            &[b"same", b"same1", b"same2"],
            1,
            &[b"sam", b"same0", b"same3"],
        );
        check(&[b"only"], 1, &[b"", b"only", b"zz"]);
        // A short-successor tail, as the index of a table of decimal keys ends.
        check(
            &[
                b"0000000000000000",
                b"0000000000000074",
                b"0000000001999998",
                b"1",
            ],
            1,
            &[
                b"0",
                b"00000000019999989",
                b"05",
                b"1",
                b"10",
                b"2",
                b"0000000000000075",
            ],
        );
        check(&[b"a", b"b"], 1, &[b"", b"a", b"a0", b"b", b"c"]);
        // Long runs of restart keys whose 8 fenced bytes are equal, ending in different
        // lengths and bytes past the window: ties are resolved on the full keys.
        let mut tied: Vec<Vec<u8>> = vec![b"k".to_vec()];
        for run in [b"aaaaaaaa", b"aaaaaaab", b"bbbbbbbb"] {
            for i in 0..40u32 {
                let mut k = b"k".to_vec();
                k.extend_from_slice(run);
                k.extend_from_slice(format!("{i:03}").as_bytes());
                tied.push(k);
            }
        }
        tied.push(b"kzzzzzzzzzz".to_vec());
        tied.push(b"l".to_vec());
        let tied_keys: Vec<&[u8]> = tied.iter().map(|k| &k[..]).collect();
        let mut tied_probes: Vec<Vec<u8>> = tied
            .iter()
            .flat_map(|k| {
                let mut after = k.clone();
                after.push(b'5');
                [k[..k.len() - 1].to_vec(), after]
            })
            .collect();
        tied_probes.extend([
            b"kaaaaaaaa".to_vec(),
            b"kaaaaaaab999".to_vec(),
            b"kb".to_vec(),
        ]);
        let tied_probes: Vec<&[u8]> = tied_probes.iter().map(|k| &k[..]).collect();
        for interval in [1, 2, 7] {
            check(&tied_keys, interval, &tied_probes);
        }
    }
}
