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
        visit: &mut dyn FnMut(Visited<'_>) -> bool,
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
        visit: &mut dyn FnMut(Visited<'_>) -> bool,
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

/// Reads table `number` (cursor `cursor`'s) on from the key `prev` excludes, handing
/// each entry below `hi` and `bound` to `visit`, keeping `prev` the last key handed out,
/// `first_key` the first from this table and adding the bytes read to `read`.
fn read_table(
    icmp: &impl Comparator,
    (number, cursor): (u64, usize),
    (hi, bound): (&Bound<Vec<u8>>, Option<&NextOther>),
    (prev, past_block, first_key, read): (&mut Vec<u8>, bool, &mut Option<Vec<u8>>, &mut u64),
    (table, map): (
        Result<std::sync::Arc<crate::table_cache::OpenTable>>,
        MapAhead,
    ),
    visit: &mut dyn FnMut(Visited<'_>) -> bool,
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
    let mut stop = Stop::End;
    while it.valid() {
        let key = it.key();
        if above(icmp, key, hi) {
            stop = Stop::Bound;
            break;
        }
        if let Some((b, j)) = bound {
            match icmp.compare(key, b) {
                Ordering::Less => {}
                Ordering::Equal if cursor < *j => {}
                _ => {
                    stop = Stop::Bound;
                    break;
                }
            }
        }
        let Some((user, tag)) = split(key) else {
            return Err(bad_key(number, key, it.block_offset().unwrap_or(0)));
        };
        // In order: after `prev`, the key handed out last (or excluded by the seek).
        let same_user = match split(prev) {
            Some((prev_user, prev_tag)) => match compare_bytes(prev_user, user) {
                Ordering::Less => false,
                Ordering::Equal if prev_tag > tag => true,
                _ => return Err(order_error(it.block_offset())),
            },
            None => return Err(order_error(it.block_offset())),
        };
        let value = it.value();
        *read += (key.len() + value.len()) as u64;
        let more = visit(Visited {
            user,
            value,
            sequence: tag >> 8,
            is_value: tag & 0xff == ValueType::Value as u64,
            same_user,
        });
        prev.clear();
        prev.extend_from_slice(key);
        if first_key.is_none() {
            *first_key = Some(key.to_vec());
        }
        if !more {
            stop = Stop::Visitor {
                at_block_end: it.at_block_end(),
            };
            break;
        }
        it.next();
    }
    it.status().map_err(in_table)?;
    Ok((stop, it.map_ahead()))
}
