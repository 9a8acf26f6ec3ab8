//! Finding the data block for a key: the fence's search tree where the table has one, else
//! a search of the index block; and errors inside the index block moved to the file.

use std::cell::Cell;
use std::cmp::Ordering;

use crate::block::{Cursor, restart_key};
use crate::comparator::Comparator;
use crate::fence::BATCH;
use crate::format::BlockHandle;
use crate::read_block::locate;
use crate::table::Located;
use crate::{Error, ReadAt, Result, Table};

thread_local! {
    /// The index cursor's key buffer for lookups, taken and put back so a lookup allocates
    /// nothing once warm (and one nested in a get's callback just starts with an empty one).
    static INDEX_KEY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

impl<R: ReadAt> Table<R> {
    /// The data block a lookup of `key` consults: the first index entry `>= key`, or `None`
    /// past the last block.
    pub(crate) fn block_for<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        key: &[u8],
    ) -> Result<Option<Located>> {
        self.block_for_from(cmp, key, self.fence_first(cmp, key))
    }

    /// [`block_for`](Self::block_for) of up to [`BATCH`] keys, into `out` (as long as
    /// `keys`), the fence searched for all of them at once (see
    /// [`Fence::first_at_or_after_batch`]).
    pub(crate) fn blocks_for<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        keys: &[&[u8]],
        out: &mut [Option<Located>],
    ) -> Result<()> {
        let n = keys.len().min(BATCH);
        let mut views: [&[u8]; BATCH] = [&[]; BATCH];
        let viewed = views
            .iter_mut()
            .zip(&keys[..n])
            .all(|(view, k)| cmp.bytewise_view(k).map(|v| *view = v).is_some());
        let mut firsts = [0usize; BATCH];
        let batched = match &self.index.fence {
            Some(fence) if viewed => {
                fence.first_at_or_after_batch(
                    &views[..n],
                    |j, i| self.restart_key_below(cmp, i, keys[j]),
                    &mut firsts[..n],
                );
                true
            }
            _ => false,
        };
        for (j, (located, k)) in out.iter_mut().zip(&keys[..n]).enumerate() {
            let first = if batched {
                Some(firsts[j])
            } else {
                self.fence_first(cmp, k)
            };
            *located = self.block_for_from(cmp, k, first)?;
        }
        Ok(())
    }

    /// [`block_for`](Self::block_for), given the fence's answer for `key` if there is one.
    fn block_for_from<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        key: &[u8],
        first: Option<usize>,
    ) -> Result<Option<Located>> {
        // The fence holds handles only when every index entry is its own restart point, so
        // its restart point is the block's position.
        if let Some(fence) = &self.index.fence
            && let Some(i) = first
            && let Some(handle) = fence.handle(i)
        {
            return Ok(Some(Located {
                handle,
                position: Some(i),
                filter: fence.filter(i),
            }));
        }
        let mut index = Cursor::new(self.index.layout, INDEX_KEY.take());
        self.seek_index_from(&mut index, cmp, key, first);
        let handle = if index.valid() {
            let mut value = index.value(&self.index.bytes);
            BlockHandle::decode_from(&mut value)
                .map(|handle| {
                    Some(Located {
                        handle,
                        position: None,
                        filter: None,
                    })
                })
                .map_err(|e| self.locate_in_index(e, index.entry_offset()))
        } else {
            index
                .status()
                .map(|()| None)
                .map_err(|e| self.locate_index_error(e))
        };
        INDEX_KEY.set(index.into_key_buf());
        handle
    }

    /// Positions `cursor` (over the index block) at the first entry `>= key`.
    pub(crate) fn seek_index<C: Comparator + ?Sized>(
        &self,
        cursor: &mut Cursor,
        cmp: &C,
        key: &[u8],
    ) {
        self.seek_index_from(cursor, cmp, key, self.fence_first(cmp, key));
    }

    /// The fence's answer for `key` (the first restart point whose key is `>= key`), for
    /// tables that have one.
    fn fence_first<C: Comparator + ?Sized>(&self, cmp: &C, key: &[u8]) -> Option<usize> {
        let fence = self.index.fence.as_ref()?;
        let view = cmp.bytewise_view(key)?;
        Some(fence.first_at_or_after(view, |i| self.restart_key_below(cmp, i, key)))
    }

    /// Whether restart key `i` of the index sorts before `key` (`None` if it does not
    /// decode): the fence's full comparison, for ties and the tail.
    fn restart_key_below<C: Comparator + ?Sized>(
        &self,
        cmp: &C,
        i: usize,
        key: &[u8],
    ) -> Option<bool> {
        restart_key(&self.index.bytes, self.index.layout, i)
            .map(|k| cmp.compare(k, key) == Ordering::Less)
    }

    /// [`seek_index`](Self::seek_index), given the fence's answer `first` if there is one.
    fn seek_index_from<C: Comparator + ?Sized>(
        &self,
        cursor: &mut Cursor,
        cmp: &C,
        key: &[u8],
        first: Option<usize>,
    ) {
        match first {
            Some(first) => {
                // With one entry per restart point the answer is that restart entry;
                // otherwise it may lie in the interval before it.
                let start = if self.index.all_restarts {
                    first
                } else {
                    first.saturating_sub(1)
                };
                cursor.seek_from_restart(&self.index.bytes, cmp, key, start);
            }
            None => cursor.seek(&self.index.bytes, cmp, key),
        }
    }

    /// Moves an error at `entry` (a position in the index block) to the file.
    pub(crate) fn locate_in_index(&self, e: Error, entry: usize) -> Error {
        let e = match e {
            // A handle that fails to decode is reported at its entry.
            Error::Corruption { what, .. } => Error::Corruption {
                what,
                offset: entry as u64,
            },
            other => other,
        };
        locate(
            e,
            self.properties.footer.index.offset,
            self.index.compressed,
        )
    }
}
