//! The writes of the live logs, sorted by internal key (LevelDB's `db/memtable`, read-only:
//! built once by replaying logs, then only read).
//!
//! Entries are kept one after another in one buffer (an arena, as LevelDB's memtable keeps
//! them), each a varint length, the internal key, a varint length and the value, and sorted
//! through an index of their offsets: a replayed log takes about its own size again, plus
//! 4 bytes per entry for the index and 4 for the lookup prefixes, not two allocations per
//! entry.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::coding::{get_varint64, put_varint64};
use crate::dbformat::{
    InternalKeyComparator, LookupKey, LookupResult, MAX_SEQUENCE, ParsedInternalKey, ValueType,
    pack_tag,
};
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// The offsets of entries in the arena: 4 bytes each while the arena is under 4 GiB.
#[derive(Debug)]
enum Index {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Index {
    fn push(&mut self, at: usize) {
        match self {
            Index::Narrow(v) => match u32::try_from(at) {
                Ok(at) => v.push(at),
                Err(_) => {
                    let mut wide: Vec<u64> = v.iter().map(|&o| u64::from(o)).collect();
                    wide.push(at as u64);
                    *self = Index::Wide(wide);
                }
            },
            Index::Wide(v) => v.push(at as u64),
        }
    }

    fn len(&self) -> usize {
        match self {
            Index::Narrow(v) => v.len(),
            Index::Wide(v) => v.len(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> usize {
        // Offsets were pushed from `usize` values.
        match self {
            Index::Narrow(v) => v[i] as usize,
            Index::Wide(v) => v[i] as usize,
        }
    }
}

/// Sorts the offsets `v` by the keys `cmp` compares; of equal keys only the one written
/// last (the largest offset) stays.
fn sort_newest_wins<T: Copy + Ord>(v: &mut Vec<T>, cmp: impl Fn(T, T) -> Ordering) {
    v.sort_unstable_by(|&a, &b| cmp(a, b).then(b.cmp(&a)));
    v.dedup_by(|later, kept| cmp(*later, *kept) == Ordering::Equal);
}

/// The entry at `at` of `arena`: internal key and value.
#[inline]
fn entry_at(arena: &[u8], at: usize) -> (&[u8], &[u8]) {
    // Entries were encoded by `MemTableBuilder::add`: the lengths decode and fit.
    let mut rest = &arena[at..];
    let klen = get_varint64(&mut rest).unwrap_or(0) as usize;
    let (key, mut rest) = rest.split_at(klen);
    let vlen = get_varint64(&mut rest).unwrap_or(0) as usize;
    (key, &rest[..vlen])
}

/// Writes collected in any order, then sorted by [`MemTableBuilder::build`].
#[derive(Debug)]
pub struct MemTableBuilder {
    arena: Vec<u8>,
    index: Index,
    bytes: usize,
}

impl Default for MemTableBuilder {
    fn default() -> Self {
        MemTableBuilder::new()
    }
}

impl MemTableBuilder {
    /// An empty memtable.
    pub fn new() -> Self {
        MemTableBuilder {
            arena: Vec::new(),
            index: Index::Narrow(Vec::new()),
            bytes: 0,
        }
    }

    /// Adds one version (LevelDB's `MemTable::Add`).
    ///
    /// # Errors
    /// an invalid-argument error for a sequence number beyond 2^56 - 1.
    pub fn add(
        &mut self,
        sequence: u64,
        value_type: ValueType,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let tag = pack_tag(sequence, value_type)?;
        let at = self.arena.len();
        put_varint64(&mut self.arena, key.len() as u64 + 8);
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(&tag.to_le_bytes());
        put_varint64(&mut self.arena, value.len() as u64);
        self.arena.extend_from_slice(value);
        self.index.push(at);
        self.bytes += key.len() + 8 + value.len();
        Ok(())
    }

    /// Applies a write batch as LevelDB's `WriteBatchInternal::InsertInto`: operations get
    /// consecutive sequence numbers from the batch's; those before a malformed operation
    /// are kept.
    ///
    /// # Errors
    /// LevelDB's message for a malformed batch (see [`WriteBatch::for_each`]).
    pub fn insert_batch(
        &mut self,
        batch: &WriteBatch<'_>,
    ) -> std::result::Result<(), &'static str> {
        let mut sequence = batch.sequence();
        batch.for_each(|op| {
            // LevelDB packs `sequence << 8 | type` into 64 bits: the top 8 bits of a sequence
            // number beyond 2^56 - 1 are lost, and so they are here. `add` cannot fail on
            // the masked number.
            let _ = self.add(sequence & MAX_SEQUENCE, op.value_type, op.key, op.value);
            sequence = sequence.wrapping_add(1);
        })
    }

    /// Versions added.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Sorts the writes under `comparator`'s internal order. Of two writes with the same
    /// internal key, the later one wins, as LevelDB's skiplist finds it first.
    pub fn build(self, comparator: Arc<dyn Comparator>) -> MemTable {
        let icmp = InternalKeyComparator::new(comparator);
        let MemTableBuilder {
            mut arena,
            mut index,
            bytes,
        } = self;
        arena.shrink_to_fit();
        {
            let arena = &arena;
            let key = |at: usize| entry_at(arena, at).0;
            match &mut index {
                Index::Narrow(v) => {
                    sort_newest_wins(v, |a, b| icmp.compare(key(a as usize), key(b as usize)));
                    v.shrink_to_fit();
                }
                Index::Wide(v) => {
                    sort_newest_wins(v, |a, b| icmp.compare(key(a as usize), key(b as usize)));
                    v.shrink_to_fit();
                }
            }
        }
        let mut table = MemTable {
            arena,
            index,
            prefixes: None,
            icmp,
            bytes,
        };
        table.prefixes = Prefixes::build(&table);
        table
    }
}

/// The 4 bytes of `view` after `skip`, zero-padded, as a big-endian number. Over views
/// sharing their first `skip` bytes, a smaller number means a smaller view, hence (see
/// [`Comparator::bytewise_view`]) a smaller key.
#[inline]
fn prefix_at(view: &[u8], skip: usize) -> u32 {
    let rest = view.get(skip..).unwrap_or_default();
    let mut buf = [0u8; 4];
    let n = rest.len().min(4);
    buf[..n].copy_from_slice(&rest[..n]);
    u32::from_be_bytes(buf)
}

/// Per entry, 4 bytes of its key's bytewise view after the prefix all views share: a
/// lookup searches these in place and compares keys only where they tie, instead of
/// following a pointer to a key at every step.
#[derive(Debug)]
struct Prefixes {
    common: Vec<u8>,
    prefixes: Vec<u32>,
}

impl Prefixes {
    /// `None` if the comparator has no bytewise view of a key.
    fn build(table: &MemTable) -> Option<Prefixes> {
        let icmp = &table.icmp;
        let (first, last) = (table.first()?.0, table.last()?.0);
        let (first, last) = (icmp.bytewise_view(first)?, icmp.bytewise_view(last)?);
        // Sorted, so what the first and last views share, all share.
        let n = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let common = first[..n].to_vec();
        let mut prefixes = Vec::with_capacity(table.len());
        for (k, _) in table.entries() {
            prefixes.push(prefix_at(icmp.bytewise_view(k)?, n));
        }
        Some(Prefixes { common, prefixes })
    }

    /// The range of entries that may hold the first key `>= target` (given its view):
    /// entries before it sort before the target, entries after it at or after.
    fn candidates(&self, view: &[u8]) -> (usize, usize) {
        let len = self.prefixes.len();
        let c = self.common.len();
        let head = &view[..view.len().min(c)];
        match head.cmp(&self.common[..head.len()]) {
            Ordering::Less => return (0, 0),
            Ordering::Greater => return (len, len),
            // A view shorter than the common prefix, and a prefix of it, sorts first.
            Ordering::Equal if view.len() < c => return (0, 0),
            Ordering::Equal => {}
        }
        let t = prefix_at(view, c);
        let lo = self.prefixes.partition_point(|&p| p < t);
        let hi = lo + self.prefixes[lo..].partition_point(|&p| p == t);
        (lo, hi)
    }
}

/// Versions sorted by internal key.
pub struct MemTable {
    arena: Vec<u8>,
    /// The entries' offsets in the arena, in internal-key order.
    index: Index,
    /// For lookups, if the comparator has a bytewise view.
    prefixes: Option<Prefixes>,
    icmp: InternalKeyComparator,
    bytes: usize,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Entries of a [`MemTable`] in internal-key order (or reversed): internal key and value.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    table: &'a MemTable,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        Some(self.table.entry(self.next - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Entries<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.next == self.end {
            return None;
        }
        self.end -= 1;
        Some(self.table.entry(self.end))
    }
}

impl ExactSizeIterator for Entries<'_> {}

impl std::iter::FusedIterator for Entries<'_> {}

impl MemTable {
    /// The number of versions.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th entry in internal-key order: internal key and value.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline]
    pub fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        entry_at(&self.arena, self.index.get(i))
    }

    /// The entry with the smallest internal key.
    pub fn first(&self) -> Option<(&[u8], &[u8])> {
        (!self.is_empty()).then(|| self.entry(0))
    }

    /// The entry with the largest internal key.
    pub fn last(&self) -> Option<(&[u8], &[u8])> {
        self.len().checked_sub(1).map(|i| self.entry(i))
    }

    /// The newest version of `user_key` at or below `sequence` (LevelDB's `MemTable::Get`).
    ///
    /// # Errors
    /// an invalid-argument error if `sequence` exceeds 2^56 - 1.
    pub fn get_at(&self, user_key: &[u8], sequence: u64) -> Result<LookupResult> {
        self.lookup(&LookupKey::new(user_key, sequence)?)
    }

    /// [`get_at`](Self::get_at) with the keys of the lookup built by the caller.
    ///
    /// # Errors
    /// an invalid-argument error if the deciding entry's key does not parse (entries come
    /// from [`MemTableBuilder::add`], which builds them, so none should).
    pub fn lookup(&self, key: &LookupKey) -> Result<LookupResult> {
        let user_key = key.user_key();
        let target = key.target();
        let run = self.prefix_run(target);
        if run.is_some_and(|(lo, hi)| lo == hi) {
            // No entry's view has the target's prefix, so no entry's view equals the
            // target's, and different views mean different user keys: decided without
            // following a pointer to any entry's key.
            return Ok(LookupResult::NotFound);
        }
        let i = self.search(target, run);
        if i >= self.len() {
            return Ok(LookupResult::NotFound);
        }
        let (key, value) = self.entry(i);
        // Keys were built by `add`, so they parse.
        let parsed = ParsedInternalKey::parse(key)
            .map_err(|e| Error::InvalidArgument(e.to_string().into()))?;
        if self
            .icmp
            .user_comparator()
            .compare(parsed.user_key, user_key)
            != Ordering::Equal
        {
            return Ok(LookupResult::NotFound);
        }
        Ok(LookupResult::decided_by(&parsed, value))
    }

    /// The first index in `lo..hi` whose entry's key `pred` is false for (`pred` is true
    /// for a prefix of the range, false for the rest).
    fn partition_point(&self, lo: usize, hi: usize, pred: impl Fn(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.entry(mid).0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The run of entries whose view has the same 4-byte prefix as `target`'s, if the
    /// comparator has views: entries before it sort before the target, entries after it
    /// after. Only the run needs the comparator.
    fn prefix_run(&self, target: &[u8]) -> Option<(usize, usize)> {
        Some(
            self.prefixes
                .as_ref()?
                .candidates(self.icmp.bytewise_view(target)?),
        )
    }

    /// The index of the first entry whose key is `>= target`, given the target's
    /// [`prefix_run`](Self::prefix_run).
    fn search(&self, target: &[u8], run: Option<(usize, usize)>) -> usize {
        let below = |k: &[u8]| self.icmp.compare(k, target) == Ordering::Less;
        let (lo, hi) = run.unwrap_or((0, self.len()));
        self.partition_point(lo, hi, below)
    }

    /// The index of the first entry whose key is `>= target`.
    #[cfg(test)]
    fn first_at_or_after(&self, target: &[u8]) -> usize {
        self.search(target, self.prefix_run(target))
    }

    /// The entries within internal-key bounds.
    pub fn range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Entries<'_> {
        let cmp = |k: &[u8], b: &[u8]| self.icmp.compare(k, b);
        let len = self.len();
        let start = match lo {
            Bound::Unbounded => 0,
            Bound::Included(b) => self.partition_point(0, len, |k| cmp(k, b) == Ordering::Less),
            Bound::Excluded(b) => self.partition_point(0, len, |k| cmp(k, b) != Ordering::Greater),
        };
        let end = match hi {
            Bound::Unbounded => len,
            Bound::Included(b) => self.partition_point(0, len, |k| cmp(k, b) != Ordering::Greater),
            Bound::Excluded(b) => self.partition_point(0, len, |k| cmp(k, b) == Ordering::Less),
        };
        Entries {
            table: self,
            next: start,
            end: end.max(start),
        }
    }

    /// Every entry in internal-key order.
    pub fn entries(&self) -> Entries<'_> {
        Entries {
            table: self,
            next: 0,
            end: self.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::{extract_user_key, lookup_key};
    use crate::write_batch::WriteBatchBuilder;
    use leveltable_table::BytewiseComparator;

    #[test]
    fn newest_at_or_below_the_snapshot() {
        let mut b = MemTableBuilder::new();
        let mut batch = WriteBatchBuilder::new(10);
        batch.put(b"k", b"v10").delete(b"k").put(b"j", b"j12");
        b.insert_batch(&WriteBatch::new(batch.as_bytes()).unwrap())
            .unwrap();
        b.add(5, ValueType::Value, b"k", b"v5").unwrap();
        let m = b.build(Arc::new(BytewiseComparator));
        assert_eq!(m.len(), 4);
        assert_eq!(
            m.get_at(b"k", 100).unwrap(),
            LookupResult::Deleted { sequence: 11 }
        );
        assert_eq!(
            m.get_at(b"k", 10).unwrap().into_value(),
            Some(b"v10".to_vec())
        );
        assert_eq!(
            m.get_at(b"k", 9).unwrap().into_value(),
            Some(b"v5".to_vec())
        );
        assert_eq!(m.get_at(b"k", 4).unwrap(), LookupResult::NotFound);
        assert_eq!(m.get_at(b"i", 100).unwrap(), LookupResult::NotFound);
        assert_eq!(m.get_at(b"z", 100).unwrap(), LookupResult::NotFound);
        let k = lookup_key(b"k", 100).unwrap();
        assert_eq!(m.range(Bound::Included(&k), Bound::Unbounded).len(), 3);
        assert_eq!(m.range(Bound::Excluded(&k), Bound::Excluded(&k)).len(), 0);
    }

    #[test]
    fn a_later_write_of_the_same_internal_key_wins() {
        let mut b = MemTableBuilder::new();
        b.add(3, ValueType::Value, b"k", b"first").unwrap();
        b.add(3, ValueType::Value, b"k", b"second").unwrap();
        let m = b.build(Arc::new(BytewiseComparator));
        assert_eq!(m.len(), 1);
        assert_eq!(
            m.get_at(b"k", 3).unwrap().into_value(),
            Some(b"second".to_vec())
        );
        // Past 2^56 - 1, sequence numbers lose their top bits, as in LevelDB's tags.
        let mut b = MemTableBuilder::new();
        let mut batch = WriteBatchBuilder::new(MAX_SEQUENCE);
        batch.put(b"a", b"").put(b"b", b"");
        b.insert_batch(&WriteBatch::new(batch.as_bytes()).unwrap())
            .unwrap();
        let m = b.build(Arc::new(BytewiseComparator));
        let a = m.get_at(b"a", MAX_SEQUENCE).unwrap();
        assert_eq!(
            a,
            LookupResult::Value {
                sequence: MAX_SEQUENCE,
                value: Vec::new()
            }
        );
        let b = m.get_at(b"b", 0).unwrap();
        assert_eq!(
            b,
            LookupResult::Value {
                sequence: 0,
                value: Vec::new()
            }
        );
    }

    /// The prefix search finds what a plain binary search with the comparator finds, for
    /// keys sharing long prefixes, keys that are prefixes of others, zero bytes and every
    /// snapshot; and a comparator without a view falls back to the plain search.
    #[test]
    fn prefix_search_agrees_with_binary_search() {
        let users: Vec<Vec<u8>> = [&b""[..], b"a", b"a\x00", b"ab", b"abcdefgh", b"abcdefghi"]
            .iter()
            .map(|u| u.to_vec())
            .chain((0..200).map(|i| format!("{:016}", i * 7 % 150).into_bytes()))
            .collect();
        let mut b = MemTableBuilder::new();
        for (seq, u) in users.iter().enumerate() {
            let t = if seq % 5 == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            b.add(seq as u64 + 1, t, u, format!("v{seq}").as_bytes())
                .unwrap();
        }
        let m = b.build(Arc::new(BytewiseComparator));
        assert!(m.prefixes.is_some());
        let probes = users.iter().cloned().chain([
            b"0".to_vec(),
            b"0000000000000005".to_vec(),
            b"00000000000001499".to_vec(),
            b"1".to_vec(),
            b"\xff".to_vec(),
        ]);
        for u in probes {
            for seq in [0, 1, 50, 100, 150, 250, MAX_SEQUENCE] {
                let target = lookup_key(&u, seq).unwrap();
                let want = m
                    .entries()
                    .collect::<Vec<_>>()
                    .partition_point(|(k, _)| m.icmp.compare(k, &target) == Ordering::Less);
                assert_eq!(m.first_at_or_after(&target), want, "{u:?} @ {seq}");
                // The lookup, which decides misses from the prefixes alone, agrees with
                // the entry the plain search finds.
                let decided = match m.entries().nth(want) {
                    Some((k, v)) if extract_user_key(k) == Some(&u[..]) => {
                        LookupResult::decided_by(&ParsedInternalKey::parse(k).unwrap(), v)
                    }
                    _ => LookupResult::NotFound,
                };
                assert_eq!(m.get_at(&u, seq).unwrap(), decided, "{u:?} @ {seq}");
            }
        }
    }
}
