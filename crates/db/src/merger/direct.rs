//! Reading on from the source that leads the merge straight out of its tables' blocks,
//! without copying each entry into a batch first: once a long forward scan has a level or
//! a level-0 table leading to the end of its batch, its entries are handed to a visitor as
//! the table's cursor decodes them, until the visitor stops or the next entry of another
//! source comes first.
//!
//! The checks of a batch read ([`crate::batch::fetch`]) are kept: each key must be after
//! the one before it (a damaged table is an error with the offset of its data block, never
//! keys handed out of order), must be an internal key, and the keys read from a table must
//! lie in the range the MANIFEST gives it (checked before each return).

use std::cmp::Ordering;
use std::ops::Bound;

use leveltable_table::comparator::compare_bytes;
use leveltable_table::{Comparator, MapAhead};

use super::{FRONT, Merger};
use crate::batch::{above, below, check_range};
use crate::dbformat::{ParsedInternalKey, TAG_LEN, ValueType};
use crate::filename::table_file_name;
use crate::version::Source;
use crate::{Error, Result};

/// One entry a direct read hands out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Visited<'a> {
    /// Its user key.
    pub(crate) user: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) sequence: u64,
    /// A value (not a deletion).
    pub(crate) is_value: bool,
    /// Its user key is that of the entry handed out just before (an older version).
    pub(crate) same_user: bool,
}

/// The next entry of every other source: its key and its cursor.
type NextOther = (Vec<u8>, usize);

/// Why a direct read of one table stopped.
enum Stop {
    /// The visitor asked to stop, after the entry just read.
    Visitor { at_block_end: bool },
    /// The next entry is another source's turn (or outside the cursor's range).
    Bound,
    /// The table ended.
    End,
}

/// The user key and the tag of an internal key, the tag's type a value or a deletion.
#[inline(always)]
fn split(key: &[u8]) -> Option<(&[u8], u64)> {
    let (user, tag) = key.split_last_chunk::<TAG_LEN>()?;
    let tag = u64::from_le_bytes(*tag);
    let t = tag & 0xff;
    (t == ValueType::Value as u64 || t == ValueType::Deletion as u64).then_some((user, tag))
}

/// The error for a key of table `number` that is not an internal key.
fn bad_key(number: u64, key: &[u8], offset: u64) -> Error {
    let why = match ParsedInternalKey::parse(key) {
        Err(e) => e.to_string(),
        Ok(_) => "bad value type".to_owned(),
    };
    Error::corruption(
        table_file_name(number),
        format!("internal key ({why})"),
        offset,
    )
}

impl Merger {
    /// Whether [`front_direct`](Self::front_direct) may take over the run of cursor `i`
    /// ending at `end` (as [`front_run`](Self::front_run) gave it), its entries before `to`
    /// handed out: `to` is the last entry of the cursor's batch, the cursor reads a level or
    /// a level-0 table in the bytewise order, and the merge has read past what it puts in
    /// the block cache (a long scan: short ones read batch by batch).
    pub(crate) fn can_direct(&self, i: usize, to: usize, end: usize) -> bool {
        let batch = &self.cursors[i].batches[FRONT];
        self.version.bytewise.is_some()
            && !self.failed
            && self.cursors[i].pending[FRONT].is_none()
            && end == batch.tail
            && to + 1 == end
            && to >= batch.head
            && batch.tail == batch.ends.len()
            && self.cursors[i].batches[1 - FRONT].ends.is_empty()
            && self.table_bytes >= self.fill_budget
            && matches!(self.version.sources[i], Source::Files { .. })
            && self.ordered[FRONT]
            && !self.taken[FRONT]
            && self.order[FRONT].first() == Some(&i)
            && split(batch.key(to)).is_some()
    }

    /// Hands `visit` the entries of cursor `i` from entry `to` of its front batch on (see
    /// [`can_direct`](Self::can_direct), which must hold), then read straight from its
    /// tables, until `visit` returns `false` (after that entry), the next entry of another
    /// source comes first, or the source ends. The first entry starts a user key (every
    /// version of the key before it was taken). Returns the user key of the last entry
    /// handed out.
    ///
    /// # Errors
    /// A table that cannot be read, a key not after the one before it or not an internal
    /// key, keys outside a table's range: the merge then ends.
    pub(crate) fn front_direct(
        &mut self,
        i: usize,
        to: usize,
        visit: &mut impl FnMut(Visited<'_>) -> bool,
    ) -> Result<&[u8]> {
        let r = self.direct(i, to, visit);
        self.held = None;
        self.ordered[1 - FRONT] = false;
        // The cursor's next entry changed: it is put back in place by the next pick.
        self.taken[FRONT] = true;
        if r.is_err() {
            self.failed = true;
        }
        r?;
        match &self.cursors[i].lo {
            Bound::Excluded(k) => Ok(split(k).map_or(&[][..], |(user, _)| user)),
            _ => Ok(&[]),
        }
    }

    fn direct(
        &mut self,
        i: usize,
        to: usize,
        visit: &mut impl FnMut(Visited<'_>) -> bool,
    ) -> Result<()> {
        // The next entry of every other source: the bound the entries handed out stay below.
        let bound = self.order[FRONT]
            .get(1)
            .and_then(|&j| Some((self.key(j, FRONT)?.to_vec(), j)));
        let version = std::sync::Arc::clone(&self.version);
        let Some(icmp) = &version.bytewise else {
            return Ok(());
        };
        let Source::Files { files, .. } = &version.sources[i] else {
            return Ok(());
        };
        let c = &mut self.cursors[i];
        // The batch's last entry, which is the key `lo` excludes (the last one read).
        let batch = &mut c.batches[FRONT];
        batch.head = batch.tail;
        let (key, value) = batch.entry(to);
        let Some((user, tag)) = split(key) else {
            return Ok(());
        };
        let more = visit(Visited {
            user,
            value,
            sequence: tag >> 8,
            is_value: tag & 0xff == ValueType::Value as u64,
            same_user: false,
        });
        if !more {
            return Ok(());
        }
        let first = files.partition_point(|f| below(icmp, &f.largest, &c.lo));
        let end = files.partition_point(|f| !above(icmp, &f.smallest, &c.hi));
        let within = first..end.max(first);
        let Bound::Excluded(lo) = &mut c.lo else {
            return Ok(());
        };
        // `prev`: the key handed out last, which `lo` excludes once the read is done.
        let mut prev = std::mem::take(lo);
        let mut resume = c.resume.take();
        let mut mapped = c.mapped.take();
        let mut read = 0u64;
        let mut drained = true;
        let mut result = Ok(());
        for f in files.get(within).unwrap_or(&[]) {
            let map = mapped
                .filter(|&(number, _)| number == f.number)
                .map(|(_, map)| map)
                .unwrap_or_default();
            let past_block = resume.take() == Some(f.number);
            let mut first_key: Option<Vec<u8>> = None;
            let stop = read_table(
                icmp,
                (f.number, i),
                (&c.hi, bound.as_ref()),
                (&mut prev, past_block, &mut first_key, &mut read),
                (version.tables.get(f.number), map),
                visit,
            );
            let (stop, map) = match stop {
                Ok(s) => s,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            mapped = Some((f.number, map));
            if let Some(first) = first_key {
                if let Err(e) = check_range(&version, f, &first, &prev) {
                    result = Err(e);
                    break;
                }
            }
            match stop {
                Stop::End => {}
                Stop::Bound => {
                    drained = false;
                    break;
                }
                Stop::Visitor { at_block_end } => {
                    resume = at_block_end.then_some(f.number);
                    drained = false;
                    break;
                }
            }
        }
        self.table_bytes += read;
        let c = &mut self.cursors[i];
        c.lo = Bound::Excluded(prev);
        c.resume = resume;
        c.mapped = mapped;
        c.drained = drained && result.is_ok();
        result
    }
}

/// The first key a direct read stops at: the lower of the cursor's upper bound and the
/// next entry of another source.
#[derive(Clone, Copy)]
enum Limit<'a> {
    None,
    /// Stop at this key or past it.
    At(&'a [u8]),
    /// Stop past this key.
    Past(&'a [u8]),
}

impl<'a> Limit<'a> {
    /// The limit of the upper bound `hi` and of `bound`, the next entry of another source
    /// (cursor `cursor`'s entry of the same key comes first if `cursor` is the lower).
    fn of(
        icmp: &impl Comparator,
        hi: &'a Bound<Vec<u8>>,
        bound: Option<&'a NextOther>,
        cursor: usize,
    ) -> Limit<'a> {
        let hi = match hi {
            Bound::Unbounded => Limit::None,
            Bound::Included(k) => Limit::Past(k),
            Bound::Excluded(k) => Limit::At(k),
        };
        let Some((b, j)) = bound else {
            return hi;
        };
        let other = if cursor < *j {
            Limit::Past(b)
        } else {
            Limit::At(b)
        };
        match (hi, other) {
            (Limit::None, other) => other,
            (Limit::At(h) | Limit::Past(h), Limit::At(o) | Limit::Past(o)) => {
                match icmp.compare(h, o) {
                    Ordering::Less => hi,
                    Ordering::Greater => other,
                    Ordering::Equal if matches!(hi, Limit::At(_)) => hi,
                    Ordering::Equal => other,
                }
            }
            (hi, Limit::None) => hi,
        }
    }

    /// Whether the read stops at `key`.
    #[inline(always)]
    fn stops(self, icmp: &impl Comparator, key: &[u8]) -> bool {
        match self {
            Limit::None => false,
            Limit::At(b) => icmp.compare(key, b) != Ordering::Less,
            Limit::Past(b) => icmp.compare(key, b) == Ordering::Greater,
        }
    }
}

/// Why the visit of a run of a block stopped before its end.
enum RunStop {
    /// At an entry past the limit.
    Bound,
    /// At a key that is not an internal key.
    BadKey,
    /// At a key not after the one before it.
    Order,
    /// The visitor asked to stop after this entry.
    Visitor,
}

/// Reads table `number` (cursor `cursor`'s) on from the key `prev` excludes, handing
/// each entry below `hi` and `bound` to `visit`, keeping `prev` the last key handed out,
/// `first_key` the first from this table and adding the bytes read to `read`. The entries
/// of each data block are decoded in one pass ([`TableIter::next_run`]).
///
/// [`TableIter::next_run`]: leveltable_table::TableIter::next_run
fn read_table(
    icmp: &impl Comparator,
    (number, cursor): (u64, usize),
    (hi, bound): (&Bound<Vec<u8>>, Option<&NextOther>),
    (prev, past_block, first_key, read): (&mut Vec<u8>, bool, &mut Option<Vec<u8>>, &mut u64),
    (table, map): (
        Result<std::sync::Arc<crate::table_cache::OpenTable>>,
        MapAhead,
    ),
    visit: &mut impl FnMut(Visited<'_>) -> bool,
) -> Result<(Stop, MapAhead)> {
    let table = table?;
    let in_table = |e: leveltable_table::Error| Error::from(e).in_table(table_file_name(number));
    let mut it = table.table().iter().fill_cache(false).with_map_ahead(map);
    if past_block {
        it.seek_past_block_of(prev);
    } else {
        it.seek(prev);
    }
    if it.valid() && icmp.compare(it.key(), prev) == Ordering::Equal {
        it.next();
    }
    let order_error = |offset: Option<u64>| {
        Error::corruption(
            table_file_name(number),
            "key order (a key not after the one before it)",
            offset.unwrap_or(0),
        )
    };
    let limit = Limit::of(icmp, hi, bound, cursor);
    // The tag of `prev`, which the key handed out next must follow (`None`: `prev` is not
    // an internal key, and nothing may follow it).
    let mut prev_tag = split(prev).map(|(_, tag)| tag);
    let mut why = None;
    while it.valid() {
        let stopped = it.next_run(&mut |key, value| {
            if limit.stops(icmp, key) {
                why = Some(RunStop::Bound);
                return false;
            }
            let Some((user, tag)) = split(key) else {
                why = Some(RunStop::BadKey);
                return false;
            };
            // In order: after `prev`, the key handed out last (or excluded by the seek).
            let prev_user = &prev[..prev.len().saturating_sub(TAG_LEN)];
            let same_user = match (prev_tag, compare_bytes(prev_user, user)) {
                (Some(_), Ordering::Less) => false,
                (Some(prev_tag), Ordering::Equal) if prev_tag > tag => true,
                _ => {
                    why = Some(RunStop::Order);
                    return false;
                }
            };
            *read += (key.len() + value.len()) as u64;
            let more = visit(Visited {
                user,
                value,
                sequence: tag >> 8,
                is_value: tag & 0xff == ValueType::Value as u64,
                same_user,
            });
            // Copied in two parts, the first 16 bytes and the rest: the block cursor writes
            // a short key as two 16-byte words, and a load within one word is served from
            // its store, where one spanning both would wait for them to reach the cache.
            let (head, rest) = key.split_at(key.len().min(16));
            // Copies of fixed size are made inline, where one of varying size is a call.
            prev.clear();
            match <&[u8; 16]>::try_from(head) {
                Ok(head) => prev.extend_from_slice(head),
                Err(_) => prev.extend_from_slice(head),
            }
            let mut words = rest.chunks_exact(8);
            for word in words.by_ref() {
                if let Ok(word) = <&[u8; 8]>::try_from(word) {
                    prev.extend_from_slice(word);
                }
            }
            if !words.remainder().is_empty() {
                prev.extend_from_slice(words.remainder());
            }
            prev_tag = Some(tag);
            if first_key.is_none() {
                *first_key = Some(key.to_vec());
            }
            if !more {
                why = Some(RunStop::Visitor);
            }
            more
        });
        if stopped {
            break;
        }
    }
    let stop = match why {
        None => Stop::End,
        Some(RunStop::Bound) => Stop::Bound,
        Some(RunStop::BadKey) => {
            return Err(bad_key(number, it.key(), it.block_offset().unwrap_or(0)));
        }
        Some(RunStop::Order) => return Err(order_error(it.block_offset())),
        Some(RunStop::Visitor) => Stop::Visitor {
            at_block_end: it.at_block_end(),
        },
    };
    it.status().map_err(in_table)?;
    Ok((stop, it.map_ahead()))
}
