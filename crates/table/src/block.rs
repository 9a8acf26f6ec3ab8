//! Reads a block written by [`BlockBuilder`](crate::block_builder::BlockBuilder).
//!
//! [`Block::new`] checks the restart array up front — its count, that every restart offset
//! lies inside the entries and that they increase — so that seeking never follows an offset
//! out of the block. Entries are decoded lazily; a malformed entry makes the iterator invalid
//! with an error in [`BlockIter::status`]. No input makes this module panic or loop forever:
//! every step of `next` moves forward and every step of `prev` moves back.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;

use crate::comparator::Comparator;
use crate::format::{fixed32_at, get_varint32};
use crate::{Error, Result};
use leveltable_prefetch as prefetch;
use prev_cache::{PrevCache, PrevEntry};

mod forward;
mod prev_cache;

/// Where a block's restart array is; checked against the block's bytes by
/// [`Layout::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Offset of the restart array, which is also the end of the entries.
    pub(crate) restarts_offset: usize,
    /// Number of restart points, at least 1.
    pub(crate) num_restarts: usize,
}

impl Layout {
    /// Validates the restart array of `data`.
    ///
    /// Invariants on success: `num_restarts >= 1`; `restarts_offset + 4 * num_restarts + 4 ==
    /// data.len()`; restart 0 is offset 0; restart offsets increase strictly and are below
    /// `restarts_offset` (the single restart of an empty block is 0 == `restarts_offset`).
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "n <= count_at / 4 is checked before the layout math, and i < n"
    )]
    pub(crate) fn parse(data: &[u8]) -> Result<Layout> {
        let bad = |offset: usize| Err(Error::corrupt("block restart array", offset as u64));
        let Some(count_at) = data.len().checked_sub(4) else {
            return bad(0);
        };
        let Some(n) = fixed32_at(data, count_at) else {
            return bad(0);
        };
        let n = n as usize;
        // Validate before the layout math: the array must fit before the count.
        if n == 0 || n > count_at / 4 {
            return bad(count_at);
        }
        let restarts_offset = count_at - 4 * n;
        let mut previous = None;
        for i in 0..n {
            let at = restarts_offset + 4 * i;
            let Some(r) = fixed32_at(data, at) else {
                return bad(at);
            };
            let r = r as usize;
            let ok = match previous {
                None => r == 0,
                Some(p) => r > p && r < restarts_offset,
            };
            if !ok {
                return bad(at);
            }
            previous = Some(r);
        }
        Ok(Layout {
            restarts_offset,
            num_restarts: n,
        })
    }

    /// The index of the last restart point.
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "num_restarts >= 1 (checked by parse)"
    )]
    pub(crate) fn last_restart(&self) -> usize {
        self.num_restarts - 1
    }

    /// Offset of restart point `index`, for `index <= num_restarts` (at `num_restarts`, the
    /// offset of the restart count, which ends a search).
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "index <= num_restarts, and restarts_offset + 4 * num_restarts + 4 is the \
                  length of the block the layout was parsed from"
    )]
    pub(crate) fn restart_point(&self, data: &[u8], index: usize) -> usize {
        // In range for the data the layout was parsed from; for any other slice an
        // out-of-range read yields an offset past the entries, which ends iteration.
        fixed32_at(data, self.restarts_offset + 4 * index).map_or(usize::MAX, |r| r as usize)
    }
}

/// The key of the entry at restart point `index` (`index < num_restarts`), or `None` if it
/// does not decode or claims a shared prefix.
pub(crate) fn restart_key(data: &[u8], layout: Layout, index: usize) -> Option<&[u8]> {
    restart_entry(data, layout, index).map(|(key, _)| key)
}

/// The key and value of the entry at restart point `index` (`index < num_restarts`), or `None`
/// if it does not decode or claims a shared prefix.
#[expect(
    clippy::arithmetic_side_effects,
    reason = "at <= restarts_offset and decode_entry checked that the key delta and value end \
              within restarts_offset - at bytes"
)]
pub(crate) fn restart_entry(data: &[u8], layout: Layout, index: usize) -> Option<(&[u8], &[u8])> {
    let at = layout.restart_point(data, index);
    let h = decode_entry(data.get(at..layout.restarts_offset)?)?;
    if h.shared != 0 {
        return None;
    }
    let key_at = at + h.delta_at;
    let value_at = key_at + h.non_shared;
    Some((
        data.get(key_at..value_at)?,
        data.get(value_at..value_at + h.value_len)?,
    ))
}

/// One decoded entry header: lengths and where the key delta starts.
struct EntryHeader {
    shared: usize,
    non_shared: usize,
    value_len: usize,
    /// Offset of the key delta, relative to the entry start.
    delta_at: usize,
}

/// Decodes the entry header at the front of `input` (which ends at the restart array).
/// `None` if a varint is malformed or the key delta and value run past `input`.
///
/// Invariant on success: `delta_at + non_shared + value_len <= input.len()`.
#[inline(always)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "s is a suffix of input and delta_at <= input.len(); both lengths are below 2^32"
)]
fn decode_entry(input: &[u8]) -> Option<EntryHeader> {
    let (shared, non_shared, value_len, delta_at) = match input {
        [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
        _ => {
            let mut s = input;
            let shared = get_varint32(&mut s)? as usize;
            let non_shared = get_varint32(&mut s)? as usize;
            let value_len = get_varint32(&mut s)? as usize;
            (shared, non_shared, value_len, input.len() - s.len())
        }
    };
    // Both lengths are below 2^32, so the sum cannot overflow a u64.
    if non_shared as u64 + value_len as u64 > (input.len() - delta_at) as u64 {
        return None;
    }
    Some(EntryHeader {
        shared,
        non_shared,
        value_len,
        delta_at,
    })
}

/// Up to how many restart points a seek hints all restart keys of before its binary search.
const PREFETCH_RESTARTS: usize = 16;
/// Most bytes of a restart interval a seek hints before its linear search.
const PREFETCH_SCAN_BYTES: usize = 2048;

/// The state of an iteration over one block, without the block's bytes: every method takes
/// the bytes the [`Layout`] was parsed from. Keeping the bytes out lets owners of a block
/// (a table iterator holding a cached block) iterate it without borrowing themselves.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    layout: Layout,
    /// Offset of the current entry; `>= restarts_offset` when not valid.
    current: usize,
    /// Offset just past the current entry (where the next one starts).
    next: usize,
    /// The restart block holding `current`; `num_restarts` when not valid.
    restart_index: usize,
    /// Where the restart block after `restart_index` starts (`usize::MAX` past the last):
    /// read once per restart block, not once per entry.
    next_restart: usize,
    key: Vec<u8>,
    value_at: usize,
    value_len: usize,
    /// Offset of the entry that failed to decode, if any.
    corrupt_at: Option<usize>,
    prev_cache: PrevCache,
}

impl Cursor {
    /// A cursor, positioned nowhere, that reuses `key_buf` for keys.
    pub(crate) fn new(layout: Layout, mut key_buf: Vec<u8>) -> Cursor {
        key_buf.clear();
        Cursor {
            layout,
            current: layout.restarts_offset,
            next: layout.restarts_offset,
            restart_index: layout.num_restarts,
            next_restart: usize::MAX,
            key: key_buf,
            value_at: 0,
            value_len: 0,
            corrupt_at: None,
            prev_cache: PrevCache::default(),
        }
    }

    /// Gives back the key buffer for reuse.
    pub(crate) fn into_key_buf(self) -> Vec<u8> {
        self.key
    }

    #[inline]
    pub(crate) fn valid(&self) -> bool {
        self.current < self.layout.restarts_offset
    }

    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "value_at + value_len <= restarts_offset: a decoded entry's value, or 0 + 0"
    )]
    pub(crate) fn value<'d>(&self, data: &'d [u8]) -> &'d [u8] {
        data.get(self.value_at..self.value_at + self.value_len)
            .unwrap_or_default()
    }

    /// The value of the entry after the current one, without moving; `None` if not valid,
    /// at the last entry, or if that entry does not decode.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "next <= restarts_offset and decode_entry checked the rest against the \
                  entries after next"
    )]
    pub(crate) fn peek_next_value<'d>(&self, data: &'d [u8]) -> Option<&'d [u8]> {
        if !self.valid() {
            return None;
        }
        let h = decode_entry(data.get(self.next..self.layout.restarts_offset)?)?;
        let value_at = self.next + h.delta_at + h.non_shared;
        data.get(value_at..value_at + h.value_len)
    }

    /// Whether the current entry is the block's last.
    #[inline]
    pub(crate) fn at_last(&self) -> bool {
        self.valid() && self.next >= self.layout.restarts_offset
    }

    /// Offset in the block of the current entry.
    pub(crate) fn entry_offset(&self) -> usize {
        self.current
    }

    pub(crate) fn status(&self) -> Result<()> {
        match self.corrupt_at {
            None => Ok(()),
            Some(at) => Err(Error::corrupt("block entry", at as u64)),
        }
    }

    fn invalidate(&mut self) {
        self.current = self.layout.restarts_offset;
        self.next = self.layout.restarts_offset;
        self.restart_index = self.layout.num_restarts;
        self.next_restart = usize::MAX;
    }

    /// Makes `index` the current restart block.
    fn set_restart(&mut self, data: &[u8], index: usize) {
        self.restart_index = index;
        self.next_restart = match index.checked_add(1) {
            Some(after) if after < self.layout.num_restarts => {
                self.layout.restart_point(data, after)
            }
            _ => usize::MAX,
        };
    }

    fn corruption(&mut self, at: usize) {
        self.invalidate();
        self.corrupt_at = Some(at);
        self.key.clear();
        self.value_len = 0;
    }

    fn seek_to_restart(&mut self, data: &[u8], index: usize) {
        self.key.clear();
        self.set_restart(data, index);
        self.next = self.layout.restart_point(data, index);
    }

    /// Decodes the entry at `self.next`. Returns whether the cursor is valid afterwards.
    #[inline]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "offsets stay within the entry decode_entry checked; restart_index < \
                  num_restarts <= data.len() / 4"
    )]
    fn parse_next(&mut self, data: &[u8]) -> bool {
        let end = self.layout.restarts_offset;
        self.current = self.next;
        if self.current >= end {
            self.invalidate();
            return false;
        }
        let Some(input) = data.get(self.current..end) else {
            self.corruption(self.current);
            return false;
        };
        let Some(h) = decode_entry(input) else {
            self.corruption(self.current);
            return false;
        };
        if h.shared > self.key.len() {
            self.corruption(self.current);
            return false;
        }
        // In bounds: decode_entry checked delta_at + non_shared + value_len <= input.len().
        let delta_at = self.current + h.delta_at;
        forward::set_key(&mut self.key, data, h.shared, delta_at, h.non_shared);
        self.value_at = delta_at + h.non_shared;
        self.value_len = h.value_len;
        self.next = self.value_at + h.value_len;
        while self.next_restart <= self.current {
            self.set_restart(data, self.restart_index + 1);
        }
        true
    }

    pub(crate) fn seek_to_first(&mut self, data: &[u8]) {
        self.corrupt_at = None;
        self.prev_cache.clear();
        self.seek_to_restart(data, 0);
        self.parse_next(data);
    }

    pub(crate) fn seek_to_last(&mut self, data: &[u8]) {
        self.corrupt_at = None;
        self.prev_cache.clear();
        self.seek_to_restart(data, self.layout.last_restart());
        while self.parse_next(data) && self.next < self.layout.restarts_offset {}
    }

    /// Moves to the next entry. Does nothing if not valid.
    #[inline]
    pub(crate) fn next(&mut self, data: &[u8]) {
        if self.valid() {
            self.parse_next(data);
        }
    }

    /// Moves to the previous entry. Does nothing if not valid.
    pub(crate) fn prev(&mut self, data: &[u8]) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        // Invariant: a remembered entry of this block that ends where the current one starts
        // is the previous entry. Its offset is below the current one, so prev always moves
        // back.
        if let Some(&e) = self.prev_cache.entries.last() {
            if e.next == original {
                self.prev_cache.entries.pop();
                self.current = e.offset;
                self.next = e.next;
                self.value_at = e.value_at;
                self.value_len = e.value_len;
                self.set_restart(data, e.restart_index);
                self.key.clear();
                self.key
                    .extend_from_slice(&self.prev_cache.keys[e.key_start..]);
                self.prev_cache.keys.truncate(e.key_start);
                return;
            }
        }
        self.prev_cache.clear();
        // Back up to the last restart point before the current entry.
        while self.layout.restart_point(data, self.restart_index) >= original {
            let Some(before) = self.restart_index.checked_sub(1) else {
                self.invalidate();
                return;
            };
            self.restart_index = before;
        }
        self.seek_to_restart(data, self.restart_index);
        // Walk forward to the entry that ends where the original one starts, remembering
        // the entries on the way.
        let mut remember = true;
        while self.parse_next(data) && self.next < original {
            if remember {
                let entry = PrevEntry {
                    offset: self.current,
                    next: self.next,
                    key_start: 0,
                    value_at: self.value_at,
                    value_len: self.value_len,
                    restart_index: self.restart_index,
                };
                remember = self.prev_cache.push(&self.key, entry);
            }
        }
        if !self.valid() {
            self.prev_cache.clear();
        }
    }

    /// Positions at the first entry at or after restart point `restart` whose key is
    /// `>= target`, or invalid if none. For callers that located the restart point by other
    /// means; `restart` must not lie past the answer.
    pub(crate) fn seek_from_restart<C: Comparator + ?Sized>(
        &mut self,
        data: &[u8],
        cmp: &C,
        target: &[u8],
        restart: usize,
    ) {
        self.corrupt_at = None;
        self.prev_cache.clear();
        self.seek_to_restart(data, restart.min(self.layout.last_restart()));
        while self.parse_next(data) {
            if cmp.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions at the first entry whose key is `>= target`, or invalid if none.
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "left <= mid <= right < num_restarts, left < mid in the loop, and the key \
                  ends where decode_entry checked"
    )]
    pub(crate) fn seek<C: Comparator + ?Sized>(&mut self, data: &[u8], cmp: &C, target: &[u8]) {
        let mut left = 0;
        let mut right = self.layout.last_restart();
        let mut current_vs_target = Ordering::Equal;
        if self.valid() {
            // Start from the current position when it narrows the search (a forward scan
            // that seeks a little ahead).
            current_vs_target = cmp.compare(&self.key, target);
            match current_vs_target {
                Ordering::Less => left = self.restart_index,
                Ordering::Greater => right = self.restart_index,
                Ordering::Equal => return,
            }
        }
        self.corrupt_at = None;
        self.prev_cache.clear();
        // The binary search visits some of the restart keys in `left..=right`, each a cache
        // miss in a cold block; when there are few, hint them all so the misses overlap.
        if right.saturating_sub(left) < PREFETCH_RESTARTS {
            for i in left..=right {
                prefetch::line(data, self.layout.restart_point(data, i));
            }
        }
        // Binary search for the last restart point whose key is < target.
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            let at = self.layout.restart_point(data, mid);
            let header = data
                .get(at..self.layout.restarts_offset)
                .and_then(decode_entry);
            let Some(h) = header.filter(|h| h.shared == 0) else {
                self.corruption(at);
                return;
            };
            let key_at = at + h.delta_at;
            let mid_key = &data[key_at..key_at + h.non_shared];
            if cmp.compare(mid_key, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        let continue_from_current =
            left == self.restart_index && current_vs_target == Ordering::Less;
        if !continue_from_current {
            self.seek_to_restart(data, left);
            // The linear search reads on from the restart point, up to the next one.
            let end = if left + 1 < self.layout.num_restarts {
                self.layout.restart_point(data, left + 1)
            } else {
                self.layout.restarts_offset
            };
            let start = self.next;
            let stop = end.min(start.saturating_add(PREFETCH_SCAN_BYTES));
            if let Some(interval) = data.get(start..stop) {
                prefetch::lines(interval);
            }
        }
        // Linear search in the restart block for the first key >= target.
        while self.parse_next(data) {
            if cmp.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }
}

/// A block's bytes with a validated restart array.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    data: &'a [u8],
    layout: Layout,
}

impl<'a> Block<'a> {
    /// Checks the restart array of `data` (the block's uncompressed contents, without
    /// trailer).
    ///
    /// # Errors
    /// [`Error::Corruption`] (`block restart array`) if the block is shorter than its restart
    /// count, has no restart point, or a restart offset is out of order or out of range.
    /// The offset is relative to the block start.
    pub fn new(data: &'a [u8]) -> Result<Block<'a>> {
        let layout = Layout::parse(data)?;
        Ok(Block { data, layout })
    }

    pub(crate) fn from_parts(data: &'a [u8], layout: Layout) -> Block<'a> {
        Block { data, layout }
    }

    /// The whole block, restart array included.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.layout.num_restarts
    }

    /// Whether the block holds no entries.
    pub fn is_empty(&self) -> bool {
        self.layout.restarts_offset == 0
    }

    /// An iterator over the block's entries in the order of `cmp`, positioned nowhere: call
    /// a seek first.
    pub fn iter<C: Comparator + ?Sized>(&self, cmp: &'a C) -> BlockIter<'a, C> {
        BlockIter {
            data: self.data,
            cmp,
            cursor: Cursor::new(self.layout, Vec::new()),
        }
    }

    /// Decodes every entry and checks what iteration alone does not: that each restart point
    /// starts an entry with no shared prefix, and that keys increase strictly under `cmp`.
    /// Returns the number of entries.
    ///
    /// # Errors
    /// [`Error::Corruption`] with the in-block offset of the first bad entry (`block entry`,
    /// `block restart array` or `key order`).
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "next_restart < num_restarts before each increment, and entries counts \
                  entries of at least 3 bytes each"
    )]
    pub fn check<C: Comparator + ?Sized>(&self, cmp: &C) -> Result<usize> {
        let mut cursor = Cursor::new(self.layout, Vec::new());
        let mut previous: Vec<u8> = Vec::new();
        let mut next_restart = 0;
        let mut entries = 0;
        cursor.seek_to_restart(self.data, 0);
        while cursor.parse_next(self.data) {
            let at = cursor.current;
            let restart = (next_restart < self.layout.num_restarts)
                .then(|| self.layout.restart_point(self.data, next_restart));
            match restart {
                Some(r) if r < at => {
                    return Err(Error::corrupt("block restart array", r as u64));
                }
                Some(r) if r == at => {
                    // A restart entry must not lean on the previous key.
                    let h = decode_entry(&self.data[at..self.layout.restarts_offset]);
                    if h.is_none_or(|h| h.shared != 0) {
                        return Err(Error::corrupt("block entry", at as u64));
                    }
                    next_restart += 1;
                }
                _ => {}
            }
            if entries > 0 && cmp.compare(&previous, cursor.key()) != Ordering::Less {
                return Err(Error::corrupt("key order", at as u64));
            }
            previous.clear();
            previous.extend_from_slice(cursor.key());
            entries += 1;
        }
        cursor.status()?;
        if entries > 0 && next_restart < self.layout.num_restarts {
            let r = self.layout.restart_point(self.data, next_restart);
            return Err(Error::corrupt("block restart array", r as u64));
        }
        Ok(entries)
    }
}

/// Iterates a [`Block`]'s entries forwards and backwards.
///
/// Positioned nowhere at first. While [`valid`](Self::valid), [`key`](Self::key) and
/// [`value`](Self::value) show the current entry; otherwise they return empty slices.
/// Corruption ends the iteration and is reported by [`status`](Self::status).
pub struct BlockIter<'a, C: Comparator + ?Sized> {
    data: &'a [u8],
    cmp: &'a C,
    cursor: Cursor,
}

impl<'a, C: Comparator + ?Sized> BlockIter<'a, C> {
    /// Whether the iterator is at an entry.
    pub fn valid(&self) -> bool {
        self.cursor.valid()
    }

    /// The current key (empty if not valid).
    pub fn key(&self) -> &[u8] {
        if self.valid() { self.cursor.key() } else { &[] }
    }

    /// The current value (empty if not valid).
    pub fn value(&self) -> &'a [u8] {
        if self.valid() {
            self.cursor.value(self.data)
        } else {
            &[]
        }
    }

    /// Offset of the current entry within the block.
    pub fn entry_offset(&self) -> usize {
        self.cursor.entry_offset()
    }

    /// Ok unless an entry failed to decode.
    ///
    /// # Errors
    /// [`Error::Corruption`] (`block entry`) with the entry's offset in the block.
    pub fn status(&self) -> Result<()> {
        self.cursor.status()
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.cursor.seek_to_first(self.data);
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self) {
        self.cursor.seek_to_last(self.data);
    }

    /// Moves to the first entry with a key `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.cursor.seek(self.data, self.cmp, target);
    }

    /// Moves to the next entry (no-op when not valid).
    pub fn next(&mut self) {
        self.cursor.next(self.data);
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) {
        self.cursor.prev(self.data);
    }
}

#[cfg(test)]
#[expect(
    clippy::arithmetic_side_effects,
    reason = "test code, where an overflow fails the test"
)]
mod tests;
