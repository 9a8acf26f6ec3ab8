//! Iterating a table: a two-level cursor (index block, then data blocks) and Rust iterators
//! over it.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use crate::block::Cursor;
use crate::format::BlockHandle;
use crate::read_at::ReadAt;
use crate::table::{BlockRef, Table};
use crate::{Error, Result};

/// The data block a [`TableIter`] is in.
struct DataPos<'t> {
    block: BlockRef<'t>,
    handle: BlockHandle,
    cursor: Cursor,
}

/// A cursor over a table's entries in key order, with `seek`, `next` and `prev`.
///
/// Positioned nowhere at first. While [`valid`](Self::valid), [`key`](Self::key) and
/// [`value`](Self::value) show the current entry; otherwise they return empty slices. An
/// error (a corrupt or unreadable block) makes the cursor invalid and is kept in
/// [`status`](Self::status) until the next seek.
///
/// ```
/// use leveltable_table::{BuildOptions, ReadOptions, Table, TableBuilder};
/// let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default())?;
/// for k in ["a", "c", "e"] {
///     builder.add(k.as_bytes(), b"")?;
/// }
/// builder.finish()?;
/// let table = Table::open(builder.into_inner(), ReadOptions::default())?;
/// let mut it = table.iter();
/// it.seek(b"b");
/// assert_eq!(it.key(), b"c");
/// it.prev();
/// assert_eq!(it.key(), b"a");
/// it.prev();
/// assert!(!it.valid());
/// it.status()?;
/// # Ok::<(), leveltable_table::Error>(())
/// ```
pub struct TableIter<'t, R> {
    table: &'t Table<R>,
    index: Cursor,
    data: Option<DataPos<'t>>,
    error: Option<Error>,
    /// A key buffer kept from the last data block for the next one.
    spare_key: Vec<u8>,
    /// Whether blocks read from the file go into the block cache.
    fill_cache: bool,
    /// How far ahead of a forward scan the source has been asked to map itself in.
    map: MapAhead,
}

/// The first stretch a forward scan asks its source to map in ahead, and the most: each
/// request doubles the next, as readahead grows, so a short range scan maps in little and
/// a long one makes a system call every 2 MiB.
const MAP_WINDOW_FIRST: u64 = 128 << 10;
const MAP_WINDOW_MAX: u64 = 2 << 20;

/// How far ahead of a forward scan a table's source has been asked to map itself in
/// ([`ReadAt::will_read`]), and how much it asks for next.
///
/// A scan read through several cursors in turn, each reading a stretch of the table (as a
/// database's merge reads its sources in batches), passes it from each cursor to the next
/// ([`TableIter::map_ahead`], [`TableIter::with_map_ahead`]), so that the source maps in
/// as for one long scan instead of each cursor starting small again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapAhead {
    mapped_to: u64,
    window: u64,
}

impl Default for MapAhead {
    /// Nothing mapped in yet.
    fn default() -> Self {
        MapAhead {
            mapped_to: 0,
            window: MAP_WINDOW_FIRST,
        }
    }
}

impl MapAhead {
    /// Before reading the block `handle` points to: if it ends past what was mapped in,
    /// asks `table`'s source to map in the next stretch from it.
    fn before_reading<R: ReadAt>(&mut self, table: &Table<R>, handle: &BlockHandle) {
        if handle.end_with_trailer().unwrap_or(u64::MAX) > self.mapped_to {
            let start = handle.offset.max(self.mapped_to);
            table.map_in(start, self.window);
            self.mapped_to = start.saturating_add(self.window);
            self.window = self.window.saturating_mul(2).min(MAP_WINDOW_MAX);
        }
    }
}

impl<R> fmt::Debug for TableIter<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableIter")
            .field("valid", &self.valid())
            .field("key", &self.key())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<R> TableIter<'_, R> {
    /// Leaves the current block: its key buffer is kept for the next, its block buffer goes
    /// back to the thread.
    fn drop_data(&mut self) {
        if let Some(d) = self.data.take() {
            self.spare_key = d.cursor.into_key_buf();
            d.block.give_back();
        }
    }

    /// Whether the cursor is at an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(|d| d.cursor.valid())
    }

    /// The current key (empty if not valid).
    #[inline]
    pub fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.error.is_none() && d.cursor.valid() => d.cursor.key(),
            _ => &[],
        }
    }

    /// The current value (empty if not valid).
    #[inline]
    pub fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) if self.error.is_none() && d.cursor.valid() => d.cursor.value(d.block.data()),
            _ => &[],
        }
    }

    /// The file offset of the data block the cursor is in (`None` when it is in none).
    pub fn block_offset(&self) -> Option<u64> {
        self.data.as_ref().map(|d| d.handle.offset)
    }

    /// Whether the current entry is the last of its data block, so that
    /// [`next`](TableIter::next) reads another block.
    #[inline]
    pub fn at_block_end(&self) -> bool {
        self.valid() && self.data.as_ref().is_some_and(|d| d.cursor.at_last())
    }

    /// Ok unless the iteration stopped on an error.
    ///
    /// # Errors
    /// The error that stopped it: [`Error::Corruption`], [`Error::ChecksumMismatch`] or
    /// [`Error::Io`].
    pub fn status(&self) -> Result<()> {
        match &self.error {
            None => Ok(()),
            Some(e) => Err(e.duplicate()),
        }
    }

    /// Takes the error that stopped the iteration, if any.
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }
}

/// A block read for the iterator (not cached, not borrowed from memory) returns its buffer
/// to the thread, so the next block read, by this or any cursor, decompresses into it
/// instead of a fresh, zero-filled allocation.
impl<R> Drop for TableIter<'_, R> {
    fn drop(&mut self) {
        self.drop_data();
    }
}

impl<'t, R: ReadAt> TableIter<'t, R> {
    pub(crate) fn new(table: &'t Table<R>) -> TableIter<'t, R> {
        let (_, layout) = table.index_parts();
        TableIter {
            table,
            index: Cursor::new(layout, Vec::new()),
            data: None,
            error: None,
            spare_key: Vec::new(),
            fill_cache: table.cache.fill,
            map: MapAhead::default(),
        }
    }

    /// Continues the mapping-in of an earlier cursor's forward scan of this table (see
    /// [`MapAhead`]).
    pub fn with_map_ahead(mut self, map: MapAhead) -> Self {
        self.map = map;
        self
    }

    /// How far this cursor's forward reading has had the source map itself in, for the
    /// cursor that continues the scan.
    pub fn map_ahead(&self) -> MapAhead {
        self.map
    }

    /// Sets whether the data blocks this cursor reads from the file are added to the block
    /// cache (default: the table's [`ReadOptions::fill_cache`](crate::ReadOptions::fill_cache)).
    /// Blocks already cached are read from the cache either way. A long scan that leaves
    /// the cache alone leaves it to the lookups, and reads each block into one reused
    /// buffer instead of a fresh allocation.
    pub fn fill_cache(mut self, fill: bool) -> Self {
        self.fill_cache = fill;
        self
    }

    /// Moves to the first entry with a key `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.error = None;
        self.table
            .seek_index(&mut self.index, &**self.table.comparator(), target);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.cursor
                .seek(d.block.data(), &**self.table.comparator(), target);
        }
        self.skip_empty_forward();
    }

    /// Moves to the first entry of the data block after the one the index points `target`
    /// to, without reading that block: resumes a forward pass that stopped at
    /// [`at_block_end`](Self::at_block_end) with `target` the key it stopped at.
    pub fn seek_past_block_of(&mut self, target: &[u8]) {
        self.error = None;
        self.table
            .seek_index(&mut self.index, &**self.table.comparator(), target);
        if self.index.valid() {
            let (index, _) = self.table.index_parts();
            self.index.next(index);
        }
        self.enter_block_forward();
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.error = None;
        let (index, _) = self.table.index_parts();
        self.index.seek_to_first(index);
        self.enter_block_forward();
    }

    /// Moves to the first entry of the block the index stands at (or of the first
    /// non-empty one after it), hinting the block after that.
    fn enter_block_forward(&mut self) {
        self.init_data_block();
        self.prefetch_next_block();
        if let Some(d) = &mut self.data {
            d.cursor.seek_to_first(d.block.data());
        }
        self.skip_empty_forward();
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        self.error = None;
        let (index, _) = self.table.index_parts();
        self.index.seek_to_last(index);
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.cursor.seek_to_last(d.block.data());
        }
        self.skip_empty_backward();
    }

    /// Moves to the next entry (no-op when not valid).
    #[inline]
    pub fn next(&mut self) {
        if self.error.is_some() {
            return;
        }
        let Some(d) = &mut self.data else {
            return;
        };
        if !d.cursor.valid() {
            return;
        }
        d.cursor.next(d.block.data());
        // Most steps stay inside the block; only its end needs the slower path.
        if !d.cursor.valid() {
            self.skip_empty_forward();
        }
    }

    /// Hands `visit` the current key and value and those after them in the current data
    /// block, decoded in one pass with the checks of [`next`](Self::next), until `visit`
    /// returns `false`: the cursor then stays at that entry and this returns `true`. When
    /// the block's entries end first, the cursor moves on as `next` does (to the first
    /// entry of the next block, or not valid at the table's end or on an error, which
    /// [`status`](Self::status) then gives) and this returns `false`. Does nothing and
    /// returns `false` when not valid.
    #[inline]
    pub fn next_run(&mut self, visit: &mut impl FnMut(&[u8], &[u8]) -> bool) -> bool {
        if self.error.is_some() {
            return false;
        }
        let Some(d) = &mut self.data else {
            return false;
        };
        if !d.cursor.valid() {
            return false;
        }
        if d.cursor.run_forward(d.block.data(), visit) {
            return true;
        }
        self.skip_empty_forward();
        false
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if let Some(d) = &mut self.data {
            d.cursor.prev(d.block.data());
        }
        self.skip_empty_backward();
    }

    fn fail(&mut self, e: Error) {
        self.error = Some(e);
        self.drop_data();
    }

    /// Points `data` at the block of the current index entry (keeping it if it is already
    /// there), or clears it when the index is exhausted.
    fn init_data_block(&mut self) {
        let (index, _) = self.table.index_parts();
        if !self.index.valid() {
            if let Err(e) = self.index.status() {
                let e = self.table.locate_index_error(e);
                self.fail(e);
            } else {
                self.drop_data();
            }
            return;
        }
        let mut value = self.index.value(index);
        let handle = match BlockHandle::decode_from(&mut value) {
            Ok(h) => h,
            Err(e) => {
                let e = self
                    .table
                    .locate_index_error(e.at(self.index.entry_offset() as u64));
                self.fail(e);
                return;
            }
        };
        if self.data.as_ref().is_some_and(|d| d.handle == handle) {
            return;
        }
        // The block left goes first: its buffer, if it has the thread's, takes the next.
        self.drop_data();
        match self.table.data_block_with(&handle, None, self.fill_cache) {
            Ok(block) => {
                let cursor = Cursor::new(block.layout(), std::mem::take(&mut self.spare_key));
                self.data = Some(DataPos {
                    block,
                    handle,
                    cursor,
                });
            }
            Err(e) => self.fail(e),
        }
    }

    /// Hints the data block after the current one, so that a forward scan finds it in cache;
    /// first, when that block lies past what the source was asked to map in, asks it to map
    /// in the next stretch (the prefetch of a page not yet mapped does nothing).
    fn prefetch_next_block(&mut self) {
        let (index, _) = self.table.index_parts();
        let handle = self
            .index
            .peek_next_value(index)
            .and_then(|mut v| BlockHandle::decode_from(&mut v).ok());
        if let Some(handle) = handle {
            self.map.before_reading(self.table, &handle);
            self.table.prefetch_block(&handle);
        }
    }

    /// If the current data block is exhausted, moves on to the first entry of the next
    /// non-empty one. Stops on errors.
    fn skip_empty_forward(&mut self) {
        self.skip_empty(Step::Forward);
    }

    /// Like [`skip_empty_forward`](Self::skip_empty_forward), backwards: to the last entry of
    /// the previous non-empty block.
    fn skip_empty_backward(&mut self) {
        self.skip_empty(Step::Backward);
    }

    fn skip_empty(&mut self, step: Step) {
        loop {
            if self.error.is_some() {
                return;
            }
            if let Some(d) = &self.data {
                if d.cursor.valid() {
                    return;
                }
                if let Err(e) = d.cursor.status() {
                    let e = d.block.locate(e, &d.handle);
                    self.fail(e);
                    return;
                }
            }
            if !self.index.valid() {
                self.init_data_block();
                return;
            }
            let (index, _) = self.table.index_parts();
            match step {
                Step::Forward => self.index.next(index),
                Step::Backward => self.index.prev(index),
            }
            self.init_data_block();
            if step == Step::Forward {
                self.prefetch_next_block();
            }
            if let Some(d) = &mut self.data {
                match step {
                    Step::Forward => d.cursor.seek_to_first(d.block.data()),
                    Step::Backward => d.cursor.seek_to_last(d.block.data()),
                }
            }
        }
    }
}

/// A double-ended Rust iterator over a table's entries in a key range, yielding owned
/// `(key, value)` pairs. Made by [`Table::range`] and [`Table::entries`].
///
/// An error is yielded once as `Some(Err(..))`; the iteration then ends.
pub struct Range<'t, R> {
    front: TableIter<'t, R>,
    /// Created on the first `next_back`.
    back: Option<TableIter<'t, R>>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    front_started: bool,
    done: bool,
}

impl<R> fmt::Debug for Range<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("start", &self.start)
            .field("end", &self.end)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'t, R: ReadAt> Range<'t, R> {
    pub(crate) fn new(table: &'t Table<R>, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self {
        Range {
            front: TableIter::new(table),
            back: None,
            start,
            end,
            front_started: false,
            done: false,
        }
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.front.table.comparator().compare(a, b)
    }

    fn below_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(end) => self.compare(key, end) != Ordering::Greater,
            Bound::Excluded(end) => self.compare(key, end) == Ordering::Less,
        }
    }

    fn above_start(&self, key: &[u8]) -> bool {
        match &self.start {
            Bound::Unbounded => true,
            Bound::Included(start) => self.compare(key, start) != Ordering::Less,
            Bound::Excluded(start) => self.compare(key, start) == Ordering::Greater,
        }
    }

    /// Ends the iteration with the cursor's error if it has one.
    fn finish(&mut self, from_back: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        self.done = true;
        let it = if from_back {
            self.back.as_mut()
        } else {
            Some(&mut self.front)
        };
        it.and_then(TableIter::take_error).map(Err)
    }
}

impl<R: ReadAt> Iterator for Range<'_, R> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.front_started {
            self.front.next();
        } else {
            self.front_started = true;
            match &self.start {
                Bound::Unbounded => self.front.seek_to_first(),
                Bound::Included(k) | Bound::Excluded(k) => {
                    let k = k.clone();
                    self.front.seek(&k);
                }
            }
            while self.front.valid() && !self.above_start(self.front.key()) {
                self.front.next();
            }
        }
        if !self.front.valid() || !self.below_end(self.front.key()) {
            return self.finish(false);
        }
        // Stop where the back end has already been.
        if let Some(back) = &self.back {
            if back.valid() && self.compare(self.front.key(), back.key()) != Ordering::Less {
                return self.finish(false);
            }
        }
        Some(Ok((self.front.key().to_vec(), self.front.value().to_vec())))
    }
}

impl<R: ReadAt> DoubleEndedIterator for Range<'_, R> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match &mut self.back {
            Some(back) => back.prev(),
            None => {
                let mut back = TableIter::new(self.front.table);
                match &self.end {
                    Bound::Unbounded => back.seek_to_last(),
                    Bound::Included(k) | Bound::Excluded(k) => {
                        back.seek(k);
                        if !back.valid() && back.status().is_ok() {
                            back.seek_to_last();
                        }
                    }
                }
                self.back = Some(back);
            }
        }
        loop {
            let Some(back) = &self.back else {
                return None;
            };
            if !back.valid() {
                return self.finish(true);
            }
            if self.below_end(back.key()) {
                break;
            }
            if let Some(back) = &mut self.back {
                back.prev();
            }
        }
        let back = self.back.as_ref()?;
        if !self.above_start(back.key()) {
            return self.finish(true);
        }
        if self.front_started
            && self.front.valid()
            && self.compare(back.key(), self.front.key()) != Ordering::Greater
        {
            return self.finish(true);
        }
        Some(Ok((back.key().to_vec(), back.value().to_vec())))
    }
}

impl<R: ReadAt> std::iter::FusedIterator for Range<'_, R> {}

/// Which way [`TableIter`] moves past exhausted data blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Forward,
    Backward,
}

impl<R: ReadAt> Table<R> {
    /// A cursor over the table's entries (seek, next, prev), positioned nowhere.
    pub fn iter(&self) -> TableIter<'_, R> {
        TableIter::new(self)
    }

    /// All entries in order, as a Rust iterator of owned `(key, value)` pairs. Double-ended.
    pub fn entries(&self) -> Range<'_, R> {
        Range::new(self, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
    }

    /// The entries whose keys lie in `range` (in the table's order), as a double-ended Rust
    /// iterator of owned `(key, value)` pairs: `table.range("b".."d")`,
    /// `table.range(b"k".as_slice()..)`.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl std::ops::RangeBounds<K>) -> Range<'_, R> {
        let own = |b: std::ops::Bound<&K>| b.map(|k| k.as_ref().to_vec());
        Range::new(self, own(range.start_bound()), own(range.end_bound()))
    }
}
