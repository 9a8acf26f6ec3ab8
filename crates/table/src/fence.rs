//! A compact search array over the index block's restart keys, for bytewise tables.
//!
//! Binary search over a block touches one entry per step, and a table's index block is large
//! (tens of thousands of entries for a million-entry table): nearly every step is a cache
//! miss. The fence keeps, per restart point, 8 bytes of its key — the bytes right after the
//! prefix all index keys share — as a big-endian `u64`. Searching that dense array costs a few
//! cache lines; only restart keys whose 8 bytes equal the target's are compared in full.
//!
//! Zero-padded big-endian prefixes are monotone in bytewise order: if `p(s) < p(t)` then
//! `s < t` (and `p(s) > p(t)` implies `s > t`). So the fence answers exactly the question
//! binary search over the block answers.

use std::cmp::Ordering;

use crate::block::{Layout, restart_key};

/// 8 bytes of each restart key of an index block, after their common prefix.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    /// The prefix every fenced restart key (hence every key before the tail) starts with.
    common: Vec<u8>,
    /// One per fenced restart point: 0 up to `prefixes.len()`.
    prefixes: Vec<u64>,
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

impl Fence {
    /// Builds the fence of an index block, or `None` if a restart key does not decode (the
    /// ordinary search then reports the corruption).
    pub(crate) fn build(data: &[u8], layout: Layout) -> Option<Fence> {
        let n = layout.num_restarts;
        let key = |i| restart_key(data, layout, i);
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
        let mut prefixes = Vec::with_capacity(fenced);
        for i in 0..fenced {
            let k = key(i)?;
            if !k.starts_with(common) {
                return None;
            }
            prefixes.push(prefix_at(k, common.len()));
        }
        Some(Fence {
            common: common.to_vec(),
            prefixes,
            tail,
        })
    }

    /// The first restart point whose key is `>= target` (`num_restarts` if none), comparing
    /// bytewise. `full_key(i)` gives restart key `i` for ties and for the tail.
    pub(crate) fn first_at_or_after<'d>(
        &self,
        target: &[u8],
        full_key: impl Fn(usize) -> Option<&'d [u8]>,
    ) -> usize {
        let m = self.prefixes.len();
        let found = self.search_fenced(target, &full_key);
        if found < m || !self.tail {
            return found;
        }
        // Every fenced key is < target; the tail key is the only candidate. A tail key that
        // does not decode is left to the cursor, which reports it.
        match full_key(m) {
            Some(k) if k < target => m + 1,
            _ => m,
        }
    }

    fn search_fenced<'d>(
        &self,
        target: &[u8],
        full_key: &impl Fn(usize) -> Option<&'d [u8]>,
    ) -> usize {
        let m = self.prefixes.len();
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
        let prefixes = &self.prefixes[..];
        // `partition_point` is a branch-free binary search without bounds checks: each step
        // picks the next half with a conditional move, so a step costs a load, not a
        // mispredicted branch. Keys before `lo` are < target (their prefixes are smaller).
        let lo = prefixes.partition_point(|&p| p < tp);
        if prefixes.get(lo) != Some(&tp) {
            // Prefix at `lo` is greater (or `lo == m`): that key is the first >= target.
            return lo;
        }
        // Ties: restart points `lo..hi` share the target's 8 bytes; compare them in full.
        let hi = lo + prefixes[lo..].partition_point(|&p| p == tp);
        // Invariant: keys before `lo` are < target, keys at or after `hi` are >= target.
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // A restart key that does not decode stops the fast search here; the cursor
            // then reports the corruption when it reads that entry.
            if full_key(mid).is_some_and(|k| k < target) {
                lo = mid + 1;
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
        let fence = Fence::build(&data, layout).unwrap();
        let restart_keys: Vec<&[u8]> = (0..layout.num_restarts)
            .map(|i| restart_key(&data, layout, i).unwrap())
            .collect();
        for &t in probes.iter().chain(keys) {
            let want = restart_keys
                .iter()
                .position(|k| *k >= t)
                .unwrap_or(restart_keys.len());
            let got = fence.first_at_or_after(t, |i| restart_key(&data, layout, i));
            assert_eq!(got, want, "target {t:?}");
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
