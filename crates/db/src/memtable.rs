//! The writes of the live logs, sorted by internal key (LevelDB's `db/memtable`, read-only:
//! built once by replaying logs, then only read).

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::{
    InternalKeyComparator, LookupKey, LookupResult, MAX_SEQUENCE, ParsedInternalKey, ValueType,
    append_internal_key,
};
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// Writes collected in any order, then sorted by [`MemTableBuilder::build`].
#[derive(Debug)]
pub struct MemTableBuilder {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
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
            entries: Vec::new(),
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
        let mut ikey = Vec::with_capacity(key.len() + 8);
        append_internal_key(&mut ikey, key, sequence, value_type)?;
        self.bytes += ikey.len() + value.len();
        self.entries.push((ikey, value.to_vec()));
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

    /// Bytes of keys and values added.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Versions added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Sorts the writes under `comparator`'s internal order. Of two writes with the same
    /// internal key, the later one wins, as LevelDB's skiplist finds it first.
    pub fn build(mut self, comparator: Arc<dyn Comparator>) -> MemTable {
        let icmp = InternalKeyComparator::new(comparator);
        // A stable sort keeps equal keys in insertion order; keep the last of each run.
        self.entries.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(self.entries.len());
        for entry in self.entries {
            match entries.last_mut() {
                Some(last) if icmp.compare(&last.0, &entry.0) == Ordering::Equal => *last = entry,
                _ => entries.push(entry),
            }
        }
        let prefixes = Prefixes::build(&entries, &icmp);
        MemTable {
            entries,
            prefixes,
            icmp,
            bytes: self.bytes,
        }
    }
}

/// The 8 bytes of `view` after `skip`, zero-padded, as a big-endian number. Over views
/// sharing their first `skip` bytes, a smaller number means a smaller view, hence (see
/// [`Comparator::bytewise_view`]) a smaller key.
#[inline]
fn prefix_at(view: &[u8], skip: usize) -> u64 {
    let rest = view.get(skip..).unwrap_or_default();
    let mut buf = [0u8; 8];
    let n = rest.len().min(8);
    buf[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(buf)
}

/// Per entry, 8 bytes of its key's bytewise view after the prefix all views share: a
/// lookup searches these in place and compares keys only where they tie, instead of
/// following a pointer to a key at every step.
#[derive(Debug)]
struct Prefixes {
    common: Vec<u8>,
    prefixes: Vec<u64>,
}

impl Prefixes {
    /// `None` if the comparator has no bytewise view of a key.
    fn build(entries: &[(Vec<u8>, Vec<u8>)], icmp: &InternalKeyComparator) -> Option<Prefixes> {
        let views: Option<Vec<&[u8]>> =
            entries.iter().map(|(k, _)| icmp.bytewise_view(k)).collect();
        let views = views?;
        // Sorted, so what the first and last views share, all share.
        let (first, last) = (views.first()?, views.last()?);
        let n = first.iter().zip(*last).take_while(|(a, b)| a == b).count();
        let common = first[..n].to_vec();
        let prefixes = views.iter().map(|v| prefix_at(v, n)).collect();
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
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// For lookups, if the comparator has a bytewise view.
    prefixes: Option<Prefixes>,
    icmp: InternalKeyComparator,
    bytes: usize,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.entries.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl MemTable {
    /// The number of versions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of keys and values.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes
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
        let Some((key, value)) = self.entries.get(i) else {
            return Ok(LookupResult::NotFound);
        };
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

    /// Whether the internal key `key` sorts before `target`.
    fn below(&self, key: &[u8], target: &[u8]) -> bool {
        self.icmp.compare(key, target) == Ordering::Less
    }

    /// The run of entries whose view has the same 8-byte prefix as `target`'s, if the
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
        let below = |(k, _): &(Vec<u8>, Vec<u8>)| self.below(k, target);
        match run {
            Some((lo, hi)) => lo + self.entries[lo..hi].partition_point(below),
            None => self.entries.partition_point(below),
        }
    }

    /// The index of the first entry whose key is `>= target`.
    #[cfg(test)]
    fn first_at_or_after(&self, target: &[u8]) -> usize {
        self.search(target, self.prefix_run(target))
    }

    /// The entries within internal-key bounds.
    pub fn range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> &[(Vec<u8>, Vec<u8>)] {
        let cmp = |k: &[u8], b: &[u8]| self.icmp.compare(k, b);
        let start = match lo {
            Bound::Unbounded => 0,
            Bound::Included(b) => self
                .entries
                .partition_point(|(k, _)| cmp(k, b) == Ordering::Less),
            Bound::Excluded(b) => self
                .entries
                .partition_point(|(k, _)| cmp(k, b) != Ordering::Greater),
        };
        let end = match hi {
            Bound::Unbounded => self.entries.len(),
            Bound::Included(b) => self
                .entries
                .partition_point(|(k, _)| cmp(k, b) != Ordering::Greater),
            Bound::Excluded(b) => self
                .entries
                .partition_point(|(k, _)| cmp(k, b) == Ordering::Less),
        };
        self.entries.get(start..end.max(start)).unwrap_or(&[])
    }

    /// Every entry in internal-key order.
    pub fn entries(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.entries
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
                    .entries
                    .partition_point(|(k, _)| m.icmp.compare(k, &target) == Ordering::Less);
                assert_eq!(m.first_at_or_after(&target), want, "{u:?} @ {seq}");
                // The lookup, which decides misses from the prefixes alone, agrees with
                // the entry the plain search finds.
                let decided = match m.entries.get(want) {
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
