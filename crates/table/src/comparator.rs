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
        a.cmp(b)
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
