//! Applying a write batch to a memtable (LevelDB's `WriteBatchInternal::InsertInto`): its
//! operations get consecutive sequence numbers from the batch's.
//!
//! A batch of many operations on a bytewise memtable is sorted by internal key first, and
//! each version's search starts from where the one before it was linked (a [`Splice`], as
//! RocksDB's skiplist keeps one): over a memtable of `n` versions, `b` random keys then
//! search about `log(n / b)` levels each, through nodes the search before left in cache,
//! instead of `log(n)` levels through memory. Readers see no difference: a batch's versions
//! are visible only once its last sequence number is, whatever order they went in. Under a
//! user's comparator the operations go in as they come (a comparator that is no total order
//! must not stop a sort).

use std::sync::Arc;

use super::{LiveMemTable, MAX_HEIGHT, Order, Place, bump, leveldb_entry_bytes};
use crate::dbformat::{MAX_SEQUENCE, pack_tag};
use crate::write_batch::{BatchOp, WriteBatch};

/// A batch of at least this many operations is sorted before it is inserted.
const SORTED_MIN_OPS: u32 = 16;

/// Where the last version was inserted: on each level, the last node before it (the new
/// node itself on its own levels). A search for a version sorting after it starts there
/// ([`LiveMemTable::find_from_splice`]).
pub(super) struct Splice {
    pub(super) prev: [u32; MAX_HEIGHT],
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
        let malformed = self.for_each_in_order(batch, |tag, op, splice| {
            if !full && self.add_tagged(tag, op.key, op.value, splice).is_err() {
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
        let malformed = self.for_each_in_order(&batch, |tag, op, splice| {
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
                    .insert(op.key, tag, op.value.len(), place, splice)
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

    /// Calls `insert` with each operation of `batch` and its tag, and the splice the
    /// inserts share: sorted by internal key when the batch is large and the order
    /// bytewise, else in the batch's order. A malformed batch's operations before the
    /// malformed one are given, then its error returned.
    fn for_each_in_order<'a>(
        &self,
        batch: &WriteBatch<'a>,
        mut insert: impl FnMut(u64, BatchOp<'a>, &mut Option<Splice>),
    ) -> std::result::Result<(), &'static str> {
        // As the read-only memtable: the top 8 bits of a sequence number beyond 2^56 - 1
        // are lost, as LevelDB loses them; the masked one always packs.
        let mut sequence = batch.sequence();
        let mut next_tag = |op: &BatchOp<'_>| {
            let tag = pack_tag(sequence & MAX_SEQUENCE, op.value_type).unwrap_or_default();
            sequence = sequence.wrapping_add(1);
            tag
        };
        let mut splice = None;
        if batch.count() < SORTED_MIN_OPS || !matches!(self.order, Order::Bytewise) {
            return batch.for_each(|op| insert(next_tag(&op), op, &mut None));
        }
        // The count is the batch's claim: the vector grows with the operations found.
        let mut ops = Vec::with_capacity(batch.count().min(4096) as usize);
        let malformed = batch.for_each(|op| ops.push((next_tag(&op), op)));
        // User keys in order, then newer versions (larger tags) first.
        ops.sort_unstable_by(|(ta, a), (tb, b)| a.key.cmp(b.key).then(tb.cmp(ta)));
        for (tag, op) in ops {
            insert(tag, op, &mut splice);
        }
        malformed
    }
}
