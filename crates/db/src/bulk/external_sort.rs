//! Sorting more entries than fit in memory: sorted runs spilled as temporary files (a plain
//! sequence of checksummed records, read back through a buffer: nothing per entry stays in
//! memory, as a table's index would for long keys), then merged, at most [`MAX_FAN_IN`] at
//! once: more runs are first merged in groups into longer runs, pass by pass, so that the
//! open files and the merge's buffers stay bounded whatever the input's size.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use leveltable_process::TemporaryDir;

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
/// a run: a temporary file in `temp_dir`. [`finish`](Self::finish) merges the runs (or
/// sorts the buffer alone when nothing was spilled) and hands the entries out in order.
#[derive(Debug)]
pub struct ExternalSorter {
    budget: u64,
    duplicates: Duplicates,
    /// Keys and values back to back.
    arena: Vec<u8>,
    /// Per entry: where its key starts in the arena, the key's and the value's lengths.
    index: Vec<(usize, usize, usize)>,
    /// The runs spilled, in order.
    runs: Vec<PathBuf>,
    /// Where runs are spilled: removed when the sorter is dropped, or by
    /// [`leveltable_process::remove_temporaries`] on a signal.
    temp: TemporaryDir,
    entries: u64,
    /// The most runs merged at once ([`MAX_FAN_IN`]; smaller in tests).
    fan_in: usize,
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
            fan_in: MAX_FAN_IN,
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

    /// The buffered entries sorted by key, equal keys in the order given (their place in
    /// the arena, which grows in that order): an unstable sort, which needs no buffer of
    /// its own as a stable one would (half the index again).
    fn sorted_index(&mut self) -> Vec<(usize, usize, usize)> {
        let arena = &self.arena;
        let mut index = std::mem::take(&mut self.index);
        index.sort_unstable_by(|a, b| {
            arena[a.0..a.0 + a.1]
                .cmp(&arena[b.0..b.0 + b.1])
                .then(a.0.cmp(&b.0))
        });
        index
    }

    /// Writes the buffer as a sorted run.
    fn spill(&mut self) -> Result<()> {
        let index = self.sorted_index();
        let path = run_path(self.temp.path(), self.runs.len());
        let file = File::create_new(&path).map_err(|e| Error::op("cannot create", &path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let mut result = Ok(());
        distinct(&index, &self.arena, self.duplicates, |key, value| {
            if result.is_ok() {
                result = write_record(&mut out, key, value);
            }
        })?;
        result
            .and_then(|()| out.into_inner().map_err(|e| e.into_error()).map(drop))
            .map_err(|e| Error::op("cannot write", &path, e))?;
        self.arena.clear();
        self.runs.push(path);
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
        // The buffer is not needed again: the merge's buffers take its place.
        self.arena = Vec::new();
        let mut runs = std::mem::take(&mut self.runs);
        let mut names = runs.len();
        while runs.len() > self.fan_in {
            runs = self.merge_pass(&runs, &mut names)?;
        }
        merge(
            &runs,
            run_buffer(self.budget, runs.len()),
            self.duplicates,
            f,
        )
    }

    /// Merges each group of `fan_in` consecutive runs into one longer run (named from
    /// `names` on), removing the group's files: the runs in the same order, fewer. A later
    /// run still wins equal keys, as its group is later or it is later in its group.
    fn merge_pass(&self, runs: &[PathBuf], names: &mut usize) -> Result<Vec<PathBuf>> {
        let mut merged = Vec::with_capacity(runs.len().div_ceil(self.fan_in));
        for group in runs.chunks(self.fan_in) {
            if let [run] = group {
                merged.push(run.clone());
                continue;
            }
            let path = run_path(self.temp.path(), *names);
            *names += 1;
            let file = File::create_new(&path).map_err(|e| Error::op("cannot create", &path, e))?;
            let mut out = BufWriter::with_capacity(1 << 16, file);
            let buffer = run_buffer(self.budget, group.len());
            merge(group, buffer, self.duplicates, |key, value| {
                write_record(&mut out, key, value).map_err(|e| Error::op("cannot write", &path, e))
            })?;
            out.into_inner()
                .map_err(|e| Error::op("cannot write", &path, e.into_error()))?;
            for run in group {
                std::fs::remove_file(run).map_err(|e| Error::op("cannot remove", run, e))?;
            }
            merged.push(path);
        }
        Ok(merged)
    }
}

/// The most runs merged at once, each an open file with a buffer: well within the usual
/// limit of 1,024 open files, and a megabyte of buffers at the least.
const MAX_FAN_IN: usize = 256;

/// The bytes each of `runs` runs merged at once buffers: the budget shared among them,
/// within [`MIN_RUN_BUFFER`] and [`MAX_RUN_BUFFER`].
fn run_buffer(budget: u64, runs: usize) -> usize {
    usize::try_from(budget / runs.max(1) as u64)
        .unwrap_or(usize::MAX)
        .clamp(MIN_RUN_BUFFER, MAX_RUN_BUFFER)
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

/// The bytes a run's reader buffers during the merge, at least and at most: the budget
/// shared by the runs, within these bounds.
const MIN_RUN_BUFFER: usize = 4 << 10;
const MAX_RUN_BUFFER: usize = 1 << 20;

/// Bytes of a run record's header: the CRC32C of the rest, the key's and the value's lengths.
const RECORD_HEADER: usize = 4 + 8 + 8;

/// Writes one record of a run: the header (CRC32C of the lengths, key and value; the key's
/// and the value's lengths, little-endian), then the key and the value.
fn write_record(out: &mut impl Write, key: &[u8], value: &[u8]) -> std::io::Result<()> {
    let mut lengths = [0u8; 16];
    lengths[..8].copy_from_slice(&(key.len() as u64).to_le_bytes());
    lengths[8..].copy_from_slice(&(value.len() as u64).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c_append(crc32c::crc32c(&lengths), key), value);
    out.write_all(&crc.to_le_bytes())?;
    out.write_all(&lengths)?;
    out.write_all(key)?;
    out.write_all(value)
}

/// A run being read back in the merge: its current entry, and which run it is (for equal
/// keys, the latest run comes first).
struct Head {
    run: usize,
    path: PathBuf,
    reader: BufReader<File>,
    /// Where the next record starts.
    offset: u64,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Head {
    /// Reads the next record into `key` and `value`; `false` at the end of the run.
    fn advance(&mut self) -> Result<bool> {
        let path = self.path.as_path();
        let io = |e| Error::io(path, e);
        if self.reader.fill_buf().map_err(io)?.is_empty() {
            return Ok(false);
        }
        let bad = |what: &'static str, offset| Error::corruption(path, what, offset);
        let mut header = [0u8; RECORD_HEADER];
        if !read_full(&mut self.reader, &mut header).map_err(io)? {
            return Err(bad("sort run record (truncated)", self.offset));
        }
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or([0; 8]));
        let (key_len, value_len) = (word(4), word(12));
        for (buf, len) in [(&mut self.key, key_len), (&mut self.value, value_len)] {
            buf.clear();
            // Read as far as the file goes: a length that is not the record's is caught
            // below, never allocated at once.
            let read = (&mut self.reader).take(len).read_to_end(buf).map_err(io)?;
            if read as u64 != len {
                return Err(bad("sort run record (truncated)", self.offset));
            }
        }
        let crc = crc32c::crc32c_append(
            crc32c::crc32c_append(crc32c::crc32c(&header[4..]), &self.key),
            &self.value,
        );
        if crc.to_le_bytes() != header[..4] {
            return Err(bad("sort run record (checksum mismatch)", self.offset));
        }
        self.offset = self
            .offset
            .saturating_add(RECORD_HEADER as u64)
            .saturating_add(key_len)
            .saturating_add(value_len);
        Ok(true)
    }
}

/// Fills `buf` from `reader`: `false` if it ends first.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: invert the key order, prefer the later run.
        other.key.cmp(&self.key).then(self.run.cmp(&other.run))
    }
}

/// The file of run `index` in `dir`.
fn run_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("run-{index:06}"))
}

/// Merges the sorted runs (each without duplicates) read through buffers of `buffer` bytes,
/// the later run winning equal keys.
fn merge(
    runs: &[PathBuf],
    buffer: usize,
    duplicates: Duplicates,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, path) in runs.iter().enumerate() {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut head = Head {
            run,
            path: path.clone(),
            reader: BufReader::with_capacity(buffer, file),
            offset: 0,
            key: Vec::new(),
            value: Vec::new(),
        };
        if head.advance()? {
            heap.push(head);
        }
    }
    let mut last: Option<Vec<u8>> = None;
    while let Some(mut head) = heap.pop() {
        if last.as_deref() == Some(head.key.as_slice()) {
            // An earlier run's entry for a key already handed out from a later run.
            if duplicates == Duplicates::Error {
                return Err(duplicate(&head.key));
            }
        } else {
            f(&head.key, &head.value)?;
            let buf = last.get_or_insert_with(Vec::new);
            buf.clear();
            buf.extend_from_slice(&head.key);
        }
        if head.advance()? {
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
        assert!(err.contains("run-000000"), "{err}");
    }

    type Pair = (Vec<u8>, Vec<u8>);

    /// A sorter of a 1 MiB budget merging at most `fan_in` runs at once, fed `keys` (each
    /// with a value naming its position in the input), and what it hands out.
    fn sorted(fan_in: usize, duplicates: Duplicates, keys: &[u32]) -> (usize, Result<Vec<Pair>>) {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(1 << 20, duplicates, dir.path()).unwrap();
        sorter.fan_in = fan_in;
        for (at, k) in keys.iter().enumerate() {
            let value = format!("{at:08}{}", "v".repeat(200));
            sorter
                .add(format!("key{k:08}").as_bytes(), value.as_bytes())
                .unwrap();
        }
        let runs = sorter.runs.len();
        let mut out = Vec::new();
        let result = sorter.finish(|k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        });
        (runs, result.map(|()| out))
    }

    /// Runs merged in passes of at most `fan_in` give what one merge of them all gives:
    /// every key once, in order, the value given last winning.
    #[test]
    fn runs_merged_in_passes_keep_the_last_value() {
        // 60,000 entries of about 240 bytes in a 1 MiB budget: 15 runs or so, each key
        // given three times, far apart.
        let keys: Vec<u32> = (0..3)
            .flat_map(|round| (0..20_000u32).map(move |k| (k * 7919 + round) % 20_000))
            .collect();
        let (runs, one_pass) = sorted(MAX_FAN_IN, Duplicates::KeepLast, &keys);
        assert!(runs > 9, "{runs} runs");
        let one_pass = one_pass.unwrap();
        assert_eq!(one_pass.len(), 20_000);
        let mut last = std::collections::BTreeMap::new();
        for (at, k) in keys.iter().enumerate() {
            last.insert(format!("key{k:08}").into_bytes(), at);
        }
        for ((key, value), (want_key, at)) in one_pass.iter().zip(&last) {
            assert_eq!(key, want_key);
            assert_eq!(&value[..8], format!("{at:08}").as_bytes());
        }
        for fan_in in [2, 3, 4] {
            let (_, passes) = sorted(fan_in, Duplicates::KeepLast, &keys);
            assert!(passes.unwrap() == one_pass, "fan-in {fan_in}");
        }
    }

    /// Within one buffer (no run spilled), the value given last wins among many of a key:
    /// the unstable sort keeps equal keys in the order given.
    #[test]
    fn in_memory_the_last_value_wins() {
        let keys: Vec<u32> = (0..4_000u32).map(|i| (i * 7919) % 1_000).collect();
        let (runs, sorted) = sorted(MAX_FAN_IN, Duplicates::KeepLast, &keys);
        assert_eq!(runs, 0);
        let sorted = sorted.unwrap();
        assert_eq!(sorted.len(), 1_000);
        for (key, value) in &sorted {
            let at = keys
                .iter()
                .rposition(|k| format!("key{k:08}").as_bytes() == key.as_slice())
                .unwrap();
            assert_eq!(&value[..8], format!("{at:08}").as_bytes());
        }
    }

    /// A key given twice in different runs is refused when runs are merged in passes too.
    #[test]
    fn a_duplicate_across_runs_is_refused_in_a_pass() {
        let mut keys: Vec<u32> = (0..20_000).collect();
        keys.push(12_345);
        let (runs, result) = sorted(2, Duplicates::Error, &keys);
        assert!(runs > 2, "{runs} runs");
        let err = result.unwrap_err().to_string();
        assert!(err.contains("key00012345"), "{err}");
    }

    /// Each pass leaves only its merged runs behind: the files merged are removed.
    #[test]
    fn a_pass_removes_the_runs_it_merged() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSorter::new(1 << 20, Duplicates::Error, dir.path()).unwrap();
        for k in 0..40_000u32 {
            sorter
                .add(format!("key{k:08}").as_bytes(), &[1u8; 200])
                .unwrap();
        }
        sorter.fan_in = 3;
        let runs = std::mem::take(&mut sorter.runs);
        let mut names = runs.len();
        let merged = sorter.merge_pass(&runs, &mut names).unwrap();
        assert_eq!(merged.len(), runs.len().div_ceil(3));
        let mut files: Vec<PathBuf> = std::fs::read_dir(sorter.temp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut want = merged.clone();
        want.sort();
        assert_eq!(files, want);
    }
}
