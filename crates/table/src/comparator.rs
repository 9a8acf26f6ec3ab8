//! Key orderings.
//!
//! A table's entries, its index separators and every seek follow one [`Comparator`]. The
//! comparator's [`name`](Comparator::name) identifies the ordering; LevelDB refuses to open a
//! database whose comparator name changed, and readers here use the name to pick a fast path
//! for [`BytewiseComparator`].

use std::cmp::Ordering;

/// A total order on keys, plus the two key-shortening hooks LevelDB's table builder uses to
/// keep index blocks small.
///
/// The trait is object safe; options hold an `Arc<dyn Comparator>`.
pub trait Comparator: Send + Sync {
    /// The ordering's name, e.g. `leveldb.BytewiseComparator`. Two comparators with the same
    /// name must order every pair of keys the same way.
    fn name(&self) -> &str;

    /// Orders `a` and `b`.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// If `start < limit`, may change `start` into a shorter key in `[start, limit)`.
    /// Leaving `start` unchanged is always correct.
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]);

    /// May change `key` into a short key `>= key`. Leaving `key` unchanged is always correct.
    fn find_short_successor(&self, key: &mut Vec<u8>);

    /// A part of `key` whose bytewise order never contradicts this ordering: whenever
    /// `bytewise_view(a) < bytewise_view(b)` bytewise, `compare(a, b)` is `Less`. Equal views
    /// say nothing. Readers search with 8-byte prefixes of the views (a few compares per
    /// cache line instead of a dependent load per halving) and call
    /// [`compare`](Self::compare) only on ties.
    ///
    /// [`BytewiseComparator`] returns the whole key; an ordering of keys that carry a suffix
    /// after a bytewise-ordered part (LevelDB's internal keys) returns that part. Default:
    /// `None`, no such view, and readers search with [`compare`](Self::compare) alone.
    fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        let _ = key;
        None
    }
}

impl<C: Comparator + ?Sized> Comparator for &C {
    #[inline]
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        (**self).compare(a, b)
    }
    #[inline]
    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        (**self).find_shortest_separator(start, limit)
    }
    #[inline]
    fn find_short_successor(&self, key: &mut Vec<u8>) {
        (**self).find_short_successor(key)
    }
    #[inline]
    fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        (**self).bytewise_view(key)
    }
}

/// Orders `a` and `b` as `a.cmp(b)` does (unsigned bytes, then length), comparing keys of
/// up to 32 common bytes inline, eight bytes at a time, instead of through a call to
/// `memcmp`: a scan or a block search compares short keys millions of times, and a call's
/// dispatch costs more than the few loads these need.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (x, y) = (&a[..n], &b[..n]);
    let common = if n > 32 {
        x.cmp(y)
    } else {
        compare_short(x, y)
    };
    common.then(a.len().cmp(&b.len()))
}

/// Orders two slices of the same length, at most 32.
#[inline]
fn compare_short(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len();
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            let o = be64(a, i).cmp(&be64(b, i));
            if o != Ordering::Equal {
                return o;
            }
            i += 8;
        }
        // The last eight bytes, overlapping ones already found equal.
        return be64(a, n - 8).cmp(&be64(b, n - 8));
    }
    if n >= 4 {
        // The first four bytes and the last four, overlapping when n < 8.
        let join = |s: &[u8]| (u64::from(be32(s, 0)) << 32) | u64::from(be32(s, n - 4));
        return join(a).cmp(&join(b));
    }
    a.cmp(b)
}

#[inline(always)]
fn be64(s: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[i..i + 8]);
    u64::from_be_bytes(w)
}

#[inline(always)]
fn be32(s: &[u8], i: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&s[i..i + 4]);
    u32::from_be_bytes(w)
}

/// The name of [`BytewiseComparator`], as LevelDB spells it.
pub const BYTEWISE_COMPARATOR_NAME: &str = "leveldb.BytewiseComparator";

/// Lexicographic order of unsigned bytes (`memcmp`, then length): LevelDB's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytewiseComparator;

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        BYTEWISE_COMPARATOR_NAME
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_bytes(a, b)
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
        if common >= start.len().min(limit.len()) {
            // One key is a prefix of the other: no shorter separator exists.
            return;
        }
        let byte = start[common];
        // Increment the first differing byte if it stays below limit's byte there; the
        // result is then > start (longer prefix bigger) and < limit.
        if byte < 0xff && byte + 1 < limit[common] {
            start[common] = byte + 1;
            start.truncate(common + 1);
        }
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        // Keep everything up to the first byte that is not 0xff, incremented. A key of only
        // 0xff bytes has no shorter successor and stays as it is.
        if let Some(i) = key.iter().position(|&b| b != 0xff) {
            key[i] += 1;
            key.truncate(i + 1);
        }
    }

    #[inline]
    fn bytewise_view<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        Some(key)
    }
}

/// Whether `cmp` is (by name) the bytewise ordering, so callers may use the monomorphic
/// [`BytewiseComparator`] instead of dynamic dispatch.
pub(crate) fn is_bytewise(cmp: &dyn Comparator) -> bool {
    cmp.name() == BYTEWISE_COMPARATOR_NAME
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sep(start: &[u8], limit: &[u8]) -> Vec<u8> {
        let mut s = start.to_vec();
        BytewiseComparator.find_shortest_separator(&mut s, limit);
        s
    }

    fn succ(key: &[u8]) -> Vec<u8> {
        let mut k = key.to_vec();
        BytewiseComparator.find_short_successor(&mut k);
        k
    }

    /// Every pair of lengths up to 40, differing at every position (and not at all), in
    /// either direction and with bytes whose order flips with a signed compare: the order
    /// of `a.cmp(b)`.
    #[test]
    fn compare_bytes_orders_as_slices_do() {
        let base: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for la in 0..=40 {
            for lb in 0..=40 {
                let (a, b) = (&base[..la], &base[..lb]);
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{la} {lb}");
                for at in 0..la.min(lb) {
                    for (x, y) in [(0x00, 0xff), (0x7f, 0x80), (b'a', b'b')] {
                        let (mut a, mut b) = (a.to_vec(), b.to_vec());
                        a[at] = x;
                        b[at] = y;
                        assert_eq!(compare_bytes(&a, &b), Ordering::Less, "{la} {lb} {at}");
                        assert_eq!(compare_bytes(&b, &a), Ordering::Greater, "{la} {lb} {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn separators_like_leveldb() {
        assert_eq!(sep(b"the quick brown fox", b"the who"), b"the r");
        assert_eq!(sep(b"abc", b"abd"), b"abc", "adjacent bytes cannot shorten");
        assert_eq!(sep(b"abc1", b"abd"), b"abc1");
        assert_eq!(sep(b"abc", b"abcd"), b"abc", "prefix: unchanged");
        assert_eq!(sep(b"abcd", b"abc"), b"abcd");
        assert_eq!(sep(b"a\xff\x01", b"b"), b"a\xff\x01", "a < b by one");
        assert_eq!(sep(b"a\xff\x01", b"c"), b"b");
        assert_eq!(sep(b"\xff\x00", b"\xff\x05"), b"\xff\x01");
        assert_eq!(sep(b"", b"a"), b"");
        assert_eq!(sep(b"foo", b"foo"), b"foo");
    }

    #[test]
    fn successors_like_leveldb() {
        assert_eq!(succ(b"abc"), b"b");
        assert_eq!(succ(b"\xff\xffa"), b"\xff\xffb");
        assert_eq!(succ(b"\xff\xff"), b"\xff\xff");
        assert_eq!(succ(b""), b"");
    }

    #[test]
    fn object_safe_and_named() {
        let c: std::sync::Arc<dyn Comparator> = std::sync::Arc::new(BytewiseComparator);
        assert!(is_bytewise(&*c));
        assert_eq!(c.compare(b"a", b"ab"), Ordering::Less);
        assert_eq!(
            c.compare(b"\x80", b"\x7f"),
            Ordering::Greater,
            "unsigned bytes"
        );
    }
}
