//! Glue between tables and filter blocks: one filter block per policy while building, the
//! chosen filter while reading.
//!
//! A table may carry several filter blocks, each named `filter.<policy name>` in the
//! metaindex. The first is the one LevelDB reads ([`BuildOptions::filter_policy`]); the others
//! ([`BuildOptions::extra_filter_policies`]) follow it in the file. LevelDB looks up only its
//! own policy's name, so extra filters cost it nothing.
//!
//! A policy sees the keys exactly as they are added to the table. A policy over a transformed
//! key (LevelDB's internal keys filter on the user key without the 8-byte tag) is a wrapping
//! [`FilterPolicy`] that transforms keys in `create_filter` and `key_may_match` and keeps the
//! inner policy's name.
//!
//! [`BuildOptions::filter_policy`]: crate::BuildOptions::filter_policy
//! [`BuildOptions::extra_filter_policies`]: crate::BuildOptions::extra_filter_policies

#![deny(clippy::arithmetic_side_effects)]

use std::sync::Arc;

use leveltable_filter_block::{FilterBlockBuilder, FilterBlockReader};
use leveltable_filter_policy::FilterPolicy;

use crate::fence::{PackedFilter, pack_filter, unpack_filter};
use crate::{Error, Result};

/// Prefix of a filter block's name in the metaindex.
pub const FILTER_META_PREFIX: &str = "filter.";

/// The metaindex key of the filter block made by a policy named `policy_name`.
pub fn filter_meta_key(policy_name: &str) -> String {
    format!("{FILTER_META_PREFIX}{policy_name}")
}

/// The filter blocks of a table being built, in file order.
pub(crate) struct FilterSet {
    builders: Vec<FilterBlockBuilder<Arc<dyn FilterPolicy>>>,
}

impl FilterSet {
    /// Builders for `main` (if any) then `extra`, each started at block offset 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if two policies share a name.
    pub(crate) fn new(
        main: Option<&Arc<dyn FilterPolicy>>,
        extra: &[Arc<dyn FilterPolicy>],
    ) -> Result<FilterSet> {
        let policies: Vec<&Arc<dyn FilterPolicy>> = main.into_iter().chain(extra).collect();
        for (i, p) in policies.iter().enumerate() {
            if policies[..i].iter().any(|q| q.name() == p.name()) {
                return Err(Error::InvalidArgument(
                    format!("two filter policies are named {:?}", p.name()).into(),
                ));
            }
        }
        let mut builders = Vec::with_capacity(policies.len());
        for p in policies {
            let mut b = FilterBlockBuilder::new(Arc::clone(p));
            b.start_block(0)?;
            builders.push(b);
        }
        Ok(FilterSet { builders })
    }

    #[inline]
    pub(crate) fn add_key(&mut self, key: &[u8]) {
        for b in &mut self.builders {
            b.add_key(key);
        }
    }

    /// Tells every builder that the next data block starts at `offset`.
    pub(crate) fn start_block(&mut self, offset: u64) -> Result<()> {
        for b in &mut self.builders {
            b.start_block(offset)?;
        }
        Ok(())
    }

    /// Finishes every filter block: `(policy name, block bytes)` in file order.
    pub(crate) fn finish(&mut self) -> Vec<(String, Vec<u8>)> {
        std::mem::take(&mut self.builders)
            .into_iter()
            .map(|b| (b.policy().name().to_owned(), b.finish()))
            .collect()
    }
}

/// A loaded filter block and the policy that reads it.
pub(crate) struct LoadedFilter {
    pub(crate) policy: Arc<dyn FilterPolicy>,
    /// Shared with the fence, which requests filters from it ahead of a lookup.
    pub(crate) data: Arc<[u8]>,
}

impl LoadedFilter {
    /// Whether `key` may be in the data block at `block_offset`. A malformed filter block
    /// answers "may match".
    #[inline]
    pub(crate) fn key_may_match(&self, block_offset: u64, key: &[u8]) -> bool {
        FilterBlockReader::new(&*self.policy, &self.data).key_may_match(block_offset, key)
    }

    /// Where the filter covering the data block at `block_offset` lies, for the fence.
    pub(crate) fn packed_for(&self, block_offset: u64) -> PackedFilter {
        pack_filter(
            FilterBlockReader::new(&*self.policy, &self.data).filter_range_for(block_offset),
        )
    }

    /// The filter covering the data block at `block_offset` (see
    /// [`FilterBlockReader::filter_for`]), found where `packed` says when the fence
    /// recorded it ([`packed_for`](Self::packed_for)), else through the block's offsets.
    #[inline]
    fn filter_at(&self, packed: Option<PackedFilter>, block_offset: u64) -> Option<&[u8]> {
        match packed {
            Some(packed) => unpack_filter(packed).and_then(|range| self.data.get(range)),
            None => FilterBlockReader::new(&*self.policy, &self.data).filter_for(block_offset),
        }
    }

    /// [`key_may_match`](Self::key_may_match), the filter found as
    /// [`filter_at`](Self::filter_at) finds it.
    #[inline]
    pub(crate) fn may_match_at(
        &self,
        packed: Option<PackedFilter>,
        block_offset: u64,
        key: &[u8],
    ) -> bool {
        self.filter_may_match(self.filter_at(packed, block_offset), key)
    }

    /// [`filter_at`](Self::filter_at), its cache lines requested from memory: a batch finds
    /// every key's filter first, then asks them, their misses overlapping.
    #[inline]
    pub(crate) fn request_at(
        &self,
        packed: Option<PackedFilter>,
        block_offset: u64,
    ) -> Option<&[u8]> {
        let filter = self.filter_at(packed, block_offset);
        if let Some(f) = filter {
            leveltable_prefetch::lines(f);
        }
        filter
    }

    /// [`key_may_match`](Self::key_may_match) given the block's filter as
    /// [`request_at`](Self::request_at) found it.
    #[inline]
    pub(crate) fn filter_may_match(&self, filter: Option<&[u8]>, key: &[u8]) -> bool {
        FilterBlockReader::new(&*self.policy, &self.data).filter_may_match(filter, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leveltable_filter_policy::BloomFilterPolicy;

    #[test]
    fn duplicate_names_are_refused() {
        let a: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(10));
        let b: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(20));
        let err = FilterSet::new(Some(&a), &[b]).err().unwrap();
        assert_eq!(
            err.to_string(),
            "table: invalid argument: two filter policies are named \"leveldb.BuiltinBloomFilter2\""
        );
        assert_eq!(
            filter_meta_key(a.name()),
            "filter.leveldb.BuiltinBloomFilter2"
        );
    }

    /// What the fence records of a filter answers what the filter block answers, for every
    /// block offset of intact and damaged filter blocks.
    #[test]
    fn packed_filters_answer_as_the_block_does() {
        let policy: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(10));
        let mut set = FilterSet::new(Some(&policy), &[]).unwrap();
        let keys: Vec<Vec<u8>> = (0..60).map(|i| format!("key{i:03}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            set.add_key(k);
            if i % 7 == 6 {
                set.start_block(i as u64 * 1000).unwrap();
            }
        }
        let intact = set.finish().remove(0).1;
        let mut blocks = vec![intact.clone()];
        // Every byte of the offset array and trailer overwritten in turn.
        for at in intact.len().saturating_sub(60)..intact.len() {
            for byte in [0x00, 0x07, 0xff] {
                let mut damaged = intact.clone();
                damaged[at] = byte;
                blocks.push(damaged);
            }
        }
        let probes: Vec<Vec<u8>> = keys.iter().cloned().chain([b"nope".to_vec()]).collect();
        for data in blocks {
            let loaded = LoadedFilter {
                policy: Arc::clone(&policy),
                data: Arc::from(data),
            };
            for offset in (0..70_000).step_by(333).chain([u64::MAX, 1 << 40]) {
                let packed = loaded.packed_for(offset);
                for k in &probes {
                    assert_eq!(
                        loaded.may_match_at(Some(packed), offset, k),
                        loaded.key_may_match(offset, k),
                        "offset {offset}, key {k:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn set_builds_one_block_per_policy() {
        let a: Arc<dyn FilterPolicy> = Arc::new(BloomFilterPolicy::new(10));
        let mut set = FilterSet::new(Some(&a), &[]).unwrap();
        set.add_key(b"hello");
        set.start_block(100).unwrap();
        let blocks = set.finish();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].0, "leveldb.BuiltinBloomFilter2");
        let loaded = LoadedFilter {
            policy: a,
            data: Arc::from(&blocks[0].1[..]),
        };
        assert!(loaded.key_may_match(0, b"hello"));
        let empty = FilterSet::new(None, &[]).unwrap().finish();
        assert!(empty.is_empty());
    }
}
