//! Sorting more entries than fit in memory: sorted runs spilled as temporary tables (our own
//! format, read back block by block), then merged.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use leveltable_process::TemporaryDir;
use leveltable_table::{BuildOptions, Compression, ReadOptions, Table, TableBuilder, TableIter};

use crate::{Error, Result};

/// What to do with a key given more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Duplicates {
    /// Refuse it: the sort fails with an error naming the key.
    #[default]
    Error,
    /// Keep the value given last.
    KeepLast,
}

/// Bookkeeping bytes counted per buffered entry besides its key and value (its index entry,
/// and slack for the sort).
const ENTRY_OVERHEAD: u64 = 32;

/// Sorts entries given in any order within a memory budget.
///
/// Entries are buffered in one arena until the budget is reached, then sorted and written as
/// a run: a temporary table in `temp_dir`. [`finish`](Self::finish) merges the runs (or
/// sorts the buffer alone when nothing was spilled) and hands the entries out in order.
#[derive(Debug)]
pub struct ExternalSorter {
    budget: u64,
    duplicates: Duplicates,
    /// Keys and values back to back.
    arena: Vec<u8>,
    /// Per entry: where its key starts in the arena, the key's and the value's lengths.
    index: Vec<(usize, usize, usize)>,
    runs: Vec<Table<File>>,
    /// Where runs are spilled: removed when the sorter is dropped, or by
    /// [`leveltable_process::remove_temporaries`] on a signal.
    temp: TemporaryDir,
    entries: u64,
}

impl ExternalSorter {
    /// A sorter that holds at most about `budget` bytes of entries in memory and spills runs
    /// to a temporary directory `.leveltable-sort-*` inside `temp_dir`. The directory is
    /// registered with [`leveltable_table::atomic_file`]: a program that calls
    /// [`remove_temporaries`](leveltable_process::remove_temporaries) on a
    /// signal removes it too.
    ///
    /// # Errors
    /// [`Error::FileOp`] if the temporary directory cannot be made.
    pub fn new(budget: u64, duplicates: Duplicates, temp_dir: &Path) -> Result<ExternalSorter> {
        let temp = TemporaryDir::new_in(temp_dir, ".leveltable-sort-")
            .map_err(|e| Error::op("cannot create a directory in", temp_dir, e))?;
        let budget = budget.max(1 << 20);
        // The arena never grows past the budget before a spill, so reserving it up front
        // (address space only: pages are touched as entries arrive) spares the copy a
        // doubling reallocation would make, which would hold the old and the new buffer at
        // once. A budget too large to reserve grows as needed instead.
        let mut arena = Vec::new();
        let _ = arena.try_reserve_exact(usize::try_from(budget).unwrap_or(usize::MAX));
        Ok(ExternalSorter {
            budget,
            duplicates,
            arena,
            index: Vec::new(),
            runs: Vec::new(),
            temp,
            entries: 0,
        })
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Adds an entry, spilling a run first if the budget is full.
    ///
    /// # Errors
    /// Writing a run; a duplicate key within it under [`Duplicates::Error`].
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let used = (self.arena.len() as u64)
            .saturating_add((self.index.len() as u64).saturating_mul(ENTRY_OVERHEAD));
        let adding = (key.len() as u64)
            .saturating_add(value.len() as u64)
            .saturating_add(ENTRY_OVERHEAD);
        if !self.index.is_empty() && used.saturating_add(adding) > self.budget {
            self.spill()?;
        }
        self.index.push((self.arena.len(), key.len(), value.len()));
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
        self.entries += 1;
        Ok(())
    }

    /// The buffered entries sorted by key, equal keys in the order given.
    fn sorted_index(&mut self) -> Vec<(usize, usize, usize)> {
        let arena = &self.arena;
        let mut index = std::mem::take(&mut self.index);
        index.sort_by(|a, b| arena[a.0..a.0 + a.1].cmp(&arena[b.0..b.0 + b.1]));
        index
    }

    /// Writes the buffer as a sorted run.
    fn spill(&mut self) -> Result<()> {
        let index = self.sorted_index();
        let path = run_path(self.temp.path(), self.runs.len());
        let file = File::create_new(&path).map_err(|e| Error::op("cannot create", &path, e))?;
        let options = BuildOptions::default().compression(Compression::None);
        let mut builder = TableBuilder::new(BufWriter::with_capacity(1 << 16, file), options)?;
        let arena = &self.arena;
        let mut result = Ok(());
        distinct(&index, arena, self.duplicates, |key, value| {
            if result.is_ok() {
                result = builder
                    .add(key, value)
                    .map_err(|e| Error::writing(&path, e));
            }
        })?;
        result?;
        builder.finish().map_err(|e| Error::writing(&path, e))?;
        builder
            .into_inner()
            .into_inner()
            .map_err(|e| Error::op("cannot write", &path, e.into_error()))?;
        self.arena.clear();
        let file = File::open(&path).map_err(|source| Error::io(&path, source))?;
        let table = Table::open(file, ReadOptions::default())
            .map_err(|e| Error::from(e).in_table(&path))?;
        self.runs.push(table);
        Ok(())
    }

    /// Hands every entry to `f` in key order, one per key.
    ///
    /// # Errors
    /// A duplicate key under [`Duplicates::Error`] (naming it); reading a run; the first
    /// error `f` returns.
    pub fn finish(mut self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        if self.runs.is_empty() {
            let index = self.sorted_index();
            let mut result = Ok(());
            distinct(&index, &self.arena, self.duplicates, |key, value| {
                if result.is_ok() {
                    result = f(key, value);
                }
            })?;
            return result;
        }
        if !self.index.is_empty() {
            self.spill()?;
        }
        merge(self.temp.path(), &self.runs, self.duplicates, f)
    }
}

/// Calls `f` for each distinct key of the sorted `index`, with the value `duplicates` picks.
fn distinct(
    index: &[(usize, usize, usize)],
    arena: &[u8],
    duplicates: Duplicates,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<()> {
    let key = |e: &(usize, usize, usize)| &arena[e.0..e.0 + e.1];
    let value = |e: &(usize, usize, usize)| &arena[e.0 + e.1..e.0 + e.1 + e.2];
    for (i, entry) in index.iter().enumerate() {
        if let Some(next) = index.get(i + 1) {
            if key(next) == key(entry) {
                match duplicates {
                    Duplicates::Error => return Err(duplicate(key(entry))),
                    Duplicates::KeepLast => continue,
                }
            }
        }
        f(key(entry), value(entry));
    }
    Ok(())
}

/// The error for a key given twice.
pub(crate) fn duplicate(key: &[u8]) -> Error {
    Error::DuplicateKey { key: key.to_vec() }
}

/// A run's cursor in the merge heap: smallest key first, and for equal keys the latest run.
struct Head<'t> {
    run: usize,
    cursor: TableIter<'t, File>,
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: invert the key order, prefer the later run.
        other
            .cursor
            .key()
            .cmp(self.cursor.key())
            .then(self.run.cmp(&other.run))
    }
}

/// The file of run `index` in `dir`.
fn run_path(dir: &Path, index: usize) -> std::path::PathBuf {
    dir.join(format!("run-{index:06}.ldb"))
}

/// Merges sorted runs (each without duplicates, spilled in `dir`), the later run winning
/// equal keys.
fn merge(
    dir: &Path,
    runs: &[Table<File>],
    duplicates: Duplicates,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    // A run that cannot be read back is named.
    let named = |run: usize| move |e| Error::from(e).in_table(run_path(dir, run));
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, table) in runs.iter().enumerate() {
        let mut cursor = table.iter();
        cursor.seek_to_first();
        cursor.status().map_err(named(run))?;
        if cursor.valid() {
            heap.push(Head { run, cursor });
        }
    }
    let mut last: Option<Vec<u8>> = None;
    while let Some(mut head) = heap.pop() {
        let key = head.cursor.key();
        if last.as_deref() == Some(key) {
            // An earlier run's entry for a key already handed out from a later run.
            if duplicates == Duplicates::Error {
                return Err(duplicate(key));
            }
        } else {
            f(key, head.cursor.value())?;
            let buf = last.get_or_insert_with(Vec::new);
            buf.clear();
            buf.extend_from_slice(key);
        }
        head.cursor.next();
        head.cursor.status().map_err(named(head.run))?;
        if head.cursor.valid() {
            heap.push(head);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spilled run that cannot be read back is named in the error.
    #[test]
    fn a_bad_run_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(1 << 20, Duplicates::Error, dir.path()).unwrap();
        for i in (0..30_000u32).rev() {
            sorter
                .add(format!("key{i:08}").as_bytes(), &[7u8; 60])
                .unwrap();
        }
        assert!(!sorter.runs.is_empty());
        let run = run_path(sorter.temp.path(), 0);
        let mut bytes = std::fs::read(&run).unwrap();
        for b in &mut bytes[10..40] {
            *b ^= 0xff;
        }
        std::fs::write(&run, &bytes).unwrap();
        let err = sorter.finish(|_, _| Ok(())).unwrap_err().to_string();
        assert!(err.contains("run-000000.ldb"), "{err}");
    }
}
