//! What a table's filter blocks hold: how many filters, bits per key, probes.
//!
//! A table does not record the bits per key its filters were built with. The filter block
//! does record each filter's bounds, and both policies this tool knows end every filter with
//! a small fixed trailer (LevelDB's Bloom: 1 byte, the probe count; the cache-local Bloom: 2
//! bytes, probe count and version), so the bits per key are estimated as the bits of all
//! filters without their trailers over the number of keys.

use leveltable_filter_block::Filters;
use leveltable_filter_policy::KnownPolicy;

/// What the filters of one policy look like.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterShape {
    /// Filters holding at least one key (2 KiB ranges where a data block starts).
    pub filters: u64,
    /// Estimated bits of filter per key; `None` without keys or for a block that does not
    /// decode.
    pub bits_per_key: Option<f64>,
    /// The probe count stored in the first filter, for the policies this tool knows.
    pub probes: Option<u8>,
}

/// Looks at the filter block `block` of the policy named `name` in a table of `entries`
/// keys.
pub fn shape(name: &str, block: &[u8], entries: u64) -> FilterShape {
    let mut shape = FilterShape {
        filters: 0,
        bits_per_key: None,
        probes: None,
    };
    let filters = Filters::new(block);
    if !filters.is_decodable() {
        return shape;
    }
    let known = KnownPolicy::by_name(name);
    let mut filter_bytes = 0u64;
    for filter in filters.iter() {
        let Some(filter) = filter else {
            return shape;
        };
        if filter.is_empty() {
            continue;
        }
        shape.filters += 1;
        if let Some(known) = known {
            if shape.probes.is_none() {
                shape.probes = known.probes_in(filter);
            }
        }
        let trailer_len = known.map_or(0, KnownPolicy::trailer_len);
        filter_bytes += filter.len().saturating_sub(trailer_len) as u64;
    }
    if entries > 0 {
        shape.bits_per_key = Some(filter_bytes as f64 * 8.0 / entries as f64);
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;
    use leveltable_filter_block::FilterBlockBuilder;
    use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy};

    fn block<P: FilterPolicy>(policy: P, keys: u32) -> Vec<u8> {
        let mut b = FilterBlockBuilder::new(policy);
        b.start_block(0).unwrap();
        for i in 0..keys {
            b.add_key(format!("key{i}").as_bytes());
            if i % 1000 == 999 {
                // A new data block every 1000 keys, 4 KiB apart: one empty filter between.
                b.start_block(u64::from(i + 1) * 4).unwrap();
            }
        }
        b.finish()
    }

    #[test]
    fn bits_per_key_are_recovered() {
        for bits in [5, 10, 16] {
            let s = shape(
                "leveldb.BuiltinBloomFilter2",
                &block(BloomFilterPolicy::new(bits), 10_000),
                10_000,
            );
            let got = s.bits_per_key.unwrap();
            assert!((got - bits as f64).abs() < 0.05, "{bits}: {got}");
            assert_eq!(s.probes, Some(BloomFilterPolicy::new(bits).num_probes()));

            let s = shape(
                "leveltable.LocalBloom64",
                &block(CacheLocalBloomPolicy::new(bits), 10_000),
                10_000,
            );
            let got = s.bits_per_key.unwrap();
            // Whole 512-bit blocks per filter: under 512 bits over per 1000-key filter.
            assert!(
                got >= bits as f64 && got < bits as f64 + 0.52,
                "{bits}: {got}"
            );
            assert_eq!(
                s.probes,
                Some(CacheLocalBloomPolicy::new(bits).num_probes())
            );
        }
    }

    #[test]
    fn odd_blocks_give_no_estimate() {
        let s = shape("x", b"", 10);
        assert_eq!((s.filters, s.bits_per_key, s.probes), (0, None, None));
        // An offset array pointing backwards.
        let s = shape("x", &[1, 2, 3, 0, 0, 0, 0, 2, 0, 0, 0, 11], 10);
        assert_eq!((s.filters, s.bits_per_key), (0, None));
        // Unknown policies count all their bytes.
        let b = block(BloomFilterPolicy::new(10), 100);
        let s = shape("someone.Else", &b, 100);
        assert_eq!(s.probes, None);
        assert_eq!(s.filters, 1);
        assert!(s.bits_per_key.unwrap() > 10.0);
        assert_eq!(
            shape("leveldb.BuiltinBloomFilter2", &b, 0).bits_per_key,
            None
        );
    }
}
