//! The memtable of a database open for writing (LevelDB's `db/memtable` over its skiplist):
//! one writer at a time inserts while any number of readers look up and scan, none of them
//! taking a lock. Entries are never removed; the memtable is dropped whole once flushed.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use crossbeam_skiplist::SkipSet;
use leveltable_table::{BytewiseComparator, Comparator};

use crate::dbformat::{
    InternalKeyComparator, LookupKey, LookupResult, MAX_SEQUENCE, ParsedInternalKey, TAG_LEN,
    ValueType, append_internal_key,
};
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

/// Bytes counted per entry beyond its key and value, as LevelDB's arena spends them on the
/// skiplist node, the tag and the length prefixes: memtables fill (and flush) at about the
/// number of entries LevelDB's do.
const ENTRY_OVERHEAD: usize = 32;

/// The order of internal keys: bytewise user keys statically, any other comparator through
/// its trait object.
#[derive(Clone)]
enum Order {
    Bytewise,
    User(Arc<InternalKeyComparator>),
}

impl Order {
    fn same_user_key(&self, a: &[u8], b: &[u8]) -> bool {
        match self {
            Order::Bytewise => a == b,
            Order::User(icmp) => icmp.user_comparator().compare(a, b) == Ordering::Equal,
        }
    }
}

/// Bytes of a user key kept in the entry itself.
const HEAD: usize = 16;

/// The first [`HEAD`] bytes of a user key, zero-padded, as a big-endian number: of two keys
/// whose heads differ, the smaller head is the smaller key (bytewise).
#[inline]
fn head_of(user_key: &[u8]) -> u128 {
    let mut head = [0u8; HEAD];
    let n = user_key.len().min(HEAD);
    head[..n].copy_from_slice(&user_key[..n]);
    u128::from_be_bytes(head)
}

/// A write batch of at least this many bytes is kept whole by the memtable, its entries'
/// values pointing into it, instead of being copied entry by entry: a large batch then costs
/// its bytes once (in the memtable), not twice (the batch and its copy).
pub const SHARED_BATCH_BYTES: usize = 1 << 20;

/// One version: its internal key and value in one allocation (or its key alone, its value in
/// a shared write batch), and, for bytewise order, the head of its user key and its tag
/// beside them, so that a search compares most entries without reading their key (one cache
/// miss a step instead of two).
struct Entry {
    data: Box<[u8]>,
    key_len: u32,
    user_len: u32,
    head: u128,
    tag: u64,
    order: Order,
    /// The write batch holding the value, when it is not in `data`: `data` then holds, after
    /// the key, where the value starts and ends in it (two little-endian u64s). So an entry
    /// takes no more room than one that holds its value.
    shared: Option<Arc<Vec<u8>>>,
}

impl Entry {
    fn from_data(data: Box<[u8]>, key_len: usize, order: &Order) -> Entry {
        let user_len = key_len.saturating_sub(TAG_LEN);
        let tag = data
            .get(user_len..key_len)
            .and_then(|t| <[u8; 8]>::try_from(t).ok())
            .map_or(0, u64::from_le_bytes);
        Entry {
            head: head_of(&data[..user_len]),
            // Keys and values are shorter than 4 GiB (their lengths are 32-bit in a batch).
            key_len: key_len as u32,
            user_len: user_len as u32,
            tag,
            data,
            order: order.clone(),
            shared: None,
        }
    }

    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn user_key(&self) -> &[u8] {
        &self.data[..self.user_len as usize]
    }

    fn value(&self) -> &[u8] {
        let rest = &self.data[self.key_len as usize..];
        match &self.shared {
            None => rest,
            Some(batch) => {
                let at = |i: usize| {
                    rest.get(i..i + 8)
                        .and_then(|b| <[u8; 8]>::try_from(b).ok())
                        .map_or(0, u64::from_le_bytes) as usize
                };
                batch.get(at(0)..at(8)).unwrap_or_default()
            }
        }
    }

    /// An entry holding only `key`, to search by.
    fn probe(key: &[u8], order: &Order) -> Entry {
        Entry::from_data(key.into(), key.len(), order)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match &self.order {
            Order::Bytewise => {
                if self.head != other.head {
                    return self.head.cmp(&other.head);
                }
                let users = if self.user_len as usize <= HEAD && other.user_len as usize <= HEAD {
                    // Equal heads of keys no longer than a head: equal up to zero padding.
                    self.user_len.cmp(&other.user_len)
                } else {
                    self.user_key().cmp(other.user_key())
                };
                // Larger tags (newer versions) first.
                users.then_with(|| other.tag.cmp(&self.tag))
            }
            Order::User(icmp) => icmp.compare(self.key(), other.key()),
        }
    }
}

/// Versions sorted by internal key, written by one writer at a time and read by many.
pub struct LiveMemTable {
    entries: SkipSet<Entry>,
    order: Order,
    bytes: AtomicUsize,
}

impl std::fmt::Debug for LiveMemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveMemTable")
            .field("entries", &self.entries.len())
            .field("bytes", &self.approximate_bytes())
            .finish()
    }
}

impl LiveMemTable {
    /// An empty memtable ordering user keys by `user`.
    pub fn new(user: &Arc<dyn Comparator>) -> LiveMemTable {
        let order = if user.name() == BytewiseComparator.name() {
            Order::Bytewise
        } else {
            Order::User(Arc::new(InternalKeyComparator::new(Arc::clone(user))))
        };
        LiveMemTable {
            entries: SkipSet::new(),
            order,
            bytes: AtomicUsize::new(0),
        }
    }

    /// Adds one version. Callers serialise their inserts (the database's write queue does).
    ///
    /// # Errors
    /// An invalid-argument error for a sequence number beyond 2^56 - 1.
    pub fn add(
        &self,
        sequence: u64,
        value_type: ValueType,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let mut data = Vec::with_capacity(key.len() + TAG_LEN + value.len());
        append_internal_key(&mut data, key, sequence, value_type)?;
        let key_len = data.len();
        data.extend_from_slice(value);
        let size = data.len() + ENTRY_OVERHEAD;
        self.entries.insert(Entry::from_data(
            data.into_boxed_slice(),
            key_len,
            &self.order,
        ));
        self.bytes.fetch_add(size, AtomicOrdering::Relaxed);
        Ok(())
    }

    /// Applies a write batch as LevelDB's `WriteBatchInternal::InsertInto`: operations get
    /// consecutive sequence numbers from the batch's.
    ///
    /// # Errors
    /// LevelDB's message for a malformed batch; the operations before it are applied.
    pub fn insert_batch(&self, batch: &WriteBatch<'_>) -> std::result::Result<(), &'static str> {
        let mut sequence = batch.sequence();
        batch.for_each(|op| {
            // As the read-only memtable: the top 8 bits of a sequence number beyond
            // 2^56 - 1 are lost, as LevelDB loses them; `add` cannot fail on the masked one.
            let _ = self.add(sequence & MAX_SEQUENCE, op.value_type, op.key, op.value);
            sequence = sequence.wrapping_add(1);
        })
    }

    /// Applies the write batch `rep` as [`insert_batch`](Self::insert_batch) does, keeping
    /// `rep` whole: the entries' values point into it rather than being copied (for a batch
    /// of [`SHARED_BATCH_BYTES`] or more, whose copy would double its cost in memory).
    ///
    /// # Errors
    /// As [`insert_batch`](Self::insert_batch).
    pub fn insert_shared_batch(&self, rep: Arc<Vec<u8>>) -> std::result::Result<(), &'static str> {
        let batch = WriteBatch::new(&rep)?;
        let base = rep.as_ptr() as usize;
        let mut sequence = batch.sequence();
        let mut bytes = rep.len();
        let applied = batch.for_each(|op| {
            let mut key = Vec::with_capacity(op.key.len() + TAG_LEN + 16);
            // As `insert_batch`: the masked sequence number cannot fail.
            if append_internal_key(&mut key, op.key, sequence & MAX_SEQUENCE, op.value_type).is_ok()
            {
                let key_len = key.len();
                // A value is a slice of `rep` (its place in it from its address); a deletion's
                // empty value is not, and needs no place.
                let start = (op.value.as_ptr() as usize).wrapping_sub(base);
                let end = start.wrapping_add(op.value.len());
                let shared = !op.value.is_empty() && start < end && end <= rep.len();
                if shared {
                    key.extend_from_slice(&(start as u64).to_le_bytes());
                    key.extend_from_slice(&(end as u64).to_le_bytes());
                } else {
                    key.extend_from_slice(op.value);
                    bytes += op.value.len();
                }
                bytes += key_len + ENTRY_OVERHEAD;
                let mut entry = Entry::from_data(key.into_boxed_slice(), key_len, &self.order);
                entry.shared = shared.then(|| Arc::clone(&rep));
                self.entries.insert(entry);
            }
            sequence = sequence.wrapping_add(1);
        });
        self.bytes.fetch_add(bytes, AtomicOrdering::Relaxed);
        applied
    }

    /// Bytes of keys, values and bookkeeping added: compared with `write_buffer_size`.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    /// The number of versions.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// What a lookup of `key` finds (LevelDB's `MemTable::Get`).
    ///
    /// # Errors
    /// None in practice: entries are built by [`add`](Self::add), so their keys parse.
    pub fn lookup(&self, key: &LookupKey) -> Result<LookupResult> {
        let probe = Entry::probe(key.target(), &self.order);
        let Some(found) = self.entries.lower_bound(Bound::Included(&probe)) else {
            return Ok(LookupResult::NotFound);
        };
        let entry = found.value();
        let parsed = ParsedInternalKey::parse(entry.key())
            .map_err(|e| Error::InvalidArgument(e.to_string().into()))?;
        if !self.order.same_user_key(parsed.user_key, key.user_key()) {
            return Ok(LookupResult::NotFound);
        }
        Ok(LookupResult::decided_by(&parsed, entry.value()))
    }

    /// Calls `push` with the entries within internal-key bounds, in order (or in reverse),
    /// until it returns `false`.
    pub fn visit_range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        push: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) {
        let probe = |b: Bound<&[u8]>| match b {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(k) => Bound::Included(Entry::probe(k, &self.order)),
            Bound::Excluded(k) => Bound::Excluded(Entry::probe(k, &self.order)),
        };
        let range = self.entries.range((probe(lo), probe(hi)));
        if forward {
            for e in range {
                let e = e.value();
                if !push(e.key(), e.value()) {
                    break;
                }
            }
        } else {
            for e in range.rev() {
                let e = e.value();
                if !push(e.key(), e.value()) {
                    break;
                }
            }
        }
    }

    /// Calls `f` with every entry in internal-key order (a flush).
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn try_for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        for e in self.entries.iter() {
            let e = e.value();
            f(e.key(), e.value())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::lookup_key;

    fn bytewise() -> LiveMemTable {
        LiveMemTable::new(&(Arc::new(BytewiseComparator) as Arc<dyn Comparator>))
    }

    #[test]
    fn lookups_see_the_newest_version_at_the_snapshot() {
        let m = bytewise();
        m.add(1, ValueType::Value, b"a", b"1").unwrap();
        m.add(2, ValueType::Value, b"a", b"2").unwrap();
        m.add(3, ValueType::Deletion, b"a", b"").unwrap();
        m.add(2, ValueType::Value, b"b", b"x").unwrap();
        let get = |k: &[u8], s| m.lookup(&LookupKey::new(k, s).unwrap()).unwrap();
        assert_eq!(get(b"a", 1).into_value(), Some(b"1".to_vec()));
        assert_eq!(get(b"a", 2).into_value(), Some(b"2".to_vec()));
        assert_eq!(get(b"a", 3), LookupResult::Deleted { sequence: 3 });
        assert_eq!(get(b"a", 0), LookupResult::NotFound);
        assert_eq!(get(b"ab", 9), LookupResult::NotFound);
        assert_eq!(get(b"b", 9).into_value(), Some(b"x".to_vec()));
        assert_eq!(m.len(), 4);
    }

    /// The entries' order (heads and tags kept beside the key) is the internal key order.
    #[test]
    fn entries_order_as_internal_keys() {
        let icmp = InternalKeyComparator::bytewise();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let keys: Vec<Vec<u8>> = (0..400)
            .map(|_| {
                let len = next(24) as usize;
                let mut user: Vec<u8> = (0..len)
                    .map(|_| [0u8, 1, b'a', 0xff][next(4) as usize])
                    .collect();
                if next(2) == 0 {
                    // Keys sharing their first 14 to 16 bytes, so heads tie.
                    let mut long = b"0000000000000000".to_vec();
                    long.truncate(14 + next(3) as usize);
                    long.extend_from_slice(&user[..len.min(4)]);
                    user = long;
                }
                let mut k = Vec::new();
                append_internal_key(&mut k, &user, next(4), ValueType::Value).unwrap();
                k
            })
            .collect();
        for a in &keys {
            for b in &keys {
                let ea = Entry::probe(a, &Order::Bytewise);
                let eb = Entry::probe(b, &Order::Bytewise);
                assert_eq!(ea.cmp(&eb), icmp.compare(a, b), "{a:?} {b:?}");
            }
        }
    }

    /// An entry whose value lies in a shared batch takes no more room than one holding its
    /// value: the memtable's memory per entry is what it was.
    #[test]
    fn entries_stay_at_64_bytes() {
        assert!(
            std::mem::size_of::<Entry>() <= 64,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    /// A batch kept whole reads as one copied: the same versions, values and deletions.
    #[test]
    fn a_shared_batch_reads_as_a_copied_one() {
        let mut b = crate::write_batch::WriteBatchBuilder::new(7);
        b.put(b"a", &[1u8; 3000])
            .delete(b"b")
            .put(b"c", b"")
            .put(b"a", b"again");
        let copied = bytewise();
        copied
            .insert_batch(&WriteBatch::new(b.as_bytes()).unwrap())
            .unwrap();
        let shared = bytewise();
        shared
            .insert_shared_batch(Arc::new(b.as_bytes().to_vec()))
            .unwrap();
        let all = |m: &LiveMemTable| {
            let mut v = Vec::new();
            m.try_for_each(|k, val| {
                v.push((k.to_vec(), val.to_vec()));
                Ok(())
            })
            .unwrap();
            v
        };
        assert_eq!(all(&shared), all(&copied));
        assert_eq!(all(&shared).len(), 4);
        let get = |k: &[u8]| shared.lookup(&LookupKey::new(k, 100).unwrap()).unwrap();
        assert_eq!(get(b"a").into_value(), Some(b"again".to_vec()));
        assert_eq!(get(b"b"), LookupResult::Deleted { sequence: 8 });
        assert_eq!(get(b"c").into_value(), Some(Vec::new()));
    }

    #[test]
    fn ranges_run_both_ways_within_bounds() {
        let m = bytewise();
        for (i, k) in [b"d", b"a", b"c", b"b"].iter().enumerate() {
            m.add(i as u64 + 1, ValueType::Value, *k, b"v").unwrap();
        }
        let lo = lookup_key(b"b", MAX_SEQUENCE).unwrap();
        let mut keys = Vec::new();
        m.visit_range(Bound::Included(&lo), Bound::Unbounded, true, &mut |k, _| {
            keys.push(k[0]);
            true
        });
        assert_eq!(keys, b"bcd");
        keys.clear();
        m.visit_range(
            Bound::Unbounded,
            Bound::Excluded(&lo),
            false,
            &mut |k, _| {
                keys.push(k[0]);
                true
            },
        );
        assert_eq!(keys, b"a");
    }

    #[test]
    fn readers_run_beside_the_writer() {
        let m = Arc::new(bytewise());
        let writer = {
            let m = Arc::clone(&m);
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    m.add(i + 1, ValueType::Value, &i.to_be_bytes(), b"v")
                        .unwrap();
                }
            })
        };
        let mut seen = 0;
        while seen < 20_000 {
            let mut n = 0;
            let mut last: Option<Vec<u8>> = None;
            m.visit_range(Bound::Unbounded, Bound::Unbounded, true, &mut |k, _| {
                if let Some(l) = &last {
                    assert!(l.as_slice() < k);
                }
                last = Some(k.to_vec());
                n += 1;
                true
            });
            assert!(n >= seen);
            seen = n;
        }
        writer.join().unwrap();
    }
}
