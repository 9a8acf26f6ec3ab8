//! Batched lookups: many keys answered in one pass over the table in file order.
//!
//! A single get is a chain of dependent memory accesses: the index search, then the filter's
//! bits, then the data block. A batch breaks the chain: every key's block is found through
//! the index first, the fence's tree walked a level at a time for all the keys, so that each
//! level's misses overlap; then every key's filter is found and requested from memory, and
//! only then asked; then each data block that still has candidates is read and decoded once
//! for all of them, in file order (sorting by block offset brings a block's keys together
//! with integer compares, not key compares), every line of the block four ahead requested
//! from memory while this one is searched. The first two passes take up to 64 keys at a time,
//! their working arrays on the stack; a batch allocates only its list of candidates.

#![deny(clippy::arithmetic_side_effects)]

use std::cmp::Ordering;

use crate::block::Cursor;
use crate::comparator::{BytewiseComparator, Comparator};
use crate::counters::Counter;
use crate::fence::BATCH;
use crate::table::Located;

/// How many blocks ahead a batch requests every line of the blocks it will search. Two to
/// eight measured alike; requesting only the end of the block this far ahead and the whole
/// block one ahead measured 7–10% slower (the search's misses inside a block then wait for
/// one another).
const BLOCKS_AHEAD: usize = 4;
use crate::{ReadAt, Result, Table};

/// One key of a batch that may be in the table: what is left for the pass over the blocks.
struct Probe {
    /// Its position in the caller's slice.
    at: usize,
    /// The data block that may hold it (the filter did not rule it out).
    block: Located,
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
        let mut probes: Vec<Probe> = Vec::with_capacity(keys.len());
        let (mut checked, mut negatives) = (0u64, 0u64);
        // Passes 1 and 2, for up to BATCH keys at a time (the working arrays on the stack).
        for (c, chunk) in keys.chunks(BATCH).enumerate() {
            let base = c.saturating_mul(BATCH);
            let n = chunk.len();
            let mut refs: [&[u8]; BATCH] = [&[]; BATCH];
            for (r, k) in refs.iter_mut().zip(chunk) {
                *r = k.as_ref();
            }
            let refs = &refs[..n];
            // Pass 1: each key's block, through the index, the fence searched a level at a
            // time for all the keys, so their cache misses overlap.
            let mut located: [Option<Located>; BATCH] = [None; BATCH];
            let located = &mut located[..n];
            self.blocks_for(cmp, refs, located)?;
            // Pass 2: the filter. Every key's filter is found (and requested from memory)
            // before any is asked, so the misses of a batch overlap instead of each waiting
            // for the last.
            if let Some(filter) = &self.filter {
                let mut found: [Option<&[u8]>; BATCH] = [None; BATCH];
                for (f, at) in found.iter_mut().zip(&*located) {
                    *f = at.and_then(|at| filter.request_at(at.filter, at.handle.offset));
                }
                for ((at, f), k) in located.iter_mut().zip(found).zip(refs) {
                    if at.is_some() {
                        checked = checked.saturating_add(1);
                        if !filter.filter_may_match(f, k) {
                            negatives = negatives.saturating_add(1);
                            *at = None;
                        }
                    }
                }
            }
            for (j, at) in located.iter().enumerate() {
                if let Some(block) = *at {
                    probes.push(Probe {
                        at: base.saturating_add(j),
                        block,
                    });
                }
            }
        }
        if self.filter.is_some() {
            self.counters.bump(Counter::FilterChecks, checked);
            self.counters.bump(Counter::FilterNegatives, negatives);
        }
        // Pass 3: each block once, for the run of keys it may hold, in file order, the blocks
        // a few ahead requested from memory meanwhile (every line: the trailer, the restart
        // array, the keys the search compares, the input of a checksum or decompression).
        probes.sort_unstable_by_key(|p| p.block.handle.offset);
        // `ahead` is the first probe of the next block to request.
        let mut ahead = 0usize;
        let request_next = |ahead: &mut usize| {
            if let Some(p) = probes.get(*ahead) {
                let handle = p.block.handle;
                self.prefetch_block(&handle);
                while probes.get(*ahead).is_some_and(|q| q.block.handle == handle) {
                    *ahead = ahead.saturating_add(1);
                }
            }
        };
        for _ in 0..BLOCKS_AHEAD {
            request_next(&mut ahead);
        }
        let mut key_buf = Vec::new();
        let mut i = 0usize;
        while let Some(first) = probes.get(i) {
            request_next(&mut ahead);
            let at = first.block;
            let handle = at.handle;
            let block = self.data_block_at(&at)?;
            let data = block.data();
            let mut cursor = Cursor::new(block.layout(), std::mem::take(&mut key_buf));
            while let Some(p) = probes.get(i).filter(|p| p.block.handle == handle) {
                cursor.seek(data, cmp, key(p));
                if cursor.valid() {
                    f(p.at, cursor.key(), cursor.value(data));
                } else if let Err(e) = cursor.status() {
                    return Err(block.locate(e, &handle));
                }
                i = i.saturating_add(1);
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
        let mut rng = crate::test_rng::Lcg::new(3);
        let mut next = move || rng.next() >> 33;
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
