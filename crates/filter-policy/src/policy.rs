use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// Summarises a set of keys into a small filter that answers "may this key be in the set?".
///
/// A table builder calls [`create_filter`](Self::create_filter) once per filter with the keys
/// of the data blocks it covers; a reader calls [`key_may_match`](Self::key_may_match) before
/// reading a data block. A filter may answer `true` for keys that were never added (a false
/// positive) but must answer `true` for every key that was (no false negatives).
///
/// The trait is object safe: `Arc<dyn FilterPolicy>` is itself a `FilterPolicy`.
pub trait FilterPolicy: Send + Sync {
    /// The policy's name, stored in a table's metaindex as `filter.<name>`.
    ///
    /// A reader applies a filter only under the name of the policy that made it, so change
    /// the name whenever the encoding changes incompatibly.
    fn name(&self) -> &str;

    /// Appends a filter summarising `keys` to `dst`.
    ///
    /// Bytes already in `dst` are left untouched. `keys` may contain duplicates and may be
    /// empty.
    fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>);

    /// Returns `false` only if `key` was certainly not among the keys `filter` was made from.
    ///
    /// `filter` may be any bytes, including bytes not made by this policy: a malformed filter
    /// must never cause a panic, and should answer `true` where it cannot decide.
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool;

    /// Appends to `out` one answer per key of `keys`, in order: what
    /// [`key_may_match`](Self::key_may_match) answers for that key against `filter`.
    ///
    /// A policy may answer many queries faster than one at a time (the Bloom policy issues
    /// the memory reads of several keys together, so their cache misses overlap). The default
    /// asks `key_may_match` for each key. Bytes already in `out` are left untouched.
    fn keys_may_match(&self, keys: &[&[u8]], filter: &[u8], out: &mut Vec<bool>) {
        out.extend(keys.iter().map(|key| self.key_may_match(key, filter)));
    }
}

macro_rules! forward_filter_policy {
    ($($ptr:ty),*) => {$(
        impl<P: FilterPolicy + ?Sized> FilterPolicy for $ptr {
            #[inline]
            fn name(&self) -> &str {
                (**self).name()
            }

            #[inline]
            fn create_filter(&self, keys: &[&[u8]], dst: &mut Vec<u8>) {
                (**self).create_filter(keys, dst)
            }

            #[inline]
            fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
                (**self).key_may_match(key, filter)
            }

            #[inline]
            fn keys_may_match(&self, keys: &[&[u8]], filter: &[u8], out: &mut Vec<bool>) {
                (**self).keys_may_match(keys, filter, out)
            }
        }
    )*};
}

forward_filter_policy!(&P, Box<P>, Arc<P>);
