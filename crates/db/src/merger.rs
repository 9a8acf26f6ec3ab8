//! A double-ended merge of the database's sorted sources: the memtables of the logs, each
//! level-0 table, and each deeper level as one run of non-overlapping tables (LevelDB's
//! `table/merger` and the level iterator of `db/version_set`).
//!
//! Cursors own their position instead of borrowing open tables: each reads a batch of
//! entries at a time through the table cache and remembers the last key it read, so an
//! iterator holds no table open between batches and the cache's bound on open tables holds
//! however many iterators are alive. Each source's unread keys are an interval narrowed from
//! both ends; every entry is handed out once, from the front or from the back.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use leveltable_table::Comparator;

use crate::dbformat::InternalKeyComparator;
use crate::filename::table_file_name;
use crate::memtable::MemTable;
use crate::table_cache::TableCache;
use crate::version_edit::FileMetaData;
use crate::{Error, Result};

/// Entries read per batch from one source.
const BATCH: usize = 64;

/// One internal key and its value.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// Where a version is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A write-ahead log, `NNNNNN.log`, replayed into memory.
    Log {
        /// The log's number.
        number: u64,
    },
    /// A table file, `NNNNNN.ldb` (or `.sst`).
    Table {
        /// The table's number.
        number: u64,
        /// Its level in the MANIFEST; `None` for a table the MANIFEST does not list (or,
        /// in a salvage, does not exist or could not be read).
        level: Option<usize>,
    },
}

/// A sorted source of entries.
#[derive(Debug)]
pub(crate) enum Source {
    /// Versions held in memory: the writes of one log, or what a salvage could read of a
    /// damaged table.
    Mem {
        origin: Origin,
        table: Arc<MemTable>,
    },
    /// Tables whose key ranges do not overlap, in order (one level-0 table, or a level).
    Files {
        level: Option<usize>,
        files: Vec<Arc<FileMetaData>>,
    },
}

/// What the merge reads through.
pub(crate) struct Store {
    pub(crate) icmp: InternalKeyComparator,
    pub(crate) tables: TableCache,
    pub(crate) sources: Vec<Source>,
}

/// Whether `key` is below the lower bound `lo`.
fn below(icmp: &InternalKeyComparator, key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Unbounded => false,
        Bound::Included(b) => icmp.compare(key, b) == Ordering::Less,
        Bound::Excluded(b) => icmp.compare(key, b) != Ordering::Greater,
    }
}

/// Whether `key` is above the upper bound `hi`.
fn above(icmp: &InternalKeyComparator, key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
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

impl Store {
    /// Up to `n` entries of source `i` within `(lo, hi)`, from the front (ascending) or
    /// from the back (descending).
    fn fetch(
        &self,
        i: usize,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        n: usize,
        forward: bool,
    ) -> Result<Vec<Entry>> {
        match &self.sources[i] {
            Source::Mem { table, .. } => {
                let slice = table.range(as_ref(lo), as_ref(hi));
                Ok(if forward {
                    slice.iter().take(n).cloned().collect()
                } else {
                    slice.iter().rev().take(n).cloned().collect()
                })
            }
            Source::Files { files, .. } => {
                let mut out = Vec::new();
                let mut visit = |f: &FileMetaData| -> Result<bool> {
                    if above(&self.icmp, &f.smallest, hi) || below(&self.icmp, &f.largest, lo) {
                        return Ok(true);
                    }
                    let table = self.tables.get(f.number)?;
                    let range = table.table().range((lo.clone(), hi.clone()));
                    let want = n - out.len();
                    let name = || table_file_name(f.number);
                    if forward {
                        for e in range.take(want) {
                            out.push(e.map_err(|e| Error::from(e).in_table(name()))?);
                        }
                    } else {
                        for e in range.rev().take(want) {
                            out.push(e.map_err(|e| Error::from(e).in_table(name()))?);
                        }
                    }
                    Ok(out.len() < n)
                };
                // Files are sorted and disjoint: skip those wholly outside the bounds by
                // binary search, then read on until enough entries are found.
                let first = files.partition_point(|f| below(&self.icmp, &f.largest, lo));
                let end = files.partition_point(|f| !above(&self.icmp, &f.smallest, hi));
                let within = files.get(first..end.max(first)).unwrap_or(&[]);
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
                Ok(out)
            }
        }
    }

    /// Where the entries of source `i` are stored.
    pub(crate) fn origin(&self, i: usize, key: &[u8]) -> Origin {
        match &self.sources[i] {
            Source::Mem { origin, .. } => *origin,
            Source::Files { level, files } => {
                // The file whose range holds the key: the first whose largest key is not
                // below it (files of a source do not overlap).
                let j = files
                    .partition_point(|f| self.icmp.compare(&f.largest, key) == Ordering::Less)
                    .min(files.len().saturating_sub(1));
                Origin::Table {
                    number: files.get(j).map_or(0, |f| f.number),
                    level: *level,
                }
            }
        }
    }
}

/// The unread part of one source.
struct Cursor {
    front: VecDeque<Entry>,
    /// Descending: the largest unread entry read from the back first.
    back: VecDeque<Entry>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// No entry of the source is left in `(lo, hi)`.
    drained: bool,
}

impl Cursor {
    fn front_item(&self) -> Option<&Entry> {
        self.front.front().or(self.back.back())
    }

    fn back_item(&self) -> Option<&Entry> {
        self.back.front().or(self.front.back())
    }
}

/// The merge of all sources within internal-key bounds, double-ended. Yields each entry
/// with the index of its source.
pub(crate) struct Merger {
    store: Arc<Store>,
    cursors: Vec<Cursor>,
    failed: bool,
}

impl Merger {
    pub(crate) fn new(store: Arc<Store>, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Self {
        let cursors = (0..store.sources.len())
            .map(|_| Cursor {
                front: VecDeque::new(),
                back: VecDeque::new(),
                lo: lo.clone(),
                hi: hi.clone(),
                drained: false,
            })
            .collect();
        Merger {
            store,
            cursors,
            failed: false,
        }
    }

    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    fn fill(&mut self, forward: bool) -> Result<()> {
        for (i, c) in self.cursors.iter_mut().enumerate() {
            let empty = if forward {
                c.front.is_empty()
            } else {
                c.back.is_empty()
            };
            if !empty || c.drained {
                continue;
            }
            let items = self.store.fetch(i, &c.lo, &c.hi, BATCH, forward)?;
            match items.last() {
                None => c.drained = true,
                Some((last, _)) if forward => {
                    c.lo = Bound::Excluded(last.clone());
                    c.front.extend(items);
                }
                Some((last, _)) => {
                    c.hi = Bound::Excluded(last.clone());
                    c.back.extend(items);
                }
            }
        }
        Ok(())
    }

    /// The index of the cursor holding the next entry from the front (or back).
    fn pick(&mut self, forward: bool) -> Result<Option<usize>> {
        if self.failed {
            return Ok(None);
        }
        if let Err(e) = self.fill(forward) {
            self.failed = true;
            return Err(e);
        }
        let icmp = &self.store.icmp;
        let mut best: Option<(usize, &Entry)> = None;
        for (i, c) in self.cursors.iter().enumerate() {
            let Some(item) = (if forward {
                c.front_item()
            } else {
                c.back_item()
            }) else {
                continue;
            };
            let better = match best {
                None => true,
                Some((_, b)) => {
                    let o = icmp.compare(&item.0, &b.0);
                    if forward {
                        o == Ordering::Less
                    } else {
                        o == Ordering::Greater
                    }
                }
            };
            if better {
                best = Some((i, item));
            }
        }
        Ok(best.map(|(i, _)| i))
    }

    /// The key of the next entry from the front, without taking it.
    pub(crate) fn peek_front(&mut self) -> Result<Option<&[u8]>> {
        Ok(self
            .pick(true)?
            .and_then(|i| self.cursors[i].front_item())
            .map(|e| e.0.as_slice()))
    }

    /// The key of the next entry from the back, without taking it.
    pub(crate) fn peek_back(&mut self) -> Result<Option<&[u8]>> {
        Ok(self
            .pick(false)?
            .and_then(|i| self.cursors[i].back_item())
            .map(|e| e.0.as_slice()))
    }

    /// Takes the next entry from the front.
    pub(crate) fn next_front(&mut self) -> Result<Option<(Entry, usize)>> {
        let Some(i) = self.pick(true)? else {
            return Ok(None);
        };
        let c = &mut self.cursors[i];
        Ok(c.front
            .pop_front()
            .or_else(|| c.back.pop_back())
            .map(|e| (e, i)))
    }

    /// Takes the next entry from the back.
    pub(crate) fn next_back(&mut self) -> Result<Option<(Entry, usize)>> {
        let Some(i) = self.pick(false)? else {
            return Ok(None);
        };
        let c = &mut self.cursors[i];
        Ok(c.back
            .pop_front()
            .or_else(|| c.front.pop_back())
            .map(|e| (e, i)))
    }
}
