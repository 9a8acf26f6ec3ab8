//! Reading a source in batches: the next entries of one memtable, level-0 table or level
//! within the bounds a cursor has left, stored end to end in one buffer (the part of
//! LevelDB's level and two-level iterators that reads).

use std::cmp::Ordering;
use std::ops::Bound;

use leveltable_table::{Comparator, MapAhead};

use crate::dbformat::show_key;
use crate::filename::table_file_name;
use crate::version::{Source, Version};
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// Most entries read per batch from one source.
pub(crate) const BATCH_ENTRIES: usize = 512;
/// A batch ends once its keys and values reach this many bytes.
pub(crate) const BATCH_BYTES: usize = 64 << 10;
/// A forward batch from a table goes on to the end of the data block it is in (so the
/// next one starts at a block boundary and reads no block twice), up to this many times
/// the limits above.
pub(crate) const BATCH_SLACK: usize = 4;
/// Why reading a batch from one table failed.
enum TableFetchError {
    /// The table could not be read.
    Table(leveltable_table::Error),
    /// A key was not after the one before it, in the data block at `offset`.
    Order { offset: u64 },
}

impl From<leveltable_table::Error> for TableFetchError {
    fn from(e: leveltable_table::Error) -> Self {
        TableFetchError::Table(e)
    }
}

/// How a batch is read from a source.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fetch {
    /// From the front (ascending), or from the back (descending).
    pub(crate) forward: bool,
    /// The table where the previous forward batch ended at a block's last entry, the key
    /// `lo` excludes.
    pub(crate) resume: Option<u64>,
    /// Whether blocks read from tables go into the block cache.
    pub(crate) fill_cache: bool,
    /// The table the previous forward batch read last, and how far its source was asked to
    /// map itself in: the next batch of that table carries it on.
    pub(crate) mapped: Option<(u64, MapAhead)>,
}

/// What a batch leaves for the next one of its source.
pub(crate) struct Fetched {
    /// The table where the batch ended at a block's last entry, if it did.
    pub(crate) ended: Option<u64>,
    /// The table a forward batch read last, and how far it was mapped in.
    pub(crate) mapped: Option<(u64, MapAhead)>,
}

/// Whether `key` is below the lower bound `lo`.
pub(crate) fn below<C: Comparator + ?Sized>(icmp: &C, key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Unbounded => false,
        Bound::Included(b) => icmp.compare(key, b) == Ordering::Less,
        Bound::Excluded(b) => icmp.compare(key, b) != Ordering::Greater,
    }
}

/// Whether `key` is above the upper bound `hi`.
pub(crate) fn above<C: Comparator + ?Sized>(icmp: &C, key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Unbounded => false,
        Bound::Included(b) => icmp.compare(key, b) == Ordering::Greater,
        Bound::Excluded(b) => icmp.compare(key, b) != Ordering::Less,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

/// Entries of one source, stored end to end in one buffer, handed out from either end.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) bytes: Vec<u8>,
    /// Per entry: where its key ends and where its value ends in `bytes`; each entry starts
    /// where the one before ends.
    pub(crate) ends: Vec<(usize, usize)>,
    /// Entries before `head` and from `tail` on are taken.
    pub(crate) head: usize,
    pub(crate) tail: usize,
}

impl Batch {
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.head = 0;
        self.tail = 0;
    }

    #[inline]
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
        self.tail = self.ends.len();
    }

    /// Keeps the first `len` entries read.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.ends.truncate(len);
        self.bytes.truncate(self.ends.last().map_or(0, |e| e.1));
        self.tail = self.tail.min(self.ends.len());
        self.head = self.head.min(self.tail);
    }

    #[inline]
    pub(crate) fn full(&self) -> bool {
        self.ends.len() >= BATCH_ENTRIES || self.bytes.len() >= BATCH_BYTES
    }

    /// Past the slack a batch may take to end at a block boundary.
    #[inline]
    pub(crate) fn overfull(&self) -> bool {
        self.ends.len() >= BATCH_SLACK * BATCH_ENTRIES
            || self.bytes.len() >= BATCH_SLACK * BATCH_BYTES
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head >= self.tail
    }

    /// The key of entry `i`, which must be below `ends.len()`.
    #[inline(always)]
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        &self.bytes[start..self.ends[i].0]
    }

    /// Entry `i`, which must be below `ends.len()`.
    #[inline]
    pub(crate) fn entry(&self, i: usize) -> (&[u8], &[u8]) {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1);
        let (key_end, end) = self.ends[i];
        (&self.bytes[start..key_end], &self.bytes[key_end..end])
    }

    /// The key of the entry read last (the one at the end of `ends`).
    pub(crate) fn last_read_key(&self) -> Option<&[u8]> {
        self.ends.len().checked_sub(1).map(|i| self.entry(i).0)
    }
}

/// Appends to `out` the next entries of source `i` within `(lo, hi)`, up to a batch's
/// worth, read as `how` says. On an error, `out` keeps the entries read before it (those of
/// a table whose claimed key range they fit), which come before the damage.
pub(crate) fn fetch(
    version: &Version,
    i: usize,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    how: Fetch,
    out: &mut Batch,
) -> Result<Fetched> {
    let Fetch {
        forward,
        resume,
        mapped,
        ..
    } = how;
    match &version.sources[i] {
        Source::Mem { table, .. } => {
            table.visit_range(as_ref(lo), as_ref(hi), forward, &mut |k, v| {
                out.push(k, v);
                !out.full()
            });
            Ok(Fetched {
                ended: None,
                mapped: None,
            })
        }
        Source::Files { files, .. } => {
            // Files are sorted and disjoint: skip those wholly outside the bounds by
            // binary search, then read on until the batch is full.
            let first = files.partition_point(|f| below(&version.icmp, &f.largest, lo));
            let end = files.partition_point(|f| !above(&version.icmp, &f.smallest, hi));
            let within = files.get(first..end.max(first)).unwrap_or(&[]);
            let mut fetched = Fetched {
                ended: None,
                mapped: None,
            };
            let mut visit = |f: &FileMetaData| -> Result<bool> {
                let table = version.tables.get(f.number)?;
                let past_block = resume == Some(f.number);
                let map = mapped
                    .filter(|&(number, _)| number == f.number)
                    .map(|(_, map)| map)
                    .unwrap_or_default();
                let first = out.ends.len();
                let (at_end, map) = match &version.bytewise {
                    Some(icmp) => {
                        fetch_table(icmp, table.table(), lo, hi, (how, map), past_block, out)
                    }
                    None => fetch_table(
                        &version.icmp,
                        table.table(),
                        lo,
                        hi,
                        (how, map),
                        past_block,
                        out,
                    ),
                }
                .map_err(|e| {
                    // The entries read before the failure stay in `out`, to be handed out
                    // before the error, if they lie where the MANIFEST says the table's do.
                    if check_claimed_range(version, f, out, first).is_err() {
                        out.truncate(first);
                    }
                    match e {
                        TableFetchError::Table(e) => {
                            Error::from(e).in_table(table_file_name(f.number))
                        }
                        TableFetchError::Order { offset } => Error::corruption(
                            table_file_name(f.number),
                            "key order (a key not after the one before it)",
                            offset,
                        ),
                    }
                })?;
                if let Err(e) = check_claimed_range(version, f, out, first) {
                    out.truncate(first);
                    return Err(e);
                }
                fetched.ended = at_end.then_some(f.number);
                fetched.mapped = forward.then_some((f.number, map));
                Ok(!out.full())
            };
            if forward {
                for f in within {
                    if !visit(f)? {
                        break;
                    }
                }
            } else {
                for f in within.iter().rev() {
                    if !visit(f)? {
                        break;
                    }
                }
            }
            Ok(fetched)
        }
    }
}

/// Appends entries of one table within `(lo, hi)` to `out` until it is full (forward:
/// and at the end of a data block, within the slack), a forward read carrying on the
/// mapping-in `map` of the batch before. With `past_block`, the key `lo` excludes is the
/// last of its data block, which is not read again. Returns whether a forward batch
/// ended at a block's last entry, and how far the table is now mapped in.
///
/// Invariant: the keys a source hands out strictly ascend from the front and strictly
/// descend from the back, each within `(lo, hi)`. A table whose keys are out of order
/// would otherwise make a cursor seek back to keys it already read, again and again; a
/// key not after the one before it (or not inside the bounds the cursor resumed from)
/// is an error instead, with the offset of its data block.
fn fetch_table<C: Comparator + ?Sized, R: leveltable_table::ReadAt>(
    icmp: &C,
    table: &leveltable_table::Table<R>,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    (how, map): (Fetch, MapAhead),
    past_block: bool,
    out: &mut Batch,
) -> std::result::Result<(bool, MapAhead), TableFetchError> {
    let mut it = table.iter().fill_cache(how.fill_cache).with_map_ahead(map);
    let forward = how.forward;
    let out_of_order = |it: &leveltable_table::TableIter<'_, R>| TableFetchError::Order {
        offset: it.block_offset().unwrap_or(0),
    };
    if forward {
        match lo {
            Bound::Unbounded => it.seek_to_first(),
            Bound::Excluded(k) if past_block => it.seek_past_block_of(k),
            Bound::Included(k) | Bound::Excluded(k) => it.seek(k),
        }
        if let Bound::Excluded(k) = lo {
            if it.valid() && icmp.compare(it.key(), k) == Ordering::Equal {
                it.next();
            }
        }
        while it.valid() && !above(icmp, it.key(), hi) {
            let in_order = match out.last_read_key() {
                Some(previous) => icmp.compare(previous, it.key()) == Ordering::Less,
                None => !below(icmp, it.key(), lo),
            };
            if !in_order {
                return Err(out_of_order(&it));
            }
            out.push(it.key(), it.value());
            if out.full() {
                let at_end = it.at_block_end();
                if at_end || out.overfull() {
                    it.status()?;
                    return Ok((at_end, it.map_ahead()));
                }
            }
            it.next();
        }
    } else {
        match hi {
            Bound::Unbounded => it.seek_to_last(),
            Bound::Included(k) | Bound::Excluded(k) => {
                it.seek(k);
                if !it.valid() {
                    it.status()?;
                    it.seek_to_last();
                } else if above(icmp, it.key(), hi) {
                    it.prev();
                }
            }
        }
        while it.valid() && !below(icmp, it.key(), lo) {
            let in_order = match out.last_read_key() {
                Some(previous) => icmp.compare(it.key(), previous) == Ordering::Less,
                None => !above(icmp, it.key(), hi),
            };
            if !in_order {
                return Err(out_of_order(&it));
            }
            out.push(it.key(), it.value());
            if out.full() {
                break;
            }
            it.prev();
        }
    }
    it.status()?;
    Ok((false, it.map_ahead()))
}

/// Checks that the entries a batch read from table `f` (those from `first` on) lie in
/// the key range the MANIFEST gives it. They ascend (or descend) strictly, so the two
/// ends suffice. Files are skipped and chosen by their ranges: a key outside its
/// table's range would be missed by some reads and found by others.
fn check_claimed_range(
    version: &Version,
    f: &FileMetaData,
    out: &Batch,
    first: usize,
) -> Result<()> {
    let Some(last) = out.ends.len().checked_sub(1).filter(|&l| l >= first) else {
        return Ok(());
    };
    check_range(version, f, out.key(first), out.key(last))
}

/// Checks that keys `a` and `b` read from table `f`, and so every key read between them
/// (they ascend or descend strictly), lie in the key range the MANIFEST gives it.
pub(crate) fn check_range(version: &Version, f: &FileMetaData, a: &[u8], b: &[u8]) -> Result<()> {
    let (low, high) = if version.icmp.compare(a, b) == Ordering::Greater {
        (b, a)
    } else {
        (a, b)
    };
    if version.icmp.compare(low, &f.smallest) == Ordering::Less
        || version.icmp.compare(high, &f.largest) == Ordering::Greater
    {
        let outside = if version.icmp.compare(low, &f.smallest) == Ordering::Less {
            low
        } else {
            high
        };
        return Err(Error::corruption(
            table_file_name(f.number),
            format!(
                "key range (holds {}, outside the range {}..={} the MANIFEST gives it)",
                show_key(outside),
                show_key(&f.smallest),
                show_key(&f.largest)
            ),
            0,
        ));
    }
    Ok(())
}
