//! Batched lookups: many keys answered in one pass over the table in file order.
//!
//! A single get is a chain of dependent memory accesses: the index search, then the filter's
//! bits, then the data block. A batch breaks the chain: every key's block is found through
//! the index first, the fence's tree walked a level at a time for all the keys, so that each
//! level's misses overlap; then every key's filter is found and requested from memory, and
//! only then asked; then each data block that still has candidates is read and decoded once
//! for all of them, in file order (sorting by block offset brings a block's keys together
//! with integer compares, not key compares), the end of the block four ahead and the whole
//! next block requested from memory while this one is searched.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;

use crate::block::Cursor;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::counters::Counter;
use crate::format::BlockHandle;
use crate::table::Located;

/// How many blocks ahead a batch requests every line of the blocks it will search. Two to
/// eight measured alike; requesting only the end of the block this far ahead and the whole
/// block one ahead measured 7–10% slower (the search's misses inside a block then wait for
/// one another).
const BLOCKS_AHEAD: usize = 4;
use crate::{ReadAt, Result, Table};

/// One key of a batch on its way through the passes.
struct Probe {
    /// Its position in the caller's slice.
    at: usize,
    /// The data block that may hold it, `None` past the last block or when the filter rules
    /// it out.
    block: Option<Located>,
}

impl<R: ReadAt> Table<R> {
    /// The values stored under `keys`, in the order given (duplicates and any order allowed):
    /// what [`get`](Self::get) answers for each, found in one pass over the table in file
    /// order, each data block read and decoded once for all the keys it may hold.
    ///
    /// # Errors
    /// As [`get`](Self::get), if the lookup of any key fails.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out = vec![None; keys.len()];
        self.get_many_with(keys, |i, v| out[i] = Some(v.to_vec()))?;
        Ok(out)
    }

    /// Like [`get_many`](Self::get_many), but lends each value found to `f` with the
    /// position of its key in `keys`, in file order, instead of copying it.
    ///
    /// # Errors
    /// As [`get_many`](Self::get_many).
    pub fn get_many_with<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        mut f: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        if self.bytewise {
            self.get_many_cmp(&BytewiseComparator, keys, |i, k, v| {
                if k == keys[i].as_ref() {
                    f(i, v);
                }
            })
        } else {
            let cmp = &*self.comparator;
            self.get_many_cmp(cmp, keys, |i, k, v| {
                if cmp.compare(k, keys[i].as_ref()) == Ordering::Equal {
                    f(i, v);
                }
            })
        }
    }

    /// [`internal_get`](Self::internal_get) for many keys: calls `f(i, key, value)` with
    /// the first entry at or after `keys[i]` in the data block that would hold it, for each
    /// `i` whose block the filter (if loaded) does not rule out and that has such an entry.
    /// Calls come in the file order of the keys' blocks, not in the order of `keys`.
    ///
    /// # Errors
    /// As [`internal_get`](Self::internal_get), if the lookup of any key fails; `f` may have
    /// been called for other keys before.
    pub fn internal_get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        f: impl FnMut(usize, &[u8], &[u8]),
    ) -> Result<()> {
        if self.bytewise {
            self.get_many_cmp(&BytewiseComparator, keys, f)
        } else {
            self.get_many_cmp(&*self.comparator, keys, f)
        }
    }

    fn get_many_cmp<C: Comparator + ?Sized, K: AsRef<[u8]>>(
        &self,
        cmp: &C,
        keys: &[K],
        mut f: impl FnMut(usize, &[u8], &[u8]),
    ) -> Result<()> {
        let key = |p: &Probe| keys[p.at].as_ref();
        let mut probes: Vec<Probe> = (0..keys.len())
            .map(|at| Probe { at, block: None })
            .collect();
        // Pass 1: each key's block, through the index, the fence searched a level at a time
        // for all the keys, so their cache misses overlap.
        let all: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        for (p, block) in probes.iter_mut().zip(self.blocks_for(cmp, &all)?) {
            p.block = block;
        }
        // Pass 2: the filter. Every key's filter is found (and requested from memory)
        // before any is asked, so the misses of a batch overlap instead of each waiting for
        // the last.
        if let Some(filter) = &self.filter {
            let found: Vec<Option<&[u8]>> = probes
                .iter()
                .map(|p| {
                    let at = p.block?;
                    match at.filter {
                        Some(packed) => filter.requested(packed),
                        None => filter.filter_for(at.handle.offset),
                    }
                })
                .collect();
            let mut checked = 0u64;
            let mut negatives = 0u64;
            for (p, f) in probes.iter_mut().zip(found) {
                if p.block.is_some() {
                    checked = checked.saturating_add(1);
                    if !filter.filter_may_match(f, key(p)) {
                        negatives = negatives.saturating_add(1);
                        p.block = None;
                    }
                }
            }
            self.counters.bump(Counter::FilterChecks, checked);
            self.counters.bump(Counter::FilterNegatives, negatives);
        }
        // Pass 3: each block once, for the run of keys it may hold, in file order, the blocks
        // a few ahead requested from memory meanwhile (every line: the trailer, the restart
        // array, the keys the search compares, the input of a checksum or decompression).
        probes.retain(|p| p.block.is_some());
        probes.sort_unstable_by_key(|p| p.block.map_or(0, |at| at.handle.offset));
        let mut blocks: Vec<BlockHandle> = probes
            .iter()
            .filter_map(|p| p.block.map(|at| at.handle))
            .collect();
        blocks.dedup();
        for h in blocks.iter().take(BLOCKS_AHEAD) {
            self.prefetch_block(h);
        }
        let mut runs = probes.iter().peekable();
        let mut key_buf = Vec::new();
        let mut b = 0usize;
        while let Some(first) = runs.next() {
            let Some(at) = first.block else {
                continue;
            };
            if let Some(far) = blocks.get(b.saturating_add(BLOCKS_AHEAD)) {
                self.prefetch_block(far);
            }
            b = b.saturating_add(1);
            let handle = at.handle;
            let block = self.data_block_at(&at)?;
            let data = block.data();
            let mut cursor = Cursor::new(block.layout(), std::mem::take(&mut key_buf));
            let mut probe = Some(first);
            while let Some(p) = probe {
                cursor.seek(data, cmp, key(p));
                if cursor.valid() {
                    f(p.at, cursor.key(), cursor.value(data));
                } else if let Err(e) = cursor.status() {
                    return Err(block.locate(e, &handle));
                }
                probe = runs.next_if(|next| next.block == Some(at));
            }
            key_buf = cursor.into_key_buf();
            block.give_back();
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::{BuildOptions, Cache, ReadOptions, TableBuilder};
    use leveltable_filter_policy::BloomFilterPolicy;
    use std::sync::Arc;

    fn table(n: u32, filter: bool, cache: bool) -> Table<Vec<u8>> {
        let mut options = BuildOptions::default().block_size(256);
        if filter {
            options = options.filter_policy(BloomFilterPolicy::new(10));
        }
        let mut b = TableBuilder::new(Vec::new(), options).unwrap();
        for i in 0..n {
            b.add(
                format!("key{:06}", i * 2).as_bytes(),
                format!("value{i}").as_bytes(),
            )
            .unwrap();
        }
        b.finish().unwrap();
        let mut read = ReadOptions::default();
        if filter {
            read = read.filter_policy(BloomFilterPolicy::new(10));
        }
        if cache {
            read = read.block_cache(Arc::new(Cache::new(1 << 16)));
        }
        Table::open(b.into_inner(), read).unwrap()
    }

    /// Random batches (present, absent, duplicates, unsorted, before and after every key)
    /// answer exactly what single gets answer.
    #[test]
    fn agrees_with_single_gets() {
        let mut state = 3u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        for (filter, cache) in [(false, false), (true, false), (true, true)] {
            let t = table(3000, filter, cache);
            for round in 0..40 {
                let len = (next() % 100) as usize;
                let mut keys: Vec<Vec<u8>> = (0..len)
                    .map(|_| format!("key{:06}", next() % 6100).into_bytes())
                    .collect();
                keys.extend([b"".to_vec(), b"a".to_vec(), b"zzz".to_vec()]);
                if round % 3 == 0 {
                    let dup = keys[0].clone();
                    keys.push(dup);
                }
                if round % 4 == 0 {
                    keys.sort();
                }
                let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| t.get(k).unwrap()).collect();
                assert_eq!(t.get_many(&keys).unwrap(), want, "round {round}");
            }
            assert_eq!(
                t.get_many::<&[u8]>(&[]).unwrap(),
                Vec::<Option<Vec<u8>>>::new()
            );
        }
    }

    /// A corrupt data block fails the batch exactly when a single get of one of its keys
    /// fails.
    #[test]
    fn corrupt_block_fails_the_batch() {
        let t = table(3000, false, false);
        let offset = t.data_block_offset_for(b"key003000").unwrap().unwrap();
        let mut bytes = t.into_source();
        bytes[offset as usize + 3] ^= 0x40;
        let t = Table::open(bytes, ReadOptions::default().verify_checksums(true)).unwrap();
        let bad = b"key003000".to_vec();
        assert!(t.get(&bad).is_err());
        let good = [b"key000000".to_vec(), b"key005000".to_vec()];
        assert_eq!(
            t.get_many(&good).unwrap(),
            good.iter().map(|k| t.get(k).unwrap()).collect::<Vec<_>>()
        );
        let mixed = [good[0].clone(), bad, good[1].clone()];
        assert!(t.get_many(&mixed).is_err());
    }
}
