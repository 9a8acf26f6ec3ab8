//! Batched lookups in a database: the keys sorted once, each source visited once for all
//! the keys still undecided, each table asked about its keys in one pass
//! ([`Table::internal_get_many`](leveltable_table::Table::internal_get_many)).

use std::cmp::Ordering;

use leveltable_table::comparator::compare_bytes;
use leveltable_table::{Comparator, ReadAt};

use crate::Result;
use crate::db::Db;
use crate::dbformat::{
    InternalKeyComparator, InternalKeyError, LookupKey, LookupResult, ParsedInternalKey, TAG_LEN,
    ValueType, append_internal_key,
};
use crate::filename::table_file_name;
use crate::internal_table::InternalTable;
use crate::version::Source;
use crate::version_edit::FileMetaData;

/// The smallest batch [`Db::lookup_many`] splits between threads: below it, starting a
/// thread costs more than its share of the lookups saves.
pub const GET_MANY_PARALLEL_BATCH: usize = 256;

/// The most threads one [`Db::lookup_many`] uses.
pub const GET_MANY_MAX_THREADS: usize = 8;

/// The user key of an internal key (the key less its tag).
fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len().saturating_sub(TAG_LEN)]
}

/// The sequence number of a version found, `None` for none.
fn sequence_of(r: &LookupResult) -> Option<u64> {
    match r {
        LookupResult::Value { sequence, .. } | LookupResult::Deleted { sequence } => {
            Some(*sequence)
        }
        LookupResult::NotFound => None,
    }
}

impl<R: ReadAt> InternalTable<R> {
    /// [`get_at`](Self::get_at) for many user keys, in one pass over the table: `out[i]`
    /// becomes what `get_at(user_keys[i], sequence)` answers.
    ///
    /// # Errors
    /// As [`get_at`](Self::get_at), for any key.
    pub fn get_many_at(
        &self,
        user_keys: &[&[u8]],
        sequence: u64,
        out: &mut [LookupResult],
    ) -> Result<()> {
        // Lookup keys `k @ sequence` and floors `k @ 0` (type deletion), as in `get_at`,
        // end to end in one buffer.
        let mut bytes = Vec::with_capacity(user_keys.iter().map(|k| 2 * (k.len() + TAG_LEN)).sum());
        let mut spans = Vec::with_capacity(user_keys.len());
        for k in user_keys {
            let start = bytes.len();
            append_internal_key(&mut bytes, k, sequence, ValueType::FOR_SEEK)?;
            append_internal_key(&mut bytes, k, 0, ValueType::Deletion)?;
            spans.push((start, start + k.len() + TAG_LEN, bytes.len()));
        }
        let lookups: Vec<&[u8]> = spans.iter().map(|&(s, m, _)| &bytes[s..m]).collect();
        let cmp = self.table().comparator();
        self.decide_many(&lookups, out, |i, key, _| {
            let (_, floor_start, end) = spans[i];
            cmp.compare(key, &bytes[floor_start..end]) != Ordering::Greater
        })
    }

    /// [`get_many_at`](Self::get_many_at) with each key's lookup key `k @ sequence` built
    /// by the caller (`lookups[i]` that of `user_keys[i]`): the first entry at or after it
    /// decides the key if it is a version of the key under the user order `user`.
    fn get_many_looked_up<U: Comparator + ?Sized>(
        &self,
        lookups: &[&[u8]],
        user_keys: &[&[u8]],
        user: &U,
        out: &mut [LookupResult],
    ) -> Result<()> {
        self.decide_many(lookups, out, |i, _, parsed| {
            user.compare(parsed.user_key, user_keys[i]) == Ordering::Equal
        })
    }

    /// Looks up `lookups` in one pass: the first entry at or after `lookups[i]` decides
    /// `out[i]` if `is_a_version(i, key, parsed key)` says it is a version of the key sought.
    /// An entry whose key does not parse fails the batch at the lookup that found it.
    fn decide_many(
        &self,
        lookups: &[&[u8]],
        out: &mut [LookupResult],
        is_a_version: impl Fn(usize, &[u8], &ParsedInternalKey<'_>) -> bool,
    ) -> Result<()> {
        let table = self.table();
        let mut bad: Option<(usize, InternalKeyError)> = None;
        table.internal_get_many(lookups, |i, key, value| {
            let parsed = match ParsedInternalKey::parse(key) {
                Ok(p) => p,
                Err(e) => {
                    bad.get_or_insert((i, e));
                    return;
                }
            };
            if is_a_version(i, key, &parsed) {
                out[i] = LookupResult::decided_by(&parsed, value);
            }
        })?;
        match bad {
            None => Ok(()),
            Some((i, e)) => Err(e.corruption_at(table.approximate_offset_of(lookups[i]))),
        }
    }
}

impl Db {
    /// The values of many keys at once, in the order given (duplicates and any order
    /// allowed): what [`get`](Self::get) answers for each. The keys are sorted once and each
    /// table is read once for all of its keys, each data block decoded once; a large batch
    /// is shared between the machine's cores (see [`lookup_many`](Self::lookup_many)).
    ///
    /// # Errors
    /// As [`get`](Self::get), if the lookup of any key fails.
    pub fn get_many<K: AsRef<[u8]> + Sync>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.get_many_at(keys, self.snapshot())
    }

    /// [`get_many`](Self::get_many) at the snapshot `sequence`.
    ///
    /// # Errors
    /// As [`get_at`](Self::get_at), if the lookup of any key fails.
    pub fn get_many_at<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
        sequence: u64,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self
            .lookup_many(keys, sequence)?
            .into_iter()
            .map(LookupResult::into_value)
            .collect())
    }

    /// [`lookup`](Self::lookup) for many keys at once.
    ///
    /// A batch of at least [`GET_MANY_PARALLEL_BATCH`] keys is split between the cores the
    /// process could run on when the database was opened (scoped threads, at most
    /// [`GET_MANY_MAX_THREADS`]), each looking up its share as below.
    ///
    /// # Errors
    /// As [`lookup`](Self::lookup), if the lookup of any key fails.
    pub fn lookup_many<K: AsRef<[u8]> + Sync>(
        &self,
        keys: &[K],
        sequence: u64,
    ) -> Result<Vec<LookupResult>> {
        let sequence = self.read_sequence(sequence);
        let threads = self
            .cores
            .min(GET_MANY_MAX_THREADS)
            .min(keys.len() / (GET_MANY_PARALLEL_BATCH / 2))
            .max(1);
        if threads == 1 {
            return self.lookup_many_here(keys, sequence);
        }
        let share = keys.len().div_ceil(threads);
        std::thread::scope(|scope| {
            // The calling thread looks up the first share itself: one thread fewer to start.
            let mut parts = keys.chunks(share);
            let first = parts.next().unwrap_or_default();
            // A share whose thread the system does not start is looked up here, in turn.
            let others: Vec<_> = parts
                .map(|part| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || self.lookup_many_here(part, sequence))
                        .map_err(|_| part)
                })
                .collect();
            let mut out = Vec::with_capacity(keys.len());
            out.extend(self.lookup_many_here(first, sequence)?);
            for part in others {
                let found = match part {
                    Ok(thread) => thread
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p))?,
                    Err(part) => self.lookup_many_here(part, sequence)?,
                };
                out.extend(found);
            }
            Ok(out)
        })
    }

    /// [`lookup_many`](Self::lookup_many) on the calling thread.
    fn lookup_many_here<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        sequence: u64,
    ) -> Result<Vec<LookupResult>> {
        let user = &*self.user;
        // The keys sorted, each beside its position (no indirection per comparison). Equal
        // keys are looked up alike, so their order among themselves does not matter.
        let mut sorted: Vec<(&[u8], usize)> = keys.iter().map(AsRef::as_ref).zip(0..).collect();
        if self.version.bytewise.is_some() {
            sorted.sort_unstable_by(|a, b| compare_bytes(a.0, b.0));
        } else {
            sorted.sort_unstable_by(|a, b| user.compare(a.0, b.0));
        }
        let mut order: Vec<usize> = sorted.into_iter().map(|(_, i)| i).collect();
        let mut best = vec![LookupResult::NotFound; keys.len()];
        // Without `newest_wins`, the first source (newest first) with a version decides.
        let mut decided = vec![false; keys.len()];
        let mut found = vec![LookupResult::NotFound; keys.len()];
        for source in &self.version.sources {
            order.retain(|&i| !decided[i]);
            if order.is_empty() {
                break;
            }
            match source {
                Source::Mem { table, .. } => {
                    // Only the keys within the memtable's user keys may have a version in
                    // it: `order` is sorted, so they are one run of it. (Versions added
                    // after the bounds were read are newer than the snapshot.)
                    let (Some(first), Some(last)) = (table.first(), table.last()) else {
                        continue;
                    };
                    let (lo, hi) = (user_key(&first.0), user_key(&last.0));
                    let start =
                        order.partition_point(|&i| user.compare(keys[i].as_ref(), lo).is_lt());
                    let end =
                        order.partition_point(|&i| user.compare(keys[i].as_ref(), hi).is_le());
                    for &i in order.get(start..end).unwrap_or_default() {
                        found[i] = table.lookup(&LookupKey::new(keys[i].as_ref(), sequence)?)?;
                    }
                }
                Source::Files { files, .. } => {
                    self.lookup_many_files(files, keys, &order, sequence, &mut found)?;
                }
            }
            for &i in &order {
                let f = std::mem::replace(&mut found[i], LookupResult::NotFound);
                if f == LookupResult::NotFound {
                    continue;
                }
                if !self.version.newest_wins {
                    best[i] = f;
                    decided[i] = true;
                } else if sequence_of(&f) > sequence_of(&best[i]) {
                    best[i] = f;
                }
            }
        }
        Ok(best)
    }

    /// Looks up the keys `order` lists (sorted by user key) in one level's files, sorted
    /// and disjoint, into `found`: each key in the one file whose range may hold it (as
    /// [`lookup`](Self::lookup) does), each file asked once for all its keys.
    fn lookup_many_files<K: AsRef<[u8]>>(
        &self,
        files: &[std::sync::Arc<FileMetaData>],
        keys: &[K],
        order: &[usize],
        sequence: u64,
        found: &mut [LookupResult],
    ) -> Result<()> {
        match &self.version.bytewise {
            Some(icmp) => self.lookup_many_files_with(icmp, files, keys, order, sequence, found),
            None => {
                self.lookup_many_files_with(&self.version.icmp, files, keys, order, sequence, found)
            }
        }
    }

    /// [`lookup_many_files`](Self::lookup_many_files) under `icmp`, the database's order
    /// (its bytewise form, compared inline, where the user order is bytewise).
    fn lookup_many_files_with<C: Comparator + ?Sized, K: AsRef<[u8]>>(
        &self,
        icmp: &InternalKeyComparator<C>,
        files: &[std::sync::Arc<FileMetaData>],
        keys: &[K],
        order: &[usize],
        sequence: u64,
        found: &mut [LookupResult],
    ) -> Result<()> {
        let user = &**icmp.user_comparator();
        // Each key's lookup key `k @ sequence`, built once, end to end in one buffer.
        let mut lookups = Vec::with_capacity(
            order
                .iter()
                .map(|&i| keys[i].as_ref().len() + TAG_LEN)
                .sum(),
        );
        let mut ends = Vec::with_capacity(order.len());
        for &i in order {
            append_internal_key(
                &mut lookups,
                keys[i].as_ref(),
                sequence,
                ValueType::FOR_SEEK,
            )?;
            ends.push(lookups.len());
        }
        let lookup = |j: usize| {
            let start = j.checked_sub(1).map_or(0, |p| ends[p]);
            &lookups[start..ends[j]]
        };
        let mut group: Vec<usize> = Vec::new();
        let mut group_keys: Vec<&[u8]> = Vec::new();
        let mut group_lookups: Vec<&[u8]> = Vec::new();
        let mut results: Vec<LookupResult> = Vec::new();
        let mut next = 0;
        // `order[j]` is the next key to look up.
        let mut j = 0;
        while j < order.len() {
            // The first file whose largest key is not below the lookup key (LevelDB's
            // FindFile). Lookup keys of sorted user keys at one sequence are sorted, so the
            // file only moves forward.
            while next < files.len()
                && icmp.compare(&files[next].largest, lookup(j)) == Ordering::Less
            {
                next += 1;
            }
            let Some(f) = files.get(next) else {
                break;
            };
            group.clear();
            group_keys.clear();
            group_lookups.clear();
            let smallest_user = user_key(&f.smallest);
            while j < order.len() && icmp.compare(lookup(j), &f.largest) != Ordering::Greater {
                let i = order[j];
                let key = keys[i].as_ref();
                if user.compare(key, smallest_user) != Ordering::Less {
                    group.push(i);
                    group_keys.push(key);
                    group_lookups.push(lookup(j));
                }
                j += 1;
            }
            if group.is_empty() {
                continue;
            }
            let table = self.version.tables.get(f.number)?;
            results.clear();
            results.resize(group.len(), LookupResult::NotFound);
            table
                .get_many_looked_up(&group_lookups, &group_keys, user, &mut results)
                .map_err(|e| e.in_table(table_file_name(f.number)))?;
            for (&i, r) in group.iter().zip(results.drain(..)) {
                found[i] = r;
            }
        }
        Ok(())
    }
}
