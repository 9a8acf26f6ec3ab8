//! Applying a write batch to a memtable (LevelDB's `WriteBatchInternal::InsertInto`): its
//! operations get consecutive sequence numbers from the batch's.
//!
//! A batch of many operations on a bytewise memtable is sorted by internal key first, and
//! its versions go in [`GUIDED_WINDOW`] at a time: the window's searches run first, several
//! at once (each one's next node fetched while the others compare theirs, so that their
//! cache misses overlap: [`LiveMemTable::find_all_before`]), against the memtable as it is
//! before the window; each version is then linked after the nodes its search found, or after
//! the version inserted just before it where that one lies between (a [`Cursor`]), with no
//! search of its own. (After a version replaces a node, the window's later versions search
//! for themselves, from where the one before was linked: a [`Splice`], as RocksDB's
//! skiplist keeps one.) Readers see no difference: a batch's versions are visible only once
//! its last sequence number is, whatever order they went in. Under a user's comparator the
//! operations go in as they come, each search from the top (a comparator that is no total
//! order must not stop a sort).

use std::sync::Arc;

use super::{LiveMemTable, MAX_HEIGHT, Order, Place, Probe, bump, leveldb_entry_bytes};
use crate::dbformat::{MAX_SEQUENCE, pack_tag};
use crate::write_batch::{BatchOp, WriteBatch};

/// A batch of at least this many operations is sorted before it is inserted.
const SORTED_MIN_OPS: u32 = 16;

/// Versions of a sorted batch whose searches run together before they are linked.
const GUIDED_WINDOW: usize = 256;

/// Where the last version was inserted: on each level, the last node before it (the new
/// node itself on its own levels). A search for a version sorting after it starts there
/// ([`LiveMemTable::find_from_splice`]).
pub(super) struct Splice {
    pub(super) prev: [u32; MAX_HEIGHT],
    /// The guide the version was inserted by, if any.
    pub(super) origin: Option<[u32; MAX_HEIGHT]>,
}

/// What one insert of a group leaves the next: where it linked its version, and the next
/// version's guide, if its window's searches found one.
///
/// A guide is, on every level, the last node before the version in the memtable as it was
/// before the window's first insert. The versions of a window go in in order, so on a
/// level where the next version's guide is the last version's origin, no node of that
/// memtable lies between the two, and the last node before the next version is the last
/// one's splice node; where the guides differ, the next version's guide lies after the last
/// version (every node of that memtable after the last one's origin does), and so after
/// every version inserted before it: it is the last node before the next version.
#[derive(Default)]
pub(super) struct Cursor {
    pub(super) splice: Option<Splice>,
    pub(super) guide: Option<[u32; MAX_HEIGHT]>,
}

impl Cursor {
    /// The last node before the guided version on every level, if it has a guide.
    pub(super) fn guided_prev(&self) -> Option<[u32; MAX_HEIGHT]> {
        let guide = self.guide.as_ref()?;
        let mut prev = *guide;
        if let Some(Splice {
            prev: last,
            origin: Some(origin),
        }) = &self.splice
        {
            for level in 0..MAX_HEIGHT {
                if origin[level] == guide[level] {
                    prev[level] = last[level];
                }
            }
        }
        Some(prev)
    }
}

impl LiveMemTable {
    /// Applies a write batch (copying its keys and values into the memtable).
    ///
    /// # Errors
    /// LevelDB's message for a malformed batch, or a memtable that is full; the operations
    /// before it are applied.
    pub(crate) fn insert_batch(
        &self,
        batch: &WriteBatch<'_>,
    ) -> std::result::Result<(), &'static str> {
        let mut full = false;
        let malformed = self.for_each_in_order(batch, |tag, op, cursor| {
            if !full && self.add_tagged(tag, op.key, op.value, cursor).is_err() {
                full = true;
            }
        });
        malformed?;
        if full {
            return Err("memtable full");
        }
        Ok(())
    }

    /// Applies the write batch `rep` as [`insert_batch`](Self::insert_batch) does, keeping
    /// `rep` whole: the entries' keys and values point into it rather than being copied (for
    /// a batch of [`SHARED_BATCH_BYTES`](super::SHARED_BATCH_BYTES) or more, whose copy
    /// would double its cost in memory).
    ///
    /// # Errors
    /// As [`insert_batch`](Self::insert_batch).
    pub(crate) fn insert_shared_batch(
        &self,
        rep: Arc<Vec<u8>>,
    ) -> std::result::Result<(), &'static str> {
        let batch = WriteBatch::new(&rep)?;
        let base = rep.as_ptr() as usize;
        let within = |s: &[u8]| {
            let start = (s.as_ptr() as usize).wrapping_sub(base);
            (start <= rep.len() && s.len() <= rep.len() - start)
                .then(|| u32::try_from(start).ok())
                .flatten()
        };
        let Ok(buffer) = self.keep_outside(Arc::clone(&rep)) else {
            return Err("memtable full");
        };
        let mut bytes = 0;
        let mut full = false;
        let malformed = self.for_each_in_order(&batch, |tag, op, cursor| {
            // Keys and values are slices of `rep` (their places in it from their
            // addresses); a deletion's empty value needs no place.
            let place = match (within(op.key), within(op.value)) {
                (Some(key), Some(value)) => Place::Outside { buffer, key, value },
                (Some(key), None) if op.value.is_empty() => Place::Outside {
                    buffer,
                    key,
                    value: 0,
                },
                _ => Place::Inline(op.value),
            };
            if !full
                && self
                    .insert(op.key, tag, op.value.len(), place, cursor)
                    .is_err()
            {
                full = true;
            }
            bytes += leveldb_entry_bytes(op.key.len(), op.value.len());
        });
        bump(&self.bytes, bytes);
        malformed?;
        if full {
            return Err("memtable full");
        }
        Ok(())
    }

    /// Calls `insert` with each operation of `batch` and its tag, and the cursor the
    /// inserts share: sorted by internal key and guided when the batch is large and the
    /// order bytewise, else in the batch's order. A malformed batch's operations before the
    /// malformed one are given, then its error returned.
    fn for_each_in_order<'a>(
        &self,
        batch: &WriteBatch<'a>,
        mut insert: impl FnMut(u64, BatchOp<'a>, &mut Cursor),
    ) -> std::result::Result<(), &'static str> {
        // As the read-only memtable: the top 8 bits of a sequence number beyond 2^56 - 1
        // are lost, as LevelDB loses them; the masked one always packs.
        let mut sequence = batch.sequence();
        let mut next_tag = |op: &BatchOp<'_>| {
            let tag = pack_tag(sequence & MAX_SEQUENCE, op.value_type).unwrap_or_default();
            sequence = sequence.wrapping_add(1);
            tag
        };
        if batch.count() < SORTED_MIN_OPS || !matches!(self.order, Order::Bytewise) {
            return batch.for_each(|op| insert(next_tag(&op), op, &mut Cursor::default()));
        }
        // The count is the batch's claim: the vector grows with the operations found.
        let mut ops = Vec::with_capacity(batch.count().min(4096) as usize);
        let malformed = batch.for_each(|op| ops.push((next_tag(&op), op)));
        // User keys in order, then newer versions (larger tags) first.
        ops.sort_unstable_by(|(ta, a), (tb, b)| a.key.cmp(b.key).then(tb.cmp(ta)));
        let mut probes = Vec::with_capacity(GUIDED_WINDOW.min(ops.len()));
        let mut guides = Vec::with_capacity(GUIDED_WINDOW.min(ops.len()));
        for window in ops.chunks(GUIDED_WINDOW) {
            probes.clear();
            probes.extend(window.iter().map(|&(tag, op)| Probe { user: op.key, tag }));
            if let Some(filter) = self.filter.get() {
                // Each insert sets its key's bits in a word of the filter: fetched while the
                // window's searches run.
                for probe in &probes {
                    filter.prefetch(probe.user);
                }
            }
            self.find_all_before(&probes, &mut guides);
            // A splice from another window has an origin in another memtable.
            let mut cursor = Cursor::default();
            let mut guided = true;
            for (&(tag, op), guide) in window.iter().zip(&guides) {
                cursor.guide = guided.then_some(*guide);
                insert(tag, op, &mut cursor);
                // An insert that replaced a node (a version inserted again) leaves no
                // splice, and that node may be in a later version's guide: the window's
                // other versions search for themselves.
                guided &= cursor.splice.is_some();
            }
        }
        malformed
    }
}
