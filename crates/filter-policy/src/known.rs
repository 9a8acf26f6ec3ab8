//! The filter policies a reader knows by the name a table stores: one list, so that the
//! table reader, command-line tools and audits agree on what they can read.
//!
//! A table names each filter block in its metaindex, `filter.<policy name>`, but records
//! neither the policy's parameters nor how its filters are laid out. Every policy listed here
//! stores its parameters in each filter, so one reader object per policy reads filters made
//! with any bits per key.

use alloc::sync::Arc;

use crate::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy, cache_local_bloom};

/// A filter policy known by its stored name, with what a reader needs to know about its
/// filters.
#[derive(Debug, Clone, Copy)]
pub struct KnownPolicy {
    name: &'static str,
    trailer_len: usize,
    probes_from_end: usize,
    reader: fn() -> Arc<dyn FilterPolicy>,
    expected_fp_rate: fn(f64) -> f64,
}

/// Bits per key given to the reader objects. Both policies take their parameters from each
/// filter, so this only matters for building, which the readers are not for.
const READER_BITS_PER_KEY: usize = 10;

/// Every policy this workspace reads, LevelDB's first.
static KNOWN: [KnownPolicy; 2] = [
    KnownPolicy {
        name: crate::bloom::NAME,
        trailer_len: 1,
        probes_from_end: 1,
        reader: || Arc::new(BloomFilterPolicy::new(READER_BITS_PER_KEY)),
        expected_fp_rate: BloomFilterPolicy::expected_fp_rate,
    },
    KnownPolicy {
        name: cache_local_bloom::NAME,
        trailer_len: cache_local_bloom::TRAILER_SIZE,
        probes_from_end: cache_local_bloom::TRAILER_SIZE,
        reader: || Arc::new(CacheLocalBloomPolicy::new(READER_BITS_PER_KEY)),
        expected_fp_rate: CacheLocalBloomPolicy::expected_fp_rate,
    },
];

impl KnownPolicy {
    /// Every known policy: LevelDB's Bloom filter (`leveldb.BuiltinBloomFilter2`), then the
    /// cache-local Bloom filter (`leveltable.LocalBloom64`).
    pub fn all() -> &'static [KnownPolicy] {
        &KNOWN
    }

    /// The known policy stored under `name` (the metaindex key without `filter.`).
    pub fn by_name(name: &str) -> Option<&'static KnownPolicy> {
        KNOWN.iter().find(|p| p.name == name)
    }

    /// The name stored in tables.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A policy object that reads every filter of this policy, whatever bits per key it was
    /// made with.
    pub fn reader(&self) -> Arc<dyn FilterPolicy> {
        (self.reader)()
    }

    /// Bytes at the end of every filter that are not filter bits (the probe count, a format
    /// version).
    pub fn trailer_len(&self) -> usize {
        self.trailer_len
    }

    /// The probe count stored in `filter`, or `None` for a filter too short to hold one.
    pub fn probes_in(&self, filter: &[u8]) -> Option<u8> {
        let at = filter.len().checked_sub(self.probes_from_end)?;
        filter.get(at).copied()
    }

    /// The false-positive rate to expect of this policy's filters at `bits_per_key` bits per
    /// key, with the number of probes the policy chooses.
    pub fn expected_fp_rate(&self, bits_per_key: f64) -> f64 {
        (self.expected_fp_rate)(bits_per_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_policies_own() {
        let names: alloc::vec::Vec<&str> = KnownPolicy::all().iter().map(|p| p.name()).collect();
        assert_eq!(
            names,
            ["leveldb.BuiltinBloomFilter2", "leveltable.LocalBloom64"]
        );
        for known in KnownPolicy::all() {
            assert_eq!(known.reader().name(), known.name());
            assert!(core::ptr::eq(
                KnownPolicy::by_name(known.name()).unwrap(),
                known
            ));
        }
        assert!(KnownPolicy::by_name("leveldb.BuiltinBloomFilter").is_none());
    }

    #[test]
    fn readers_read_filters_of_any_bits_per_key() {
        let keys: [&[u8]; 3] = [b"a", b"bb", b"ccc"];
        for bits in [1, 7, 10, 23] {
            let made: [Arc<dyn FilterPolicy>; 2] = [
                Arc::new(BloomFilterPolicy::new(bits)),
                Arc::new(CacheLocalBloomPolicy::new(bits)),
            ];
            for policy in made {
                let known = KnownPolicy::by_name(policy.name()).unwrap();
                let mut filter = alloc::vec::Vec::new();
                policy.create_filter(&keys, &mut filter);
                for key in keys {
                    assert!(known.reader().key_may_match(key, &filter), "{bits}");
                }
                let probes = known.probes_in(&filter).unwrap();
                assert!((1..=30).contains(&probes), "{bits}: {probes}");
                assert!(filter.len() > known.trailer_len());
            }
        }
        assert_eq!(KnownPolicy::all()[0].probes_in(&[]), None);
    }

    #[test]
    fn expected_rates_fall_with_bits() {
        for known in KnownPolicy::all() {
            assert_eq!(known.expected_fp_rate(0.0), 1.0);
            assert_eq!(known.expected_fp_rate(f64::NAN), 1.0);
            let mut last = 1.0;
            for bits in 1..=30 {
                let rate = known.expected_fp_rate(f64::from(bits));
                assert!(
                    rate > 0.0 && rate < last,
                    "{}: {bits}: {rate}",
                    known.name()
                );
                last = rate;
            }
        }
        // At 10 bits per key: 0.84% with LevelDB's k = 6, and about 0.96% cache-local.
        let bloom = BloomFilterPolicy::expected_fp_rate(10.0);
        assert!((bloom - 0.0084).abs() < 0.0001, "{bloom}");
        let local = CacheLocalBloomPolicy::expected_fp_rate(10.0);
        assert!((local - 0.0096).abs() < 0.0004, "{local}");
    }
}
